// The gpu label's entry check: on a machine without an sm_90 device every gpu test must skip, not fail.
#include <gtest/gtest.h>

#include "kda/kernels/device.hpp"

TEST(Device, HopperIsUsableOrSkipped) {
  const auto info = kda::kernels::hopper_device();
  if (!info.available) GTEST_SKIP() << info.reason;
  EXPECT_EQ(info.major, 9);
  EXPECT_EQ(info.minor, 0);
}
