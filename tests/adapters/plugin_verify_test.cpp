// Speculative verify through the C ABI: the loop plugin against the fp64 reference in both forms
// (index table with accepted counts and -1 entries; read-only pool with a scratch row map), both state
// layouts, ragged and fixed requests, a strided table. Outputs and the states stored where
// Problem::token_slot names are held to the tolerance policy with the fp32 reference as the model
// (the catalogue's rule for a third-party kernel); every other byte of the pool and the scratch buffer
// must be left as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kda/adapters/plugin_kernel.hpp"
#include "kda/metrics.hpp"
#include "kda/properties/comparison.hpp"
#include "kda/reference.hpp"

namespace kda::test {
namespace {

using adapters::load_plugin;

struct Form {
  StateSource source;
  StateLayout layout;
  bool varlen;
};

std::string name_of(const Form& f) {
  return std::string(kda::name_of(f.source)) + "_" + std::string(kda::name_of(f.layout)) +
         (f.varlen ? "_ragged" : "_fixed");
}

void PrintTo(const Form& f, std::ostream* os) { *os << name_of(f); }

// Four requests of L = 4, GVA, K != V, every in-kernel option, a padded pool at an offset.
//   table: request 0 starts from column 3 (accepted = L), 1 from column 0 (accepted 1, its first token
//     overwrites its initial slot), 2 is a padding row (initial entry -1), 3 from column 2 with a -1
//     entry at token 1 (nothing stored there); slots 1, 4, 9, 14, 15 and the padding row's 0 and 5 are
//     named by no live entry.
//   scratch: request 1 is a padding row, request 3 stores nowhere (row -1), the row map is not the
//     identity, L' = 6 > L steps.
ProblemSpec verify_spec(const Form& f) {
  ProblemSpec s;
  s.mode = Mode::verify;
  s.state = f.source;
  s.varlen = f.varlen;
  s.lengths = f.varlen ? std::vector<std::int64_t>{4, 2, 4, 3} : std::vector<std::int64_t>{4, 4, 4, 4};
  s.L = 4;
  s.H = 1, s.HV = 2, s.K = 16, s.V = 8;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.final_state = false;
  s.options.state_layout = f.layout;
  s.options.l2norm_qk = s.options.beta_from_logits = s.options.gate_in_kernel = true;
  s.with_A_log = s.with_dt_bias = true;
  s.pool_slot_stride = 2 * 16 * 8 + 16, s.pool_offset = 8;
  if (f.source == StateSource::table) {
    s.pool_slots = 16;
    s.indices = {10, 11, 12, 13, 3, 2, -1, -1, -1, 0, -1, 5, 6, -1, 7, 8};
    s.accepted = {4, 1, 1, 3};
    s.accepted_dtype = f.varlen ? DType::i64 : DType::i32;
  } else {
    s.pool_slots = 6;
    s.indices = {3, -1, 0, 5};
    s.scratch_rows = 5, s.scratch_steps = 6;
    s.scratch_indices = {2, 0, 4, -1};
  }
  return s;
}

// The index table moved into a view of its own: column-major with a padded column stride, at an
// offset, every gap holding -1 (a plugin that reads a gap takes the request for padding, and is seen).
void restride_table(Problem& p) {
  const Tensor& old = *p.state_indices;
  View view{DType::i32, old.shape(), {1, p.N + 3}, 5};
  Tensor table = Tensor::with_view("state_indices", view);
  std::memset(table.buffer->data(), 0xFF, table.buffer->size());
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t t = 0; t < p.L; ++t) table.set_integer(n, t, old.integer_at(n, t));
  p.state_indices = std::move(table);
}

Problem verify_problem(const Form& f, std::uint64_t seed) {
  Problem p = make_problem(verify_spec(f));
  fill_random(p, seed);
  if (f.source == StateSource::table && !f.varlen) restride_table(p);
  for (const auto& v : validate(p, profile_strict())) ADD_FAILURE() << name_of(v.rule) << ": " << v.message;
  return p;
}

// The problem after the reference computed in Acc (oracle: double; model: float) and stored its outputs.
template <class Acc>
Problem reference_run(const Problem& p) {
  Problem out = deep_copy(p);
  write_outputs(run_reference<Acc>(out, Algorithm::recurrent), out);
  return out;
}

// Where a verify call stores the state after token t of request n (nothing for padding rows and -1
// entries): the [HV,a,b] block's element indices in the pool or the scratch buffer.
std::vector<std::vector<std::int64_t>> stored_state_block(const Problem& p, std::int64_t n, std::int64_t t) {
  std::vector<std::vector<std::int64_t>> block;
  const std::int64_t where = p.token_slot(n, t);
  if (p.initial_slot(n) < 0 || where < 0) return block;
  const Shape head = p.state_head_shape();
  for_each_index(Shape{p.HV, head[0], head[1]}, [&](std::span<const std::int64_t> i) {
    if (p.scratch_states)
      block.push_back({where, t, i[0], i[1], i[2]});
    else
      block.push_back({where, i[0], i[1], i[2]});
  });
  return block;
}

const Tensor& state_target(const Problem& p) { return p.scratch_states ? *p.scratch_states : *p.state_pool; }

// Every stored state of a verify call, in request and token order.
std::vector<double> stored_states(const Problem& p) {
  std::vector<double> xs;
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t t = 0; t < p.length(n); ++t)
      for (const auto& idx : stored_state_block(p, n, t)) xs.push_back(state_target(p).at(idx));
  return xs;
}

std::vector<double> all_values(const Tensor& t) {
  std::vector<double> xs;
  for_each_index(t.shape(), [&](std::span<const std::int64_t> i) { xs.push_back(t.at(i)); });
  return xs;
}

