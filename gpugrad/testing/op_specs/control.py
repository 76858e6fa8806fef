"""Specs of the control ops. StopGradient is declared not differentiable and is tested
in tests/test_ops_forward_shape_indexing.py instead."""
import gpugrad as gg

from . import OpSpec

SPECS = [
    OpSpec("Identity", gg.identity, [(3, 4)]),
    OpSpec("Identity", lambda x: gg.identity(x) * x, [(3, 4)], label="squared"),
]
