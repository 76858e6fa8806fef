"""Specs of the reductions: sum mean max min prod (and its ProdOthers) logsumexp var std."""
import numpy as np

import gpugrad as gg
from gpugrad import ops

from . import OpSpec

S = (3, 4)
T = (2, 3, 4)


def distinct(shape):
    """Values at least 0.2 apart in each array, so max/min has no near-ties."""
    def draw(rng):
        n = int(np.prod(shape))
        values = np.linspace(-2.0, 2.0, n) + rng.uniform(-0.05, 0.05, n)
        return [rng.permutation(values).reshape(shape)]
    return draw


def two_way_ties(rng):
    """Rows whose maximum and minimum each occur exactly twice."""
    rows = []
    for _ in range(3):
        hi, lo = rng.uniform(1.0, 2.0), rng.uniform(-2.0, -1.0)
        rows.append(rng.permutation([hi, hi, lo, lo, rng.uniform(-0.5, 0.5)]))
    return [np.array(rows)]


def with_zeros(rng):
    """Rows with no, one, two and three zeros: every branch of the prod gradient."""
    x = rng.uniform(0.5, 1.5, size=(4, 5)) * rng.choice([-1, 1], size=(4, 5))
    x[1, 2] = 0.0
    x[2, [0, 3]] = 0.0
    x[3, [1, 2, 4]] = 0.0
    return [x]


def away_from_zero(shape, low=0.5, high=1.5):
    return lambda rng: [rng.uniform(low, high, size=shape) * rng.choice([-1, 1], size=shape)]


SPECS = [
    # sum, mean
    OpSpec("Sum", gg.sum, [S]),
    OpSpec("Sum", lambda x: gg.sum(x, axis=0), [S], label="axis0"),
    OpSpec("Sum", lambda x: gg.sum(x, axis=-1, keepdims=True), [S], label="last_keepdims"),
    OpSpec("Sum", lambda x: gg.sum(x, axis=(0, 2)), [T], label="tuple"),
    OpSpec("Sum", lambda x: x.sum(axis=(-1, 0), keepdims=True), [T], label="tuple_keepdims"),
    OpSpec("Mean", gg.mean, [S]),
    OpSpec("Mean", lambda x: gg.mean(x, axis=1), [S], label="axis1"),
    OpSpec("Mean", lambda x: gg.mean(x, axis=(1, 2), keepdims=True), [T], label="tuple_keepdims"),
    OpSpec("Mean", lambda x: x.mean(axis=-2), [T], label="negative"),
    # max, min
    OpSpec("Max", gg.max, [S], draw=distinct(S)),
    OpSpec("Max", lambda x: gg.max(x, axis=1), [S], draw=distinct(S), label="axis1"),
    OpSpec("Max", lambda x: x.max(axis=(0, 2), keepdims=True), [T], draw=distinct(T), label="tuple"),
    OpSpec("Max", lambda x: gg.max(x, axis=1), [(3, 5)], draw=two_way_ties, order=1, label="ties"),
    OpSpec("Min", gg.min, [S], draw=distinct(S)),
    OpSpec("Min", lambda x: gg.min(x, axis=0, keepdims=True), [S], draw=distinct(S), label="axis0"),
    OpSpec("Min", lambda x: x.min(axis=-1), [T], draw=distinct(T), label="negative"),
    OpSpec("Min", lambda x: gg.min(x, axis=1), [(3, 5)], draw=two_way_ties, order=1, label="ties"),
    # prod and the product of the others
    OpSpec("Prod", gg.prod, [S], draw=away_from_zero(S)),
    OpSpec("Prod", lambda x: gg.prod(x, axis=1), [(4, 5)], draw=with_zeros, label="zeros"),
    OpSpec("Prod", lambda x: x.prod(axis=(0, 2), keepdims=True), [T], draw=away_from_zero(T), label="tuple"),
    OpSpec("Prod", lambda x: gg.prod(x, axis=0), [(5, 4)], label="zeros_axis0",
           draw=lambda rng: [with_zeros(rng)[0].T]),
    OpSpec("ProdOthers", lambda x: ops.prod_others(x, axis=1), [S], draw=away_from_zero(S)),
    OpSpec("ProdOthers", lambda x: ops.prod_others(x, axis=(0, 2)), [T], draw=away_from_zero(T),
           label="tuple"),
    # NOTE: at zeros prod_others' own gradient is exact; differentiating it again is not
    OpSpec("ProdOthers", lambda x: ops.prod_others(x, axis=1), [(4, 5)], draw=with_zeros, order=1,
           label="zeros"),
    # logsumexp, var, std
    OpSpec("LogSumExp", gg.logsumexp, [S]),
    OpSpec("LogSumExp", lambda x: gg.logsumexp(x, axis=1), [S], label="axis1"),
    OpSpec("LogSumExp", lambda x: x.logsumexp(axis=(0, 2), keepdims=True), [T], label="tuple"),
    OpSpec("Var", gg.var, [S]),
    OpSpec("Var", lambda x: gg.var(x, axis=0, ddof=1), [S], label="ddof1"),
    OpSpec("Var", lambda x: x.var(axis=(1, 2), keepdims=True), [T], label="tuple"),
    OpSpec("Std", gg.std, [S]),
    OpSpec("Std", lambda x: gg.std(x, axis=1, ddof=1), [S], label="ddof1"),
    OpSpec("Std", lambda x: x.std(axis=(-1, 0), keepdims=True), [T], label="tuple"),
    OpSpec("Std", lambda x: gg.std(x, axis=1), [(3, 1)], label="one_element"),  # constant 0: gradient 0, not 0 / 0
]
