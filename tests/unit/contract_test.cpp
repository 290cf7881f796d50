// The calling contract, table-driven (OpInfo style): every rule has a case (contract_cases.hpp) that
// takes a valid problem, breaks that one rule and expects exactly that violation, with upstream's
// wording where upstream has one. Valid problems, the profiles and hostile garbage follow the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "kda/contract_cases.hpp"
#include "kda/problem_factory.hpp"

namespace kda {
namespace {

using i64 = std::int64_t;

ProblemSpec dense_spec() { return contract_dense_spec(); }
ProblemSpec pool_spec() { return contract_pool_spec(); }
ProblemSpec sglang_spec() { return contract_sglang_spec(); }
ProblemSpec verify_table_spec() { return contract_verify_table_spec(); }
ProblemSpec verify_scratch_spec() { return contract_verify_scratch_spec(); }
ProblemSpec sglang_verify_spec() { return contract_sglang_verify_spec(); }
const Profile& sglang() { return *find_profile("sglang_flashinfer_decode"); }

Problem build(const ProblemSpec& spec) {
  Problem p = make_problem(spec);
  fill_random(p, 7);
  return p;
}

Tensor integers(std::string name, DType dtype, const std::vector<i64>& xs) {
  Tensor t = Tensor::zeros(std::move(name), dtype, {static_cast<i64>(xs.size())});
  for (std::size_t i = 0; i < xs.size(); ++i) t.set_integer(static_cast<i64>(i), xs[i]);
  return t;
}

std::string rules_of(const std::vector<Violation>& vs) {
  std::string s;
  for (const auto& v : vs) s += std::string(name_of(v.rule)) + ": " + v.message + "\n";
  return s;
}

// Cases are built once; a parameter is an index into them (a Problem is not cheap to copy around).
const std::vector<ContractCase>& cases() {
  static const std::vector<ContractCase> all = contract_cases();
  return all;
}

class RuleCase : public testing::TestWithParam<std::size_t> {};

TEST_P(RuleCase, BreaksOnlyItsRule) {
  const ContractCase& c = cases()[GetParam()];
  const auto found = validate(c.problem, *c.profile);
  ASSERT_EQ(found.size(), 1u) << rules_of(found);
  EXPECT_EQ(found[0].rule, c.rule) << rules_of(found);
  EXPECT_NE(found[0].message.find(c.message), std::string::npos)
      << "expected: " << c.message << "\n     got: " << found[0].message;
}

TEST_P(RuleCase, ProfilesReportOnlyRulesTheyEnforce) {
  const Problem& p = cases()[GetParam()].problem;
  for (auto name : profile_names()) {
    const Profile& profile = *find_profile(name);
    for (const auto& v : validate(p, profile))
      EXPECT_TRUE(profile.enforces(v.rule)) << name << " reported " << name_of(v.rule);
  }
}

INSTANTIATE_TEST_SUITE_P(Contract, RuleCase, testing::Range<std::size_t>(0, contract_cases().size()),
                         [](const testing::TestParamInfo<std::size_t>& param) { return cases()[param.param].name; });

TEST(ContractCoverage, EveryRuleHasACase) {
  std::set<Rule> covered;
  for (const auto& c : cases()) covered.insert(c.rule);
  for (Rule r : all_rules()) EXPECT_TRUE(covered.count(r)) << "no test case breaks " << name_of(r);
}

TEST(ContractValid, WellFormedProblemsPassStrict) {
  struct Named {
    const char* name;
    std::function<void(ProblemSpec&)> respec;
  };
  const std::vector<Named> variants{
      {"dense, [V,K]", [](auto&) {}},
      {"dense, [K,V]", [](auto& s) { s.options.state_layout = StateLayout::kv; }},
      {"zero-length sequences, int64 cu_seqlens",
       [](auto& s) { s.lengths = {0, 0, 7, 0}, s.cu_seqlens_dtype = DType::i64; }},
      {"no sequences", [](auto& s) { s.lengths = {}; }},
      {"fixed-length batch", [](auto& s) { s.varlen = false, s.lengths = {9, 9, 9}; }},
      {"bf16 everywhere", [](auto& s) { s.input_dtype = s.output_dtype = s.state_dtype = DType::bf16; }},
      {"no state, softplus gate", [](auto& s) {
         s.state = StateSource::none, s.options.lower_bound.reset(), s.options.safe_gate = false;
       }},
      {"GVA 1:8", [](auto& s) { s.H = 1, s.HV = 8; }},
      {"pool, padded slot stride, -1 index", [](auto& s) { s = pool_spec(); }},
      {"pool, [K,V]", [](auto& s) { s = pool_spec(), s.options.state_layout = StateLayout::kv; }},
      {"pool, compact, offset 32 bytes", [](auto& s) { s = pool_spec(), s.pool_slot_stride = 0, s.pool_offset = 8; }},
      {"decode with a pool", [](auto& s) { s = pool_spec(), s.mode = Mode::decode, s.lengths = {1, 1, 1}; }},
      {"sglang decode", [](auto& s) { s = sglang_spec(); }},
      {"verify, index table, ragged, -1 entries", [](auto& s) { s = verify_table_spec(); }},
      {"verify, index table, int64 counts, [K,V]",
       [](auto& s) { s = verify_table_spec(), s.accepted_dtype = DType::i64, s.options.state_layout = StateLayout::kv; }},
      {"verify, index table, fixed tokens without cu_seqlens",
       [](auto& s) { s = verify_table_spec(), s.varlen = false, s.lengths = {4, 4, 4}, s.accepted = {1, 4, 2}; }},
      {"verify, scratch, ragged, non-identity row map", [](auto& s) { s = verify_scratch_spec(); }},
      {"verify, scratch, bf16 states, -1 row", [](auto& s) {
         s = verify_scratch_spec(), s.state_dtype = DType::bf16, s.scratch_indices = {2, -1, 3};
       }},
      {"sglang verify", [](auto& s) { s = sglang_verify_spec(); }},
  };
  for (const auto& v : variants) {
    ProblemSpec spec = dense_spec();
    v.respec(spec);
    EXPECT_EQ(rules_of(validate(build(spec), profile_strict())), "") << v.name;
  }
}

TEST(ContractValid, UpstreamShapedProblemsPassTheirProfiles) {
  const Problem dense = build(dense_spec());
  EXPECT_EQ(rules_of(validate(dense, *find_profile("fla_fused_recurrent"))), "");
  EXPECT_EQ(rules_of(validate(dense, *find_profile("fla_chunk"))), "");
  EXPECT_EQ(rules_of(validate(build(sglang_spec()), sglang())), "");
  const Problem sglang_verify = build(sglang_verify_spec());
  for (const char* name : {"sglang_flashinfer_verify", "sglang_helion_verify", "sglang_triton_verify",
                           "sglang_dspark_mtp"})
    EXPECT_EQ(rules_of(validate(sglang_verify, *find_profile(name))), "") << name;
  ProblemSpec flashinfer_table = sglang_verify_spec();
  flashinfer_table.state = StateSource::table, flashinfer_table.pool_slots = 6;
  flashinfer_table.indices = {1, 2, 3, 4}, flashinfer_table.accepted = {2, 1};
  EXPECT_EQ(rules_of(validate(build(flashinfer_table), *find_profile("flashinfer_verify"))), "");
  ProblemSpec vllm_table = verify_table_spec();
  vllm_table.HV = 1, vllm_table.options.state_layout = StateLayout::vk;
  EXPECT_EQ(rules_of(validate(build(vllm_table), *find_profile("vllm_fused_recurrent_verify"))), "");
  ProblemSpec vllm_pool = pool_spec();
  vllm_pool.HV = vllm_pool.H, vllm_pool.options.state_layout = StateLayout::vk;
  for (const char* name : {"vllm_fused_recurrent", "vllm_packed_decode"})
    EXPECT_EQ(rules_of(validate(build(vllm_pool), *find_profile(name))), "") << name;
  ProblemSpec vllm_dense = dense_spec();
  vllm_dense.options.state_layout = StateLayout::vk;
  for (const char* name : {"vllm_chunk", "vllm_chunk_fused_gate"})
    EXPECT_EQ(rules_of(validate(build(vllm_dense), *find_profile(name))), "") << name;
  // Each vLLM path takes one state source and [V, K] states only.
  const auto table_on_decode = validate(build(vllm_table), *find_profile("vllm_fused_recurrent"));
  ASSERT_EQ(table_on_decode.size(), 1u) << rules_of(table_on_decode);
  EXPECT_EQ(table_on_decode[0].rule, Rule::state_source_supported);
  vllm_dense.options.state_layout = StateLayout::kv;
  const auto kv_on_chunk = validate(build(vllm_dense), *find_profile("vllm_chunk"));
  ASSERT_EQ(kv_on_chunk.size(), 1u) << rules_of(kv_on_chunk);
  EXPECT_EQ(kv_on_chunk[0].rule, Rule::state_layout);
}

TEST(ContractErrors, RequireValidThrowsWithEveryViolation) {
  ProblemSpec spec = dense_spec();
  spec.options.lower_bound = -6.0;
  spec.options.scale = 0.0;
  const Problem p = build(spec);
  const auto expected = validate(p, profile_strict());
  ASSERT_EQ(expected.size(), 2u) << rules_of(expected);
  try {
    require_valid(p, profile_strict());
    FAIL() << "require_valid accepted an invalid problem";
  } catch (const ContractError& e) {
    ASSERT_EQ(e.violations.size(), expected.size());
    const std::string what = e.what();
    EXPECT_NE(what.find("'strict'"), std::string::npos) << what;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(e.violations[i].rule, expected[i].rule);
      EXPECT_EQ(e.violations[i].message, expected[i].message);
      EXPECT_NE(what.find(std::string(name_of(expected[i].rule)) + ": " + expected[i].message), std::string::npos)
          << what;
    }
  }
  EXPECT_NO_THROW(require_valid(build(dense_spec()), profile_strict()));
}

TEST(ContractWording, VarlenBatchMessagesAreUpstreamsExactly) {
  ProblemSpec spec = dense_spec();
  spec.varlen = false, spec.lengths = {8, 8, 8};
  Problem p = build(spec);
  p.cu_seqlens = integers("cu_seqlens", DType::i64, {0, 3, 5, 8});
  const std::string fla =
      "The batch size is expected to be 1 rather than 3 when using `cu_seqlens`.Please flatten variable-length inputs "
      "before processing.";
  for (const char* name : {"strict", "fla_fused_recurrent", "fla_chunk"}) {
    const auto found = validate(p, *find_profile(name));
    ASSERT_EQ(found.size(), 1u) << name << "\n" << rules_of(found);
    EXPECT_EQ(found[0].message, fla) << name;
  }
  Profile helion = profile_strict();
  helion.batch_wording = BatchWording::helion;
  const auto found = validate(p, helion);
  ASSERT_EQ(found.size(), 1u) << rules_of(found);
  EXPECT_EQ(found[0].message, "varlen KDA requires batch size 1");
}

TEST(ContractProfiles, RegistryNamesEveryProfile) {
  const std::vector<std::string_view> expected{"strict",
                                               "fla_fused_recurrent",
                                               "fla_chunk",
                                               "fla_pooled_decode",
                                               "fla_verify",
                                               "sglang_flashinfer_decode",
                                               "sglang_triton_decode",
                                               "sglang_triton_chunk",
                                               "sglang_helion_chunk",
                                               "sglang_packed_decode",
                                               "sglang_helion_packed_decode",
                                               "flashinfer_verify",
                                               "sglang_flashinfer_verify",
                                               "sglang_helion_verify",
                                               "sglang_triton_verify",
                                               "sglang_dspark_mtp",
                                               "vllm_fused_recurrent",
                                               "vllm_fused_recurrent_verify",
                                               "vllm_packed_decode",
                                               "vllm_chunk",
                                               "vllm_chunk_fused_gate",
                                               "flashinfer_decode"};
  EXPECT_EQ(profile_names(), expected);
  for (auto name : expected) {
    const Profile* p = find_profile(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name, name);
    EXPECT_FALSE(p->describes.empty()) << name;
    std::set<Rule> distinct(p->rules.begin(), p->rules.end());
    EXPECT_EQ(distinct.size(), p->rules.size()) << name << " lists a rule twice";
    EXPECT_TRUE(p->enforces(Rule::view_in_bounds)) << name;
  }
  EXPECT_EQ(find_profile("no_such_kernel"), nullptr);
  EXPECT_EQ(&profile_strict(), find_profile("strict"));
  // strict holds every rule but the two restrictions of particular implementations (SGLang's fixed
  // tokens per verify request, FlashInfer's identity scratch row map).
  for (Rule r : all_rules())
    EXPECT_EQ(profile_strict().enforces(r), r != Rule::verify_fixed_tokens && r != Rule::scratch_indices_identity)
        << name_of(r);
}

// ---- hostile input: garbage must never crash, read out of bounds or overflow (run under ASan+UBSan) ----

class Garbage {
 public:
  explicit Garbage(std::uint64_t seed) : rng_(seed) {}

