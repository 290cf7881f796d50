#!/usr/bin/env python3
"""Plots where a saved failing case's kernel outputs differ from the fp64 reference.

    plot_failure.py CASE.h5 OUT.svg|OUT.png [--case NAME]

CASE.h5 is a case file saved by `kda-oracle check --save-failures` (golden/SCHEMA.md): it holds the
kernel's outputs (group `kernel_outputs`) and the fp64 reference's (group `expected`). The plot has one
panel per output tensor that differs: the error |kernel - reference| relative to the reference's RMS
over the tensor, as a heat map (log colour scale, non-finite kernel values in magenta) with the worst
element circled. `o` and `token_states` are drawn against token position (x, the batch rows one after
another) and head (y), taking the largest error over the channels (state elements); `final_state` and
`chunk_states` against sequence or chunk (x) and head (y). States of padding sequences are not compared,
as kda-oracle does not compare them. The title is the case's one-line description.

--case picks a case in a file of several (default: the first with kernel outputs). Exits 2 with a
message naming the file when it has no such case, or when its case holds no outputs to compare.
"""
import argparse
import sys
import textwrap

import h5py
import numpy as np

OUTPUTS = ("o", "final_state", "chunk_states", "token_states")
# Axis labels per output: x, then y is always the (value) head.
X_LABEL = {"o": "token position", "token_states": "token position", "final_state": "sequence",
           "chunk_states": "chunk (all sequences' chunks in order)"}


class InputError(Exception):
    """A file or case that cannot be plotted; the message names it."""


def text(attribute):
    return attribute.decode() if isinstance(attribute, bytes) else str(attribute)


def pick_case(f, path, name):
    cases = f.get("cases")
    if cases is None or len(cases) == 0:
        raise InputError(f"{path}: holds no cases (is it a kda-oracle case file?)")
    if name is not None:
        if name not in cases:
            raise InputError(f"{path}: has no case '{name}' (cases: {', '.join(cases)})")
        return name, cases[name]
    for case_name, case in cases.items():
        if "kernel_outputs" in case:
            return case_name, case
    raise InputError(f"{path}: no case holds the kernel's outputs (group 'kernel_outputs'): save the case "
                     "with a kda-oracle check --save-failures that ran the kernel on a valid case")


def compared_outputs(case):
    """The outputs kda-oracle compares: final_state only where the call writes final states (its own
    tensor or a pool, not a verify call, whose states are its token_states); the others where stored."""
    tensors = case["tensors"] if "tensors" in case else {}
    verify = text(case.attrs.get("mode", "")) == "verify"
    writes_final = not verify and ("final_state" in tensors or "state_pool" in tensors)
    return [t for t in OUTPUTS if t != "final_state" or writes_final]


def errors(case, path, case_name):
    """(tensor, relative error array, kernel array, reference array) for each output that differs."""
    for group in ("kernel_outputs", "expected"):
        if group not in case:
            raise InputError(f"{path}: case '{case_name}' has no group '{group}': nothing to compare")
    got_group, want_group = case["kernel_outputs"], case["expected"]
    written = want_group["written"][()].astype(bool) if "written" in want_group else None
    found = []
    for tensor in compared_outputs(case):
        if tensor not in got_group or tensor not in want_group:
            continue
        got, want = got_group[tensor][()], want_group[tensor][()]
        if got.shape != want.shape:
            raise InputError(f"{path}: case '{case_name}': kernel_outputs/{tensor} has shape {got.shape}, "
                             f"expected/{tensor} {want.shape}")
        rms = float(np.sqrt(np.mean(want ** 2))) if want.size else 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(got - want) / (rms if rms > 0 else 1.0)
        err[~np.isfinite(got) & np.isfinite(want)] = np.inf
        err[np.isnan(err)] = np.inf
        if tensor == "final_state" and written is not None:
            err[~written] = 0.0  # padding sequences: no state is written, none compared
        if np.any(err > 0):
            found.append((tensor, err, got, want))
    if not found and not any(t in got_group for t in OUTPUTS):
        raise InputError(f"{path}: case '{case_name}': group 'kernel_outputs' holds no outputs")
    return found


