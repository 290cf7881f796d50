"""CTest adapters.sglang: adapters/sglang without a GPU or SGLang.

- every file of the adapter compiles;
- each entry's rejection table maps every message SGLang 0.5.23 raises for it (sglang_messages.txt,
  copied from its raise statements) to the rule named there, and an unknown message to none;
- each entry's handshake line (the kit's, from its capabilities), profile (one of
  reference/src/profiles.cpp) and declared arithmetic are as docs/conformance-sglang.md states;
- conformance/plan/sglang.json runs every entry, with the right kind;
- the input transforms give back the case's g and beta through SGLang's own gate and sigmoid
  formulas (run in numpy, float32 like the kernels).

Needs kda_adapter (adapters/python) with Entry; exits 77 (skipped) where numpy is missing.
"""
import argparse
import json
import os
import py_compile
import re
import sys
import types
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ADAPTER = os.path.join(ROOT, "adapters", "sglang")
sys.path[:0] = [ADAPTER, os.path.join(ROOT, "adapters", "python")]
try:
    import numpy as np
except ImportError:
    print("numpy missing: skipped")
    sys.exit(77)
from kda_adapter.rejections import RejectionTable  # noqa: E402
import sglang_adapter  # noqa: E402
import sglang_inputs  # noqa: E402


def messages():
    rows = []
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_messages.txt")) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                entry, rule, text = (part.strip() for part in line.split("|", 2))
                rows.append((entry, rule, text))
    return rows


def exception(text):
    """An exception whose describe() is `text` ("Type: message")."""
    type_name, _, message = text.partition(": ")
    kind = {"ValueError": ValueError, "AssertionError": AssertionError}.get(type_name)
    return (kind or type(type_name, (Exception,), {}))(message)


def handshake(entry, dtype, head_dims="64,128"):
    """The entry's handshake line (the kit's), as {key: value} with the name and profile."""
    line = entry.handshake("sglang-" + entry.name, argparse.Namespace(dtype=dtype, head_dims=head_dims))
    words = line.split()
    self_check = words[:2] == ["kda-adapter", "1"]
    return self_check, words[2], words[3], dict(w.split("=", 1) for w in words[4:])


