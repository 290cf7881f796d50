#!/usr/bin/env python3
"""An exec adapter for kda-oracle in pure numpy + h5py: the example of adapters/README.md.

Built on the Python adapter kit (adapters/python/kda_adapter, numpy backend), which speaks the line
protocol, holds the request's whole buffers between guard bands and keeps persistent metadata for a
serving run; this file is the kernel: the KDA recurrence of kda-facts §1 token by token (in float64,
all value heads at once), reading and writing every tensor through its strided view, so padded,
permuted and fused layouts, pools with -1 padding rows and both state layouts work as they do for a
kernel handed raw pointers.

Speculative-decoding verify calls (mode "verify") come in both forms: the index table (request n
starts from slot state_indices[n, num_accepted[n] - 1] and stores the state after token t in slot
state_indices[n, t], -1 meaning nowhere) and the scratch buffer (request n starts from slot
state_indices[n] of a pool it only reads and stores the state after token t in
scratch_states[scratch_indices[n], t]). A request whose initial slot is -1 is a padding row.

    kda-oracle check --kernel exec:"python3 adapters/numpy_adapter.py" --cases 10

--no-pool (--entry no-pool) declares no state pool (state_sources=none,dense, and so no verify, whose
forms read a pool): a kernel without pools, whose pool and verify properties kda-oracle reports skipped.
--verify-only (--entry verify-only) declares verify calls only (modes=verify, state_sources=table,scratch),
as a dedicated verify kernel would: the properties that need prefill or decode calls are reported skipped.

Anything on stdout is protocol: the kit sends what the code prints to stderr.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))
from kda_adapter import Entry, main  # noqa: E402
from kda_adapter.dtypes import from_float, text, to_float  # noqa: E402

PROFILE = "strict"  # kda-oracle checks this contract before sending a case (no checks_contract=1)
CAPABILITIES = {"modes": "prefill,decode,verify", "input_dtypes": "bf16,f16,f32,f64",
                "output_dtypes": "bf16,f16,f32,f64", "state_dtypes": "bf16,f32,f64", "layouts": "VK,KV",
                "state_sources": "none,dense,pool,table,scratch"}


def read(case, name):
    """float64 values of a tensor."""
    return to_float(np.array(case.view(name)), case.dtype_of(name))


def read_int(case, name):
    return np.array(case.view(name)).astype(np.int64)


def write(case, name, values):
    case.view(name)[...] = from_float(values, case.dtype_of(name))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def preprocess(case):
    """q (scaled, per value head), k (per value head), v, g (log decay), beta: float64 [B,T,HV,...]."""
    a = case.attrs
    H, HV, K = int(a["H"]), int(a["HV"]), int(a["K"])
    q, k, v, g, beta = (read(case, n) for n in ("q", "k", "v", "g", "beta"))
    if a["l2norm_qk"]:
        q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
        k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (float(a["scale"]) if "scale" in a else K ** -0.5)
    if a["beta_from_logits"]:
        beta = (2.0 if a["allow_neg_eigval"] else 1.0) * sigmoid(beta)
    if a["gate_in_kernel"]:
        A = np.exp(read(case, "A_log")) if case.has("A_log") else np.ones(HV)
        bias = read(case, "dt_bias").reshape(HV, K) if case.has("dt_bias") else np.zeros((HV, K))
        x = g + bias
        if "lower_bound" in a:
            g = float(a["lower_bound"]) * sigmoid(A[:, None] * x)
        else:
            g = -A[:, None] * softplus(x)
    group = HV // H  # grouped value attention: value head hv reads q/k head hv // group
    return np.repeat(q, group, axis=2), np.repeat(k, group, axis=2), v, g, beta


def as_kv(state, vk):
    """[..., a, b] stored states as [..., K, V]."""
    return np.swapaxes(state, -1, -2) if vk else state


def run_prefill_by_sequence(case, compute):
    """A prefill case (dense or no initial states) computed one sequence at a time by
    compute(q, k, v, g, beta, S0) -> (o [len, HV, V], chunk-start states [HV, K, V] each, final state):
    the test adapters' planted and declared-precision kernels."""
    a = case.attrs
    B, T, N, HV, K, V = (int(a[n]) for n in ("B", "T", "N", "HV", "K", "V"))
    vk = text(a["state_layout"]) == "VK"
    q, k, v, g, beta = preprocess(case)
    cu = read_int(case, "cu_seqlens") if case.has("cu_seqlens") else None
    initial = as_kv(read(case, "initial_state"), vk) if case.has("initial_state") else None
    o = np.zeros((B, T, HV, V))
    final = np.zeros((N, HV, K, V))
    chunk_states = []
    for n in range(N):
        b, first = (0, int(cu[n])) if cu is not None else (n, 0)
        length = int(cu[n + 1]) - first if cu is not None else T
        S0 = np.zeros((HV, K, V)) if initial is None else initial[n]
        seq = tuple(x[b, first:first + length] for x in (q, k, v, g, beta))
        o[b, first:first + length], starts, final[n] = compute(*seq, S0)
        chunk_states += starts
    write(case, "o", o)
    if case.has("final_state"):
        write(case, "final_state", as_kv(final, vk))
    if case.has("chunk_states"):
        write(case, "chunk_states", as_kv(np.array(chunk_states).reshape((-1, HV, K, V)), vk))


def initial_slots(case, N):
    """The pool slot each request starts from (-1: a padding row): state_indices[n], or in the
    index-table form state_indices[n, num_accepted[n] - 1] (the contract has checked the counts)."""
    indices = read_int(case, "state_indices")
    if not case.has("num_accepted"):
        return indices
    accepted = read_int(case, "num_accepted")
    return np.array([indices[n, accepted[n] - 1] for n in range(N)], dtype=np.int64)


