// The device staging of KDA_MEMORY_CUDA plugins (adapters/src/device_staging.hpp) on a host-memory
// fake of the device: the plan (one place per buffer, aligned payloads, a slot of extra band around a
// pool), the copies both ways, stray writes located to the byte (in the host-sized bands through the
// host buffer's own bands, further out by the staging itself), a serving run's metadata kept at one
// device address, and every allocation freed, also when a copy fails half-way; then a plugin declaring
// KDA_MEMORY_CUDA (adapters/tests/test_plugin.c, variant 10) loaded with the fake as its device.
// tests/gpu/cuda_plugin_test runs the same through the CUDA runtime.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "device_staging.hpp"
#include "kda/problem_factory.hpp"
#include "persistent_metadata.hpp"
#include "plugin_loading.hpp"

namespace kda::adapters {
namespace {

constexpr std::int64_t kGuard = GuardedBuffer::kGuardBytes;

// Host memory standing in for a device; counts what is live and can fail the n-th copy to the device.
class HostDeviceMemory final : public DeviceMemory {
 public:
  std::byte* allocate(std::size_t bytes) override {
    auto block = std::make_unique<std::byte[]>(bytes + kGuard);
    auto* aligned = block.get() + (kGuard - reinterpret_cast<std::uintptr_t>(block.get()) % kGuard) % kGuard;
    live_[aligned] = std::move(block);
    *live_count = live_.size();
    return aligned;
  }
  void release(std::byte* device) noexcept override {
    live_.erase(device);
    *live_count = live_.size();
  }
  void to_device(std::byte* device, const std::byte* host, std::size_t bytes) override {
    if (fail_copy_to_device == copies_to_device++) throw DeviceError("cudaMemcpyAsync to the device: planted");
    std::memcpy(device, host, bytes);
  }
  void to_host(std::byte* host, const std::byte* device, std::size_t bytes) override {
    std::memcpy(host, device, bytes);
  }
  void synchronize() override {}
  int device() const override { return 3; }
  void* stream() const override { return nullptr; }

  std::size_t live() const { return live_.size(); }
  std::shared_ptr<std::size_t> live_count = std::make_shared<std::size_t>(0);  // outlives the memory
  int fail_copy_to_device = -1;  // the copy (counting from 0) that throws; -1: none

