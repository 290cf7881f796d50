#!/usr/bin/env python3
"""adapters/fla/fla_adapter.py on FLA's real Triton kernels, run in Triton's CPU interpreter
(--interpret): the adapter's buffers, views, gates, layouts, varlen, pool and index-table mapping,
judged by kda-oracle check. Exits 77 (CTest: skipped) when torch, triton or fla cannot be imported, as in CI.

Environment: KDA_ORACLE, the kda-oracle binary; PYTHONPATH may point at an unpacked fla-core wheel.
The interpreter takes seconds per case: head dims 16 and 32, small cases (--max-size), few of them.
"""
import os
import re
import subprocess
import sys

ADAPTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "adapters", "fla", "fla_adapter.py")

# (entry, dtype, properties, cases, None: must pass | a regex kda-oracle's failing output must match).
# f16, not bf16: the interpreter computes FLA's bf16 chunk kernels wrongly. chunk leaves out
# matches-reference: FLA's chunked final states carry the input dtype's rounding, which an f32 state
# bound rejects (docs/fla.md, "What to expect").
RUNS = [
    ("recurrent", "f16", "matches-reference,untouched,packing,split,layout,gva-expansion", 3, None),
    ("chunk", "f16", "untouched,packing,gva-expansion", 2, None),
    # FLA reads and writes pool[-1] for a padding row (index -1): the adapter must let the oracle see it.
    ("pooled-decode", "bf16", "padding-rows", 3,
     r"padding sequence \d+ has output|bytes outside buffer 'state_pool'"),
    # The same in the index-table verify: a -1 entry of the table (a padding row's initial slot, or a
    # padding slot for a token) is read or written as pool[-1].
    ("verify", "bf16", "padding-rows", 3,
     r"padding (sequence|row|request) \d+|bytes outside buffer 'state_pool'"),
    # checks_contract=1: fla_verify's rules broken (an output of another shape, another state source),
    # FLA's bare assert and the adapter's entry check answered through the rejection table.
    ("verify", "bf16", "rejects-invalid", 3, None),
]


def main():
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
        import fla.ops.kda  # noqa: F401
    except (ImportError, OSError) as e:
        print(f"skipped: {e}")
        return 77
    failures = 0
    for entry, dtype, properties, cases, failure in RUNS:
        kernel = f"exec:{sys.executable} {ADAPTER} --entry {entry} --dtype {dtype} --head-dims 16,32 --interpret"
        run = subprocess.run([os.environ["KDA_ORACLE"], "check", "--kernel", kernel, "--properties", properties,
                              "--cases", str(cases), "--max-size", "30", "--timeout", "300", "--save-failures", ""],
                             capture_output=True, text=True)
        output = run.stdout + run.stderr
        ok = run.returncode == 0 if failure is None else run.returncode != 0 and re.search(failure, output)
        print(output.replace("\r", "\n")[-4000:])
        print(f"== {entry} {properties}: exit {run.returncode}, {'as expected' if ok else 'NOT AS EXPECTED'}\n")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
