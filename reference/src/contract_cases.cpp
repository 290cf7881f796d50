#include "kda/contract_cases.hpp"

#include <cmath>
#include <functional>

namespace kda {
namespace {

using i64 = std::int64_t;

// Prefill with most features on: varlen with a zero-length sequence, GVA (H=2, HV=4), K != V (so a
// transposed state is visible), gate and beta in kernel with the safe gate, dense states, chunk- and
// token-state outputs. N=3, T=51, chunk size 32: 2 + 0 + 1 = 3 chunks.
ProblemSpec dense_spec() {
  ProblemSpec s;
  s.lengths = {40, 0, 11};
  s.H = 2, s.HV = 4, s.K = 16, s.V = 8;
  s.options.chunk_size = 32;
  s.options.l2norm_qk = true;
  s.options.beta_from_logits = true;
  s.options.allow_neg_eigval = true;
  s.options.gate_in_kernel = true;
  s.options.lower_bound = -5.0;
  s.options.safe_gate = true;
  s.with_A_log = s.with_dt_bias = true;
  s.chunk_states = s.token_states = true;
  return s;
}

// The same problem reading and updating a pool of 6 slots with a padded slot stride (544 = 512 + 32,
// a multiple of 16) and a -1 padding row.
ProblemSpec pool_spec() {
  ProblemSpec s = dense_spec();
  s.state = StateSource::pool;
  s.final_state = false;
  s.pool_slots = 6;
  s.pool_slot_stride = 4 * 8 * 16 + 32;
  s.indices = {4, -1, 0};
  return s;
}

// What SGLang's FlashInfer decode wrapper takes: decode, K = V = 128, bf16 activations, fp32 [V,K] pool.
ProblemSpec sglang_spec() {
  ProblemSpec s;
  s.mode = Mode::decode;
  s.lengths = {1, 1, 1};
  s.H = 1, s.HV = 2, s.K = 128, s.V = 128;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.state = StateSource::pool;
  s.final_state = false;
  s.indices = {2, -1, 0};
  s.options.gate_in_kernel = true;
  s.options.beta_from_logits = true;
  s.options.l2norm_qk = true;
  s.with_A_log = s.with_dt_bias = true;
  return s;
}

// A verify call in the index-table form: L = 4, ragged requests (4, 2, 4 tokens), GVA, K != V, gate,
// beta and l2norm in kernel. Request 0 starts from slot 13 (all 4 accepted), request 1 from slot 3,
// request 2 is a padding row (its initial entry is -1); a 14-slot pool.
ProblemSpec verify_table_spec() {
  ProblemSpec s;
  s.mode = Mode::verify;
  s.state = StateSource::table;
  s.lengths = {4, 2, 4};
  s.L = 4;
  s.H = 1, s.HV = 2, s.K = 16, s.V = 8;
  s.final_state = false;
  s.options.l2norm_qk = s.options.beta_from_logits = s.options.gate_in_kernel = true;
  s.with_A_log = s.with_dt_bias = true;
  s.pool_slots = 14;
  s.indices = {10, 11, 12, 13, 3, 2, -1, 0, -1, 5, 6, 7};
  s.accepted = {4, 1, 1};
  return s;
}

// The same requests in the scratch form: a 5-slot pool read only (request 1 a padding row), a scratch
// buffer of 4 rows of 6 steps, requests stored in rows 2, 0 and 3.
ProblemSpec verify_scratch_spec() {
  ProblemSpec s = verify_table_spec();
  s.state = StateSource::scratch;
  s.pool_slots = 5;
  s.indices = {3, -1, 0};
  s.accepted.clear();
  s.scratch_rows = 4, s.scratch_steps = 6;
  s.scratch_indices = {2, 0, 3};
  return s;
}

// What SGLang's verify kernels take (DSpARK MTP, FlashInfer target_verify): the scratch form with
// 1 + num_spec = 2 tokens per request, K = V = 128, bf16 activations, the lower-bound gate, an fp32
// [V,K] pool, an identity row map.
ProblemSpec sglang_verify_spec() {
  ProblemSpec s;
  s.mode = Mode::verify;
  s.state = StateSource::scratch;
  s.lengths = {2, 2};
  s.L = 2;
  s.H = 1, s.HV = 1, s.K = 128, s.V = 128;
  s.input_dtype = s.output_dtype = DType::bf16;
  s.final_state = false;
  s.pool_slots = 3;
  s.indices = {2, 0};
  s.options.gate_in_kernel = s.options.beta_from_logits = s.options.l2norm_qk = true;
  s.options.lower_bound = -5.0;
  s.with_A_log = s.with_dt_bias = true;
  return s;
}

Problem build(const ProblemSpec& spec) {
  Problem p = make_problem(spec);
  fill_random(p, 7);
  return p;
}

Tensor zeros(std::string name, DType dtype, Shape shape) {
  return Tensor::zeros(std::move(name), dtype, std::move(shape));
}

Tensor integers(std::string name, DType dtype, const std::vector<i64>& xs) {
  Tensor t = zeros(std::move(name), dtype, {static_cast<i64>(xs.size())});
  for (std::size_t i = 0; i < xs.size(); ++i) t.set_integer(static_cast<i64>(i), xs[i]);
  return t;
}

// An [rows, columns] int32 index table, row by row.
Tensor index_table(const std::vector<std::vector<i64>>& rows) {
  Tensor t = zeros("state_indices", DType::i32, {static_cast<i64>(rows.size()), static_cast<i64>(rows[0].size())});
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < rows[i].size(); ++j) t.set_integer(static_cast<i64>(i), static_cast<i64>(j), rows[i][j]);
  return t;
}

// The pool's buffer seen through another view (reshapes that fit in it).
Tensor repooled(const Tensor& pool, Shape shape, Shape strides) {
  return Tensor{pool.buffer, View{pool.dtype(), std::move(shape), std::move(strides), 0}};
}

// A fp32 pool in a buffer of its own, sized to the view.
Tensor pool_view(Shape shape, Shape strides) {
  return Tensor::with_view("state_pool", View{DType::f32, std::move(shape), std::move(strides), 0});
}

Profile without(const Profile& base, Rule dropped) {
  Profile p = base;
  p.name += "_without_" + std::string(name_of(dropped));
  std::erase(p.rules, dropped);
  return p;
}

const Profile& sglang() { return *find_profile("sglang_flashinfer_decode"); }
const Profile& sglang_verify() { return *find_profile("sglang_flashinfer_verify"); }
const Profile& dspark() { return *find_profile("sglang_dspark_mtp"); }

// A 4 GiB index space cannot be allocated in a unit test, so the 32-bit index rule is shown on a
// view that also leaves its buffer, under strict minus the bounds rule.
const Profile& strict_unbounded() {
  static const Profile p = without(profile_strict(), Rule::view_in_bounds);
  return p;
}

struct Case {
  std::string name;
  ProblemSpec (*base)();                      // a valid starting point
  std::function<void(ProblemSpec&)> respec;   // a spec change (the factory keeps tensors consistent)
  std::function<void(Problem&)> mutate;       // a change to the built problem
  Rule rule;
  std::string message;  // expected in the message: upstream's full wording where one exists
  const Profile* profile = &profile_strict();
};

std::vector<Case> case_table() {
  const std::string fla_count =
      "The number of initial states is expected to be equal to the number of input sequences, i.e., 3 rather than 4.";
  const i64 q_reach = 50 * (i64{1} << 26) + 1 * 16 + 15;
  return {
      {"problem_sizes", dense_spec, [](auto& s) { s.K = 0; }, {}, Rule::problem_sizes,
       "problem sizes must have B, T, N >= 0 and H, HV, K, V >= 1, got B=1, T=51, N=3, H=2, HV=4, K=0, V=8"},
      {"view_in_bounds", dense_spec, {}, [](Problem& p) { p.q.view.offset = 1; }, Rule::view_in_bounds,
       "q view f32[1,51,2,16]/(1632,32,16,1)+1 reaches bytes [4, 6532) outside its 6528-byte buffer 'q'"},
      {"varlen_batch_one", dense_spec, [](auto& s) { s.varlen = false, s.lengths = {8, 8}; },
       [](Problem& p) { p.cu_seqlens = integers("cu_seqlens", DType::i32, {0, 4, 8}); }, Rule::varlen_batch_one,
       "The batch size is expected to be 1 rather than 2 when using `cu_seqlens`.Please flatten variable-length "
       "inputs before processing."},
      {"varlen_batch_one_helion", sglang_spec, [](auto& s) { s.varlen = false, s.lengths = {1, 1}; },
       [](Problem& p) { p.cu_seqlens = integers("cu_seqlens", DType::i32, {0, 1, 1}); }, Rule::varlen_batch_one,
       "varlen KDA requires batch size 1", &sglang()},
      {"cu_seqlens_dtype", dense_spec, {}, [](Problem& p) { p.cu_seqlens = zeros("cu_seqlens", DType::f32, {4}); },
       Rule::cu_seqlens_dtype, "cu_seqlens must be int32 or int64, got float32"},
      {"cu_seqlens_shape", dense_spec, {},
       [](Problem& p) { p.cu_seqlens = integers("cu_seqlens", DType::i32, {0, 40, 40, 51, 51}); },
       Rule::cu_seqlens_shape, "cu_seqlens must be [N + 1]=(4,) with N=3, got (5,)"},
      {"cu_seqlens_start", dense_spec, {}, [](Problem& p) { p.cu_seqlens->set_integer(0, 1); }, Rule::cu_seqlens_start,
       "cu_seqlens must start at 0, got cu_seqlens[0]=1"},
      {"cu_seqlens_monotonic", dense_spec, {}, [](Problem& p) { p.cu_seqlens->set_integer(2, 30); },
       Rule::cu_seqlens_monotonic, "cu_seqlens must be non-decreasing, got cu_seqlens[2]=30 after cu_seqlens[1]=40"},
      {"cu_seqlens_dtype_float64", dense_spec, {}, [](Problem& p) { p.cu_seqlens = zeros("cu_seqlens", DType::f64, {4}); },
       Rule::cu_seqlens_dtype, "cu_seqlens must be int32 or int64, got float64"},
      {"cu_seqlens_negative", dense_spec, {}, [](Problem& p) { p.cu_seqlens->set_integer(1, -4); },
       Rule::cu_seqlens_monotonic, "cu_seqlens must be non-decreasing, got cu_seqlens[1]=-4 after cu_seqlens[0]=0"},
      {"cu_seqlens_end", dense_spec, {}, [](Problem& p) { p.cu_seqlens->set_integer(3, 50); }, Rule::cu_seqlens_end,
       "cu_seqlens must end at T=51, got cu_seqlens[3]=50"},
      {"cu_seqlens_end_beyond_T", dense_spec, {}, [](Problem& p) { p.cu_seqlens->set_integer(3, 52); },
       Rule::cu_seqlens_end, "cu_seqlens must end at T=51, got cu_seqlens[3]=52"},
      {"batch_sequence_count", dense_spec,
       [](auto& s) {
         s.varlen = false, s.lengths = {8, 8};
         s.state = StateSource::none, s.final_state = false, s.chunk_states = false;
       },
       [](Problem& p) { p.N = 3; }, Rule::batch_sequence_count,
       "without cu_seqlens each batch row is one sequence, so N must equal B=2, got N=3"},
      {"decode_one_token", dense_spec, [](auto& s) { s.mode = Mode::decode, s.lengths = {1, 2, 1}; }, {},
       Rule::decode_one_token, "decode takes exactly one token per sequence, got 2 tokens in sequence 1"},
      {"qk_same_shape", dense_spec, {}, [](Problem& p) { p.k = zeros("k", DType::f32, {1, 51, 2, 15}); },
       Rule::qk_same_shape, "q and k must have the same shape, got q (1, 51, 2, 16) vs k (1, 51, 2, 15)"},
      {"hv_divisible", dense_spec, [](auto& s) { s.H = 3; }, {}, Rule::hv_divisible,
       "num_v_heads (4) must be divisible by num_heads (3)."},
      {"q_shape", dense_spec, {},
       [](Problem& p) { p.q = zeros("q", DType::f32, {1, 51, 2, 15}), p.k = zeros("k", DType::f32, {1, 51, 2, 15}); },
       Rule::q_shape, "q must be [B, T, H, K]=(1, 51, 2, 16), got (1, 51, 2, 15)"},
      {"v_shape", dense_spec, {}, [](Problem& p) { p.v = zeros("v", DType::f32, {1, 51, 4, 9}); }, Rule::v_shape,
       "v must be [B, T, HV, V]=(1, 51, 4, 8), got (1, 51, 4, 9)"},
      {"g_shape", dense_spec, {}, [](Problem& p) { p.g = zeros("g", DType::f32, {1, 51, 4, 15}); }, Rule::g_shape,
       "g must be [B, T, HV, K]=(1, 51, 4, 16), got (1, 51, 4, 15)"},
      {"beta_shape", dense_spec, {}, [](Problem& p) { p.beta = zeros("beta", DType::f32, {1, 51, 2}); },
       Rule::beta_shape, "beta must be [B, T, HV]=(1, 51, 4), got (1, 51, 2)"},
      {"o_shape", dense_spec, {}, [](Problem& p) { p.o = zeros("o", DType::f32, {1, 51, 4, 9}); }, Rule::o_shape,
       "o must be [B, T, HV, V]=(1, 51, 4, 8), got (1, 51, 4, 9)"},
      {"key_head_dim_max", dense_spec, [](auto& s) { s.K = 272; }, {}, Rule::key_head_dim_max,
       "KDA supports key headdim <= 256, got 272."},
      {"head_dims_supported", sglang_spec, [](auto& s) { s.K = 64; }, {}, Rule::head_dims_supported,
       "sglang_flashinfer_decode supports head dims K in (128,) and V in (128,), got K=64, V=128", &sglang()},
      {"input_dtype", dense_spec, {}, [](Problem& p) { p.g = zeros("g", DType::i32, p.g.shape()); }, Rule::input_dtype,
       "g must be in bfloat16, float16, float32 or float64. Got int32."},
      {"input_dtype_sglang", sglang_spec, {}, [](Problem& p) { p.v = zeros("v", DType::f32, p.v.shape()); },
       Rule::input_dtype, "v must be in bfloat16. Got float32.", &sglang()},
      {"output_dtype", dense_spec, {}, [](Problem& p) { p.o = zeros("o", DType::i64, p.o.shape()); },
       Rule::output_dtype, "o must be in bfloat16, float16, float32 or float64. Got int64."},
      {"gate_params_dtype", dense_spec, {}, [](Problem& p) { p.A_log = zeros("A_log", DType::i32, {4}); },
       Rule::gate_params_dtype, "A_log must be a floating-point tensor, got int32."},
      {"A_log_size", dense_spec, {}, [](Problem& p) { p.A_log = zeros("A_log", DType::f32, {5}); }, Rule::A_log_size,
       "`A_log` must have 4 elements (got 5)."},
      {"dt_bias_size", dense_spec, {}, [](Problem& p) { p.dt_bias = zeros("dt_bias", DType::f32, {63}); },
       Rule::dt_bias_size, "`dt_bias` must have 64 elements (got 63)."},
      {"scale_positive", dense_spec, [](auto& s) { s.options.scale = -1.0; }, {}, Rule::scale_positive,
       "`scale` must be positive and finite, got -1.0."},
      {"chunk_size", dense_spec, [](auto& s) { s.options.chunk_size = 16; }, {}, Rule::chunk_size,
       "`chunk_size` must be either 32 or 64 for KDA, got 16."},
      {"lower_bound_range", dense_spec, [](auto& s) { s.options.lower_bound = -6.0; }, {}, Rule::lower_bound_range,
       "`lower_bound` must be in the safe range [-5, 0), got -6.0."},
      {"lower_bound_range_nan", dense_spec, [](auto& s) { s.options.lower_bound = std::nan(""); }, {},
       Rule::lower_bound_range, "`lower_bound` must be in the safe range [-5, 0), got nan."},
      {"lower_bound_required", dense_spec, [](auto& s) { s.options.lower_bound.reset(); }, {},
       Rule::lower_bound_required,
       "`lower_bound` must be specified when `safe_gate=True` and `use_gate_in_kernel=True`."},
      {"softplus_needs_A_log", dense_spec,
       [](auto& s) { s.options.lower_bound.reset(), s.options.safe_gate = false, s.with_A_log = false; }, {},
       Rule::softplus_needs_A_log,
       "`A_log` must be provided when `use_gate_in_kernel=True` and `lower_bound` is not set."},
      {"neg_eigval_needs_beta_logits", dense_spec, [](auto& s) { s.options.beta_from_logits = false; }, {},
       Rule::neg_eigval_needs_beta_logits, "`allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`."},
      {"state_source", pool_spec, {},
       [](Problem& p) { p.initial_state = zeros("initial_state", DType::f32, {3, 4, 8, 16}); }, Rule::state_source,
       "initial_state and state_pool are both given; states come from one source"},
      {"state_source_final_with_pool", pool_spec, {},
       [](Problem& p) { p.final_state = zeros("final_state", DType::f32, {3, 4, 8, 16}); }, Rule::state_source,
       "final_state is given with a state_pool; the pool's slots are updated in place"},
      {"state_source_supported", sglang_spec, [](auto& s) { s.state = StateSource::dense, s.final_state = false; }, {},
       Rule::state_source_supported, "sglang_flashinfer_decode does not take a dense initial_state (it supports: pool)",
       &sglang()},
      {"state_dtype", dense_spec, {},
       [](Problem& p) { p.final_state = zeros("final_state", DType::f16, {3, 4, 8, 16}); },
       Rule::state_dtype, "final_state must be in float32 or bfloat16. Got float16."},
      {"state_dtype_fla_chunk", dense_spec, {},
       [](Problem& p) { p.initial_state = zeros("initial_state", DType::bf16, {3, 4, 8, 16}); }, Rule::state_dtype,
       "initial_state must be in float32.", find_profile("fla_chunk")},
      {"state_layout", sglang_spec, [](auto& s) { s.options.state_layout = StateLayout::kv; }, {}, Rule::state_layout,
       "sglang_flashinfer_decode keeps states as [N, HV, V, K] (K contiguous), got the [N, HV, K, V] layout",
       &sglang()},
      {"initial_state_count", dense_spec, {},
       [](Problem& p) { p.initial_state = zeros("initial_state", DType::f32, {4, 4, 8, 16}); },
       Rule::initial_state_count, fla_count},
      {"initial_state_count_indices", pool_spec, {},
       [](Problem& p) { p.state_indices = integers("state_indices", DType::i32, {4, -1, 0, 5}); },
       Rule::initial_state_count, fla_count},
      {"initial_state_shape", dense_spec, {},
       [](Problem& p) { p.initial_state = zeros("initial_state", DType::f32, {3, 4, 16, 8}); },
       Rule::initial_state_shape, "initial_state must be [N, HV, V, K] with (HV, V, K)=(4, 8, 16), got (3, 4, 16, 8)"},
      {"final_state_shape", dense_spec, {},
       [](Problem& p) { p.final_state = zeros("final_state", DType::f32, {3, 4, 8, 15}); }, Rule::final_state_shape,
       "final_state must be [N, HV, V, K]=(3, 4, 8, 16), got (3, 4, 8, 15)"},
      {"chunk_states_shape", dense_spec, {},
       [](Problem& p) { p.chunk_states = zeros("chunk_states", DType::f32, {4, 4, 8, 16}); }, Rule::chunk_states_shape,
       "chunk_states must be [chunks, HV, V, K]=(3, 4, 8, 16), got (4, 4, 8, 16)"},
      {"token_states_shape", dense_spec, {},
       [](Problem& p) { p.token_states = zeros("token_states", DType::f32, {1, 51, 4, 16, 8}); },
       Rule::token_states_shape, "token_states must be [B, T, HV, V, K]=(1, 51, 4, 8, 16), got (1, 51, 4, 16, 8)"},
      {"state_pool_rank", pool_spec, {},
       [](Problem& p) { p.state_pool = repooled(*p.state_pool, {6, 4, 128}, {544, 128, 1}); }, Rule::state_pool_rank,
       "recurrent_kda needs a [N, HV, V, K] state pool; got shape (6, 4, 128)"},
      {"state_pool_shape", pool_spec, {},
       [](Problem& p) { p.state_pool = repooled(*p.state_pool, {6, 4, 16, 8}, {544, 128, 8, 1}); },
       Rule::state_pool_shape, "state_pool must be [N, HV, V, K] with (HV, V, K)=(4, 8, 16), got (6, 4, 16, 8)"},
      {"state_pool_inner_strides", pool_spec, {},
       [](Problem& p) { p.state_pool = pool_view({6, 4, 8, 16}, {1024, 256, 32, 1}); },
       Rule::state_pool_inner_strides,
       "recurrent_kda state inner strides must be compact (V*K, K, 1)=(128, 16, 1); got (256, 32, 1) (only the slot "
       "stride may be non-compact)"},
      {"state_pool_alignment", pool_spec, [](auto& s) { s.pool_offset = 4; }, {}, Rule::state_pool_alignment,
       "recurrent_kda state pool breaks the compiled stride contract: slot stride 544 elements must be a multiple of "
       "16 and the base byte offset 16 a multiple of 32 (sym_int64(divisibility=16) / assumed_align=32)"},
      {"state_indices_dtype", pool_spec, {},
       [](Problem& p) { p.state_indices = integers("state_indices", DType::i64, {4, -1, 0}); },
       Rule::state_indices_dtype, "state_indices must be int32, got int64"},
      {"state_indices_shape", pool_spec, {},
       [](Problem& p) { p.state_indices = zeros("state_indices", DType::i32, {3, 1}); }, Rule::state_indices_shape,
       "state_indices must be [N]=(3,), got (3, 1)"},
      {"state_indices_range", pool_spec, {}, [](Problem& p) { p.state_indices->set_integer(0, 6); },
       Rule::state_indices_range,
       "state_indices[0]=6 is neither a pool slot in [0, 6) nor -1 (padding); 1 of 3 indices are out of range"},
      {"state_indices_range_below_padding", pool_spec, {}, [](Problem& p) { p.state_indices->set_integer(2, -2); },
       Rule::state_indices_range,
       "state_indices[2]=-2 is neither a pool slot in [0, 6) nor -1 (padding); 1 of 3 indices are out of range"},
      {"state_indices_distinct", pool_spec, {}, [](Problem& p) { p.state_indices->set_integer(2, 4); },
       Rule::state_indices_distinct,
       "state_indices[2]=4 repeats state_indices[0]: two sequences would read and update one pool slot"},
      {"state_indices_shape_table", verify_table_spec, {},
       [](Problem& p) { p.state_indices = index_table({{10, 11, 12}, {3, 2, -1}, {-1, 5, 6}}); },
       Rule::state_indices_shape, "ssm_state_indices must be 2D [N, 4] in spec mode, got shape [3, 3]"},
      {"state_indices_range_table", verify_table_spec, {}, [](Problem& p) { p.state_indices->set_integer(1, 1, 14); },
       Rule::state_indices_range,
       "state_indices[1, 1]=14 is neither a pool slot in [0, 14) nor -1 (padding); 1 of 12 indices are out of range"},
      {"state_indices_shape_table_columns", verify_table_spec, {},
       [](Problem& p) { p.state_indices = index_table({{10, 11, 12, 13, -1}, {3, 2, -1, 0, -1}, {-1, 5, 6, 7, -1}}); },
       Rule::state_indices_shape, "ssm_state_indices must be 2D [N, 4] in spec mode, got shape [3, 5]"},
      {"initial_state_count_table", verify_table_spec, {},
       [](Problem& p) { p.state_indices = index_table({{10, 11, 12, 13}, {3, 2, -1, 0}, {-1, 5, 6, 7}, {-1, -1, -1, -1}}); },
       Rule::initial_state_count,
       "The number of initial states is expected to be equal to the number of input sequences, i.e., 3 rather than 4."},
      {"state_indices_range_table_below_padding", verify_table_spec, {},
       [](Problem& p) { p.state_indices->set_integer(0, 2, -2); }, Rule::state_indices_range,
       "state_indices[0, 2]=-2 is neither a pool slot in [0, 14) nor -1 (padding); 1 of 12 indices are out of range"},
      {"state_indices_distinct_table", verify_table_spec, {},
       [](Problem& p) { p.state_indices->set_integer(2, 3, 10); }, Rule::state_indices_distinct,
       "state_indices[2, 3]=10 repeats state_indices[0, 0]: two tokens would store their states in one pool slot"},
      {"state_source_verify_token_states", verify_scratch_spec, {},
       [](Problem& p) { p.token_states = zeros("token_states", DType::f32, {1, 10, 2, 8, 16}); }, Rule::state_source,
       "a verify call stores the state after every token in the scratch buffer; token_states is not taken"},
      {"state_source_supported_verify", sglang_verify_spec, [](auto& s) { s.state = StateSource::table, s.pool_slots = 5, s.indices = {1, 2, 3, 4}; },
       {}, Rule::state_source_supported,
       "sglang_flashinfer_verify does not take an index-table verify (num_accepted) (it supports: scratch)",
       &sglang_verify()},
      {"verify_tokens", verify_table_spec, [](auto& s) { s.lengths = {4, 2, 5}; }, {}, Rule::verify_tokens,
       "speculative verify takes at most L=4 tokens per request (1 + num_spec), got 5 tokens in sequence 2"},
      {"verify_fixed_tokens", sglang_verify_spec, [](auto& s) { s.lengths = {2, 1}; }, {}, Rule::verify_fixed_tokens,
       "DSpARK KDA MTP requires a fixed 1 + num_spec dense tokens per request; got T=3, N=2", &dspark()},
      {"accepted_dtype", verify_table_spec, {}, [](Problem& p) { p.num_accepted = zeros("num_accepted", DType::f32, {3}); },
       Rule::accepted_dtype, "num_accepted_tokens must be int32 or int64, got float32"},
      {"accepted_shape", verify_table_spec, {},
       [](Problem& p) { p.num_accepted = integers("num_accepted", DType::i32, {4, 1, 1, 1}); }, Rule::accepted_shape,
       "num_accepted_tokens must be [N]=(3,), got (4,)"},
      {"accepted_range", verify_table_spec, {}, [](Problem& p) { p.num_accepted->set_integer(1, 0); },
       Rule::accepted_range,
       "num_accepted_tokens[1]=0 is outside [1, L=4]: the initial state is slot state_indices[n, num_accepted_tokens[n] "
       "- 1]; 1 of 3 counts are out of range"},
      {"accepted_range_above_L", verify_table_spec, {}, [](Problem& p) { p.num_accepted->set_integer(2, 5); },
       Rule::accepted_range, "num_accepted_tokens[2]=5 is outside [1, L=4]"},
      {"scratch_states_shape", verify_scratch_spec, {},
       [](Problem& p) { p.scratch_states = zeros("scratch_states", DType::f32, {4, 6, 2, 16, 8}); },
       Rule::scratch_states_shape,
       "scratch_states must be [S, L', HV, V, K] with (HV, V, K)=(2, 8, 16), got (4, 6, 2, 16, 8)"},
      {"scratch_steps", verify_scratch_spec, [](auto& s) { s.scratch_steps = 3; }, {}, Rule::scratch_steps,
       "KDA verify needs 4 scratch steps, but intermediate_ssm only has 3."},
      {"scratch_indices_dtype", verify_scratch_spec, {},
       [](Problem& p) { p.scratch_indices = integers("scratch_indices", DType::i64, {2, 0, 3}); },
       Rule::scratch_indices_dtype, "scratch_indices must be int32, got int64"},
      {"scratch_indices_shape", verify_scratch_spec, {},
       [](Problem& p) { p.scratch_indices = integers("scratch_indices", DType::i32, {2, 0, 3, 1}); },
       Rule::scratch_indices_shape, "scratch_indices must be [N]=(3,), got (4,)"},
      {"scratch_indices_range", verify_scratch_spec, {}, [](Problem& p) { p.scratch_indices->set_integer(2, 4); },
       Rule::scratch_indices_range, "scratch_indices[2]=4 is neither a row of scratch_states in [0, 4) nor -1"},
      {"scratch_indices_distinct", verify_scratch_spec, {}, [](Problem& p) { p.scratch_indices->set_integer(2, 2); },
       Rule::scratch_indices_distinct,
       "scratch_indices[2]=2 repeats scratch_indices[0]: two requests would store their states in one scratch row"},
      {"scratch_indices_identity", sglang_verify_spec, [](auto& s) { s.scratch_indices = {1, 0}; }, {},
       Rule::scratch_indices_identity,
       "FlashInfer KDA verify requires an identity intermediate row-map (verify_intermediate_state_indices must be "
       "arange).",
       &sglang_verify()},
      {"output_overlap", dense_spec, {}, [](Problem& p) { p.o = p.v; }, Rule::output_overlap,
       "o overlaps v in buffer 'v': bytes [0, 6528) and [0, 6528)"},
      {"output_overlap_pool", pool_spec, {},
       [](Problem& p) { p.o = Tensor{p.state_pool->buffer, contiguous_view(DType::f32, p.o.shape())}; },
       Rule::output_overlap, "state_pool overlaps o in buffer 'state_pool'"},
      {"output_self_overlap", dense_spec, {}, [](Problem& p) { p.o.view.strides[1] = 0; }, Rule::output_self_overlap,
       "o view f32[1,51,4,8]/(1632,0,8,1)+0 overlaps itself: dim 1 (size 51, stride 0) revisits elements the faster "
       "dims reach"},
      {"index_overflow_32bit", dense_spec, {}, [](Problem& p) { p.q.view.strides[1] = i64{1} << 26; },
       Rule::index_overflow_32bit,
       "q reaches element offsets [0, " + std::to_string(q_reach) +
           "] from its first element; 32-bit index math stops at INT32_MAX=2147483647",
       &strict_unbounded()},
  };
}

}  // namespace

ProblemSpec contract_dense_spec() { return dense_spec(); }
ProblemSpec contract_pool_spec() { return pool_spec(); }
ProblemSpec contract_sglang_spec() { return sglang_spec(); }
ProblemSpec contract_verify_table_spec() { return verify_table_spec(); }
ProblemSpec contract_verify_scratch_spec() { return verify_scratch_spec(); }
ProblemSpec contract_sglang_verify_spec() { return sglang_verify_spec(); }

std::vector<ContractCase> contract_cases() {
  std::vector<ContractCase> out;
  for (const Case& c : case_table()) {
    ProblemSpec spec = c.base();
    if (c.respec) c.respec(spec);
    Problem p = build(spec);
    if (c.mutate) c.mutate(p);
    out.push_back({c.name, c.rule, c.message, c.profile, std::move(p)});
  }
  return out;
}

}  // namespace kda
