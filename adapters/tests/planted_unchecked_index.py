#!/usr/bin/env python3
"""A purpose-built broken exec adapter: numpy_adapter.py with an accepted count it never checks.

It declares vLLM's Kimi-K3 recurrent verify contract (profile vllm_fused_recurrent_verify: nothing
bounds num_accepted_tokens) with the capabilities that profile implies (the index-table form and
pools, [V,K] states, bf16/f16/f32 activations) and no checks_contract: kda-oracle checks that profile
before each call, so a count outside [1, L] reaches the kernel.

The planted bug: a request's committed column is c = num_accepted[n] - 1, used unchecked. Inside the
row the request runs as numpy_adapter.py runs it (from slot state_indices[n, c]); outside it (a count
of 0 or above L) the kernel takes c as the slot itself, C-style (the pool's base + c x the slot
stride), runs the request from the state there and stores its final state back there in place. A
count of 0 thus writes slot -1: one slot stride before the pool's first slot, whose last bytes are the
pool buffer's leading gap, which kda-oracle sees. Bytes that would fall outside the whole buffer are
neither read (they read as 0) nor written, so nothing lands in this process's own memory.

    kda-oracle check --kernel exec:"python3 adapters/tests/planted_unchecked_index.py" --properties unchecked-invalid
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "python")]
import numpy_adapter  # noqa: E402
from numpy_adapter import as_kv, from_float, read_int, text, to_float  # noqa: E402
from kda_adapter import Entry, main  # noqa: E402

NAME = "planted-unchecked-index"
PROFILE = "vllm_fused_recurrent_verify"
CAPABILITIES = {"modes": "prefill,decode,verify", "input_dtypes": "bf16,f16,f32", "output_dtypes": "bf16,f16,f32",
                "state_dtypes": "f32,bf16", "layouts": "VK", "state_sources": "pool,table"}


def slot_elements(case, slot):
    """Element positions of pool slot `slot` by C index math, in the pool's buffer, and which lie inside it."""
    _, _, shape, strides, offset = case.tensors["state_pool"]
    h, i, j = np.meshgrid(*(np.arange(n) for n in shape[1:]), indexing="ij")
    at = offset + slot * strides[0] + h * strides[1] + i * strides[2] + j * strides[3]
    return at, (at >= 0) & (at < case.buffer("state_pool").size)


def read_slot(case, slot):
    at, inside = slot_elements(case, slot)
    values = np.zeros(at.shape)
    values[inside] = to_float(case.buffer("state_pool")[at[inside]], case.dtype_of("state_pool"))
    return values


def write_slot(case, slot, values):
    at, inside = slot_elements(case, slot)
    case.buffer("state_pool")[at[inside]] = from_float(values[inside], case.dtype_of("state_pool"))


def run_case(case):
    if text(case.attrs["mode"]) != "verify":
        return numpy_adapter.run_case(case)
    a = case.attrs
    N, T = int(a["N"]), int(a["T"])
    vk = text(a["state_layout"]) == "VK"
    table, accepted = read_int(case, "state_indices"), read_int(case, "num_accepted")
    L = table.shape[1]
    in_row = [1 <= accepted[n] <= L for n in range(N)]
    # Requests whose column lies in the row: numpy_adapter.py's kernel (the others left to it as padding rows).
    checked = numpy_adapter.initial_slots
    numpy_adapter.initial_slots = lambda case, N: np.array(
        [table[n, accepted[n] - 1] if in_row[n] else -1 for n in range(N)], dtype=np.int64)
    try:
        numpy_adapter.run_case(case)
    finally:
        numpy_adapter.initial_slots = checked
    q, k, v, g, beta = numpy_adapter.preprocess(case)
    cu = read_int(case, "cu_seqlens") if case.has("cu_seqlens") else None
    o, o_dtype = case.view("o"), case.dtype_of("o")
    for n in (n for n in range(N) if not in_row[n]):
        slot = int(accepted[n]) - 1  # the bug: the column taken as a slot
        b, first = (0, int(cu[n])) if cu is not None else (n, 0)
        length = int(cu[n + 1]) - first if cu is not None else T
        S = as_kv(read_slot(case, slot), vk)
        for t in range(first, first + length):
            S *= np.exp(g[b, t])[:, :, None]
            u = beta[b, t][:, None] * (v[b, t] - np.einsum("hk,hkv->hv", k[b, t], S))
            S += k[b, t][:, :, None] * u[:, None, :]
            o[b, t] = from_float(np.einsum("hk,hkv->hv", q[b, t], S), o_dtype)
        write_slot(case, slot, as_kv(S, vk))


def load(args):
    np.seterr(over="ignore", under="ignore", invalid="ignore")


if __name__ == "__main__":
    main([Entry(NAME, PROFILE, CAPABILITIES, lambda case, lib: run_case(case))], load, __doc__.split("\n")[0],
         backend="numpy", argv=[])
