// The Problem model: sequence addressing through cu_seqlens, chunk counting, pools with padded slot
// strides, the one-line description and deep copies.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "kda/problem_factory.hpp"

using namespace kda;

TEST(Problem, VarlenAddressingFollowsCuSeqlens) {
  ProblemSpec spec;
  spec.lengths = {0, 65, 1};
  spec.cu_seqlens_dtype = DType::i64;
  const Problem p = make_problem(spec);
  EXPECT_EQ(p.B, 1);
  EXPECT_EQ(p.T, 66);
  EXPECT_EQ(p.N, 3);
  EXPECT_EQ(p.first(1), 0);
  EXPECT_EQ(p.length(0), 0);
  EXPECT_EQ(p.first(2), 65);
  EXPECT_EQ(p.row(2), 0);
  EXPECT_EQ(p.chunks(0), 0);
  EXPECT_EQ(p.chunks(1), 2) << "65 tokens: a full chunk of 64 and a partial one";
  EXPECT_EQ(p.total_chunks(), 3);
  EXPECT_EQ(p.q.shape(), (Shape{1, 66, 1, 16}));
}

TEST(Problem, BatchedAddressingUsesRows) {
  ProblemSpec spec;
  spec.lengths = {5, 5};
  spec.varlen = false;
  const Problem p = make_problem(spec);
  EXPECT_FALSE(p.cu_seqlens);
  EXPECT_EQ(p.B, 2);
  EXPECT_EQ(p.row(1), 1);
  EXPECT_EQ(p.first(1), 0);
  EXPECT_EQ(p.length(1), 5);
}

TEST(Problem, PoolWithPaddedSlotStrideAndOffset) {
  ProblemSpec spec;
  spec.lengths = {3, 4};
  spec.HV = 2;
  spec.K = 16;
  spec.V = 8;
  spec.state = StateSource::pool;
  spec.pool_slots = 5;
  spec.pool_slot_stride = 2 * 8 * 16 + 32;
  spec.pool_offset = 8;
  spec.indices = {4, -1};
  const Problem p = make_problem(spec);
  ASSERT_TRUE(p.state_pool && p.state_indices);
  EXPECT_EQ(p.state_pool->shape(), (Shape{5, 2, 8, 16})) << "[slots, HV, V, K] in the default layout";
  EXPECT_EQ(p.state_pool->view.strides, (Shape{288, 128, 16, 1}));
  EXPECT_EQ(p.state_pool->buffer->size(), static_cast<std::size_t>((8 + 4 * 288 + 256) * 4));
  EXPECT_EQ(p.state_indices->integer_at(0), 4);
  EXPECT_EQ(p.state_indices->integer_at(1), -1);
  EXPECT_FALSE(p.final_state) << "a pool is updated in place";
}

TEST(Problem, KvLayoutTransposesTheHeadState) {
  ProblemSpec spec;
  spec.K = 32;
  spec.V = 16;
  spec.options.state_layout = StateLayout::kv;
  spec.chunk_states = true;
  spec.lengths = {70};
  const Problem p = make_problem(spec);
  EXPECT_EQ(p.initial_state->shape(), (Shape{1, 1, 32, 16}));
  EXPECT_EQ(p.chunk_states->shape(), (Shape{2, 1, 32, 16}));
}

TEST(Problem, DescribeIsOneLineWithEveryTensor) {
  ProblemSpec spec;
  spec.lengths = {0, 3};
  spec.state = StateSource::pool;
  spec.indices = {-1, 2};
  spec.options.gate_in_kernel = true;
  spec.options.lower_bound = -5.0;
  const std::string d = make_problem(spec).describe();
  EXPECT_EQ(d.find('\n'), std::string::npos);
  for (const char* part : {"prefill", "N=2", "cu_seqlens=[0,0,3]", "indices=[-1,2]", "gate=lower_bound", "lb=-5",
                           "q=f32[1,3,1,16]", "state_pool=f32[4,1,16,16]"})
    EXPECT_NE(d.find(part), std::string::npos) << part << " missing from: " << d;
}

// Found by fuzz_contract: describe() computed the extent of a cu_seqlens view with fewer strides
// than dims, reading past the strides (AddressSanitizer: heap-buffer-overflow).
TEST(Problem, DescribeLeavesMalformedIndexTensorsUnread) {
  ProblemSpec spec;
  spec.lengths = {2, 3};
  Problem p = make_problem(spec);
  p.cu_seqlens->view.strides.clear();
  EXPECT_NE(p.describe().find("cu_seqlens=<unreadable>"), std::string::npos) << p.describe();
  p.cu_seqlens->view = View{DType::i32, {3, 1}, {1}, 0};
  EXPECT_NE(p.describe().find("cu_seqlens=<unreadable>"), std::string::npos) << p.describe();
}

