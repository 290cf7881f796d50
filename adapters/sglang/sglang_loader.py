"""Imports SGLang 0.5.23's KDA kernel modules without importing SGLang.

`import sglang` runs sglang/__init__.py, which pulls in the serving engine (its Rust extensions, zmq,
fastapi, the model registry, ...), none of which the KDA kernels use. This loader registers empty
packages for sglang, sglang.kernels, sglang.kernels.ops and sglang.kernels.ops.attention whose
__path__ is the real folder, so `import sglang.kernels.ops.attention.fla.kda` finds the real kernel
files without running any package __init__ above them. The kernels import a few helpers from
modules that would drag the engine in again (sglang.srt.utils, sglang.kernels.jit.utils): those are
given here as small stand-ins that answer the same questions the same way (which device this is,
whether it launches with programmatic dependent launch), listed in STAND_INS.

find_root() locates the folder holding `sglang/` (scripts/pack-sglang.sh puts exactly the needed
files under .carry/python/sglang): $SGLANG_KDA_ROOT, else the first sys.path entry that has it.
"""
import functools
import importlib
import os
import sys
import types

KDA_FILE = os.path.join("sglang", "kernels", "ops", "attention", "fla", "kda.py")
STUB_PACKAGES = ("sglang", "sglang.kernels", "sglang.kernels.ops", "sglang.kernels.ops.attention")
# The helpers the KDA files import from engine modules, with what each stand-in returns.
STAND_INS = {
    "sglang.srt.utils": "is_cuda, is_hip, is_cpu, is_npu, is_xpu, get_device_sm, is_sm90_supported, "
                        "is_gfx95_supported, cpu_has_amx_support, cdiv, next_power_of_2",
    "sglang.srt.utils.common": "torch_release, is_cuda",
    "sglang.kernels.jit.utils": "is_arch_support_pdl (CUDA capability major >= 9), get_jit_cuda_arch",
}


def find_root():
    candidates = [os.environ.get("SGLANG_KDA_ROOT")] + sys.path
    for root in filter(None, candidates):
        if os.path.isfile(os.path.join(root, KDA_FILE)):
            return os.path.abspath(root)
    raise ImportError(f"SGLang's KDA kernels not found: no {KDA_FILE} under $SGLANG_KDA_ROOT or sys.path "
                      "(run scripts/pack-sglang.sh, or set SGLANG_KDA_ROOT to an unpacked sglang 0.5.23 wheel)")


def _package(name, path=None):
    module = types.ModuleType(name)
    module.__path__ = [path] if path else []
    module.__package__ = name
    sys.modules[name] = module
    return module


def _device_stand_ins(torch):
    cuda = torch.cuda.is_available() and torch.version.cuda is not None
    capability = torch.cuda.get_device_capability() if cuda else (0, 0)
    sm = capability[0] * 10 + capability[1]

    utils = _package("sglang.srt.utils")
    for name, value in dict(is_cuda=cuda, is_hip=torch.version.hip is not None, is_cpu=False, is_npu=False,
                            is_xpu=False, get_device_sm=sm, is_sm90_supported=cuda and sm >= 90,
                            is_gfx95_supported=False, cpu_has_amx_support=False).items():
        setattr(utils, name, functools.partial(lambda v: v, value))
    utils.cdiv = lambda a, b: -(-a // b)
    utils.next_power_of_2 = lambda n: 1 if n <= 1 else 1 << (int(n) - 1).bit_length()
    common = types.ModuleType("sglang.srt.utils.common")
    common.torch_release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:3] if p.isdigit())
    common.is_cuda = utils.is_cuda
    sys.modules[common.__name__] = common
    utils.common = common

    jit = _package("sglang.kernels.jit.utils")
    arch = types.SimpleNamespace(major=capability[0], minor=capability[1])
    jit.get_jit_cuda_arch = lambda: arch
    jit.is_arch_support_pdl = lambda: cuda and capability[0] >= 9


def install(torch):
    """Registers the stub packages and stand-ins once; returns the root folder."""
    if getattr(sys.modules.get("sglang"), "__kda_root__", None):
        return sys.modules["sglang"].__kda_root__
    root = find_root()
    for name in STUB_PACKAGES:
        _package(name, os.path.join(root, *name.split(".")))
    sys.modules["sglang"].__kda_root__ = root
    _package("sglang.srt")
    _package("sglang.kernels.jit")
    _device_stand_ins(torch)
    return root


def load(torch, module):
    """The SGLang module `module` (a dotted name under sglang.), imported from its file."""
    install(torch)
    return importlib.import_module(module)
