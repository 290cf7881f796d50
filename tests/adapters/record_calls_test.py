#!/usr/bin/env python3
"""kda_adapter.record end to end: a fake FLA-style chunk_kda (numpy, float64 recurrence) called inside
record_calls writes call files whose layout is what was passed (q, k and v slices of one fused
projection, a padded token stride, cu_seqlens by value); `kda-oracle golden import` turns them into golden
cases that `golden verify` replays against ref-fp64, and the fp64 expected output of the imported case
equals what the fake function computed from the same contents; the call seeds `check --around`.

    record_calls_test.py KDA_ORACLE
"""
import json
import os
import subprocess
import sys
import tempfile
import types

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "python"))
from kda_adapter.record import record_calls  # noqa: E402

ORACLE = sys.argv[1]
H, HV, K, V = 1, 2, 16, 16
LENGTHS = [5, 7]


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
              use_qk_l2norm_in_kernel=False, cu_seqlens=None):
    """The KDA recurrence in float64, states [V,K]: S <- S diag(exp g); S += beta (v - S k) k^T; o = S (scale q)."""
    scale = K ** -0.5 if scale is None else scale
    o = np.zeros(v.shape, np.float64)
    finals = np.zeros((len(cu_seqlens) - 1, HV, V, K))
    for n in range(len(cu_seqlens) - 1):
        for h in range(HV):
            S = initial_state[n, h].astype(np.float64).copy()
            for t in range(cu_seqlens[n], cu_seqlens[n + 1]):
                qt, kt = q[0, t, h * H // HV].astype(np.float64), k[0, t, h * H // HV].astype(np.float64)
                if use_qk_l2norm_in_kernel:
                    qt, kt = qt / np.sqrt(qt @ qt + 1e-6), kt / np.sqrt(kt @ kt + 1e-6)
                S = S * np.exp(g[0, t, h].astype(np.float64))[None, :]
                S = S + beta[0, t, h] * np.outer(v[0, t, h] - S @ kt, kt)
                o[0, t, h] = S @ (scale * qt)
            finals[n, h] = S
    chunk_kda.last = o
    return o.astype(np.float32), finals.astype(np.float32) if output_final_state else None


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def oracle(*args):
    done = subprocess.run([ORACLE, *args], capture_output=True, text=True)
    check(done.returncode == 0, f"kda-oracle {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done.stdout


def main():
    fake = types.ModuleType("fakekda")
    fake.chunk_kda = chunk_kda
    sys.modules["fakekda"] = fake
    rng = np.random.default_rng(5)
    T = sum(LENGTHS)
    width = 2 * H * K + HV * V + 3  # a fused projection with 3 elements of padding per token
    proj = rng.standard_normal((1, T, width)).astype(np.float32)
    q = proj[:, :, :H * K].reshape(1, T, H, K)
    k = proj[:, :, H * K:2 * H * K].reshape(1, T, H, K)
    v = proj[:, :, 2 * H * K:2 * H * K + HV * V].reshape(1, T, HV, V)
    check(np.shares_memory(q, proj) and np.shares_memory(v, proj), "the test's q and v are views of the projection")
    g = -rng.uniform(0.01, 1, (1, T, HV, K)).astype(np.float32)
    beta = rng.uniform(0.1, 0.9, (1, T, HV)).astype(np.float32)
    h0 = (0.1 * rng.standard_normal((len(LENGTHS), HV, V, K))).astype(np.float32)
    cu = np.array([0] + list(np.cumsum(LENGTHS)), np.int32)

    with tempfile.TemporaryDirectory() as out:
        with record_calls("fakekda.chunk_kda", out, tensors=True, source={"library": "fake"}):
            o, final = fake.chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                      use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
        check(fake.chunk_kda is chunk_kda, "the function is restored after the block")
        unrecorded = fake.chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True,
                                    use_qk_l2norm_in_kernel=True, cu_seqlens=cu)[0]
        check(np.array_equal(o, unrecorded), "the recorded call went through unchanged")

        call = json.load(open(os.path.join(out, "chunk_kda-0000.json")))
        t = call["tensors"]
        check(call["entry"] == "fakekda.chunk_kda" and call["mode"] == "prefill", "entry and mode recorded")
        check(call["options"] == {"l2norm_qk": True}, f"options recorded: {call['options']}")
        check(t["q"]["buffer"] == t["k"]["buffer"] == t["v"]["buffer"] == "q", "q, k, v share one buffer")
        check(t["k"]["strides"] == [T * width, width, K, 1] and t["k"]["offset"] == H * K,
              f"k's strides and offset as passed: {t['k']}")
        check(t["cu_seqlens"]["values"] == cu.tolist(), "cu_seqlens by value")
        check(t["o"]["shape"] == [1, T, HV, V] and "final_state" in t, "the outputs' layouts")
        check(os.path.exists(os.path.join(out, "chunk_kda-0000.safetensors")), "contents written")

        golden = os.path.join(out, "recorded.h5")
        oracle("golden", "import", os.path.join(out, "chunk_kda-0000.json"), "--tensors",
               os.path.join(out, "chunk_kda-0000.safetensors"), "--out", golden, "--name", "recorded")
        check(" 0 failed" in oracle("golden", "verify", "--golden", golden, "--kernel", "ref-fp64"),
              "golden verify replays the recorded call")
        with h5py.File(golden, "r") as f:
            expected = f["cases/recorded/expected/o"][...]
        error = np.sqrt(np.mean((expected - chunk_kda.last) ** 2) / np.mean(expected ** 2))
        check(error < 1e-12, f"the imported case computes what the recorded call did (rel-RMS {error:.3g})")

        # The recorded call seeds check --around without its tensors file (only its geometry counts).
        check("matches-reference" in oracle(
            "check", "--kernel", "ref-fp32", "--around", os.path.join(out, "chunk_kda-0000.json"),
            "--properties", "matches-reference", "--cases", "5"), "check --around a recorded call")

        # Without contents, the importer draws the floating-point inputs from the call's seed.
        with record_calls("fakekda.chunk_kda", os.path.join(out, "bare"), source={"library": "fake"}):
            fake.chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=True, cu_seqlens=cu)
        check(not os.path.exists(os.path.join(out, "bare", "chunk_kda-0000.safetensors")), "no contents asked")
        oracle("golden", "import", os.path.join(out, "bare", "chunk_kda-0000.json"), "--out", golden, "--append")
        check(" 0 failed" in oracle("golden", "verify", "--golden", golden, "--kernel", "ref-fp64"),
              "golden verify replays the drawn call")
    print("record_calls: recorded, imported and replayed")


if __name__ == "__main__":
    main()
