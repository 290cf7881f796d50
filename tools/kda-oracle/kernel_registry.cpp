#include "kernel_registry.hpp"

#include <stdexcept>

#include "kda/reference_kernel.hpp"

namespace kda::cli {

namespace {
struct Entry {
  const char* name;
  Precision precision;
  Algorithm algorithm;
};
// A reference kernel is its own precision model: fp32 is judged against fp32's own error.
constexpr Entry kReferences[] = {
    {"ref-fp64", Precision::fp64, Algorithm::recurrent},
    {"ref-fp32", Precision::fp32, Algorithm::recurrent},
    {"ref-fp64-chunked", Precision::fp64, Algorithm::chunked},
    {"ref-fp32-chunked", Precision::fp32, Algorithm::chunked},
};
}  // namespace

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& e : kReferences) names.emplace_back(e.name);
  return names;
}

KernelUnderTest make_kernel(const std::string& name) {
  for (const auto& e : kReferences)
    if (name == e.name)
      return {make_reference_kernel(e.precision, e.algorithm), make_reference_kernel(e.precision, e.algorithm)};
  std::string known;
  for (const auto& n : kernel_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown kernel '" + name + "' (known: " + known + ")");
}

}  // namespace kda::cli
