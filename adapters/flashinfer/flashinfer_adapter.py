#!/usr/bin/env python3
"""An exec adapter for kda-oracle that runs FlashInfer 0.7.2's KDA decode kernels (CuTe DSL backend).

One code path per process, chosen with --entry (flashinfer.kda.recurrent_kda, backend="cute-dsl",
which forwards to flashinfer/kda_kernels/recurrent_kda.py run_recurrent_kda):
  decode   one token per sequence with cu_seqlens, a [slots, HV, V, K] pool selected by a 1-D
           ssm_state_indices and updated in place
  verify   fused speculative decode: num_spec_tokens = L - 1, an [N, L] ssm_state_indices and
           num_accepted_tokens (the index-table form), the pool updated in place

    kda-oracle check --kernel exec:"python3 adapters/flashinfer/flashinfer_adapter.py --entry decode"

These are FlashInfer's only KDA paths that run on sm_90: its prefill backends (Cake, CuTe DSL BT16 and
small-BH, TIRx, PTX, cuDNN) and its frozen decode need SM100/SM103 or SM120. The CuTe DSL runtime
(nvidia-cutlass-dsl-libs-cu13 4.8.0, an 87.7 MiB wheel) does not fit what reaches the GPU machine here
(conformance/plan/flashinfer.json, not_run): the adapter is written, tested on the CPU for its
mapping, and not yet run.

The backend is pinned (backend="cute-dsl"): "auto" would route equal-head K = 128 decode calls to the
frozen Cake kernels on SM100. Activations go in as the views they are (the wrapper makes its own
contiguous copies); calls without cu_seqlens (N rows of L tokens) get cu_seqlens = [0, L, 2L, ..] and
the rows packed into one; the fresh output is copied into the case's output view.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
from kda_adapter import Entry, fla_options, main  # noqa: E402

# What run_recurrent_kda raises (flashinfer/kda_kernels/recurrent_kda.py, 0.7.2) -> rules.
REJECTIONS = [
    (r"^ValueError: Batch size must be 1 with cu_seqlens, got B=\d+", "varlen_batch_one"),
    (r"^ValueError: K must equal V, got K=\d+, V=\d+", "head_dims_supported"),
    (r"^ValueError: HEAD_DIM must be 64 or 128, got K=\d+", "head_dims_supported"),
    (r"^TypeError: (q|k|v|g|beta) must be bfloat16, got", "input_dtype"),
    (r"^ValueError: HV must be a positive multiple of H, got H=\d+, HV=\d+", "hv_divisible"),
    (r"^ValueError: A_log is required when use_gate_in_kernel=True", "softplus_needs_A_log"),
    (r"^TypeError: (A_log|dt_bias) must be float32, got", "gate_params_dtype"),
    (r"^ValueError: lower_bound must be negative", "lower_bound_range"),
    (r"^ValueError: ssm_state_indices must be 2D \[N, \d+\] in spec mode", "state_indices_shape"),
    (r"^ValueError: ssm_state_indices\.shape\[0\]=\d+ must equal N=\d+", "initial_state_count"),
    (r"^EntryError: FlashInfer's KDA stores states \[V, K\]", "state_layout"),
    (r"^EntryError: the \S+ entry takes", "state_source_supported"),
]


def accepts_form(entry, taken, has_it):
    def accepts(case):
        if not has_it(case):
            return f"the {entry} entry takes {taken} only"
        if case.attrs.get("allow_neg_eigval"):
            return "FlashInfer's recurrent_kda has no allow_neg_eigval"
        layout = case.attrs["state_layout"]
        layout = layout.decode() if isinstance(layout, bytes) else str(layout)
        return None if layout == "VK" else "FlashInfer's KDA stores states [V, K] only"
    return accepts


def packed(case, name):
    x = case.view(name)
    return x.reshape(1, x.shape[0] * x.shape[1], *x.shape[2:])


def run(case, fi, **spec):
    torch = case.torch
    opts = fla_options(case)
    if case.has("cu_seqlens"):
        q, k, v, g, beta = (case.view(n) for n in ("q", "k", "v", "g", "beta"))
        cu_seqlens = opts["cu_seqlens"]
    else:
        q, k, v, g, beta = (packed(case, n) for n in ("q", "k", "v", "g", "beta"))
        rows, tokens = case.view("q").shape[:2]
        cu_seqlens = torch.arange(0, (rows + 1) * tokens, tokens, dtype=torch.int32, device=q.device)
    A_log = opts["A_log"]
    if A_log is None and opts["use_gate_in_kernel"] and opts["lower_bound"] is not None:
        A_log = torch.zeros(g.shape[2], dtype=torch.float32, device=g.device)  # A = 1: a missing A_log's meaning
    o, _ = fi.recurrent_kda(
        q, k, v, g, beta, A_log=A_log, dt_bias=opts["dt_bias"], scale=opts["scale"],
        initial_state=case.view("state_pool"), output_final_state=False,
        use_qk_l2norm_in_kernel=opts["use_qk_l2norm_in_kernel"], use_gate_in_kernel=opts["use_gate_in_kernel"],
        lower_bound=opts["lower_bound"], cu_seqlens=cu_seqlens, ssm_state_indices=case.view("state_indices"),
        beta_is_logit=opts["use_beta_sigmoid_in_kernel"], backend="cute-dsl", **spec)
    case.view("o").copy_(o.reshape(case.view("o").shape))


def run_decode(case, fi):
    run(case, fi)


def run_verify(case, fi):
    run(case, fi, num_spec_tokens=int(case.attrs["L"]) - 1, num_accepted_tokens=case.view("num_accepted"))


CAPS = dict(layouts="VK", state_dtypes="bf16,f32", key_head_dims="64,128", value_head_dims="64,128",
            chunk_states=0, token_states=0, neg_eigval=0)
ENTRIES = [
    Entry("decode", "flashinfer_decode", dict(CAPS, modes="decode", state_sources="pool"), run_decode, REJECTIONS,
          accepts=accepts_form("decode", "a state pool with one index per sequence",
                               lambda c: c.has("state_pool") and not c.has("num_accepted") and not c.has("scratch_states"))),
    Entry("verify", "flashinfer_verify", dict(CAPS, modes="verify", state_sources="table"), run_verify, REJECTIONS,
          accepts=accepts_form("verify", "an [N, L] index table with accepted counts", lambda c: c.has("num_accepted"))),
]


def load(args):
    """flashinfer.kda from .carry/python (scripts/pack-flashinfer.sh: the modules it imports, without
    flashinfer/__init__.py, which would import the whole library: flashinfer is then a namespace
    package) or an installed flashinfer."""
    carried = os.path.join(os.path.dirname(os.path.dirname(HERE)), ".carry", "python")
    if os.path.isdir(os.path.join(carried, "flashinfer")):
        sys.path.insert(0, carried)
    import flashinfer.kda as kda
    return kda


if __name__ == "__main__":
    main(ENTRIES, load, __doc__.split("\n")[0], library="flashinfer", dtype="bf16", head_dims="64,128")
