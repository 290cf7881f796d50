// The chunked simulation's outputs on the named chunked cases and a benchmark-like packing (two seeds
// each) as one FNV-1a hash a case: o, the final states and the chunk-start states, bit for bit. Built by
// scripts/kernel-dev/sim-fingerprint.sh against each ref's libraries, to check that a change leaves the bits alone.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "kda/kernels/chunked_prefill_sim.hpp"
#include "kda/problem_factory.hpp"
#include "kda/properties/comparison.hpp"
#include "support/chunked_cases.hpp"

namespace {

std::uint64_t fnv1a(const std::vector<double>& values, std::uint64_t hash) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size() * sizeof(double); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

}  // namespace

int main() {
  auto cases = kda::test::chunked_named_cases();
  cases.push_back({"benchmark-like 100,700,37,1,255 x 2 heads", kda::test::benchmark_spec({100, 700, 37, 1, 255}, 2)});
  for (const auto& [name, spec] : cases)
    for (const std::uint64_t seed : {3u, 11u}) {
      kda::Problem p = kda::make_problem(spec);
      kda::fill_random(p, seed);
      kda::kernels::simulate_chunked_prefill(p);
      const kda::ReferenceOutputs out = kda::props::read_outputs(p);
      const std::uint64_t hash = fnv1a(out.chunk_states, fnv1a(out.final_state, fnv1a(out.o, 14695981039346656037ull)));
      std::printf("%-44s seed %2llu  %016llx\n", name.c_str(), static_cast<unsigned long long>(seed),
                  static_cast<unsigned long long>(hash));
    }
  return 0;
}
