"""How Triton runs a library's kernels under the kit (the kernels stay the library's own).

default_cache(): TRITON_CACHE_DIR defaults to $TMPDIR/kda-triton-cache, autotuning results cached too,
  so a restarted adapter (a new process after a crash) reuses what earlier ones compiled.
first_config() (--first-config): every autotuned kernel runs the first of its configs that survive the
  kernel's own pruning, without benchmarking the others. Autotuning compiles every config for every
  new shape key, minutes per shape where a check draws dozens of shapes; any config is one the
  library may pick, but the one it picks on a given GPU may differ.
interpret() (--interpret): Triton's CPU interpreter (testing without a GPU; seconds per case). It
  implies first_config() (benchmarks need a GPU driver); call it before anything compiles a kernel.
bridge_interpreter(): two gaps between the interpreter and code written for the compiler, patched
  into the modules an adapter names:
  - the interpreter runs a kernel's `for i in range(n)` over Python ints, and a kernel calling
    `i.to(tl.int64)` on its loop index needs interpreter scalars: `range_in` get such a `range`;
  - the interpreter swaps `tl.gather` for its own only while a kernel runs, so a `gather` bound at
    import is the compiler's: `gather_in` get one that looks tl.gather up at call time.
"""
import builtins
import os
import tempfile
import warnings


def default_cache():
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(tempfile.gettempdir(), "kda-triton-cache"))
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")


def first_config():
    from triton.runtime.autotuner import Autotuner

    prune = Autotuner.prune_configs
    Autotuner.prune_configs = lambda self, *args, **kwargs: prune(self, *args, **kwargs)[:1]


def interpret():
    os.environ["TRITON_INTERPRET"] = "1"
    warnings.simplefilter("ignore")  # "Triton is not supported on current platform", overflow in exp
    first_config()


def bridge_interpreter(range_in=(), gather_in=()):
    from triton.runtime.interpreter import _implicit_cvt
    import triton.language as tl

    def interpreter_range(*bounds):
        ints = (int(b.handle.data.item()) if hasattr(b, "handle") else int(b) for b in bounds)
        for i in builtins.range(*ints):
            yield _implicit_cvt(i)

    for module in range_in:
        module.range = interpreter_range
    for module in gather_in:
        module.gather = lambda src, index, axis: tl.gather(src, index, axis)
