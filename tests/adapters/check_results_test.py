"""`kda-oracle check --results` and scripts/plot_failure.py (CTest adapters.check_results).

A run against the planted window-512 adapter (adapters/tests/planted_numerics.py) fails matches-reference
and skips padding-rows (no pool): the JSON says so with the text output's diagnosis, skip reason and
replay line; the saved case holds the kernel's and the reference's outputs, which differ; the replay
line reproduces the failure; plot_failure.py draws it (when matplotlib is installed). A passing run's
JSON has no failure. Environment: KDA_ORACLE (the kda-oracle binary); run by the python that has numpy
and h5py (the adapters' python).
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ORACLE = os.environ["KDA_ORACLE"]
PLANTED = "exec:%s %s --bug window-512" % (sys.executable,
                                           os.path.join(ROOT, "adapters", "tests", "planted_numerics.py"))
PLOT = os.path.join(ROOT, "scripts", "plot_failure.py")


def run(argv, cwd):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=240)


class FailingRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.cwd = cls.dir.name
        cls.proc = run([ORACLE, "check", "--kernel", PLANTED, "--properties", "matches-reference,padding-rows",
                        "--save-failures", "failures", "--results", "out/results.json"], cls.cwd)
        cls.results_path = os.path.join(cls.cwd, "out", "results.json")
        with open(cls.results_path) as f:
            cls.results = json.load(f)
        cls.by_name = {p["property"]: p for p in cls.results["properties"]}

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_the_run_fails_and_the_header_is_filled(self):
        self.assertEqual(self.proc.returncode, 1, self.proc.stdout + self.proc.stderr)
        r = self.results
        self.assertEqual((r["schema"], r["version"]), ("kda-oracle/check-results", 1))
        self.assertEqual(r["kernel"], PLANTED)
        self.assertEqual(r["adapter"], "planted-window-512")
        self.assertEqual((r["scale"], r["seed"], r["cases"], r["shard"]), ("small", 1, 100, None))
        self.assertIn("(precision model %s)" % r["precision_model"], self.proc.stdout)
        self.assertRegex(r["started"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertGreater(r["seconds"], 0)
        self.assertEqual(list(self.by_name), ["matches-reference", "padding-rows"])

    def test_a_skipped_property_has_the_text_outputs_reason(self):
        skipped = self.by_name["padding-rows"]
        self.assertEqual(skipped["status"], "skipped")
        self.assertIsNone(skipped["failure"])
        self.assertRegex(self.proc.stdout, r"\npadding-rows +skipped: %s\n" % re.escape(skipped["reason"]))

    def test_the_failure_has_the_text_outputs_diagnosis_and_replay_line(self):
        failed = self.by_name["matches-reference"]
        self.assertEqual(failed["status"], "fail")
        self.assertIsNone(failed["reason"])
        self.assertGreater(failed["cases"], 0)
        failure = failed["failure"]
        self.assertRegex(failure["diagnosis"], r"^o \(f32\): rel-RMS .* worst at sequence 0 token 51\d ")
        self.assertIn("\n" + failure["diagnosis"] + "\n", self.proc.stdout)
        self.assertIn("\nreplay: " + failure["replay"] + "\n", self.proc.stdout)
        self.assertIsNone(failure["plot"])

    def case_file(self):
        relative = self.by_name["matches-reference"]["failure"]["case_file"]
        self.assertTrue(relative.startswith("../failures/"), relative)  # relative to the JSON's folder
        path = os.path.join(os.path.dirname(self.results_path), relative)
        self.assertTrue(os.path.isfile(path), path)
        return path

    def test_the_saved_case_holds_the_kernels_and_the_references_outputs(self):
        with h5py.File(self.case_file(), "r") as f:
            (case,) = f["cases"].values()
            got, want = case["kernel_outputs/o"][()], case["expected/o"][()]
            self.assertEqual(got.shape, want.shape)
            rel_rms = np.sqrt(np.mean((got - want) ** 2)) / np.sqrt(np.mean(want ** 2))
            self.assertGreater(rel_rms, 1e-3)  # the window drops history from token 512 on
            self.assertEqual(case["kernel_outputs/written"][()].tolist(), case["expected/written"][()].tolist())

    def test_the_replay_line_reproduces_the_failure(self):
        argv = shlex.split(self.by_name["matches-reference"]["failure"]["replay"])
        self.assertEqual(argv[:2], ["kda-oracle", "check"])
        proc = run([ORACLE] + argv[1:] + ["--save-failures", ""], self.cwd)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("\n" + self.by_name["matches-reference"]["failure"]["diagnosis"] + "\n", proc.stdout)

    def test_plot_failure_draws_the_case(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed")
        out = os.path.join(self.cwd, "failure.svg")
        proc = run([sys.executable, PLOT, self.case_file(), out], self.cwd)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        with open(out) as f:
            svg = f.read()
        self.assertIn("<svg", svg)
        self.assertIn("worst at row 0 token 51", svg)

    def test_plot_failure_refuses_a_file_without_kernel_outputs(self):
        proc = run([sys.executable, PLOT, os.path.join(ROOT, "golden", "smoke.h5"), "x.svg"], self.cwd)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("smoke.h5: no case holds the kernel's outputs", proc.stderr)


class PassingRun(unittest.TestCase):
    def test_a_passing_sharded_run_has_no_failure(self):
        with tempfile.TemporaryDirectory() as cwd:
            proc = run([ORACLE, "check", "--kernel", "ref-fp32", "--properties", "untouched,padding-rows",
                        "--cases", "5", "--seed", "7", "--shard", "1/2", "--results", "r.json"], cwd)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            with open(os.path.join(cwd, "r.json")) as f:
                results = json.load(f)
        self.assertEqual((results["seed"], results["cases"], results["shard"]), (7, 5, "1/2"))
        self.assertEqual([(p["property"], p["status"], p["cases"], p["failure"]) for p in results["properties"]],
                         [("untouched", "pass", 5, None), ("padding-rows", "pass", 5, None)])


if __name__ == "__main__":
    unittest.main()
