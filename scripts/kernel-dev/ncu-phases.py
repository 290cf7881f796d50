#!/usr/bin/env python3
"""Splits Nsight Compute's per-SASS source counters (scripts/kernel-dev/ncu-prefill.sh's CSV) into the stretches
between barriers (BAR.SYNC / BAR.SYNC.DEFER_BLOCKING) and prints, per stretch: SASS lines, instructions
executed (warp level), stall samples, shared-memory wavefronts and the three largest stall reasons.
Usage: ncu-phases.py KERNEL.csv [--top N]   (N: also the N SASS lines with the most samples)"""
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    header = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    names, body = rows[header], rows[header + 1:]
    col = {n: i for i, n in enumerate(names)}
    stalls = [n for n in names if n.startswith("stall_") and "Not Issued" not in n]
    total_samples = sum(number(r[col["Warp Stall Sampling (All Samples)"]]) for r in body)
    total_inst = sum(number(r[col["Instructions Executed"]]) for r in body)
    print(f"{len(body)} SASS lines, {total_inst / 1e6:.1f} M warp instructions, {total_samples:.0f} samples")
    stretch, start = [], 0

    def flush(end):
        if not stretch:
            return
        inst = sum(number(r[col["Instructions Executed"]]) for r in stretch)
        samples = sum(number(r[col["Warp Stall Sampling (All Samples)"]]) for r in stretch)
        waves = sum(number(r[col["L1 Wavefronts Shared"]]) for r in stretch) if "L1 Wavefronts Shared" in col else 0
        by = sorted(((sum(number(r[col[s]]) for r in stretch), s) for s in stalls), reverse=True)[:4]
        reasons = ", ".join(f"{s[6:]} {v / max(samples, 1):.0%}" for v, s in by if v > 0)
        print(f"lines {start:5d}-{end:5d}  inst {inst / 1e6:7.2f} M  samples {samples / max(total_samples, 1):6.1%}"
              f"  shared wavefronts {waves / 1e6:6.2f} M  | {reasons}")

    for i, r in enumerate(body):
        stretch.append(r)
        if "BAR.SYNC" in r[col["Source"]] or "BAR.RED" in r[col["Source"]]:
            flush(i)
            stretch, start = [], i + 1
    flush(len(body) - 1)
    if "--top" in sys.argv:
        n = int(sys.argv[sys.argv.index("--top") + 1])
        top = sorted(range(len(body)), key=lambda i: -number(body[i][col["Warp Stall Sampling (All Samples)"]]))[:n]
        for i in sorted(top):
            r = body[i]
            by = sorted(((number(r[col[s]]), s) for s in stalls), reverse=True)[:2]
            print(f"{i:5d} {r[col['Source']].strip()[:60]:60s} samples {number(r[col['Warp Stall Sampling (All Samples)']]):6.0f}"
                  f" inst {number(r[col['Instructions Executed']]):9.0f}  " + ", ".join(f"{s[6:]} {v:.0f}" for v, s in by))


if __name__ == "__main__":
    main()
