// Strided views: addressing, extents of padded / permuted / zero-size views, and typed access.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kda/buffer.hpp"
#include "kda/view.hpp"

using namespace kda;

TEST(View, ContiguousStridesAreRowMajor) {
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), Shape{});
  const View v = contiguous_view(DType::f32, {2, 3, 4}, 5);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.element_at({1, 2, 3}), 5 + 12 + 8 + 3);
}

TEST(View, PaddedViewExtentCoversLastElementOnly) {
  // [2 tokens, 3 heads, 4 channels] with the token stride padded to 20 and the head stride to 6.
  const View v{DType::bf16, {2, 3, 4}, {20, 6, 1}, 7};
  EXPECT_FALSE(v.is_contiguous());
  const auto e = v.byte_extent();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->begin, 7 * 2);
  EXPECT_EQ(e->end, (7 + 20 + 12 + 3 + 1) * 2);
}

TEST(View, PermutedAndNegativeStrides) {
  const View kv{DType::f32, {4, 3}, {1, 4}, 0};  // a transposed [3,4] matrix
  EXPECT_EQ(kv.element_at({3, 2}), 11);
  EXPECT_EQ(kv.byte_extent()->end, 48);
  const View reversed{DType::f32, {4}, {-1}, 3};
  EXPECT_EQ(reversed.byte_extent()->begin, 0);
  EXPECT_EQ(reversed.byte_extent()->end, 16);
}

TEST(View, ZeroSizeDimsHaveNoExtentAndNoElements) {
  const View v = contiguous_view(DType::f32, {3, 0, 5});
  EXPECT_EQ(v.numel(), 0);
  EXPECT_FALSE(v.byte_extent());
  int visited = 0;
  for_each_index(v.shape, [&](auto) { ++visited; });
  EXPECT_EQ(visited, 0);
}

// Found by fuzz_contract: the count used to saturate at the first overflowing product, before it saw
// a later zero dim, and call such a view full.
TEST(View, AZeroDimEmptiesAViewWhateverTheOtherDims) {
  const View v{DType::f32, {std::int64_t{1} << 40, std::int64_t{1} << 40, 0}, {1, 1, 1}, 0};
  EXPECT_EQ(v.numel(), 0);
  EXPECT_FALSE(v.byte_extent());
}

// Found by fuzz_contract: four dims of 2^63 - 1 elements at stride 2^63 - 1 overflowed the 128-bit
// sums (undefined behaviour) instead of clamping to the 64-bit range.
TEST(View, HostileExtentsClampToTheInt64Range) {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max(), min = std::numeric_limits<std::int64_t>::min();
  const View up{DType::f64, {max, max, max, max}, {max, max, max, max}, 0};
  EXPECT_EQ(up.byte_extent()->begin, 0);
  EXPECT_EQ(up.byte_extent()->end, max);
  const View down{DType::f64, {max, max, max, max}, {-max, -max, -max, -max}, 0};
  EXPECT_EQ(down.byte_extent()->begin, min);
  EXPECT_EQ(down.byte_extent()->end, 8);
}

TEST(View, ForEachIndexIsRowMajor) {
  std::vector<std::int64_t> seen;
  const View v = contiguous_view(DType::f32, {2, 3});
  for_each_index(v.shape, [&](auto idx) { seen.push_back(v.element_at(idx)); });
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(View, TypedAccessAtUnalignedAddresses) {
  GuardedBuffer buf("scratch", 64);
  std::byte* odd = buf.data() + 1;  // deliberately misaligned for every type wider than a byte
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::f64}) {
    store_element(odd, t, 3, -2.5);
    EXPECT_EQ(load_element(odd, t, 3), -2.5) << name_of(t);
  }
  store_integer(odd, DType::i64, 2, -(std::int64_t{1} << 40));
  EXPECT_EQ(load_integer(odd, DType::i64, 2), -(std::int64_t{1} << 40));
  store_integer(odd, DType::i32, 1, -1);
  EXPECT_EQ(load_integer(odd, DType::i32, 1), -1);
  EXPECT_FALSE(buf.check_guards());
}

TEST(View, StoreRoundsToTheStorageType) {
  GuardedBuffer buf("scratch", 16);
  store_element(buf.data(), DType::bf16, 0, 1.0 + 1.0 / 512);  // below the tie: rounds down
  EXPECT_EQ(load_element(buf.data(), DType::bf16, 0), 1.0);
  store_element(buf.data(), DType::f16, 1, 1.0 / 3);
  EXPECT_NEAR(load_element(buf.data(), DType::f16, 1), 1.0 / 3, 1.0 / 4096);
}

TEST(View, DescribeNamesDtypeShapeStridesOffset) {
  const View v{DType::bf16, {1, 130, 2, 64}, {16640, 128, 64, 1}, 3};
  EXPECT_EQ(v.describe(), "bf16[1,130,2,64]/(16640,128,64,1)+3");
}
