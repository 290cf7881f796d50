"""The serving mode's metadata buffers (adapters/README.md, "Persistent metadata").

For each serving run, one guarded buffer per (tensor, dtype, buffer length), refilled in place from
every request naming the tensor persistent, and one view of it per geometry (shape, strides,
offset), so the kernel is handed the very same array or tensor object with new contents, as a
serving engine's CUDA graphs are. A request naming another run drops them all.
"""


class PersistentMetadata:
    def __init__(self):
        self.run = None
        self.raw = {}
        self.views = {}

    def adopt(self, case):
        """Points the case's persistent metadata tensors at the run's kept buffers and views."""
        if case.persistent and case.persistent_run != self.run:  # a new engine: new buffers
            self.run, self.raw, self.views = case.persistent_run, {}, {}
        for name in case.persistent:
            buffer, dtype, shape, strides, offset = case.tensors[name]
            fresh = case.buffers[buffer]
            key = (name, dtype, fresh.size)
            kept = self.raw.setdefault(key, fresh.raw)
            if kept is not fresh.raw:
                case.backend.copy_into(kept, fresh.raw)  # guard bands included: the fresh ones are intact
            case.buffers[buffer] = fresh._replace(raw=kept)
            geometry = key + (shape, strides, offset)
            if geometry not in self.views:
                self.views[geometry] = case.view(name)
            case.kept_views[name] = self.views[geometry]
