"""Specs of the special functions of gpugrad/ops/elementwise/special_functions.py (lgamma, digamma, polygamma, erfc, erfinv,
xlogy, xlog1py, i0e, i1e)."""
import numpy as np

import gpugrad as gg

from . import OpSpec

S = (3, 4)


def away_from_poles(rng):
    """Values in (-3.5, 4) at least 0.15 from the poles 0, -1, -2, -3 of lgamma, digamma and polygamma."""
    x = rng.uniform(-3.5, 4.0, size=S)
    return [np.where((x < 0.15) & (np.abs(x - np.rint(x)) < 0.15), np.rint(x) + 0.3, x)]


def xlog_pair(shift):
    """x with exact zeros (where the function is 0 and its x gradient still log(y)) and y above ``shift``,
    broadcast along rows."""
    def draw(rng):
        x = rng.uniform(-2, 2, size=S)
        x[0, :2] = 0.0
        return [x, rng.uniform(shift + 0.3, shift + 3.0, size=(4,))]
    return draw


SPECS = [
    OpSpec("Lgamma", gg.lgamma, [S], draw=away_from_poles),
    OpSpec("Lgamma", gg.lgamma, [S], low=5.0, high=40.0, label="large"),
    OpSpec("Digamma", gg.digamma, [S], draw=away_from_poles),
    OpSpec("Polygamma", lambda x: gg.polygamma(1, x), [S], draw=away_from_poles),
    OpSpec("Polygamma", lambda x: gg.polygamma(3, x), [S], low=0.5, high=6.0, label="third"),
    OpSpec("Erfc", gg.erfc, [S], low=-3.0, high=3.0),
    OpSpec("Erfinv", gg.erfinv, [S], low=-0.95, high=0.95),
    OpSpec("Xlogy", gg.xlogy, [S, (4,)], draw=xlog_pair(0.0)),
    OpSpec("Xlog1py", gg.xlog1py, [S, (4,)], draw=xlog_pair(-1.0)),
    OpSpec("I0e", gg.i0e, [S], low=-12.0, high=12.0, away_from_zero=0.1),
    OpSpec("I1e", gg.i1e, [S], low=-12.0, high=12.0, away_from_zero=0.1),
    OpSpec("I1e", gg.i1e, [(3,)], draw=lambda rng: [np.array([0.0, 1e-3, -2.0])], label="at_zero", order=1),
]
