#!/usr/bin/env python3
"""Exec adapters with one planted numerical bug each: kda-oracle's adversarial data mixes must catch them.

    planted_numerics.py --bug neumann-fp16|window-512|gate-overflow|none

Each speaks numpy_adapter.py's protocol (its request/result I/O and serve loop) and computes prefill
calls (no pool, no token states; chunk states at chunk size 64) with a bug real kernels have shipped:
  neumann-fp16   the chunked form (chunk 64) with (I + A)^-1 replaced by the truncated Neumann series
                 sum_{n<8} (-A)^n computed in fp16, and the state kept in fp16 between chunks. Fine on
                 random keys (A is small); on repeated or near-collinear keys A is close to a lower
                 triangle of ones, the powers grow like binomial coefficients and overflow fp16.
  window-512     the recurrence, but the state after token i >= 512 is rebuilt from tokens i-511..i
                 alone: the initial state and older tokens are dropped (a history window).
  gate-overflow  the chunked form (chunk 64) with its decays exp(G_i - G_j) taken as exp(G_i) * exp(-G_j)
                 from fp32 exponentials of the chunk-local cumulative log-decay G, without anchoring:
                 once G passes about -88 exp(-G) overflows and exp(G) underflows (0 * inf = NaN).
  none           numpy_adapter.py's recurrence under the same declaration: the control.
Everything else is computed in float64. Anything on stdout is protocol: diagnostics go to stderr.
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "python")]
import numpy_adapter as na  # noqa: E402
from kda_adapter import Entry, main  # noqa: E402

CHUNK = 64
WINDOW = 512
NEUMANN_TERMS = 8
# Prefill only, dense or no initial state; any dtype, layout, gate form and stride.
CAPABILITIES = {"modes": "prefill", "input_dtypes": "bf16,f16,f32,f64", "output_dtypes": "bf16,f16,f32,f64",
                "state_dtypes": "bf16,f32,f64", "layouts": "VK,KV", "state_sources": "none,dense",
                "chunk_sizes": "64", "token_states": "0"}


def step(S, k, v, g, beta):
    """One token of the recurrence on states S [..., HV, K, V] (in place) and its update."""
    S *= np.exp(g)[..., None]
    u = beta[..., None] * (v - np.einsum("...hk,...hkv->...hv", k, S))
    S += k[..., None] * u[..., None, :]


def window_512(q, k, v, g, beta, S0):
    """The recurrence with every state after token i >= 512 rebuilt from its last 512 tokens."""
    L = q.shape[0]
    after = np.empty((L,) + S0.shape)
    S = S0.copy()
    for i in range(L):
        step(S, k[i], v[i], g[i], beta[i])
        after[i] = S
    if L > WINDOW:  # the windows of tokens i-511..i for every i >= 512, run side by side from zero
        ends = np.arange(WINDOW, L)
        W = np.zeros((len(ends),) + S0.shape)
        for d in range(WINDOW):
            t = ends - WINDOW + 1 + d
            step(W, k[t], v[t], g[t], beta[t])
        after[WINDOW:] = W
    o = np.einsum("thk,thkv->thv", q, after)
    starts = [S0 if i == 0 else after[i - 1] for i in range(0, L, CHUNK)]
    return o, starts, after[-1] if L else S0


def neumann_fp16(A):
    """(I + A)^-1 as the first NEUMANN_TERMS terms of its Neumann series, in fp16: [HV, c, c]."""
    A16 = A.astype(np.float16)
    term = np.broadcast_to(np.eye(A.shape[-1], dtype=np.float16), A.shape).copy()
    total = term.copy()
    for _ in range(NEUMANN_TERMS - 1):
        term = -np.matmul(term, A16)
        total = total + term
    return total


def chunked(q, k, v, g, beta, S0, bug):
    """The chunked form (UT transform) chunk by chunk: A[i, j] = beta_i sum_c k_ic k_jc D[i, j, c] for
    j < i, U = (I + A)^-1 beta (v - (k exp(G))^T S0), D[i, j] = exp(G_i - G_j)."""
    L, HV, K = k.shape
    S = S0.astype(np.float16).astype(np.float64) if bug == "neumann-fp16" else S0.copy()
    o = np.empty((L, HV, v.shape[-1]))
    starts = []
    for s in range(0, L, CHUNK):
        starts.append(S.copy())
        e = min(s + CHUNK, L)
        c = e - s
        G = np.cumsum(g[s:e], axis=0)                                    # [c, HV, K]
        lower = np.tril(np.ones((c, c), dtype=bool))[:, :, None, None]    # j <= i
        if bug == "gate-overflow":  # fp32 exponentials of G and -G, multiplied
            G32 = np.cumsum(g[s:e].astype(np.float32), axis=0)
            with np.errstate(over="ignore", invalid="ignore"):
                up, down = np.exp(G32).astype(np.float64), np.exp(-G32).astype(np.float64)
                D = np.where(lower, up[:, None] * down[None, :], 0.0)    # [c, c, HV, K]
        else:
            up = np.exp(G)
            D = np.exp(np.where(lower, G[:, None] - G[None, :], -np.inf))
        kc, qc, vc, bc = k[s:e], q[s:e], v[s:e], beta[s:e]
        A = np.einsum("ihc,jhc,ijhc->hij", kc, kc, D) * np.transpose(bc)[:, :, None]
        A = A * np.tril(np.ones((c, c)), -1)                              # strictly lower
        rhs = np.transpose(bc)[:, :, None] * (np.transpose(vc, (1, 0, 2)) - np.einsum("ihc,hcv->hiv", kc * up, S))
        with np.errstate(over="ignore", invalid="ignore"):
            if bug == "neumann-fp16":
                U = np.matmul(neumann_fp16(A), rhs.astype(np.float16)).astype(np.float64)   # [HV, c, V]
            else:
                U = np.linalg.solve(np.eye(c) + A, rhs)
            o[s:e] = np.einsum("ihc,hcv->ihv", qc * up, S) + np.einsum("ihc,jhc,ijhc,hjv->ihv", qc, kc, D, U)
            S = up[-1][:, :, None] * S + np.einsum("jhc,jhc,hjv->hcv", kc, D[-1], U)
            if bug == "neumann-fp16":
                S = S.astype(np.float16).astype(np.float64)
    return o, starts, S


def planted(bug):
    """The planted kernel of one sequence, for numpy_adapter.run_prefill_by_sequence."""
    if bug == "window-512":
        return window_512
    return lambda *seq: chunked(*seq, bug)


BUGS = ("neumann-fp16", "window-512", "gate-overflow", "none")

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--bug" or sys.argv[2] not in BUGS:
        sys.exit("usage: planted_numerics.py --bug " + "|".join(BUGS))
    bug = sys.argv[2]
    compute = na.run_case if bug == "none" else (lambda case: na.run_prefill_by_sequence(case, planted(bug)))
    main([Entry("planted-" + bug, "strict", CAPABILITIES, lambda case, lib: compute(case))], na.load,
         __doc__.split("\n")[0], backend="numpy", argv=[])
