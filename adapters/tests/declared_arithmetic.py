#!/usr/bin/env python3
"""An exec adapter whose arithmetic and declaration are chosen apart: kda-oracle judges a kernel against
the precision model of the arithmetic it declares (handshake capability `arithmetic`).

    declared_arithmetic.py --compute bf16|e4m3 --declare fp32|bf16-operands

It speaks numpy_adapter.py's protocol (its request/result I/O and serve loop) and computes prefill calls
(no pool, no token states; chunk states at chunk size 64) in the chunked form, rounding where FLA's
chunk_kda with bf16 activations rounds: Aqk, (I + Akk)^-1, the right-hand sides beta v and
beta k exp(G), w, u, q exp(G), k exp(G_last - G), the state where it enters a product, and v_new, each
stored between kernels; sums and the carried state in float64 (FLA: fp32 accumulators).
  --compute bf16  those values rounded to bf16, as FLA does: correct at bf16-operands
  --compute e4m3  the same values rounded to 4 significant bits (fp8 e4m3's precision): worse than any
                  arithmetic it can declare
Outputs are fp32 only: a bf16 output's own rounding would hide the difference between the models.
Anything on stdout is protocol: diagnostics go to stderr.
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "python")]
import numpy_adapter as na  # noqa: E402
from kda_adapter import Entry, main  # noqa: E402

CHUNK = 64
CAPABILITIES = {"modes": "prefill", "input_dtypes": "bf16,f32", "output_dtypes": "f32", "state_dtypes": "f32",
                "layouts": "VK,KV", "state_sources": "none,dense", "chunk_sizes": "64", "token_states": "0"}


def bf16(x):
    """To bf16, to nearest even (through fp32, as a kernel holding fp32 values stores them)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def e4m3(x):
    """To 4 significant bits, to nearest (fp8 e4m3's precision; its range is not modelled)."""
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    return np.ldexp(np.round(m * 16) / 16, e)


def chunked(q, k, v, g, beta, S0, rnd):
    """One sequence ([L, HV, ...] inputs, state [HV, K, V]) chunk by chunk; returns o, chunk-start
    states and the final state."""
    L, HV, K = k.shape
    S = S0.copy()
    o = np.empty((L, HV, v.shape[-1]))
    starts = []
    for s in range(0, L, CHUNK):
        starts.append(S.copy())
        e = min(s + CHUNK, L)
        c = e - s
        G = np.cumsum(g[s:e], axis=0)                                             # [c, HV, K]
        D = np.exp(np.where(np.tril(np.ones((c, c), dtype=bool))[:, :, None, None], G[:, None] - G[None, :], -np.inf))
        kc, qc, vc = (np.transpose(x, (1, 0, 2)) for x in (k[s:e], q[s:e], v[s:e]))  # [HV, c, .]
        bc = np.transpose(beta[s:e])[:, :, None]                                   # [HV, c, 1]
        eg = np.transpose(np.exp(G), (1, 0, 2))                                    # [HV, c, K]
        Aqk = np.einsum("hic,hjc,ijhc->hij", qc, kc, D)
        Akk = bc * np.einsum("hic,hjc,ijhc->hij", kc, kc, D) * np.tril(np.ones((c, c)), -1)
        T = rnd(np.linalg.inv(np.eye(c) + Akk))
        u = rnd(T @ rnd(bc * vc))
        w = rnd(T @ rnd(bc * kc * eg))
        kg = rnd(kc * np.exp(G[-1][None] - G).transpose(1, 0, 2))
        qg = rnd(qc * eg)
        St = rnd(S)
        v_new = rnd(u - w @ St)
        o[s:e] = np.transpose(qg @ St + rnd(Aqk) @ v_new, (1, 0, 2))
        S = eg[:, -1][:, :, None] * S + np.transpose(kg, (0, 2, 1)) @ v_new
    return o, starts, S


COMPUTE = {"bf16": bf16, "e4m3": e4m3}
DECLARE = ("fp32", "bf16-operands")

if __name__ == "__main__":
    np.seterr(over="ignore", under="ignore")
    args = sys.argv[1:]
    if len(args) != 4 or args[0] != "--compute" or args[1] not in COMPUTE or args[2] != "--declare" or \
            args[3] not in DECLARE:
        sys.exit("usage: declared_arithmetic.py --compute " + "|".join(COMPUTE) + " --declare " + "|".join(DECLARE))
    rnd = COMPUTE[args[1]]

    def run(case, lib):
        na.run_prefill_by_sequence(case, lambda *seq: chunked(*seq, rnd))

    main([Entry(f"{args[1]}-declared-{args[3]}", "strict", CAPABILITIES, run, arithmetic=args[3])], na.load,
         __doc__.split("\n")[0], backend="numpy", argv=[])
