#!/usr/bin/env python3
"""An exec adapter for kda-oracle in pure numpy + h5py: the example of adapters/README.md.

It speaks the line protocol on stdin/stdout and computes the KDA recurrence of kda-facts §1 token by
token (in float64, all value heads at once), reading and writing every tensor through its strided
view of the whole buffers in the request file, so padded, permuted and fused layouts, pools with -1
padding rows and both state layouts work as they do for a kernel handed raw pointers.

A request whose case names persistent metadata tensors (the serving-loop property's calls) reads
them from arrays kept for the serving run and refilled in place (PersistentMetadata), as a serving
engine's CUDA graphs do.

Speculative-decoding verify calls (mode "verify") come in both forms: the index table (request n
starts from slot state_indices[n, num_accepted[n] - 1] and stores the state after token t in slot
state_indices[n, t], -1 meaning nowhere) and the scratch buffer (request n starts from slot
state_indices[n] of a pool it only reads and stores the state after token t in
scratch_states[scratch_indices[n], t]). A request whose initial slot is -1 is a padding row.

    kda-oracle check --kernel exec:"python3 adapters/numpy_adapter.py" --cases 10

--no-pool declares no state pool (state_sources=none,dense, and so no verify, whose forms read a
pool): a kernel without pools, whose pool and verify properties kda-oracle reports skipped.
--verify-only declares verify calls only (modes=verify, state_sources=table,scratch), as a dedicated
verify kernel would: the properties that need prefill or decode calls are reported skipped.

Anything on stdout is protocol: diagnostics go to stderr.
"""
import sys

import h5py
import numpy as np
from numpy.lib.stride_tricks import as_strided

NAME = "numpy-recurrent"
PROFILE = "strict"  # kda-oracle checks this contract before sending a case (no checks_contract=1)
CAPABILITIES = ("modes=prefill,decode,verify input_dtypes=bf16,f16,f32,f64 output_dtypes=bf16,f16,f32,f64 "
                "state_dtypes=bf16,f32,f64 layouts=VK,KV state_sources=none,dense,pool,table,scratch")
REDUCED = {  # option -> {declared capability -> what the option declares instead}
    "--no-pool": {"modes=prefill,decode,verify": "modes=prefill,decode",
                  "state_sources=none,dense,pool,table,scratch": "state_sources=none,dense"},
    "--verify-only": {"modes=prefill,decode,verify": "modes=verify",
                      "state_sources=none,dense,pool,table,scratch": "state_sources=table,scratch"},
}

STORED = {"bf16": np.uint16, "f16": np.uint16, "f32": np.float32, "f64": np.float64,
          "i32": np.int32, "i64": np.int64}
# Tensors a call may write (the scratch form only reads the pool, but its whole buffer still comes back).
OUTPUTS = ["state_pool", "o", "final_state", "chunk_states", "token_states", "scratch_states"]


def text(attribute):
    """A string attribute as str (h5py gives fixed-length strings as numpy.bytes_)."""
    return attribute.decode() if isinstance(attribute, bytes) else str(attribute)


def to_float(stored, dtype):
    """float64 values of stored elements (bf16/f16 are bit patterns)."""
    if dtype == "bf16":
        return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "f16":
        return stored.view(np.float16).astype(np.float64)
    return stored.astype(np.float64)


def from_float(values, dtype):
    """float64 values in the stored representation of dtype; narrower types through fp32, rounded to
    nearest even, as a kernel computing in fp32 stores them."""
    if dtype == "f64":
        return np.asarray(values, dtype=np.float64)
    x32 = np.asarray(values, dtype=np.float64).astype(np.float32)
    if dtype == "bf16":
        bits = x32.view(np.uint32)
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(np.isnan(x32), ((bits >> 16) | 0x40).astype(np.uint16), rounded)
    if dtype == "f16":
        return x32.astype(np.float16).view(np.uint16)
    return x32


