#!/usr/bin/env python3
"""adapters/vllm/vllm_adapter.py on vLLM 0.33's real Triton KDA kernels, run in Triton's CPU interpreter
(--interpret): the adapter's stub loader, its slot shift, fused q/k/v buffer and pool guards, judged by
kda-oracle check. Exits 77 (CTest: skipped) when torch or triton cannot be imported or vLLM's modules
are not unpacked (scripts/pack-vllm.sh, or $VLLM_ROOT), as in CI.

Environment: KDA_ORACLE, the kda-oracle binary. Head dims 16 and 32, small cases, few of them.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ADAPTER = os.path.join(ROOT, "adapters", "vllm", "vllm_adapter.py")
VLLM_ROOT = os.environ.get("VLLM_ROOT") or os.path.join(ROOT, ".carry", "python")

# (entry, dtype, properties, cases, None: must pass | a regex kda-oracle's failing output must match).
RUNS = [
    ("decode", "f32", "matches-reference,untouched,padding-rows,rejects-invalid", 3, None),
    ("packed-decode", "f32", "matches-reference,untouched,padding-rows,rejects-invalid", 2, None),
    ("verify", "f32", "untouched,rejects-invalid", 2, None),
    # A padding request (initial slot <= 0) gets a zero output for its first token only; the kernel
    # returns before the others, which keep the poison (fused_recurrent_kda_fwd_kernel).
    ("verify", "f32", "padding-rows", 8, r"padding sequence \d+ has output nan at token [1-9]"),
    ("chunk", "f16", "untouched,rejects-invalid", 2, None),
    # chunk_kda copies q and k to compact tensors only with l2norm; its kernels address them as compact.
    ("chunk", "f16", "matches-reference", 2, r"NaN/Inf where the reference is finite"),
]


def main():
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except (ImportError, OSError) as e:
        print(f"skipped: {e}")
        return 77
    if not os.path.isdir(os.path.join(VLLM_ROOT, "vllm")):
        print(f"skipped: no vllm/ under {VLLM_ROOT} (scripts/pack-vllm.sh)")
        return 77
    failures = 0
    for entry, dtype, properties, cases, failure in RUNS:
        kernel = f"exec:{sys.executable} {ADAPTER} --entry {entry} --dtype {dtype} --head-dims 16,32 --interpret"
        run = subprocess.run([os.environ["KDA_ORACLE"], "check", "--kernel", kernel, "--properties", properties,
                              "--cases", str(cases), "--max-size", "30", "--timeout", "300", "--save-failures", ""],
                             capture_output=True, text=True, env=dict(os.environ, VLLM_ROOT=VLLM_ROOT))
        output = run.stdout + run.stderr
        ok = run.returncode == 0 if failure is None else run.returncode != 0 and re.search(failure, output)
        print(output.replace("\r", "\n")[-4000:])
        print(f"== {entry} {properties}: exit {run.returncode}, {'as expected' if ok else 'NOT AS EXPECTED'}\n")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
