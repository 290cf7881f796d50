// The generators: valid cases are valid and supported, every feature appears, gaps hold poison,
// build_case is deterministic, shrinking reaches small packings, invalid cases break their rule.
// Every property runs under a fixed seed (rapidcheck's TestParams), so the file is deterministic.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "../support/rapidcheck_run.hpp"
#include "kda/properties/generators.hpp"
#include "kda/reference_kernel.hpp"

namespace kda::props {
namespace {

using i64 = std::int64_t;
using test::message_of;
using test::run_property;
using test::tag_counts;

#define EXPECT_HOLDS(result) EXPECT_TRUE((result).is<rc::detail::SuccessResult>()) << message_of(result)

std::string rules_of(const std::vector<Violation>& vs) {
  std::string s;
  for (const auto& v : vs) s += std::string(name_of(v.rule)) + ": " + v.message + "\n";
  return s;
}

// ---- kernels: the reference, and fakes that only declare what they take ----

std::unique_ptr<Kernel> reference() { return make_reference_kernel(Precision::fp64, Algorithm::recurrent); }

class FakeKernel final : public Kernel {
 public:
  FakeKernel(std::string name, Capabilities caps, Profile profile)
      : name_(std::move(name)), caps_(std::move(caps)), profile_(std::move(profile)) {}
  std::string name() const override { return name_; }
  const Capabilities& capabilities() const override { return caps_; }
  const Profile& profile() const override { return profile_; }
  RunOutcome run(Problem&) override { return RunOutcome::failed("a fake kernel runs nothing"); }

