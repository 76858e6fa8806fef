"""Counting ops with NumPy's semantics and data-dependent shapes: unique, bincount (no gradient).

Their output shape comes from the values, so each declares
``gpugrad._tracing.state.dynamic_output_shape`` (``gg.function`` runs them eagerly instead of replaying a
shape of an earlier call), and each is declared not differentiable (``Unique``, ``Bincount``), as
TensorFlow declares ``Unique`` and ``Bincount``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..._tracing import state as _trace
from ...errors import DTypeError, IndexOutOfRangeError, ShapeError
from ...registry import NotDifferentiable
from ...tensor import Tensor
from ..base import emit, emit_many, public_ops, unary

if TYPE_CHECKING:
    from ..._typing import TensorLike


def unique(x: TensorLike, return_inverse: bool = False, return_counts: bool = False
           ) -> Tensor | tuple[Tensor, ...]:
    """The sorted distinct elements of ``x`` (flattened), as ``np.unique``; with ``return_inverse`` also the
    int64 indices that rebuild ``x`` from them (of ``x``'s shape, as NumPy 2), with ``return_counts`` the
    int64 count of each. No gradient (op ``Unique``, declared not differentiable).

    Example:
        >>> import gpugrad as gg
        >>> values, inverse, counts = gg.unique(gg.tensor([3, 1, 3, 2]), return_inverse=True, return_counts=True)
        >>> values.numpy().tolist(), inverse.numpy().tolist(), counts.numpy().tolist()
        ([1, 2, 3], [2, 0, 2, 1], [1, 1, 2])
    """
    x = unary(x)
    _trace.dynamic_output_shape("unique (its length comes from the data; op 'Unique')", x)
    xp = x._device.xp
    flat = x._data.reshape(-1)
    order = xp.argsort(flat, kind="stable") if xp is np else xp.argsort(flat)
    s = flat[order]
    first = xp.ones(s.shape, dtype=bool)
    if s.size > 1:
        first[1:] = s[1:] != s[:-1]
        if s.dtype.kind in "fc":  # NaNs are equal here, as np.unique's equal_nan=True
            first[1:] &= ~(xp.isnan(s[1:]) & xp.isnan(s[:-1]))
    group = xp.cumsum(first) - 1  # the distinct value each sorted element is
    values = s[first]
    outs = [values]
    if return_inverse:
        inverse = xp.empty(flat.shape, dtype=np.int64)
        inverse[order] = group
        outs.append(inverse.reshape(x.shape))
    if return_counts:
        starts = xp.nonzero(first)[0]
        ends = xp.concatenate([starts[1:], xp.asarray([s.size], dtype=starts.dtype)])
        outs.append((ends - starts).astype(np.int64))
    tensors = emit_many("Unique", outs, x._device, (x,))
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def bincount(x: TensorLike, weights: TensorLike | None = None, minlength: int = 0) -> Tensor:
    """The number of times each value ``0, 1, ..., max(x)`` occurs in 1-D non-negative integer ``x`` (at least
    ``minlength`` bins), as ``np.bincount``: int64, or with ``weights`` (``x``'s shape) the sum of the weights
    per bin in float64 (NumPy's dtype). No gradient (op ``Bincount``, declared not differentiable).

    Example:
        >>> import gpugrad as gg
        >>> gg.bincount(gg.tensor([0, 2, 2, 3])).numpy().tolist()
        [1, 0, 2, 1]
        >>> gg.bincount(gg.tensor([1, 1]), weights=gg.tensor([0.5, 2.0]), minlength=3).numpy().tolist()
        [0.0, 2.5, 0.0]
    """
    x = unary(x)
    a = x._data
    if a.dtype.kind not in "iub" or a.dtype.kind == "b":
        raise DTypeError(f"op 'Bincount' takes non-negative integers, not {a.dtype}")
    if a.ndim != 1:
        raise ShapeError(f"op 'Bincount' takes a 1-D tensor, not shape {x.shape}")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise ValueError(f"op 'Bincount' takes minlength >= 0, not {minlength!r}")
    _trace.dynamic_output_shape("bincount (its length comes from the data; op 'Bincount')", x)
    xp = x._device.xp
    if a.size:
        facts = xp.stack([a.min().astype(np.int64), a.max().astype(np.int64)])
        low, high = (int(v) for v in (facts if xp is np else facts.get()))  # the one read the shape needs
        if low < 0:
            raise IndexOutOfRangeError(f"op 'Bincount' takes non-negative integers; got {low}")
    else:
        high = -1
    n = max(high + 1, int(minlength))
    inputs = (x,)
    if weights is None:
        out = xp.zeros(n, dtype=np.int64)
        if a.size:
            xp.add.at(out, a, xp.ones(a.shape, dtype=np.int64))
    else:
        w = unary(weights, x)
        if w.shape != x.shape:
            raise ShapeError(f"op 'Bincount': weights of shape {w.shape} must have x's shape {x.shape}")
        out = xp.zeros(n, dtype=np.float64)
        if a.size:
            xp.add.at(out, a, w._data.astype(np.float64))
        inputs = (x, w)
    return emit("Bincount", out, x._device, inputs)


NotDifferentiable("Unique")
NotDifferentiable("Bincount")

TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "unique", "bincount"
    ]
