#!/usr/bin/env python3
"""An exec adapter for kda-oracle that runs vLLM 0.33's Triton KDA kernels (Kimi-K3, NVIDIA path).

One code path per process, chosen with --entry (vllm/models/kimi_k3/nvidia/ops/third_party/kda/):
  decode      fused_recurrent.fused_recurrent_kda_fwd with a 1-D ssm_state_indices: one token per
              sequence, a [slots, H, V, K] state pool updated in place
  verify      the same function with an [N, L] ssm_state_indices and num_accepted_tokens: speculative
              verify in the index-table form, the pool updated in place
  packed-decode  fused_recurrent.fused_recurrent_kda_packed_decode: the decode vLLM's KimiK3 layer runs
              on its Triton path, q, k and v packed in one [tokens, 2*H*K + H*V] row, l2norm, gate and
              beta sigmoid always in the kernel
  chunk       chunk.chunk_kda: prefill from dense [N, H, V, K] initial states, gate and beta precomputed
  chunk-gate  chunk.chunk_kda_with_fused_gate: prefill with the gate and the beta sigmoid in the kernel
              (the path vLLM's KimiK3 layer serves prefills with)

    kda-oracle check --kernel exec:"python3 adapters/vllm/vllm_adapter.py --entry decode"

The call mapping (what vLLM's engine does before these calls):
- vLLM reserves pool slot 0: its kernel treats every index <= 0 as a padding row (zero output, nothing
  read or written). The adapter hands it a copy of the pool one slot later, between a reserved slot 0
  and a slot after the end, and every index + 1 (so -1, the oracle's padding, becomes 0). Both extra
  slots hold 0xFF bytes (NaN), are checked after the call, and the pool's slots are copied back.
- Calls without cu_seqlens (N rows of T tokens) are packed into one row with cu_seqlens = [0, T, 2T, ..].
- The recurrent kernel takes HV == H only (its shapes come from q's H): a grouped call (HV a multiple
  of H) gets q and k with each head repeated for its value heads, the same arithmetic per value head.
- The recurrent entries get q, k and v as views of one fused [.., T, H*K + H*K + HV*V] buffer, as vLLM's
  layer passes them (the kernel asserts one token stride for the three), g and beta as compact copies;
  outputs come back through compact copies of the case's output views (their poison included), copied
  back; cu_seqlens and the index table go in as the views they are. The chunk entries get the case's views (the functions copy what they need).
- chunk without an initial state gets zeros (vLLM gathers zero states for fresh sequences).
- A gate without A_log gets A_log = 0 (A = 1, what a missing A_log means in the contract; vLLM always
  takes one), but a softplus gate on decode and verify, where vLLM asserts A_log itself; packed-decode
  without dt_bias gets zeros.

vLLM's own checks are bare asserts: an AssertionError is answered with the assert's source text (the
first false clause of an `a and b` assert), which REJECTIONS maps to rules (profiles.cpp, vllm_*).

Only the modules these kernels need are loaded, from .carry/python (scripts/pack-vllm.sh) or $VLLM_ROOT:
vllm/__init__.py would import the whole engine, so `vllm` and its subpackages are empty stub packages
over the wheel's folders, and the few vLLM helpers they import (current_platform, triton_utils,
gpu_sync_debug, torch_utils) are replaced by stand-ins with the same behaviour on one CUDA device.
"""
import contextlib
import importlib
import os
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
from kda_adapter import Entry, fla_options, main  # noqa: E402

KDA = "vllm.models.kimi_k3.nvidia.ops.third_party.kda"

