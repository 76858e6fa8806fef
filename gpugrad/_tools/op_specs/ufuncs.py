"""Specs of the remaining ufuncs (gpugrad/ops/elementwise/ufuncs.py), the newer activations and their fused gradients."""
import numpy as np

import gpugrad as gg
from gpugrad import ops

from . import OpSpec

S = (3, 4)


def uniform(*ranges, shapes=None):
    """Inputs uniform in one (low, high) range each, of shape S (or ``shapes``)."""
    shapes = shapes or [S] * len(ranges)
    return lambda rng: [rng.uniform(lo, hi, size=s) for (lo, hi), s in zip(ranges, shapes)]


def away_from_integers(rng, shape=S):
    """Values in (-3, 3) at least 0.1 from an integer and from a half (rounding is flat there)."""
    fraction = rng.uniform(0.1, 0.4, size=shape) + rng.choice([0.0, 0.5], size=shape)
    return rng.integers(-3, 3, size=shape) + fraction


def mod_pair(rng):
    """x1 whose quotient by x2 stays at least 0.1 from an integer (away from the jumps of mod)."""
    x2 = rng.uniform(0.5, 2.0, size=S) * rng.choice([-1, 1], size=S)
    return [away_from_integers(rng) * x2, x2]


def distinct_pair(rng):
    x = rng.uniform(-2, 2, size=S)
    return [x, x + rng.uniform(0.2, 1.0, size=S) * rng.choice([-1, 1], size=S)]


def away_from(bounds, low=-4.0, high=4.0, gap=0.1):
    """Values in [low, high] at least ``gap`` from every kink in ``bounds``."""
    def draw(rng):
        x = rng.uniform(low, high, size=S)
        for b in bounds:
            x = np.where(np.abs(x - b) < gap, b + gap * np.sign(x - b + 1e-12) * 2, x)
        return [x]

    return draw


SPECS = [
    # trigonometric
    OpSpec("Tan", gg.tan, [S], low=-1.2, high=1.2),
    OpSpec("TanGrad", ops.tan_grad, [S, S]),
    OpSpec("Asin", gg.arcsin, [S], low=-0.9, high=0.9),
    OpSpec("Acos", gg.arccos, [S], low=-0.9, high=0.9),
    OpSpec("Atan", gg.arctan, [S], low=-3, high=3),
    OpSpec("AtanGrad", ops.arctan_grad, [S, S], low=-3, high=3),
    OpSpec("Atan2", gg.arctan2, [S, (4,)], draw=uniform((-2, 2), (0.5, 2), shapes=[S, (4,)])),
    OpSpec("Atan2", gg.arctan2, [S, S], draw=uniform((0.5, 2), (-2, 2)), label="left_half"),
    OpSpec("Hypot", gg.hypot, [S, (3, 1)], away_from_zero=0.3),
    OpSpec("Sinc", gg.sinc, [S], low=-2.5, high=2.5),
    OpSpec("Sinc", gg.sinc, [S], low=-0.009, high=0.009, label="near_zero"),
    OpSpec("Deg2Rad", gg.ops.deg2rad, [S]),
    OpSpec("Rad2Deg", gg.ops.rad2deg, [S]),
    # hyperbolic
    OpSpec("Sinh", gg.ops.sinh, [S]),
    OpSpec("SinhGrad", ops.sinh_grad, [S, S]),
    OpSpec("Cosh", gg.ops.cosh, [S]),
    OpSpec("CoshGrad", ops.cosh_grad, [S, S]),
    OpSpec("Asinh", gg.ops.arcsinh, [S]),
    OpSpec("Acosh", gg.ops.arccosh, [S], low=1.1, high=3.0),
    OpSpec("Atanh", gg.ops.arctanh, [S], low=-0.9, high=0.9),
    # exponents and logarithms
    OpSpec("Exp2", gg.ops.exp2, [S]),
    OpSpec("Log2", gg.ops.log2, [S], low=0.5, high=3.0),
    OpSpec("Log10", gg.ops.log10, [S], low=0.5, high=3.0),
    OpSpec("LogAddExp", gg.ops.logaddexp, [S, (4,)]),
    OpSpec("LogAddExp2", gg.ops.logaddexp2, [(3, 1), S]),
    # binary
    OpSpec("Fmax", gg.ops.fmax, [S, S], draw=distinct_pair),
    OpSpec("Fmin", gg.ops.fmin, [S, S], draw=distinct_pair),
    OpSpec("FloorMod", gg.ops.remainder, [S, S], draw=mod_pair),
    OpSpec("TruncateMod", gg.ops.fmod, [S, S], draw=mod_pair),
    # rounding: a zero gradient, declared
    OpSpec("Floor", gg.ops.floor, [S], draw=lambda rng: [away_from_integers(rng)]),
    OpSpec("Ceil", gg.ops.ceil, [S], draw=lambda rng: [away_from_integers(rng)]),
    OpSpec("Trunc", gg.ops.trunc, [S], draw=lambda rng: [away_from_integers(rng)]),
    OpSpec("Rint", gg.ops.rint, [S], draw=lambda rng: [away_from_integers(rng)]),
    OpSpec("Round", gg.ops.round, [S], draw=lambda rng: [away_from_integers(rng)]),
    OpSpec("Round", lambda x: gg.ops.round(x, -1), [S], draw=lambda rng: [away_from_integers(rng) * 10],
           label="tens"),
    OpSpec("NanToNum", gg.ops.nan_to_num, [S]),
    # activations
    OpSpec("Silu", gg.ops.silu, [S], low=-5, high=5),
    OpSpec("SiluGrad", ops.silu_grad, [S, S], low=-5, high=5),
    OpSpec("Mish", gg.ops.mish, [S], low=-5, high=5),
    OpSpec("HardTanh", lambda x: gg.ops.hard_tanh(x, -1.0, 1.5), [S], draw=away_from([-1.0, 1.5], -3, 3)),
    OpSpec("HardSigmoid", gg.ops.hard_sigmoid, [S], draw=away_from([-3.0, 3.0], -5, 5)),
    OpSpec("LogSigmoid", gg.ops.log_sigmoid, [S], low=-5, high=5),
    OpSpec("LogSigmoidGrad", ops.log_sigmoid_grad, [S, S], low=-5, high=5),
]
