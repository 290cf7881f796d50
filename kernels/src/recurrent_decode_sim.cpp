// The simulation mirrors recurrent_decode.cu phase by phase. Where the kernel's 32 lanes run one
// statement each, the simulation loops over lanes; where the kernel exchanges values through
// __shfl_xor_sync, the simulation pairs the same lanes. Compiled with -ffp-contract=off (CMakeLists),
// so every operation rounds where decode_math.hpp says.
#include <array>

#include "kda/kernels/detail/decode_access.hpp"
#include "kda/kernels/recurrent_decode_sim.hpp"

namespace kda::kernels {

namespace {

using access::load;
using access::store;

constexpr int kWarp = 32;
constexpr int kMaxElements = 8;  // per lane and row: 4 key channels x 2 chunks
constexpr int kMaxSteps = 16;

using Lanes = std::array<float, kWarp>;
using LaneElements = std::array<std::array<float, kMaxElements>, kWarp>;

// The butterfly of __shfl_xor_sync over groups of `width` lanes: every lane ends with its group's sum,
// each addition pairing the same two values as on the device (a + b and b + a round alike).
void butterfly_sum(Lanes& x, int width) {
  for (int m = width / 2; m >= 1; m /= 2) {
    const Lanes before = x;
    for (int l = 0; l < kWarp; ++l) x[l] = math::add(before[l], before[l ^ m]);
  }
}

// One warp: sequence n, value head hv, the value channels of row group `group`.
class WarpSim {
 public:
  WarpSim(const DecodeParams& p, std::int64_t head, std::int64_t group) : p_(p) {
    const WarpSplit& s = p.split;
    L_ = s.lanes_per_row, E_ = 4 * s.chunks, steps_ = s.steps;
    hv_ = head % p.HV, n_ = head / p.HV, row_base_ = group * s.rows_per_warp();
  }

  void run() {
    const access::SequenceRange seq = access::sequence_range(p_, n_);
    const bool verify = access::stores_token_states(p_);
    const access::HeadStates hs = verify ? access::verify_head_states(p_, n_, hv_) : access::head_states(p_, n_, hv_);
    if (hs.padding) {
      for (std::int64_t t = 0; t < seq.length; ++t) write_outputs(seq.row, seq.first + t, Lanes{});
      return;
    }
    load_state(hs.in);
    load_gate_parameters();
    for (std::int64_t t = 0; t < seq.length; ++t) {
      token(seq.row, seq.first + t);
      if (verify) store_state(access::token_state_head(p_, n_, t, hv_));
    }
    store_state(hs.out);
  }

 private:
  std::int64_t key(int lane, int e) const { return (e / 4) * 4 * L_ + 4 * (lane % L_) + e % 4; }
  std::int64_t row(int lane, int step) const { return row_base_ + step * (kWarp / L_) + lane / L_; }

  void load_state(const std::byte* head) {
    const TensorRef& in = p_.state_in;
    for (int l = 0; l < kWarp; ++l)
      for (int s = 0; s < steps_; ++s)
        for (int e = 0; e < E_; ++e) {
          const std::int64_t v = row(l, s), k = key(l, e);
          S_[s][l][e] = head && v < p_.V && k < p_.K ? load(in, access::state_offset(in, v, k), head) : 0.0f;
        }
  }

  void store_state(std::byte* head) const {
    if (!head) return;
    const TensorRef& out = p_.state_out;
    for (int l = 0; l < kWarp; ++l)
      for (int s = 0; s < steps_; ++s)
        for (int e = 0; e < E_; ++e) {
          const std::int64_t v = row(l, s), k = key(l, e);
          if (v < p_.V && k < p_.K) store(out, access::state_offset(out, v, k), S_[s][l][e], head);
        }
  }

  // A = exp(A_log[hv]) and each lane's dt_bias, read once per warp.
  void load_gate_parameters() {
    A_ = p_.gate_in_kernel && p_.A_log.data ? math::exp(load(p_.A_log, hv_ * p_.A_log.stride[0])) : 1.0f;
    for (int l = 0; l < kWarp; ++l)
      for (int e = 0; e < E_; ++e) {
        const std::int64_t k = key(l, e);
        bias_[l][e] = p_.gate_in_kernel && p_.dt_bias.data && k < p_.K
                          ? load(p_.dt_bias, (hv_ * p_.K + k) * p_.dt_bias.stride[0])
                          : 0.0f;
      }
  }