  bool coin(int one_in = 2) { return rng_() % static_cast<std::uint64_t>(one_in) == 0; }

  i64 number() {
    static constexpr i64 extremes[] = {std::numeric_limits<i64>::min(), std::numeric_limits<i64>::max(),
                                       -(i64{1} << 40), i64{1} << 40, i64{1} << 31, -1, 0, 1, 16, 128};
    if (coin(4)) return extremes[rng_() % std::size(extremes)];
    return static_cast<i64>(rng_() % 12) - 2;
  }

  Tensor tensor(std::vector<std::shared_ptr<GuardedBuffer>>& buffers) {
    Tensor t;
    if (!coin(20)) {
      if (!buffers.empty() && coin(3)) {
        t.buffer = buffers[rng_() % buffers.size()];
      } else {
        t.buffer = std::make_shared<GuardedBuffer>("garbage", rng_() % 512);
        for (std::size_t i = 0; i < t.buffer->size(); ++i) t.buffer->data()[i] = static_cast<std::byte>(rng_());
        buffers.push_back(t.buffer);
      }
    }
    t.view.dtype = static_cast<DType>(rng_() % 8);  // codes 6 and 7 name no dtype
    const auto rank = rng_() % 6;
    for (std::size_t d = 0; d < rank; ++d) {
      t.view.shape.push_back(coin(3) ? number() : static_cast<i64>(rng_() % 6));
      t.view.strides.push_back(coin(3) ? number() : static_cast<i64>(rng_() % 40));
    }
    if (coin(10)) t.view.strides.push_back(1);
    t.view.offset = coin(3) ? number() : static_cast<i64>(rng_() % 64);
    return t;
  }