# vLLM's bare asserts and raises (fused_recurrent.py fused_recurrent_kda_fwd; chunk.py; the FLA copies in
# vllm/third_party/flash_linear_attention/ops) -> rules. An assert is described by its source clause.
REJECTIONS = [
    (r"^AssertionError: assert B == 1$", "varlen_batch_one"),
    (r"^AssertionError: Only batch size 1 is supported when cu_seqlens are provided", "varlen_batch_one"),
    (r"^AssertionError: assert k\.shape == q\.shape$", "qk_same_shape"),
    (r"^AssertionError: assert v\.shape == \(B, T, H, V\)$", "v_shape"),
    (r"^AssertionError: assert g\.shape == \(B, T, H, K\)$", "g_shape"),
    (r"^AssertionError: assert beta\.shape == \(B, T, H\)$", "beta_shape"),
    (r"^ValueError: Expected raw_beta shape \(\d+, \d+, \d+\), got", "beta_shape"),
    (r"^AssertionError: assert out\.shape == v\.shape$", "o_shape"),
    (r"^AssertionError: assert initial_state\.shape\[1:\] == \(H, V, K\)$", "state_pool_shape"),
    (r"^AssertionError: assert initial_state\.stride\(\)\[1:\] == \(V \* K, K, 1\)$", "state_pool_inner_strides"),
    (r"^AssertionError: assert ssm_state_indices\.ndim in \(1, 2\)$", "state_indices_shape"),
    (r"^AssertionError: assert T == N$", "decode_one_token"),
    (r"^AssertionError: assert A_log is not None$", "softplus_needs_A_log"),
    (r"^AssertionError: current kernel does not support head dimension larger than 256", "key_head_dim_max"),
    (r"^ValueError: `raw_g` must have shape \[1, B, H, K\]\.", "g_shape"),
    (r"^ValueError: Unexpected raw gate shape", "g_shape"),
    (r"^ValueError: `raw_beta` must have shape \[1, B, H\]\.", "beta_shape"),
    (r"^ValueError: Unexpected raw beta shape", "beta_shape"),
    (r"^ValueError: `initial_state` must have shape \[cache, H, V, K\]\.", "state_pool_rank"),
    (r"^ValueError: `initial_state` must be contiguous within each cache slot\.", "state_pool_inner_strides"),
    (r"^ValueError: `state_indices` must be one-dimensional\.", "state_indices_shape"),
    (r"^ValueError: `state_indices` must contain one entry per token\.", "initial_state_count"),
    (r"^EntryError: vLLM's KDA stores states \[V, K\]", "state_layout"),
    (r"^EntryError: the \S+ entry takes", "state_source_supported"),
]


def assert_clause(error):
    """An AssertionError without a message, worded as its assert's source: the first clause of a
    top-level `and` that is false in the failing frame (all of it when that cannot be told)."""
    frame = None
    for frame, _ in traceback.walk_tb(error.__traceback__):
        pass
    entry = traceback.extract_tb(error.__traceback__)[-1]
    line = (entry.line or "").strip()
    if not line.startswith("assert "):
        return error
    clauses = [c.strip() for c in line[len("assert "):].split(" and ")]
    for clause in clauses:
        try:
            if not eval(clause, frame.f_globals, frame.f_locals):  # noqa: S307 (vLLM's own source line)
                return AssertionError(f"assert {clause}")
        except Exception:
            break
    return AssertionError(line)


def worded(call):
    """call() with a bare AssertionError re-raised as assert_clause's wording."""
    try:
        return call()
    except AssertionError as error:
        if str(error):
            raise
        raise assert_clause(error) from None


def state_layout_vk(case):
    layout = case.attrs["state_layout"]
    layout = layout.decode() if isinstance(layout, bytes) else str(layout)
    return None if layout == "VK" else "vLLM's KDA stores states [V, K] only"


def form(entry, taken, has_it):
    def accepts(case):
        if not has_it(case):
            return f"the {entry} entry takes {taken} only"
        if case.attrs.get("allow_neg_eigval"):
            return "vLLM's KDA has no allow_neg_eigval (its beta is sigmoid(b), never 2 * sigmoid(b))"
        return state_layout_vk(case)
    return accepts


