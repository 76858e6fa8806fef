"""Specs of relu6, selu (and its fused gradient SeluGrad), celu, hardswish and logit (gpugrad/ops/elementwise/activation_variants.py)."""
import numpy as np

import gpugrad as gg

from . import OpSpec

S = (3, 4)


def away_from(bounds, low, high, gap=0.1):
    """Values in [low, high] at least ``gap`` from every kink in ``bounds``."""
    def draw(rng):
        x = rng.uniform(low, high, size=S)
        for b in bounds:
            x = np.where(np.abs(x - b) < gap, b + 2 * gap * np.sign(x - b + 1e-12), x)
        return [x]
    return draw


SPECS = [
    OpSpec("Relu6", gg.relu6, [S], draw=away_from([0.0, 6.0], -2.0, 8.0)),
    OpSpec("Selu", gg.selu, [S], away_from_zero=0.1),
    OpSpec("SeluGrad", gg.raw_ops.selu_grad, [S, S], away_from_zero=0.1),
    OpSpec("Celu", gg.celu, [S], away_from_zero=0.1),
    OpSpec("Celu", lambda x: gg.celu(x, alpha=0.7), [S], away_from_zero=0.1, label="alpha"),
    OpSpec("Hardswish", gg.hardswish, [S], draw=away_from([-3.0, 3.0], -5.0, 5.0)),
    OpSpec("Logit", gg.logit, [S], low=0.05, high=0.95),
    OpSpec("Logit", lambda x: gg.logit(x, eps=0.1), [S], draw=away_from([0.1, 0.9], -0.2, 1.2, gap=0.03), label="eps"),
]
