"""main(): an adapter's command line, its library loaded once, then the exec protocol served."""
import argparse
import os
import sys

from . import triton_options
from .buffers import NumpyBuffers, TorchBuffers
from .protocol import serve
from .requests import Requests


def main(entries, load, description, *, library=None, backend="torch", dtype=None, head_dims=None, argv=None):
    """Serves one of `entries` (--entry NAME, default the first) with lib = load(args), called once.

    library: prefixes the handshake name (`<library>-<entry>`; without it the entry's name);
    backend: "torch" (buffers on --device, default cuda when available) or "numpy" (host);
    dtype, head_dims: the defaults of --dtype and --head-dims (None: the entries' own declarations);
    argv: the arguments to parse (default sys.argv[1:])."""
    by_name = {entry.name: entry for entry in entries}
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--entry", choices=list(by_name), default=entries[0].name, help="the code path to serve")
    parser.add_argument("--dtype", choices=["bf16", "f16", "f32", "f64"], default=dtype,
                        help="the activations' and outputs' dtype declared (default: the entry's)")
    parser.add_argument("--head-dims", default=head_dims,
                        help="declared key and value head dims, comma-separated, or 'any' (default: the entry's)")
    parser.add_argument("--device", choices=["cuda", "cpu"],
                        help="where the buffers live (torch backend; default cuda when available)")
    parser.add_argument("--first-config", action="store_true",
                        help="no autotuning: each Triton kernel runs its first config")
    parser.add_argument("--interpret", action="store_true",
                        help="Triton's CPU interpreter (testing without a GPU; slow); implies --device cpu")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    entry = by_name[args.entry]

    triton_options.default_cache()
    if args.interpret:
        triton_options.interpret()
    elif args.first_config:
        triton_options.first_config()
    if backend == "numpy":
        if args.device == "cuda":
            parser.error("--device cuda: this adapter computes on the host (numpy)")
        buffers = NumpyBuffers()
    else:
        import torch
        device = args.device or ("cuda" if torch.cuda.is_available() and not args.interpret else "cpu")
        if args.interpret and device != "cpu":
            parser.error("--interpret runs on the CPU: --device cpu")
        buffers = TorchBuffers(torch, device)
    args.device = buffers.device
    lib = load(args)

    name = f"{library}-{entry.name}" if library else entry.name
    print(f"{name}: entry {entry.name} on {args.device}", file=sys.stderr)
    requests = Requests(entry, lib, buffers, name)
    try:
        serve(entry.handshake(name, args), requests.handle, entry.table, cuda=args.device == "cuda")
    except BrokenPipeError:  # kda-oracle is gone (killed, or timed out): nobody to answer
        os._exit(0)
