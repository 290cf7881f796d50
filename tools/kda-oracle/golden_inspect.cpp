// `kda-oracle golden inspect FILE [CASE]`: a readable summary of a golden file, or of one case.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

#include "golden_commands.hpp"
#include "kda/golden/case_io.hpp"
#include "kda/golden/verify.hpp"

namespace kda::cli {

namespace {

struct InspectArgs {
  std::string file;
  std::string case_name;
};

// Where the states come from: none, dense, pool, or a verify form (table, scratch), dtype and layout.
std::string state_of(const Problem& p) {
  const Tensor* state = p.state_pool ? &*p.state_pool : p.initial_state ? &*p.initial_state
                                                     : p.final_state    ? &*p.final_state
                                                                        : nullptr;
  std::string s(name_of(state_source_of(p)));
  if (state) s += " " + std::string(name_of(state->dtype()));
  return s + " " + std::string(name_of(p.options.state_layout));
}

double rms(const std::vector<double>& x) {
  const double sum = std::accumulate(x.begin(), x.end(), 0.0, [](double a, double v) { return a + v * v; });
  return x.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(x.size()));
}

void print_file(const golden::File& file) {
  const auto names = file.case_names();
  std::printf("%s: schema %s version %lld, %zu cases\n", file.path().c_str(), std::string(golden::kSchemaName).c_str(),
              static_cast<long long>(file.schema_version()), names.size());
  for (const auto& [key, value] : file.metadata()) std::printf("  %s: %s\n", key.c_str(), value.c_str());
  int width = 4;
  for (const auto& name : names) width = std::max(width, static_cast<int>(name.size()));
  std::printf("%-*s %-8s %-7s %2s %4s %5s %3s %3s %4s %4s %-10s %-16s %s\n", width, "case", "kind", "mode", "L", "N",
              "T", "H", "HV", "K", "V", "in/out", "state", "bound(o) / rule");
  for (const auto& name : names) {
    const golden::Case c = file.read_case(name, golden::ViewCheck::inside_buffers_unless_contract);
    const Problem& p = c.problem;
    const std::string dtypes = std::string(name_of(p.q.dtype())) + "/" + std::string(name_of(p.o.dtype()));
    char last[96] = "-";
    if (c.violation) std::snprintf(last, sizeof last, "%s", std::string(name_of(c.violation->rule)).c_str());
    else if (c.tolerance) std::snprintf(last, sizeof last, "%.2e", c.tolerance->bound);
    const std::string L = p.mode == Mode::verify ? std::to_string(p.L) : "-";
    std::printf("%-*s %-8s %-7s %2s %4lld %5lld %3lld %3lld %4lld %4lld %-10s %-16s %s\n", width, name.c_str(),
                c.violation ? "contract" : "valid", std::string(name_of(p.mode)).c_str(), L.c_str(),
                static_cast<long long>(p.N),
                static_cast<long long>(p.T), static_cast<long long>(p.H), static_cast<long long>(p.HV),
                static_cast<long long>(p.K), static_cast<long long>(p.V), dtypes.c_str(), state_of(p).c_str(), last);
  }
}

void print_case(const golden::File& file, const std::string& name) {
  const golden::Case c = file.read_case(name, golden::ViewCheck::inside_buffers_unless_contract);
  const Problem& p = c.problem;
  std::printf("case %s (%s)\n  %s\n", name.c_str(), c.violation ? "contract" : "valid", p.describe().c_str());
  for (const auto& [key, value] : c.metadata) std::printf("  %s: %s\n", key.c_str(), value.c_str());
  if (const std::string call = golden::verify_call(p); !call.empty()) std::printf("  call: %s\n", call.c_str());
  std::printf("  tensors:\n");
  for (const auto& field : tensor_fields())
    if (const Tensor* t = field.in(p))
      std::printf("    %-15s %-48s buffer '%s' (%zu elements)\n", std::string(field.name).c_str(),
                  t->view.describe().c_str(), t->name().c_str(), t->buffer->size() / size_of(t->dtype()));
  if (c.violation)
    std::printf("  contract: rejected for %s with \"%s\"\n", std::string(name_of(c.violation->rule)).c_str(),
                c.violation->message.c_str());
  if (c.expected) {
    std::printf("  expected (fp64): o rms %.3e, final_state rms %.3e", rms(c.expected->o), rms(c.expected->final_state));
    if (!c.expected->chunk_states.empty()) std::printf(", chunk_states rms %.3e", rms(c.expected->chunk_states));
    if (!c.expected->token_states.empty()) std::printf(", token_states rms %.3e", rms(c.expected->token_states));
    std::printf("\n");
  }
  if (c.kernel_outputs) std::printf("  kernel outputs: o rms %.3e (a saved failure)\n", rms(c.kernel_outputs->o));
  if (c.tolerance) {
    const auto& t = *c.tolerance;
    std::printf("  tolerance: %s <= bound", t.metric.c_str());
    if (t.alpha) std::printf(" = %g x model error + unit roundoff (model %s)", *t.alpha, t.model.c_str());
    std::printf("\n");
    for (const auto& o : t.outputs)
      std::printf("    %-14s model %.2e  roundoff %.2e  bound %.2e\n", o.tensor.c_str(), o.model_error, o.unit_roundoff,
                  o.bound);
    if (t.outputs.empty()) std::printf("    bound %.2e\n", t.bound);
  }
}

}  // namespace

Command add_golden_inspect(CLI::App& golden) {
  auto* sub = golden.add_subcommand("inspect", "summarise a golden file, or one of its cases");
  auto args = std::make_shared<InspectArgs>();
  sub->add_option("file", args->file, "the golden file")->required();
  sub->add_option("case", args->case_name, "a case to show in full");
  return {sub, [args] {
            const golden::File file = golden::File::open(args->file);
            if (args->case_name.empty()) print_file(file);
            else print_case(file, args->case_name);
            return 0;
          }};
}

}  // namespace kda::cli
