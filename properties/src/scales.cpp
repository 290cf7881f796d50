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
  // 2^32 state elements of work: 4096 tokens of HV = 64, K = V = 128 (16k tokens of HV = 16), or about
  // 450 pooled decode sequences there. Every state tensor together stays under 2^29 elements (2 GiB in
  // fp32), so a case with its snapshot and three fp64 readings of its states fits in about 20 GiB.
  limits.max_work = std::int64_t{1} << 32;
  limits.pool_past_int32 = scale == Scale::stress;
  return limits;
}

}  // namespace kda::props
