"""Writing a results file (golden/SCHEMA.md, "Results files")."""
import h5py
import numpy as np


def write_results(path, kernel, cases):
    """cases: case name -> (Case.outputs(), the call's wall seconds, stored as attribute `seconds`)."""
    with h5py.File(path, "w") as f:
        f.attrs["schema"] = "kda-oracle/results"
        f.attrs["schema_version"] = np.int64(1)
        f.attrs["kernel"] = kernel
        groups = f.create_group("cases")
        for case_name, (outputs, seconds) in cases.items():
            group = groups.create_group(case_name)
            group.attrs["seconds"] = float(seconds)
            for tensor, (dtype, data) in outputs.items():
                group.create_dataset(tensor, data=data).attrs["dtype"] = dtype