class Case:
    """One case of a request file: its whole buffers in memory and strided views onto them."""

    def __init__(self, group):
        self.attrs = group.attrs
        meta = group["metadata"].attrs
        self.persistent = [n for n in text(meta.get("persistent", "")).split(",") if n]
        self.persistent_run = text(meta.get("persistent_run", ""))
        self.kept_views = {}  # persistent tensor -> its view kept for the run (PersistentMetadata)
        self.buffers = {name: np.array(ds[()], dtype=STORED[text(ds.attrs["dtype"])])
                        for name, ds in group["buffers"].items()}
        self.tensors = {}
        for name, t in group["tensors"].items():
            self.tensors[name] = (text(t.attrs["buffer"]), text(t.attrs["dtype"]),
                                  tuple(int(n) for n in t.attrs["shape"]),
                                  tuple(int(s) for s in t.attrs["strides"]), int(t.attrs["offset"]))

    def has(self, name):
        return name in self.tensors

    def view(self, name):
        """A writable numpy view of the tensor onto its buffer, and its dtype name."""
        buffer, dtype, shape, strides, offset = self.tensors[name]
        if name in self.kept_views:
            return self.kept_views[name], dtype
        data = self.buffers[buffer]
        return as_strided(data[offset:], shape=shape, strides=[s * data.itemsize for s in strides]), dtype

    def read(self, name):
        view, dtype = self.view(name)
        return to_float(np.array(view), dtype)

    def read_int(self, name):
        view, _ = self.view(name)
        return np.array(view).astype(np.int64)

    def write(self, name, values):
        view, dtype = self.view(name)
        view[...] = from_float(values, dtype)

    def outputs(self):
        """Output tensor -> (dtype, the whole buffer it views)."""
        return {name: (self.tensors[name][1], self.buffers[self.tensors[name][0]]) for name in OUTPUTS
                if self.has(name)}


class PersistentMetadata:
    """The serving mode's metadata buffers (adapters/README.md, "Persistent metadata"): for each serving
    run, one array per (tensor, dtype, buffer length), refilled in place from every request naming the
    tensor persistent, and one view of it per (tensor, dtype, buffer length, shape, strides, offset),
    so a call of the same geometry reads the very same array object with new contents."""

    def __init__(self):
        self.run = None
        self.buffers = {}
        self.views = {}

    def adopt(self, case):
        if case.persistent and case.persistent_run != self.run:  # a new engine: new buffers
            self.run, self.buffers, self.views = case.persistent_run, {}, {}
        for name in case.persistent:
            buffer, dtype, shape, strides, offset = case.tensors[name]
            data = case.buffers[buffer]
            key = (name, dtype, data.size)
            if key not in self.buffers:
                self.buffers[key] = np.empty_like(data)
            kept = self.buffers[key]
            np.copyto(kept, data)
            case.buffers[buffer] = kept
            geometry = key + (shape, strides, offset)
            if geometry not in self.views:
                self.views[geometry] = as_strided(kept[offset:], shape=shape,
                                                  strides=[s * kept.itemsize for s in strides])
            case.kept_views[name] = self.views[geometry]


PERSISTENT = PersistentMetadata()  # the current serving run's buffers


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def preprocess(case):
    """q (scaled, per value head), k (per value head), v, g (log decay), beta: float64 [B,T,HV,...]."""
    a = case.attrs
    H, HV, K = int(a["H"]), int(a["HV"]), int(a["K"])
    q, k, v, g, beta = (case.read(n) for n in ("q", "k", "v", "g", "beta"))
    if a["l2norm_qk"]:
        q = q / np.sqrt(np.sum(q * q, axis=-1, keepdims=True) + 1e-6)
        k = k / np.sqrt(np.sum(k * k, axis=-1, keepdims=True) + 1e-6)
    q = q * (float(a["scale"]) if "scale" in a else K ** -0.5)
    if a["beta_from_logits"]:
        beta = (2.0 if a["allow_neg_eigval"] else 1.0) * sigmoid(beta)
    if a["gate_in_kernel"]:
        A = np.exp(case.read("A_log")) if case.has("A_log") else np.ones(HV)
        bias = case.read("dt_bias").reshape(HV, K) if case.has("dt_bias") else np.zeros((HV, K))
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