 private:
  std::string name_;
  Capabilities caps_;
  Profile profile_;
};

// SGLang's FlashInfer decode: K = V = 128, bf16, an fp32 [V,K] pool only, decode only.
FakeKernel sglang_decode_kernel() {
  Capabilities c;
  c.modes = {Mode::decode};
  c.input_dtypes = c.output_dtypes = {DType::bf16};
  c.state_dtypes = {DType::f32};
  c.layouts = {StateLayout::vk};
  c.state_sources = {StateSource::pool};
  c.key_head_dims = c.value_head_dims = {128};
  c.chunk_states = c.token_states = false;
  return FakeKernel("fake-sglang-decode", c, *find_profile("sglang_flashinfer_decode"));
}

// A prefill kernel taking contiguous, pre-activated inputs without cu_seqlens, under FLA chunk's contract.
FakeKernel fla_chunk_kernel() {
  Capabilities c;
  c.modes = {Mode::prefill};
  c.state_sources = {StateSource::none, StateSource::dense};
  c.varlen = false;
  c.gate_in_kernel = false;
  c.strided_inputs = false;
  return FakeKernel("fake-fla-chunk", c, *find_profile("fla_chunk"));
}

// Everything, under a strict profile without the pool alignment rule: misaligned pools are valid.
FakeKernel unaligned_pool_kernel() {
  Profile p = profile_strict();
  p.name = "strict_without_pool_alignment";
  std::erase(p.rules, Rule::state_pool_alignment);
  return FakeKernel("fake-unaligned-pool", Capabilities{}, p);
}

bool all_of_lengths(const CaseSpec& c, i64 length) {
  return std::all_of(c.problem.lengths.begin(), c.problem.lengths.end(), [&](i64 l) { return l == length; });
}

// ---- valid cases ----

// Every drawn case passes the kernel's profile and capabilities, within the limits.
rc::detail::TestResult check_valid(const Kernel& kernel, std::uint64_t seed, int cases, const GenLimits& limits = {}) {
  return run_property(seed, cases, [&] {
    const CaseSpec spec = *gen_valid_case(kernel, limits);
    const Problem p = build_case(spec);
    const auto violations = validate(p, kernel.profile());
    RC_ASSERT(violations.empty());  // rapidcheck prints the spec; the rules follow on failure
    RC_ASSERT(kernel.capabilities().unsupported(p) == "");
    RC_ASSERT(static_cast<int>(spec.problem.lengths.size()) <= limits.max_sequences);
    RC_ASSERT(p.T * p.B <= limits.max_tokens);
    RC_ASSERT(p.H <= limits.max_heads && p.HV <= limits.max_heads && p.HV % p.H == 0);
  });
}

TEST(GenValidCase, ReferenceKernelCasesAreValidAndSupported) {
  const auto kernel = reference();
  EXPECT_HOLDS(check_valid(*kernel, 1, 400));
}

TEST(GenValidCase, RestrictedKernelCasesStayInsideItsCapabilities) {
  const FakeKernel kernel = sglang_decode_kernel();
  EXPECT_HOLDS(check_valid(kernel, 2, 150));
  const auto shape = run_property(3, 100, [&] {
    const CaseSpec c = *gen_valid_case(kernel);
    RC_ASSERT(c.problem.K == 128 && c.problem.V == 128);
    RC_ASSERT(c.problem.mode == Mode::decode && all_of_lengths(c, 1));
    RC_ASSERT(c.problem.state == StateSource::pool && c.problem.state_dtype == DType::f32);
    RC_ASSERT(c.problem.input_dtype == DType::bf16 && c.problem.options.state_layout == StateLayout::vk);
  });
  EXPECT_HOLDS(shape);
}

TEST(GenValidCase, ContiguousBatchedKernelGetsContiguousBatches) {
  const FakeKernel kernel = fla_chunk_kernel();
  EXPECT_HOLDS(check_valid(kernel, 4, 150));
  const auto shape = run_property(5, 100, [&] {
    const CaseSpec c = *gen_valid_case(kernel);
    const Problem p = build_case(c);
    RC_ASSERT(!c.problem.varlen && !p.cu_seqlens && all_of_lengths(c, c.problem.lengths.front()));
    for (const Tensor* t : p.inputs()) RC_ASSERT(t->view.is_contiguous());
    RC_ASSERT(!p.options.gate_in_kernel && c.problem.state_dtype == DType::f32);
  });
  EXPECT_HOLDS(shape);
}

// SGLang's Helion verify always scales q by K^-0.5 (it has no scale argument): no case draws another scale.
TEST(GenValidCase, AKernelWithoutAScaleOptionGetsTheDefaultScale) {
  Capabilities c;
  c.modes = {Mode::verify};
  c.state_sources = {StateSource::scratch};
  c.layouts = {StateLayout::vk};
  c.explicit_scale = false;
  const FakeKernel kernel("fake-sglang-helion-verify", c, *find_profile("sglang_helion_verify"));
  EXPECT_HOLDS(check_valid(kernel, 6, 100));
  const auto options = run_property(7, 50, [&] {
    const CaseSpec spec = *gen_valid_case(kernel);
    RC_ASSERT(!spec.problem.options.scale);
    Problem p = build_case(spec);
    p.options.scale = 1.0 / std::sqrt(static_cast<double>(p.K));  // the default, given: supported
    RC_ASSERT(kernel.capabilities().unsupported(p) == "");
    p.options.scale = 0.3;
    RC_ASSERT(kernel.capabilities().unsupported(p) == "a scale other than K^-0.5");
  });
  EXPECT_HOLDS(options);
}

// vLLM's packed decode: l2norm, the gate and beta from logits always in the kernel, never allow_neg_eigval.
TEST(GenValidCase, AFusedPathGetsItsOptionsOnEveryCall) {
  Capabilities c;
  c.modes = {Mode::decode};
  c.state_sources = {StateSource::pool};
  c.layouts = {StateLayout::vk};
  c.neg_eigval = false;
  c.always_gate_in_kernel = c.always_l2norm = c.always_beta_from_logits = true;
  const FakeKernel kernel("fake-vllm-packed-decode", c, *find_profile("vllm_packed_decode"));
  EXPECT_HOLDS(check_valid(kernel, 8, 150));
  EXPECT_HOLDS(run_property(9, 150, [&] {
    CaseSpec spec = *gen_valid_case(kernel);
    const Options& o = spec.problem.options;
    RC_ASSERT(o.gate_in_kernel && o.l2norm_qk && o.beta_from_logits && !o.allow_neg_eigval);
    RC_ASSERT(c.unsupported(build_case(spec)).empty());
    // A call without one of them (a golden case, say) is outside the capabilities.
    spec.problem.options.l2norm_qk = false;
    RC_ASSERT(c.unsupported(build_case(spec)) == "no l2norm in kernel");
  }));
}

TEST(GenValidCase, UnalignedPoolsAppearWhereTheProfileAllowsThem) {
  const FakeKernel kernel = unaligned_pool_kernel();
  EXPECT_HOLDS(check_valid(kernel, 6, 200));
  const auto result = run_property(7, 300, [&] {
    const CaseSpec c = *gen_valid_case(kernel);
    const ProblemSpec& s = c.problem;
    if (s.state != StateSource::pool) return;
    RC_TAG("pool");
    if (s.pool_slot_stride % 16 != 0) RC_TAG("slot stride not a multiple of 16");
    if (s.pool_offset * static_cast<i64>(size_of(s.state_dtype)) % 32 != 0) RC_TAG("base not 32-byte aligned");
  });
  EXPECT_HOLDS(result);
  auto counts = tag_counts(result);
  EXPECT_GT(counts["slot stride not a multiple of 16"], 0);
  EXPECT_GT(counts["base not 32-byte aligned"], 0);
}

TEST(GenValidCase, UnsatisfiableKernelIsRefusedUpFront) {
  GenLimits limits;
  limits.head_dims = {16, 32};  // the SGLang kernel takes only 128
  const FakeKernel kernel = sglang_decode_kernel();
  EXPECT_THROW(gen_valid_case(kernel, limits), std::invalid_argument);
}


// ---- coverage: every feature appears within a few hundred draws ----

std::string pow2_name(i64 d) { return (d & (d - 1)) == 0 ? "power of two" : "not a power of two"; }

// Tags describing one case; each must appear (checked against the expected list below).
void tag_case(const CaseSpec& c, const Problem& p) {
  const ProblemSpec& s = c.problem;
  const Options& o = s.options;
  RC_TAG("layout " + std::string(name_of(c.layout)));
  RC_TAG("o " + std::string(name_of(c.output_layout)));
  RC_TAG("gates " + std::string(name_of(c.gates)));
  RC_TAG("poison " + std::string(name_of(c.poison)));
  RC_TAG(std::string(name_of(s.mode)));
  RC_TAG(s.varlen ? "varlen" : "batched");
  RC_TAG("GVA ratio " + std::to_string(s.HV / s.H));
  RC_TAG("K " + pow2_name(s.K));
  RC_TAG("V " + pow2_name(s.V));
  if (s.K != s.V) RC_TAG("K != V");
  RC_TAG("input " + std::string(name_of(s.input_dtype)));
  RC_TAG("state layout " + std::string(name_of(o.state_layout)));
  RC_TAG("chunk " + std::to_string(o.chunk_size));
  RC_TAG(!o.gate_in_kernel ? "gate pre-activated" : o.lower_bound ? "gate lower bound" : "gate softplus");
  if (o.safe_gate) RC_TAG("safe gate");
  RC_TAG(o.beta_from_logits ? "beta logits" : "beta sigmoided");
  if (o.allow_neg_eigval) RC_TAG("neg eigval");
  if (o.l2norm_qk) RC_TAG("l2norm");
  if (o.scale) RC_TAG("explicit scale");
  if (s.varlen) RC_TAG("cu_seqlens " + std::string(name_of(s.cu_seqlens_dtype)));
  if (s.final_state && s.state != StateSource::pool) RC_TAG("final_state");
  if (s.chunk_states) RC_TAG("chunk_states");
  if (s.token_states) RC_TAG("token_states");
  if (!c.padding_pattern) RC_TAG("no padding pattern");
  RC_TAG("state " + std::string(name_of(s.state)));
  if (s.state != StateSource::none) RC_TAG("state " + std::string(name_of(s.state_dtype)));
  if (s.state == StateSource::pool) {
    if (s.pool_slot_stride > s.HV * s.K * s.V) RC_TAG("pool padded slot stride");
    if (s.pool_offset > 0) RC_TAG("pool offset");
    if (std::count(s.indices.begin(), s.indices.end(), -1) > 0) RC_TAG("pool -1 row");
    if (s.pool_slots > static_cast<i64>(s.lengths.size()) + 1) RC_TAG("pool extra slots");
    std::vector<i64> identity(s.indices.size());
    std::iota(identity.begin(), identity.end(), i64{1});
    if (s.indices != identity) RC_TAG("pool permuted indices");
  }
  const auto& ls = s.lengths;
  for (i64 edge : {0, 1, 15, 16, 17, 63, 64, 65})
    if (std::find(ls.begin(), ls.end(), edge) != ls.end()) RC_TAG("length " + std::to_string(edge));
  if (*std::max_element(ls.begin(), ls.end()) > 65) RC_TAG("length > 65");
  if (ls.size() >= 16) RC_TAG("16+ sequences");
  if (ls.size() == 1) RC_TAG("one sequence");
  if (p.T * p.B == 0) RC_TAG("no tokens");
}

TEST(GenValidCase, EveryFeatureAppears) {
  const auto kernel = reference();
  const auto result = run_property(11, 600, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    tag_case(c, build_case(c));
  });
  ASSERT_TRUE(result.is<rc::detail::SuccessResult>()) << message_of(result);
  auto counts = tag_counts(result);
  std::vector<std::string> expected{
      "prefill", "decode", "varlen", "batched", "GVA ratio 1", "GVA ratio 2", "GVA ratio 4", "K power of two",
      "K not a power of two", "V power of two", "V not a power of two", "K != V", "input f32", "input bf16",
      "input f16", "input f64", "state layout VK", "state layout KV", "chunk 32", "chunk 64", "gate pre-activated",
      "gate lower bound", "gate softplus", "safe gate", "beta logits", "beta sigmoided", "neg eigval", "l2norm",
      "explicit scale", "cu_seqlens i32", "cu_seqlens i64", "final_state", "chunk_states", "token_states",
      "no padding pattern", "state none", "state dense", "state pool", "state table", "state scratch", "state f32",
      "state bf16",
      "pool padded slot stride", "pool offset", "pool -1 row", "pool extra slots", "pool permuted indices",
      "length 0", "length 1", "length 15", "length 16", "length 17", "length 63", "length 64", "length 65",
      "length > 65", "16+ sequences", "one sequence", "poison nan", "poison huge"};
  for (auto l : {InputLayout::contiguous, InputLayout::padded_token_stride, InputLayout::padded_head_stride,
                 InputLayout::fused_qkv, InputLayout::permuted})
    expected.push_back("layout " + std::string(name_of(l)));
  for (auto l : {InputLayout::contiguous, InputLayout::padded_token_stride, InputLayout::padded_head_stride,
                 InputLayout::permuted})
    expected.push_back("o " + std::string(name_of(l)));
  for (auto g : {GateMix::realistic, GateMix::saturating, GateMix::zeros, GateMix::strong, GateMix::mixture})
    expected.push_back("gates " + std::string(name_of(g)));
  for (const auto& tag : expected) EXPECT_GT(counts[tag], 0) << tag << " never drawn";
  std::ostringstream table;
  for (const auto& [tag, n] : counts) table << "  " << tag << ": " << n << "\n";
  RecordProperty("distribution", table.str());
}


// Verify calls: both forms, num_spec edges, fixed and ragged lengths, accepted-count edges in both
// dtypes, -1 entries, strided tables, row maps, larger scratch buffers; every case valid, and every pool
// slot no live request starts from full of poison while every initial slot holds finite data.
TEST(GenValidCase, VerifyDrawsEveryEdgeAndPoisonsEveryUnreadSlot) {
  const auto kernel = reference();
  const auto result = run_property(21, 600, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    const Problem p = build_case(c);
    if (p.mode != Mode::verify) return;
    RC_ASSERT(validate(p, profile_strict()).empty());
    const bool table = p.num_accepted.has_value();
    RC_TAG(table ? "table" : "scratch");
    RC_TAG("L " + std::to_string(p.L));
    RC_TAG(p.cu_seqlens ? "varlen" : "batched");
    bool ragged = false, padding_request = false, padding_entry = false;
    std::vector<char> initial(static_cast<std::size_t>(p.state_pool->shape()[0]), 0);
    for (i64 n = 0; n < p.N; ++n) {
      ragged |= p.length(n) != p.L;
      const i64 slot = p.initial_slot(n);
      padding_request |= slot == -1;
      if (slot >= 0) initial[static_cast<std::size_t>(slot)] = 1;
      for (i64 t = 0; t < p.length(n); ++t) padding_entry |= slot >= 0 && p.token_slot(n, t) == -1;
      if (!table) continue;
      const i64 a = p.num_accepted->integer_at(n);
      RC_TAG(a == 1 ? "a = 1" : a == p.L ? "a = L" : "1 < a < L");
    }
    if (ragged) RC_TAG("ragged");
    if (padding_request) RC_TAG("padding request");
    if (padding_entry) RC_TAG("-1 entry");
    if (table) {
      RC_TAG("accepted " + std::string(name_of(p.num_accepted->dtype())));
      if (!p.state_indices->view.is_contiguous()) RC_TAG("strided table");
    } else {
      bool identity = true;
      for (i64 n = 0; n < p.N; ++n) identity &= p.scratch_indices->integer_at(n) == n;
      RC_TAG(identity ? "identity row map" : "other row map");
      if (p.scratch_states->shape()[0] > p.N) RC_TAG("more scratch rows");
      if (p.scratch_states->shape()[1] > p.L) RC_TAG("more scratch steps");
    }
    for (i64 slot = 0; slot < p.state_pool->shape()[0]; ++slot) {
      const double x = p.state_pool->at({slot, 0, 0, 0});
      if (initial[static_cast<std::size_t>(slot)])
        RC_ASSERT(std::isfinite(x));
      else
        RC_ASSERT(std::isnan(x) || std::abs(x) >= 1e30);
    }
  });
  ASSERT_TRUE(result.is<rc::detail::SuccessResult>()) << message_of(result);
  auto counts = tag_counts(result);
  for (const char* tag : {"table", "scratch", "L 1", "L 2", "L 8", "varlen", "batched", "ragged", "a = 1", "a = L",
                          "1 < a < L", "padding request", "-1 entry", "accepted i32", "accepted i64", "strided table",
                          "identity row map", "other row map", "more scratch rows", "more scratch steps"})
    EXPECT_GT(counts[tag], 0) << tag << " never drawn";
}