  std::optional<Tensor> maybe(std::vector<std::shared_ptr<GuardedBuffer>>& buffers) {
    if (coin()) return std::nullopt;
    return tensor(buffers);
  }

  Problem problem() {
    std::vector<std::shared_ptr<GuardedBuffer>> buffers;
    Problem p;
    p.mode = static_cast<Mode>(rng_() % 3);
    for (i64* size : {&p.B, &p.T, &p.N, &p.H, &p.HV, &p.K, &p.V}) *size = number();
    Options& op = p.options;
    if (coin()) op.scale = real();
    if (coin()) op.lower_bound = real();
    op.gate_in_kernel = coin(), op.safe_gate = coin(), op.allow_neg_eigval = coin(), op.beta_from_logits = coin();
    op.chunk_size = static_cast<int>(coin() ? number() : 32);
    op.state_layout = static_cast<StateLayout>(rng_() % 3);
    p.q = tensor(buffers), p.k = tensor(buffers), p.v = tensor(buffers), p.g = tensor(buffers);
    p.beta = tensor(buffers), p.o = tensor(buffers);
    for (auto* t : {&p.cu_seqlens, &p.A_log, &p.dt_bias, &p.initial_state, &p.state_pool, &p.state_indices,
                    &p.final_state, &p.chunk_states, &p.token_states})
      *t = maybe(buffers);
    return p;
  }

