"""NumPy's functions and ufuncs on tensors (NEP 13 and NEP 18), as CuPy's arrays take them.

``np.exp(t)``, ``np.dot(t, a)``, ``np.linalg.norm(t)``, ``ndarray + t`` run the gpugrad op of the
same meaning, recorded on the active tapes and on the tensor's device; a NumPy function or ufunc
gpugrad has no op for raises a TypeError naming it. Nothing converts a tensor to an ndarray
silently: ``np.asarray(t)`` and ``t.numpy()`` are the explicit way out. So a function written
against ``numpy`` is differentiated by passing it tensors (HIPS autograd's workflow, without
``autograd.numpy``).

Modules: :mod:`.binding` (NumPy's arguments to the op's), :mod:`.ufuncs` (``__array_ufunc__``),
:mod:`.functions` (``__array_function__``'s table), :mod:`.methods` (ndarray's method names),
:mod:`.refusals` (the TypeError and its nearest gpugrad call).

Example:
    >>> import numpy as np, gpugrad as gg
    >>> x = gg.tensor([0.5, 1.0, 2.0], dtype="float64")
    >>> with gg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = np.sum(np.exp(x) * np.array([1.0, 2.0, 3.0]))
    >>> type(y).__name__, np.allclose(tape.gradient(y, x).numpy(), np.exp([0.5, 1.0, 2.0]) * [1, 2, 3])
    ('Tensor', True)
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .binding import qualname
from .functions import FUNCTIONS
from .refusals import unsupported
from .ufuncs import array_ufunc

__all__ = ["FUNCTIONS", "array_function", "array_ufunc", "install"]

_OURS = (Tensor, np.ndarray)


def array_function(self, func, types, args, kwargs):
    """``Tensor.__array_function__``: NumPy's ``func`` as the gpugrad op of the same meaning; a TypeError
    naming ``func`` where gpugrad has none. Another library's array type among the arguments answers
    for itself (NotImplemented here, as NEP 18 asks)."""
    for t in types:
        if not issubclass(t, _OURS) and t.__module__.partition(".")[0] != "cupy":
            return NotImplemented
    entry = FUNCTIONS.get(func)
    if entry is None:
        raise unsupported(qualname(func))
    return entry(func, args, kwargs)


def install():
    """Give :class:`Tensor` its NumPy protocols and ndarray's method names."""
    from . import methods

    Tensor.__array_ufunc__ = array_ufunc
    Tensor.__array_function__ = array_function
    methods.install()