TEST(GenValidCase, TheReferenceRunsEveryCaseAndOverwritesThePoisonedOutput) {
  const auto kernel = reference();
  const auto result = run_property(12, 150, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    Problem p = build_case(c);
    RC_ASSERT(kernel->run(p).status == RunOutcome::Status::ok);
    for_each_index(p.o.shape(), [&](std::span<const i64> index) {
      const double x = p.o.at(index);
      RC_ASSERT(!std::isnan(x) && x != round_to(p.o.dtype(), 1e30));
    });
  });
  EXPECT_HOLDS(result);
}

// ---- poison ----

bool is_poison(double x, Poison poison, DType dtype) {
  return poison == Poison::nan ? std::isnan(x) : x == round_to(dtype, value_of(Poison::huge));
}

TEST(BuildCase, AGapOfAStridedQueryHoldsPoison) {
  for (Poison poison : {Poison::nan, Poison::huge}) {
    CaseSpec c;
    c.problem.lengths = {3, 2};
    c.problem.H = 2, c.problem.HV = 2, c.problem.K = 16, c.problem.V = 16;
    c.layout = InputLayout::padded_token_stride;
    c.pad = 4;
    c.poison = poison;
    const Problem p = build_case(c);
    const View& q = p.q.view;
    ASSERT_EQ(q.stride(1), 2 * 16 + 4);
    const std::byte* data = p.q.buffer->data();
    EXPECT_TRUE(is_poison(load_element(data, q.dtype, 0), poison, q.dtype));                   // before the first row
    EXPECT_TRUE(is_poison(load_element(data, q.dtype, q.offset + 2 * 16), poison, q.dtype));    // after row 0
    EXPECT_FALSE(is_poison(load_element(data, q.dtype, q.offset + q.stride(1)), poison, q.dtype));  // row 1 itself
  }
}

