#!/usr/bin/env python3
"""The minimax polynomials of the chunked kernel's softplus gate (decode_math.hpp, softplus_decay).

Fits, by Lawson's iteration (reweighted least squares converging to the minimax solution) on 4000
Chebyshev nodes, with errors relative to the function:
  2^f on [-1/2, 1/2], degree 6, as 1 + f q(f)      (exp2_fraction)
  log1p(y) on [0, 1], degree 10 in y, as y + y^2 q(y) (log1p_unit)
and prints each one's relative error in exact arithmetic and its coefficients rounded to fp32, highest
degree first, as the header writes them. Needs numpy and mpmath (pip install numpy mpmath).
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def minimax_relative(func, lo, hi, powers, iterations=30, nodes=4000):
    xs = np.array([float(mp.mpf(lo) + (mp.mpf(hi) - lo) * (1 - mp.cos(mp.pi * (k + 0.5) / nodes)) / 2)
                   for k in range(nodes)])
    fx = np.array([float(func(mp.mpf(x))) for x in xs])
    basis = np.stack([xs ** p for p in powers], 1)
    weights = np.ones(nodes)
    for _ in range(iterations):
        scaled = weights / np.abs(fx)
        coefficients, *_ = np.linalg.lstsq(basis * scaled[:, None], fx * scaled, rcond=None)
        error = np.abs((basis @ coefficients - fx) / fx)
        weights = weights * (error / error.max()) ** 0.5 + 1e-12
        weights /= weights.sum()
    return coefficients, error.max()


def show(name, coefficients, error):
    print(f"{name}: relative error {error:.2e}")
    print("  " + ", ".join(f"{np.float32(c):.9e}f" for c in reversed(coefficients)))


show("exp2_fraction (2^f, |f| <= 1/2)", *minimax_relative(lambda f: mp.power(2, f), -0.5, 0.5, range(7)))
show("log1p_unit (log1p(y), 0 <= y <= 1)", *minimax_relative(mp.log1p, 1e-12, 1.0, range(1, 11)))
