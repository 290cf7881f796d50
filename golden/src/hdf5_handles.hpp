#pragma once
// RAII over HDF5 ids, and HDF5's error stack turned into text instead of stderr output.
#include <hdf5.h>

#include <string>
#include <utility>

namespace kda::golden::detail {

// Owns one HDF5 id and closes it with Close.
template <herr_t (*Close)(hid_t)>
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  Id(Id&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)) {}
  Id& operator=(Id&& o) noexcept {
    if (this != &o) reset(std::exchange(o.id_, H5I_INVALID_HID));
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset(hid_t id = H5I_INVALID_HID) {
    if (id_ >= 0) Close(id_);
    id_ = id;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using ObjectId = Id<H5Oclose>;  // a group or a dataset
using AttributeId = Id<H5Aclose>;
using TypeId = Id<H5Tclose>;
using SpaceId = Id<H5Sclose>;
using PlistId = Id<H5Pclose>;

// Turns off HDF5's automatic error printing for the calling thread (the library keeps one error
// stack per thread); every entry point of kda::golden calls it.
void silence_hdf5();

// The innermost message on the calling thread's HDF5 error stack ("" when empty); clears the stack.
std::string hdf5_error();

}  // namespace kda::golden::detail
