#!/usr/bin/env python3
"""FLA's Triton kernels timed on this GPU, in the same run as ours: the anchors of the decode and
prefill benchmarks (kda-facts §6), at the same shapes as bench/gpu/decode_bench.cu and
bench/gpu/prefill_bench.cu. H = HV = 32, K = V = 128, bf16 inputs, gate / l2norm / beta in kernel.

  decode:  fused_recurrent_kda_fwd on an fp32 [slots, HV, V, K] pool (state_v_first) updated in place
           through int32 indices, one token per sequence, N = 64, 256, 1024; state bytes read + written
           per second. Launches rotate over pool copies of at least 1 GiB so none finds its states in L2.
  prefill: chunk_kda with V-first fp32 initial states and final states, packings 1x8192, 8x2048,
           32x512 and (100, 2000, 37, 900, 4000, 1, 1155).
  copy:    a device-to-device copy of 1 GiB (bytes read + written per second), the ceiling.

Timing: CUDA events around --reps launches enqueued back to back (prefill, copy) or around --reps
replays of a CUDA graph holding one decode launch per pool copy; the time per launch is the mean. Needs torch, triton and fla (fla-core) importable.
Usage: fla_anchor.py [--json PATH] [--reps N]
"""
import argparse
import json
import sys

import torch
from fla.ops.kda import chunk_kda
from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd

H = HV = 32
K = V = 128
DEV = "cuda"


def time_ms(fn, reps, warmup=3):
    """Milliseconds per fn(i): reps calls enqueued back to back between one pair of events, so the
    Python wrapper's CPU time overlaps the GPU's work instead of being timed (a kernel of 0.1 ms is
    launched faster than it runs only if nothing waits in between)."""
    for i in range(warmup):
        fn(i)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for i in range(reps):
        fn(i)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def graph_time_ms(fn, calls, reps):
    """Milliseconds per call of fn(0..calls-1) captured once in a CUDA graph and replayed reps times:
    for kernels shorter than their Python wrapper's launch overhead (decode)."""
    for i in range(calls):
        fn(i)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(i)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (reps * calls)


def copy_tb_per_s(reps):
    n = 1 << 28  # 1 GiB of fp32
    src = torch.empty(n, dtype=torch.float32, device=DEV).uniform_()
    dst = torch.empty_like(src)
    ms = time_ms(lambda i: dst.copy_(src), reps)
    return 2 * 4 * n / (ms * 1e-3) / 1e12


def gate_params():
    A_log = torch.log(torch.empty(HV, device=DEV).uniform_(1, 16))
    dt_bias = torch.randn(HV * K, device=DEV)
    return A_log, dt_bias


def decode_row(N, reps):
    state_bytes = 2 * N * HV * V * K * 4
    copies = max(2, -(-(1 << 30) // (state_bytes // 2)))
    pools = [torch.randn(N, HV, V, K, device=DEV) * 0.1 for _ in range(copies)]
    q = torch.randn(N, 1, H, K, dtype=torch.bfloat16, device=DEV)
    k = torch.randn(N, 1, H, K, dtype=torch.bfloat16, device=DEV)
    v = torch.randn(N, 1, HV, V, dtype=torch.bfloat16, device=DEV)
    g = torch.randn(N, 1, HV, K, dtype=torch.bfloat16, device=DEV)
    beta = torch.randn(N, 1, HV, dtype=torch.bfloat16, device=DEV)
    idx = torch.randperm(N, device=DEV).to(torch.int32)  # slots in a shuffled order, one token per sequence
    A_log, dt_bias = gate_params()

    def run(i):
        fused_recurrent_kda_fwd(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, initial_state=pools[i % copies],
                                inplace_final_state=True, state_v_first=True, ssm_state_indices=idx,
                                use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True,
                                use_beta_sigmoid_in_kernel=True)

    ms = graph_time_ms(run, copies, reps)
    return {"N": N, "ms": ms, "state_tb_per_s": state_bytes / (ms * 1e-3) / 1e12}


def prefill_row(name, lengths, reps):
    T, N = sum(lengths), len(lengths)
    q = torch.randn(1, T, H, K, dtype=torch.bfloat16, device=DEV)
    k = torch.randn(1, T, H, K, dtype=torch.bfloat16, device=DEV)
    v = torch.randn(1, T, HV, V, dtype=torch.bfloat16, device=DEV)
    g = torch.randn(1, T, HV, K, dtype=torch.bfloat16, device=DEV)
    beta = torch.randn(1, T, HV, dtype=torch.bfloat16, device=DEV)
    h0 = torch.randn(N, HV, V, K, device=DEV) * 0.1
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    cu = torch.tensor(offsets, dtype=torch.int64, device=DEV)
    A_log, dt_bias = gate_params()

    def run(i):
        chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True, use_qk_l2norm_in_kernel=True,
                  use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True, A_log=A_log, dt_bias=dt_bias,
                  state_v_first=True, cu_seqlens=cu, cu_seqlens_cpu=cu.cpu())

    with torch.inference_mode():
        ms = time_ms(run, reps)
    return {"packing": name, "tokens": T, "ms": ms}


PACKINGS = [("1x8192", [8192]), ("8x2048", [2048] * 8), ("32x512", [512] * 32),
            ("100,2000,37,900,4000,1,1155", [100, 2000, 37, 900, 4000, 1, 1155])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "copy_tb_per_s": copy_tb_per_s(args.reps)}
    # Triton compiles (and autotunes) each kernel on first use: progress goes to stderr meanwhile.
    result["decode"] = []
    for N in (64, 256, 1024):
        result["decode"].append(decode_row(N, args.reps))
        print(f"decode N={N}: {result['decode'][-1]['ms']:.3f} ms", file=sys.stderr, flush=True)
    result["prefill"] = []
    for name, lengths in PACKINGS:
        result["prefill"].append(prefill_row(name, lengths, args.reps))
        print(f"prefill {name}: {result['prefill'][-1]['ms']:.3f} ms", file=sys.stderr, flush=True)
    print(f"FLA anchors on {result['gpu']} (torch {result['torch']}); copy {result['copy_tb_per_s']:.2f} TB/s\n")
    print("| decode N | ms | state TB/s | of copy |\n|---|---|---|---|")
    for r in result["decode"]:
        print(f"| {r['N']} | {r['ms']:.3f} | {r['state_tb_per_s']:.2f} | "
              f"{100 * r['state_tb_per_s'] / result['copy_tb_per_s']:.0f}% |")
    print("\n| prefill packing | tokens | ms |\n|---|---|---|")
    for r in result["prefill"]:
        print(f"| {r['packing']} | {r['tokens']} | {r['ms']:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
