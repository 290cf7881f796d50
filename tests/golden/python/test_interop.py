"""Golden files without kda-oracle's code: h5py and numpy only, from golden/SCHEMA.md.

1. Every tensor of every case is read as a strided view of its buffer, and the input checksum
   recomputed in pure Python matches the stored one.
2. Every valid case is recomputed with a numpy recurrence written here from the math of KDA (decay,
   delta update, output from the updated state; kda-facts.md section 1), independently of the C++
   reference, and agrees with the stored fp64 expected outputs. A verify case (speculative decoding)
   starts each request from the pool slot its form names and expects the state after every token.
3. A results file written here (the recurrence's outputs in each case's own buffers and dtypes, a
   verify case's per-token states in the pool slots or scratch rows it names, a rejection for each
   contract case) is accepted by `kda-oracle golden verify --results`; the same
   file with one element perturbed fails, naming that case.

Run with KDA_GOLDEN_FILE (a golden file) and KDA_ORACLE (the kda-oracle executable) set:
    python3 test_interop.py        or        python3 -m pytest test_interop.py
"""
import os
import struct
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from numpy.lib.stride_tricks import as_strided

GOLDEN = os.environ.get("KDA_GOLDEN_FILE", "")
ORACLE = os.environ.get("KDA_ORACLE", "")

STORED = {"bf16": np.uint16, "f16": np.uint16, "f32": np.float32, "f64": np.float64,
          "i32": np.int32, "i64": np.int64}
# Every tensor in the schema's canonical order; the first INPUTS of them are inputs (the pool included).
ORDER = ["cu_seqlens", "q", "k", "v", "g", "beta", "A_log", "dt_bias", "initial_state", "state_pool",
         "state_indices", "num_accepted", "scratch_indices", "o", "final_state", "chunk_states", "token_states",
         "scratch_states"]
INPUTS = 13
OUTPUTS = ["state_pool"] + ORDER[INPUTS:]


# ---- reading, as SCHEMA.md describes it ----

def text(attribute):
    return attribute.decode() if isinstance(attribute, bytes) else str(attribute)


def to_float(x, dtype):
    if dtype == "bf16":
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.view(np.float16).astype(np.float64)
    return x.astype(np.float64) if dtype in ("f32", "f64") else x


def from_float(x, dtype):
    """float64 values to the stored representation of dtype (bf16/f16 as bit patterns)."""
    if dtype == "bf16":
        bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # round to nearest even
    if dtype == "f16":
        return x.astype(np.float16).view(np.uint16)
    return x.astype(STORED[dtype])


def buffers_of(case):
    return {name: ds[()].astype(STORED[text(ds.attrs["dtype"])]) for name, ds in case["buffers"].items()}


def view_of(buffers, t):
    """The strided view a tensor group describes, onto (a copy of) its buffer; writeable."""
    buf = buffers[text(t.attrs["buffer"])]
    shape = tuple(int(n) for n in t.attrs["shape"])
    strides = tuple(int(s) * buf.itemsize for s in t.attrs["strides"])
    return as_strided(buf[int(t.attrs["offset"]):], shape=shape, strides=strides)


def tensors_of(case):
    buffers = buffers_of(case)
    return {name: to_float(np.array(view_of(buffers, t)), text(t.attrs["dtype"]))
            for name, t in case["tensors"].items()}


def input_checksum(case):
    h = 0xcbf29ce484222325
    data = bytearray()

    def string(s):
        data.extend(text(s).encode() + b"\0")

    used = set()
    for name in ORDER:
        if name not in case["tensors"]:
            continue
        t = case["tensors"][name]
        string(name), string(t.attrs["buffer"]), string(t.attrs["dtype"])
        data.extend(struct.pack("<q", len(t.attrs["shape"])))
        for x in [*t.attrs["shape"], *t.attrs["strides"], t.attrs["offset"]]:
            data.extend(struct.pack("<q", int(x)))
        if name in ORDER[:INPUTS]:
            used.add(text(t.attrs["buffer"]))
    for name in sorted(used, key=str.encode):
        ds = case["buffers"][name]
        payload = ds[()].astype(ds.dtype.newbyteorder("<")).tobytes()
        string(name)
        data.extend(struct.pack("<q", len(payload)))
        data.extend(payload)
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


