"""Specs of the arithmetic, math and activation ops and their fused gradients."""
import numpy as np

import gpugrad as gg
from gpugrad import ops

from . import OpSpec

S = (3, 4)


def positive(*shapes, low=0.5, high=2.0):
    return lambda rng: [rng.uniform(low, high, size=s) for s in shapes]


def distinct_pair(rng):
    """Two arrays whose elements differ by at least 0.2 (no ties for max/min)."""
    x = rng.uniform(-2, 2, size=S)
    gap = rng.uniform(0.2, 1.0, size=S) * rng.choice([-1, 1], size=S)
    return [x, x + gap]


def distinct_pair_and_dy(rng):
    return distinct_pair(rng) + [rng.uniform(-1, 1, size=S)]


def both_outputs(fused_grad):
    """A function of the fused two-output gradient that depends on both outputs."""
    def fn(*xs):
        gx, gy = fused_grad(*xs)
        return gx * 2.0 + gy

    return fn


def with_exact_zeros(rng):
    """Values in [-2, 2] with every third one exactly 0 (where x ** (y - 1) is inf or NaN)."""
    x = rng.uniform(-2, 2, size=S)
    return [np.where(np.arange(x.size).reshape(S) % 3 == 0, 0.0, x)]


def clip_with_tensor_bounds(crossed):
    """x away from bounds that broadcast against it ((4,) and (3, 1)); ``crossed``: lo > hi (NumPy's clip gives hi)."""
    def draw(rng):
        x = rng.choice([-1.5, -0.5, 0.3, 0.8, 1.7], size=S) + rng.uniform(-0.1, 0.1, S)
        lo, hi = rng.uniform(-1.1, -0.9, (4,)), rng.uniform(0.9, 1.1, (3, 1))
        return [x, -lo, -hi] if crossed else [x, lo, hi]
    return draw


def away_from_clip_bounds(rng):
    """x away from the bounds -1 and 1 of clip, and an upstream gradient."""
    x = rng.choice([-1.5, -0.5, 0.3, 0.8, 1.7], size=S) + rng.uniform(-0.1, 0.1, S)
    return [x, rng.uniform(-1, 1, size=S)]


