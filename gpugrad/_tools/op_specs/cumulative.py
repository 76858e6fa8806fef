"""Specs of the cumulative ops: cumsum cumprod (its zero cases too), and the compositions diff gradient trapezoid."""

import gpugrad as gg

from . import OpSpec
from .reductions import away_from_zero

S = (3, 4)
T = (2, 3, 4)


def one_zero(rng):
    """Rows along axis 1 with no zero, one zero (first, inside, last)."""
    x = rng.uniform(0.5, 1.5, size=(4, 5)) * rng.choice([-1, 1], size=(4, 5))
    x[1, 0] = 0.0
    x[2, 2] = 0.0
    x[3, 4] = 0.0
    return [x]


def two_zeros(rng):
    """Rows along axis 1 with two zeros (apart, adjacent) and three."""
    x = rng.uniform(0.5, 1.5, size=(3, 5)) * rng.choice([-1, 1], size=(3, 5))
    x[0, [1, 3]] = 0.0
    x[1, [2, 3]] = 0.0
    x[2, [0, 2, 4]] = 0.0
    return [x]


def positive(shape):
    return lambda rng: [rng.uniform(0.5, 2.0, size=shape) for shape in shape]


SPECS = [
    OpSpec("CumSum", gg.cumsum, [S]),
    OpSpec("CumSum", lambda x: gg.cumsum(x, axis=0), [S], label="axis0"),
    OpSpec("CumSum", lambda x: x.cumsum(axis=-1), [T], label="last"),
    OpSpec("CumProd", gg.cumprod, [S], draw=away_from_zero(S)),
    OpSpec("CumProd", lambda x: gg.cumprod(x, axis=1), [T], draw=away_from_zero(T), label="axis1"),
    OpSpec("CumProd", lambda x: x.cumprod(axis=1), [(4, 5)], draw=one_zero, label="one_zero"),
    OpSpec("CumProd", lambda x: gg.cumprod(x, axis=1), [(3, 5)], draw=two_zeros, label="two_zeros"),
    OpSpec("CumProd", lambda x: gg.cumprod(x, axis=0), [(5, 4)], label="zeros_axis0",
           draw=lambda rng: [one_zero(rng)[0].T]),
    OpSpec("CumProd", gg.cumprod, [(3, 5)], draw=two_zeros, label="zeros_flat"),
    # compositions: the op type each records
    OpSpec("Sub", gg.diff, [S], label="diff"),
    OpSpec("Sub", lambda x: gg.diff(x, n=2, axis=0), [(4, 3)], label="diff_n2"),
    OpSpec("Sub", lambda x, p: gg.diff(x, axis=1, prepend=p, append=1.5), [S, (3, 1)], label="diff_prepend"),
    OpSpec("Concat", gg.gradient, [(5,)], label="gradient"),
    OpSpec("Concat", lambda x: gg.gradient(x, 0.5, axis=1), [S], label="gradient_spacing"),
    OpSpec("Concat", lambda x: gg.stack(gg.gradient(x)), [S], label="gradient_all_axes"),
    OpSpec("Sum", gg.trapezoid, [S], label="trapezoid"),
    OpSpec("Sum", lambda y: gg.trapezoid(y, dx=0.5, axis=0), [S], label="trapezoid_dx"),
    OpSpec("Sum", lambda y, x: gg.trapezoid(y, x=x), [S, (4,)], label="trapezoid_x"),
    OpSpec("Sum", lambda y, x: gg.trapezoid(y, x=x, axis=0), [S, S], label="trapezoid_x_full"),
]
