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

Every buffer of a request lives whole on the device, between guard bands of 0xFF bytes (NaN as
floats); tensors are torch.as_strided views of it with the case's shapes, strides and offsets. FLA's
public functions get those views (they make their own contiguous copies); fused_recurrent_kda_fwd,
whose kernel assumes contiguous activations, gets contiguous copies, and the pool itself. FLA's fresh
outputs are copied into the output views, so gaps stay as received; the whole output buffers go back.
(verify: the index table as its view, which FLA reads with its row stride only; num_accepted_tokens
as a contiguous copy, FLA reading it without a stride.)
A guard band FLA changed is answered as an error ("FLA changed N bytes outside buffer ...").

Every entry declares checks_contract=1: kda-oracle sends invalid calls too (only views outside their
buffers are refused before), and FLA's own checks decide. Each entry's profile names the rules that FLA
code path checks (reference/src/profiles.cpp); what FLA raises is answered through REJECTIONS (its
messages -> rules), anything else as an error with its type and message. The adapter itself refuses
only what its entry cannot express: another state source than the entry's (state_source_supported),
and, for chunk_kda, final or chunk-start states in another dtype than the fp32 FLA returns them in
(state_dtype). See docs/fla.md.

A request naming persistent metadata tensors (the serving-loop and metadata-reuse properties) hands
FLA the same device tensor for each of them call after call, refilled in place (PersistentMetadata).

Anything on stdout is protocol: diagnostics go to stderr.
"""
import argparse
import os
import sys

import h5py
import numpy as np

ADAPTERS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ADAPTERS, os.path.join(ADAPTERS, "python")]
from numpy_adapter import OUTPUTS, STORED, reply, text  # noqa: E402  (the protocol's shared pieces)
from kda_adapter.rejections import RejectionTable, answer_for  # noqa: E402

ENTRIES = {  # entry -> (adapter name, kda-oracle profile, modes, state sources, state dtypes)
    "recurrent": ("fla-recurrent", "fla_fused_recurrent", "prefill,decode", "none,dense", "f32"),
    "pooled-decode": ("fla-pooled-decode", "fla_pooled_decode", "decode", "pool", "f32,bf16"),
    "chunk": ("fla-chunk", "fla_chunk", "prefill", "none,dense", "f32"),
    "verify": ("fla-verify", "fla_verify", "verify", "table", "f32,bf16"),
}
# What FLA 0.6.0 raises (fla/ops/kda/fused_recurrent.py, chunk.py) and what the adapter raises for what
# an entry cannot express, as contract rules; first match wins. fused_recurrent_kda_fwd's one check is
# a bare `assert out.shape == v.shape`: a bare AssertionError there is o_shape (pooled-decode, verify).
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
TABLES = {entry: RejectionTable(REJECTIONS + (BARE_ASSERT if entry in ("pooled-decode", "verify") else []))
          for entry in ENTRIES}
FORMS = {  # entry -> (the state source it takes, in words; whether a case has it)
    "recurrent": ("dense or no initial states", lambda case: not case.has("state_pool")),
    "chunk": ("dense or no initial states", lambda case: not case.has("state_pool")),
    "pooled-decode": ("a state pool with one index per sequence",
                      lambda case: case.has("state_pool") and not case.has("num_accepted") and not case.has("scratch_states")),
    "verify": ("an [N, L] index table with accepted counts", lambda case: case.has("num_accepted")),
}


class EntryError(Exception):
    """A call the entry's FLA function cannot be given (another state source, states FLA does not return)."""
TORCH_NAMES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}
LOST_CONTEXT = ("CUDA error", "Triton Error [CUDA]")  # errors after which the CUDA context is unusable
GUARD = 256  # bytes of guard band on each side of a buffer (more before a pool: a slot stride)


def handshake(entry, dtype, head_dims):
    name, profile, modes, sources, state_dtypes = ENTRIES[entry]
    # chunk_kda returns its chunk-start states in the input dtype; kda-oracle asks for them in the state
    # dtype (f32 under fla_chunk), so only f32 inputs give them as asked.
    chunk_states = int(entry == "chunk" and dtype == "f32")
    caps = [f"modes={modes}", f"input_dtypes={dtype}", f"output_dtypes={dtype}", f"state_dtypes={state_dtypes}",
            "layouts=VK,KV", f"state_sources={sources}", f"chunk_states={chunk_states}", "token_states=0",
            "checks_contract=1"]
    if head_dims != "any":
        caps += [f"key_head_dims={head_dims}", f"value_head_dims={head_dims}"]
    return f"kda-adapter 1 {name} {profile} " + " ".join(caps)


