#!/usr/bin/env bash
# Unpacks the Python modules of flashinfer-python 0.7.2 that flashinfer.kda imports (its static import
# closure, found by reading the modules' import statements; flashinfer/__init__.py, which imports the
# whole library, is left out: adapters/flashinfer/flashinfer_adapter.py loads them under a stub package)
# into .carry/python/flashinfer, with the pure-Python apache-tvm-ffi it needs at import time.
# The CuTe DSL runtime the KDA kernels compile with (nvidia-cutlass-dsl-libs-cu13 4.8.0, 87.7 MiB) is
# not packed: it does not fit a GPU call's 64 MiB carry (conformance/plan/flashinfer.json, not_run).
# Wheels come from $FLASHINFER_WHEELS (default /tmp/wheels), downloaded there with pip when absent.
set -euo pipefail
cd "$(dirname "$0")/.."
wheels=${FLASHINFER_WHEELS:-/tmp/wheels}
wheel=flashinfer_python-0.7.2-py3-none-any.whl
dest=.carry/python
python=${PYTHON:-python3}
if [ ! -f "$wheels/$wheel" ]; then
  mkdir -p "$wheels"
  "$python" -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" flashinfer-python==0.7.2
fi
rm -rf "$dest/flashinfer"
mkdir -p "$dest"
"$python" - "$wheels/$wheel" "$dest" <<'PY'
import ast, sys, zipfile

wheel, dest = sys.argv[1:]
archive = zipfile.ZipFile(wheel)
names = set(archive.namelist())

def source(module):
    """The wheel path of a flashinfer module (a file or a package's __init__), or None."""
    base = module.replace(".", "/")
    for path in (base + ".py", base + "/__init__.py"):
        if path in names:
            return path
    return None

def imports(module, path):
    """Every flashinfer module `path` imports (relative imports resolved; each a module or a package)."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(archive.read(path))):
        if isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - node.level + 1]) if node.level else ""
            target = ".".join(p for p in (base, node.module or "") if p)
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.split(".")[0] == "flashinfer" and source(m)}

todo, seen = ["flashinfer.kda"], set()
while todo:
    module = todo.pop()
    if module in seen or module == "flashinfer":
        continue
    path = source(module)
    if path is None:  # a folder without __init__.py: nothing to run
        continue
    seen.add(module)
    todo.extend(imports(module, path))
    # a submodule's parent packages run their __init__ first
    parent = module.rpartition(".")[0]
    if parent and parent != "flashinfer":
        todo.append(parent)
for module in sorted(seen):
    archive.extract(source(module), dest)
print(f"{len(seen)} flashinfer modules")
PY
tvm=$(ls "$wheels"/apache_tvm_ffi-0.1.12-*.whl 2>/dev/null | head -1 || true)
if [ -z "$tvm" ]; then
  "$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d "$wheels" apache-tvm-ffi==0.1.12
  tvm=$(ls "$wheels"/apache_tvm_ffi-0.1.12-*.whl | head -1)
fi
"$python" -m zipfile -e "$tvm" "$dest"
du -sh "$dest/flashinfer"