SPECS = [
    # arithmetic (with broadcasting)
    OpSpec("Add", gg.add, [S, (4,)]),
    OpSpec("Sub", gg.subtract, [(1, 4), S]),
    OpSpec("Mul", gg.multiply, [S, (3, 1)]),
    OpSpec("Div", gg.divide, [S, (4,)], draw=lambda rng: [rng.uniform(-2, 2, S), rng.uniform(0.5, 2, (4,))]),
    OpSpec("DivGrad", lambda x, y, dy: ops.div_grad(x, y, dy)[1], [S, S, S],
           draw=lambda rng: [rng.uniform(-2, 2, S), rng.uniform(0.5, 2, S), rng.uniform(-1, 1, S)]),
    OpSpec("DivGrad", lambda x, y, dy: ops.div_grad(x, y, dy)[0] * 2 + ops.div_grad(x, y, dy)[1],
           [S, S, S], label="both",
           draw=lambda rng: [rng.uniform(-2, 2, S), rng.uniform(0.5, 2, S), rng.uniform(-1, 1, S)]),
    OpSpec("Neg", gg.negative, [S]),
    OpSpec("Pow", gg.power, [S, S], draw=positive(S, S)),
    OpSpec("Pow", lambda x: gg.power(x, 3.0), [S], label="scalar_exponent"),
    # x ** 0 and x ** 1 at x = 0: every derivative finite (no 0 * 0 ** -1)
    OpSpec("Pow", lambda x: gg.power(x, 0.0), [S], draw=with_exact_zeros, label="zeroth_power_at_zero"),
    OpSpec("Pow", lambda x: gg.power(x, 1.0), [S], draw=with_exact_zeros, label="first_power_at_zero"),
    OpSpec("Abs", gg.abs, [S], away_from_zero=0.1),
    OpSpec("Maximum", gg.maximum, [S, S], draw=distinct_pair),
    OpSpec("Minimum", gg.minimum, [S, S], draw=distinct_pair),
    OpSpec("Where", lambda x, y: gg.where(np.arange(12).reshape(S) % 3 == 0, x, y), [S, (4,)]),
    OpSpec("Clip", lambda x: gg.clip(x, -1.0, 1.0), [S],
           draw=lambda rng: [rng.choice([-1.5, -0.5, 0.3, 0.8, 1.7], size=S) + rng.uniform(-0.1, 0.1, S)]),
    OpSpec("Clip", gg.clip, [S, (4,), (3, 1)], draw=clip_with_tensor_bounds(False), label="tensor_bounds"),
    OpSpec("Clip", gg.clip, [S, (4,), (3, 1)], draw=clip_with_tensor_bounds(True), label="crossed_bounds"),
    OpSpec("Sign", gg.sign, [S], away_from_zero=0.1),
    # math
    OpSpec("Square", gg.square, [S]),
    OpSpec("SquareGrad", ops.square_grad, [S, S]),
    OpSpec("Sqrt", gg.sqrt, [S], draw=positive(S)),
    OpSpec("SqrtGrad", ops.sqrt_grad, [S, S], draw=positive(S, S)),
    OpSpec("Rsqrt", gg.rsqrt, [S], draw=positive(S)),
    OpSpec("RsqrtGrad", ops.rsqrt_grad, [S, S], draw=positive(S, S)),
    OpSpec("Reciprocal", gg.reciprocal, [S], draw=positive(S)),
    OpSpec("ReciprocalGrad", ops.reciprocal_grad, [S, S]),
    OpSpec("Exp", gg.exp, [S]),
    OpSpec("ExpGrad", ops.exp_grad, [S, S], draw=positive(S, S)),
    OpSpec("Log", gg.log, [S], draw=positive(S)),
    OpSpec("LogGrad", ops.log_grad, [S, S], draw=positive(S, S)),
    OpSpec("Cbrt", gg.cbrt, [S], away_from_zero=0.3),
    OpSpec("CbrtGrad", ops.cbrt_grad, [S, S], away_from_zero=0.3),
    OpSpec("Expm1", gg.expm1, [S]),
    OpSpec("Log1p", gg.log1p, [S], draw=positive(S, low=-0.5)),
    OpSpec("Sin", gg.sin, [S]),
    OpSpec("Cos", gg.cos, [S]),
    # activations
    OpSpec("Tanh", gg.tanh, [S]),
    OpSpec("TanhGrad", ops.tanh_grad, [S, S], low=-0.9, high=0.9),
    OpSpec("Sigmoid", gg.sigmoid, [S], low=-4, high=4),
    OpSpec("SigmoidGrad", ops.sigmoid_grad, [S, S], draw=positive(S, S, low=0.05, high=0.95)),
    OpSpec("Relu", gg.relu, [S], away_from_zero=0.1),
    OpSpec("ReluGrad", ops.relu_grad, [S, S], away_from_zero=0.1),
    OpSpec("LeakyRelu", lambda x: gg.leaky_relu(x, alpha=0.1), [S], away_from_zero=0.1),
    OpSpec("LeakyReluGrad", lambda x, dy: ops.leaky_relu_grad(x, dy, alpha=0.1), [S, S], away_from_zero=0.1),
    OpSpec("Elu", gg.elu, [S], away_from_zero=0.1),
    OpSpec("EluGrad", ops.elu_grad, [S, S], away_from_zero=0.1),
    OpSpec("Softplus", gg.softplus, [S], low=-5, high=5),
    OpSpec("SoftplusGrad", ops.softplus_grad, [S, S]),
    OpSpec("Softsign", gg.softsign, [S], away_from_zero=0.1),
    OpSpec("SoftsignGrad", ops.softsign_grad, [S, S], away_from_zero=0.1),
    # fused gradients of the arithmetic ops
    OpSpec("AbsGrad", ops.abs_grad, [S, S], away_from_zero=0.1),
    OpSpec("PowGrad", both_outputs(ops.pow_grad), [S, S, S],
           draw=lambda rng: [rng.uniform(0.5, 2, S), rng.uniform(0.5, 2, S), rng.uniform(-1, 1, S)]),
    OpSpec("PowGrad", lambda x, dy: ops.pow_grad(x, gg.tensor(3.0, dtype=x.dtype, device=x.device), dy)[0], [S, S],
           label="scalar_exponent"),
    OpSpec("MaximumGrad", both_outputs(ops.maximum_grad), [S, S, S], draw=distinct_pair_and_dy),
    OpSpec("MinimumGrad", both_outputs(ops.minimum_grad), [S, S, S], draw=distinct_pair_and_dy),
    OpSpec("ClipGrad", lambda x, dy: ops.clip_grad(x, dy, -1.0, 1.0), [S, S], draw=away_from_clip_bounds),
]