TEST(Problem, DeepCopyDuplicatesBuffersAndKeepsSharing) {
  ProblemSpec spec;
  spec.lengths = {4};
  Problem p = make_problem(spec);
  fill_random(p, 7);
  p.k.buffer = p.q.buffer;  // two tensors on one buffer (a fused projection)
  Problem c = deep_copy(p);
  EXPECT_NE(c.q.buffer, p.q.buffer);
  EXPECT_EQ(c.q.buffer, c.k.buffer) << "sharing between tensors survives the copy";
  EXPECT_EQ(c.v.at({0, 2, 0, 3}), p.v.at({0, 2, 0, 3}));
  c.v.set({0, 2, 0, 3}, 42.0);
  EXPECT_NE(p.v.at({0, 2, 0, 3}), 42.0);
}

TEST(Problem, FillRandomIsSeeded) {
  ProblemSpec spec;
  spec.lengths = {8};
  spec.options.gate_in_kernel = true;
  spec.with_A_log = true;
  Problem a = make_problem(spec), b = make_problem(spec);
  fill_random(a, 11);
  fill_random(b, 11);
  for_each_index(a.g.shape(), [&](auto idx) { ASSERT_EQ(a.g.at(idx), b.g.at(idx)); });
  EXPECT_GE(a.A_log->at({0}), 0.0);
  EXPECT_LE(a.A_log->at({0}), std::log(16.0));
}

// fill_random_parallel: the same values for a seed whatever the threads, other values than fill_random's,
// the same laws (moments within five standard errors of 2^20 draws; the ranges exactly).
TEST(Problem, FillRandomParallelIsSeededAndKeepsTheLaws) {
  ProblemSpec spec;
  spec.lengths = {1000, 24};  // 1024 tokens x 8 heads x 128 channels: 2^20 elements, 16 blocks
  spec.H = spec.HV = 8, spec.K = spec.V = 128;
  spec.options.l2norm_qk = true;  // q and k rows left as drawn
  spec.with_A_log = true;
  Problem a = make_problem(spec), b = make_problem(spec), c = make_problem(spec);
  omp_set_num_threads(1);
  fill_random_parallel(a, 5);
  omp_set_num_threads(4);
  fill_random_parallel(b, 5);
  fill_random(c, 5);
  for (auto [x, y] : {std::pair{&a.q, &b.q}, std::pair{&a.v, &b.v}, std::pair{&a.g, &b.g}})
    ASSERT_EQ(0, std::memcmp(x->buffer->data(), y->buffer->data(), x->buffer->size())) << x->name();
  EXPECT_NE(0, std::memcmp(a.q.buffer->data(), c.q.buffer->data(), a.q.buffer->size()));
  const auto moments = [](const Tensor& t) {
    double sum = 0, squares = 0;
    for_each_index(t.shape(), [&](auto idx) { sum += t.at(idx), squares += t.at(idx) * t.at(idx); });
    const double n = static_cast<double>(t.numel()), mean = sum / n;
    return std::pair{mean, std::sqrt(squares / n - mean * mean)};
  };
  const double n = static_cast<double>(a.q.numel());
  for (const Tensor* t : {&a.q, &a.k, &a.v}) {  // N(0,1): the mean's error 1/sqrt(n), the deviation's sqrt(1/2n)
    const auto [mean, sd] = moments(*t);
    EXPECT_NEAR(mean, 0.0, 5 / std::sqrt(n)) << t->name();
    EXPECT_NEAR(sd, 1.0, 5 * std::sqrt(0.5 / n)) << t->name();
  }
  // g pre-activated (no gate in the kernel): U[-1, 0), mean -1/2, deviation 1/sqrt(12) (its error
  // sqrt(1/180n): the fourth central moment of a uniform is 1/80).
  const auto [g_mean, g_sd] = moments(a.g);
  EXPECT_NEAR(g_mean, -0.5, 5 / std::sqrt(12 * n));
  EXPECT_NEAR(g_sd, 1 / std::sqrt(12.0), 5 * std::sqrt(1 / (180 * n)));
  for_each_index(a.g.shape(), [&](auto idx) { ASSERT_TRUE(a.g.at(idx) >= -1.0 && a.g.at(idx) < 0.0); });
  for_each_index(a.A_log->shape(), [&](auto idx) {
    ASSERT_GE(a.A_log->at(idx), 0.0);
    ASSERT_LE(a.A_log->at(idx), std::log(16.0));
  });
}

TEST(Problem, MetadataTensorsArePersistentOnlyWhereAsked) {
  ProblemSpec spec;
  spec.lengths = {2, 3};
  spec.state = StateSource::pool;
  spec.indices = {0, 1};
  Problem p = make_problem(spec);
  EXPECT_EQ(metadata_tensors(p), (std::vector<std::string_view>{"cu_seqlens", "state_indices"}));
  EXPECT_FALSE(p.persistent_metadata) << "calls get fresh metadata unless a property asks";
  EXPECT_EQ(p.describe().find("persistent_metadata"), std::string::npos);
  p.persistent_metadata = 3;
  EXPECT_EQ(deep_copy(p).persistent_metadata, 3u) << "a copy is called the same way";
  EXPECT_NE(p.describe().find("persistent_metadata"), std::string::npos) << p.describe();
  spec.varlen = false;
  spec.lengths = {3, 3};
  spec.state = StateSource::none;
  EXPECT_TRUE(metadata_tensors(make_problem(spec)).empty());
}
