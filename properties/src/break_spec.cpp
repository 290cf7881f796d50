// Breaks applied to the spec: new head dims, heads, chunk size, token counts, state source, state
// dtype or layout, pool geometry. Rebuilding keeps every tensor consistent with the changed value,
// so only the rule about that value trips.
#include <algorithm>

#include "generators_internal.hpp"

namespace kda::props::detail {

namespace {

template <class T>
T nth(const std::vector<T>& xs, std::uint64_t variant) {
  return xs[variant % xs.size()];
}

template <class T>
bool has(const std::vector<T>& xs, const T& x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

// A head dim outside `set` (nullopt when the set allows any), at most `max`.
std::optional<i64> dim_outside(const std::vector<i64>& set, i64 max) {
  if (set.empty()) return std::nullopt;
  for (i64 d : {16, 32, 64, 128, 256, 8, 48})
    if (d <= max && !has(set, d)) return d;
  return std::nullopt;
}

void break_head_dims(ProblemSpec& s, std::uint64_t variant, const Profile& profile) {
  const auto K = dim_outside(profile.key_head_dims, profile.max_key_head_dim);
  const auto V = dim_outside(profile.value_head_dims, 1 << 20);
  const bool key = K && (!V || variant % 2 == 0);
  set_head_dims(s, key ? *K : s.K, key ? s.V : *V);
}

void break_decode_lengths(ProblemSpec& s, std::uint64_t variant) {
  const i64 length = variant % 2 ? 0 : 2;
  if (s.varlen)
    s.lengths[variant / 2 % s.lengths.size()] = length;
  else
    std::fill(s.lengths.begin(), s.lengths.end(), length);
}

void break_state_source(ProblemSpec& s, std::uint64_t variant, const Profile& profile) {
  std::vector<StateSource> missing;
  for (StateSource x : {StateSource::none, StateSource::dense, StateSource::pool})
    if (!has(profile.state_sources, x)) missing.push_back(x);
  s.state = nth(missing, variant);
  s.final_state = false;
  if (s.state == StateSource::pool) place_pool(s, PoolDraw{}, true, true);
}

void break_state_dtype(ProblemSpec& s, std::uint64_t variant, const Profile& profile) {
  std::vector<DType> outside;
  for (DType d : {DType::f64, DType::f16, DType::bf16, DType::f32})
    if (!has(profile.state_dtypes, d)) outside.push_back(d);
  set_state_dtype(s, nth(outside, variant));
}

}  // namespace

bool break_spec(CaseSpec& c, Rule rule, std::uint64_t variant, const Profile& profile) {
  ProblemSpec& s = c.problem;
  switch (rule) {
    case Rule::problem_sizes:  // no query heads: q and k sized [B, T, 0, K]. (K = 0 or V = 0 would also
      s.H = 0;                 // break the pool's inner strides: a torch-style empty tensor's are not (0, 0, 1).)
      return true;
    case Rule::hv_divisible: {
      std::vector<i64> heads{s.HV + 1};
      for (i64 h = 2; h < s.HV; ++h)
        if (s.HV % h != 0) heads.push_back(h);
      s.H = nth(heads, variant);
      return true;
    }
    case Rule::key_head_dim_max: set_head_dims(s, profile.max_key_head_dim + 16, s.V); return true;
    case Rule::head_dims_supported: break_head_dims(s, variant, profile); return true;
    case Rule::chunk_size: s.options.chunk_size = nth(std::vector{16, 128, 48, 8}, variant); return true;
    case Rule::decode_one_token: break_decode_lengths(s, variant); return true;
    case Rule::state_source_supported: break_state_source(s, variant, profile); return true;
    case Rule::state_dtype: break_state_dtype(s, variant, profile); return true;
    case Rule::state_layout:
      s.options.state_layout = s.options.state_layout == StateLayout::vk ? StateLayout::kv : StateLayout::vk;
      return true;
    case Rule::state_pool_alignment:  // the pool's stride and base are aligned: one of them moved off
      if (variant % 2 == 0)
        s.pool_slot_stride += 1 + static_cast<i64>(variant / 2 % 15);
      else
        s.pool_offset += 1;
      return true;
    default: return false;
  }
}

}  // namespace kda::props::detail
