#pragma once
// The precision model of the chunked tensor-core kernel (sim-chunked, cuda-chunked): the chunked form of
// kda-facts §2, written independently of the kernel (Eigen, fp64, no tiling), that rounds exactly the
// values the kernel stores or feeds to tensor cores at 11 significant bits and computes everything else
// in fp64:
//   fp16: qg = q exp(Γ), kg = k exp(Γlast - Γ), w, u, Aqk (the intermediates stage A stores), the
//         inverse T = (I + Akk)^-1 by 16-row blocks (the diagonal blocks' inverses; below them Akk,
//         P_IJ = sum_M Akk_IM T_MJ and T_IJ = -(T_II P_IJ), the operands and results of its tensor-core
//         levels) and the right-hand sides beta v, beta k exp(Γ) (stage A's fp16 operands of
//         u = T beta v, w = T beta k exp(Γ)), the state S and v_new where they enter a product (stage
//         B's fp16 tensor-core operands);
//   tf32 (truncated, as the tensor core reads an fp32 register): the anchored operands q_i exp(Γi - Γr),
//         k_i exp(Γi - Γr) and k_j exp(Γr - Γj) of the off-diagonal sub-blocks (r: the row's sub-block)
//         and of the diagonal sub-blocks' quadrants (r: the row's 8-row half).
// It is the "same-precision run" of FlashAttention's rule (kda-facts §5): the catalogue judges the
// kernel's error against twice this model's error. A kernel with an arithmetic bug lands far outside it,
// while the unavoidable cost of 11-bit operands is in the model too.
//
// The same chunk arithmetic, with one rounding for every operand and stored intermediate and Aqk, Akk
// formed element-wise, is the model of a kernel that declares its arithmetic (kda::Arithmetic): bf16
// or fp16 operands (FLA's chunk_kda with bf16 activations keeps Aqk, (I + Akk)^-1, w, u, q exp(Γ),
// k exp(Γlast - Γ), the chunk states and v_new in bf16 between its kernels, accumulating in fp32) or
// tf32 operands (rounded to nearest). Products accumulate in fp64 here: fp32 accumulation adds an error
// far below the operands'. A decode or verify call is a chunk of its few tokens: a recurrent kernel
// that keeps its state in fp32 has no such operands and declares fp32, judged by the fp32 recurrence.
#include <memory>
#include <string>

#include "kda/kernel.hpp"

namespace kda::kernels {

// "model-chunked-fp16": same capabilities as the kernel; validates the strict profile first.
std::unique_ptr<Kernel> make_chunked_precision_model();

// The precision model of a kernel declaring `arithmetic`, holding the kernel's profile (which must
// outlive it): fp32 is the fp32 recurrent reference ("ref-fp32"); the others "model-chunked-tf32",
// "model-chunked-bf16-operands", "model-chunked-f16-operands", which take any valid case (every mode,
// state source, chunk size, chunk and token states).
std::unique_ptr<Kernel> make_declared_arithmetic_model(Arithmetic arithmetic, const Profile& profile = profile_strict());
std::string declared_arithmetic_model_name(Arithmetic arithmetic);  // the name of the model above

}  // namespace kda::kernels
