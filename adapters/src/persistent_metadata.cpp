#include "persistent_metadata.hpp"

#include <cstring>

namespace kda::adapters {

namespace {

void copy_whole(const GuardedBuffer& from, GuardedBuffer& to) {
  std::memcpy(to.band_before(), from.data() - GuardedBuffer::kGuardBytes, from.size() + 2 * GuardedBuffer::kGuardBytes);
}

}  // namespace

Problem PersistentMetadata::stage(const Problem& problem) {
  Problem staged = problem;
  if (!problem.persistent_metadata) return staged;
  if (problem.persistent_metadata != run_) {  // a new engine: new buffers
    run_ = problem.persistent_metadata;
    kept_.clear();
  }
  for (std::string_view name : metadata_tensors(problem)) {
    Tensor& t = *find_tensor_field(name)->in(staged);
    auto& kept = kept_[{std::string(name), t.dtype(), t.buffer->size()}];
    if (!kept) kept = std::make_shared<GuardedBuffer>(t.buffer->name(), t.buffer->size());
    copy_whole(*t.buffer, *kept);
    t.buffer = kept;
  }
  return staged;
}

void PersistentMetadata::unstage(const Problem& staged, Problem& problem) {
  for (std::string_view name : metadata_tensors(problem)) {
    const TensorField& field = *find_tensor_field(name);
    const Tensor& used = *field.in(staged);
    Tensor& own = *field.in(problem);
    if (used.buffer != own.buffer) copy_whole(*used.buffer, *own.buffer);
  }
}

}  // namespace kda::adapters