 private:
  int copies_to_device = 0;
  std::map<std::byte*, std::unique_ptr<std::byte[]>> live_;
};

// A pooled f32 prefill with a -1 padding row and a pool slot padded to 1024 elements.
Problem pooled_problem() {
  ProblemSpec spec;
  spec.lengths = {5, 3, 7};
  spec.H = 1, spec.HV = 2, spec.K = 16, spec.V = 16;
  spec.state = StateSource::pool;
  spec.pool_slot_stride = 1024;
  spec.indices = {2, -1, 0};
  Problem p = make_problem(spec);
  fill_random(p, 5);
  return p;
}

std::int64_t pool_slot_bytes(const Problem& p) { return p.state_pool->view.stride(0) * 4; }

std::int64_t round_up(std::int64_t n) { return (n + kGuard - 1) / kGuard * kGuard; }

TEST(DeviceStaging, PlansEachBufferOnceWithAlignedPayloadsAndAWiderBandAroundThePool) {
  Problem p = pooled_problem();
  p.k.buffer = p.q.buffer;  // k aliases q: one buffer, staged once
  const auto plan = plan_staging(p);
  std::set<const GuardedBuffer*> distinct;
  for (const TensorField& f : tensor_fields())
    if (const Tensor* t = f.in(p)) distinct.insert(t->buffer.get());
  ASSERT_EQ(plan.size(), distinct.size());
  EXPECT_EQ(plan.front().host, p.cu_seqlens->buffer.get());  // tensor_fields() order
  std::size_t end = 0;
  for (const StagedBuffer& b : plan) {
    EXPECT_EQ(b.payload_offset() % kGuard, 0u) << b.host->name();
    EXPECT_GE(b.offset, end) << b.host->name() << " overlaps the buffer before it";
    end = b.end();
    const bool pool = b.host == p.state_pool->buffer.get();
    const auto band = static_cast<std::size_t>(pool ? kGuard + round_up(pool_slot_bytes(p)) : kGuard);
    EXPECT_EQ(b.band_before, band) << b.host->name();
    EXPECT_EQ(b.band_after, band) << b.host->name();
  }
}

TEST(DeviceStaging, PassesDevicePointersWithTheHostsOffsetsAndBringsEveryBufferBack) {
  Problem p = pooled_problem();
  const Problem before = deep_copy(p);
  HostDeviceMemory memory;
  {
    DeviceStaging staging(p, memory);
    EXPECT_EQ(memory.live(), 1u);
    const auto plan = plan_staging(p);
    for (const TensorField& f : tensor_fields()) {
      const Tensor* t = f.in(p);
      if (!t) continue;
      const auto* device = static_cast<const std::byte*>(staging.device_data(*t));
      // Element [0,...] holds the host's bytes, at the host's offset from an aligned payload.
      EXPECT_EQ(std::memcmp(device, t->buffer->data() + t->view.byte_offset(), size_of(t->dtype())), 0) << f.name;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(device) % kGuard,
                reinterpret_cast<std::uintptr_t>(t->buffer->data() + t->view.byte_offset()) % kGuard)
          << f.name;
    }
    // The kernel's work: o's first element written on the device, the host's o untouched until copy_back.
    const float x = 42.0f;
    std::memcpy(staging.device_data(p.o), &x, sizeof x);
    EXPECT_NE(p.o.at({0, 0, 0, 0}), 42.0);
    EXPECT_TRUE(staging.copy_back().empty());
    EXPECT_EQ(p.o.at({0, 0, 0, 0}), 42.0);
    // Every other byte, bands included, is what it was.
    p.o.set({0, 0, 0, 0}, before.o.at({0, 0, 0, 0}));
    for (const TensorField& f : tensor_fields()) {
      const Tensor* t = f.in(p);
      if (!t) continue;
      const std::size_t whole = t->buffer->size() + 2 * kGuard;
      EXPECT_EQ(std::memcmp(t->buffer->band_before(), f.in(before)->buffer->band_before(), whole), 0) << f.name;
    }
  }
  EXPECT_EQ(memory.live(), 0u);
}

TEST(DeviceStaging, AWriteInTheHostSizedBandComesBackIntoTheHostBand) {
  Problem p = pooled_problem();
  HostDeviceMemory memory;
  DeviceStaging staging(p, memory);
  const float x = 1.0f;
  std::memcpy(static_cast<std::byte*>(staging.device_data(p.o)) - sizeof x, &x, sizeof x);  // o[-1]
  EXPECT_TRUE(staging.copy_back().empty());
  const auto hit = p.o.buffer->check_guards();
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->buffer, "o");
  EXPECT_EQ(hit->first_byte, -4);
}

TEST(DeviceStaging, AWriteOneSlotBeforeOrAfterThePoolIsLocatedToTheByte) {
  Problem p = pooled_problem();
  HostDeviceMemory memory;
  DeviceStaging staging(p, memory);
  const std::int64_t slot = pool_slot_bytes(p), size = static_cast<std::int64_t>(p.state_pool->buffer->size());
  auto* pool = static_cast<std::byte*>(staging.device_data(*p.state_pool)) - p.state_pool->view.byte_offset();
  const std::byte ones[8] = {std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff},
                             std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}};
  std::memcpy(pool - slot, ones, 8);             // slot -1's first element pair
  std::memcpy(pool + size + slot - 8, ones, 8);  // the last bytes of a slot past the end
  const auto found = staging.copy_back();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].buffer, "state_pool");
  EXPECT_EQ(found[0].first_byte, -slot);
  EXPECT_EQ(found[0].last_byte, -slot + 7);
  EXPECT_EQ(found[0].bytes_changed, 8);
  EXPECT_NE(found[0].describe().find("guard band before buffer 'state_pool'"), std::string::npos)
      << found[0].describe();
  EXPECT_EQ(found[1].first_byte, size + slot - 8);
  EXPECT_EQ(found[1].last_byte, size + slot - 1);
  EXPECT_FALSE(p.state_pool->buffer->check_guards());  // beyond the host's band: reported by the staging only
}

TEST(DeviceStaging, FreesItsAllocationWhenACopyFailsHalfWay) {
  Problem p = pooled_problem();
  HostDeviceMemory memory;
  memory.fail_copy_to_device = 3;
  try {
    DeviceStaging staging(p, memory);
    FAIL() << "the planted copy failure was not thrown";
  } catch (const DeviceError& e) {
    EXPECT_STREQ(e.what(), "cudaMemcpyAsync to the device: planted");
  }
  EXPECT_EQ(memory.live(), 0u);
}