  // A valid problem with a few fields turned to garbage: reaches the checks behind the structural ones.
  // Index values are written first, while the views are still the factory's valid ones.
  void corrupt(Problem& p) {
    auto below = [&](i64 n) { return static_cast<i64>(rng_() % static_cast<std::uint64_t>(n)); };
    for (auto* t : {&p.cu_seqlens, &p.state_indices, &p.num_accepted, &p.scratch_indices}) {
      if (!*t || (*t)->numel() == 0 || !coin()) continue;
      const Shape& shape = (*t)->shape();
      if (shape.size() == 1) (*t)->set_integer(below(shape[0]), number());
      if (shape.size() == 2) (*t)->set_integer(below(shape[0]), below(shape[1]), number());  // an index table
    }
    std::vector<Tensor*> ts;
    for (Tensor* t : p.outputs()) ts.push_back(t);
    for (Tensor* t : {&p.q, &p.k, &p.v, &p.g, &p.beta}) ts.push_back(t);
    for (auto* t : {&p.cu_seqlens, &p.A_log, &p.dt_bias, &p.initial_state, &p.state_indices, &p.num_accepted,
                    &p.scratch_indices})
      if (*t) ts.push_back(&**t);
    for (int n = 1 + static_cast<int>(rng_() % 3); n > 0; --n) {
      Tensor& t = *ts[rng_() % ts.size()];
      const auto rank = t.view.shape.size();
      switch (rng_() % 5) {
        case 0: if (rank) t.view.shape[rng_() % rank] = number(); break;
        case 1: if (rank) t.view.strides[rng_() % rank] = number(); break;
        case 2: t.view.offset = number(); break;
        case 3: t.buffer = ts[rng_() % ts.size()]->buffer; break;
        case 4: t.view.dtype = static_cast<DType>(rng_() % 8); break;
      }
    }
  }

