"""Specs of floor_divide and copysign (gpugrad/ops/elementwise/numpy_names.py); the bitwise ops and isclose are not recorded."""
import numpy as np

import gpugrad as gg

from . import OpSpec

S = (3, 4)


def away_from_jumps(rng):
    """x1 whose quotient by x2 stays at least 0.1 from an integer (floor_divide is flat between its jumps)."""
    x2 = rng.uniform(0.5, 2.0, size=(4,)) * rng.choice([-1, 1], size=(4,))
    q = rng.integers(-3, 3, size=S) + rng.uniform(0.1, 0.9, size=S)
    return [q * x2, x2]


def signs_away_from_zero(rng):
    """x1 and x2 at least 0.2 from 0 (copysign's kinks), x2 broadcast along rows."""
    x1 = rng.uniform(0.2, 2.0, size=S) * rng.choice([-1, 1], size=S)
    x2 = rng.uniform(0.2, 2.0, size=(4,)) * rng.choice([-1, 1], size=(4,))
    return [x1, x2]


SPECS = [
    OpSpec("FloorDiv", gg.floor_divide, [S, (4,)], draw=away_from_jumps),
    OpSpec("Copysign", gg.copysign, [S, (4,)], draw=signs_away_from_zero),
]
