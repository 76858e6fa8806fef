"""gg.linalg: NumPy's ``numpy.linalg`` on tensors (CuPy's ``cupy.linalg`` on a GPU), differentiable.

The ops live in :mod:`gpugrad.ops.matrix.decompositions` with their gradients; this
module is their public namespace, as ``numpy.linalg`` is NumPy's.

Example:
    >>> import gpugrad as gg
    >>> callable(gg.linalg.__getattr__) if hasattr(gg.linalg, "__getattr__") else True
    True
"""
from .ops.matrix import decompositions as _decompositions
from .ops.matrix.decompositions import *  # noqa: F401,F403

__all__ = list(_decompositions.__all__)
