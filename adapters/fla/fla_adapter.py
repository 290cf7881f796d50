#!/usr/bin/env python3
"""An exec adapter for kda-oracle that runs flash-linear-attention's (FLA, fla-core 0.6.0) KDA kernels.

One FLA code path per process, chosen with --entry:
  recurrent      fla.ops.kda.fused_recurrent_kda: prefill and decode, dense initial/final states
  pooled-decode  fla.ops.kda.fused_recurrent.fused_recurrent_kda_fwd with ssm_state_indices: one token
                 per sequence, a state pool updated in place (indices passed as given, -1 included)
  chunk          fla.ops.kda.chunk_kda: prefill, chunk-start states (return_intermediate_states)
  verify         fla.ops.kda.fused_recurrent.fused_recurrent_kda_fwd with a 2-D ssm_state_indices and
                 num_accepted_tokens: speculative-decoding verify in the index-table form, the pool
                 updated in place (the table passed as the view it is, strides and -1 entries included)

    kda-oracle check --kernel exec:"python3 adapters/fla/fla_adapter.py --entry chunk"

Built on the Python adapter kit (adapters/python/kda_adapter): every buffer of a request lives whole on
the device, between guard bands of 0xFF bytes (NaN as floats; a slot stride more before a pool), tensors
are torch.as_strided views of it with the case's shapes, strides and offsets, and each call is timed.
This file is FLA's call mapping, capabilities and profiles. FLA's public functions get those views
(they make their own contiguous copies); fused_recurrent_kda_fwd, whose kernel assumes contiguous
activations, gets contiguous copies, and the pool itself. FLA's fresh
outputs are copied into the output views, so gaps stay as received; the whole output buffers go back.
(verify: the index table as its view, which FLA reads with its row stride only; num_accepted_tokens
as a contiguous copy, FLA reading it without a stride.)
A guard band FLA changed is answered as an error ("fla-<entry> changed N bytes outside buffer ...").

Every entry declares checks_contract=1: kda-oracle sends invalid calls too (only views outside their
buffers are refused before), and FLA's own checks decide. Each entry's profile names the rules that FLA
code path checks (reference/src/profiles.cpp); what FLA raises is answered through REJECTIONS (its
messages -> rules), anything else as an error with its type and message. The adapter itself refuses
only what its entry cannot express (the kit's EntryError): another state source than the entry's
(state_source_supported), and, for chunk_kda, final or chunk-start states in another dtype than the
fp32 FLA returns them in (state_dtype). chunk declares its arithmetic: bf16 or f16 operands with the
activations of that dtype (FLA keeps w, u, kg and v_new in the input dtype), tf32 with f32 ones (its
tl.dot products on fp32 run as TF32 on the GPU). See docs/fla.md.

A request naming persistent metadata tensors (the serving-loop and metadata-reuse properties) hands
FLA the same device tensor for each of them call after call, refilled in place (the kit's persistent.py).

Anything on stdout is protocol: the kit sends what FLA prints to stderr.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from kda_adapter import Entry, fla_options, main  # noqa: E402
from kda_adapter.fla import state_v_first  # noqa: E402
from kda_adapter.triton_options import bridge_interpreter  # noqa: E402

# What FLA 0.6.0 raises (fla/ops/kda/fused_recurrent.py, chunk.py) and what the kit raises for what an
# entry cannot express, as contract rules; first match wins. fused_recurrent_kda_fwd's one check is a
# bare `assert out.shape == v.shape`: a bare AssertionError there is o_shape (pooled-decode, verify).
REJECTIONS = [
    (r"^ValueError: The batch size is expected to be 1 rather than \d+ when using `cu_seqlens`", "varlen_batch_one"),
    (r"^ValueError: The number of initial states is expected to be equal to the number of input sequences",
     "initial_state_count"),
    (r"^ValueError: `allow_neg_eigval=True` requires `use_beta_sigmoid_in_kernel=True`", "neg_eigval_needs_beta_logits"),
    (r"^AssertionError: initial_state must be in float32", "state_dtype"),
    (r"^ValueError: `A_log` must be provided when `use_gate_in_kernel=True`", "softplus_needs_A_log"),
    (r"^ValueError: `chunk_size` must be either 32 or 64 for KDA", "chunk_size"),
    (r"^ValueError: `lower_bound` must be specified when `safe_gate=True`", "lower_bound_required"),
    (r"^ValueError: `lower_bound` must be in the safe range \[-5, 0\)", "lower_bound_range"),
    (r"^AssertionError: q and k must have the same shape", "qk_same_shape"),
    (r"^AssertionError: Currently we only support key headdim <=256 for KDA", "key_head_dim_max"),
    (r"^AssertionError: For GVA, num_v_heads \(HV=\d+\) must be evenly divisible", "hv_divisible"),
    (r"^AssertionError: g must have shape \[B, T, HV, K\]", "g_shape"),
    (r"^AssertionError: beta must have shape \[B, T, HV\]", "beta_shape"),
    (r"^EntryError: the \S+ entry takes", "state_source_supported"),
    (r"^EntryError: chunk_kda returns its (final|chunk-start) states? in float32", "state_dtype"),
]
BARE_ASSERT = [(r"^AssertionError$", "o_shape")]


def capabilities(modes, sources, state_dtypes, chunk_states=0):
    return {"modes": modes, "state_dtypes": state_dtypes, "layouts": "VK,KV", "state_sources": sources,
            "chunk_states": chunk_states, "token_states": 0}


def takes(entry, what, has_it):
    """accepts(case) of an entry that takes one state source: `what`, in words."""
    return lambda case: None if has_it(case) else f"the {entry} entry takes {what} only"


def options(case):
    """FLA's keyword arguments, with the state layout (FLA's own; its forks lack state_v_first)."""
    return dict(fla_options(case), state_v_first=state_v_first(case))


def activations(case):
    return [case.view(n) for n in ("q", "k", "v", "g", "beta")]


def run_recurrent(case, fla):
    o, final = fla.fused_recurrent_kda(*activations(case), **options(case),
                                       initial_state=case.optional("initial_state"),
                                       output_final_state=case.has("final_state"))
    case.view("o").copy_(o)
    if case.has("final_state"):
        case.view("final_state").copy_(final)


def run_on_pool(case, fla, **table):
    """fused_recurrent_kda_fwd on the case's pool in place: the pool as the view it is (FLA indexes
    slots with its slot stride, any, and assumes compact slots without checking: a pool whose slots are
    not compact goes in as it is, and kda-oracle sees what FLA makes of it), the activations as
    contiguous copies, `table` the verify arguments."""
    pool = case.view("state_pool")
    kwargs = {k: v.contiguous() if isinstance(v, case.torch.Tensor) else v for k, v in options(case).items()}
    o = case.torch.empty(case.view("o").shape, dtype=case.view("o").dtype, device=pool.device)
    fla.fused_recurrent_kda_fwd(*(x.contiguous() for x in activations(case)), **kwargs, initial_state=pool,
                                inplace_final_state=True, ssm_state_indices=case.view("state_indices"), out=o,
                                **table)
    case.view("o").copy_(o)


def run_pooled_decode(case, fla):
    run_on_pool(case, fla)


def run_verify(case, fla):
    """The index-table form: the [N, L] table as the view it is (FLA takes its row stride and reads its
    columns as if their stride were 1), the accepted counts as a contiguous copy (FLA passes no stride
    for them); -1 entries go in as given."""
    run_on_pool(case, fla, num_accepted_tokens=case.view("num_accepted").contiguous())


def chunk_accepts(case):
    if not dense(case):
        return "the chunk entry takes dense or no initial states only"
    for name, what in (("final_state", "final state"), ("chunk_states", "chunk-start states")):
        if case.has(name) and case.dtype_of(name) != "f32":
            return f"chunk_kda returns its {what} in float32, not {case.dtype_of(name)}"
    return None


def run_chunk(case, fla):
    a = case.attrs
    result = fla.chunk_kda(*activations(case), **options(case), initial_state=case.optional("initial_state"),
                           output_final_state=case.has("final_state"), safe_gate=bool(a["safe_gate"]),
                           chunk_size=int(a["chunk_size"]), return_intermediate_states=case.has("chunk_states"))
    case.view("o").copy_(result[0])
    if case.has("final_state"):
        case.view("final_state").copy_(result[1])
    if case.has("chunk_states"):
        states = case.view("chunk_states")
        h = result[2]  # [B, chunks per row, HV, a, b]: every sequence's chunks, in order
        if h.numel() != states.numel():
            raise ValueError(f"chunk_kda returned {list(h.shape)} chunk states, the case has {list(states.shape)}")
        states.copy_(h.reshape(states.shape))


def chunk_capabilities(args):
    # chunk_kda returns its chunk-start states in the input dtype; kda-oracle asks for them in the state
    # dtype (f32 under fla_chunk), so only f32 inputs give them as asked.
    return capabilities("prefill", "none,dense", "f32", chunk_states=int(args.dtype == "f32"))


CHUNK_ARITHMETIC = {"bf16": "bf16-operands", "f16": "f16-operands", "f32": "tf32"}

def dense(case):
    return not case.has("state_pool")


def one_index_per_sequence(case):
    return case.has("state_pool") and not (case.has("num_accepted") or case.has("scratch_states"))


def index_table(case):
    return case.has("num_accepted")


ENTRIES = [
    Entry("recurrent", "fla_fused_recurrent", capabilities("prefill,decode", "none,dense", "f32"), run_recurrent,
          REJECTIONS, accepts=takes("recurrent", "dense or no initial states", dense)),
    Entry("pooled-decode", "fla_pooled_decode", capabilities("decode", "pool", "f32,bf16"), run_pooled_decode,
          REJECTIONS + BARE_ASSERT,
          accepts=takes("pooled-decode", "a state pool with one index per sequence", one_index_per_sequence)),
    Entry("chunk", "fla_chunk", chunk_capabilities, run_chunk, REJECTIONS,
          arithmetic=lambda args: CHUNK_ARITHMETIC.get(args.dtype, "fp32"), accepts=chunk_accepts),
    Entry("verify", "fla_verify", capabilities("verify", "table", "f32,bf16"), run_verify, REJECTIONS + BARE_ASSERT,
          accepts=takes("verify", "an [N, L] index table with accepted counts", index_table)),
]


def load(args):
    """FLA's entry points, imported once (FLA imports all of fla.ops: seconds)."""
    # The entries name FLA's Triton code paths: no optional backend (FlashKDA, TileLang) may take over.
    os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
    import fla.ops.kda as kda
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd

    if args.interpret:  # the chunk state kernel's loop index and the safe-gate intra kernel's gather
        import fla.ops.common.chunk_delta_h as chunk_delta_h
        import fla.ops.kda.chunk_intra as chunk_intra
        bridge_interpreter(range_in=[chunk_delta_h], gather_in=[chunk_intra])
    return argparse.Namespace(fused_recurrent_kda=kda.fused_recurrent_kda, chunk_kda=kda.chunk_kda,
                              fused_recurrent_kda_fwd=fused_recurrent_kda_fwd)


if __name__ == "__main__":
    main(ENTRIES, load, __doc__.split("\n")[0], library="fla", dtype="bf16", head_dims="64,128")
