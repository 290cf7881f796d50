// Guard bands: a clean buffer passes; a planted out-of-bounds write on either side is caught,
// located by byte offset relative to the payload and attributed to the buffer by name.
#include <gtest/gtest.h>

#include <cstdint>

#include "kda/buffer.hpp"

using namespace kda;

TEST(GuardedBuffer, PayloadIsAlignedZeroedAndGuardsStartClean) {
  GuardedBuffer buf("q", 100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buf.data()) % GuardedBuffer::kGuardBytes, 0u);
  for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf.data()[i], std::byte{0});
  EXPECT_FALSE(buf.check_guards());
}

TEST(GuardedBuffer, WritesInsideThePayloadAreNotViolations) {
  GuardedBuffer buf("o", 37);
  for (std::size_t i = 0; i < buf.size(); ++i) buf.data()[i] = std::byte{0xff};
  EXPECT_FALSE(buf.check_guards());
}

TEST(GuardedBuffer, WriteJustPastTheEndIsLocated) {
  GuardedBuffer buf("state_pool", 64);
  buf.data()[64] = std::byte{0};  // one byte past the payload
  buf.data()[66] = std::byte{0};
  const auto v = buf.check_guards();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->buffer, "state_pool");
  EXPECT_EQ(v->first_byte, 64);
  EXPECT_EQ(v->last_byte, 66);
  EXPECT_EQ(v->bytes_changed, 2);
  EXPECT_NE(v->describe().find("after buffer 'state_pool'"), std::string::npos) << v->describe();
}

TEST(GuardedBuffer, WriteBeforeTheStartIsLocatedWithANegativeOffset) {
  // The classic pool[-1] bug: a padding index used as a slot writes one slot before the pool.
  GuardedBuffer buf("state_pool", 64);
  buf.band_before()[GuardedBuffer::kGuardBytes - 4] = std::byte{0x11};
  const auto v = buf.check_guards();
  ASSERT_TRUE(v);
  EXPECT_EQ(v->first_byte, -4);
  EXPECT_NE(v->describe().find("before buffer 'state_pool'"), std::string::npos) << v->describe();
}

TEST(GuardedBuffer, EveryBandPositionIsChecked) {
  for (std::size_t i = 0; i < GuardedBuffer::kGuardBytes; ++i) {
    GuardedBuffer buf("x", 8);
    buf.band_after()[i] ^= std::byte{0x01};
    const auto v = buf.check_guards();
    ASSERT_TRUE(v) << i;
    ASSERT_EQ(v->first_byte, 8 + static_cast<std::int64_t>(i));
  }
}

TEST(GuardedBuffer, PoisonDependsOnPosition) {
  // A stray copy of guard bytes from one place to another must still be seen.
  EXPECT_NE(GuardedBuffer::poison_at(0), GuardedBuffer::poison_at(1));
}
