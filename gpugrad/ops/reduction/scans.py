"""Running maxima, minima and log-sum-exps along an axis: cummax, cummin (PyTorch's), logcumsumexp.

On the CPU each is one NumPy ``ufunc.accumulate``; CuPy's ``accumulate`` has only add and multiply, so on
a GPU each is a Hillis-Steele scan (:func:`_scan`: ``ceil(log2 n)`` whole-array steps, each combining every
element with the one ``2**k`` before it). ``cummax``/``cummin`` return ``(values, indices)``; the values
are ``x`` read at the indices (a recorded ``take_along_axis``, so the gradient scatters ``dy`` to them,
PyTorch's ``cummaxmin_backward``). ``logcumsumexp`` (op ``LogCumSumExp``) combines with ``logaddexp``,
stable for any spread of values; its gradient is a scan of affine maps in gpugrad ops (see the rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _dtypes as _dt
from ...errors import DTypeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..elementwise.arithmetic import add, multiply, subtract
from ..base import emit, public_ops, unary
from .cumulative import _along, _reversed
from ..array.indexing import getitem, pad
from ..elementwise.math import exp
from ..array.ordering import take_along_axis

if TYPE_CHECKING:
    from ..._typing import Axis, TensorLike


def _scan(xp, a, axis, ufunc):
    """The inclusive scan of ``a`` along ``axis`` by the associative binary ``ufunc`` (a NumPy or CuPy ufunc)."""
    if xp is np:
        return ufunc.accumulate(a, axis=axis)
    out = a.copy()
    n, step = a.shape[axis], 1
    head = (slice(None),) * axis
    while step < n:
        later, earlier = head + (slice(step, None),), head + (slice(None, n - step),)
        out[later] = ufunc(out[later], out[earlier])  # the right side is computed before the write
        step *= 2
    return out


# ---------------------------------------------------------------- cummax, cummin


def _cumextreme(x, axis, kind):
    op_type = "CumMax" if kind == "max" else "CumMin"
    x = unary(x)
    if x._data.dtype.kind == "c":
        raise DTypeError(f"op {op_type!r} takes real numbers, not {x._data.dtype}")
    x, axis = _along(x, axis, op_type)
    xp = x._device.xp
    a = _dt.wide(x._data)
    running = _scan(xp, a, axis, xp.maximum if kind == "max" else xp.minimum)
    # PyTorch: the index of the last element equal to the running extreme (ties and NaNs take the later one)
    hit = a == running
    if a.dtype.kind in "fc":
        hit |= xp.isnan(a)
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    positions = xp.where(hit, xp.arange(a.shape[axis], dtype=np.int64).reshape(shape), 0)
    indices = _scan(xp, positions, axis, xp.maximum)
    idx = Tensor._wrap(indices, x._device)
    return take_along_axis(x, idx, axis), idx


def cummax(x: TensorLike, axis: Axis = None) -> tuple[Tensor, Tensor]:
    """The running maximum along ``axis`` and its int64 indices, as ``torch.cummax`` (a tie or NaN takes the
    later index). ``axis=None`` flattens ``x`` first. The gradient goes to the element at each index.

    Example:
        >>> import gpugrad as gg
        >>> values, indices = gg.cummax(gg.tensor([1.0, 3.0, 2.0, 3.0]), axis=0)
        >>> values.numpy().tolist(), indices.numpy().tolist()
        ([1.0, 3.0, 3.0, 3.0], [0, 1, 1, 3])
    """
    return _cumextreme(x, axis, "max")


def cummin(x: TensorLike, axis: Axis = None) -> tuple[Tensor, Tensor]:
    """The running minimum along ``axis`` and its int64 indices, as ``torch.cummin``.

    Example:
        >>> import gpugrad as gg
        >>> values, indices = gg.cummin(gg.tensor([2.0, 1.0, 3.0]), axis=0)
        >>> values.numpy().tolist(), indices.numpy().tolist()
        ([2.0, 1.0, 1.0], [0, 1, 1])
    """
    return _cumextreme(x, axis, "min")


# ---------------------------------------------------------------- logcumsumexp


def logcumsumexp(x: TensorLike, axis: Axis = None) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow or underflow, as ``torch.logcumsumexp``
    (``axis=None`` flattens ``x`` first). 16-bit floats compute in float32.

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 4) for v in gg.logcumsumexp(gg.tensor([0.0, 0.0, 1000.0]), axis=0).numpy().tolist()]
        [0.0, 0.6931, 1000.0]
    """
    x = unary(x)
    if not _dt.inexact(x._data.dtype):
        raise DTypeError(f"op 'LogCumSumExp' takes floating tensors, not {x._data.dtype}")
    x, axis = _along(x, axis, "LogCumSumExp")
    xp = x._device.xp
    out = _dt.narrow(_scan(xp, _dt.wide(x._data), axis, xp.logaddexp), x._data)
    return emit("LogCumSumExp", out, x._device, (x,), {"axis": axis})


@RegisterGradient("LogCumSumExp")
def _logcumsumexp_grad(op, dy):
    # dx_j = sum_{i >= j} dy_i exp(x_j - y_i) = exp(x_j - y_j) S_j with S_j = sum_{i >= j} dy_i exp(y_j - y_i),
    # and S_j = dy_j + exp(y_j - y_{j+1}) S_{j+1}: a linear recurrence whose factors lie in (0, 1] (y grows
    # along the axis), solved by a scan of affine maps in gpugrad ops. So the rule is linear in dy (also at
    # dy = 0, unlike a split by the sign of dy through log|dy|), stable for any spread, and differentiable.
    (x,) = op.inputs
    y = op.outputs[0]
    axis = op.attrs["axis"]
    n = x.shape[axis]
    head = (slice(None),) * axis
    yr, b = _reversed(y, axis), _reversed(dy, axis)  # the recurrence runs from the end: T_k = b_k + a_k T_{k-1}
    a = _shifted(exp(subtract(getitem(yr, head + (slice(1, None),)), getitem(yr, head + (slice(None, -1),)))),
                 1, axis, 0.0)
    step = 1
    while step < n:  # Hillis-Steele: T_k = B_k + A_k T_{k - 2 step} after each step
        b = add(b, multiply(a, _shifted(getitem(b, head + (slice(None, n - step),)), step, axis, 0.0)))
        a = multiply(a, _shifted(getitem(a, head + (slice(None, n - step),)), step, axis, 1.0))
        step *= 2
    return (multiply(exp(subtract(x, y)), _reversed(b, axis)),)


def _shifted(t, s, axis, fill):
    """``t`` with ``s`` elements of ``fill`` (0 or 1) put before it along ``axis``."""
    widths = [(0, 0)] * t.ndim
    widths[axis] = (s, 0)
    if fill == 0.0:
        return pad(t, widths)
    return add(pad(subtract(t, 1.0), widths), 1.0)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "cummax", "cummin", "logcumsumexp"
    ]
