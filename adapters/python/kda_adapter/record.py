"""Records real KDA calls as kda-oracle call files (docs/golden.md, "The call format").

    from kda_adapter.record import record_calls
    with record_calls("fla.ops.kda.chunk_kda", "calls/", tensors=True):
        model.generate(...)          # every chunk_kda call inside writes calls/chunk_kda-0000.json (+ .safetensors)

    kda-oracle golden import calls/chunk_kda-0000.json --tensors calls/chunk_kda-0000.safetensors --out repro.h5

The target is a dotted name (module path, then the attribute); the module attribute is replaced for
the duration of the block, so code that looks the function up through its module (or imports it inside
the block) is recorded; a reference taken before the block (`from fla.ops.kda import chunk_kda` at import
time) is not: name the module that reference lives in instead. Each call goes through unchanged; its
arguments are read before the call (a pool updated in place is recorded as it was passed).

Arguments are mapped onto the oracle's tensor and option names by `names` (FLA's keyword names by
default: FLA_NAMES); the returned tensors are named by `outputs` in order (("o", "final_state") by
default). Each tensor's dtype, shape, strides and storage offset are recorded, and tensors that share
storage name one buffer (a fused projection stays fused). Integer tensors (cu_seqlens, state indices,
accepted counts) are recorded by value; floating-point contents go to a .safetensors file beside the
JSON when tensors=True, else the importer draws them from the call's seed. Works with torch tensors
(CPU or CUDA) and numpy arrays.
"""
import contextlib
import functools
import importlib
import inspect
import json
import os
import struct

import numpy as np

SCHEMA = "kda-oracle/call"
VERSION = 1

# FLA-style keyword name -> the oracle's tensor name, or ("option", oracle option, transform).
FLA_NAMES = {
    "q": "q", "k": "k", "v": "v", "g": "g", "beta": "beta",
    "initial_state": "initial_state", "cu_seqlens": "cu_seqlens", "A_log": "A_log", "dt_bias": "dt_bias",
    "ssm_state_indices": "state_indices", "initial_state_indices": "state_indices",
    "state_indices": "state_indices", "num_accepted_tokens": "num_accepted",
    "scale": ("option", "scale", None),
    "use_qk_l2norm_in_kernel": ("option", "l2norm_qk", bool),
    "use_gate_in_kernel": ("option", "gate_in_kernel", bool),
    "use_beta_sigmoid_in_kernel": ("option", "beta_from_logits", bool),
    "allow_neg_eigval": ("option", "allow_neg_eigval", bool),
    "lower_bound": ("option", "lower_bound", None),
    "safe_gate": ("option", "safe_gate", bool),
    "chunk_size": ("option", "chunk_size", int),
}

_DTYPES = {  # numpy or torch dtype name -> (call dtype, safetensors dtype)
    "bfloat16": ("bf16", "BF16"), "float16": ("f16", "F16"), "float32": ("f32", "F32"),
    "float64": ("f64", "F64"), "int32": ("i32", "I32"), "int64": ("i64", "I64"),
}


def _is_tensor(x):
    return isinstance(x, np.ndarray) or type(x).__module__.startswith("torch")


def _dtype_name(x):
    return str(x.dtype).replace("torch.", "")


