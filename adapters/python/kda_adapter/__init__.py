"""A kit for Python exec adapters of kda-oracle (adapters/python/README.md): an adapter for one
implementation is its entries (call mapping, capabilities, profile, rejection table) and main().

entry           Entry, EntryError: one code path of a library, and the handshake it declares
cli             main(): the command line, the library loaded once, the protocol served
protocol        the line protocol's loop (handshake, run/quit, errors, a lost CUDA context)
requests        a request file's cases through an entry: timed calls, guard bands checked, results written
case            Case: a request case's buffers between guard bands, strided views onto them
buffers         the numpy (host) and torch (any device) backends of those buffers
persistent      the serving mode's metadata buffers, refilled in place
results         the results file
rejections      exceptions -> contract rules
fla             fla_options(): the keyword arguments of FLA-style entry points
triton_options  the Triton cache, --first-config, --interpret
dtypes          stored dtypes and float64 conversions
"""
from .case import Case
from .cli import main
from .entry import Entry, EntryError
from .fla import fla_options

__all__ = ["Case", "Entry", "EntryError", "fla_options", "main"]