  // Lane l's inputs for its key channels: q, k (l2-normalised, q scaled) and the decay exp(g). The kernel
  // computes each channel's q, k and decay once per block and shares them through shared memory: the
  // same bits, whichever thread computes them.
  void load_token_inputs(std::int64_t b, std::int64_t t) {
    const std::int64_t h = hv_ / (p_.HV / p_.H);
    const std::int64_t qk_at = b * p_.q.stride[0] + t * p_.q.stride[1] + h * p_.q.stride[2];
    const std::int64_t kk_at = b * p_.k.stride[0] + t * p_.k.stride[1] + h * p_.k.stride[2];
    const std::int64_t g_at = b * p_.g.stride[0] + t * p_.g.stride[1] + hv_ * p_.g.stride[2];
    for (int l = 0; l < kWarp; ++l)
      for (int e = 0; e < E_; ++e) {
        const std::int64_t k = key(l, e);
        const bool valid = k < p_.K;
        q_[l][e] = valid ? activation(p_.q, qk_at + k * p_.q.stride[3]) : 0.0f;
        k_[l][e] = valid ? activation(p_.k, kk_at + k * p_.k.stride[3]) : 0.0f;
        alpha_[l][e] = valid ? math::exp(gate(activation(p_.g, g_at + k * p_.g.stride[3]), bias_[l][e])) : 0.0f;
      }
    if (p_.l2norm) {
      l2_normalize(q_, p_.scale), l2_normalize(k_, 1.0f);
    } else {
      for (auto& lane : q_)
        for (int e = 0; e < E_; ++e) lane[e] = math::mul(lane[e], p_.scale);
    }
  }

  static float activation(const TensorRef& t, std::int64_t e) { return access::widen(t.dtype, access::load_bits(t, e)); }

  float gate(float raw, float bias) const {
    if (!p_.gate_in_kernel) return raw;
    const float x = math::add(raw, bias);
    if (p_.gate_lower_bound) return math::mul(p_.lower_bound, math::sigmoid(math::mul(A_, x)));
    return math::mul(-A_, math::softplus(x));
  }

  // x / sqrt(sum x^2 + 1e-6) over each row group's lanes, times scale: one division per lane.
  void l2_normalize(LaneElements& x, float scale) const {
    Lanes sum{};
    for (int l = 0; l < kWarp; ++l)
      for (int e = 0; e < E_; ++e) sum[l] = math::fma(x[l][e], x[l][e], sum[l]);
    butterfly_sum(sum, L_);
    for (int l = 0; l < kWarp; ++l) {
      const float factor = math::mul(math::div(1.0f, math::sqrt(math::add(sum[l], 1e-6f))), scale);
      for (int e = 0; e < E_; ++e) x[l][e] = math::mul(x[l][e], factor);
    }
  }

  void token(std::int64_t b, std::int64_t t) {
    load_token_inputs(b, t);
    float beta = activation(p_.beta, b * p_.beta.stride[0] + t * p_.beta.stride[1] + hv_ * p_.beta.stride[2]);
    if (p_.beta_sigmoid) beta = math::mul(p_.beta_factor, math::sigmoid(beta));
    const std::int64_t v_at = b * p_.v.stride[0] + t * p_.v.stride[1] + hv_ * p_.v.stride[2];
    std::array<Lanes, kMaxSteps> out{};
    for (int s = 0; s < steps_; ++s) {
      auto& S = S_[s];
      Lanes kS{}, o{};
      for (int l = 0; l < kWarp; ++l)
        for (int e = 0; e < E_; ++e) {
          S[l][e] = math::mul(alpha_[l][e], S[l][e]);
          kS[l] = math::fma(k_[l][e], S[l][e], kS[l]);
        }
      butterfly_sum(kS, L_);
      for (int l = 0; l < kWarp; ++l) {
        const std::int64_t v = row(l, s);
        const float value = v < p_.V ? activation(p_.v, v_at + v * p_.v.stride[3]) : 0.0f;
        const float u = math::mul(beta, math::sub(value, kS[l]));
        for (int e = 0; e < E_; ++e) {
          S[l][e] = math::fma(k_[l][e], u, S[l][e]);
          o[l] = math::fma(q_[l][e], S[l][e], o[l]);
        }
      }
      butterfly_sum(o, L_);
      out[s] = o;
    }
    // Lane (half, s) writes row group s of its half: the value every lane of that half holds.
    Lanes mine{};
    for (int l = 0; l < kWarp; ++l)
      if (l % L_ < steps_) mine[l] = out[l % L_][l];
    write_outputs(b, t, mine);
  }

  void write_outputs(std::int64_t b, std::int64_t t, const Lanes& mine) const {
    const std::int64_t at = b * p_.o.stride[0] + t * p_.o.stride[1] + hv_ * p_.o.stride[2];
    for (int l = 0; l < kWarp; ++l) {
      const int s = l % L_;
      const std::int64_t v = row(l, s);
      if (s < steps_ && v < p_.V) store(p_.o, at + v * p_.o.stride[3], mine[l]);
    }
  }

  const DecodeParams& p_;
  int L_ = 32, E_ = 4, steps_ = 8;
  std::int64_t n_ = 0, hv_ = 0, row_base_ = 0;
  std::array<LaneElements, kMaxSteps> S_{};  // S_[step][lane][element]: the lane's registers
  LaneElements q_{}, k_{}, alpha_{}, bias_{};
  float A_ = 1.0f;
};

}  // namespace

void simulate_recurrent_decode(const DecodeParams& params) {
  const std::int64_t rows = params.split.rows_per_warp();
  const std::int64_t groups = (params.V + rows - 1) / rows;
  for (std::int64_t head = 0; head < params.N * params.HV; ++head)
    for (std::int64_t group = 0; group < groups; ++group) WarpSim(params, head, group).run();
}

}  // namespace kda::kernels