def initial_slots(case, N):
    """The pool slot each request starts from (-1: a padding row): state_indices[n], or in the
    index-table form state_indices[n, num_accepted[n] - 1] (the contract has checked the counts)."""
    indices = case.read_int("state_indices")
    if not case.has("num_accepted"):
        return indices
    accepted = case.read_int("num_accepted")
    return np.array([indices[n, accepted[n] - 1] for n in range(N)], dtype=np.int64)


def store_verify_states(case, tokens, spans, vk):
    """A verify call's state after every token, where its form says: pool slot state_indices[n, t]
    (index table) or scratch_states[scratch_indices[n], t] (scratch); -1 stores nothing."""
    indices = case.read_int("state_indices")
    table = case.has("num_accepted")
    rows = None if table else case.read_int("scratch_indices")
    view, dtype = case.view("state_pool" if table else "scratch_states")
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
    cu = case.read_int("cu_seqlens")
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
    initial = as_kv(case.read("state_pool" if pool else "initial_state"), vk) if (
        pool or case.has("initial_state")) else None

    o = np.zeros((B, T, HV, V))
    final = np.zeros((N, HV, K, V))
    chunks = np.zeros((case.tensors["chunk_states"][2][0], HV, K, V)) if case.has("chunk_states") else None
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

    o_view, o_dtype = case.view("o")
    for b, first, length in rows:  # tokens of no sequence are not the call's to write
        o_view[b, first:first + length] = from_float(o[b, first:first + length], o_dtype)
    if case.has("final_state"):
        case.write("final_state", as_kv(final, vk))
    if chunks is not None:
        case.write("chunk_states", as_kv(chunks, vk))
    if case.has("token_states"):
        case.write("token_states", as_kv(tokens, vk))
    if verify:
        store_verify_states(case, tokens, spans, vk)
    elif pool:
        view, dtype = case.view("state_pool")
        for n in range(N):
            if slots[n] >= 0:
                view[slots[n]] = from_float(as_kv(final[n], vk), dtype)


def write_results(path, results):
    """A results file (golden/SCHEMA.md, "Results files"); results: case name -> Case.outputs()."""
    with h5py.File(path, "w") as f:
        f.attrs["schema"] = "kda-oracle/results"
        f.attrs["schema_version"] = np.int64(1)
        f.attrs["kernel"] = NAME
        cases = f.create_group("cases")
        for case_name, outputs in results.items():
            group = cases.create_group(case_name)
            for tensor, (dtype, data) in outputs.items():
                group.create_dataset(tensor, data=data).attrs["dtype"] = dtype


def handle(request, results, compute=run_case):
    """Runs every case of the request file; returns the output buffers of each in the results file."""
    out = {}
    with h5py.File(request, "r") as f:
        for case_name, group in f["cases"].items():
            case = Case(group)
            PERSISTENT.adopt(case)
            compute(case)
            out[case_name] = case.outputs()
    write_results(results, out)


def reply(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def serve(handle_request=handle, capabilities=CAPABILITIES):
    reply(f"kda-adapter 1 {NAME} {PROFILE} {capabilities}")
    for line in sys.stdin:
        words = line.split()
        if words == ["quit"]:
            return
        if len(words) == 3 and words[0] == "run":
            try:
                handle_request(words[1], words[2])
                reply("ok")
            except Exception as e:  # one bad case must not end the adapter
                reply("error " + " ".join(f"{type(e).__name__}: {e}".split()))
        else:
            reply("error unknown request: " + " ".join(words)[:200])


if __name__ == "__main__":
    np.seterr(over="ignore", under="ignore")  # strong gates overflow exp() towards harmless 0 / inf
    if sys.argv[1:] not in ([], *([option] for option in REDUCED)):
        sys.exit("usage: numpy_adapter.py [--no-pool | --verify-only]")
    capabilities = CAPABILITIES
    for full, reduced in REDUCED.get(sys.argv[1] if sys.argv[1:] else "", {}).items():
        capabilities = capabilities.replace(full, reduced)
    serve(capabilities=capabilities)