def packed(case, name, rows=False):
    """An activation as a contiguous copy: as it is with cu_seqlens (a batch of B != 1 rows goes to
    vLLM as such), else its B rows of T tokens as one [1, B*T, ...] row (always with rows=True); q and
    k of a grouped call (HV a multiple of H) with each head repeated for its HV / H value heads."""
    x = case.view(name)
    H, HV = case.view("q").shape[2], case.view("v").shape[2]
    if name in ("q", "k") and HV > H and HV % H == 0:
        x = x.repeat_interleave(HV // H, dim=2)
    if rows or not case.has("cu_seqlens"):
        x = x.reshape(1, x.shape[0] * x.shape[1], *x.shape[2:])
    compact = case.torch.empty(x.shape, dtype=x.dtype, device=x.device)  # strides of size-1 dims too
    return compact.copy_(x)


def fused_qkv(case):
    """q, k and v as vLLM's layer hands them over: views of one [.., T, H*K + H*K + HV*V] buffer, so
    they share a token stride (the kernel asserts it), each head compact."""
    torch = case.torch
    parts = [packed(case, name) for name in ("q", "k", "v")]
    lead = tuple(parts[0].shape[:2])
    if any(tuple(p.shape[:2]) != lead or p.dim() != 4 for p in parts):
        return parts  # shapes vLLM's asserts will name
    widths = [p.shape[2] * p.shape[3] for p in parts]
    buffer = torch.empty(lead + (sum(widths),), dtype=parts[0].dtype, device=parts[0].device)
    views, start = [], 0
    for part, width in zip(parts, widths):
        heads, dim = part.shape[2:]
        view = torch.as_strided(buffer, lead + (heads, dim), buffer.stride()[:2] + (dim, 1), start)
        views.append(view.copy_(part))
        start += width
    return views


def gate_parameters(case, opts, checks_softplus_A_log=False):
    """A_log and dt_bias as contiguous copies; a gate in the kernel without A_log gets zeros (A = exp(0) = 1,
    the contract's meaning of a missing A_log, while vLLM always takes one), but for a softplus gate where
    the vLLM function checks for A_log itself (checks_softplus_A_log: fused_recurrent_kda_fwd's assert)."""
    A_log, dt_bias = (None if x is None else x.contiguous() for x in (opts["A_log"], opts["dt_bias"]))
    softplus = opts["lower_bound"] is None
    if A_log is None and opts["use_gate_in_kernel"] and not (softplus and checks_softplus_A_log):
        g = case.view("g")
        A_log = case.torch.zeros(g.shape[2], dtype=case.torch.float32, device=g.device)
    return A_log, dt_bias


def sequences(case):
    """cu_seqlens as the view it is, or [0, T, 2T, ..] for a call of B rows of T tokens."""
    if case.has("cu_seqlens"):
        return case.view("cu_seqlens")
    B, T = case.view("q").shape[:2]
    torch = case.torch
    return torch.arange(0, (B + 1) * T, T, dtype=torch.int32, device=case.view("q").device)


class ShiftedPool:
    """The case's pool one slot later in a tensor of slots + 2 with the same inner strides: slot 0
    (vLLM's reserved padding slot) and the slot after the last hold guard bytes, checked after the call."""

    def __init__(self, case):
        torch = case.torch
        self.pool = case.view("state_pool")
        slots, inner = self.pool.shape[0], tuple(self.pool.shape[1:])
        compact = 1
        for size in inner:
            compact *= size
        stride0 = max(self.pool.stride(0), compact)
        self.tensor = torch.empty_strided((slots + 2,) + inner, (stride0,) + tuple(self.pool.stride()[1:]),
                                          dtype=self.pool.dtype, device=self.pool.device)
        self.tensor.view(self._bits(torch)).fill_(-1)  # every byte 0xFF: NaN
        self.tensor[1:slots + 1].copy_(self.pool)
        self.guards = [(i, self.tensor[i].clone()) for i in (0, slots + 1)]

    def _bits(self, torch):
        return {2: torch.int16, 4: torch.int32, 8: torch.int64}[self.pool.element_size()]

    def finish(self, torch):
        for i, before in self.guards:
            if not torch.equal(self.tensor[i].view(self._bits(torch)), before.view(self._bits(torch))):
                where = "the reserved slot 0 (before the pool)" if i == 0 else "the slot after the pool's last"
                raise RuntimeError(f"vLLM changed bytes outside buffer 'state_pool': {where}")
        self.pool.copy_(self.tensor[1:self.pool.shape[0] + 1])


def shifted_indices(case, name):
    """An index tensor + 1 (vLLM's slot numbering), with the view's shape and strides (gaps: 0, padding)."""
    torch = case.torch
    table = case.view(name)
    out = torch.empty_strided(table.shape, table.stride(), dtype=table.dtype, device=table.device)
    torch.as_strided(out, (out.untyped_storage().nbytes() // out.element_size(),), (1,), 0).zero_()
    out.copy_(table + 1)
    return out


def run_recurrent(case, vllm, **extra):
    torch = case.torch
    opts = fla_options(case)
    gate = opts["use_gate_in_kernel"]
    pool = ShiftedPool(case)
    (q, k, v), o = fused_qkv(case), case.view("o")
    out = packed(case, "o")  # the case's poison: what the kernel leaves unwritten shows
    A_log, dt_bias = gate_parameters(case, opts, checks_softplus_A_log=True)
    worded(lambda: vllm.fused_recurrent_kda_fwd(
        q, k, v, packed(case, "g"), packed(case, "beta"), scale=opts["scale"],
        initial_state=pool.tensor, inplace_final_state=True, cu_seqlens=sequences(case),
        ssm_state_indices=shifted_indices(case, "state_indices"), use_qk_l2norm_in_kernel=opts["use_qk_l2norm_in_kernel"],
        A_log=A_log, dt_bias=dt_bias,
        lower_bound=opts["lower_bound"], use_gate_in_kernel=gate,
        use_beta_sigmoid_in_kernel=opts["use_beta_sigmoid_in_kernel"], out=out, **extra))
    pool.finish(torch)
    o.copy_(out.reshape(o.shape))


def run_decode(case, vllm):
    run_recurrent(case, vllm)


def run_verify(case, vllm):
    """num_accepted_tokens as a contiguous copy (the kernel reads it without a stride)."""
    run_recurrent(case, vllm, num_accepted_tokens=case.view("num_accepted").contiguous())


def packed_decode_form(case):
    """fused_recurrent_kda_packed_decode always normalises q and k and applies the gate (with dt_bias)
    and the beta sigmoid in the kernel, one token per sequence."""
    a = case.attrs
    flags = {name: int(a[name]) for name in ("l2norm_qk", "gate_in_kernel", "beta_from_logits")}
    if not all(flags.values()):
        return ("fused_recurrent_kda_packed_decode normalises q and k and computes the gate and the beta "
                "sigmoid in the kernel: it cannot take " + ", ".join(f"{k}={v}" for k, v in flags.items()))
    return form("packed-decode", "a state pool with one index per sequence",
                lambda c: c.has("state_pool") and not c.has("num_accepted") and not c.has("scratch_states"))(case)


def run_packed_decode(case, vllm):
    """Tokens are the sequences (cu_seqlens, all ones in a valid decode, is not passed); q, k and v
    concatenated per token into mixed_qkv; a missing dt_bias passed as zeros (vLLM requires one)."""
    torch = case.torch
    opts = fla_options(case)
    q, k, v = (packed(case, n, rows=True)[0] for n in ("q", "k", "v"))
    tokens = q.shape[0]
    mixed = torch.cat([q.reshape(tokens, -1), k.reshape(tokens, -1), v.reshape(tokens, -1)], dim=1)
    A_log, dt_bias = gate_parameters(case, opts)
    g = packed(case, "g", rows=True)
    if dt_bias is None:
        dt_bias = torch.zeros(g.shape[2] * g.shape[3], dtype=torch.float32, device=g.device)
    pool = ShiftedPool(case)
    out = packed(case, "o", rows=True)  # the case's poison: what the kernel leaves unwritten shows
    worded(lambda: vllm.fused_recurrent_kda_packed_decode(
        mixed, g, packed(case, "beta", rows=True), A_log, dt_bias, opts["lower_bound"], pool.tensor,
        shifted_indices(case, "state_indices"), scale=opts["scale"], out=out))
    pool.finish(torch)
    case.view("o").copy_(out.reshape(case.view("o").shape))


def chunk_common(case):
    torch = case.torch
    q = case.view("q")
    if case.has("initial_state"):
        initial = case.view("initial_state")
    else:
        n = case.view("cu_seqlens").shape[0] - 1 if case.has("cu_seqlens") else q.shape[0]
        v = case.view("v")
        initial = torch.zeros((n, v.shape[2], v.shape[3], q.shape[3]), dtype=torch.float32, device=q.device)
    return initial


def finish_chunk(case, o, final):
    case.view("o").copy_(o)
    if case.has("final_state"):
        case.view("final_state").copy_(final)


def run_chunk(case, vllm):
    opts = fla_options(case)
    o, final = worded(lambda: vllm.chunk_kda(
        case.view("q"), case.view("k"), case.view("v"), case.view("g"), case.view("beta"), scale=opts["scale"],
        initial_state=chunk_common(case), output_final_state=case.has("final_state"),
        use_qk_l2norm_in_kernel=opts["use_qk_l2norm_in_kernel"], cu_seqlens=opts["cu_seqlens"]))
    finish_chunk(case, o, final)


def run_chunk_gate(case, vllm):
    opts = fla_options(case)
    A_log, dt_bias = gate_parameters(case, opts)
    o, final = worded(lambda: vllm.chunk_kda_with_fused_gate(
        case.view("q"), case.view("k"), case.view("v"), case.view("g"), case.view("beta"), A_log, dt_bias,
        scale=opts["scale"], initial_state=chunk_common(case),
        output_final_state=case.has("final_state"), lower_bound=opts["lower_bound"],
        use_qk_l2norm_in_kernel=opts["use_qk_l2norm_in_kernel"], cu_seqlens=opts["cu_seqlens"]))
    finish_chunk(case, o, final)


def fused_gate_form(case):
    """chunk_kda_with_fused_gate always applies the gate and the beta sigmoid in the kernel."""
    a = case.attrs
    if not (a["gate_in_kernel"] and a["beta_from_logits"]):
        return ("chunk_kda_with_fused_gate computes the gate and the beta sigmoid in the kernel: it cannot "
                f"take gate_in_kernel={int(a['gate_in_kernel'])}, beta_from_logits={int(a['beta_from_logits'])}")
    return form("chunk-gate", "dense or no initial states", lambda c: not c.has("state_pool"))(case)


def chunk_arithmetic(args):
    """The chunked path keeps w, u, kg and Aqk in the input dtype; with f32 inputs its tl.dot runs as TF32."""
    return {"bf16": "bf16-operands", "f16": "f16-operands"}.get(args.dtype, "tf32")


# No entry takes allow_neg_eigval (neg_eigval=0); a fused path declares the options it always applies.
POOL = dict(layouts="VK", state_dtypes="f32,bf16", chunk_states=0, token_states=0, neg_eigval=0)
DENSE = dict(modes="prefill", layouts="VK", state_sources="none,dense", state_dtypes="f32", chunk_states=0,
             token_states=0, chunk_sizes=64, neg_eigval=0)
ENTRIES = [
    Entry("decode", "vllm_fused_recurrent", dict(modes="decode", state_sources="pool", **POOL), run_decode,
          REJECTIONS, accepts=form("decode", "a state pool with one index per sequence",
                                   lambda c: c.has("state_pool") and not c.has("num_accepted") and not c.has("scratch_states"))),
    Entry("verify", "vllm_fused_recurrent_verify", dict(modes="verify", state_sources="table", **POOL), run_verify,
          REJECTIONS, accepts=form("verify", "an [N, L] index table with accepted counts", lambda c: c.has("num_accepted"))),
    Entry("packed-decode", "vllm_packed_decode",
          dict(modes="decode", state_sources="pool", always="gate_in_kernel,l2norm_in_kernel,beta_from_logits", **POOL),
          run_packed_decode, REJECTIONS, accepts=packed_decode_form),
    Entry("chunk", "vllm_chunk", dict(DENSE, gate_in_kernel=0, beta_from_logits=0), run_chunk, REJECTIONS,
          arithmetic=chunk_arithmetic, accepts=form("chunk", "dense or no initial states", lambda c: not c.has("state_pool"))),
    Entry("chunk-gate", "vllm_chunk_fused_gate", dict(DENSE, always="gate_in_kernel,beta_from_logits"), run_chunk_gate,
          REJECTIONS, arithmetic=chunk_arithmetic, accepts=fused_gate_form),
]


def stub(name, **attrs):
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def load_vllm(root, interpret):
    """vLLM's KDA modules from `root` (a folder holding vllm/) without running vllm/__init__.py."""
    import torch
    import triton
    import triton.language as tl
    import triton.language.extra.libdevice as tldevice

    for package in ("vllm", "vllm.utils", "vllm.third_party", "vllm.third_party.flash_linear_attention",
                    "vllm.third_party.flash_linear_attention.ops", "vllm.models", "vllm.models.kimi_k3",
                    "vllm.models.kimi_k3.nvidia", "vllm.models.kimi_k3.nvidia.ops",
                    "vllm.models.kimi_k3.nvidia.ops.third_party"):
        stub(package, __path__=[os.path.join(root, *package.split("."))])

    class Platform:  # vllm/platforms/cuda.py's answers for one CUDA device (the interpreter: none)
        @staticmethod
        def is_cuda():
            return torch.cuda.is_available() and not interpret

        is_cuda_alike = is_cuda

        @staticmethod
        def has_device_capability(capability, device_id=0):
            major, minor = torch.cuda.get_device_capability(device_id) if Platform.is_cuda() else (0, 0)
            return major * 10 + minor >= (capability if isinstance(capability, int) else capability[0] * 10 + capability[1])

        @staticmethod
        def is_arch_support_pdl():
            return Platform.is_cuda() and torch.cuda.get_device_capability()[0] >= 9

    stub("vllm.platforms", current_platform=Platform())
    stub("vllm.triton_utils", triton=triton, tl=tl, tldevice=tldevice, HAS_TRITON=True)
    stub("vllm.utils.gpu_sync_debug", gpu_sync_allowed=contextlib.nullcontext)
    stub("vllm.utils.torch_utils", async_tensor_h2d=lambda data, device=None, dtype=None, out=None:
         torch.as_tensor(data, dtype=dtype, device=device))
    kda = importlib.import_module(KDA)
    if interpret:
        bridge_interpreter(tl)
    return kda


def bridge_interpreter(tl):
    """Two gaps between Triton's CPU interpreter and vLLM's kernels, bridged (the kernels stay vLLM's own):
    - the interpreter swaps tl.exp, tl.log, ... for its own only while a kernel runs, and the kernels call
      them through names bound at import (`from ...ops.op import exp, log`): each such name is rebound to
      a function that looks the builtin up when called;
    - it runs `for i in range(n)` over Python ints, and the chunk state kernel (chunk_delta_h.py) calls
      `i_t.to(tl.int64)`: that module gets a `range` yielding interpreter scalars."""
    from triton.runtime.interpreter import _implicit_cvt

    for module in [m for name, m in sys.modules.items() if name.startswith("vllm.") and m is not None]:
        for name in ("exp", "exp2", "log", "log2", "gather"):
            builtin = getattr(tl, name, None)
            if builtin is not None and getattr(module, name, None) is builtin:
                setattr(module, name, lambda *args, _name=name, **kwargs: getattr(tl, _name)(*args, **kwargs))

    def interpreter_range(*bounds):
        for i in range(*(int(b.handle.data.item()) if hasattr(b, "handle") else int(b) for b in bounds)):
            yield _implicit_cvt(i)

    sys.modules["vllm.third_party.flash_linear_attention.ops.chunk_delta_h"].range = interpreter_range


def load(args):
    root = os.environ.get("VLLM_ROOT") or os.path.join(os.path.dirname(os.path.dirname(HERE)), ".carry", "python")
    if not os.path.isdir(os.path.join(root, "vllm")):
        raise SystemExit(f"vllm_adapter: no vllm/ under {root} (run scripts/pack-vllm.sh or set VLLM_ROOT)")
    return load_vllm(root, args.interpret)


if __name__ == "__main__":
    main(ENTRIES, load, __doc__.split("\n")[0], library="vllm", dtype="bf16", head_dims="64,128")
