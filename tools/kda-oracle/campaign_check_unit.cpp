// A campaign's check unit: one property of the catalogue against one implementation at one scale, run
// as `kda-oracle check ... --results FILE` in a process of its own (a plugin that crashes ends that
// process, not the campaign), its output in the unit's log. The unit's JSON takes the property's entry
// of the results (status, reason, cases, seconds, failure) with the saved case's path made relative to
// the unit's JSON. A check that exits with status 2 and no results (the kernel did not start: an
// adapter failing its handshake) throws KernelNotStarted.
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <fstream>

#include "campaign_unit_run.hpp"

namespace kda::cli {

namespace {

namespace fs = std::filesystem;

// Runs this program with `arguments`, stdout joined to stderr; the wait status.
int run_self(const std::vector<std::string>& arguments) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  std::vector<char*> argv{const_cast<char*>(self.c_str())};
  for (const auto& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start kda-oracle check: fork failed");
  if (pid == 0) {
    ::dup2(2, 1);
    ::execv(self.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string flattened(const std::string& id) {
  std::string stem = id;
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return stem;
}

}  // namespace

Json run_check_unit(const Unit& unit, const UnitContext& context) {
  const fs::path results = context.results_dir / "check-results" / (unit.id() + ".json");
  fs::remove(results);
  fs::create_directories(results.parent_path());
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", context.timeout);
  // --shard 0/1: the campaign's seed, whatever sharding variables the campaign itself runs under.
  const int status = run_self({"check", "--kernel", unit.implementation->kernel, "--properties", unit.property,
                               "--cases", std::to_string(unit.cases), "--seed", std::to_string(context.seed),
                               "--scale", unit.scale, "--shard", "0/1", "--timeout", timeout, "--save-failures",
                               (context.results_dir / "cases" / flattened(unit.id())).string(), "--results",
                               results.string()});
  const fs::path unit_dir = unit.file(context.results_dir).parent_path();
  Json j = unit_header(unit, context);
  if (!fs::exists(results)) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) throw KernelNotStarted("kda-oracle check exited with status 2");
    j["status"] = "fail";
    j["reason"] = nullptr;
    j["cases"] = 0;
    j["seconds"] = 0;
    j["failure"] = {{"diagnosis", WIFSIGNALED(status) ? "kda-oracle check ended by signal " +
                                                            std::to_string(WTERMSIG(status)) + " (a plugin crashed?)"
                                                      : "kda-oracle check wrote no results (exit status " +
                                                            std::to_string(WEXITSTATUS(status)) + ")"},
                    {"replay", nullptr},
                    {"case_file", nullptr},
                    {"plot", nullptr}};
    return j;
  }
  std::ifstream in(results);
  const Json check = Json::parse(in);
  const Json& entry = check.at("properties").at(0);
  j["adapter"] = check.at("adapter");
  j["precision_model"] = check.at("precision_model");
  for (const char* key : {"status", "reason", "cases", "seconds", "failure"}) j[key] = entry.at(key);
  if (j["failure"].is_object() && j["failure"]["case_file"].is_string()) {
    const fs::path case_file = results.parent_path() / j["failure"]["case_file"].get<std::string>();
    j["failure"]["case_file"] = case_file.lexically_normal().lexically_relative(unit_dir.lexically_normal()).string();
  }
  return j;
}

}  // namespace kda::cli
