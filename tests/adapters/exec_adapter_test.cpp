// The exec adapter protocol: the numpy adapter computes through it, and every way an adapter can
// misbehave (adapters/tests/misbehaving_adapter.py) is a clear failure after which the next case runs.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "../../adapters/src/exec_handshake.hpp"  // parse_handshake: the handshake's keys
#include "kda/adapters/exec_kernel.hpp"
#include "kda/properties/case_spec.hpp"
#include "kda/problem_factory.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference.hpp"

namespace kda::test {
namespace {

using adapters::AdapterError;
using adapters::start_exec_adapter;
using Status = RunOutcome::Status;

const std::string kPython = KDA_ADAPTER_PYTHON;
const std::string kAdapters = KDA_ADAPTERS_DIR;

std::string misbehaving(const std::string& mode) {
  return kPython + " " + kAdapters + "/tests/misbehaving_adapter.py " + mode;
}

// A bf16 prefill on a padded pool (slot 0 unused, a -1 row) with fused q/k/v, GVA and the gate in kernel.
Problem strided_problem() {
  props::CaseSpec spec;
  ProblemSpec& p = spec.problem;
  p.lengths = {7, 0, 20};
  p.H = 1, p.HV = 2, p.K = 16, p.V = 32;
  p.input_dtype = p.output_dtype = DType::bf16;
  p.state = StateSource::pool;
  p.pool_slot_stride = 2 * 16 * 32 + 32;
  p.indices = {3, -1, 1};
  p.options.state_layout = StateLayout::kv;
  p.options.gate_in_kernel = p.options.l2norm_qk = true;
  p.options.lower_bound = -5.0;
  p.with_A_log = p.with_dt_bias = true;
  p.token_states = true;
  spec.layout = props::InputLayout::fused_qkv;
  spec.data_seed = 5;
  return props::build_case(spec);
}

// The outputs agree with the fp64 reference to within bf16 rounding, and nothing else changed.
void expect_correct(Kernel& kernel) {
  Problem p = strided_problem();
  const props::Snapshot before(p);
  const RunOutcome outcome = kernel.run(p);
  ASSERT_EQ(outcome.status, Status::ok) << outcome.message;
  EXPECT_TRUE(before.changes_outside_writable(p).empty());
  const ReferenceOutputs want = run_reference<double>(strided_problem(), Algorithm::recurrent, 1);
  const ReferenceOutputs got = props::read_outputs(p);
  for (std::size_t i = 0; i < want.o.size(); ++i) ASSERT_NEAR(got.o[i], want.o[i], 1e-2 * (1 + std::abs(want.o[i])));
  const std::size_t per_sequence = want.final_state.size() / want.written.size();
  for (std::size_t i = 0; i < want.final_state.size(); ++i) {
    if (!want.written[i / per_sequence]) continue;  // a padding row
    ASSERT_NEAR(got.final_state[i], want.final_state[i], 1e-5 * (1 + std::abs(want.final_state[i])));
  }
}

// The first request fails with a message containing `expected`; the adapter is restarted and the
// second request is answered correctly.
void expect_failure_then_recovery(const std::string& mode, const std::string& expected,
                                  std::chrono::milliseconds timeout = std::chrono::milliseconds(30'000)) {
  auto kernel = start_exec_adapter(misbehaving(mode), {timeout, std::chrono::milliseconds(60'000)});
  Problem p = strided_problem();
  const RunOutcome first = kernel->run(p);
  EXPECT_EQ(first.status, Status::failed);
  EXPECT_NE(first.message.find(expected), std::string::npos) << first.message;
  expect_correct(*kernel);
}

std::string start_error(const std::string& mode,
                        std::chrono::milliseconds startup = std::chrono::milliseconds(60'000)) {
  try {
    start_exec_adapter(misbehaving(mode), {std::chrono::milliseconds(60'000), startup});
  } catch (const AdapterError& e) {
    return e.what();
  }
  return "(started)";
}

TEST(ExecAdapter, NumpyAdapterComputesThroughTheProtocol) {
  auto kernel = start_exec_adapter(kPython + " " + kAdapters + "/numpy_adapter.py");
  EXPECT_EQ(kernel->name(), "numpy-recurrent");
  EXPECT_EQ(kernel->profile().name, "strict");
  EXPECT_EQ(kernel->capabilities().state_dtypes, (std::vector<DType>{DType::bf16, DType::f32, DType::f64}));
  expect_correct(*kernel);
  expect_correct(*kernel);  // the same process, a second request
}

// A verify call (L = 3) in either form: the index table [[4,-1,2],[-1,-1,-1],[0,1,5]] with int64
// counts (3, 2, 1: initial slots 2, -1 (a padding row) and 0), or the scratch form with the row map
// (2, 0, 1), 4 scratch steps, a padding row and [K,V] states.
Problem verify_problem(StateSource form) {
  props::CaseSpec spec;
  ProblemSpec& p = spec.problem;
  p.mode = Mode::verify;
  p.lengths = {3, 3, 2};
  p.H = 1, p.HV = 2, p.K = 16, p.V = 8;
  p.state = form;
  p.L = 3;
  if (form == StateSource::table) {
    p.indices = {4, -1, 2, -1, -1, -1, 0, 1, 5};
    p.accepted = {3, 2, 1};
    p.accepted_dtype = DType::i64;
    p.pool_slots = 7;
  } else {
    p.indices = {1, -1, 0};
    p.scratch_indices = {2, 0, 1};
    p.scratch_rows = 3, p.scratch_steps = 4;
    p.options.state_layout = StateLayout::kv;
  }
  spec.data_seed = 9;
  return props::build_case(spec);
}

bool same_payload(const Tensor& a, const Tensor& b, std::int64_t from, std::int64_t to) {
  return std::memcmp(a.buffer->data() + from, b.buffer->data() + from, static_cast<std::size_t>(to - from)) == 0;
}

TEST(ExecAdapter, NumpyAdapterDeclaresBothVerifyFormsButNotWithoutAPool) {
  auto kernel = start_exec_adapter(kPython + " " + kAdapters + "/numpy_adapter.py");
  const Capabilities& c = kernel->capabilities();
  EXPECT_EQ(c.modes, (std::vector<Mode>{Mode::prefill, Mode::decode, Mode::verify}));
  EXPECT_EQ(c.state_sources, (std::vector<StateSource>{StateSource::none, StateSource::dense, StateSource::pool,
                                                       StateSource::table, StateSource::scratch}));
  auto no_pool = start_exec_adapter(kPython + " " + kAdapters + "/numpy_adapter.py --no-pool");
  EXPECT_EQ(no_pool->capabilities().modes, (std::vector<Mode>{Mode::prefill, Mode::decode}));
  EXPECT_EQ(no_pool->capabilities().state_sources, (std::vector<StateSource>{StateSource::none, StateSource::dense}));
  for (StateSource form : {StateSource::table, StateSource::scratch}) {
    EXPECT_EQ(c.unsupported(verify_problem(form)), "") << name_of(form);
    EXPECT_NE(no_pool->capabilities().unsupported(verify_problem(form)), "") << name_of(form);
  }
}

// The output and the state after every token agree with the fp64 reference, found where the form
// stores them; no other pool slot changes (the scratch form leaves the whole pool as it was).
TEST(ExecAdapter, NumpyAdapterComputesVerifyCallsInBothForms) {
  auto kernel = start_exec_adapter(kPython + " " + kAdapters + "/numpy_adapter.py");
  for (StateSource form : {StateSource::table, StateSource::scratch}) {
    SCOPED_TRACE(name_of(form));
    Problem p = verify_problem(form);
    const Problem before = deep_copy(p);
    const RunOutcome outcome = kernel->run(p);
    ASSERT_EQ(outcome.status, Status::ok) << outcome.message;
    const ReferenceOutputs want = run_reference<double>(before, Algorithm::recurrent, 1);
    ASSERT_EQ(want.written, (std::vector<char>{1, 0, 1}));
    const ReferenceOutputs got = props::read_outputs(p);
    for (std::size_t i = 0; i < want.o.size(); ++i) ASSERT_NEAR(got.o[i], want.o[i], 1e-5 * (1 + std::abs(want.o[i])));
    const Shape head = p.state_head_shape();
    std::int64_t stored = 0;
    for (std::int64_t n = 0; n < p.N; ++n) {
      if (!want.written[static_cast<std::size_t>(n)]) continue;
      for (std::int64_t t = 0; t < p.length(n); ++t) {
        const std::int64_t slot = p.token_slot(n, t);
        if (slot < 0) continue;
        ++stored;
        for (std::int64_t hv = 0; hv < p.HV; ++hv)
          for (std::int64_t a = 0; a < head[0]; ++a)
            for (std::int64_t b = 0; b < head[1]; ++b) {
              const double x = form == StateSource::table ? p.state_pool->at({slot, hv, a, b})
                                                          : p.scratch_states->at({slot, t, hv, a, b});
              const double w = want.token_states[static_cast<std::size_t>(
                  (((p.row(n) * p.T + p.first(n) + t) * p.HV + hv) * head[0] + a) * head[1] + b)];
              ASSERT_NEAR(x, w, 1e-5 * (1 + std::abs(w))) << "request " << n << " token " << t;
            }
      }
    }
    EXPECT_EQ(stored, form == StateSource::table ? 4 : 5) << "a -1 table entry stores nothing";
    const Tensor &pool = *p.state_pool, &pool_before = *before.state_pool;
    const std::int64_t slot_bytes = pool.view.strides[0] * static_cast<std::int64_t>(size_of(pool.dtype()));
    if (form == StateSource::scratch) {
      EXPECT_TRUE(same_payload(pool, pool_before, 0, static_cast<std::int64_t>(pool.buffer->size())))
          << "the scratch form only reads the pool";
      continue;
    }
    for (std::int64_t untouched : {3, 6})  // slots no table entry names
      EXPECT_TRUE(same_payload(pool, pool_before, untouched * slot_bytes, (untouched + 1) * slot_bytes)) << untouched;
  }
}

TEST(ExecAdapter, ACrashIsReportedWithItsSignal) {
  expect_failure_then_recovery("crash", "signal 11");  // the signal itself, or as /bin/sh reports it
}

TEST(ExecAdapter, AnExitIsReportedWithItsStatus) {
  expect_failure_then_recovery("exit", "exited with status 3 without answering");
}

TEST(ExecAdapter, AHangIsKilledAfterTheTimeout) {
  expect_failure_then_recovery("hang", "gave no answer within 1 s and has been killed", std::chrono::milliseconds(1000));
}

TEST(ExecAdapter, AGarbageAnswerIsReported) {
  expect_failure_then_recovery("garbage", "answered 'banana split' (expected 'ok', 'rejected <rule> <message>'");
}

TEST(ExecAdapter, AMissingResultsFileIsReported) {
  expect_failure_then_recovery("no-results", "answered ok, but the results file");
}

TEST(ExecAdapter, APartialBufferIsReported) {
  expect_failure_then_recovery("bad-results", "'o' must be the whole");
}

TEST(ExecAdapter, ARejectionWithAnUnknownRuleIsReported) {
  expect_failure_then_recovery("unknown-rule", "rejected the case with the unknown rule 'not_a_rule'");
}

TEST(ExecAdapter, AnErrorAnswerIsAFailureWithItsMessage) {
  expect_failure_then_recovery("error", "reported an error: CUDA error: out of memory");
}

TEST(ExecAdapter, ARejectionNamesItsRule) {
  auto kernel = start_exec_adapter(misbehaving("reject"));
  Problem p = strided_problem();
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, Status::rejected);
  ASSERT_EQ(outcome.violations.size(), 1u);
  EXPECT_EQ(outcome.violations[0].rule, Rule::state_pool_alignment);
  EXPECT_EQ(outcome.violations[0].message, "slot stride 3 elements must be a multiple of 16");
}

TEST(ExecAdapter, WholeBuffersComeBackSoAWriteOutsideTheViewsIsSeen) {
  auto kernel = start_exec_adapter(misbehaving("scribble"));
  Problem p = strided_problem();
  const props::Snapshot before(p);
  ASSERT_EQ(kernel->run(p).status, Status::ok);
  const auto changes = before.changes_outside_writable(p);
  ASSERT_FALSE(changes.empty());
  EXPECT_NE(changes.front().find("state_pool"), std::string::npos) << changes.front();
}

TEST(ExecAdapter, AnInvalidProblemIsRejectedWithoutAsking) {
  auto kernel = start_exec_adapter(misbehaving("crash"));  // would crash on its first request
  Problem p = strided_problem();
  p.options.chunk_size = 48;
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, Status::rejected);
  EXPECT_EQ(outcome.violations.front().rule, Rule::chunk_size);
}

TEST(ExecAdapter, TheHandshakeDeclaresTheArithmetic) {
  const std::string declared = kPython + " " + kAdapters + "/tests/declared_arithmetic.py --compute bf16 --declare ";
  EXPECT_EQ(start_exec_adapter(declared + "bf16-operands")->capabilities().arithmetic, Arithmetic::bf16_operands);
  EXPECT_EQ(start_exec_adapter(declared + "fp32")->capabilities().arithmetic, Arithmetic::fp32);
  EXPECT_EQ(start_exec_adapter(kPython + " " + kAdapters + "/numpy_adapter.py")->capabilities().arithmetic,
            Arithmetic::fp32);  // not declared
}

TEST(ExecAdapter, BadHandshakesAreRefusedClearly) {
  EXPECT_NE(start_error("bad-handshake").find("sent a bad handshake: expected 'kda-adapter <version>"), std::string::npos)
      << start_error("bad-handshake");
  EXPECT_NE(start_error("old-protocol").find("speaks protocol version 0; this kda-oracle speaks version 1"),
            std::string::npos);
  EXPECT_NE(start_error("silent", std::chrono::milliseconds(1000)).find("sent no handshake within 1 s"),
            std::string::npos);
  EXPECT_NE(start_error("die").find("exited with status 4 before its handshake"), std::string::npos);
}

TEST(ExecAdapter, HandshakeDeclaresNegEigvalAndTheOptionsAFusedPathAlwaysApplies) {
  const auto d = adapters::parse_handshake(
      "kda-adapter 1 fused vllm_packed_decode neg_eigval=0 always=gate_in_kernel,l2norm_in_kernel,beta_from_logits");
  EXPECT_FALSE(d.capabilities.neg_eigval);
  EXPECT_TRUE(d.capabilities.always_gate_in_kernel && d.capabilities.always_l2norm &&
              d.capabilities.always_beta_from_logits);
  const auto plain = adapters::parse_handshake("kda-adapter 1 plain strict");
  EXPECT_TRUE(plain.capabilities.neg_eigval);
  EXPECT_FALSE(plain.capabilities.always_gate_in_kernel || plain.capabilities.always_l2norm ||
               plain.capabilities.always_beta_from_logits);
  try {
    adapters::parse_handshake("kda-adapter 1 x strict always=scale");
    ADD_FAILURE() << "an unknown option was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'always' takes gate_in_kernel, l2norm_in_kernel and beta_from_logits, got 'scale'"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kda::test
