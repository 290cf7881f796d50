// `kda-oracle golden import CALL.json [--tensors FILE.safetensors] --out FILE.h5`: a recorded call
// as a golden case (docs/golden.md, "Importing a real call").
#include <cstdio>
#include <filesystem>
#include <optional>

#include "golden_commands.hpp"
#include "kda/golden/call_import.hpp"

namespace kda::cli {

namespace {
struct ImportArgs {
  std::string call, tensors, out, name, profile = "strict";
  bool append = false;
};
}  // namespace

Command add_golden_import(CLI::App& golden) {
  auto* sub = golden.add_subcommand("import", "turn a recorded call (JSON, tensors optionally as safetensors) into a golden case");
  auto args = std::make_shared<ImportArgs>();
  sub->add_option("call", args->call, "the call file (JSON)")->required()->check(CLI::ExistingFile);
  sub->add_option("--tensors", args->tensors, "safetensors file holding the tensors the call names by key")
      ->check(CLI::ExistingFile);
  sub->add_option("--out", args->out, "the golden file to write")->required();
  sub->add_option("--name", args->name, "the case's name (default: the call file's stem)");
  sub->add_flag("--append", args->append, "add the case to an existing golden file instead of replacing it");
  sub->add_option("--profile", args->profile, "the contract the call is checked against")
      ->capture_default_str()
      ->check(CLI::IsMember(profile_names()));
  return {sub, [args] {
            const Profile& profile = *find_profile(args->profile);
            const std::optional<std::filesystem::path> tensors =
                args->tensors.empty() ? std::nullopt : std::optional<std::filesystem::path>(args->tensors);
            const golden::ImportedCall call = golden::import_call(args->call, tensors, profile);
            const std::string name = args->name.empty() ? std::filesystem::path(args->call).stem().string() : args->name;
            const bool append = args->append && std::filesystem::exists(args->out);
            auto file = append ? golden::File::append(args->out)
                               : golden::File::create(args->out, {{"purpose", "calls imported by kda-oracle golden import"}});
            if (file.has_case(name)) {
              std::fprintf(stderr, "golden import: %s already holds a case '%s' (--name picks another)\n",
                           args->out.c_str(), name.c_str());
              return 2;
            }
            file.write_case(name, golden::golden_case(call));
            file.close();
            if (call.violation)
              std::printf("golden import: %s breaks contract rule %s under profile %s (%s): written as contract case '%s' to %s\n",
                          args->call.c_str(), std::string(name_of(call.violation->rule)).c_str(), profile.name.c_str(),
                          call.violation->message.c_str(), name.c_str(), args->out.c_str());
            else
              std::printf("golden import: %s (%s) written as case '%s' to %s\n", args->call.c_str(), call.entry.c_str(),
                          name.c_str(), args->out.c_str());
            return 0;
          }};
}

}  // namespace kda::cli