// Every element of a floating-point buffer that no input view covers holds poison: gaps of strided
// activations, pool gaps between slots and before its base, and whole output tensors.
TEST(BuildCase, EveryGapAndEveryOutputHoldsPoison) {
  const auto kernel = reference();
  const auto result = run_property(13, 200, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    const Problem p = build_case(c);
    std::map<const GuardedBuffer*, std::vector<bool>> covered;
    std::map<const GuardedBuffer*, DType> dtypes;
    auto note = [&](const Tensor& t, bool input) {
      if (!is_float(t.dtype())) return;
      auto& mask = covered[t.buffer.get()];
      mask.resize(t.buffer->size() / size_of(t.dtype()), false);
      dtypes[t.buffer.get()] = t.dtype();
      if (input) for_each_index(t.shape(), [&](std::span<const i64> index) { mask[t.view.element_at(index)] = true; });
    };
    for (const Tensor* t : p.inputs()) note(*t, true);
    for (const Tensor* t : p.outputs()) note(*t, p.state_pool && t == &*p.state_pool);
    i64 gaps = 0;
    for (const auto& [buffer, mask] : covered)
      for (std::size_t e = 0; e < mask.size(); ++e) {
        if (mask[e]) continue;
        ++gaps;
        RC_ASSERT(is_poison(load_element(buffer->data(), dtypes[buffer], static_cast<i64>(e)), c.poison, dtypes[buffer]));
      }
    RC_CLASSIFY(gaps > 0, "gaps checked");
  });
  EXPECT_HOLDS(result);
  EXPECT_GT(tag_counts(result)["gaps checked"], 150);
}

