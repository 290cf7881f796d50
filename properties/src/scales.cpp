// The generator limits of each `kda-oracle check --scale`: the one place that says what a scale draws.
#include <stdexcept>
#include <string>

#include "kda/properties/generators.hpp"

namespace kda::props {

std::string_view name_of(Scale scale) {
  switch (scale) {
    case Scale::small: return "small";
    case Scale::realistic: return "realistic";
    case Scale::stress: return "stress";
  }
  return "?";
}

Scale parse_scale(std::string_view name) {
  for (Scale s : {Scale::small, Scale::realistic, Scale::stress})
    if (name == name_of(s)) return s;
  throw std::invalid_argument("unknown scale '" + std::string(name) + "': expected small, realistic or stress");
}

GenLimits limits_for(Scale scale) {
  GenLimits limits;
  if (scale == Scale::small) return limits;
  limits.max_sequences = 256;
  limits.max_tokens = 16384;
  limits.head_dims = {16, 32, 64, 128, 256};
  limits.min_drawn_head_dim = 64;
  limits.max_heads = 64;
  limits.gva_ratios = {1, 2, 4, 8};
  limits.decode_batch_edges = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
  // 2^31 state elements of work: 2048 tokens of HV = 64, K = V = 128 (16k tokens of HV = 8), or about
  // 225 pooled decode sequences there. Every state tensor together stays under 2^28 elements (1 GiB in
  // fp32): the property holding most copies (verify-commit: three problems, two fp64 readings of every
  // state) stays under about 8 GiB.
  limits.max_work = std::int64_t{1} << 31;
  limits.pool_past_int32 = scale == Scale::stress;
  return limits;
}

}  // namespace kda::props
