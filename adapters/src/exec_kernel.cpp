// start_exec_adapter: the line protocol of adapters/README.md, one request per run().
#include "kda/adapters/exec_kernel.hpp"

#include <optional>
#include <ostream>

#include "child_process.hpp"
#include "contract_gate.hpp"
#include "exec_answer.hpp"
#include "exec_handshake.hpp"
#include "kda/golden/case_io.hpp"
#include "results_file.hpp"
#include "temp_dir.hpp"

namespace kda::adapters {

namespace {

constexpr const char* kCaseName = "case";
constexpr std::chrono::milliseconds kQuitGrace{2000};  // for "quit", and for a dead adapter's exit status

std::string seconds(std::chrono::milliseconds t) {
  const auto ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

// The request case's metadata: the kernel and, with persistent metadata, the serving run and the
// tensors whose buffers the adapter keeps for it (adapters/README.md, "Persistent metadata").
golden::Metadata request_metadata(const Problem& problem, const std::string& kernel) {
  golden::Metadata metadata{{"kernel", kernel}};
  if (!problem.persistent_metadata) return metadata;
  std::string names;
  for (std::string_view name : metadata_tensors(problem)) names += (names.empty() ? "" : ",") + std::string(name);
  if (names.empty()) return metadata;
  metadata["persistent"] = names;
  metadata["persistent_run"] = std::to_string(problem.persistent_metadata);
  return metadata;
}

struct Started {
  std::unique_ptr<ChildProcess> process;
  std::string handshake;
};

// Starts the command and reads its handshake line; throws AdapterError saying what went wrong.
Started start(const std::string& command, std::chrono::milliseconds timeout) {
  auto process = std::make_unique<ChildProcess>(command);
  const ChildProcess::Line line = process->read_line(timeout);
  switch (line.status) {
    case ChildProcess::Line::Status::line: return {std::move(process), line.text};
    case ChildProcess::Line::Status::timeout:
      process->stop(std::chrono::milliseconds(0));
      throw AdapterError("exec adapter '" + command + "' sent no handshake within " + seconds(timeout) +
                         " (expected a first line 'kda-adapter 1 <name> <profile> ...'; is its stdout flushed?)");
    case ChildProcess::Line::Status::eof:
      throw AdapterError("exec adapter '" + command + "' " + process->exit_description(kQuitGrace) +
                         " before its handshake");
    case ChildProcess::Line::Status::too_long: break;
  }
  throw AdapterError("exec adapter '" + command + "' sent an endless first line instead of a handshake");
}

class ExecKernel final : public DeclaredKernel {
 public:
  ExecKernel(std::string command, ExecOptions options, Started started, Declaration declaration)
      : DeclaredKernel(std::move(declaration)),
        command_(std::move(command)),
        options_(options),
        process_(std::move(started.process)),
        handshake_(std::move(started.handshake)),
        files_("kda-exec") {
    if (files_.path().string().find_first_of(" \t\n") != std::string::npos)
      throw AdapterError("the temporary directory " + files_.path().string() +
                         " contains whitespace, which the line protocol cannot carry (set TMPDIR)");
  }
  ~ExecKernel() override {
    if (process_ && process_->write_line("quit")) process_->stop(kQuitGrace);
  }

  RunOutcome run(Problem& problem) override {
    if (auto rejected = reject_before_call(problem, profile(), declaration().checks_contract)) return *rejected;
    RunOutcome outcome = request(problem);
    // Logged as it happens: a property's final report re-runs its case, and an adapter that failed
    // only once then passes it.
    if (outcome.status == RunOutcome::Status::failed && options_.log)
      *options_.log << "\nkda-oracle: " << outcome.message << std::endl;
    return outcome;
  }

 private:
  RunOutcome request(Problem& problem) {
    if (!process_)
      if (auto failure = restart()) return RunOutcome::failed(*failure);
    const std::string n = std::to_string(++requests_);
    const auto request = files_.path() / ("request-" + n + ".h5");
    const auto results = files_.path() / ("results-" + n + ".h5");
    RunOutcome outcome = exchange(problem, request, results);
    std::error_code ignored;
    std::filesystem::remove(request, ignored);
    std::filesystem::remove(results, ignored);
    return outcome;
  }

  RunOutcome exchange(Problem& problem, const std::filesystem::path& request, const std::filesystem::path& results) {
    try {
      auto file = golden::File::create(request, {{"purpose", "a kda-oracle exec adapter request"}});
      file.write_case(kCaseName, golden::Case{problem, request_metadata(problem, name()), {}, {}, {}});
      file.close();
    } catch (const std::exception& e) {
      return RunOutcome::failed(std::string("cannot write the request file: ") + e.what());
    }
    if (!process_->write_line("run " + request.string() + " " + results.string()))
      return abandon(process_->exit_description(kQuitGrace) + " instead of reading its request");
    const ChildProcess::Line answer = process_->read_line(options_.timeout);
    switch (answer.status) {
      case ChildProcess::Line::Status::timeout:
        return abandon("gave no answer within " + seconds(options_.timeout) + " and has been killed");
      case ChildProcess::Line::Status::eof:
        return abandon(process_->exit_description(kQuitGrace) + " without answering");
      case ChildProcess::Line::Status::too_long: return abandon("answered with an endless line");
      case ChildProcess::Line::Status::line: break;
    }
    return interpret(answer.text, results, problem);
  }

  RunOutcome interpret(const std::string& line, const std::filesystem::path& results, Problem& problem) {
    const Answer answer = parse_answer(line);
    switch (answer.kind) {
      case Answer::Kind::ok:
        try {
          return apply_results(results, kCaseName, problem);
        } catch (const ResultsError& e) {
          return abandon(std::string("answered ok, but ") + e.what());
        }
      case Answer::Kind::rejected:
        if (answer.rule) return RunOutcome::rejected({{*answer.rule, answer.message}});
        return abandon("rejected the case with the unknown rule '" + answer.rule_name + "' (answer: '" + line + "')");
      case Answer::Kind::error:
        return RunOutcome::failed("exec adapter " + name() + " reported an error: " + answer.message);
      case Answer::Kind::unparseable: break;
    }
    return abandon("answered '" + line.substr(0, 200) +
                   "' (expected 'ok', 'rejected <rule> <message>' or 'error <message>')");
  }

  // The adapter misbehaved: it is stopped, and the next run() starts it again.
  RunOutcome abandon(const std::string& what) {
    process_->stop(std::chrono::milliseconds(0));
    process_.reset();
    return RunOutcome::failed("exec adapter '" + command_ + "' " + what + " (request " + std::to_string(requests_) +
                              "; it is restarted for the next case)");
  }

  // nullopt when the adapter is back with the same handshake; otherwise why not.
  std::optional<std::string> restart() {
    try {
      Started started = start(command_, options_.startup_timeout);
      if (started.handshake != handshake_)
        return "exec adapter '" + command_ + "' restarted with another handshake: '" + started.handshake + "'";
      process_ = std::move(started.process);
      return std::nullopt;
    } catch (const std::exception& e) {
      return std::string("cannot restart: ") + e.what();
    }
  }

  std::string command_;
  ExecOptions options_;
  std::unique_ptr<ChildProcess> process_;  // null after a failure, until the next run() restarts it
  std::string handshake_;
  TempDir files_;
  long requests_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> start_exec_adapter(const std::string& command, const ExecOptions& options) {
  Started started = start(command, options.startup_timeout);
  Declaration declaration;
  try {
    declaration = parse_handshake(started.handshake);
  } catch (const std::invalid_argument& e) {
    throw AdapterError("exec adapter '" + command + "' sent a bad handshake: " + e.what());
  }
  return std::make_unique<ExecKernel>(command, options, std::move(started), std::move(declaration));
}

}  // namespace kda::adapters
