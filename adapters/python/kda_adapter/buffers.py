"""Where a request's buffers live: numpy arrays on the host, or torch tensors on any device.

Each buffer is one raw uint8 allocation, [guard | payload | guard], the guards filled with 0xFF (NaN
as floats); a tensor is a strided view (as_strided) of the typed payload. The two backends share
that layout and differ only in the array library.
"""
import contextlib

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .dtypes import STORED, TORCH_NAMES


class NumpyBuffers:
    """Buffers as numpy arrays (host memory); bf16 and f16 views hold uint16 bit patterns."""

    torch = None
    device = "cpu"

    def guarded(self, payload, lead, tail):
        raw = np.full(lead + payload.size + tail, 0xFF, dtype=np.uint8)
        raw[lead:lead + payload.size] = payload
        return raw

    def typed(self, raw, lead, size, dtype):
        return raw[lead:lead + size].view(STORED[dtype])

    def strided(self, typed, shape, strides, offset):
        return as_strided(typed[offset:], shape=shape, strides=[s * typed.itemsize for s in strides])

    def changed(self, band):
        """Positions of the bytes of a guard band that are no longer 0xFF."""
        return [int(i) for i in np.flatnonzero(band != 0xFF)]

    def host(self, raw, lead, size, dtype):
        """The payload as a numpy array of its stored type."""
        return raw[lead:lead + size].view(STORED[dtype])

    def copy_into(self, kept, raw):
        np.copyto(kept, raw)

    def synchronize(self):
        pass

    def calling(self):
        return contextlib.nullcontext()


class TorchBuffers:
    """Buffers as torch tensors on `device` (bf16 and f16 views as torch.bfloat16 / float16)."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.cuda = str(device).startswith("cuda")

    def guarded(self, payload, lead, tail):
        torch = self.torch
        raw = torch.full((lead + payload.size + tail,), 0xFF, dtype=torch.uint8, device=self.device)
        raw[lead:lead + payload.size] = torch.from_numpy(payload).to(self.device)
        return raw

    def typed(self, raw, lead, size, dtype):
        return raw[lead:lead + size].view(getattr(self.torch, TORCH_NAMES[dtype]))

    def strided(self, typed, shape, strides, offset):
        return self.torch.as_strided(typed, shape, strides, typed.storage_offset() + offset)

    def changed(self, band):
        return [int(i) for i in (band != 0xFF).nonzero().flatten().cpu()]

    def host(self, raw, lead, size, dtype):
        """The payload copied to the host as a numpy array of its stored type (bf16 bits as uint16)."""
        return raw[lead:lead + size].cpu().numpy().view(STORED[dtype])

    def copy_into(self, kept, raw):
        kept.copy_(raw)

    def synchronize(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def calling(self):
        return self.torch.inference_mode()
