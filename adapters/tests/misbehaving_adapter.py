#!/usr/bin/env python3
"""An exec adapter that misbehaves once, for kda-oracle's tests of the protocol's error handling.

    misbehaving_adapter.py MODE

On the first request of a kda-oracle run (remembered by a marker file next to the request, in
kda-oracle's private directory, so a restarted adapter behaves) it does MODE; every other request is
answered like numpy_adapter.py. Request modes:
  crash         killed by SIGSEGV            exit          exits with status 3
  hang          never answers                garbage       answers an unparseable line
  no-results    answers ok, writes nothing   bad-results   returns half of o's buffer
  unknown-rule  rejects with a made-up rule  reject        rejects with state_pool_alignment
  error         answers an error             scribble      returns the whole pool zeroed (a write
                                                           outside the region the call may write)
Handshake modes, before any request: bad-handshake, old-protocol, silent (sends nothing), die (exits).
Mode no-verify declares what an adapter written before verify calls declares (modes prefill and
decode, no table or scratch state source), answers every request like numpy_adapter.py, and crashes
on any verify request: kda-oracle must never send it one.
"""
import os
import signal
import sys
import time

import h5py
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "python")]
import numpy_adapter  # noqa: E402
from kda_adapter import Entry  # noqa: E402
from kda_adapter.buffers import NumpyBuffers  # noqa: E402
from kda_adapter.dtypes import text  # noqa: E402
from kda_adapter.protocol import reply  # noqa: E402
from kda_adapter.requests import Requests  # noqa: E402

NAME = "misbehaving"
PROFILE = numpy_adapter.PROFILE


def requests(mode, compute=numpy_adapter.run_case):
    """Request files served like numpy_adapter.py's, each case computed by compute(case)."""
    entry = Entry(NAME, PROFILE, numpy_adapter.CAPABILITIES, lambda case, lib: compute(case))
    return Requests(entry, None, NumpyBuffers(), f"misbehaving-{mode}")


def handshake(mode):
    if mode == "bad-handshake":
        reply("hello kda-oracle")
    elif mode == "old-protocol":
        reply(f"kda-adapter 0 {NAME} {PROFILE}")
    elif mode == "silent":
        time.sleep(3600)
    elif mode == "die":
        sys.exit(4)
    else:
        capabilities = dict(numpy_adapter.CAPABILITIES)
        if mode == "no-verify":
            capabilities.update(modes="prefill,decode", state_sources="none,dense,pool")
        reply(f"kda-adapter 1 misbehaving-{mode} {PROFILE} " + " ".join(f"{k}={v}" for k, v in capabilities.items()))


def zero_the_pool(case):
    numpy_adapter.run_case(case)
    if case.has("state_pool"):
        case.buffer("state_pool")[...] = 0


def misbehave(mode, request, results):
    """Does MODE for one request; returns the answer line, or None when the mode answers nothing."""
    if mode == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "exit":
        sys.exit(3)
    if mode == "hang":
        time.sleep(3600)
    if mode == "garbage":
        return "banana split"
    if mode == "no-results":
        return "ok"
    if mode == "bad-results":
        requests(mode, compute=lambda case: None).handle(request, results)
        with h5py.File(results, "r+") as f:  # o comes back cut in half
            o = f["cases/case/o"]
            half, dtype = o[: o.shape[0] // 2], o.attrs["dtype"]
            del f["cases/case/o"]
            f["cases/case"].create_dataset("o", data=half).attrs["dtype"] = dtype
        return "ok"
    if mode == "unknown-rule":
        return "rejected not_a_rule the kernel made this up"
    if mode == "reject":
        return "rejected state_pool_alignment slot stride 3 elements must be a multiple of 16"
    if mode == "error":
        return "error CUDA error: out of memory"
    if mode == "scribble":
        requests(mode, compute=zero_the_pool).handle(request, results)
        return "ok"
    raise ValueError(f"unknown mode {mode}")


def main():
    mode = sys.argv[1]
    np.seterr(over="ignore", under="ignore")
    served = requests(mode)
    handshake(mode)
    for line in sys.stdin:
        words = line.split()
        if words == ["quit"]:
            return
        request, results = words[1], words[2]
        if mode == "no-verify":
            with h5py.File(request, "r") as f:
                if any(text(case.attrs["mode"]) == "verify" for case in f["cases"].values()):
                    os.kill(os.getpid(), signal.SIGSEGV)
            served.handle(request, results)
            reply("ok")
            continue
        marker = os.path.join(os.path.dirname(request), "misbehaved")
        if not os.path.exists(marker):
            open(marker, "w").close()
            reply(misbehave(mode, request, results))
            continue
        served.handle(request, results)
        reply("ok")


if __name__ == "__main__":
    main()