 private:
  double real() {
    using limits = std::numeric_limits<double>;
    static constexpr double specials[] = {limits::quiet_NaN(), limits::infinity(), -limits::infinity(), 0.0, -5.0,
                                          -1e300};
    if (coin(3)) return specials[rng_() % std::size(specials)];
    return std::uniform_real_distribution<double>(-10, 10)(rng_);
  }

  std::mt19937_64 rng_;
};

void validate_everywhere(const Problem& p) {
  for (auto name : profile_names()) {
    (void)validate(p, *find_profile(name));
    try {
      require_valid(p, *find_profile(name));
    } catch (const ContractError&) {
    }
  }
}

TEST(ContractHostile, GarbageProblemsNeverCrash) {
  Garbage garbage(20240601);
  std::size_t rejected = 0;
  for (int i = 0; i < 400; ++i) {
    const Problem p = garbage.problem();
    validate_everywhere(p);
    rejected += !validate(p, profile_strict()).empty();
  }
  EXPECT_EQ(rejected, 400u);  // garbage is never a valid call
}

TEST(ContractHostile, CorruptedValidProblemsNeverCrash) {
  Garbage garbage(7);
  ProblemSpec small_sglang = sglang_spec();
  small_sglang.K = small_sglang.V = 16;
  const std::vector<ProblemSpec> specs{dense_spec(), pool_spec(), small_sglang, verify_table_spec(),
                                       verify_scratch_spec()};
  for (int i = 0; i < 300; ++i) {
    Problem p = build(specs[static_cast<std::size_t>(i) % specs.size()]);
    garbage.corrupt(p);
    validate_everywhere(p);
  }
}

}  // namespace
}  // namespace kda
