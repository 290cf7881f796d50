#pragma once
// Serving mode for plugins (Problem::persistent_metadata): the rule of adapters/README.md, "Persistent
// metadata", with host buffers. For each serving run, one guard-banded buffer per (metadata tensor,
// dtype, buffer length), filled with each call's bytes, so a plugin that caches what it derives from
// metadata by pointer is handed the same pointer with new contents.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kda/problem.hpp"

namespace kda::adapters {

class PersistentMetadata {
 public:
  // The call to pass: `problem` (sharing its buffers) with each metadata tensor moved onto its kept
  // buffer, filled with the bytes of its own (guard bands included). A problem without persistent
  // metadata comes back as it is.
  Problem stage(const Problem& problem);
  // After the call: the kept buffers' bytes back into `problem`'s, so whatever the plugin did to a
  // metadata input is seen where kda-oracle checks the call.
  static void unstage(const Problem& staged, Problem& problem);

 private:
  std::uint64_t run_ = 0;
  std::map<std::tuple<std::string, DType, std::size_t>, std::shared_ptr<GuardedBuffer>> kept_;
};

}  // namespace kda::adapters
