#!/usr/bin/env python3
"""kda-oracle campaign and report merge on CPU: the CPU plan (conformance/plan-cpu: the numpy adapter,
a planted bug, an adapter whose handshake dies) and hand-written unit files (fixtures/).

    campaign_test.py --oracle KDA_ORACLE --work DIR TEST

Tests (one CTest entry each):
  shard-variables  each sharding style (--shard, Slurm arrays, Kubernetes Indexed Jobs, GoogleTest) gives
                   shard i of 3 the units i, i + 3, ...: disjoint, together the unsharded list
  shards-merge     the CPU plan in 3 shards, one per variable style, merged: the same report as one run
  resume           a rerun runs nothing; a deleted unit is run again, alone
  budget           --budget stops starting units: exit status 3, a partial report; a rerun completes
  plan             a plan with a mistake is refused naming its file and the field
  merge            fixtures: shards merge; identical duplicates collapse; a conflicting duplicate and
                   folders of different campaigns are errors naming both files
  examples         docs/examples/campaign.sbatch and campaign-job.yaml shard the plan completely
Run from the repository root with a python3 that has numpy and h5py first on PATH (the plan says
`python3`). Exit status 0 passed, 1 failed, 77 skipped (no PyYAML for the Job manifest).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

PLAN = "conformance/plan-cpu"
# Cheap settings: three properties (the planted bug is caught by unchecked-invalid in 10 cases), the
# smoke golden suite, the tiny benchmark shapes.
PROPERTIES = ["--properties", "matches-reference,untouched,unchecked-invalid"]
CPU_SETTINGS = ["--scales", "small", "--recurrent-cases", "10", "--chunked-cases", "10", "--golden-suite", "smoke",
                "--bench-shapes", "tiny", "--bench-calls", "1", "--plotter", "false"]
SHARD_VARIABLES = ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_STEP",
                   "JOB_COMPLETION_INDEX", "KDA_SHARD_COUNT", "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"]


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


def run(args, command, env=None, expect=0):
    environment = {k: v for k, v in os.environ.items() if k not in SHARD_VARIABLES}
    environment.update(env or {})
    done = subprocess.run([args.oracle] + command, env=environment, capture_output=True, text=True)
    if expect is not None and done.returncode != expect:
        raise Failed(f"{' '.join(command)}: exit status {done.returncode}, expected {expect}\n"
                     f"{done.stdout}\n{done.stderr}")
    return done


def style_env(style, index, count):
    """The environment a job engine gives shard `index` of `count` (Slurm: an array 1-3, not from 0)."""
    if style == "slurm":
        return {"SLURM_ARRAY_TASK_ID": str(index + 1), "SLURM_ARRAY_TASK_COUNT": str(count),
                "SLURM_ARRAY_TASK_MIN": "1"}
    if style == "indexed-job":
        return {"JOB_COMPLETION_INDEX": str(index), "KDA_SHARD_COUNT": str(count)}
    if style == "gtest":
        return {"GTEST_SHARD_INDEX": str(index), "GTEST_TOTAL_SHARDS": str(count)}
    raise ValueError(style)


def units_listed(args, extra, env=None):
    return run(args, ["campaign", "--plan", PLAN, "--dry-run"] + CPU_SETTINGS + PROPERTIES + extra, env).stdout.split()


def test_shard_variables(args):
    everything = units_listed(args, [])
    check(len(everything) == 13, f"the CPU plan has {len(everything)} units, expected 13")
    for style in ["flag", "slurm", "indexed-job", "gtest"]:
        seen = []
        for i in range(3):
            if style == "flag":
                mine = units_listed(args, ["--shard", f"{i}/3"])
            else:
                mine = units_listed(args, [], style_env(style, i, 3))
            check(mine == everything[i::3], f"{style}: shard {i} of 3 lists {mine}, expected {everything[i::3]}")
            seen += mine
        check(sorted(seen) == sorted(everything), f"{style}: the shards do not cover the plan once")
    # A Slurm task that is not one of the array's, an Indexed Job without its count: refused.
    run(args, ["campaign", "--plan", PLAN, "--dry-run"],
        {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1"}, expect=2)
    done = run(args, ["campaign", "--plan", PLAN, "--dry-run"], {"JOB_COMPLETION_INDEX": "0"}, expect=2)
    check("KDA_SHARD_COUNT" in done.stderr, "an Indexed Job without KDA_SHARD_COUNT is refused naming it")
    # --implementations: only the named implementations' units, in the plan's order; an unknown name refused.
    chosen = units_listed(args, ["--implementations", "numpy-recurrent"])
    check(chosen and chosen == [u for u in everything if "/numpy-recurrent" in u],
          f"--implementations numpy-recurrent lists {chosen}")
    done = run(args, ["campaign", "--plan", PLAN, "--dry-run", "--implementations", "no-such"], expect=2)
    check("no implementation 'no-such'" in done.stderr, f"an unknown implementation is refused naming it: {done.stderr}")


def campaign(args, out, env=None, extra=PROPERTIES, expect=1):
    # The CPU plan holds a planted bug: a complete campaign of its properties exits 1.
    return run(args, ["campaign", "--plan", PLAN, "--out", out] + CPU_SETTINGS + list(extra), env, expect)


def report_without_timings(args, folders, out, expect=1):
    run(args, ["report", "merge"] + folders + ["--out", out, "--no-timings", "--plotter", "false"], expect=expect)
    with open(os.path.join(out, "conformance.md")) as f:
        return f.read()


def test_shards_merge(args):
    whole = os.path.join(args.work, "whole")
    campaign(args, whole)
    shards = []
    for i, style in enumerate(["slurm", "indexed-job", "gtest"]):
        shards.append(os.path.join(args.work, f"shard-{i}"))
        done = campaign(args, shards[-1], style_env(style, i, 3), expect=None)
        check(done.returncode in (0, 1), f"shard {i}: exit status {done.returncode}\n{done.stderr}")
        check(f"in shard {i}/3" in done.stderr, f"shard {i} ({style}) ran as another shard:\n{done.stderr}")
    one = report_without_timings(args, [whole], os.path.join(args.work, "report-whole"))
    merged = report_without_timings(args, shards, os.path.join(args.work, "report-merged"))
    check(one == merged, "the merged shards' report differs from the unsharded run's:\n" + one + "\n----\n" + merged)
    # The report says what the CPU plan holds: the matrix, the planted failure with its case, the
    # adapter that did not start, the plan's own not-run entry, the golden and speed results.
    for expected in [r"\| unchecked-invalid \| skipped \(R\d\) \| \*\*FAIL\*\* F1, \d+ \| not run \(R\d\) \|",
                     r"breaks accepted_range", r"\[cases/check_planted-unchecked-index_small_unchecked-invalid.h5\]",
                     r"Plot not made: the plotter 'false' failed", r"exited with status 4 before its handshake",
                     r"\| numpy-chunked \| no chunked numpy adapter", r"\| numpy-recurrent \| pass, 17 \|",
                     r"\| numpy-recurrent \| prefill 1x64 \| 64 \| timed \|"]:
        check(re.search(expected, one), f"the report lacks /{expected}/:\n{one}")
    check(os.path.exists(os.path.join(args.work, "report-merged", "cases",
                                      "check_planted-unchecked-index_small_unchecked-invalid.h5")),
          "the failing case was not copied into the report")
    html = open(os.path.join(args.work, "report-merged", "index.html")).read()
    check("<table>" in html and "<script" not in html and "breaks accepted_range" in html,
          "index.html is no static page holding the report")


def unit_lines(stderr):
    return re.findall(r"campaign: unit \d+/\d+ (\S+):", stderr)


def test_resume(args):
    out = os.path.join(args.work, "resume")
    extra = ["--properties", "untouched", "--no-golden"]
    first = unit_lines(campaign(args, out, extra=extra, expect=0).stderr)
    check(len(first) == 4, f"the first run ran {first}, expected 4 units")
    again = campaign(args, out, extra=extra, expect=0)
    check(unit_lines(again.stderr) == [], f"a rerun of a complete campaign ran {unit_lines(again.stderr)}")
    os.remove(os.path.join(out, "units", "check", "numpy-recurrent", "small", "untouched.json"))
    third = unit_lines(campaign(args, out, extra=extra, expect=0).stderr)
    check(third == ["check/numpy-recurrent/small/untouched"], f"after deleting one unit the rerun ran {third}")
    # Another plan or other settings into the same folder are refused.
    done = campaign(args, out, extra=["--properties", "finite", "--no-golden"], expect=2)
    check("describes another campaign" in done.stderr, done.stderr)


def test_budget(args):
    out = os.path.join(args.work, "budget")
    extra = ["--properties", "untouched", "--no-golden"]
    done = campaign(args, out, extra=extra + ["--budget", "0.5"], expect=3)
    check("incomplete" in done.stdout and "rerun to continue" in done.stdout, done.stdout)
    ran = unit_lines(done.stderr)
    check(len(ran) < 4, f"the budget did not stop the run: {ran}")
    report = open(os.path.join(out, "report", "conformance.md")).read()
    check(f"{4 - len(ran)} units have no result" in report, "the partial report does not list the pending units")
    rest = unit_lines(campaign(args, out, extra=extra, expect=0).stderr)
    check(sorted(ran + rest) == sorted(set(ran + rest)) and len(ran + rest) == 4,
          f"the rerun did not continue where the first stopped: {ran} then {rest}")


def test_plan(args):
    good = {"name": "x", "kernel": "ref-fp32", "kind": "recurrent"}
    mistakes = [({"library": "l", "implementations": [dict(good, kind="parallel")]},
                 "implementation 0: \"kind\" is 'parallel', expected recurrent or chunked"),
                ({"library": "l", "implementations": [{"name": "x", "kind": "recurrent"}]},
                 "implementation 0: \"kernel\" must be a non-empty string"),
                ({"implementations": [good]}, "\"library\" must be a non-empty string"),
                ({"library": "l", "implementations": [good, good]}, "implementation name 'x' is used twice"),
                ({"library": "l", "implementations": [dict(good, name="a b")]}, "name 'a b' may hold letters")]
    for i, (plan, message) in enumerate(mistakes):
        folder = os.path.join(args.work, f"plan-{i}")
        os.makedirs(folder)
        with open(os.path.join(folder, "lib.json"), "w") as f:
            json.dump(plan, f)
        done = run(args, ["campaign", "--plan", folder, "--dry-run"], expect=2)
        check(os.path.join(folder, "lib.json") in done.stderr and message in done.stderr,
              f"plan {plan}: expected an error naming lib.json and saying {message!r}, got: {done.stderr}")


def test_merge(args):
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
    f = lambda name: os.path.join(fixtures, name)  # noqa: E731
    out = os.path.join(args.work, "merge")
    run(args, ["report", "merge", f("shard-0"), f("shard-1"), "--out", out, "--plotter", "false"], expect=1)
    report = open(os.path.join(out, "conformance.md")).read()
    for expected in [r"\| matches-reference \| pass, 100, 12\.5 s \|", r"\| untouched \| \*\*FAIL\*\* F1, 37, 3\.2 s \|",
                     r"Diagnosis:\*\* o: 12 bytes changed", r"\| lib 1\.0 \| lib-b \| needs sm_100 \|",
                     r"GPU: NVIDIA H100 80GB HBM3, 570\.00; 1 machine", r"\| lib-a \| pass, 40, 4\.0 s \| 38 \| 0 \| 2 \|"]:
        check(re.search(expected, report), f"the merged fixtures' report lacks /{expected}/:\n{report}")
    # One shard alone: the other's unit is pending.
    alone = report_without_timings(args, [f("shard-0")], os.path.join(args.work, "merge-alone"), expect=0)
    check("1 units have no result" in alone and "`check/lib-a/small/untouched`" in alone, alone)
    # The same unit from two runs (other timings, machine): kept once.
    with_duplicate = report_without_timings(args, [f("shard-0"), f("shard-1"), f("duplicate")],
                                            os.path.join(args.work, "merge-duplicate"))
    without = report_without_timings(args, [f("shard-0"), f("shard-1")], os.path.join(args.work, "merge-plain"))
    check(with_duplicate.replace("2 machines", "1 machine") == without, "an identical duplicate changed the report")
    done = run(args, ["report", "merge", f("shard-0"), f("conflict"), "--out", out], expect=2)
    check(re.search(r"unit check/lib-a/small/matches-reference has conflicting results in \S*shard-0\S* and "
                    r"\S*conflict\S*", done.stderr), done.stderr)
    done = run(args, ["report", "merge", f("shard-0"), f("other-campaign"), "--out", out], expect=2)
    check("describe different campaigns" in done.stderr, done.stderr)


def test_examples(args):
    try:
        import yaml
    except ImportError:
        print("no PyYAML: the Job manifest cannot be read here")
        sys.exit(77)
    everything = units_listed(args, [])
    # The sbatch script, as each task of its array would run it.
    script = open("docs/examples/campaign.sbatch").read()
    array = re.search(r"^#SBATCH --array=(\d+)-(\d+)$", script, re.M)
    check(array, "campaign.sbatch declares no --array=A-B")
    first, last = int(array.group(1)), int(array.group(2))
    seen = []
    for task in range(first, last + 1):
        env = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(last - first + 1),
               "SLURM_ARRAY_TASK_MIN": str(first), "KDA_ORACLE": args.oracle, "KDA_PLAN": PLAN}
        environment = {k: v for k, v in os.environ.items() if k not in SHARD_VARIABLES}
        environment.update(env)
        done = subprocess.run(["bash", "docs/examples/campaign.sbatch", "--dry-run"] + CPU_SETTINGS + PROPERTIES,
                              env=environment,
                              capture_output=True, text=True)
        check(done.returncode == 0, f"campaign.sbatch task {task}: {done.stderr}")
        seen += done.stdout.split()
    check(sorted(seen) == sorted(everything), "the sbatch array does not run every unit once")
    # The Indexed Job: indexed completions, KDA_SHARD_COUNT = completions, and its pods' shards cover the plan.
    job = yaml.safe_load(open("docs/examples/campaign-job.yaml"))
    spec = job["spec"]
    check(job["kind"] == "Job" and spec["completionMode"] == "Indexed", "campaign-job.yaml is no Indexed Job")
    container = spec["template"]["spec"]["containers"][0]
    count = {e["name"]: e["value"] for e in container["env"]}["KDA_SHARD_COUNT"]
    check(int(count) == spec["completions"], f"KDA_SHARD_COUNT {count} != completions {spec['completions']}")
    command = " ".join(container["args"])
    check("kda-oracle campaign" in command and "$JOB_COMPLETION_INDEX" in command, command)
    seen = []
    for index in range(spec["completions"]):
        seen += units_listed(args, [], {"JOB_COMPLETION_INDEX": str(index), "KDA_SHARD_COUNT": count})
    check(sorted(seen) == sorted(everything), "the Job's pods do not run every unit once")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--oracle", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("test", choices=["shard-variables", "shards-merge", "resume", "budget", "plan", "merge",
                                         "examples"])
    args = parser.parse_args()
    args.oracle = os.path.abspath(args.oracle)
    args.work = os.path.abspath(os.path.join(args.work, args.test))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    try:
        globals()["test_" + args.test.replace("-", "_")](args)
    except Failed as e:
        print(f"FAILED {args.test}: {e}")
        return 1
    print(f"passed {args.test}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
