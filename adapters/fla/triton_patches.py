"""Two opt-in changes to how Triton runs FLA's kernels, for fla_adapter.py (the kernels stay FLA's own).

first_config(): every autotuned kernel runs the first of its configs that survive the kernel's own
  pruning, without benchmarking the others. Autotuning compiles every config (FLA's chunk path has about
  80 across its kernels) for every new shape key, minutes per shape where a check draws dozens of
  shapes; any config is one FLA may pick, but the one it picks on a given GPU may differ.
interpret(): Triton's CPU interpreter (testing without a GPU; seconds per case). It implies
  first_config() (benchmarks need a GPU driver) and bridges two gaps in FLA's chunk path:
  - the interpreter runs a kernel's `for i in range(n)` over Python ints, and the chunk state kernel
    calls `i.to(tl.int64)` on its loop index: its module gets a `range` yielding interpreter scalars;
  - the interpreter swaps `tl.gather` for its own only while a kernel runs, and the safe-gate intra
    kernel calls a `gather` bound to the original at import: its module gets one that looks it up.
  Warnings are silenced (FLA's "Triton is not supported on current platform", overflow in exp).
"""
import builtins
import os
import warnings


def first_config():
    from triton.runtime.autotuner import Autotuner

    prune = Autotuner.prune_configs
    Autotuner.prune_configs = lambda self, *args, **kwargs: prune(self, *args, **kwargs)[:1]


def interpret():
    """Call before fla or anything that compiles a Triton kernel is imported."""
    os.environ["TRITON_INTERPRET"] = "1"
    warnings.simplefilter("ignore")
    first_config()
    from triton.runtime.interpreter import _implicit_cvt

    def interpreter_range(*bounds):
        ints = (int(b.handle.data.item()) if hasattr(b, "handle") else int(b) for b in bounds)
        for i in builtins.range(*ints):
            yield _implicit_cvt(i)

    import triton.language as tl
    import fla.ops.common.chunk_delta_h as chunk_delta_h
    import fla.ops.kda.chunk_intra as chunk_intra
    chunk_delta_h.range = interpreter_range
    chunk_intra.gather = lambda src, index, axis: tl.gather(src, index, axis)