// ---- data: padding rows, gate mixes, normalized q and k ----

// Padding rows (index -1; a verify request whose initial slot is -1) carry upstream's pattern:
// k = v = beta = 0, pre-activated gate -1000.
TEST(BuildCase, PaddingRowsCarryTheUpstreamPattern) {
  const auto kernel = reference();
  const auto result = run_property(18, 200, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    const Problem p = build_case(c);
    if (!c.padding_pattern || !p.state_indices) return;
    for (i64 n = 0; n < p.N; ++n) {
      if ((p.mode == Mode::verify ? p.initial_slot(n) : p.state_indices->integer_at(n)) != -1) continue;
      RC_TAG("padding row");
      for (i64 t = p.first(n); t < p.first(n) + p.length(n); ++t) {
        const i64 b = p.row(n);
        for (i64 h = 0; h < p.HV; ++h) {
          RC_ASSERT(p.beta.at({b, t, h}) == 0.0);
          RC_ASSERT(p.v.at({b, t, h, 0}) == 0.0 && p.v.at({b, t, h, p.V - 1}) == 0.0);
          if (!p.options.gate_in_kernel) RC_ASSERT(p.g.at({b, t, h, p.K - 1}) == -1000.0);
        }
        RC_ASSERT(p.k.at({b, t, 0, 0}) == 0.0 && p.k.at({b, t, p.H - 1, p.K - 1}) == 0.0);
      }
    }
  });
  EXPECT_HOLDS(result);
  EXPECT_GT(tag_counts(result)["padding row"], 0);
}

