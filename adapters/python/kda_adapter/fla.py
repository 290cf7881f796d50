"""The keyword arguments FLA's KDA entry points take, shared by its forks in SGLang and vLLM."""
from .dtypes import text


def fla_options(case):
    """scale, use_qk_l2norm_in_kernel, use_gate_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval,
    lower_bound, A_log, dt_bias, cu_seqlens from the case (A_log and dt_bias only with the gate in the
    kernel); an adapter drops or renames what its fork lacks."""
    a = case.attrs
    gate = bool(a["gate_in_kernel"])
    return dict(
        scale=float(a["scale"]) if "scale" in a else None,
        use_qk_l2norm_in_kernel=bool(a["l2norm_qk"]),
        use_gate_in_kernel=gate,
        use_beta_sigmoid_in_kernel=bool(a["beta_from_logits"]),
        allow_neg_eigval=bool(a["allow_neg_eigval"]),
        lower_bound=float(a["lower_bound"]) if "lower_bound" in a else None,
        A_log=case.optional("A_log") if gate else None,
        dt_bias=case.optional("dt_bias") if gate else None,
        cu_seqlens=case.optional("cu_seqlens"),
    )


def state_v_first(case):
    """Whether the case's states are stored [V, K] (FLA's state_v_first)."""
    return text(case.attrs["state_layout"]) == "VK"
