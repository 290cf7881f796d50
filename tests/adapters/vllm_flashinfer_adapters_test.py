"""CPU tests of adapters/vllm/vllm_adapter.py and adapters/flashinfer/flashinfer_adapter.py (CTest
adapters.vllm_flashinfer): each compiles, its rejection table maps the upstream messages (the texts of
vLLM 0.33.0's and FlashInfer 0.7.2's raise and assert statements) to the contract rules, and each entry
declares the handshake its profile and code path call for. Needs neither torch nor the libraries."""
import argparse
import importlib.util
import os
import py_compile
import types
import unittest

ADAPTERS = os.environ.get("KDA_ADAPTERS_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                              "adapters")
VLLM = os.path.join(ADAPTERS, "vllm", "vllm_adapter.py")
FLASHINFER = os.path.join(ADAPTERS, "flashinfer", "flashinfer_adapter.py")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


vllm = load(VLLM, "vllm_adapter")
flashinfer = load(FLASHINFER, "flashinfer_adapter")
from kda_adapter import EntryError  # noqa: E402  (importable once an adapter put the kit on sys.path)


def entry(module, name):
    return next(e for e in module.ENTRIES if e.name == name)


def shaped(*shape):
    return types.SimpleNamespace(shape=shape)


# fused_recurrent_kda_fwd's bare asserts, as statements of its source (vllm 0.33.0,
# vllm/models/kimi_k3/nvidia/ops/third_party/kda/fused_recurrent.py), run on values that break one clause.
def batch_and_keys(B, k, q):
    assert B == 1 and k.shape == q.shape


def values_and_gates(v, g, B, T, H, V, K):
    assert v.shape == (B, T, H, V) and g.shape == (B, T, H, K)


def betas(beta, B, T, H):
    assert beta.shape == (B, T, H)


def outputs(out, v):
    assert out.shape == v.shape


def pool_shape(initial_state, H, V, K):
    assert initial_state.shape[1:] == (H, V, K)


def pool_strides(initial_state, V, K):
    assert initial_state.stride()[1:] == (V * K, K, 1)


def index_rank(ssm_state_indices):
    assert ssm_state_indices.ndim in (1, 2)


def tokens(T, N):
    assert T == N


def gate_parameters(A_log):
    assert A_log is not None and A_log.is_contiguous()


def table_columns(ssm_state_indices):
    assert ssm_state_indices.stride(1) == 1


def raised(call):
    try:
        vllm.worded(call)
    except Exception as e:  # noqa: BLE001 (the exception is the result)
        return e
    raise AssertionError("no exception")


class Compiles(unittest.TestCase):
    def test_both_adapters_compile(self):
        for path in (VLLM, FLASHINFER):
            py_compile.compile(path, doraise=True)


class VllmRejections(unittest.TestCase):
    def rule(self, exception, name="decode"):
        return entry(vllm, name).table.rule_for(exception)

    def test_each_bare_assert_is_worded_by_its_false_clause_and_mapped(self):
        q, k = shaped(1, 4, 2, 64), shaped(1, 4, 2, 32)
        cases = [
            (lambda: batch_and_keys(2, q, q), "varlen_batch_one"),
            (lambda: batch_and_keys(1, k, q), "qk_same_shape"),
            (lambda: values_and_gates(shaped(1, 4, 4, 64), shaped(1, 4, 2, 64), 1, 4, 2, 64, 64), "v_shape"),
            (lambda: values_and_gates(shaped(1, 4, 2, 64), shaped(1, 4, 4, 64), 1, 4, 2, 64, 64), "g_shape"),
            (lambda: betas(shaped(1, 4, 4), 1, 4, 2), "beta_shape"),
            (lambda: outputs(shaped(1, 4, 2, 32), shaped(1, 4, 2, 64)), "o_shape"),
            (lambda: pool_shape(shaped(9, 2, 64, 32), 2, 32, 64), "state_pool_shape"),
            (lambda: pool_strides(types.SimpleNamespace(stride=lambda: (5000, 4096, 1, 64)), 64, 64),
             "state_pool_inner_strides"),
            (lambda: index_rank(types.SimpleNamespace(ndim=3)), "state_indices_shape"),
            (lambda: tokens(5, 4), "decode_one_token"),
            (lambda: gate_parameters(None), "softplus_needs_A_log"),
        ]
        for call, rule in cases:
            e = raised(call)
            self.assertIsInstance(e, AssertionError)
            self.assertEqual(self.rule(e), rule, str(e))

    def test_the_clause_that_failed_is_named(self):
        q, k = shaped(1, 4, 2, 64), shaped(1, 4, 2, 32)
        self.assertEqual(str(raised(lambda: batch_and_keys(1, k, q))), "assert k.shape == q.shape")

    def test_an_assert_no_rule_stands_for_is_an_error(self):
        e = raised(lambda: table_columns(types.SimpleNamespace(stride=lambda dim: 4)))
        self.assertEqual(str(e), "assert ssm_state_indices.stride(1) == 1")
        self.assertIsNone(self.rule(e, "verify"))

    def test_worded_messages_are_mapped(self):
        chunk = [
            (AssertionError("Only batch size 1 is supported when cu_seqlens are provided"), "varlen_batch_one"),
            (AssertionError("current kernel does not support head dimension larger than 256."), "key_head_dim_max"),
            (ValueError("Expected raw_beta shape (1, 8, 2), got torch.Size([1, 8, 4])"), "beta_shape"),
        ]
        for exception, rule in chunk:
            self.assertEqual(self.rule(exception, "chunk-gate"), rule, str(exception))

    def test_what_an_entry_cannot_express_names_its_rule(self):
        decode = entry(vllm, "decode")
        kv_pool = types.SimpleNamespace(attrs={"state_layout": b"KV"}, has=lambda n: n == "state_pool")
        dense = types.SimpleNamespace(attrs={"state_layout": "VK"}, has=lambda n: n == "initial_state")
        self.assertEqual(decode.table.rule_for(EntryError(decode.accepts(kv_pool))), "state_layout")
        self.assertEqual(decode.table.rule_for(EntryError(decode.accepts(dense))), "state_source_supported")
        self.assertIsNone(entry(vllm, "chunk").accepts(dense))
        negative = types.SimpleNamespace(attrs={"state_layout": "VK", "allow_neg_eigval": 1}, has=lambda n: False)
        reason = entry(vllm, "chunk").accepts(negative)
        self.assertIn("allow_neg_eigval", reason)
        self.assertIsNone(decode.table.rule_for(EntryError(reason)))

    def test_the_fused_gate_entry_refuses_a_precomputed_gate_with_no_rule(self):
        gate = entry(vllm, "chunk-gate")
        case = types.SimpleNamespace(attrs={"state_layout": "VK", "gate_in_kernel": 0, "beta_from_logits": 1},
                                     has=lambda n: False)
        reason = gate.accepts(case)
        self.assertIn("gate_in_kernel=0", reason)
        self.assertIsNone(gate.table.rule_for(EntryError(reason)))
        case.attrs["gate_in_kernel"] = 1
        self.assertIsNone(gate.accepts(case))


class VllmPackedDecode(unittest.TestCase):
    def test_its_value_errors_are_mapped(self):
        table = entry(vllm, "packed-decode").table
        messages = [
            (ValueError("`initial_state` must have shape [cache, H, V, K]."), "state_pool_rank"),
            (ValueError("`initial_state` must be contiguous within each cache slot."), "state_pool_inner_strides"),
            (ValueError("`state_indices` must be one-dimensional."), "state_indices_shape"),
            (ValueError("`state_indices` must contain one entry per token."), "initial_state_count"),
            (ValueError("Unexpected raw gate shape (1, 4, 2, 64)."), "g_shape"),
            (ValueError("Unexpected raw beta shape (1, 4, 4)."), "beta_shape"),
        ]
        for exception, rule in messages:
            self.assertEqual(table.rule_for(exception), rule, str(exception))
        self.assertIsNone(table.rule_for(ValueError("Unexpected packed QKV shape (4, 384).")))

    def test_it_takes_only_calls_with_everything_in_the_kernel(self):
        packed = entry(vllm, "packed-decode")
        attrs = {"state_layout": "VK", "l2norm_qk": 1, "gate_in_kernel": 1, "beta_from_logits": 1}
        case = types.SimpleNamespace(attrs=attrs, has=lambda n: n == "state_pool")
        self.assertIsNone(packed.accepts(case))
        attrs["l2norm_qk"] = 0
        self.assertIn("l2norm_qk=0", packed.accepts(case))
        profile, caps = handshake(vllm, "packed-decode")
        self.assertEqual((profile, caps["always"]), ("vllm_packed_decode", "gate_in_kernel,l2norm_in_kernel,beta_from_logits"))


class FlashInferRejections(unittest.TestCase):
    def test_each_message_of_run_recurrent_kda_is_mapped(self):
        table = entry(flashinfer, "verify").table
        messages = [
            (ValueError("Batch size must be 1 with cu_seqlens, got B=2"), "varlen_batch_one"),
            (ValueError("K must equal V, got K=64, V=128"), "head_dims_supported"),
            (ValueError("HEAD_DIM must be 64 or 128, got K=96"), "head_dims_supported"),
            (TypeError("beta must be bfloat16, got torch.float32"), "input_dtype"),
            (ValueError("HV must be a positive multiple of H, got H=4, HV=6"), "hv_divisible"),
            (ValueError("A_log is required when use_gate_in_kernel=True"), "softplus_needs_A_log"),
            (TypeError("dt_bias must be float32, got torch.bfloat16"), "gate_params_dtype"),
            (ValueError("lower_bound must be negative"), "lower_bound_range"),
            (ValueError("ssm_state_indices must be 2D [N, 3] in spec mode, got shape [4]"), "state_indices_shape"),
            (ValueError("ssm_state_indices.shape[0]=3 must equal N=4 (cu_seqlens.shape[0]-1)"), "initial_state_count"),
        ]
        for exception, rule in messages:
            self.assertEqual(table.rule_for(exception), rule, str(exception))
        self.assertIsNone(table.rule_for(ValueError("lower_bound requires use_gate_in_kernel=True")))


def handshake(module, name, dtype="bf16"):
    words = entry(module, name).handshake(f"lib-{name}", argparse.Namespace(dtype=dtype, head_dims="64,128")).split()
    return words[3], dict(w.split("=", 1) for w in words[4:])


class Capabilities(unittest.TestCase):
    def test_vllm_entries(self):
        profile, caps = handshake(vllm, "decode")
        self.assertEqual(profile, "vllm_fused_recurrent")
        self.assertEqual((caps["modes"], caps["state_sources"], caps["layouts"]), ("decode", "pool", "VK"))
        self.assertEqual((caps["checks_contract"], caps["neg_eigval"]), ("1", "0"))
        self.assertNotIn("arithmetic", caps)  # fp32 throughout
        profile, caps = handshake(vllm, "verify")
        self.assertEqual((profile, caps["modes"], caps["state_sources"]), ("vllm_fused_recurrent_verify", "verify", "table"))
        profile, caps = handshake(vllm, "chunk")
        self.assertEqual((profile, caps["gate_in_kernel"], caps["beta_from_logits"]), ("vllm_chunk", "0", "0"))
        self.assertEqual((caps["chunk_sizes"], caps["state_dtypes"], caps["arithmetic"]), ("64", "f32", "bf16-operands"))
        profile, caps = handshake(vllm, "chunk-gate", dtype="f32")
        self.assertEqual((profile, caps["always"], caps["arithmetic"]),
                         ("vllm_chunk_fused_gate", "gate_in_kernel,beta_from_logits", "tf32"))
        self.assertEqual(handshake(vllm, "chunk", dtype="f16")[1]["arithmetic"], "f16-operands")

    def test_flashinfer_entries(self):
        profile, caps = handshake(flashinfer, "decode")
        self.assertEqual((profile, caps["modes"], caps["state_sources"]), ("flashinfer_decode", "decode", "pool"))
        profile, caps = handshake(flashinfer, "verify")
        self.assertEqual((profile, caps["modes"], caps["state_sources"]), ("flashinfer_verify", "verify", "table"))
        self.assertEqual((caps["input_dtypes"], caps["key_head_dims"], caps["layouts"]), ("bf16", "64,128", "VK"))


if __name__ == "__main__":
    unittest.main()
