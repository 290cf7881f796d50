"""Serving `run REQ RES`: a request file's cases through one entry, their outputs into a results file."""
import time

import h5py

from .case import Case
from .entry import EntryError
from .persistent import PersistentMetadata
from .results import write_results


class GuardBandError(RuntimeError):
    """The kernel wrote outside a buffer (a guard band changed)."""


class Requests:
    """Runs request files through `entry` with library `lib` on `buffers` (buffers.py); `name` is the
    adapter's name, in the results file and in guard-band errors. Each call is timed (wall seconds,
    the device synchronised before and after) into the results case's attribute `seconds`."""

    def __init__(self, entry, lib, buffers, name):
        self.entry, self.lib, self.buffers, self.name = entry, lib, buffers, name
        self.persistent = PersistentMetadata()

    def handle(self, request, results):
        out = {}
        with h5py.File(request, "r") as f:
            cases = [(name, Case(group, self.buffers)) for name, group in f["cases"].items()]
        for case_name, case in cases:
            self.persistent.adopt(case)
            reason = self.entry.accepts(case) if self.entry.accepts else None
            if reason:
                raise EntryError(reason)
            out[case_name] = self.run(case)
        write_results(results, self.name, out)

    def run(self, case):
        """(outputs, seconds) of one call; a changed guard band raises GuardBandError."""
        self.buffers.synchronize()
        with self.buffers.calling():
            start = time.perf_counter()
            self.entry.run(case, self.lib)
            self.buffers.synchronize()
            seconds = time.perf_counter() - start
        damage = case.guard_damage(self.name)
        if damage:
            raise GuardBandError("; ".join(damage))
        return case.outputs(), seconds
