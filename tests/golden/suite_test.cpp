// The suites: valid calls the reference runs, named uniquely, covering the catalogue's dimensions;
// every golden case's tolerance follows the policy; generation is deterministic.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "kda/golden/generate.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::golden {
namespace {

namespace fs = std::filesystem;

std::vector<const Suite*> suites() { return {&smoke_suite(), &standard_suite()}; }

TEST(Suites, AreFoundByName) {
  EXPECT_EQ(suite_names(), (std::vector<std::string>{"smoke", "standard"}));
  for (const Suite* s : suites()) EXPECT_EQ(find_suite(s->name), s);
  EXPECT_EQ(find_suite("nope"), nullptr);
}

TEST(Suites, CaseNamesAreUniqueAndUsable) {
  std::set<std::string> contract;
  for (const auto& c : contract_cases()) contract.insert(c.name);
  for (const Suite* s : suites()) {
    std::set<std::string> names;
    for (const auto& c : s->cases) {
      EXPECT_TRUE(names.insert(c.name).second) << s->name << ": " << c.name << " twice";
      EXPECT_EQ(c.name.find('/'), std::string::npos) << c.name;
      EXPECT_FALSE(c.covers.empty()) << c.name;
    }
    for (const auto& name : s->contract_cases) {
      EXPECT_TRUE(contract.count(name)) << s->name << " names an unknown contract case " << name;
      EXPECT_TRUE(names.insert(contract_case_name(name)).second) << name;
    }
  }
  EXPECT_EQ(standard_suite().contract_cases.size(), contract.size()) << "standard holds every contract case";
}

TEST(Suites, EveryValidCaseIsACallTheReferenceRuns) {
  const auto kernel = make_reference_kernel(Precision::fp64, Algorithm::recurrent);
  for (const Suite* s : suites())
    for (const auto& c : s->cases) {
      const Problem p = props::build_case(c.spec);
      const auto violations = validate(p, profile_strict());
      EXPECT_TRUE(violations.empty()) << c.name << ": " << (violations.empty() ? "" : violations[0].message);
      EXPECT_EQ(kernel->capabilities().unsupported(p), "") << c.name;
    }
}

// Whether some valid case of the suite satisfies the predicate.
bool some(const Suite& s, const std::function<bool(const ProblemSpec&, const props::CaseSpec&)>& has) {
  return std::any_of(s.cases.begin(), s.cases.end(), [&](const SuiteCase& c) { return has(c.spec.problem, c.spec); });
}

bool contains(const std::vector<std::int64_t>& xs, std::int64_t x) { return std::find(xs.begin(), xs.end(), x) != xs.end(); }
bool has_length(const ProblemSpec& p, std::int64_t n) { return contains(p.lengths, n); }

TEST(Suites, StandardCoversTheCatalogueDimensions) {
  const Suite& s = standard_suite();
  using P = const ProblemSpec&;
  using C = const props::CaseSpec&;
  const std::pair<const char*, std::function<bool(P, C)>> dimensions[] = {
      {"varlen with empty sequences", [](P p, C) { return p.varlen && p.lengths.size() > 1 && has_length(p, 0); }},
      {"batched rows", [](P p, C) { return !p.varlen; }},
      {"int64 cu_seqlens", [](P p, C) { return p.varlen && p.cu_seqlens_dtype == DType::i64; }},
      {"GVA", [](P p, C) { return p.HV > p.H; }},
      {"[V,K] states, K != V", [](P p, C) { return p.options.state_layout == StateLayout::vk && p.K != p.V; }},
      {"[K,V] states, K != V", [](P p, C) { return p.options.state_layout == StateLayout::kv && p.K != p.V; }},
      {"pre-activated gates", [](P p, C) { return !p.options.gate_in_kernel; }},
      {"softplus gate", [](P p, C) { return p.options.gate_in_kernel && !p.options.lower_bound; }},
      {"lower-bound gate", [](P p, C) { return p.options.gate_in_kernel && p.options.lower_bound; }},
      {"saturating and strong gates",
       [](P, C c) { return c.gates == props::GateMix::saturating || c.gates == props::GateMix::strong; }},
      {"padded pool with -1 rows",
       [](P p, C) {
         return p.state == StateSource::pool && p.pool_slot_stride > p.HV * p.K * p.V && p.pool_offset > 0 &&
                contains(p.indices, -1);
       }},
      {"bf16 pool", [](P p, C) { return p.state == StateSource::pool && p.state_dtype == DType::bf16; }},
      {"64-token chunk boundaries",
       [](P p, C) { return p.options.chunk_size == 64 && has_length(p, 63) && has_length(p, 64) && has_length(p, 65); }},
      {"32-token chunk boundaries",
       [](P p, C) { return p.options.chunk_size == 32 && has_length(p, 31) && has_length(p, 32) && has_length(p, 33); }},
      {"decode batch on a pool", [](P p, C) { return p.mode == Mode::decode && p.state == StateSource::pool && p.lengths.size() > 4; }},
      {"decode with dense states", [](P p, C) { return p.mode == Mode::decode && p.state == StateSource::dense; }},
      {"bf16 activations", [](P p, C) { return p.input_dtype == DType::bf16; }},
      {"f16 activations", [](P p, C) { return p.input_dtype == DType::f16; }},
      {"chunk states", [](P p, C) { return p.chunk_states; }},
      {"token states", [](P p, C) { return p.token_states; }},
      {"no initial state", [](P p, C) { return p.state == StateSource::none; }},
      {"l2norm in kernel", [](P p, C) { return p.options.l2norm_qk; }},
      {"beta from logits", [](P p, C) { return p.options.beta_from_logits; }},
      {"negative eigenvalues", [](P p, C) { return p.options.allow_neg_eigval; }},
      {"K = V = 128", [](P p, C) { return p.K == 128 && p.V == 128; }},
      {"padded token strides", [](P, C c) { return c.layout == props::InputLayout::padded_token_stride; }},
      {"padded head strides", [](P, C c) { return c.layout == props::InputLayout::padded_head_stride; }},
      {"fused qkv", [](P, C c) { return c.layout == props::InputLayout::fused_qkv; }},
      {"permuted", [](P, C c) { return c.layout == props::InputLayout::permuted; }},
      // realistic scale (kda-oracle check --scale realistic draws these shapes)
      {"32 value heads, K = V = 128", [](P p, C) { return p.HV >= 32 && p.K == 128 && p.V == 128; }},
      {"GVA ratio 8", [](P p, C) { return p.HV == 8 * p.H; }},
      {"a thousand-token sequence in a packing", [](P p, C) { return p.lengths.size() > 2 && *std::max_element(p.lengths.begin(), p.lengths.end()) >= 1000; }},
      {"decode batch with N x HV past 128",
       [](P p, C) { return p.mode == Mode::decode && static_cast<std::int64_t>(p.lengths.size()) * p.HV > 128; }},
      {"decode batch with N x HV = 128", [](P p, C) { return p.mode == Mode::decode && static_cast<std::int64_t>(p.lengths.size()) * p.HV == 128; }},
      {"K = 256", [](P p, C) { return p.K == 256; }},
  };
  for (const auto& [what, has] : dimensions) EXPECT_TRUE(some(s, has)) << "the standard suite lacks " << what;
}

// Both suites hold verify calls in both forms with every edge the issue names.
TEST(Suites, BothCoverTheVerifyForms) {
  using P = const ProblemSpec&;
  auto table = [](P p) { return p.mode == Mode::verify && p.state == StateSource::table; };
  auto scratch = [](P p) { return p.mode == Mode::verify && p.state == StateSource::scratch; };
  // The table entry request n starts from, and whether some other entry of the table is -1.
  auto initial = [](P p, std::size_t n) {
    return p.indices[n * static_cast<std::size_t>(p.L) + static_cast<std::size_t>(p.accepted[n]) - 1];
  };
  auto identity = [](P p) {
    for (std::size_t n = 0; n < p.scratch_indices.size(); ++n)
      if (p.scratch_indices[n] != static_cast<std::int64_t>(n)) return false;
    return true;
  };
  const std::pair<const char*, std::function<bool(const SuiteCase&)>> edges[] = {
      {"an accepted count of 1",
       [&](const SuiteCase& c) { return table(c.spec.problem) && contains(c.spec.problem.accepted, 1); }},
      {"an accepted count of L",
       [&](const SuiteCase& c) {
         P p = c.spec.problem;
         return table(p) && p.L > 1 && contains(p.accepted, p.L);
       }},
      {"an accepted count between 1 and L",
       [&](const SuiteCase& c) {
         P p = c.spec.problem;
         return table(p) && std::any_of(p.accepted.begin(), p.accepted.end(), [&](auto a) { return a > 1 && a < p.L; });
       }},
      {"a padding row in the table form",
       [&](const SuiteCase& c) {
         P p = c.spec.problem;
         for (std::size_t n = 0; table(p) && n < p.accepted.size(); ++n)
           if (initial(p, n) == -1) return true;
         return false;
       }},
      {"a -1 entry of a request that is not padding",
       [&](const SuiteCase& c) {
         P p = c.spec.problem;
         for (std::size_t n = 0; table(p) && n < p.accepted.size(); ++n)
           for (std::int64_t t = 0; initial(p, n) != -1 && t < p.L; ++t)
             if (p.indices[n * static_cast<std::size_t>(p.L) + static_cast<std::size_t>(t)] == -1) return true;
         return false;
       }},
      {"int64 accepted counts",
       [&](const SuiteCase& c) { return table(c.spec.problem) && c.spec.problem.accepted_dtype == DType::i64; }},
      {"a strided table", [&](const SuiteCase& c) { return table(c.spec.problem) && c.strided_table; }},
      {"an identity row map", [&](const SuiteCase& c) { return scratch(c.spec.problem) && identity(c.spec.problem); }},
      {"a permuted row map", [&](const SuiteCase& c) { return scratch(c.spec.problem) && !identity(c.spec.problem); }},
      {"more scratch steps than L",
       [&](const SuiteCase& c) { return scratch(c.spec.problem) && c.spec.problem.scratch_steps > c.spec.problem.L; }},
      {"a padding row in the scratch form",
       [&](const SuiteCase& c) { return scratch(c.spec.problem) && contains(c.spec.problem.indices, -1); }},
      {"verify with [V,K] states",
       [&](const SuiteCase& c) {
         return c.spec.problem.mode == Mode::verify && c.spec.problem.options.state_layout == StateLayout::vk;
       }},
      {"verify with [K,V] states",
       [&](const SuiteCase& c) {
         return c.spec.problem.mode == Mode::verify && c.spec.problem.options.state_layout == StateLayout::kv;
       }},
      {"a table with L = 1", [&](const SuiteCase& c) { return table(c.spec.problem) && c.spec.problem.L == 1; }},
      {"a table with L >= 4", [&](const SuiteCase& c) { return table(c.spec.problem) && c.spec.problem.L >= 4; }},
      {"a scratch form with L = 1",
       [&](const SuiteCase& c) { return scratch(c.spec.problem) && c.spec.problem.L == 1; }},
      {"a scratch form with L >= 4",
       [&](const SuiteCase& c) { return scratch(c.spec.problem) && c.spec.problem.L >= 4; }},
  };
  for (const Suite* s : suites())
    for (const auto& [what, has] : edges)
      EXPECT_TRUE(std::any_of(s->cases.begin(), s->cases.end(), has)) << "the " << s->name << " suite lacks " << what;
}

TEST(Suites, ToleranceFollowsThePolicy) {
  const SuiteCase& c = *std::find_if(smoke_suite().cases.begin(), smoke_suite().cases.end(),
                                     [](const SuiteCase& x) { return x.name == "gva_bf16_kv_softplus"; });
  const Case g = golden_case(smoke_suite(), c);
  ASSERT_TRUE(g.tolerance && g.expected);
  const Tolerance& t = *g.tolerance;
  EXPECT_EQ(t.metric, "rel_rms");
  EXPECT_EQ(t.alpha, 2.0);
  EXPECT_EQ(t.model, kToleranceModel);
  ASSERT_EQ(t.outputs.size(), 2u);
  EXPECT_EQ(t.outputs[0].tensor, "o");
  EXPECT_EQ(t.outputs[1].tensor, "final_state");
  EXPECT_EQ(t.outputs[0].unit_roundoff, 0x1p-8) << "o is bf16";
  EXPECT_EQ(t.outputs[1].unit_roundoff, 0x1p-24) << "the states are f32";
  for (const auto& o : t.outputs) {
    EXPECT_GT(o.model_error, 0) << o.tensor;
    EXPECT_DOUBLE_EQ(o.bound, 2.0 * o.model_error + o.unit_roundoff) << o.tensor;
  }
  EXPECT_EQ(t.bound, t.outputs[0].bound);
  EXPECT_EQ(g.metadata.at("suite"), "smoke");
  EXPECT_EQ(g.metadata.at("spec"), c.spec.describe());
}

std::vector<char> bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Suites, GenerationIsDeterministicWhateverTheThreadCount) {
  const fs::path dir = fs::temp_directory_path() / ("kda_suite_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::string> progress;
  const auto stats = generate(smoke_suite(), dir / "a.h5",
                              {1, [&](std::size_t, std::size_t, const std::string& name) { progress.push_back(name); }});
  generate(smoke_suite(), dir / "b.h5", {3, {}});
  EXPECT_EQ(stats.cases, smoke_suite().cases.size());
  EXPECT_EQ(stats.contract_cases, smoke_suite().contract_cases.size());
  EXPECT_EQ(stats.bytes, fs::file_size(dir / "a.h5"));
  EXPECT_LT(stats.bytes, 1'000'000u) << "the smoke file is committed: keep it under 1 MB";
  EXPECT_EQ(progress.size(), stats.cases + stats.contract_cases);
  EXPECT_EQ(progress.front(), smoke_suite().cases.front().name) << "written in the suite's order";
  EXPECT_TRUE(bytes_of(dir / "a.h5") == bytes_of(dir / "b.h5"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kda::golden
