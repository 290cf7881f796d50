#!/usr/bin/env python3
"""A planted bug for kda-oracle's tests: numpy_adapter.py, but with a chunk map cached by identity.

The sequences' spans and chunk boundaries derived from cu_seqlens are cached keyed by the cu_seqlens
array object, as a kernel library caches derived metadata by tensor identity (FLA's tensor_cache,
SGLang's FlashInfer verify wrapper). The cache holds a reference to the array, so a freed object's id
is never reused by accident: a fresh array per request (kda-oracle's default) always misses, and the
adapter computes correctly. With persistent metadata (the serving-loop property) the array is the
same object with new contents, and the adapter computes with a stale map.
"""
import os
import sys


here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, ".."), os.path.join(here, "..", "python")]
import numpy_adapter  # noqa: E402
from kda_adapter import Entry, main  # noqa: E402


class ChunkMapCache:
    """cu_seqlens array -> the spans derived from it, computed the first time the object is seen."""

    def __init__(self):
        self.maps = {}  # id -> (the array, kept alive; its spans)

    def spans(self, case):
        if not case.has("cu_seqlens"):
            return numpy_adapter.sequence_spans(case)
        cu = case.view("cu_seqlens")
        if id(cu) not in self.maps:
            self.maps[id(cu)] = (cu, numpy_adapter.sequence_spans(case))
        return self.maps[id(cu)][1]


CACHE = ChunkMapCache()


ENTRY = Entry("recurrent", numpy_adapter.PROFILE, numpy_adapter.CAPABILITIES,
              lambda case, lib: numpy_adapter.run_case(case, CACHE.spans))

if __name__ == "__main__":
    main([ENTRY], numpy_adapter.load, __doc__.split("\n")[0], library="numpy", backend="numpy", argv=[])
