"""Unit tests of the Python adapter kit (adapters/python/kda_adapter) on one backend.

    python_kit_test.py numpy|torch

Request files are cases of the committed smoke file (golden/smoke.h5) copied alone, as kda-oracle
writes them. torch runs on the CPU; without torch the run exits 77 (CTest: skipped).
"""
import argparse
import contextlib
import io
import os
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [os.path.join(ROOT, "adapters", "python"), os.path.join(ROOT, "adapters")]
from kda_adapter import Entry, EntryError  # noqa: E402
from kda_adapter.buffers import NumpyBuffers, TorchBuffers  # noqa: E402
from kda_adapter.dtypes import text  # noqa: E402
from kda_adapter.protocol import serve  # noqa: E402
from kda_adapter.requests import GuardBandError, Requests  # noqa: E402

SMOKE = os.path.join(ROOT, "golden", "smoke.h5")


def request(directory, case, file_name, persistent=None, run="1", state_indices=None):
    """A request file holding smoke case `case` as `case`; persistent: metadata tensors kept for serving
    run `run`; state_indices: new values of that buffer."""
    path = os.path.join(directory, file_name)
    with h5py.File(SMOKE, "r") as smoke, h5py.File(path, "w") as f:
        smoke.copy(smoke["cases"][case], f.require_group("cases"), name="case")
        del f["cases/case/expected"]
        meta = f["cases/case/metadata"].attrs
        if persistent:
            meta["persistent"], meta["persistent_run"] = persistent, run
        if state_indices is not None:
            f["cases/case/buffers/state_indices"][...] = state_indices
    return path


