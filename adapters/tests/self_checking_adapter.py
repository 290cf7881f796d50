#!/usr/bin/env python3
"""An exec adapter that checks its own contract (checks_contract=1), for kda-oracle's tests of that path.

    self_checking_adapter.py [--unmapped]

It declares SGLang's Triton verify contract (profile sglang_triton_verify: an explicit scale must be
positive, the scratch form only, [V,K] states) and checks those rules itself before running the case
like numpy_adapter.py, raising exceptions in the manner of a Python kernel library. A rejection table
(adapters/python/kda_adapter/rejections.py) maps them to the rules kda-oracle names. With --unmapped
the scale check raises an exception the table does not map: its answer is an `error` line carrying
the exception's type and message, which kda-oracle reports for the case while the run goes on.
"""
import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "python")]
import numpy_adapter  # noqa: E402
from kda_adapter import Entry, main  # noqa: E402

CAPABILITIES = {"modes": "verify", "input_dtypes": "bf16,f16,f32,f64", "output_dtypes": "bf16,f16,f32,f64",
                "state_dtypes": "bf16,f32", "layouts": "VK", "state_sources": "scratch"}
REJECTIONS = [
    (r"^ValueError: scale must be positive", "scale_positive"),
    (r"^NotImplementedError: target_verify takes the scratch form", "state_source_supported"),
    (r"^NotImplementedError: states must be \[\.\.\., V, K\]", "state_layout"),
]


class ScaleMissing(Exception):
    """What --unmapped raises for a bad scale: no row of REJECTIONS names it."""


def check(case, unmapped):
    a = case.attrs
    if "scale" in a and not (math.isfinite(float(a["scale"])) and float(a["scale"]) > 0):
        if unmapped:
            raise ScaleMissing(f"no usable scale in {float(a['scale'])}")
        raise ValueError("scale must be positive")
    if numpy_adapter.text(a["mode"]) != "verify" or not case.has("scratch_states"):
        raise NotImplementedError("target_verify takes the scratch form (intermediate states) only")
    if numpy_adapter.text(a["state_layout"]) != "VK":
        raise NotImplementedError("states must be [..., V, K] (K contiguous)")


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--unmapped"]):
        sys.exit("usage: self_checking_adapter.py [--unmapped]")
    unmapped = sys.argv[1:] == ["--unmapped"]
    # The table's rows make the kit declare checks_contract=1 and answer what check() raises.
    entry = Entry("self-checking" + ("-unmapped" if unmapped else ""), "sglang_triton_verify", CAPABILITIES,
                  lambda case, lib: (check(case, unmapped), numpy_adapter.run_case(case)), rejections=REJECTIONS)
    main([entry], numpy_adapter.load, __doc__.split("\n")[0], backend="numpy", argv=[])
