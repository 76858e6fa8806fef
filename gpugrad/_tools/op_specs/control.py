"""Specs of the control ops. StopGradient is declared not differentiable and is tested
in tests/test_ops_forward_shape_indexing.py instead."""
import numpy as np

import gpugrad as gg

from . import OpSpec


def _cast_across(x):
    """float64 -> float32 and float32 -> float64: a Cast that changes the dtype either way."""
    return gg.cast(x, np.float32 if x.dtype == np.float64 else np.float64)


SPECS = [
    OpSpec("Identity", gg.identity, [(3, 4)]),
    OpSpec("Identity", lambda x: gg.identity(x) * x, [(3, 4)], label="squared"),
    # near 0 float32 resolves x +- delta (1e-6) to about 1e-13, so central differences stay within 1e-7
    OpSpec("Cast", _cast_across, [(3, 4)], low=-1e-8, high=1e-8),
    OpSpec("Cast", lambda x: _cast_across(x) * _cast_across(x), [(3, 4)], low=-1e-8, high=1e-8, label="squared"),
]