class Tests:
    def __init__(self, buffers, directory):
        self.buffers, self.dir, self.failures, self.passed = buffers, directory, [], 0

    def check(self, condition, what):
        if condition:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"FAILED: {what}")

    def requests(self, run, **entry):
        return Requests(Entry("probe", "strict", {"modes": "prefill"}, run, **entry), None, self.buffers, "probe")

    def raises(self, call, error, what):
        try:
            call()
        except error as e:
            return str(e)
        self.check(False, f"{what}: no {error.__name__} raised")
        return ""

    def test_views_and_whole_buffers(self):
        """o = v through as_strided views of a strided case; the gaps of o's buffer come back as sent."""
        def copy_v(case, lib):
            case.view("o")[...] = case.view("v")
        req = request(self.dir, "strided_inputs", "views.h5")
        self.requests(copy_v).handle(req, os.path.join(self.dir, "views-results.h5"))
        with h5py.File(req, "r") as sent, h5py.File(os.path.join(self.dir, "views-results.h5"), "r") as got:
            t = {n: dict(sent[f"cases/case/tensors/{n}"].attrs) for n in ("o", "v")}
            sent_o, got_o = sent["cases/case/buffers/o"][()], got["cases/case/o"][()]
            v = sent[f"cases/case/buffers/{t['v']['buffer'].decode()}"][()]
            view = lambda data, n: np.lib.stride_tricks.as_strided(  # noqa: E731
                data[t[n]["offset"]:], shape=t[n]["shape"], strides=[s * data.itemsize for s in t[n]["strides"]])
            self.check(np.array_equal(view(got_o, "o"), view(v, "v")), "o holds v's elements through both views")
            written = np.zeros(sent_o.shape, dtype=bool)
            view(written, "o")[...] = True
            self.check(written.sum() < written.size, "the strided case's o has gaps")
            self.check(np.array_equal(got_o[~written].view(np.uint32), sent_o[~written].view(np.uint32)),
                       "the gaps of o come back bit for bit")
            self.check(text(got["cases/case/o"].attrs["dtype"]) == text(sent["cases/case/buffers/o"].attrs["dtype"]),
                       "o comes back with its dtype")

    def test_guard_bands(self):
        """A byte written past a buffer's end or before a pool's first slot is an error naming the buffer
        and the byte range; a kernel that stays inside passes."""
        def past_o(case, lib):
            raw, lead, size, _ = case.buffers[case.tensors["o"][0]]
            raw[lead + size + 2] = 0
            raw[lead + size + 5] = 0
        message = self.raises(lambda: self.requests(past_o).handle(request(self.dir, "decode_batch", "past.h5"),
                                                                   os.path.join(self.dir, "r.h5")),
                              GuardBandError, "a write past o")
        self.check("probe changed 2 bytes outside buffer 'o'" in message and "between 2 and 5 bytes past its end"
                   in message, f"the stray write past o is located: {message!r}")

        def slot_minus_one(case, lib):
            raw, lead, size, dtype = case.buffers[case.tensors["state_pool"][0]]
            slot = case.tensors["state_pool"][3][0] * 4  # f32 pool: bytes per slot
            self.check(lead >= slot + 256, f"a pool's leading guard band spans a slot ({lead} >= {slot} + 256)")
            raw[lead - slot] = 0  # slot -1, first byte
            raw[lead - 1] = 0
        message = self.raises(lambda: self.requests(slot_minus_one).handle(
            request(self.dir, "decode_batch", "before.h5"), os.path.join(self.dir, "r.h5")), GuardBandError,
            "a write before the pool")
        self.check("outside buffer 'state_pool'" in message and "between 2048 and 1 bytes before its start" in message,
                   f"the write at slot -1 is located: {message!r}")
        ok = os.path.join(self.dir, "inside.h5")
        self.requests(lambda case, lib: case.view("o").fill_(0) if case.torch else case.view("o").fill(0)).handle(
            request(self.dir, "decode_batch", "inside-req.h5"), ok)
        self.check(os.path.exists(ok), "a kernel writing its outputs only gets a results file")

    def test_persistent_metadata(self):
        """Within a serving run a metadata tensor is the same object, refilled in place; a new run gets
        new buffers; without `persistent` every request gets a fresh one."""
        seen = []

        def record(case, lib):
            view = case.view("state_indices")
            pointer = view.data_ptr() if case.torch else view.__array_interface__["data"][0]
            seen.append((view, pointer, [int(x) for x in view]))
        requests = self.requests(record)
        out = os.path.join(self.dir, "serving-results.h5")
        with h5py.File(SMOKE, "r") as smoke:
            indices = smoke["cases/decode_batch/buffers/state_indices"][()]
        steps = [("state_indices", "1", indices), ("state_indices", "1", indices[::-1].copy()),
                 ("state_indices", "2", indices), (None, "1", indices)]
        for i, (persistent, run, values) in enumerate(steps):
            requests.handle(request(self.dir, "decode_batch", f"serving{i}.h5", persistent, run, values), out)
        (first, p0, v0), (second, p1, v1), (third, p2, _), (fresh, p3, _) = seen
        self.check(first is second and p0 == p1, "the second call of a run gets the very same view object")
        self.check(v1 == [int(x) for x in indices[::-1]] and v0 == [int(x) for x in indices],
                   f"refilled in place with the request's values: {v0} then {v1}")
        self.check(third is not first and p2 != p0, "a new serving run gets a new buffer")
        self.check(fresh is not third, "a request without persistent metadata gets its own")

    def test_rejections_and_errors(self):
        """What a kernel raises is answered through the entry's table; accepts() reasons become EntryError;
        one bad case never ends the loop; what the library prints goes to stderr, not into the answers."""
        def kernel(case, lib):
            print("library chatter on stdout")
            if case.attrs["T"] == 9:
                raise ValueError("`chunk_size` must be either 32 or 64 for KDA")
            raise RuntimeError("something else")
        entry = Entry("probe", "strict", {"modes": "prefill,decode"}, kernel,
                      rejections=[(r"^ValueError: `chunk_size` must be", "chunk_size"),
                                  (r"^EntryError: no pools here", "state_source_supported")],
                      accepts=lambda case: "no pools here" if case.has("state_pool") else None)
        requests = Requests(entry, None, self.buffers, "probe")
        out = os.path.join(self.dir, "reject-results.h5")
        lines = [f"run {request(self.dir, 'decode_batch', 'pool.h5')} {out}",
                 f"run {request(self.dir, 'batched_token_states', 'nine.h5')} {out}", "what now",
                 f"run {request(self.dir, 'chunk_boundaries', 'other.h5')} {out}", "quit",
                 "run never read"]
        answers = io.StringIO()
        with contextlib.redirect_stdout(answers):
            serve(entry.handshake("probe", None), requests.handle, entry.table, lines=lines)
        got = answers.getvalue().splitlines()
        self.check(len(got) == 5, f"a handshake and one answer per line until quit: {got}")
        if len(got) == 5:
            self.check(got[1] == "rejected state_source_supported EntryError: no pools here", got[1])
            self.check(got[2] == "rejected chunk_size ValueError: `chunk_size` must be either 32 or 64 for KDA", got[2])
            self.check(got[3] == "error unknown request: what now", got[3])
            self.check(got[4] == "error RuntimeError: something else", got[4])
        self.check(issubclass(EntryError, Exception), "EntryError is an exception")

    def test_timing(self):
        """The call's wall seconds are the results case's attribute `seconds`."""
        out = os.path.join(self.dir, "timed-results.h5")
        self.requests(lambda case, lib: time.sleep(0.05)).handle(request(self.dir, "decode_batch", "timed.h5"), out)
        with h5py.File(out, "r") as f:
            seconds = f["cases/case"].attrs.get("seconds")
            self.check(seconds is not None and 0.05 <= float(seconds) < 5, f"seconds = {seconds}")
            self.check(f.attrs["kernel"] == "probe" and f.attrs["schema"] == "kda-oracle/results",
                       "the results file names the kernel and its schema")

    def test_handshake(self):
        run = lambda case, lib: None  # noqa: E731
        checked = Entry("e", "fla_chunk", {"modes": "prefill", "input_dtypes": "bf16,f32"}, run,
                        rejections=[("x", "chunk_size")], arithmetic="bf16-operands")
        line = checked.handshake("lib-e", argparse.Namespace(dtype="f32", head_dims="64,128"))
        self.check(line == "kda-adapter 1 lib-e fla_chunk modes=prefill input_dtypes=f32 output_dtypes=f32 "
                   "key_head_dims=64,128 value_head_dims=64,128 checks_contract=1 arithmetic=bf16-operands", line)
        plain = Entry("e", "strict", lambda args: {"modes": "decode"}, run).handshake("e", None)
        self.check(plain == "kda-adapter 1 e strict modes=decode", f"fp32 and no table: neither key: {plain}")
        self.raises(lambda: Entry("e", "strict", {}, run, arithmetic="fp8").handshake("e", None), ValueError,
                    "an unknown arithmetic")
        self.raises(lambda: Entry("e", "strict", {"modes": "a b"}, run).handshake("e", None), ValueError,
                    "a capability of two words")


def main():
    backend = sys.argv[1] if len(sys.argv) == 2 else ""
    if backend == "numpy":
        buffers = NumpyBuffers()
    elif backend == "torch":
        try:
            import torch
        except ImportError as e:
            print(f"skipped: {e}")
            return 77
        buffers = TorchBuffers(torch, "cpu")
    else:
        sys.exit("usage: python_kit_test.py numpy|torch")
    with tempfile.TemporaryDirectory() as directory:
        tests = Tests(buffers, directory)
        for name in sorted(n for n in dir(tests) if n.startswith("test_")):
            getattr(tests, name)()
    print(f"{tests.passed} passed, {len(tests.failures)} failed")
    return 1 if tests.failures else 0


if __name__ == "__main__":
    sys.exit(main())
