// The simulation mirrors chunked_prefill.cu stage by stage. Element-wise steps call the same functions
// (detail/chunked_stage_a.hpp); where the kernel runs a chain of mma k-steps, the simulation runs the
// same chain through the Hopper tensor-core model (tensor_core_model.hpp) on the same tf32 or fp16
// operands, so that both give the same bits. Compiled with -ffp-contract=off (CMakeLists), so every
// operation rounds where decode_math.hpp says.
#include <vector>

#include "kda/kernels/chunked_prefill_sim.hpp"
#include "kda/kernels/detail/chunked_stage_a.hpp"
#include "kda/kernels/tensor_core_model.hpp"

namespace kda::kernels {

namespace {

using namespace stage_a;
using access::f16_to_f32;

using tensor_core::mma_sum;
using tensor_core::Operand;

std::int64_t slot_of(const ChunkedParams& P, std::int64_t c, std::int64_t hv) { return c * P.call.HV + hv; }

// x rounded to fp16 (nearest even), as the kernel stores a tensor-core operand, and widened back.
float fp16_rounded(float x) { return f16_to_f32(access::f32_to_f16(x)); }

template <int K, GateMode M>
void gates(const ChunkedParams& P, std::int64_t c, std::int64_t hv) {
  const DecodeParams& p = P.call;
  const ChunkEntry& e = P.chunks[c];
  float* alpha = P.work.alpha + slot_of(P, c, hv) * kChunk * K;
  const float factor = gate_factor<M>(p, hv);
  for (int d = 0; d < K; ++d) {
    const TokenColumn g = token_column(p.g, e, hv, d);
    const float bias = channel_bias<K>(p, hv, d);
    for (int i = 0; i < kChunk; ++i) alpha[i * K + d] = gate_alpha<M>(p, factor, bias, e, i, gate_bits(g, e, i));
  }
}

template <int K>
void gates(const ChunkedParams& P, std::int64_t c, std::int64_t hv) {
  switch (gate_mode(P.call)) {
    case GateMode::given: return gates<K, GateMode::given>(P, c, hv);
    case GateMode::lower_bound: return gates<K, GateMode::lower_bound>(P, c, hv);
    case GateMode::softplus: return gates<K, GateMode::softplus>(P, c, hv);
  }
}

template <int K>
void prepare(const ChunkedParams& P, std::int64_t c, std::int64_t hv) {
  constexpr int LD = kLd<K>;
  const DecodeParams& p = P.call;
  const ChunkEntry& e = P.chunks[c];
  std::vector<float> q(kChunk * LD), k(kChunk * LD), alpha(kChunk * LD), kb(kAnchoredRows * LD), beta(kChunk);
  std::vector<float> quad(kSegments * kQuadrantRows * LD), segments(2 * kSegments * K);
  std::vector<float> akk(kChunk * kAld, 0.0f), aqk(kChunk * kAld, 0.0f);
  const Tile t{q.data(), k.data(), alpha.data(), kb.data(), quad.data(), beta.data(), segments.data()};

  const float* gated = P.work.alpha + slot_of(P, c, hv) * kChunk * K;
  for (int d = 0; d < K; ++d) {
    const TokenInputs columns = token_inputs(p, e, key_head(p, hv), d);
    for (int i = 0; i < kChunk; ++i) {
      store_token_inputs<K>(p, load_token_bits(columns, e, i), i, d, t);
      alpha[i * LD + d] = gated[i * K + d];
    }
  }
  for (int i = 0; i < kChunk; ++i) beta[i] = load_beta(p, e, hv, i);
  for (float* row : {q.data(), k.data()})
    for (int i = 0; i < kChunk; ++i) {
      float* x = row + i * LD;
      const float factor = norm_factor(square_sum<K>(x), row == q.data() ? p.scale : 1.0f, p.l2norm);
      for (int d = 0; d < K; ++d) x[d] = math::mul(x[d], factor);
    }

  // Diagonal sub-blocks' 8 x 8 triangles (columns of the row's half), element-wise: the parts' partial sums
  // added as a tree (add_parts).
  for (int blk = 0; blk < kChunk / kSubBlock; ++blk)
    for (int i = 0; i < kSubBlock; ++i) {
      float pq[kDiagonalParts][kSubBlock], pk[kDiagonalParts][kSubBlock];
      for (int part = 0; part < kDiagonalParts; ++part) diagonal_partials<K>(t, blk, i, part, pq[part], pk[part]);
      for (int j = i / kHalfBlock * kHalfBlock; j <= i; ++j) {
        float sq[kDiagonalParts], sk[kDiagonalParts];
        for (int part = 0; part < kDiagonalParts; ++part) sq[part] = pq[part][j], sk[part] = pk[part][j];
        const int I = kSubBlock * blk + i, J = kSubBlock * blk + j;
        aqk[I * kAld + J] = add_parts(sq);
        if (j < i) akk[I * kAld + J] = math::mul(beta[I], add_parts(sk));
      }
    }

  const std::int64_t slot = slot_of(P, c, hv);
  std::uint16_t* qg = P.work.qg + slot * kChunk * K;
  std::uint16_t* kg = P.work.kg + slot * kChunk * K;
  SegmentColumn<K> column;
  for (int seg = 0; seg < kSegments; ++seg)
    for (int d = 0; d < K; ++d) column.load(t, d, seg), segment_product<K>(t, column, d, seg);
  for (int seg = 0; seg < kSegments; ++seg)
    for (int d = 0; d < K; ++d) column.load(t, d, seg), chain_segment<K>(t, column, d, seg, qg, kg, P.work.decay + slot * K + d);

  // The diagonal sub-blocks' quadrants on tensor cores: rows a .. a + 7 (a = r + 8) by columns r .. r + 7,
  // anchored at a (quadrant_first).
  for (int blk = 0; blk < kSegments; ++blk)
    for (int g = 0; g < kHalfBlock; ++g)
      for (int n = 0; n < kHalfBlock; ++n) {
        const float* rows = &quad[quadrant_first(blk) * LD];
        const int I = kSubBlock * blk + kHalfBlock + g, J = kSubBlock * blk + n;
        auto key = [&](int d) { return rows[(2 * kHalfBlock + n) * LD + d]; };
        aqk[I * kAld + J] = mma_sum(Operand::tf32, K, 0.0f, [&](int d) { return rows[g * LD + d]; }, key);
        akk[I * kAld + J] =
            math::mul(beta[I], mma_sum(Operand::tf32, K, 0.0f, [&](int d) { return rows[(kHalfBlock + g) * LD + d]; }, key));
      }

  // Off-diagonal sub-blocks (row block rb > column block) on tensor cores: rows r.. r+15 anchored at r.
  for (int r = kSubBlock; r < kChunk; r += kSubBlock)
    for (int I = r; I < r + kSubBlock; ++I)
      for (int J = 0; J < r; ++J) {
        const float* anchored = &kb[(kb_first(r) + J) * LD];
        auto key = [&](int d) { return anchored[d]; };  // the anchored rows are tf32 operands (chain_segment)
        aqk[I * kAld + J] = mma_sum(Operand::tf32, K, 0.0f, [&](int d) { return q[I * LD + d]; }, key);
        akk[I * kAld + J] = math::mul(beta[I], mma_sum(Operand::tf32, K, 0.0f, [&](int d) { return k[I * LD + d]; }, key));
      }

  // u = T (beta v) and w = T (beta k exp(Γ)) with T = (I + Akk)^-1 by blocks in fp16 (simulate_inverse), both
  // products on tensor cores from fp16 roundings of T and of the right-hand sides; row block rb runs the
  // k-steps of the columns j < 16 (rb + 1), as the kernel's warps do (T is zero above them).
  const int V = static_cast<int>(p.V), columns = V + K;
  std::vector<float> inverse_h(kChunk * kChunk), partials(kChunk * kChunk), rhs(kChunk * columns);
  simulate_inverse(akk.data(), inverse_h.data(), partials.data());
  for (int i = 0; i < kChunk; ++i) {
    for (int col = 0; col < columns; ++col) {
      const float x = col < V ? value_rhs(p, e, beta[i], i, value_bits(token_column(p.v, e, hv, col), e, i))
                              : alpha[i * LD + (col - V)];
      rhs[i * columns + col] = fp16_rounded(x);
    }
  }
  for (int i = 0; i < kChunk; ++i)
    for (int col = 0; col < columns; ++col) {
      const float x = mma_sum(
          Operand::f16, kSubBlock * (i / kSubBlock + 1), 0.0f, [&](int j) { return inverse_h[i * kChunk + j]; },
          [&](int j) { return rhs[j * columns + col]; });
      if (col < V)
        P.work.u[(slot * kChunk + i) * V + col] = access::f32_to_f16(x);
      else
        P.work.w[(slot * kChunk + i) * K + (col - V)] = access::f32_to_f16(x);
    }
  for (int i = 0; i < kChunk; ++i)
    for (int j = 0; j < kChunk; ++j)
      P.work.aqk[(slot * kChunk + i) * kChunk + j] = access::f32_to_f16(aqk[i * kAld + j]);
}

template <int K>
void scan(const ChunkedParams& P, std::int64_t n, std::int64_t hv) {
  const DecodeParams& p = P.call;
  const int V = static_cast<int>(p.V);
  const access::SequenceRange seq = access::sequence_range(p, n);
  const access::HeadStates hs = access::head_states(p, n, hv);
  auto o_at = [&](std::int64_t tok, int v) {
    return seq.row * p.o.stride[0] + tok * p.o.stride[1] + hv * p.o.stride[2] + v * p.o.stride[3];
  };
  if (hs.padding) {  // index -1: zero output and zero chunk-start states (outputs too), the pool untouched
    for (std::int64_t t = 0; t < seq.length; ++t)
      for (int v = 0; v < V; ++v) access::store(p.o, o_at(seq.first + t, v), 0.0f);
    if (P.chunk_states.data)
      for (std::int64_t c = P.sequence_chunks[n]; c < P.sequence_chunks[n + 1]; ++c)
        for (int d = 0; d < K; ++d)
          for (int v = 0; v < V; ++v)
            access::store(P.chunk_states, access::state_offset(P.chunk_states, v, d), 0.0f,
                          access::head_of(P.chunk_states, c, hv));
    return;
  }
  std::vector<float> S(K * V), St(K * V), vnew(kChunk * V);  // S[d][v]: key channel d, value channel v
  for (int d = 0; d < K; ++d)
    for (int v = 0; v < V; ++v)
      S[d * V + v] = hs.in ? access::load(p.state_in, access::state_offset(p.state_in, v, d), hs.in) : 0.0f;

  for (std::int64_t c = P.sequence_chunks[n]; c < P.sequence_chunks[n + 1]; ++c) {
    if (P.chunk_states.data) {
      std::byte* head = access::head_of(P.chunk_states, c, hv);
      for (int d = 0; d < K; ++d)
        for (int v = 0; v < V; ++v)
          access::store(P.chunk_states, access::state_offset(P.chunk_states, v, d), S[d * V + v], head);
    }
    const std::int64_t slot = slot_of(P, c, hv);
    const std::uint16_t* qg = P.work.qg + slot * kChunk * K;
    const std::uint16_t* kg = P.work.kg + slot * kChunk * K;
    const std::uint16_t* w = P.work.w + slot * kChunk * K;
    const std::uint16_t* u = P.work.u + slot * kChunk * V;
    const std::uint16_t* aqk = P.work.aqk + slot * kChunk * kChunk;
    const float* decay = P.work.decay + slot * K;
    for (int i = 0; i < K * V; ++i) St[i] = fp16_rounded(S[i]);  // fp16 operands

    for (int i = 0; i < kChunk; ++i)
      for (int v = 0; v < V; ++v) {
        const float wS = mma_sum(
            Operand::f16, K, 0.0f, [&](int d) { return f16_to_f32(w[i * K + d]); }, [&](int d) { return St[d * V + v]; });
        vnew[i * V + v] = fp16_rounded(math::sub(f16_to_f32(u[i * V + v]), wS));
      }
    const ChunkEntry& e = P.chunks[c];
    for (int i = 0; i < e.length; ++i)
      for (int v = 0; v < V; ++v) {
        // The warp of row block i / 16 runs the k-steps of columns j < 16 (i / 16 + 1); Aqk is 0 for j > i.
        const int columns = kSubBlock * (i / kSubBlock + 1);
        float acc = mma_sum(
            Operand::f16, K, 0.0f, [&](int d) { return f16_to_f32(qg[i * K + d]); }, [&](int d) { return St[d * V + v]; });
        acc = mma_sum(
            Operand::f16, columns, acc, [&](int j) { return f16_to_f32(aqk[i * kChunk + j]); },
            [&](int j) { return vnew[j * V + v]; });
        access::store(p.o, o_at(e.first + i, v), acc);
      }
    for (int d = 0; d < K; ++d)
      for (int v = 0; v < V; ++v)
        S[d * V + v] = mma_sum(
            Operand::f16, kChunk, math::mul(decay[d], S[d * V + v]), [&](int j) { return f16_to_f32(kg[j * K + d]); },
            [&](int j) { return vnew[j * V + v]; });
  }
  if (hs.out)
    for (int d = 0; d < K; ++d)
      for (int v = 0; v < V; ++v)
        access::store(p.state_out, access::state_offset(p.state_out, v, d), S[d * V + v], hs.out);
}

}  // namespace

void simulate_inverse(const float* akk, float* t, float* p) {
  for (int i = 0; i < kChunk * kChunk; ++i) t[i] = p[i] = 0.0f;
  for (int b = 0; b < kSegments; ++b)
    for (int c = 0; c < kSubBlock; ++c) {
      float x[kSubBlock];
      inverse_diagonal_column(akk, b, c, x);
      for (int r = 0; r < kSubBlock; ++r) t[(kSubBlock * b + r) * kChunk + kSubBlock * b + c] = fp16_rounded(x[r]);
    }
  // Column block J's blocks in ascending I (P_IJ needs the T_MJ above it), P's k-steps in ascending M; P_IJ
  // whole before T_IJ = -(T_II P_IJ).
  const auto at = [](int I, int J, int i, int j) { return (kSubBlock * I + i) * kChunk + kSubBlock * J + j; };
  for (int J = 0; J < kSegments; ++J)
    for (int I = J + 1; I < kSegments; ++I) {
      for (int i = 0; i < kSubBlock; ++i)
        for (int j = 0; j < kSubBlock; ++j)
          p[at(I, J, i, j)] = fp16_rounded(mma_sum(
              Operand::f16, kSubBlock * (I - J), 0.0f,
              [&](int s) { return fp16_rounded(akk[akk_at(kSubBlock * I + i, kSubBlock * J + s)]); },
              [&](int s) { return t[at(J, J, s, j)]; }));  // T_MJ: rows 16 J + s, s < 16 (I - J)
      for (int i = 0; i < kSubBlock; ++i)
        for (int j = 0; j < kSubBlock; ++j)
          t[at(I, J, i, j)] = fp16_rounded(-mma_sum(
              Operand::f16, kSubBlock, 0.0f, [&](int s) { return t[at(I, I, i, s)]; },
              [&](int s) { return p[at(I, J, s, j)]; }));
    }
}

void simulate_chunk_prepare(const ChunkedParams& params, std::int64_t c, std::int64_t hv) {
  if (params.call.K == 64)
    gates<64>(params, c, hv), prepare<64>(params, c, hv);
  else
    gates<128>(params, c, hv), prepare<128>(params, c, hv);
}

void simulate_chunk_scan(const ChunkedParams& params, std::int64_t n, std::int64_t hv) {
  if (params.call.K == 64)
    scan<64>(params, n, hv);
  else
    scan<128>(params, n, hv);
}

void simulate_chunked_prefill(Problem& problem) {
  const ChunkTable table = make_chunk_table(problem);
  const auto chunks = static_cast<std::int64_t>(table.chunks.size());
  std::vector<std::byte> workspace(chunked_workspace_bytes(chunks, problem.HV, problem.K, problem.V));
  const ChunkedParams params =
      make_chunked_params(problem, [](GuardedBuffer& b) { return b.data(); }, table,
                          {table.chunks.data(), table.sequence_chunks.data(), table.longest_first.data()},
                          workspace.data());
  // Slots, then (sequence, head) pairs, on every core: each writes only its own workspace rows, outputs
  // and states (outputs share no memory with any other tensor, pool slots are distinct: the strict
  // profile), and computes alone, so the bits do not depend on the order.
  const std::int64_t HV = problem.HV, N = problem.N;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (std::int64_t c = 0; c < chunks; ++c)
    for (std::int64_t hv = 0; hv < HV; ++hv) simulate_chunk_prepare(params, c, hv);
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t hv = 0; hv < HV; ++hv) simulate_chunk_scan(params, n, hv);
}

}  // namespace kda::kernels
