#pragma once
// The element-wise arithmetic of the chunked kernel's stage A (one chunk of 64 tokens, one value head),
// shared by the CUDA kernel (chunked_prefill.cu, on shared memory) and its CPU simulation
// (chunked_prefill_sim.cpp, on host arrays), so that both round at the same points to the same bits
// (decode_math.hpp). Only the tensor-core products (off-diagonal Aqk and Akk blocks, T's blocks below
// its diagonal, u and w from the inverse, stage B) are outside this header. Notation of kda-facts §2;
// alpha = exp(g) is the per-token decay, so that
// exp(Γi - Γj) = alpha_{j+1} ... alpha_i: every decay factor here is such a product over tokens
// j < t <= i of the chunk, never a quotient, so every factor is <= 1 (no positive exponent) and no
// row later than i enters row i (causal by construction). docs/cuda-prefill.md explains the choice.
#include <cstdint>

#include "kda/kernels/chunked_params.hpp"
#include "kda/kernels/detail/decode_access.hpp"

// Loops over register arrays must be unrolled on the device (else the arrays go to local memory), and so are
// the decay chains' row walks (compile-time addresses).
#if defined(__CUDA_ARCH__)
#define KDA_UNROLL _Pragma("unroll")
#else
#define KDA_UNROLL
#endif

