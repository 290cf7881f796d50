#!/usr/bin/env python3
"""An exec adapter for kda-oracle that runs SGLang 0.5.23's KDA kernels, one code path per process.

    kda-oracle check --kernel exec:"python3 adapters/sglang/sglang_adapter.py --entry triton-decode"

Handshake names are sglang-<entry>; --dtype (bf16, f16, f32; default bf16) is the one dtype of q, k,
v, g, beta and o, --head-dims (default 64,128) bounds compilations; the kit's other options apply.

  triton-decode         fused_sigmoid_gating_delta_rule_update(is_kda=True): TritonKDAKernel.decode
  triton-verify         the same with disable_state_update and a scratch buffer: TritonKDAKernel.target_verify
  triton-chunk          fla/kda.py chunk_kda on a pool: TritonKDAKernel.extend (the prefill)
  triton-packed-decode  fused_recurrent_kda_packed_decode: TritonKDAKernel.packed_decode, pinned to its
                        Triton kernel (its CUDA fast path's covered() answers False)
  helion-packed-decode  helion_fused_recurrent_kda_packed_decode: HelionKDAKernel.packed_decode
  helion-verify         helion_kda_verify: HelionKDAKernel.target_verify
  helion-chunk          helion/kda_prefill.py chunk_kda on a pool: HelionKDAKernel.extend

SGLang's modules are imported by file without importing sglang (sglang_loader.py); the call
mappings, capabilities and rejection tables are below, the input transforms in sglang_inputs.py, the
profiles in reference/src/profiles.cpp and the whole story in docs/conformance-sglang.md. Every entry
declares checks_contract=1: SGLang's own checks decide, answered through each entry's table of
SGLang's messages -> contract rules. Anything on stdout is protocol: diagnostics go to stderr.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "python")]
from kda_adapter import Entry, main  # noqa: E402
from kda_adapter.dtypes import text  # noqa: E402
import sglang_inputs as inputs  # noqa: E402
import sglang_loader  # noqa: E402

RECURRENT = "sglang.kernels.ops.attention.linear.fused_sigmoid_gating_recurrent"
FLA_KDA = "sglang.kernels.ops.attention.fla.kda"
PACKED = "sglang.kernels.ops.attention.fla.fused_recurrent"
CUDA_PACKED = "sglang.kernels.ops.attention.kda_packed_decode"
HELION_DECODE = "sglang.kernels.ops.attention.helion.kda_decode"
HELION_VERIFY = "sglang.kernels.ops.attention.helion.kda_verify"
HELION_PREFILL = "sglang.kernels.ops.attention.helion.kda_prefill"

# What the adapter refuses (require()): another state form, a form not whole, [K, V] states.
FORM = [(r"^EntryError: the \S+ entry takes", "state_source_supported"),
        (r"^EntryError: the \S+ entry (needs|has no place for) ", "state_source"),
        (r"^EntryError: the \S+ entry keeps states as \[V, K\]", "state_layout")]
# SGLang's messages, read from the installed 0.5.23 sources (tests/adapters/sglang_messages.txt).
SCALE = [(r"^AssertionError: scale must be positive", "scale_positive")]
CHUNK = [(r"^AssertionError: Only batch size 1 is supported when cu_seqlens are provided", "varlen_batch_one"),
         (r"^AssertionError: current kernel does not support head dimension larger than 256", "key_head_dim_max")]
PACKED_CHECKS = [
    (r"^ValueError: `ssm_state_indices` must be 1D for packed decode", "state_indices_shape"),
    (r"^ValueError: `ssm_state_indices` must have shape \[B\]", "initial_state_count"),
    (r"^ValueError: `initial_state` must be a 4D tensor", "state_pool_rank"),
    (r"^ValueError: `initial_state` must be contiguous in the last dim", "state_pool_inner_strides"),
    (r"^ValueError: `A_log` must have \d+ elements", "A_log_size"),
    (r"^ValueError: `dt_bias` must have \d+ elements", "dt_bias_size"),
    (r"^ValueError: `(a|b|out)` must have shape", "state_pool_shape"),
    (r"^ValueError: Invalid packed `mixed_qkv` last dim", "state_pool_shape"),
    (r"^ValueError: Invalid packed Q size", "qk_same_shape"),
    (r"^ValueError: Invalid head config inferred from mixed_qkv", "hv_divisible"),
]
HELION_DIMS = [(r"^ValueError: Helion KDA decode requires power-of-two key and value head dimensions",
                "head_dims_supported")]
HELION_CHUNK = [(r"^ValueError: varlen KDA requires batch size 1", "varlen_batch_one"),
                (r"^ValueError: g and beta must cover every q token", "g_shape"),
                (r"^ValueError: KDA prefill requires an indexed initial-state pool", "state_source_supported")]
HELION_VERIFY_CHECKS = [
    (r"^QueryKeyShapes: Inconsistent Helion KDA verify query/key head layout", "qk_same_shape"),
    (r"^ValueError: Helion KDA verify expects packed \[1, T, H, K\] inputs", "varlen_batch_one"),
    (r"^ValueError: Inconsistent Helion KDA verify query/key head layout", "hv_divisible"),
    (r"^ValueError: Helion KDA verify requires per-candidate state snapshots", "state_source"),
    (r"^ValueError: Helion KDA verify snapshot capacity is smaller than cache_steps", "scratch_steps"),
    (r"^EntryError: helion_kda_verify takes no scale", "scale_positive"),
]


def contiguous(case, *names):
    """Contiguous copies (the view itself where it is one): SGLang's recurrent kernels take a token
    stride at most and index heads, key and value dims as if compact."""
    return [case.view(n).contiguous() for n in names]


FORMS = {  # the state source an entry takes: in words, the tensors it is made of, and its tell-tale tensors
    "pool": ("a state pool with one index per sequence", ("state_pool", "state_indices"), ("state_pool", "state_indices")),
    "scratch": ("the scratch verify form", ("state_pool", "state_indices", "scratch_states", "scratch_indices"),
                ("scratch_states", "scratch_indices")),
}
OTHER_FORMS = {"pool": ("scratch_states", "scratch_indices", "num_accepted"), "scratch": ("num_accepted",)}


def require(case, entry, source):
    """Why the entry cannot express the case, or None. SGLang's calls take one state form, whole, in
    the [V, K] layout: another form is state_source_supported, a part missing or a tensor the call has
    no place for (a dense initial or final state beside the pool) is state_source, [K, V] states are
    state_layout (SGLang has no layout option)."""
    words, parts, tells = FORMS[source]
    if not any(case.has(n) for n in tells) or any(case.has(n) for n in OTHER_FORMS[source]):
        return f"the {entry} entry takes {words} only"
    missing = [n for n in parts if not case.has(n)]
    if missing:
        return f"the {entry} entry needs {', '.join(missing)} with {words}"
    extra = [n for n in ("initial_state", "final_state", "chunk_states", "token_states") if case.has(n)]
    if extra and not (extra == ["chunk_states"] and entry.endswith("-chunk")):
        return f"the {entry} entry has no place for {', '.join(extra)}"
    if text(case.attrs["state_layout"]) != "VK":
        return f"the {entry} entry keeps states as [V, K] (K contiguous) only"
    return None


def recurrent_call(case, sglang, **verify):
    a, A_log, dt_bias, lower_bound = inputs.raw_gate(case)
    q, k, v = contiguous(case, "q", "k", "v")
    cu = case.optional("cu_seqlens")
    o = sglang[RECURRENT].fused_sigmoid_gating_delta_rule_update(
        A_log=A_log, a=a.contiguous(), dt_bias=dt_bias, softplus_beta=1.0, softplus_threshold=20.0, q=q, k=k, v=v,
        b=inputs.beta_logits(case).contiguous(), initial_state_source=case.view("state_pool"),
        initial_state_indices=case.view("state_indices").contiguous(),
        scale=float(case.attrs["scale"]) if "scale" in case.attrs else None,
        use_qk_l2norm_in_kernel=bool(case.attrs["l2norm_qk"]), cu_seqlens=None if cu is None else cu.contiguous(),
        is_kda=True, lower_bound=lower_bound, **verify)
    case.view("o").copy_(o.reshape(case.view("o").shape))


def run_triton_decode(case, sglang):
    recurrent_call(case, sglang)


def run_triton_verify(case, sglang):
    """TritonKDAKernel.target_verify's call: the pool only read, the state after every token stored in
    scratch_states[scratch_indices[n], t] (a chain: no parent-token table)."""
    recurrent_call(case, sglang, disable_state_update=True, intermediate_states_buffer=case.view("scratch_states"),
                   intermediate_state_indices=case.view("scratch_indices").contiguous(),
                   cache_steps=int(case.attrs["L"]), retrieve_parent_token=None)


def chunk_call(case, chunk_kda):
    """TritonKDAKernel.extend's call (HelionKDAKernel.extend's is the same on Helion's chunk_kda):
    chunk_kda on the pool, in place. Without the gate in kernel g is the log-decay and A_log is None
    (SGLang's 'already activated' path). q and k go in contiguous: chunk_kda makes them so only on its
    l2norm path (the one the engine always takes) and its kernels index them as compact. Triton's
    chunk_kda writes o into v's storage (chunk_gla_fwd_o_gk(o=v) on v.contiguous()), so v goes in as a
    copy: the request's v stays as kda-oracle wrote it."""
    if case.attrs["gate_in_kernel"]:
        g, A_log, dt_bias, lower_bound = inputs.raw_gate(case)
    else:
        g, A_log, dt_bias, lower_bound = case.view("g"), None, None, None
    cu = case.optional("cu_seqlens")
    result = chunk_kda(
        q=case.view("q").contiguous(), k=case.view("k").contiguous(), v=case.view("v").clone(), g=g,
        beta=case.view("beta"),
        scale=float(case.attrs["scale"]) if "scale" in case.attrs else None, initial_state=case.view("state_pool"),
        initial_state_indices=case.view("state_indices").contiguous(),
        use_qk_l2norm_in_kernel=bool(case.attrs["l2norm_qk"]), cu_seqlens=None if cu is None else cu.contiguous(),
        A_log=A_log, dt_bias=dt_bias, lower_bound=lower_bound, output_intermediate_states=case.has("chunk_states"))
    o, h = result if case.has("chunk_states") else (result, None)
    case.view("o").copy_(o)
    if h is not None:  # [B, chunks per row, HV, V, K]: every sequence's chunk-start states, in order
        states = case.view("chunk_states")
        if h.numel() != states.numel():
            raise ValueError(f"chunk_kda returned {list(h.shape)} chunk states, the case has {list(states.shape)}")
        states.copy_(h.reshape(states.shape))


def run_triton_chunk(case, sglang):
    chunk_call(case, sglang[FLA_KDA].chunk_kda)


def run_helion_chunk(case, sglang):
    """Helion's chunk_kda hands a call whose q has one token (T = 1) to the Triton chunk_kda, by design."""
    chunk_call(case, sglang[HELION_PREFILL].chunk_kda)


def packed_call(case, decode):
    """SGLang's packed decode form: one row per token, mixed_qkv = [q | k | v] flattened per row."""
    torch = case.torch
    q, k, v = (case.view(n) for n in ("q", "k", "v"))
    rows = q.shape[0] * q.shape[1]
    mixed = torch.cat([x.reshape(rows, -1) for x in (q, k, v)], dim=1)
    a, A_log, dt_bias, lower_bound = inputs.raw_gate(case)
    o = case.view("o")
    out = torch.empty((rows, 1) + tuple(o.shape[2:]), dtype=o.dtype, device=o.device)
    scale = float(case.attrs["scale"]) if "scale" in case.attrs else k.shape[-1] ** -0.5  # SGLang passes it
    decode(mixed_qkv=mixed, a=a.reshape(rows, -1).contiguous(), b=inputs.beta_logits(case).reshape(rows, -1).contiguous(),
           A_log=A_log, dt_bias=dt_bias, scale=scale, initial_state=case.view("state_pool"), out=out,
           ssm_state_indices=case.view("state_indices"), use_qk_l2norm_in_kernel=bool(case.attrs["l2norm_qk"]),
           lower_bound=lower_bound)
    o.copy_(out.reshape(o.shape))


def run_triton_packed_decode(case, sglang):
    packed_call(case, sglang[PACKED].fused_recurrent_kda_packed_decode)


def run_helion_packed_decode(case, sglang):
    packed_call(case, sglang[HELION_DECODE].helion_fused_recurrent_kda_packed_decode)


class QueryKeyShapes(ValueError):
    """helion_kda_verify's "Inconsistent ... query/key head layout" raised for k shaped unlike q: one
    message for two rules (HV % H and k like q), told apart by the case."""


def helion_verify_accepts(case):
    """helion_kda_verify always l2-normalises q and k and scales by K^-0.5 (it has neither option): its
    handshake says so (always=l2norm_in_kernel, explicit_scale=0), so only a broken scale reaches it here."""
    reason = require(case, "helion-verify", "scratch")
    if reason is None and "scale" in case.attrs and float(case.attrs["scale"]) != case.view("q").shape[-1] ** -0.5:
        reason = f"helion_kda_verify takes no scale (always K^-0.5), the case has {float(case.attrs['scale'])}"
    return reason


def run_helion_verify(case, sglang):
    """HelionKDAKernel.target_verify's call: packed [1, T, ...] tokens (without cu_seqlens, the B rows
    of T flattened as the engine packs them; with it, as given), the pool only read, per-token states
    to scratch_states[scratch_indices[n], t]."""
    a, A_log, dt_bias, lower_bound = inputs.raw_gate(case)
    b = inputs.beta_logits(case)
    tokens = contiguous(case, "q", "k", "v") + [a, b]
    if not case.has("cu_seqlens"):
        tokens = [inputs.flat(x) for x in tokens]
    q, k, v, a, b = (x.contiguous() for x in tokens)
    try:
        out = sglang[HELION_VERIFY].helion_kda_verify(
            q=q, k=k, v=v, a=a, b=b, A_log=A_log, dt_bias=dt_bias, ssm_states=case.view("state_pool"),
            cache_indices=case.view("state_indices").contiguous(),
            query_start_loc=inputs.cu_seqlens_of(case).contiguous(),
            intermediate_states_buffer=case.view("scratch_states"),
            intermediate_state_indices=case.view("scratch_indices").contiguous(), cache_steps=int(case.attrs["L"]),
            retrieve_parent_token=None, lower_bound=lower_bound)
    except ValueError as e:
        if "query/key head layout" in str(e) and k.shape != q.shape:
            raise QueryKeyShapes(str(e)) from e
        raise
    case.view("o").copy_(out.reshape(case.view("o").shape))


def capabilities(modes, sources, state_dtypes="f32,bf16", **more):
    """Handshake capabilities besides the dtypes and head dims (the kit adds them from --dtype and
    --head-dims). beta is always given: the kernels take only logits, which cannot express
    allow_neg_eigval's 2 sigmoid(b), and a given beta goes in as its exact logit (sglang_inputs.py)."""
    return dict(dict(modes=modes, state_dtypes=state_dtypes, layouts="VK", state_sources=sources,
                     beta_from_logits=0, chunk_states=0, token_states=0), **more)


def chunk_capabilities(args):
    # chunk_kda returns its chunk-start states in k's dtype: only f32 inputs give them as kda-oracle asks
    # for them (in the state dtype), and then every state is f32. Chunk size fixed at 64.
    f32 = args.dtype == "f32"
    return capabilities("prefill", "pool", state_dtypes="f32" if f32 else "f32,bf16", chunk_sizes=64,
                        chunk_states=int(f32))


# chunk_kda's tl.dot operands are in the input dtype (w, u, h stored in it too); fp32 dots run as TF32.
CHUNK_ARITHMETIC = {"bf16": "bf16-operands", "f16": "f16-operands", "f32": "tf32"}


def takes(source, entry):
    return lambda case: require(case, entry, source)


# The recurrent kernels load every operand as fp32 and keep the state in fp32 between tokens: fp32.
ENTRIES = [
    Entry("triton-decode", "sglang_triton_decode", capabilities("decode", "pool"), run_triton_decode,
          SCALE + FORM, accepts=takes("pool", "triton-decode")),
    Entry("triton-verify", "sglang_triton_verify", capabilities("verify", "scratch"), run_triton_verify,
          SCALE + FORM, accepts=takes("scratch", "triton-verify")),
    Entry("triton-chunk", "sglang_triton_chunk", chunk_capabilities, run_triton_chunk, CHUNK + FORM,
          arithmetic=lambda args: CHUNK_ARITHMETIC.get(args.dtype, "fp32"), accepts=takes("pool", "triton-chunk")),
    Entry("helion-chunk", "sglang_helion_chunk", chunk_capabilities, run_helion_chunk, HELION_CHUNK + CHUNK + FORM,
          arithmetic=lambda args: CHUNK_ARITHMETIC.get(args.dtype, "fp32"), accepts=takes("pool", "helion-chunk")),
    Entry("triton-packed-decode", "sglang_packed_decode", capabilities("decode", "pool"), run_triton_packed_decode,
          PACKED_CHECKS + FORM, accepts=takes("pool", "triton-packed-decode")),
    Entry("helion-packed-decode", "sglang_helion_packed_decode", capabilities("decode", "pool"),
          run_helion_packed_decode, PACKED_CHECKS + HELION_DIMS + FORM, accepts=takes("pool", "helion-packed-decode")),
    Entry("helion-verify", "sglang_helion_verify",
          capabilities("verify", "scratch", always="l2norm_in_kernel", explicit_scale=0), run_helion_verify,
          HELION_VERIFY_CHECKS + FORM, accepts=helion_verify_accepts),
]


MODULES = {"triton-decode": [RECURRENT], "triton-verify": [RECURRENT], "triton-chunk": [FLA_KDA],
           "helion-chunk": [HELION_PREFILL], "triton-packed-decode": [PACKED], "helion-packed-decode": [HELION_DECODE],
           "helion-verify": [HELION_VERIFY]}


class CudaPackedDecodeOff:
    """Stands in for sglang.kernels.ops.attention.kda_packed_decode (SGLang's JIT CUDA fast path, which
    fused_recurrent_kda_packed_decode imports and takes when covered() says so): covered() is False, so
    the triton-packed-decode entry always runs the Triton kernel it names."""
    __name__ = CUDA_PACKED

    @staticmethod
    def covered(*args, **kwargs):
        return False


def load(args):
    """The SGLang modules the entry calls, by name ({module name: module})."""
    import torch
    sglang_loader.install(torch)
    if args.entry == "triton-packed-decode":
        sys.modules[CUDA_PACKED] = CudaPackedDecodeOff()
    return {name: sglang_loader.load(torch, name) for name in MODULES[args.entry]}


if __name__ == "__main__":
    main(ENTRIES, load, __doc__.splitlines()[0], library="sglang", dtype="bf16", head_dims="64,128")