TEST(BuildCase, GateMixesShapeTheGates) {
  const auto kernel = reference();
  const auto result = run_property(19, 200, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    const Problem p = build_case(c);
    if (p.T == 0 || (p.state_indices && c.padding_pattern)) return;  // padding rows rewrite g
    // so do the data mixes of keys and gates (data_mix_test)
    if (c.data != DataMix::random && c.data != DataMix::large_state && c.data != DataMix::tiny_state) return;
    std::multiset<double> gs;
    for_each_index(p.g.shape(), [&](std::span<const i64> index) { gs.insert(p.g.at(index)); });
    const bool raw = p.options.gate_in_kernel;
    RC_TAG(std::string(name_of(c.gates)));
    switch (c.gates) {
      case GateMix::zeros: RC_ASSERT(gs.count(0.0) == gs.size()); break;
      case GateMix::saturating:
        if (raw)
          RC_ASSERT(std::all_of(gs.begin(), gs.end(), [](double g) { return std::abs(g) >= 30 && std::abs(g) <= 31; }));
        else
          RC_ASSERT(gs.count(-5.0) == gs.size());
        break;
      case GateMix::realistic:
        if (!raw) RC_ASSERT(*gs.begin() >= -1.0 && *gs.rbegin() < 0.0);
        break;
      case GateMix::strong:
        if (gs.size() >= 64) RC_ASSERT(gs.count(1000.0) + gs.count(-1000.0) > 0);
        break;
      case GateMix::mixture: break;
    }
  });
  EXPECT_HOLDS(result);
  auto counts = tag_counts(result);
  for (auto g : {GateMix::realistic, GateMix::saturating, GateMix::zeros, GateMix::strong})
    EXPECT_GT(counts[std::string(name_of(g))], 0) << name_of(g);
}

// Without the in-kernel l2norm, q and k arrive normalized, as upstream callers pass them.
TEST(BuildCase, QueriesAndKeysAreUnitRowsWithoutInKernelL2norm) {
  const auto kernel = reference();
  const auto result = run_property(20, 150, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    const Problem p = build_case(c);
    if (p.options.l2norm_qk || p.T == 0) return;
    RC_TAG("checked");
    for (const Tensor* t : {&p.q, &p.k}) {
      double sum = 0;
      for (i64 ch = 0; ch < p.K; ++ch) sum += t->at({0, 0, 0, ch}) * t->at({0, 0, 0, ch});
      RC_ASSERT(sum == 0.0 || std::abs(std::sqrt(sum) - 1.0) < 0.02);  // 0: a padding row's k
    }
  });
  EXPECT_HOLDS(result);
  EXPECT_GT(tag_counts(result)["checked"], 0);
}

// ---- determinism ----

TEST(GenValidCase, TheSameSeedGivesTheSameCases) {
  const auto kernel = reference();
  const auto gen = gen_valid_case(*kernel);
  std::set<std::string> distinct;
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const int size = static_cast<int>(seed * 7 % 100);
    const std::string first = gen(rc::Random(seed), size).value().describe();
    EXPECT_EQ(gen(rc::Random(seed), size).value().describe(), first) << "seed " << seed;
    distinct.insert(first);
  }
  EXPECT_GT(distinct.size(), 25u);  // and the seed matters: a constant generator would pass the line above
}

TEST(BuildCase, IsBitIdenticalAcrossCalls) {
  const auto kernel = reference();
  const auto result = run_property(14, 150, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    const Problem a = build_case(c), b = build_case(c);
    RC_ASSERT(a.describe() == b.describe());
    const auto ta = a.inputs(), tb = b.inputs();
    const auto oa = a.outputs(), ob = b.outputs();
    std::vector<const Tensor*> xs(ta.begin(), ta.end()), ys(tb.begin(), tb.end());
    xs.insert(xs.end(), oa.begin(), oa.end()), ys.insert(ys.end(), ob.begin(), ob.end());
    RC_ASSERT(xs.size() == ys.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      RC_ASSERT(xs[i]->view.describe() == ys[i]->view.describe());
      const std::size_t bytes = xs[i]->buffer->size() + 2 * GuardedBuffer::kGuardBytes;
      RC_ASSERT(xs[i]->buffer->size() == ys[i]->buffer->size());
      RC_ASSERT(std::memcmp(xs[i]->buffer->band_before(), ys[i]->buffer->band_before(), bytes) == 0);
      for (std::size_t j = 0; j < i; ++j)  // buffer sharing (fused q, k, v) is the same too
        RC_ASSERT((xs[i]->buffer == xs[j]->buffer) == (ys[i]->buffer == ys[j]->buffer));
    }
  });
  EXPECT_HOLDS(result);
}