class Case:
    """One request case: its buffers on the device between guard bands, and views onto them."""

    def __init__(self, group, torch, device):
        self.torch = torch
        self.attrs = dict(group.attrs)
        self.tensors = {n: (text(t.attrs["buffer"]), text(t.attrs["dtype"]), [int(x) for x in t.attrs["shape"]],
                            [int(x) for x in t.attrs["strides"]], int(t.attrs["offset"]))
                        for n, t in group["tensors"].items()}
        before = {}  # buffer -> guard bytes before it: a pool index of -1 reaches one slot stride back
        if "state_pool" in self.tensors:
            buffer, dtype, _, strides, _ = self.tensors["state_pool"]
            slot_bytes = abs(strides[0]) * np.dtype(STORED[dtype]).itemsize
            before[buffer] = GUARD + (slot_bytes + GUARD - 1) // GUARD * GUARD
        self.buffers = {}  # buffer -> (raw uint8 device tensor with guards, guard before, payload bytes, dtype)
        for name, ds in group["buffers"].items():
            dtype = text(ds.attrs["dtype"])
            payload = np.ascontiguousarray(ds[()], dtype=STORED[dtype]).view(np.uint8)
            lead = before.get(name, GUARD)
            raw = torch.full((lead + payload.size + GUARD,), 0xFF, dtype=torch.uint8, device=device)
            raw[lead:lead + payload.size] = torch.from_numpy(payload).to(device)
            self.buffers[name] = (raw, lead, payload.size, dtype)
        self.kept_views = {}  # persistent tensor -> its view kept for the run (PersistentMetadata)

    def has(self, name):
        return name in self.tensors

    def view(self, name):
        """The tensor as a torch view of its device buffer (bf16/f16 as torch.bfloat16/float16)."""
        if name in self.kept_views:
            return self.kept_views[name]
        torch = self.torch
        buffer, dtype, shape, strides, offset = self.tensors[name]
        raw, lead, size, _ = self.buffers[buffer]
        typed = raw[lead:lead + size].view(getattr(torch, TORCH_NAMES[dtype]))
        return torch.as_strided(typed, shape, strides, typed.storage_offset() + offset)

    def optional(self, name):
        return self.view(name) if self.has(name) else None

    def guard_damage(self):
        """A line per buffer whose guard bands changed (FLA wrote outside it)."""
        lines = []
        for name, (raw, lead, size, _) in self.buffers.items():
            for where, band in (("before", raw[:lead]), ("after", raw[lead + size:])):
                changed = (band != 0xFF).nonzero()
                if changed.numel():
                    first, last = int(changed[0]), int(changed[-1])
                    span = (f"between {lead - first} and {lead - last} bytes before its start" if where == "before"
                            else f"between {first} and {last} bytes past its end")
                    lines.append(f"FLA changed {changed.numel()} bytes outside buffer '{name}' ({size} bytes), {span}")
        return lines

    def outputs(self):
        """Output tensor -> (dtype, the whole buffer it views, as stored in HDF5)."""
        out = {}
        for name in OUTPUTS:
            if self.has(name):
                raw, lead, size, dtype = self.buffers[self.tensors[name][0]]
                out[name] = (dtype, raw[lead:lead + size].cpu().numpy().view(STORED[dtype]))
        return out


class PersistentMetadata:
    """The serving mode's metadata buffers (adapters/README.md, "Persistent metadata"): for each serving
    run, one guarded device buffer per (tensor, dtype, buffer length), refilled in place by copy_ from
    every request naming the tensor persistent, and one view of it per geometry (shape, strides,
    offset), so FLA is handed the very same tensor object with new contents, as from CUDA graphs."""

    def __init__(self):
        self.run = None
        self.raw = {}
        self.views = {}

    def adopt(self, case, group):
        meta = group["metadata"].attrs
        names = [n for n in text(meta.get("persistent", "")).split(",") if n]
        run = text(meta.get("persistent_run", ""))
        if names and run != self.run:  # a new engine: new buffers
            self.run, self.raw, self.views = run, {}, {}
        for name in names:
            buffer, dtype, shape, strides, offset = case.tensors[name]
            raw, lead, size, _ = case.buffers[buffer]
            key = (name, dtype, raw.numel())
            kept = self.raw.setdefault(key, raw)
            if kept is not raw:
                kept.copy_(raw)  # guard bands included: the fresh buffer's are intact
            case.buffers[buffer] = (kept, lead, size, dtype)
            geometry = key + (tuple(shape), tuple(strides), offset)
            if geometry not in self.views:
                self.views[geometry] = case.view(name)
            case.kept_views[name] = self.views[geometry]


PERSISTENT = PersistentMetadata()  # the current serving run's buffers


def options(case):
    """The keyword arguments FLA's entry points share, from the case's attributes and tensors."""
    a = case.attrs
    gate = bool(a["gate_in_kernel"])
    return dict(
        scale=float(a["scale"]) if "scale" in a else None,
        use_qk_l2norm_in_kernel=bool(a["l2norm_qk"]),
        use_gate_in_kernel=gate,
        use_beta_sigmoid_in_kernel=bool(a["beta_from_logits"]),
        allow_neg_eigval=bool(a["allow_neg_eigval"]),
        lower_bound=float(a["lower_bound"]) if "lower_bound" in a else None,
        A_log=case.optional("A_log") if gate else None,
        dt_bias=case.optional("dt_bias") if gate else None,
        state_v_first=text(a["state_layout"]) == "VK",
        cu_seqlens=case.optional("cu_seqlens"),
    )


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


