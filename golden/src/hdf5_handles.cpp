#include "hdf5_handles.hpp"

namespace kda::golden::detail {

void silence_hdf5() {
  thread_local const bool silenced = H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr) >= 0;
  (void)silenced;
}

std::string hdf5_error() {
  std::string innermost;
  // An upward walk starts at the innermost frame: keep its description.
  auto keep_first = [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
    auto* text = static_cast<std::string*>(out);
    if (n == 0 && e->desc) *text = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_first, &innermost);
  H5Eclear2(H5E_DEFAULT);
  return innermost;
}

}  // namespace kda::golden::detail
