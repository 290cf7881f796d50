"""How request files store each dtype, and float64 conversions of stored elements (numpy)."""
import numpy as np

# dtype name -> numpy type of its stored elements (bf16 and f16 as uint16 bit patterns).
STORED = {"bf16": np.uint16, "f16": np.uint16, "f32": np.float32, "f64": np.float64,
          "i32": np.int32, "i64": np.int64}
TORCH_NAMES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64",
               "i32": "int32", "i64": "int64"}


def text(attribute):
    """A string attribute as str (h5py gives fixed-length strings as numpy.bytes_)."""
    return attribute.decode() if isinstance(attribute, bytes) else str(attribute)


def to_float(stored, dtype):
    """float64 values of stored elements (bf16/f16 are bit patterns)."""
    if dtype == "bf16":
        return (np.asarray(stored).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "f16":
        return np.asarray(stored).view(np.float16).astype(np.float64)
    return np.asarray(stored).astype(np.float64)


def from_float(values, dtype):
    """float64 values in the stored representation of dtype; narrower types through fp32, rounded to
    nearest even, as a kernel computing in fp32 stores them."""
    if dtype == "f64":
        return np.asarray(values, dtype=np.float64)
    x32 = np.asarray(values, dtype=np.float64).astype(np.float32)
    if dtype == "bf16":
        bits = x32.view(np.uint32)
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(np.isnan(x32), ((bits >> 16) | 0x40).astype(np.uint16), rounded)
    if dtype == "f16":
        return x32.astype(np.float16).view(np.uint16)
    return x32
