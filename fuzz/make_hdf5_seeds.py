#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_hdf5_readers from a golden file and a results file of kda-oracle:

    kda-oracle golden generate --suite smoke --out smoke.h5
    kda-oracle golden verify --golden smoke.h5 --kernel ref-fp32 --save-results results.h5
    python3 fuzz/make_hdf5_seeds.py smoke.h5 results.h5 fuzz/corpus/hdf5_readers

Each seed holds one case, since small files mutate fast: a valid case, a verify case (schema version 2)
and a contract case of the golden file; an output case, a rejection and an 'unsupported' of the results file; and the results of the
exec adapter request the fuzzer applies them to. Each is rebuilt object by
object (datasets keep their chunking and filters) twice: in the HDF5 1.10 formats kda-oracle writes
(every object header checksummed, so most mutations stop in HDF5) and in HDF5's earliest formats (no
checksums, so mutations reach the reader's own checks).
"""
import os
import sys

import h5py
import numpy

GOLDEN_CASES = ("batched_token_states", "contract-varlen_batch_one", "verify_table_one_token")  # the smallest of each kind
RESULT_CASES = GOLDEN_CASES[:2]


def copy_attributes(src, dst):
    for key in src.attrs:
        dst.attrs.create(key, src.attrs[key], dtype=src.attrs.get_id(key).dtype)


def rebuild(src, dst):
    """Copies the attributes, groups and datasets of group src into group dst, each created anew."""
    copy_attributes(src, dst)
    for name, item in src.items():
        if isinstance(item, h5py.Group):
            rebuild(item, dst.create_group(name))
        else:
            copy_attributes(item, dst.create_dataset(
                name, data=item[()], dtype=item.dtype, chunks=item.chunks, compression=item.compression,
                compression_opts=item.compression_opts, shuffle=item.shuffle, fletcher32=item.fletcher32))


def one_case(src_path, case, out_path, libver, edit=None):
    with h5py.File(src_path, "r") as src, h5py.File(out_path, "w", libver=libver) as dst:
        copy_attributes(src, dst)
        for name in src:
            if name != "cases":
                rebuild(src[name], dst.create_group(name))
        kase = dst.create_group("cases").create_group(case)
        rebuild(src["cases"][case], kase)
        if edit:
            edit(kase)


def unsupported(kase):
    for name in list(kase):
        del kase[name]
    kase.attrs.create("unsupported", b"the kernel cannot run this case")


def request_results(out_path, libver):
    """Results for fuzz_hdf5_readers' exec adapter request 'case': ProblemSpec's default problem (16
    tokens, K = V = 16, f32), whose outputs o and final_state are 256 floats each."""
    with h5py.File(out_path, "w", libver=libver) as f:
        f.attrs.create("schema", b"kda-oracle/results")
        f.attrs.create("schema_version", 1, dtype="<i8")
        f.attrs.create("kernel", b"seed")
        kase = f.create_group("cases").create_group("case")
        for name in ("o", "final_state"):
            kase.create_dataset(name, data=numpy.zeros(256, "<f4")).attrs.create("dtype", b"f32")


def main():
    golden, results, out = sys.argv[1:4]
    os.makedirs(out, exist_ok=True)
    seeds = [(golden, c, f"golden-{c}", None) for c in GOLDEN_CASES]
    seeds += [(results, c, f"results-{c}", None) for c in RESULT_CASES]
    seeds.append((results, RESULT_CASES[0], "results-unsupported", unsupported))
    for src, case, name, edit in seeds:
        for libver, suffix in (("v110", "v110"), ("earliest", "earliest")):
            one_case(src, case, os.path.join(out, f"{name}-{suffix}.h5"), libver, edit)
    for libver in ("v110", "earliest"):
        request_results(os.path.join(out, f"results-request-{libver}.h5"), libver)


if __name__ == "__main__":
    main()
