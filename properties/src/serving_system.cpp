#include "serving_system.hpp"

#include <rapidcheck.h>

#include <atomic>
#include <limits>
#include <random>

#include "failure_text.hpp"
#include "generators_internal.hpp"

namespace kda::props {

namespace {

using i64 = std::int64_t;

Shape pool_shape(const ProblemSpec& s, i64 slots) {
  const Shape head = s.options.state_layout == StateLayout::vk ? Shape{s.V, s.K} : Shape{s.K, s.V};
  return {slots, s.HV, head[0], head[1]};
}

Tensor make_pool(std::string name, DType dtype, const Shape& shape, i64 slot_stride, i64 offset) {
  View view = contiguous_view(dtype, shape, offset);
  if (slot_stride) view.strides[0] = slot_stride;
  return Tensor::with_view(std::move(name), view);
}

void fill_nan(Tensor& t) {
  const auto element = static_cast<i64>(size_of(t.dtype()));
  for (i64 at = 0; at < static_cast<i64>(t.buffer->size()) / element; ++at)
    store_element(t.buffer->data(), t.dtype(), at, std::numeric_limits<double>::quiet_NaN());
}

// What a call that did not run said: its message, then each violation.
std::string outcome_text(const RunOutcome& outcome) {
  return outcome.message + detail::violations_text(outcome.violations);
}

}  // namespace

namespace {
std::atomic<std::uint64_t> last_run{0};
}  // namespace

std::uint64_t new_serving_run() { return ++last_run; }

ServingSystem::ServingSystem(CheckContext& context, ProblemSpec calls, i64 slots)
    : context_(context), calls_(std::move(calls)), run_(new_serving_run()) {
  calls_.state = StateSource::pool;
  calls_.final_state = calls_.chunk_states = calls_.token_states = false;
  calls_.pool_slots = slots;
  const Shape shape = pool_shape(calls_, slots);
  kernel_pool_ = make_pool("state_pool", calls_.state_dtype, shape, calls_.pool_slot_stride, calls_.pool_offset);
  fill_nan(kernel_pool_);
  // The model's pool meets the strictest stride contract, whatever the kernel's geometry.
  const i64 compact = calls_.HV * calls_.K * calls_.V;
  model_pool_ = make_pool("model_pool", calls_.state_dtype, shape, (compact + 15) / 16 * 16, 0);
  oracle_pool_ = Tensor::zeros("oracle_pool", DType::f64, shape);
}

void ServingSystem::admit(i64 slot, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> normal(0.0, 0.1);
  const Shape& shape = kernel_pool_.shape();
  for_each_index(Shape(shape.begin() + 1, shape.end()), [&](std::span<const i64> i) {
    const std::initializer_list<i64> at{slot, i[0], i[1], i[2]};
    kernel_pool_.set(at, seed == 0 ? 0.0 : normal(engine));
    model_pool_.set(at, kernel_pool_.at(at));
    oracle_pool_.set(at, kernel_pool_.at(at));
  });
}

void ServingSystem::call(Mode mode, const std::vector<i64>& indices, const std::vector<i64>& lengths,
                         std::uint64_t seed, const std::string& what) {
  ProblemSpec spec = calls_;
  spec.mode = mode, spec.lengths = lengths, spec.indices = indices;
  run_and_judge(spec, seed, what);
}

ServingSystem::Judged ServingSystem::run_and_judge(const ProblemSpec& spec, std::uint64_t seed,
                                                   const std::string& what) {
  Problem call = make_problem(spec);
  detail::poison_buffers(call, Poison::nan);  // o stays NaN where the kernel does not write it
  fill_random(call, seed);
  detail::apply_padding_pattern(call);
  call.state_pool = kernel_pool_;
  call.persistent_metadata = run_;  // the engine's metadata buffers live for the whole loop
  Problem modelled = deep_copy(call), exact = deep_copy(call);
  modelled.state_pool = model_pool_;
  exact.state_pool = oracle_pool_;
  // The oracle's scratch buffer holds its states unrounded.
  if (exact.scratch_states) exact.scratch_states = Tensor::zeros("oracle_scratch", DType::f64, exact.scratch_states->shape());
  judge(call, modelled, exact, what);
  return {std::move(call), std::move(modelled), std::move(exact)};
}

void ServingSystem::verify(StateSource form, i64 L, const std::vector<i64>& indices, const std::vector<i64>& accepted,
                           const std::vector<i64>& lengths, const std::vector<i64>& commit, std::uint64_t seed,
                           const std::string& what) {
  ProblemSpec spec = calls_;
  spec.mode = Mode::verify, spec.state = form, spec.L = L;
  spec.lengths = lengths, spec.indices = indices, spec.accepted = accepted;
  spec.scratch_rows = spec.scratch_steps = 0;  // N rows of L steps
  spec.scratch_indices.clear();                // identity
  const Judged judged = run_and_judge(spec, seed, what);
  // The table form needs no copy: the accepted token's slot is the committed one from now on (Verify::apply).
  if (form != StateSource::scratch) return;
  // The engine's commit: the accepted token's state copied from each system's scratch into its pool.
  const Shape& shape = kernel_pool_.shape();
  for (i64 n = 0; n < judged.call.N; ++n) {
    const i64 slot = indices[static_cast<std::size_t>(n)], step = commit[static_cast<std::size_t>(n)] - 1;
    if (slot < 0 || step < 0) continue;
    for_each_index(Shape(shape.begin() + 1, shape.end()), [&](std::span<const i64> i) {
      const std::initializer_list<i64> from{n, step, i[0], i[1], i[2]}, to{slot, i[0], i[1], i[2]};
      kernel_pool_.set(to, judged.call.scratch_states->at(from));
      model_pool_.set(to, judged.modelled.scratch_states->at(from));
      oracle_pool_.set(to, judged.exact.scratch_states->at(from));
    });
  }
}

void ServingSystem::judge(Problem& call, Problem& modelled, Problem& exact, const std::string& what) {
  context_.note_case(call);
  const ReferenceOutputs oracle = run_reference<double>(exact, Algorithm::recurrent, 1);
  write_outputs(oracle, exact);  // the oracle's pool follows the exact trajectory
  const Snapshot before(call);
  const RunOutcome outcome = context_.kernel.run(call);
  if (outcome.status != RunOutcome::Status::ok)
    RC_FAIL(what + ": the kernel " + (outcome.status == RunOutcome::Status::rejected ? "rejected" : "failed on") +
            " a valid call it supports: " + outcome_text(outcome) + "\n  problem: " + call.describe());
  if (const auto changes = before.changes_outside_writable(call); !changes.empty())
    RC_FAIL(what + ": bytes changed that the call may not write (slots it does not name stay bit-identical):" +
            detail::lines(changes) + "\n  problem: " + call.describe());
  if (const RunOutcome m = context_.model.run(modelled); m.status != RunOutcome::Status::ok)
    RC_FAIL(what + ": the precision model " + context_.model.name() + " could not run the call: " + outcome_text(m) +
            "\n  problem: " + call.describe());
  const Verdict verdict = compare(call, read_outputs(call), oracle, read_outputs(modelled), context_.policy);
  if (!verdict.passed())
    RC_FAIL(what + ": the kernel's outputs or pool left the reference (precision model " + context_.model.name() +
            "):\n" + verdict.describe() +
            "\n  problem: " + call.describe());
}

}  // namespace kda::props
