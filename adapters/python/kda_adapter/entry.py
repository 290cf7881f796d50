"""One code path of a kernel library, as the kit serves it: capabilities, profile, call, rejections."""
from .rejections import RejectionTable

ARITHMETIC = ("fp32", "tf32", "bf16-operands", "f16-operands")  # the handshake's `arithmetic=` values


class EntryError(Exception):
    """A case the entry cannot express (another state source, an output the library does not return).
    Raised by the kit when Entry.accepts gives a reason; the entry's rejection table maps it to a rule."""


class Entry:
    """name: the entry (--entry NAME); profile: the contract profile; capabilities: handshake key ->
    value string, or a function of the parsed arguments giving that dict; run(case, lib): the call,
    writing into the case's output views; rejections: (regex on "Type: message", rule) rows;
    arithmetic: what the kernel computes in (ARITHMETIC), or a function of the arguments giving it;
    accepts(case): None, or why the entry cannot express the case."""

    def __init__(self, name, profile, capabilities, run, rejections=(), arithmetic="fp32", accepts=None):
        self.name, self.profile, self.capabilities, self.run = name, profile, capabilities, run
        self.rejections, self.arithmetic, self.accepts = list(rejections), arithmetic, accepts
        self.table = RejectionTable(self.rejections)

    def handshake(self, adapter, args):
        """The handshake line. --dtype sets the input and output dtypes, --head-dims (unless 'any') the key
        and value head dims; checks_contract=1 when the entry maps exceptions to rules; arithmetic= when
        it is not fp32 (absent means fp32)."""
        caps = dict(self.capabilities(args) if callable(self.capabilities) else self.capabilities)
        if getattr(args, "dtype", None):
            caps["input_dtypes"] = caps["output_dtypes"] = args.dtype
        if getattr(args, "head_dims", None) and args.head_dims != "any":
            caps["key_head_dims"] = caps["value_head_dims"] = args.head_dims
        if self.rejections:
            caps["checks_contract"] = "1"
        arithmetic = self.arithmetic(args) if callable(self.arithmetic) else self.arithmetic
        if arithmetic not in ARITHMETIC:
            raise ValueError(f"entry {self.name}: arithmetic {arithmetic!r} is not one of {', '.join(ARITHMETIC)}")
        if arithmetic != "fp32":
            caps["arithmetic"] = arithmetic
        for key, value in caps.items():
            if not str(value) or len(str(value).split()) != 1:
                raise ValueError(f"entry {self.name}: capability {key}={value!r} must be one word")
        return " ".join([f"kda-adapter 1 {adapter} {self.profile}"] + [f"{k}={v}" for k, v in caps.items()])
