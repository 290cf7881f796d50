"""One case of a request file: every buffer whole between guard bands, and strided views onto them."""
from collections import namedtuple

import numpy as np

from .dtypes import STORED, text

GUARD = 256  # bytes of guard band on each side of a buffer (more before a pool: a slot stride)
# Tensors a call may write (the scratch form only reads the pool, but its whole buffer still comes back).
OUTPUTS = ("state_pool", "o", "final_state", "chunk_states", "token_states", "scratch_states")

Buffer = namedtuple("Buffer", "raw lead size dtype")  # raw guarded allocation, guard bytes before, payload bytes


class Case:
    """A request case on one backend (buffers.py). A pool's leading guard band is one slot stride
    longer, so that a kernel reading or writing slot -1 (an unchecked padding index) lands in it."""

    def __init__(self, group, buffers):
        self.backend = buffers
        self.attrs = dict(group.attrs)
        meta = group["metadata"].attrs if "metadata" in group else {}
        self.persistent = [n for n in text(meta.get("persistent", "")).split(",") if n]
        self.persistent_run = text(meta.get("persistent_run", ""))
        self.tensors = {}  # tensor -> (buffer, dtype, shape, strides, offset)
        for name, t in group["tensors"].items():
            self.tensors[name] = (text(t.attrs["buffer"]), text(t.attrs["dtype"]),
                                  tuple(int(n) for n in t.attrs["shape"]),
                                  tuple(int(s) for s in t.attrs["strides"]), int(t.attrs["offset"]))
        before = {}
        if "state_pool" in self.tensors:
            buffer, dtype, _, strides, _ = self.tensors["state_pool"]
            slot_bytes = abs(strides[0]) * np.dtype(STORED[dtype]).itemsize
            before[buffer] = GUARD + (slot_bytes + GUARD - 1) // GUARD * GUARD
        self.buffers = {}
        for name, ds in group["buffers"].items():
            dtype = text(ds.attrs["dtype"])
            payload = np.ascontiguousarray(ds[()], dtype=STORED[dtype]).view(np.uint8)
            lead = before.get(name, GUARD)
            self.buffers[name] = Buffer(buffers.guarded(payload, lead, GUARD), lead, payload.size, dtype)
        self.kept_views = {}  # persistent tensor -> its view kept for the serving run (persistent.py)

    @property
    def torch(self):
        """The torch module on the torch backend, None on numpy."""
        return self.backend.torch

    def has(self, name):
        return name in self.tensors

    def dtype_of(self, name):
        return self.tensors[name][1]

    def buffer(self, name):
        """The whole typed buffer the tensor views (its payload, without the guard bands)."""
        raw, lead, size, dtype = self.buffers[self.tensors[name][0]]
        return self.backend.typed(raw, lead, size, dtype)

    def view(self, name):
        """The tensor as a writable strided view of its buffer."""
        if name in self.kept_views:
            return self.kept_views[name]
        _, _, shape, strides, offset = self.tensors[name]
        return self.backend.strided(self.buffer(name), shape, strides, offset)

    def optional(self, name):
        return self.view(name) if self.has(name) else None

    def guard_damage(self, who):
        """A line per guard band that changed: `who` wrote outside that buffer."""
        lines = []
        for name, (raw, lead, size, _) in self.buffers.items():
            for where, band in (("before", raw[:lead]), ("after", raw[lead + size:])):
                changed = self.backend.changed(band)
                if changed:
                    first, last = changed[0], changed[-1]
                    span = (f"between {lead - first} and {lead - last} bytes before its start" if where == "before"
                            else f"between {first} and {last} bytes past its end")
                    lines.append(f"{who} changed {len(changed)} bytes outside buffer '{name}' ({size} bytes), {span}")
        return lines

    def outputs(self):
        """Output tensor -> (dtype, the whole buffer it views as a numpy array of the stored type)."""
        out = {}
        for name in OUTPUTS:
            if self.has(name):
                raw, lead, size, dtype = self.buffers[self.tensors[name][0]]
                out[name] = (dtype, self.backend.host(raw, lead, size, dtype))
        return out
