// The property catalogue against every kernel of the registry (kda/registry/kernel_registry.hpp), one
// GoogleTest case per (kernel, property), with a fixed seed. Built twice from this file:
// catalogue_test (label property) over the kernels that need no GPU, and, in CUDA builds,
// gpu_catalogue_test (KDA_CATALOGUE_GPU, label gpu) over the GPU kernels and the CUDA example plugin
// (adapters/examples/cuda_plugin, loaded through the C ABI like any third-party kernel). A GPU kernel
// without an sm_90 device skips, and so does a property the kernel cannot take (Property::needs).
// KDA_PROPERTY_CASES scales the run (default 100 cases per property); a failure prints the replay.
#include <cstdlib>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "../support/catalogue_check.hpp"
#include "kda/registry/kernel_registry.hpp"

namespace kda::test {
namespace {

struct Entry {
  std::string name;                      // the record's, or "cuda-plugin"
  const registry::KernelRecord* record;  // its record (the plugin: that of the kernel it wraps)
};
void PrintTo(const Entry& entry, std::ostream* os) { *os << entry.name; }

#if KDA_CATALOGUE_GPU
const registry::KernelRecord& record_named(const std::string& name) {
  for (const auto& r : registry::kernel_records())
    if (r.name == name) return r;
  throw std::logic_error("no kernel record '" + name + "'");
}
#endif

std::vector<Entry> entries() {
  std::vector<Entry> out;
  for (const auto& r : registry::kernel_records())
    if (r.prefix.empty() && r.needs_gpu == bool(KDA_CATALOGUE_GPU)) out.push_back({r.name, &r});
#if KDA_CATALOGUE_GPU
  out.push_back({"cuda-plugin", &record_named("cuda-recurrent")});
#endif
  return out;
}

// What registry::make_kernel takes. The plugin's path: KDA_CUDA_PLUGIN in the environment (the GPU
// harness runs binaries packed elsewhere), else the one this build made.
std::string kernel_argument(const Entry& entry) {
#if KDA_CATALOGUE_GPU
  if (entry.name == "cuda-plugin") {
    const char* path = std::getenv("KDA_CUDA_PLUGIN");
    return std::string("plugin:") + (path ? path : KDA_CUDA_PLUGIN_PATH);
  }
#endif
  return entry.name;
}

class Catalogue : public testing::TestWithParam<std::tuple<Entry, std::string>> {};

TEST_P(Catalogue, Holds) {
  const auto& [entry, property] = GetParam();
  if (const auto why = registry::unavailable(*entry.record); !why.empty()) GTEST_SKIP() << why;
  registry::KernelUnderTest kut = registry::make_kernel(kernel_argument(entry));
  expect_property_holds(*kut.kernel, *kut.model, property, 20261201, entry.record->needs_gpu);
}

INSTANTIATE_TEST_SUITE_P(Registry, Catalogue, testing::Combine(testing::ValuesIn(entries()),
                                                               testing::ValuesIn(property_names())),
                         [](const auto& param) {
                           return test_name(std::get<0>(param.param).name) + "__" +
                                  test_name(std::get<1>(param.param));
                         });

}  // namespace
}  // namespace kda::test