namespace kda::kernels::stage_a {

// Row stride of the [64][K] fp32 tiles: K + 4 keeps the tensor-core fragment loads free of shared-memory
// bank conflicts (row g, column t of a fragment lands in bank 4g + t).
template <int K>
inline constexpr int kLd = K + 4;
// Row stride of Akk and Aqk: 64 + 4 floats, so that the kernel's stores of one column of rows r .. r + 3
// (the diagonal step) or r + g, g < 8 (the off-diagonal step) fall in different banks; the inverse's
// chains read a row with a broadcast, which any stride 16-byte aligned allows.
inline constexpr int kAld = kChunk + 4;
// Rows of the anchored key tile: for anchors r = 16, 32, 48, rows j < r, anchor r's rows from kb_first(r).
inline constexpr int kAnchoredRows = 16 + 32 + 48;
KDA_HD constexpr int kb_first(int r) { return r * (r - kSubBlock) / (2 * kSubBlock); }
// Each diagonal sub-block (rows r .. r + 15) splits into two 8-row halves: the halves' own 8 x 8
// triangles are element-wise, and the quadrant below them (rows r + 8 .. r + 15, columns r .. r + 7) is
// one tensor-core tile anchored at its first row a = r + 8 (both factors <= 1, as for the off-diagonal
// sub-blocks). Its operands, per sub-block, in the quadrant tile: rows 0 .. 7 q_i exp(Γi - Γa) and rows
// 8 .. 15 k_i exp(Γi - Γa) for i = a .. a + 7 (one A operand gives both Aqk and Akk), rows 16 .. 23
// k_j exp(Γa - Γj) for j = r .. r + 7 (the B operand).
inline constexpr int kHalfBlock = kSubBlock / 2;
inline constexpr int kQuadrantRows = 3 * kHalfBlock;
KDA_HD constexpr int quadrant_first(int blk) { return kQuadrantRows * blk; }

// The working tiles of one (chunk, value head).
struct Tile {
  float* q;      // [64][ld]: q as read; l2-normalised and scaled; rows >= 16 then times exp(Γi - Γr)
  float* k;      // [64][ld]: k as read; l2-normalised; rows >= 16 then times exp(Γi - Γr)
  float* alpha;  // [64][ld]: exp(g); then beta k exp(Γ), the right-hand side of w
  float* kb;     // [kAnchoredRows][ld]: k_j exp(Γr - Γj) for each anchor r and j < r
  float* quad;   // [4 kQuadrantRows][ld]: the quadrants' operands (quadrant_first)
  float* beta;   // [64]
  float* segments;  // [2][4][K]: per 16-row segment and key channel, its decay product; its first alpha
};

KDA_HD float activation(const TensorRef& t, std::int64_t e) {
  return access::widen_select(t.dtype, access::load_bits(t, e));
}

KDA_HD std::int64_t token_at(const TensorRef& t, const ChunkEntry& c, int i, std::int64_t head) {
  return c.row * t.stride[0] + (c.first + i) * t.stride[1] + head * t.stride[2];
}

// The gate's A = exp(A_log[hv]) (1 without A_log or without the gate in kernel).
KDA_HD float gate_A(const DecodeParams& p, std::int64_t hv) {
  return p.gate_in_kernel && p.A_log.data ? math::exp(access::load(p.A_log, hv * p.A_log.stride[0])) : 1.0f;
}

// The gate's mode, a template argument of the gates, so that the gate kernel decides it once, not per
// element (a branch per element would split its loop into one region per element).
enum class GateMode : std::uint8_t { given, lower_bound, softplus };
KDA_HD GateMode gate_mode(const DecodeParams& p) {
  return !p.gate_in_kernel ? GateMode::given : p.gate_lower_bound ? GateMode::lower_bound : GateMode::softplus;
}
// The gate's per-head factor: A for the lower-bound gate, the rate -A log2(e) of softplus_decay for the
// softplus gate (unused for a given g).
template <GateMode M>
KDA_HD float gate_factor(const DecodeParams& p, std::int64_t hv) {
  const float A = gate_A(p, hv);
  return M == GateMode::softplus ? math::mul(-A, 1.44269502162933349609375f) : A;
}

// The chunk's tokens in one column (head, channel) of an activation tensor (bf16, fp16 or fp32): token
// i's element lies at base + i * step bytes, so the 64-bit offset math is done once per column, not per
// element. bits(i) loads the element as stored.
struct TokenColumn {
  const std::byte* base;
  std::int64_t step;
  bool wide;  // fp32 (4 bytes) rather than 2
  KDA_HD std::uint32_t bits(int i) const { return bits_at(at(i)); }
  KDA_HD const std::byte* at(int i) const { return base + i * step; }
  // The element at `at` (a kernel that walks the column with a pointer of its own loads through this).
  KDA_HD std::uint32_t bits_at(const std::byte* at) const {
    return wide ? access::load_raw<std::uint32_t>(at) : access::load_raw<std::uint16_t>(at);
  }
};
KDA_HD TokenColumn token_column(const TensorRef& t, const ChunkEntry& c, std::int64_t head, std::int64_t d) {
  const bool wide = t.dtype == DType::f32;
  const std::int64_t size = wide ? 4 : 2;
  return {t.data + (token_at(t, c, 0, head) + d * t.stride[3]) * size, t.stride[1] * size, wide};
}

// Token i, key channel d of the chunk in two halves, so that the kernel can have many loads in flight
// before the first value is used: load_token_bits issues the loads (q and k as stored, from the
// channel's token_inputs), store_token_inputs widens them into the tiles. Per channel, not per token:
// the columns and the query/key head h of value head hv, which a kernel thread that keeps one channel
// computes once. Rows past the chunk's length hold q = k = 0: they contribute nothing.
struct TokenBits {
  std::uint32_t q = 0, k = 0;
  bool valid = false;
};
struct TokenInputs {
  TokenColumn q, k;
};

KDA_HD std::int64_t key_head(const DecodeParams& p, std::int64_t hv) { return hv / (p.HV / p.H); }

KDA_HD TokenInputs token_inputs(const DecodeParams& p, const ChunkEntry& c, std::int64_t h, int d) {
  return {token_column(p.q, c, h, d), token_column(p.k, c, h, d)};
}
// Every chunk has a token, so a row past its length loads the last one instead (never past the tensor)
// and is marked invalid: no branch around the loads.
KDA_HD int loadable_token(const ChunkEntry& c, int i) { return i < c.length ? i : c.length - 1; }
KDA_HD TokenBits load_token_bits(const TokenInputs& in, const ChunkEntry& c, int i) {
  const int at = loadable_token(c, i);
  return {in.q.bits(at), in.k.bits(at), i < c.length};
}
template <int K>
KDA_HD void store_token_inputs(const DecodeParams& p, const TokenBits& b, int i, int d, const Tile& t) {
  const int at = i * kLd<K> + d;
  t.q[at] = b.valid ? access::widen_select(p.q.dtype, b.q) : 0.0f;
  t.k[at] = b.valid ? access::widen_select(p.k.dtype, b.k) : 0.0f;
}

// The gates, a stage of their own (the gate kernel, at full occupancy): alpha = exp(g) of token i, key
// channel d, from the raw gate's bits (loaded through the channel's token_column of g), x = raw + dt_bias:
// as given (exp), the lower-bound gate lb * sigmoid(A x) (through exp_normal: it is never positive, and
// exp_normal has exp's bits wherever alpha >= 1.65e-38, 0 below, which gives the same outputs in fp32 as
// a subnormal decay) or the softplus gate's -A softplus(x) as one decay (math::softplus_decay, factor =
// gate_factor); 1 past the chunk's length (g = 0: such rows decay nothing). gate_alpha_of takes the raw
// gate widened (a kernel that widens two at a time), gate_alpha its bits as stored.
template <int K>
KDA_HD float channel_bias(const DecodeParams& p, std::int64_t hv, int d) {
  return p.gate_in_kernel && p.dt_bias.data ? access::load(p.dt_bias, (hv * K + d) * p.dt_bias.stride[0]) : 0.0f;
}
KDA_HD std::uint32_t gate_bits(const TokenColumn& g, const ChunkEntry& c, int i) {
  return g.bits(loadable_token(c, i));
}
// gate_decay is a token's alpha inside the chunk's length (a kernel's walk of a full chunk needs no select).
template <GateMode M>
KDA_HD float gate_decay(const DecodeParams& p, float factor, float bias, float raw) {
  if constexpr (M == GateMode::given)
    return math::exp(raw);
  else if constexpr (M == GateMode::lower_bound)
    return math::exp_normal(math::mul(p.lower_bound, math::sigmoid(math::mul(factor, math::add(raw, bias)))));
  else
    return math::softplus_decay(math::add(raw, bias), factor);
}
template <GateMode M>
KDA_HD float gate_alpha_of(const DecodeParams& p, float factor, float bias, const ChunkEntry& c, int i, float raw) {
  return math::select(i < c.length, gate_decay<M>(p, factor, bias, raw), 1.0f);
}
template <GateMode M>
KDA_HD float gate_alpha(const DecodeParams& p, float factor, float bias, const ChunkEntry& c, int i,
                        std::uint32_t bits) {
  return gate_alpha_of<M>(p, factor, bias, c, i, access::widen_select(p.g.dtype, bits));
}

// beta of token i (0 past the chunk's length): as given, or factor * sigmoid(logit).
KDA_HD float load_beta(const DecodeParams& p, const ChunkEntry& c, std::int64_t hv, int i) {
  if (i >= c.length) return 0.0f;
  const float b = activation(p.beta, token_at(p.beta, c, i, hv));
  return p.beta_sigmoid ? math::mul(p.beta_factor, math::sigmoid(b)) : b;
}

// Row i, column col of the right-hand side of u: beta_i v_i (0 past the chunk's length), in two halves
// as for the token inputs: value_bits issues the load (from the column's token_column of v), value_rhs
// widens and scales.
KDA_HD std::uint32_t value_bits(const TokenColumn& v, const ChunkEntry& c, int i) {
  return v.bits(loadable_token(c, i));
}
// value_rhs_of takes v widened (a kernel that widens bf16 by a shift).
KDA_HD float value_rhs_of(const ChunkEntry& c, float beta, int i, float v) {
  const float rhs = math::mul(beta, v);
  return i < c.length ? rhs : 0.0f;
}
KDA_HD float value_rhs(const DecodeParams& p, const ChunkEntry& c, float beta, int i, std::uint32_t bits) {
  return value_rhs_of(c, beta, i, access::widen_select(p.v.dtype, bits));
}

// l2norm (or the scale alone) of one row x: its K / 4 groups of four consecutive channels each an fma chain
// of squares (group_square_sum), the groups then added as a tree whose level n adds group l + n to group l
// (n = K / 8, ..., 1): the butterfly of a warp whose lane l holds group l (the kernel's loaders hold whole
// rows so, four channels a lane: the sum needs no pass over the tiles); norm_factor = (1 / sqrt(sum + 1e-6))
// * scale with l2norm, else scale; every channel is then multiplied by it.
KDA_HD float group_square_sum(const float (&x)[4]) {
  float sum = 0.0f;
  for (int c = 0; c < 4; ++c) sum = math::fma(x[c], x[c], sum);
  return sum;
}
template <int K>
KDA_HD float square_sum(const float* x) {
  float level[K / 4];
  for (int l = 0; l < K / 4; ++l) level[l] = group_square_sum({x[4 * l], x[4 * l + 1], x[4 * l + 2], x[4 * l + 3]});
  for (int n = K / 8; n >= 1; n /= 2)
    for (int l = 0; l < n; ++l) level[l] = math::add(level[l], level[l + n]);
  return level[0];
}
KDA_HD float norm_factor(float sum, float scale, bool l2norm) {
  return l2norm ? math::mul(math::div(1.0f, math::sqrt(math::add(sum, 1e-6f))), scale) : scale;
}

// Diagonal sub-block `blk`, row I = 16 blk + i, split over kDiagonalParts threads by channel: part p
// keeps channels d = 64 (m / 4) + 4 p + m % 4, m < K / 16 (groups of four, so that a kernel loads them
// with one 16-byte access and the sixteen parts' groups are 256 contiguous bytes): for every column
// J = 16 blk + j with j <= i, the part's share of q_I . k_J exp(ΓI - ΓJ) and k_I . k_J exp(ΓI - ΓJ),
// each an fma chain in m order, with exp(ΓI - ΓJ) = alpha_{J+1} ... alpha_I built column by column from
// j = i down (entries j > i are left as computed and must be ignored). The row's q and k stay in
// registers; per column only k_J and alpha_{J+1} are loaded, once for all the rows a thread keeps (the
// kernel keeps two: half the shared-memory traffic of one, which bound this step). The parts then add
// as a tree, pairs first (add_parts; the kernel's butterfly shuffles). Only the columns of the row's own
// 8-row half are kept: the quadrant below the halves is a tensor-core tile (kHalfBlock).
inline constexpr int kDiagonalParts = 16;

KDA_HD float add_parts(const float (&s)[kDiagonalParts]) {
  float level[kDiagonalParts];
  for (int p = 0; p < kDiagonalParts; ++p) level[p] = s[p];
  for (int n = kDiagonalParts / 2; n >= 1; n /= 2)
    for (int p = 0; p < n; ++p) level[p] = math::add(level[2 * p], level[2 * p + 1]);
  return level[0];
}

// Four consecutive floats from a 16-byte aligned address (one 16-byte load on the device).
KDA_HD void load4(const float* at, float* x) {
#if defined(__CUDA_ARCH__)
  const float4 v = *reinterpret_cast<const float4*>(at);
  x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
#else
  for (int c = 0; c < 4; ++c) x[c] = at[c];
#endif
}
KDA_HD int diagonal_channel(int part, int group) { return 4 * kDiagonalParts * group + 4 * part; }

// A part's channels of R rows of one diagonal sub-block (the rows' q and k, and their running decays).
template <int K, int R>
struct DiagonalRows {
  static constexpr int M = K / kDiagonalParts;
  float q[R][M], k[R][M], e[R][M];
};

// Row `row` of the rows: q_I and k_I of the part's channels, e = 1.
template <int K, int R>
KDA_HD void diagonal_row(const Tile& t, int I, int part, int row, DiagonalRows<K, R>& x) {
  constexpr int M = K / kDiagonalParts, LD = kLd<K>;
  KDA_UNROLL
  for (int m0 = 0; m0 < M; m0 += 4) {
    load4(&t.q[I * LD + diagonal_channel(part, m0 / 4)], &x.q[row][m0]);
    load4(&t.k[I * LD + diagonal_channel(part, m0 / 4)], &x.k[row][m0]);
  }
  KDA_UNROLL
  for (int m = 0; m < M; ++m) x.e[row][m] = 1.0f;
}

// One column J of the rows' diagonal sub-block (walked j = 15, 14, ..., 0), row r decaying when
// decays[r] (J < its row; no row decays unless the last does): each decaying row's e (the running decay
// alpha_{J+1} ... alpha_I of the part's channels) steps one token, then each row's partial sums of
// q_I k_J e and k_I k_J e over the part's channels in m order. In two steps, so that a kernel can issue
// the loads of more than one column before the arithmetic of the first: DiagonalColumn::load takes the
// part's channels of k_J and alpha_{J+1}, accumulate the rest.
template <int K, int R>
struct DiagonalColumn {
  static constexpr int M = K / kDiagonalParts;
  float a[M], k[M];
  KDA_HD void load(const Tile& t, int J, const bool (&decays)[R], int part) {
    constexpr int LD = kLd<K>;
    KDA_UNROLL
    for (int m0 = 0; m0 < M; m0 += 4) {
      KDA_UNROLL
      for (int c = 0; c < 4; ++c) a[m0 + c] = 0.0f;
      if (decays[R - 1]) load4(&t.alpha[(J + 1) * LD + diagonal_channel(part, m0 / 4)], &a[m0]);  // J + 1 < 64 then
      load4(&t.k[J * LD + diagonal_channel(part, m0 / 4)], &k[m0]);
    }
  }
  KDA_HD void accumulate(const bool (&decays)[R], DiagonalRows<K, R>& x, float (&sq)[R], float (&sk)[R]) const {
    KDA_UNROLL
    for (int r = 0; r < R; ++r) sq[r] = 0.0f, sk[r] = 0.0f;
    KDA_UNROLL
    for (int m = 0; m < M; ++m)
      KDA_UNROLL
      for (int r = 0; r < R; ++r) {
        if (decays[r]) x.e[r][m] = math::mul(x.e[r][m], a[m]);
        const float y = math::mul(k[m], x.e[r][m]);
        sq[r] = math::fma(x.q[r][m], y, sq[r]);
        sk[r] = math::fma(x.k[r][m], y, sk[r]);
      }
  }
};
template <int K, int R>
KDA_HD void diagonal_column(const Tile& t, int J, const bool (&decays)[R], int part, DiagonalRows<K, R>& x,
                            float (&sq)[R], float (&sk)[R]) {
  DiagonalColumn<K, R> column;
  column.load(t, J, decays, part);
  column.accumulate(decays, x, sq, sk);
}

// The part's partial sums aq[j] and ak[j] of row i of diagonal sub-block blk (I = 16 blk + i), for the
// columns of the row's 8-row half, j = i down to its first row (a walk from a later column, as the
// kernel's, leaves e alone until j < i: the same bits). The other entries are not written.
template <int K>
KDA_HD void diagonal_partials(const Tile& t, int blk, int i, int part, float (&aq)[kSubBlock],
                              float (&ak)[kSubBlock]) {
  DiagonalRows<K, 1> x;
  diagonal_row<K>(t, kSubBlock * blk + i, part, 0, x);
  for (int j = i; j >= i / kHalfBlock * kHalfBlock; --j) {
    const bool decays[1] = {j < i};
    float sq[1], sk[1];
    diagonal_column<K>(t, kSubBlock * blk + j, decays, part, x, sq, sk);
    aq[j] = sq[0], ak[j] = sk[0];
  }
}

// A tf32 tensor-core operand as the tensor core reads an fp32 register: its top 19 bits (sign, exponent,
// 10 fraction bits), the low 13 ignored, so truncated toward zero (Inf stays Inf, NaN NaN).
// tests/gpu/tensor_core_hardware_test checks this on the device. The kernel stores the fp32 value itself and
// leaves the truncation to the tensor core (rounding it first cost five integer instructions per
// operand, a fifth of the decay chains'); the simulation truncates here.
KDA_HD float to_tf32(float x) {
#if defined(__CUDA_ARCH__)
  return x;
#else
  return math::bits_to_float(math::float_to_bits(x) & 0xffffe000u);
#endif
}

// The decay products of key channel d, each a product of alphas in token order, computed by 16-row
// segment s (rows r = 16 s .. r + 15) so that a kernel runs a thread per (channel, segment), in two
// passes with a barrier between them. segment_product (pass 1) keeps each segment's product
// T_s = alpha_r (alpha_{r+1} ... alpha_{r+15}) and its first alpha alpha_r. chain_segment (pass 2), from
// those and the segment's own rows, with G_s = T_0 ... T_{s-1} (ascending) and H_s = T_3 ... T_{s+1}
// (descending) and suf_i = alpha_{i+1} ... alpha_{r+15} (built from the segment's end), writes:
//   kg_i = (k_i suf_i) H_s                                          (k exp(Γlast - Γi))
//   kb_i = (k_i suf_i) F, F = (T_{s+1} ... T_{r'/16-1}) alpha_{r'},   for each anchor r' = 16, 32, 48 > i
//                                                                    (k exp(Γr' - Γi), the anchored keys)
//   rows i < a = r + 8: the quadrant's key k_i suf8_i, suf8_i = alpha_{i+1} ... alpha_a   (k exp(Γa - Γi))
//   qg_i = q_i gamma_i,  alpha_i <- beta_i (k_i gamma_i), gamma_i = (G_s alpha_r) local_i   (exp(Γi))
//   rows i >= 16: q_i, k_i <- q_i local_i, k_i local_i, local_i = alpha_{r+1} ... alpha_i   (exp(Γi - Γr))
//   rows i >= a: the quadrant's q_i local8_i, k_i local8_i, local8_i = alpha_{a+1} ... alpha_i (exp(Γi - Γa))
//   decay = G_3 T_3 = exp(Γlast) (segment 3)
// Every factor is a product of alphas <= 1 (no positive exponent, no row after i). qg and kg are rows of
// stride K (fp16 bits). The anchored rows (kb, the quadrants' operands, and q and k from row 16 on) are
// tensor-core operands and nothing else: stored as tf32 operands (to_tf32).
inline constexpr int kSegments = kChunk / kSubBlock;

// The segment's alpha and k of key channel d, rows r .. r + 15, read from the tiles into registers once a
// pass rather than once a walk (chain_segment walks twice), since the chains wait on the shared-memory
// queue. Kept across the barrier between the passes, 14 of them would be spilled.
template <int K>
struct SegmentColumn {
  float alpha[kSubBlock], k[kSubBlock];
  KDA_HD void load(const Tile& t, int d, int seg) {
    const int at0 = kSubBlock * seg * kLd<K> + d;
    KDA_UNROLL
    for (int n = 0; n < kSubBlock; ++n) alpha[n] = t.alpha[at0 + n * kLd<K>], k[n] = t.k[at0 + n * kLd<K>];
  }
  // alpha alone: segment_product's operands (a kernel may run it while the k tile is being written).
  KDA_HD void load_alpha(const Tile& t, int d, int seg) {
    const int at0 = kSubBlock * seg * kLd<K> + d;
    KDA_UNROLL
    for (int n = 0; n < kSubBlock; ++n) alpha[n] = t.alpha[at0 + n * kLd<K>];
  }
};

template <int K>
KDA_HD void segment_product(const Tile& t, const SegmentColumn<K>& column, int d, int seg) {
  float local = 1.0f;
  KDA_UNROLL
  for (int n = 1; n < kSubBlock; ++n) local = math::mul(local, column.alpha[n]);
  t.segments[seg * K + d] = math::mul(column.alpha[0], local);
  t.segments[(kSegments + seg) * K + d] = column.alpha[0];
}

template <int K>
KDA_HD void chain_segment(const Tile& t, const SegmentColumn<K>& column, int d, int seg, std::uint16_t* qg,
                          std::uint16_t* kg, float* decay) {
  constexpr int LD = kLd<K>;
  const int r = kSubBlock * seg;
  auto total = [&](int s) { return t.segments[s * K + d]; };
  // A fixed trip count, the segment's own products selected: a kernel's loops over seg would be
  // run-time loops (unrolled with remainders: hundreds of instructions for at most three products).
  float before = 1.0f, after = 1.0f;
  KDA_UNROLL
  for (int s = 0; s < kSegments; ++s)
    if (s < seg) before = math::mul(before, total(s));
  KDA_UNROLL
  for (int s = kSegments - 1; s >= 0; --s)
    if (s > seg) after = math::mul(after, total(s));
  // Downward: kg and the anchored keys of the segment's rows.
  // F of anchor r' = 16 (a + 1), for a >= seg (compile-time indices: a kernel keeps them in registers).
  float anchor[kSegments - 1];
  KDA_UNROLL
  for (int a = 0; a < kSegments - 1; ++a) {
    float between = 1.0f;
    KDA_UNROLL
    for (int s = 1; s <= a; ++s)
      if (s > seg) between = math::mul(between, total(s));
    anchor[a] = math::mul(between, t.segments[(kSegments + a + 1) * K + d]);
  }
  // The segment's rows by offset n from row r (tile element at0 + n LD), each walk split at the half-block
  // and unrolled, so that every address is a compile-time offset and no condition depends on the row (rolled,
  // a row took 24 to 34 instructions, up to 9 of them address and loop arithmetic: 1,038 a thread, not 638).
  const int at0 = r * LD + d;
  float* const quad = t.quad + quadrant_first(seg) * LD + d;
  std::uint16_t* const qg0 = qg + r * K + d;
  std::uint16_t* const kg0 = kg + r * K + d;
  float suf = 1.0f, suf8 = 1.0f;
  // Downward: kg and the anchored keys of row r + n (suf = alpha_{r+n+1} ... alpha_{r+15}).
  const auto keys = [&](int n, float k) {
    const float ks = math::mul(k, suf);
    kg0[n * K] = access::f32_to_f16(math::mul(ks, after));
    KDA_UNROLL
    for (int a = 0; a < kSegments - 1; ++a)
      if (a >= seg) t.kb[kb_first(kSubBlock * (a + 1)) * LD + at0 + n * LD] = to_tf32(math::mul(ks, anchor[a]));
  };
  KDA_UNROLL
  for (int n = kSubBlock - 1; n >= kHalfBlock; --n) {
    keys(n, column.k[n]);
    suf = math::mul(suf, column.alpha[n]);
  }
  suf8 = math::mul(suf8, column.alpha[kHalfBlock]);  // alpha_a, suf8's first factor
  KDA_UNROLL
  for (int n = kHalfBlock - 1; n >= 0; --n) {
    const float k = column.k[n], alpha_n = column.alpha[n];
    quad[(2 * kHalfBlock + n) * LD] = to_tf32(math::mul(k, suf8));
    keys(n, k);
    suf = math::mul(suf, alpha_n);
    suf8 = math::mul(suf8, alpha_n);
  }
  // Upward: qg, the right-hand side of w and the anchored q and k rows of row r + n (gamma = exp(Γ)).
  const float first = math::mul(before, column.alpha[0]);
  float local = 1.0f, local8 = 1.0f;
  float beta[kSubBlock];  // the segment's betas, four to a load (the same for every channel)
  KDA_UNROLL
  for (int n = 0; n < kSubBlock; n += 4) load4(&t.beta[r + n], &beta[n]);
  const auto rows = [&](int n, float q, float k, float gamma) {
    qg0[n * K] = access::f32_to_f16(math::mul(q, gamma));
    t.alpha[at0 + n * LD] = math::mul(beta[n], math::mul(k, gamma));
    if (seg > 0) t.q[at0 + n * LD] = to_tf32(math::mul(q, local)), t.k[at0 + n * LD] = to_tf32(math::mul(k, local));
  };
  rows(0, t.q[at0], column.k[0], first);
  KDA_UNROLL
  for (int n = 1; n < kHalfBlock; ++n) {
    const float q = t.q[at0 + n * LD], k = column.k[n];
    local = math::mul(local, column.alpha[n]);
    rows(n, q, k, math::mul(first, local));
  }
  KDA_UNROLL
  for (int n = kHalfBlock; n < kSubBlock; ++n) {
    const float q = t.q[at0 + n * LD], k = column.k[n], alpha_n = column.alpha[n];
    local = math::mul(local, alpha_n);
    if (n > kHalfBlock) local8 = math::mul(local8, alpha_n);
    quad[(n - kHalfBlock) * LD] = to_tf32(math::mul(q, local8));
    quad[n * LD] = to_tf32(math::mul(k, local8));
    rows(n, q, k, math::mul(first, local));
  }
  if (seg == kSegments - 1) *decay = math::mul(before, total(seg));
}

// T = (I + Akk)^-1 (unit lower triangular) by 16-row blocks (docs/cuda-prefill.md, step 6): the diagonal
// blocks' inverses here, in fp32, rounded to fp16; the blocks below them on fp16 tensor cores (the kernel's
// inverse_levels, the simulation's simulate_inverse). Akk's strictly lower entries at akk[akk_at(i, j)]
// (the entries on and above the diagonal are not read).
KDA_HD constexpr int akk_at(int i, int j) { return i * kAld + j; }

// Column c of diagonal block b's inverse (rows 16 b + r of T's column 16 b + c, r = 0 .. 15), by forward
// substitution: x_r = -(sum_{m < r} Akk[r][m] x_m) for r > c, one fma per term in ascending m (the terms of
// the rows m < c, where x_m = 0, add nothing to the chain), x_c = 1 and x_r = 0 for r < c.
KDA_HD void inverse_diagonal_column(const float* akk, int b, int c, float (&x)[kSubBlock]) {
  KDA_UNROLL
  for (int r = 0; r < kSubBlock; ++r) x[r] = r == c ? 1.0f : 0.0f;
  KDA_UNROLL
  for (int r = 1; r < kSubBlock; ++r) {
    const float* row = akk + akk_at(kSubBlock * b + r, kSubBlock * b);
    float s = 0.0f;
    KDA_UNROLL
    for (int m = 0; m < r; m += 4) {
      float a[4];  // Akk[r][m ..]; the entries from the diagonal on are not Akk's, and unused
      load4(row + m, a);
      KDA_UNROLL
      for (int q = 0; q < 4 && m + q < r; ++q) s = math::fma(a[q], x[m + q], s);
    }
    x[r] = r > c ? -s : x[r];
  }
}

}  // namespace kda::kernels::stage_a