def _layout(x):
    """(dtype name, shape, strides in elements, storage key, storage offset in elements)."""
    if isinstance(x, np.ndarray):
        root = x
        while isinstance(root.base, np.ndarray):
            root = root.base
        item = x.itemsize
        strides = [s // item for s in x.strides]
        offset = (x.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // item
        return _dtype_name(x), list(x.shape), strides, ("numpy", id(root)), offset
    storage = x.untyped_storage()
    return _dtype_name(x), list(x.shape), list(x.stride()), (str(x.device), storage.data_ptr()), x.storage_offset()


def _host_bytes(x):
    """The tensor's contents, row-major, as little-endian bytes of its own dtype."""
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"), copy=False).tobytes()
    import torch
    y = x.detach().contiguous().cpu()
    if y.dtype == torch.bfloat16:
        y = y.view(torch.int16)
    return y.numpy().tobytes()


def write_safetensors(path, tensors):
    """tensors: name -> (safetensors dtype, shape, bytes). The format: an 8-byte little-endian header
    length, a JSON header (padded with spaces to 8 bytes), then the data."""
    header, data, at = {}, [], 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        data.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(data))


class _Recorder:
    def __init__(self, target, out_dir, mode, names, outputs, tensors, source):
        self.target, self.out_dir, self.mode = target, out_dir, mode
        self.names, self.outputs, self.tensors, self.source = names, outputs, tensors, source
        self.count = 0
        self.stem = target.rsplit(".", 1)[-1]

    def _tensor_entry(self, name, x, buffers):
        dtype, shape, strides, storage, offset = _layout(x)
        if dtype not in _DTYPES:
            raise TypeError(f"record_calls: tensor '{name}' has dtype {dtype}, not one the oracle takes")
        call_dtype, st_dtype = _DTYPES[dtype]
        entry = {"dtype": call_dtype, "shape": shape, "strides": strides, "offset": offset,
                 "buffer": buffers.setdefault(storage, name)}
        return entry, call_dtype, st_dtype

    def record(self, fn, args, kwargs):
        bound = inspect.signature(fn).bind(*args, **kwargs)
        bound.apply_defaults()
        mode = self.mode(bound.arguments) if callable(self.mode) else self.mode
        options, tensors, buffers, contents = {}, {}, {}, {}
        for param, value in bound.arguments.items():
            name = self.names.get(param)
            if name is None or value is None:
                continue
            if isinstance(name, tuple):
                _, option, convert = name
                options[option] = convert(value) if convert else (value if not _is_tensor(value) else float(value))
                continue
            if not _is_tensor(value):
                continue
            entry, call_dtype, st_dtype = self._tensor_entry(name, value, buffers)
            if call_dtype in ("i32", "i64"):
                entry["values"] = np.frombuffer(_host_bytes(value), dtype={"i32": "<i4", "i64": "<i8"}[call_dtype]).tolist()
            elif self.tensors:
                entry["safetensors"] = name
                contents[name] = (st_dtype, entry["shape"], _host_bytes(value))
            tensors[name] = entry
        return mode, options, tensors, buffers, contents

    def write(self, call, result):
        mode, options, tensors, buffers, contents = call
        results = result if isinstance(result, (tuple, list)) else (result,)
        for name, value in zip(self.outputs, results):
            if name is not None and value is not None and _is_tensor(value):
                tensors[name] = self._tensor_entry(name, value, buffers)[0]
        stem = os.path.join(self.out_dir, f"{self.stem}-{self.count:04d}")
        record = {"schema": SCHEMA, "version": VERSION, "entry": self.target, "mode": mode, "seed": self.count,
                  "source": dict(self.source), "options": options, "tensors": tensors}
        if contents:
            write_safetensors(stem + ".safetensors", contents)
            record["source"]["tensors_file"] = os.path.basename(stem + ".safetensors")
        with open(stem + ".json", "w") as f:
            json.dump(record, f, indent=1)
        self.count += 1


@contextlib.contextmanager
def record_calls(target, out_dir, *, mode="prefill", names=None, outputs=("o", "final_state"), tensors=False,
                 source=None):
    """Within the block, every call of `target` (a dotted name) writes a call file to out_dir.

    mode: "prefill", "decode" or "verify", or a function of the bound arguments (a dict) returning one.
    names: argument name -> oracle tensor name or ("option", name, convert); FLA_NAMES by default.
    outputs: oracle names of the returned tensors, in order (None skips one).
    tensors: also write the floating-point inputs' contents as a .safetensors file.
    source: free-form strings kept in the call file (library version, model, ...)."""
    module_name, attribute = target.rsplit(".", 1)
    module = importlib.import_module(module_name)
    original = getattr(module, attribute)
    os.makedirs(out_dir, exist_ok=True)
    recorder = _Recorder(target, out_dir, mode, FLA_NAMES if names is None else names, outputs, tensors,
                         source or {})

    @functools.wraps(original)
    def recording(*args, **kwargs):
        call = recorder.record(original, args, kwargs)  # before the call: in-place pools as passed
        result = original(*args, **kwargs)
        recorder.write(call, result)
        return result

    setattr(module, attribute, recording)
    try:
        yield recorder
    finally:
        setattr(module, attribute, original)