// Bytes of `after`'s buffer that differ from `before`'s outside the elements a verify call may write.
std::int64_t bytes_changed_outside(const Tensor& before, const Tensor& after,
                                   const std::vector<std::vector<std::int64_t>>& writable) {
  std::vector<char> may_write(before.buffer->size(), 0);
  const auto element = static_cast<std::int64_t>(size_of(before.dtype()));
  for (const auto& idx : writable)
    for (std::int64_t b = 0; b < element; ++b)
      may_write[static_cast<std::size_t>(after.view.element_at(idx) * element + b)] = 1;
  std::int64_t changed = 0;
  for (std::size_t i = 0; i < may_write.size(); ++i)
    changed += !may_write[i] && before.buffer->data()[i] != after.buffer->data()[i];
  return changed;
}

// Every element a verify call may write in the pool or the scratch buffer.
std::vector<std::vector<std::int64_t>> writable_states(const Problem& p) {
  std::vector<std::vector<std::int64_t>> all;
  for (std::int64_t n = 0; n < p.N; ++n)
    for (std::int64_t t = 0; t < p.length(n); ++t)
      for (auto& idx : stored_state_block(p, n, t)) all.push_back(std::move(idx));
  return all;
}

void expect_within_policy(const char* what, const std::vector<double>& got, const std::vector<double>& oracle,
                          const std::vector<double>& model, DType dtype) {
  ASSERT_EQ(got.size(), oracle.size()) << what;
  ASSERT_FALSE(oracle.empty()) << what;
  const double error = rel_rms(got, oracle), model_error = rel_rms(model, oracle);
  EXPECT_LE(error, props::TolerancePolicy{}.bound(model_error, dtype))
      << what << ": rel-RMS " << error << " against the fp64 reference, the fp32 model's " << model_error;
}

class LoopPluginVerify : public testing::TestWithParam<Form> {};

TEST_P(LoopPluginVerify, MatchesTheReferenceAndWritesOnlyWhereTheFormNames) {
  const Form form = GetParam();
  auto kernel = load_plugin(KDA_LOOP_PLUGIN);
  ASSERT_EQ(kernel->capabilities().unsupported(verify_problem(form, 5)), "");
  Problem p = verify_problem(form, 5);
  const Problem before = deep_copy(p);
  const Problem oracle = reference_run<double>(p), model = reference_run<float>(p);
  const RunOutcome outcome = kernel->run(p);
  ASSERT_EQ(outcome.status, RunOutcome::Status::ok) << outcome.message;

  expect_within_policy("o", all_values(p.o), all_values(oracle.o), all_values(model.o), p.o.dtype());
  expect_within_policy("stored states", stored_states(p), stored_states(oracle), stored_states(model),
                       state_target(p).dtype());
  for (std::int64_t n = 0; n < p.N; ++n) {
    if (p.initial_slot(n) >= 0) continue;
    for (std::int64_t t = 0; t < p.length(n); ++t)
      for (std::int64_t hv = 0; hv < p.HV; ++hv)
        for (std::int64_t j = 0; j < p.V; ++j)
          ASSERT_EQ(p.o.at({p.row(n), p.first(n) + t, hv, j}), 0.0) << "padding request " << n;
  }

  // The scratch form's pool is read only: not one byte of it changes. The table form writes the slots
  // live entries name, nothing else of the pool; the scratch buffer only at the named rows and steps.
  const auto writable = writable_states(p);
  const bool scratch = form.source == StateSource::scratch;
  EXPECT_EQ(bytes_changed_outside(*before.state_pool, *p.state_pool,
                                  scratch ? std::vector<std::vector<std::int64_t>>{} : writable),
            0);
  if (scratch) {
    EXPECT_EQ(bytes_changed_outside(*before.scratch_states, *p.scratch_states, writable), 0);
  }
  for (const auto& field : tensor_fields())
    if (const Tensor* t = field.in(p)) {
      EXPECT_FALSE(t->buffer->check_guards()) << t->name();
    }
}

INSTANTIATE_TEST_SUITE_P(FormsLayoutsAndLengths, LoopPluginVerify,
                         testing::Values(Form{StateSource::table, StateLayout::vk, true},
                                         Form{StateSource::table, StateLayout::kv, false},
                                         Form{StateSource::table, StateLayout::kv, true},
                                         Form{StateSource::scratch, StateLayout::vk, true},
                                         Form{StateSource::scratch, StateLayout::kv, false},
                                         Form{StateSource::scratch, StateLayout::vk, false}),
                         [](const auto& param_info) { return name_of(param_info.param); });

// The twin that indexes every state as a compact [V,K] head stores wrong verify states in the [K,V]
// layout, in both forms: the comparison above is able to fail.
TEST(LoopPluginVerify, TheTransposedTwinStoresWrongStates) {
  for (StateSource source : {StateSource::table, StateSource::scratch}) {
    const Form form{source, StateLayout::kv, true};
    SCOPED_TRACE(name_of(form));
    auto kernel = load_plugin(KDA_LOOP_PLUGIN_TRANSPOSED_STATE);
    Problem p = verify_problem(form, 6);
    const Problem oracle = reference_run<double>(p), model = reference_run<float>(p);
    ASSERT_EQ(kernel->run(p).status, RunOutcome::Status::ok);
    EXPECT_GT(rel_rms(stored_states(p), stored_states(oracle)),
              props::TolerancePolicy{}.bound(rel_rms(stored_states(model), stored_states(oracle)), DType::f32));
  }
}

}  // namespace
}  // namespace kda::test