// The metadata buffers PersistentMetadata keeps for a staged serving call.
std::vector<std::shared_ptr<GuardedBuffer>> kept_metadata(const Problem& staged) {
  return {staged.cu_seqlens->buffer, staged.state_indices->buffer};
}

TEST(DeviceStaging, AServingRunsMetadataKeepsItsDeviceAddressRefilledUntilTheRunEnds) {
  HostDeviceMemory memory;
  KeptDeviceBuffers kept(memory);
  PersistentMetadata persistent;
  const void* first_address = nullptr;
  {
    Problem call = pooled_problem();
    call.persistent_metadata = 1;
    Problem staged = persistent.stage(call);
    DeviceStaging staging(staged, memory, kept_metadata(staged), &kept);
    first_address = staging.device_data(*staged.cu_seqlens);
  }
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(memory.live(), 2u);  // the call's own block is gone, the kept ones stay
  {
    Problem call = pooled_problem();
    call.persistent_metadata = 1;
    call.cu_seqlens->set_integer(1, 4);  // new contents, same geometry
    Problem staged = persistent.stage(call);
    kept.drop_unused();
    DeviceStaging staging(staged, memory, kept_metadata(staged), &kept);
    EXPECT_EQ(staging.device_data(*staged.cu_seqlens), first_address);
    std::int32_t second = 0;
    std::memcpy(&second, static_cast<const std::byte*>(staging.device_data(*staged.cu_seqlens)) + 4, 4);
    EXPECT_EQ(second, 4);
    EXPECT_NE(staging.device_data(staged.q), first_address);
  }
  {
    Problem call = pooled_problem();
    call.persistent_metadata = 2;  // another serving run: the first run's buffers are dropped
    Problem staged = persistent.stage(call);
    kept.drop_unused();
    EXPECT_EQ(kept.size(), 0u);
    DeviceStaging staging(staged, memory, kept_metadata(staged), &kept);
    EXPECT_EQ(kept.size(), 2u);
  }
  kept.drop_unused();  // the run's buffers are still kept by `persistent`
  EXPECT_EQ(kept.size(), 2u);
}

TEST(DeviceStaging, TheOuterPoisonDiffersFromTheHostBandsAndAlongTheBand) {
  std::set<std::byte> seen;
  for (std::int64_t at = -64; at < 0; ++at) seen.insert(outer_poison_at(at));
  EXPECT_GT(seen.size(), 32u);
  int same = 0;
  for (std::size_t i = 0; i < GuardedBuffer::kGuardBytes; ++i)
    same += outer_poison_at(-kGuard - static_cast<std::int64_t>(i)) == GuardedBuffer::poison_at(i);
  EXPECT_LT(same, 8);
}

TEST(DeviceStaging, ADevicePluginGetsDevicePointersAndItsStrayWritesAreLocated) {
  std::shared_ptr<std::size_t> live;
  auto kernel = load_plugin(KDA_DEVICE_TEST_PLUGIN, [&](const std::string&) {
    auto memory = std::make_unique<HostDeviceMemory>();
    live = memory->live_count;
    return memory;
  });
  // o[-1]: back in o's host band, the call itself fine.
  ProblemSpec spec;
  spec.lengths = {3, 4};
  Problem dense = make_problem(spec);
  const RunOutcome ran = kernel->run(dense);
  ASSERT_EQ(ran.status, RunOutcome::Status::ok) << ran.message;
  ASSERT_TRUE(dense.o.buffer->check_guards());
  EXPECT_EQ(dense.o.buffer->check_guards()->first_byte, -4);
  EXPECT_EQ(*live, 0u);
  // Slot -1 of the pool: beyond the host's band, a failure naming the bytes.
  Problem pooled = pooled_problem();
  const std::int64_t slot = pool_slot_bytes(pooled);
  const RunOutcome failed = kernel->run(pooled);
  ASSERT_EQ(failed.status, RunOutcome::Status::failed);
  const GuardViolation slot_minus_one{"state_pool", -slot, -slot + 7, 8};
  EXPECT_EQ(failed.message,
            "plugin test-plugin wrote outside its buffers on the device:\n  " + slot_minus_one.describe());
  EXPECT_EQ(pooled.o.buffer->check_guards().value_or(GuardViolation{}).first_byte, -4);
  EXPECT_EQ(*live, 0u);
}

}  // namespace
}  // namespace kda::adapters