TEST(CaseSpec, DescribesItselfOnOneLine) {
  const auto kernel = reference();
  const auto result = run_property(15, 100, [&] {
    const CaseSpec c = *gen_valid_case(*kernel);
    std::ostringstream s;
    s << c;
    RC_ASSERT(s.str() == c.describe());
    RC_ASSERT(s.str().find('\n') == std::string::npos);
    RC_ASSERT(s.str().find("lengths=[") != std::string::npos);
  });
  EXPECT_HOLDS(result);
}

// ---- lengths and shrinking ----

TEST(GenLengths, StaysWithinTheLimits) {
  GenLimits small;
  small.max_sequences = 5, small.max_tokens = 50;
  for (const GenLimits& limits : {GenLimits{}, small}) {
    const auto result = run_property(16, 300, [&] {
      const auto lengths = *gen_lengths(limits);
      RC_ASSERT(!lengths.empty() && static_cast<int>(lengths.size()) <= limits.max_sequences);
      RC_ASSERT(std::all_of(lengths.begin(), lengths.end(), [](i64 l) { return l >= 0; }));
      RC_ASSERT(std::accumulate(lengths.begin(), lengths.end(), i64{0}) <= limits.max_tokens);
    });
    EXPECT_HOLDS(result);
  }
  const auto gen = gen_lengths(GenLimits{});
  for (std::uint64_t seed = 0; seed < 50; ++seed) {  // size 0: one short sequence
    const auto lengths = gen(rc::Random(seed), 0).value();
    EXPECT_EQ(lengths.size(), 1u);
    EXPECT_LE(lengths.front(), 8);
  }
}

// A property failing iff some sequence is empty and some is at least 65 long shrinks to two
// sequences, [0, 65] or [65, 0]: removal of sequences and per-length shrinking reach the edges.
TEST(GenLengths, AFailureShrinksToTwoSequences) {
  for (std::uint64_t seed : {21, 22, 23, 24, 25}) {
    std::vector<i64> minimal;
    const auto result = run_property(seed, 1000, [&] {
      const auto lengths = *gen_lengths(GenLimits{});
      const bool empty = std::find(lengths.begin(), lengths.end(), 0) != lengths.end();
      const bool long_one = std::any_of(lengths.begin(), lengths.end(), [](i64 l) { return l >= 65; });
      if (empty && long_one) minimal = lengths;  // the last failure rapidcheck sees is its counterexample
      RC_ASSERT(!(empty && long_one));
    });
    ASSERT_TRUE(result.is<rc::detail::FailureResult>()) << "seed " << seed << ": " << message_of(result);
    const auto& failure = result.get<rc::detail::FailureResult>();
    ASSERT_EQ(failure.counterExample.size(), 1u);
    std::ostringstream shown;
    rc::show(minimal, shown);
    EXPECT_EQ(failure.counterExample.front().second, shown.str());
    ASSERT_EQ(minimal.size(), 2u) << "seed " << seed << ": " << shown.str();
    EXPECT_EQ(std::min(minimal[0], minimal[1]), 0) << shown.str();
    EXPECT_EQ(std::max(minimal[0], minimal[1]), 65) << shown.str();
  }
}

// ---- invalid cases ----

std::set<Rule> distinct_rules(const std::vector<Violation>& vs) {
  std::set<Rule> rules;
  for (const auto& v : vs) rules.insert(v.rule);
  return rules;
}

// Every rule has a row in the rule-breaker table (properties/src/rule_breaks.cpp): a rule without one
// throws here, naming it. Under strict every row breaks its rule, except those listed unbreakable.
TEST(GenInvalidCase, CoversTheStrictRules) {
  std::vector<Rule> rules;
  ASSERT_NO_THROW(rules = breakable_rules(profile_strict()));
  const std::set<Rule> have(rules.begin(), rules.end());
  // verify_fixed_tokens and scratch_indices_identity are rules of the fixed-form and FlashInfer profiles only.
  const std::set<Rule> unbreakable{Rule::index_overflow_32bit, Rule::head_dims_supported, Rule::state_layout,
                                   Rule::state_source_supported, Rule::verify_fixed_tokens,
                                   Rule::scratch_indices_identity};
  for (Rule r : all_rules()) EXPECT_EQ(have.count(r), 1 - unbreakable.count(r)) << name_of(r);
  EXPECT_EQ(breakable_rules(*reference()), rules);  // the reference takes every base
}

// Under strict, each break trips its rule and no other.
TEST(GenInvalidCase, StrictBreaksTripExactlyTheirRule) {
  const auto kernel = reference();
  for (Rule rule : breakable_rules(profile_strict())) {
    const auto result = run_property(200 + static_cast<std::uint64_t>(rule), 24, [&] {
      const InvalidCase c = *gen_invalid_case(*kernel, rule);
      const auto found = validate(c.build(), profile_strict());
      RC_LOG() << rules_of(found);
      RC_ASSERT(distinct_rules(found) == std::set<Rule>{rule});
    });
    EXPECT_HOLDS(result) << name_of(rule);
  }
}

