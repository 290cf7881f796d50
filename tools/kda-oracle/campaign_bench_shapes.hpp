#pragma once
// The calls a campaign times each implementation on: the shapes of bench/gpu/ (decode_bench.cu and
// prefill_bench.cu, kda-facts §6's anchors: H = HV = 32, K = V = 128, bf16 activations, an fp32 state,
// gate, l2norm and beta in the kernel): pooled decode at N = 64, 256, 1024; the index-table verify at
// N = 256, L = 4 and 8; varlen prefill of 1 x 8192, 8 x 2048, 32 x 512 and 7 mixed lengths. "tiny" is the
// same calls at H = HV = 2, K = V = 16 and a few tokens, for CPU tests of the campaign.
#include <string>
#include <string_view>
#include <vector>

#include "kda/problem_factory.hpp"

namespace kda::cli {

struct BenchShape {
  std::string name;  // "decode N=256", "prefill 8x2048", ...
  ProblemSpec spec;
};

// "standard" or "tiny"; std::invalid_argument otherwise.
std::vector<BenchShape> bench_shapes(std::string_view set);

}  // namespace kda::cli
