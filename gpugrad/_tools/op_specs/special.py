"""Specs of erf, gelu and gelu's fused gradient GeluGrad."""
import gpugrad as gg
from gpugrad import ops

from . import OpSpec

S = (3, 4)

SPECS = [
    OpSpec("Erf", gg.erf, [S], low=-3, high=3),
    OpSpec("Gelu", gg.gelu, [S], low=-4, high=4),
    OpSpec("GeluGrad", ops.gelu_grad, [S, S], low=-3, high=3),
]
SPECS += [
    OpSpec("GeluTanh", lambda x: gg.gelu(x, approximate="tanh"), [S], low=-4, high=4),
]