class Entries(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.entries = {e.name: e for e in sglang_adapter.ENTRIES}
        with open(os.path.join(ROOT, "reference", "src", "profiles.cpp")) as f:
            cls.profiles = set(re.findall(r'p\.name = "(\w+)"', f.read()))

    def test_the_adapter_files_compile(self):
        for name in ("sglang_adapter.py", "sglang_inputs.py", "sglang_loader.py"):
            py_compile.compile(os.path.join(ADAPTER, name), doraise=True)

    def test_every_upstream_message_maps_to_its_rule(self):
        rows = messages()
        self.assertEqual({entry for entry, _, _ in rows} - set(self.entries), set())
        for entry, rule, text in rows:
            table = RejectionTable(self.entries[entry].rejections)
            self.assertEqual(table.rule_for(exception(text)), rule, f"{entry}: {text}")

    def test_every_entry_refuses_what_it_cannot_express_naming_the_rule(self):
        def case(*tensors, layout="VK"):
            return types.SimpleNamespace(has=lambda name: name in tensors, attrs={"state_layout": layout})

        error = type("EntryError", (Exception,), {})
        for name, entry in self.entries.items():
            table = RejectionTable(entry.rejections)
            form = ("state_pool", "state_indices") + (("scratch_states", "scratch_indices") if "verify" in name else ())
            expect = [(case(), "state_source_supported"),                       # no state at all
                      (case("initial_state"), "state_source_supported"),        # dense states
                      (case(*form, "num_accepted"), "state_source_supported"),  # the index-table verify form
                      (case(*form[1:]), "state_source"),                        # the pool missing
                      (case(*form, "initial_state"), "state_source"),           # a dense state beside the pool
                      (case(*form, layout="KV"), "state_layout")]
            for drawn, rule in expect:
                reason = sglang_adapter.require(drawn, name, "scratch" if "verify" in name else "pool")
                self.assertIsNotNone(reason, f"{name}: {rule}")
                self.assertEqual(table.rule_for(error(reason)), rule, f"{name}: {reason}")
            self.assertIsNone(sglang_adapter.require(case(*form), name, "scratch" if "verify" in name else "pool"))
            self.assertIsNone(table.rule_for(RuntimeError("Triton Error [CUDA]: invalid argument")), name)

    def test_handshakes_follow_the_code_paths(self):
        expect = {"triton-decode": ("sglang_triton_decode", "decode", "pool"),
                  "triton-verify": ("sglang_triton_verify", "verify", "scratch"),
                  "triton-chunk": ("sglang_triton_chunk", "prefill", "pool"),
                  "helion-chunk": ("sglang_helion_chunk", "prefill", "pool"),
                  "triton-packed-decode": ("sglang_packed_decode", "decode", "pool"),
                  "helion-packed-decode": ("sglang_helion_packed_decode", "decode", "pool"),
                  "helion-verify": ("sglang_helion_verify", "verify", "scratch")}
        self.assertEqual(set(self.entries), set(expect))
        for name, (profile, modes, sources) in expect.items():
            version, adapter, got_profile, caps = handshake(self.entries[name], "bf16")
            self.assertTrue(version, name)
            self.assertEqual((adapter, got_profile), ("sglang-" + name, profile))
            self.assertIn(profile, self.profiles, name)
            self.assertEqual((caps["modes"], caps["state_sources"], caps["layouts"]), (modes, sources, "VK"), name)
            self.assertEqual((caps["input_dtypes"], caps["output_dtypes"]), ("bf16", "bf16"), name)
            self.assertEqual((caps["key_head_dims"], caps["beta_from_logits"]), ("64,128", "0"), name)
            self.assertEqual(caps["checks_contract"], "1", name)
            self.assertNotIn("key_head_dims", handshake(self.entries[name], "f32", "any")[3], name)
            fixed = name == "helion-verify"  # always l2norm and K^-0.5: no option for either
            self.assertEqual((caps.get("always"), caps.get("explicit_scale")),
                             ("l2norm_in_kernel", "0") if fixed else (None, None), name)

    def test_declared_arithmetic(self):
        for name, entry in self.entries.items():
            chunk = name.endswith("-chunk")
            caps = handshake(entry, "bf16")[3]
            self.assertEqual(caps.get("arithmetic"), "bf16-operands" if chunk else None, name)  # absent: fp32
            caps = handshake(entry, "f32")[3]
            self.assertEqual(caps.get("arithmetic"), "tf32" if chunk else None, name)
            if chunk:
                self.assertEqual((caps["chunk_states"], caps["state_dtypes"], caps["chunk_sizes"]), ("1", "f32", "64"))
                caps = handshake(entry, "bf16")[3]
                self.assertEqual((caps["chunk_states"], caps["state_dtypes"]), ("0", "f32,bf16"))

    def test_the_campaign_plan_names_every_entry_once(self):
        with open(os.path.join(ROOT, "conformance", "plan", "sglang.json")) as f:
            plan = json.load(f)
        self.assertEqual(plan["library"], "sglang 0.5.23")
        named = [re.search(r"--entry (\S+)", i["kernel"]).group(1) for i in plan["implementations"]]
        self.assertEqual(sorted(named), sorted(self.entries))
        for implementation, entry in zip(plan["implementations"], named):
            self.assertTrue(implementation["kernel"].startswith("exec:python3 adapters/sglang/sglang_adapter.py "))
            self.assertEqual(implementation["kind"], "chunked" if entry.endswith("-chunk") else "recurrent", entry)
        self.assertTrue(all(row["reason"] for row in plan["not_run"]))


class NumpyCase:
    """The slice of the kit's Case the input transforms read, over numpy arrays, with a numpy
    stand-in for the few torch functions they call."""

    class Torch:
        float32, int32 = np.float32, np.int32
        log, log1p, expm1 = np.log, np.log1p, np.expm1

        @staticmethod
        def where(condition, x, y):
            return np.where(condition, x, y).view(Arrays)

        @staticmethod
        def zeros(n, dtype, device=None):
            return np.zeros(n, dtype).view(Arrays)

        @staticmethod
        def full_like(x, value):
            return np.full_like(x, value)

    def __init__(self, attrs, tensors):
        self.attrs, self.tensors, self.torch = attrs, tensors, self.Torch

    def view(self, name):
        return self.tensors[name]

    def optional(self, name):
        return self.tensors.get(name)


class Arrays(np.ndarray):
    """numpy arrays with the torch names the transforms use."""
    device = "cpu"

    def contiguous(self):
        return self

    def double(self):
        return np.asarray(self, np.float64).view(Arrays)

    def float(self):
        return np.asarray(self, np.float32).view(Arrays)


def softplus_gate(a, A_log, dt_bias, threshold=20.0):
    """fused_sigmoid_gating_delta_rule_update_kernel's gate, in float32."""
    x = (a + dt_bias).astype(np.float32)
    softplus = np.where(x <= threshold, np.log(np.float32(1) + np.exp(x)), x)
    return -np.exp(A_log.astype(np.float32)) * softplus


class Transforms(unittest.TestCase):
    def test_an_activated_gate_comes_back_through_the_kernel_gate(self):
        rng = np.random.default_rng(1)
        g = -np.exp(rng.uniform(-12, 4, size=(1, 5, 2, 8))).view(Arrays)  # log-decays from -6e-6 to -55
        g[0, 0, 0, 0] = 0.0
        case = NumpyCase({"gate_in_kernel": 0}, {"g": g})
        with np.errstate(divide="ignore"):  # log(0) in the branch torch.where discards for g = 0
            a, A_log, dt_bias, lower_bound = sglang_inputs.raw_gate(case)
        self.assertIsNone(lower_bound)
        self.assertEqual((A_log.shape, dt_bias.shape), ((2,), (16,)))
        back = softplus_gate(np.asarray(a), A_log[0], dt_bias[0])
        np.testing.assert_allclose(back, g, rtol=1e-5, atol=1e-6)
        self.assertEqual(back[0, 0, 0, 0], 0.0)

    def test_a_given_beta_comes_back_through_the_kernel_sigmoid(self):
        beta = np.array([0.0, 1e-6, 0.25, 0.5, 0.999, 1.0]).view(Arrays)
        with np.errstate(divide="ignore"):  # beta 0 and 1: logits -inf and inf
            b = np.asarray(sglang_inputs.beta_logits(NumpyCase({}, {"beta": beta})), np.float32)
        with np.errstate(over="ignore"):
            back = np.float32(1) / (np.float32(1) + np.exp(-b))
        np.testing.assert_allclose(back, beta, rtol=1e-6, atol=1e-7)

    def test_a_gate_in_kernel_is_passed_as_given(self):
        g = np.ones((1, 2, 2, 4), np.float32).view(Arrays)
        A_log = np.array([0.5, -0.5], np.float32).view(Arrays)
        case = NumpyCase({"gate_in_kernel": 1, "lower_bound": -3.0}, {"g": g, "A_log": A_log})
        a, got_A_log, dt_bias, lower_bound = sglang_inputs.raw_gate(case)
        self.assertIs(a, g)
        np.testing.assert_array_equal(got_A_log, A_log)
        np.testing.assert_array_equal(dt_bias, np.zeros(8))
        self.assertEqual(lower_bound, -3.0)


class Loader(unittest.TestCase):
    """sglang_loader on a stand-in tree of SGLang's layout: the kernel file imports as itself, under
    packages whose __init__ never runs, with the engine helpers answered by the stand-ins."""

    def test_kernel_files_import_without_the_packages_above_them(self):
        import tempfile
        import sglang_loader
        with tempfile.TemporaryDirectory() as root:
            attention = os.path.join(root, "sglang", "kernels", "ops", "attention")
            os.makedirs(os.path.join(attention, "fla"))
            with open(os.path.join(root, "sglang", "__init__.py"), "w") as f:
                f.write("raise ImportError('the serving engine')\n")
            with open(os.path.join(attention, "fla", "kda.py"), "w") as f:
                f.write("from sglang.srt.utils import is_cuda, next_power_of_2\n"
                        "from sglang.kernels.jit.utils import is_arch_support_pdl\n"
                        "ANSWERS = (is_cuda(), next_power_of_2(48), is_arch_support_pdl())\n")
            torch = types.SimpleNamespace(
                __version__="2.11.0+cu130", version=types.SimpleNamespace(cuda=None, hip=None),
                cuda=types.SimpleNamespace(is_available=lambda: False))
            saved = {name: module for name, module in sys.modules.items() if name.startswith("sglang")}
            os.environ["SGLANG_KDA_ROOT"] = root
            try:
                kda = sglang_loader.load(torch, "sglang.kernels.ops.attention.fla.kda")
                self.assertEqual(kda.ANSWERS, (False, 64, False))
                self.assertEqual(os.path.realpath(kda.__file__), os.path.realpath(os.path.join(attention, "fla", "kda.py")))
                self.assertEqual(sys.modules["sglang.srt.utils.common"].torch_release, (2, 11, 0))
            finally:
                del os.environ["SGLANG_KDA_ROOT"]
                for name in [n for n in sys.modules if n.startswith("sglang") and n not in saved]:
                    del sys.modules[name]

    def test_a_missing_tree_is_named(self):
        import sglang_loader
        os.environ["SGLANG_KDA_ROOT"] = "/nonexistent"
        try:
            with self.assertRaisesRegex(ImportError, "kda.py under \\$SGLANG_KDA_ROOT"):
                sglang_loader.find_root()
        finally:
            del os.environ["SGLANG_KDA_ROOT"]


if __name__ == "__main__":
    unittest.main()