def store_verify_states(case, tokens, spans, vk):
    """A verify call's state after every token, where its form says: pool slot state_indices[n, t]
    (index table) or scratch_states[scratch_indices[n], t] (scratch); -1 stores nothing."""
    indices = read_int(case, "state_indices")
    table = case.has("num_accepted")
    rows = None if table else read_int(case, "scratch_indices")
    target = "state_pool" if table else "scratch_states"
    view, dtype = case.view(target), case.dtype_of(target)
    for n, (b, first, length) in enumerate(spans):
        if length is None:  # a padding row
            continue
        for t in range(length):
            at = (indices[n, t],) if table else (rows[n], t)
            if at[0] >= 0:
                view[at] = from_float(as_kv(tokens[b, first + t], vk), dtype)


def sequence_spans(case):
    """(batch row, first token, length) of each sequence: from cu_seqlens in a varlen call."""
    N, T = int(case.attrs["N"]), int(case.attrs["T"])
    if not case.has("cu_seqlens"):
        return [(n, 0, T) for n in range(N)]
    cu = read_int(case, "cu_seqlens")
    return [(0, int(cu[n]), int(cu[n + 1] - cu[n])) for n in range(N)]


def run_case(case, spans_of=sequence_spans):
    """The recurrence over the case, sequence by sequence as spans_of(case) lays them out."""
    a = case.attrs
    B, T, N, HV, K, V = (int(a[n]) for n in ("B", "T", "N", "HV", "K", "V"))
    C = int(a["chunk_size"])
    vk = text(a["state_layout"]) == "VK"
    verify = text(a["mode"]) == "verify"
    q, k, v, g, beta = preprocess(case)
    pool = case.has("state_pool")
    slots = initial_slots(case, N) if pool else None
    # The whole pool is read before anything is stored: a request's first token may overwrite its slot.
    initial = as_kv(read(case, "state_pool" if pool else "initial_state"), vk) if (
        pool or case.has("initial_state")) else None

    o = np.zeros((B, T, HV, V))
    final = np.zeros((N, HV, K, V))
    chunks = np.zeros((case.view("chunk_states").shape[0], HV, K, V)) if case.has("chunk_states") else None
    tokens = np.zeros((B, T, HV, K, V)) if case.has("token_states") or verify else None
    spans = []  # (batch row, first token, length) of each request; length None for a padding row
    rows = []  # (batch row, first token, length) of every sequence: where o is written
    first_chunk = 0
    for n, (b, first, length) in enumerate(spans_of(case)):
        rows.append((b, first, length))
        n_chunks = (length + C - 1) // C
        if pool and slots[n] < 0:  # a padding row: zero output, the pool left alone
            first_chunk += n_chunks
            spans.append((b, first, None))
            continue
        spans.append((b, first, length))
        S = np.zeros((HV, K, V)) if initial is None else initial[slots[n] if pool else n].copy()
        for i in range(length):
            t = first + i
            if chunks is not None and i % C == 0:
                chunks[first_chunk + i // C] = S
            S *= np.exp(g[b, t])[:, :, None]                       # 1. decay
            kS = np.einsum("hk,hkv->hv", k[b, t], S)
            u = beta[b, t][:, None] * (v[b, t] - kS)
            S += k[b, t][:, :, None] * u[:, None, :]                # 2. delta update
            o[b, t] = np.einsum("hk,hkv->hv", q[b, t], S)           # 3. output from the updated state
            if tokens is not None:
                tokens[b, t] = S
        final[n] = S
        first_chunk += n_chunks

    o_view, o_dtype = case.view("o"), case.dtype_of("o")
    for b, first, length in rows:  # tokens of no sequence are not the call's to write
        o_view[b, first:first + length] = from_float(o[b, first:first + length], o_dtype)
    if case.has("final_state"):
        write(case, "final_state", as_kv(final, vk))
    if chunks is not None:
        write(case, "chunk_states", as_kv(chunks, vk))
    if case.has("token_states"):
        write(case, "token_states", as_kv(tokens, vk))
    if verify:
        store_verify_states(case, tokens, spans, vk)
    elif pool:
        view, dtype = case.view("state_pool"), case.dtype_of("state_pool")
        for n in range(N):
            if slots[n] >= 0:
                view[slots[n]] = from_float(as_kv(final[n], vk), dtype)


def run(case, lib):
    run_case(case)


def load(args):
    np.seterr(over="ignore", under="ignore")  # strong gates overflow exp() towards harmless 0 / inf


ENTRIES = [
    Entry("recurrent", PROFILE, CAPABILITIES, run),
    # --no-pool: no state pool, and so no verify (whose forms read a pool).
    Entry("no-pool", PROFILE, {**CAPABILITIES, "modes": "prefill,decode", "state_sources": "none,dense"}, run),
    # --verify-only: verify calls only, as a dedicated verify kernel.
    Entry("verify-only", PROFILE, {**CAPABILITIES, "modes": "verify", "state_sources": "table,scratch"}, run),
]


if __name__ == "__main__":
    OPTIONS = {"--no-pool": ["--entry", "no-pool"], "--verify-only": ["--entry", "verify-only"]}
    main(ENTRIES, load, __doc__.split("\n")[0], library="numpy", backend="numpy",
         argv=[word for arg in sys.argv[1:] for word in OPTIONS.get(arg, [arg])])