def require_form(entry, case):
    taken, has_it = FORMS[entry]
    if not has_it(case):
        raise EntryError(f"the {entry} entry takes {taken} only")


def run_verify(case, fla):
    """The index-table form: the [N, L] table as the view it is (FLA takes its row stride and reads its
    columns as if their stride were 1), the accepted counts as a contiguous copy (FLA passes no stride
    for them); -1 entries go in as given."""
    run_on_pool(case, fla, num_accepted_tokens=case.view("num_accepted").contiguous())


def run_chunk(case, fla):
    a = case.attrs
    for name, what in (("final_state", "final state"), ("chunk_states", "chunk-start states")):
        if case.has(name) and case.tensors[name][1] != "f32":
            raise EntryError(f"chunk_kda returns its {what} in float32, not {case.tensors[name][1]}")
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


RUNS = {"recurrent": run_recurrent, "pooled-decode": run_pooled_decode, "chunk": run_chunk, "verify": run_verify}


def write_results(path, name, outputs):
    """A results file (golden/SCHEMA.md, "Results files") holding the case's whole output buffers."""
    with h5py.File(path, "w") as f:
        f.attrs["schema"] = "kda-oracle/results"
        f.attrs["schema_version"] = np.int64(1)
        f.attrs["kernel"] = name
        group = f.create_group("cases").create_group("case")
        for tensor, (dtype, data) in outputs.items():
            group.create_dataset(tensor, data=data).attrs["dtype"] = dtype


def handle(args, torch, fla, request, results):
    with h5py.File(request, "r") as f:
        case = Case(f["cases/case"], torch, args.device)
        PERSISTENT.adopt(case, f["cases/case"])
    require_form(args.entry, case)
    with torch.inference_mode():
        RUNS[args.entry](case, fla)
    damage = case.guard_damage()
    if damage:
        raise RuntimeError("; ".join(damage))
    write_results(results, ENTRIES[args.entry][0], case.outputs())


def load(args):
    """torch and FLA's entry points, imported once (FLA imports all of fla.ops: seconds)."""
    # The entries name FLA's Triton code paths: no optional backend (FlashKDA, TileLang) may take over.
    os.environ.setdefault("FLA_DISABLE_BACKEND_DISPATCH", "1")
    if args.interpret or args.first_config:
        import triton_patches
        if args.interpret:
            triton_patches.interpret()
        else:
            triton_patches.first_config()
    import torch
    import fla.ops.kda as kda
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd

    args.device = "cuda" if torch.cuda.is_available() and not args.interpret else "cpu"
    fla = argparse.Namespace(fused_recurrent_kda=kda.fused_recurrent_kda, chunk_kda=kda.chunk_kda,
                             fused_recurrent_kda_fwd=fused_recurrent_kda_fwd)
    return torch, fla


def serve(args):
    torch, fla = load(args)
    print(f"fla_adapter: entry {args.entry} on {args.device}", file=sys.stderr)
    reply(handshake(args.entry, args.dtype, args.head_dims))
    for line in sys.stdin:
        words = line.split()
        if words == ["quit"]:
            return
        if len(words) != 3 or words[0] != "run":
            reply("error unknown request: " + " ".join(words)[:200])
            continue
        try:
            handle(args, torch, fla, words[1], words[2])
            reply("ok")
        except Exception as e:  # one bad case must not end the adapter
            message = " ".join(f"{type(e).__name__}: {e}".split())
            if any(lost in message for lost in LOST_CONTEXT):  # this case fails, the next gets a new adapter
                print(f"fla_adapter: {message}; exiting", file=sys.stderr)
                os._exit(3)
            reply(answer_for(e, TABLES[args.entry]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entry", choices=sorted(ENTRIES), required=True, help="the FLA code path to run")
    parser.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16",
                        help="the activations' and the output's dtype (FLA's output takes the input dtype)")
    parser.add_argument("--head-dims", default="64,128",
                        help="declared key and value head dims, comma-separated, or 'any' (up to 256); "
                             "each new dim is a new Triton compilation")
    parser.add_argument("--first-config", action="store_true",
                        help="no autotuning: each Triton kernel runs its first config (triton_patches.py)")
    parser.add_argument("--interpret", action="store_true",
                        help="run the Triton kernels in Triton's CPU interpreter (testing without a GPU; slow)")
    try:
        serve(parser.parse_args())
    except BrokenPipeError:  # kda-oracle is gone (killed, or timed out): nobody to answer
        os._exit(0)


if __name__ == "__main__":
    main()
