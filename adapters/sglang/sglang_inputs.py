"""The inputs SGLang's KDA kernels take, made from a kda-oracle case.

SGLang's recurrent kernels (Triton fused_sigmoid_gating_delta_rule_update, the packed decodes, Helion
verify) always form the gate and beta themselves: g = -exp(A_log) * softplus(a + dt_bias) (or the
lower-bound form) and beta = sigmoid(b). A case whose g is already the log-decay, or whose beta is
given as such, is handed to them through the exact inverses, computed in float64 and passed as
float32 (the kernels load both as float32): A_log = 0 and dt_bias = 0 (so -exp(A_log) = -1),
a = softplus^-1(-g) = -g + log(-expm1(g)) (stable for every g < 0), and b = logit(beta). The kernel's
fp32 gate then reproduces g and beta to a few fp32 units in the last place, far inside any tolerance.
"""


def raw_gate(case):
    """(a, A_log, dt_bias, lower_bound) for a kernel that forms the gate itself."""
    torch, g = case.torch, case.view("g")
    if case.attrs["gate_in_kernel"]:
        HV, K = g.shape[2], g.shape[3]
        A_log = case.optional("A_log")
        dt_bias = case.optional("dt_bias")
        A_log = torch.zeros(HV, dtype=torch.float32, device=g.device) if A_log is None else A_log.reshape(-1)
        dt_bias = torch.zeros(HV * K, dtype=torch.float32, device=g.device) if dt_bias is None else dt_bias.reshape(-1)
        lower_bound = float(case.attrs["lower_bound"]) if "lower_bound" in case.attrs else None
        return g, A_log.contiguous(), dt_bias.contiguous(), lower_bound
    y = g.double()  # the log-decay, <= 0
    a = torch.where(y < 0, -y + torch.log(-torch.expm1(y)), torch.full_like(y, -1e4))  # g = 0: no decay
    HV, K = g.shape[2], g.shape[3]
    zeros = lambda n: torch.zeros(n, dtype=torch.float32, device=g.device)  # noqa: E731
    return a.float(), zeros(HV), zeros(HV * K), None


def beta_logits(case):
    """b with sigmoid(b) = the case's beta (the entries declare beta_from_logits=0: beta is given)."""
    p = case.view("beta").double()
    return (case.torch.log(p) - case.torch.log1p(-p)).float()


def cu_seqlens_of(case):
    """The case's cu_seqlens, or arange(B + 1) * T for B rows of T tokens: the packed form SGLang's
    engine hands its varlen-only kernels, with flat() applied to every token tensor."""
    cu = case.optional("cu_seqlens")
    if cu is not None:
        return cu
    q = case.view("q")
    return case.torch.arange(q.shape[0] + 1, dtype=case.torch.int32, device=q.device) * q.shape[1]


def flat(x):
    """[B, T, ...] -> [1, B*T, ...] (a copy only where the view cannot be reshaped)."""
    return x.reshape(1, x.shape[0] * x.shape[1], *x.shape[2:])