// Under restricted profiles a break trips its rule; a second rule only where the profile's
// parameters force it (see breakable_rules).
// A profile of the fixed-form, identity-row-map verify kernels (every rule): each verify rule breaks
// alone, and the rules those two make unbreakable alone (verify_tokens, scratch_indices_range and
// _distinct) are not offered.
TEST(GenInvalidCase, FixedFormIdentityVerifyBreaksItsRulesAlone) {
  Profile profile = profile_strict();
  profile.name = "fixed-form identity verify";
  profile.rules.push_back(Rule::verify_fixed_tokens);
  profile.rules.push_back(Rule::scratch_indices_identity);
  Capabilities caps;
  caps.modes.push_back(Mode::verify);
  caps.state_sources.insert(caps.state_sources.end(), {StateSource::table, StateSource::scratch});
  const FakeKernel kernel("fake-fixed-verify", caps, profile);
  // Its valid verify cases have exactly L tokens per request and identity row maps.
  const auto valid = run_property(399, 150, [&] {
    const CaseSpec spec = *gen_valid_case(kernel);
    const Problem p = build_case(spec);
    RC_ASSERT(validate(p, kernel.profile()).empty());
    if (p.mode == Mode::verify) RC_TAG("verify");
  });
  EXPECT_HOLDS(valid);
  EXPECT_GT(tag_counts(valid)["verify"], 0);
  const auto rules = breakable_rules(kernel);
  const std::set<Rule> have(rules.begin(), rules.end());
  for (Rule r : {Rule::verify_tokens, Rule::scratch_indices_range, Rule::scratch_indices_distinct})
    EXPECT_EQ(have.count(r), 0u) << name_of(r);
  const std::set<Rule> verify_rules{Rule::verify_fixed_tokens, Rule::accepted_dtype, Rule::accepted_shape,
                                    Rule::accepted_range, Rule::scratch_states_shape, Rule::scratch_steps,
                                    Rule::scratch_indices_dtype, Rule::scratch_indices_shape,
                                    Rule::scratch_indices_identity};
  for (Rule rule : verify_rules) {
    ASSERT_EQ(have.count(rule), 1u) << name_of(rule);
    const auto result = run_property(400 + static_cast<std::uint64_t>(rule), 16, [&] {
      const InvalidCase c = *gen_invalid_case(kernel, rule);
      RC_ASSERT(distinct_rules(validate(c.build(), kernel.profile())) == std::set<Rule>{rule});
    });
    EXPECT_HOLDS(result) << name_of(rule);
  }
}

TEST(GenInvalidCase, RestrictedProfilesBreakTheirRules) {
  for (const FakeKernel& kernel : {sglang_decode_kernel(), fla_chunk_kernel()}) {
    const auto rules = breakable_rules(kernel);
    EXPECT_GE(rules.size(), 10u) << kernel.name();
    for (Rule rule : rules) {
      const auto result = run_property(300 + static_cast<std::uint64_t>(rule), 16, [&] {
        const InvalidCase c = *gen_invalid_case(kernel, rule);
        const auto found = distinct_rules(validate(c.build(), kernel.profile()));
        RC_ASSERT(found.count(rule) == 1u);
        const bool forced = rule == Rule::key_head_dim_max;  // no K above the maximum is in a head-dim set
        RC_ASSERT(found.size() == 1u || (forced && found == std::set<Rule>{rule, Rule::head_dims_supported}));
      });
      EXPECT_HOLDS(result) << kernel.name() << " " << name_of(rule);
    }
  }
}

TEST(GenInvalidCase, DrawsEveryBreakableRule) {
  const auto kernel = reference();
  const auto result = run_property(17, 600, [&] {
    const InvalidCase c = *gen_invalid_case(*kernel);
    RC_TAG(std::string(name_of(c.rule)));
  });
  ASSERT_TRUE(result.is<rc::detail::SuccessResult>()) << message_of(result);
  auto counts = tag_counts(result);
  for (Rule r : breakable_rules(*kernel)) EXPECT_GT(counts[std::string(name_of(r))], 0) << name_of(r);
}

TEST(GenInvalidCase, RefusesARuleItCannotBreakAlone) {
  const auto kernel = reference();
  EXPECT_THROW(gen_invalid_case(*kernel, Rule::index_overflow_32bit), std::invalid_argument);
  EXPECT_THROW(gen_invalid_case(sglang_decode_kernel(), Rule::chunk_states_shape), std::invalid_argument);
}

}  // namespace
}  // namespace kda::props