def fold(tensor, err):
    """(heat map [head, x], row length T or None, function from flat index to a readable position)."""
    if tensor in ("o", "token_states"):
        B, T, HV = err.shape[:3]
        per = err.reshape(B * T, HV, -1)
        grid = per.max(axis=2).T

        def where(index):
            at = np.unravel_index(index, err.shape)
            inner = " channel %d" % at[3] if tensor == "o" else " element (%d, %d)" % (at[3], at[4])
            return at[0] * T + at[1], at[2], "row %d token %d head %d%s" % (at[0], at[1], at[2], inner)
        return grid, T if B > 1 else None, where
    X, HV = err.shape[:2]
    grid = err.reshape(X, HV, -1).max(axis=2).T
    what = "sequence" if tensor == "final_state" else "chunk"

    def where(index):
        at = np.unravel_index(index, err.shape)
        return at[0], at[1], "%s %d head %d element (%d, %d)" % (what, at[0], at[1], at[2], at[3])
    return grid, None, where


def rel_rms(got, want, err):
    """RMS(kernel - reference) / RMS(reference) over the compared elements (inf where one is non-finite)."""
    if np.isinf(err).any():
        return np.inf
    compared = err > 0
    diff = np.where(compared, got - want, 0.0)
    scale = np.sqrt(np.mean(want ** 2))
    return np.sqrt(np.mean(diff ** 2)) / (scale if scale > 0 else 1.0)


def worst_index(err):
    flat = err.reshape(-1)
    infinite = np.flatnonzero(np.isinf(flat))
    return int(infinite[0]) if infinite.size else int(np.argmax(flat))


def plot(out, case_name, case, found):
    try:
        import matplotlib
    except ImportError:
        raise InputError("matplotlib is not installed (Debian: python3-matplotlib; pip: matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(len(found), 1, figsize=(11, 2.2 + 2.6 * len(found)), squeeze=False)
    for ax, (tensor, err, got, want) in zip(axes[:, 0], found):
        grid, row_length, where = fold(tensor, err)
        finite = grid[np.isfinite(grid)]
        top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        floor = top * 1e-6
        shown = np.where(np.isfinite(grid), np.maximum(grid, floor), np.nan)
        cmap = matplotlib.colormaps["viridis"].copy()
        cmap.set_bad("magenta")
        image = ax.imshow(shown, aspect="auto", origin="lower", interpolation="nearest", cmap=cmap,
                          norm=LogNorm(vmin=floor, vmax=top),
                          extent=(-0.5, grid.shape[1] - 0.5, -0.5, grid.shape[0] - 0.5))
        fig.colorbar(image, ax=ax, label="|kernel - reference| / RMS(reference)")
        if row_length:
            for boundary in range(row_length, grid.shape[1], row_length):
                ax.axvline(boundary - 0.5, color="white", linewidth=0.6)
        index = worst_index(err)
        x, y, position = where(index)
        ax.plot([x], [y], marker="o", markersize=12, markerfacecolor="none", markeredgecolor="red", markeredgewidth=2)
        got_value, want_value = got.reshape(-1)[index], want.reshape(-1)[index]
        ax.set_title("%s: rel-RMS %.2e, worst at %s (kernel %.9g, reference %.9g)"
                     % (tensor, rel_rms(got, want, err), position, got_value, want_value), fontsize=9)
        ax.set_xlabel(X_LABEL[tensor])
        ax.set_ylabel("head")
        for axis, n, set_ticks in ((ax.xaxis, grid.shape[1], ax.set_xticks), (ax.yaxis, grid.shape[0], ax.set_yticks)):
            if n <= 16:
                set_ticks(range(n))
            else:
                axis.set_major_locator(MaxNLocator(integer=True))
    meta = case.get("metadata")
    label = ", ".join(text(meta.attrs[k]) for k in ("property", "kernel") if meta is not None and k in meta.attrs)
    title = (label + "\n" if label else "") + text(case.attrs.get("describe", case_name))
    fig.suptitle("\n".join(textwrap.wrap(title, 150, replace_whitespace=False)), fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case_file")
    parser.add_argument("out", help="the plot: .svg or .png")
    parser.add_argument("--case", help="the case to plot (default: the first with kernel outputs)")
    args = parser.parse_args(argv)
    try:
        if not args.out.lower().endswith((".svg", ".png")):
            raise InputError(f"{args.out}: the plot is written as .svg or .png, name it so")
        try:
            f = h5py.File(args.case_file, "r")
        except OSError as e:
            raise InputError(f"{args.case_file}: cannot be read as HDF5 ({e})") from None
        with f:
            case_name, case = pick_case(f, args.case_file, args.case)
            found = errors(case, args.case_file, case_name)
            if not found:
                raise InputError(f"{args.case_file}: case '{case_name}': the kernel's outputs equal the reference's "
                                 "exactly: no error to plot")
            plot(args.out, case_name, case, found)
    except InputError as e:
        print("plot_failure.py: " + str(e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