# ---- the recurrence, from the math alone ----

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def recompute(case):
    """Every output of a valid case, dense, in the expected layouts of SCHEMA.md."""
    a = case.attrs
    B, T, N, H, HV, K, V = (int(a[n]) for n in ("B", "T", "N", "H", "HV", "K", "V"))
    x = tensors_of(case)
    q, k, v, g, beta = x["q"], x["k"], x["v"], x["g"], x["beta"]
    if a["l2norm_qk"]:
        q = q / np.sqrt((q * q).sum(-1, keepdims=True) + 1e-6)
        k = k / np.sqrt((k * k).sum(-1, keepdims=True) + 1e-6)
    q = q * (float(a["scale"]) if "scale" in a else K ** -0.5)
    if a["beta_from_logits"]:
        beta = sigmoid(beta) * (2.0 if a["allow_neg_eigval"] else 1.0)
    if a["gate_in_kernel"]:
        raw = g + (x["dt_bias"].reshape(HV, K) if "dt_bias" in x else 0.0)
        A = np.exp(x["A_log"]).reshape(HV, 1) if "A_log" in x else None
        if "lower_bound" in a:
            g = float(a["lower_bound"]) * sigmoid(raw if A is None else A * raw)
        else:
            g = -A * softplus(raw)
    vk = text(a["state_layout"]) == "VK"
    chunk = int(a["chunk_size"])

    def stored(S):  # a K x V state in the case's layout
        return S.T if vk else S

    o = np.zeros((B, T, HV, V))
    head = (V, K) if vk else (K, V)
    final = np.zeros((N, HV) + head)
    written = np.ones(N, dtype=np.int8)
    chunk_states, token_states = [], np.zeros((B, T, HV) + head)
    cu = x["cu_seqlens"].astype(np.int64) if "cu_seqlens" in x else None
    for n in range(N):
        row, first, length = (0, cu[n], cu[n + 1] - cu[n]) if cu is not None else (n, 0, T)
        if "state_indices" in x and initial_slot(x, n) == -1:
            written[n] = 0  # a padding row: nothing computed, zeros expected
            chunk_states += [np.zeros((HV,) + head)] * (-(-length // chunk))
            continue
        states = np.zeros((HV, K, V))
        for hv in range(HV):
            if "initial_state" in x:
                s0 = x["initial_state"][n, hv]
            elif "state_pool" in x:
                s0 = x["state_pool"][initial_slot(x, n), hv]
            else:
                s0 = np.zeros(head)
            states[hv] = s0.T if vk else s0
        for t in range(length):
            tok = first + t
            if t % chunk == 0:
                chunk_states.append(np.stack([stored(S) for S in states]))
            for hv in range(HV):
                h = hv // (HV // H)
                S = np.exp(g[row, tok, hv])[:, None] * states[hv]  # decay each key channel's row
                kt = k[row, tok, h]
                S = S + beta[row, tok, hv] * np.outer(kt, v[row, tok, hv] - S.T @ kt)  # delta update
                o[row, tok, hv] = S.T @ q[row, tok, h]  # output from the updated state
                token_states[row, tok, hv] = stored(S)
                states[hv] = S
        final[n] = np.stack([stored(S) for S in states])
    out = {"o": o, "final_state": final, "written": written, "token_states": token_states}
    out["chunk_states"] = np.stack(chunk_states) if chunk_states else np.zeros((0, HV) + head)
    return out


def initial_slot(x, n):
    """The pool slot request n starts from (-1: a padding row): the index-table form's
    state_indices[n, num_accepted[n] - 1], else state_indices[n]."""
    if "num_accepted" in x:
        return int(x["state_indices"][n, int(x["num_accepted"][n]) - 1])
    return int(x["state_indices"][n])


def token_places(case):
    """Verify: (request, token, where its state goes) for every stored per-token state; `where` is
    ("state_pool", slot) in the index-table form, ("scratch_states", row, token) in the scratch form."""
    x = tensors_of(case)
    cu = x["cu_seqlens"].astype(np.int64) if "cu_seqlens" in x else None
    T = int(case.attrs["T"])
    for n in range(int(case.attrs["N"])):
        if initial_slot(x, n) == -1:
            continue
        row, first, length = (0, int(cu[n]), int(cu[n + 1] - cu[n])) if cu is not None else (n, 0, T)
        for t in range(length):
            if "num_accepted" in x:
                slot = int(x["state_indices"][n, t])
                where = ("state_pool", slot)
            else:
                slot = int(x["scratch_indices"][n])
                where = ("scratch_states", slot, t)
            if slot != -1:
                yield row, first + t, where


def rel_rms(got, want):
    denominator = np.sqrt(np.mean(want ** 2)) if want.size else 0.0
    return np.sqrt(np.mean((got - want) ** 2)) / denominator if denominator else float(np.abs(got).max(initial=0))


# ---- results files ----

def write_results(path, perturb_case=None):
    """The recurrence's outputs stored in each case's own output buffers; rejections for contract cases."""
    with h5py.File(GOLDEN, "r") as golden, h5py.File(path, "w") as out:
        out.attrs["schema"] = "kda-oracle/results"
        out.attrs["schema_version"] = np.int64(1)
        out.attrs["kernel"] = "numpy recurrence (test_interop.py)"
        cases = out.create_group("cases")
        for name, case in golden["cases"].items():
            group = cases.create_group(name)
            if "contract" in case:
                group.attrs["rejected_rule"] = text(case["contract"].attrs["rule"])
                group.attrs["rejected_message"] = "rejected by the numpy test"
                continue
            ours = recompute(case)
            buffers = buffers_of(case)  # fresh copies: written through the output views
            tensors = case["tensors"]
            for tensor in ("o", "final_state", "chunk_states", "token_states"):
                if tensor in tensors:
                    t = tensors[tensor]
                    view_of(buffers, t)[...] = from_float(ours[tensor], text(t.attrs["dtype"]))
            if text(case.attrs["mode"]) == "verify":
                for row, token, (tensor, *at) in token_places(case):
                    t = tensors[tensor]
                    view_of(buffers, t)[tuple(at)] = from_float(ours["token_states"][row, token], text(t.attrs["dtype"]))
            elif "state_pool" in tensors:
                t = tensors["state_pool"]
                pool, indices = view_of(buffers, t), tensors_of(case)["state_indices"]
                for n, slot in enumerate(indices):
                    if slot != -1:
                        pool[int(slot)] = from_float(ours["final_state"][n], text(t.attrs["dtype"]))
            if name == perturb_case:
                view_of(buffers, tensors["o"])[0, 2, 0, 1] += 1
            for tensor in OUTPUTS:
                if tensor in tensors:
                    t = tensors[tensor]
                    ds = group.create_dataset(tensor, data=buffers[text(t.attrs["buffer"])])
                    ds.attrs["dtype"] = text(t.attrs["dtype"])


def verify(results):
    run = subprocess.run([ORACLE, "golden", "verify", "--golden", GOLDEN, "--results", results],
                         capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


# ---- the tests ----

def test_schema_and_checksums():
    with h5py.File(GOLDEN, "r") as f:
        assert text(f.attrs["schema"]) == "kda-oracle/golden" and int(f.attrs["schema_version"]) in (1, 2)
        assert text(f.attrs["reference_precision"]) == "fp64"
        assert len(f["cases"]) > 0
        for name, case in f["cases"].items():
            assert input_checksum(case) == int(case.attrs["input_checksum"]), name
            tensors = tensors_of(case)
            assert tensors["q"].shape == tuple(int(case.attrs[n]) for n in ("B", "T", "H", "K")), name


def test_numpy_recurrence_matches_expected():
    checked = 0
    with h5py.File(GOLDEN, "r") as f:
        for name, case in f["cases"].items():
            if "contract" in case:
                assert "expected" not in case and text(case["contract"].attrs["rule"])
                continue
            ours, expected = recompute(case), case["expected"]
            assert np.array_equal(ours["written"], expected["written"][()]), name
            for tensor in ("o", "final_state", "chunk_states", "token_states"):
                if tensor in expected:
                    want = expected[tensor][()]
                    assert ours[tensor].shape == want.shape, (name, tensor, ours[tensor].shape, want.shape)
                    error = rel_rms(ours[tensor], want)
                    assert error < 1e-10, f"{name} {tensor}: rel-RMS {error:.2e} against the stored expected outputs"
            tolerance = case["tolerance"]
            assert text(tolerance.attrs["metric"]) == "rel_rms"
            assert tolerance.attrs["bound"] == tolerance["o"].attrs["bound"]
            checked += 1
    assert checked > 0


def test_results_file_is_accepted_and_a_perturbed_one_fails():
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "results.h5")
        write_results(good)
        code, report = verify(good)
        assert code == 0 and " 0 failed" in report, report
        with h5py.File(GOLDEN, "r") as f:
            victim = next(name for name, case in f["cases"].items() if "contract" not in case)
        bad = os.path.join(tmp, "perturbed.h5")
        write_results(bad, perturb_case=victim)
        code, report = verify(bad)
        assert code == 1, report
        failing = [line.split()[0] for line in report.splitlines() if line.endswith("FAIL")]
        assert failing == [victim], report


if __name__ == "__main__":
    if not GOLDEN or not ORACLE:
        sys.exit("set KDA_GOLDEN_FILE and KDA_ORACLE")
    for test in (test_schema_and_checksums, test_numpy_recurrence_matches_expected,
                 test_results_file_is_accepted_and_a_perturbed_one_fails):
        test()
        print("ok", test.__name__)
