"""NumPy's names that NumPy users reach for: floor_divide (``//``), copysign, isclose, allclose, concatenate,
and the bitwise ops on integers and booleans (``&``, ``|``, ``^``, ``~``, ``<<``, ``>>``).

floor_divide is recorded with a zero gradient (PyTorch's), copysign with PyTorch's gradient; the
comparisons and the bitwise ops return tensors no tape follows (integers and booleans have no gradient).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ...errors import DTypeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..._tracing import declare
from .. import replay
from ..base import binary, binary_error, constant_arg, emit, public_ops, unary, zeros_of
from ..array.ordering import ravel
from ..array.shape import concat

if TYPE_CHECKING:
    from ..._typing import Axis, TensorLike


# ---------------------------------------------------------------- floor_divide, copysign


def floor_divide(x1: TensorLike, x2: TensorLike) -> Tensor:
    """floor(x1 / x2) elementwise, broadcast, as ``np.floor_divide`` and Python's ``//`` (``x1 // x2`` on tensors).

    Integers give integers (division by an integer 0 gives 0, as NumPy); floats give floats. The gradient
    is zero for both operands, declared (PyTorch's: the result is piecewise constant).

    Example:
        >>> import gpugrad as gg
        >>> (gg.tensor([7.0, -7.0]) // 2.0).numpy().tolist()
        [3.0, -4.0]
    """
    x1, x2 = binary(x1, x2, "FloorDiv", np.floor_divide)
    try:
        data = _floor_divide_array(x1._device.xp, x1._data, x2._data)
    except (ValueError, TypeError) as e:
        raise binary_error("FloorDiv", e, x1, x2) from None
    return emit("FloorDiv", data, x1._device, (x1, x2))


def _floor_divide_array(xp, a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.floor_divide(a, b)


replay.elementwise("FloorDiv", _floor_divide_array)  # the forward's array function is its replay kernel


@RegisterGradient("FloorDiv", reads_outputs=False)
def _floor_div_grad(op, dy):
    x1, x2 = op.inputs
    need_x1, need_x2 = op.needs_grad
    return (zeros_of(x1) if need_x1 else None), (zeros_of(x2) if need_x2 else None)


def _rfloordiv(self, other):
    return floor_divide(other, self)


_rfloordiv.__name__ = "__rfloordiv__"


def copysign(x1: TensorLike, x2: TensorLike) -> Tensor:
    """``|x1|`` with the sign bit of x2 elementwise, broadcast, as ``np.copysign`` and ``torch.copysign``.

    Gradient (PyTorch's): copysign(x1, x2) / x1 (that is +-1; 0 where x1 == 0) for x1, zero for x2.

    Example:
        >>> import gpugrad as gg
        >>> gg.copysign(gg.tensor([1.0, -2.0, 3.0]), gg.tensor([-1.0, 1.0, -0.0])).numpy().tolist()
        [-1.0, 2.0, -3.0]
    """
    x1, x2 = binary(x1, x2, "Copysign", np.copysign)
    try:
        data = x1._device.xp.copysign(x1._data, x2._data)
    except (ValueError, TypeError) as e:
        raise binary_error("Copysign", e, x1, x2) from None
    return emit("Copysign", data, x1._device, (x1, x2))


replay.ufunc("Copysign", "copysign")  # np.copysign on float arrays of one dtype


@RegisterGradient("Copysign")
def _copysign_grad(op, dy):
    x1, x2 = op.inputs
    xp = x1._device.xp
    d1, out = x1._data, op.outputs[0]._data
    # the sign flip as a constant: d copysign / d x1 is +-1, piecewise constant (no second-order term)
    ratio = xp.where(d1 == 0, 0, xp.where(xp.signbit(out) == xp.signbit(d1), 1, -1)).astype(out.dtype)
    need_x1, need_x2 = op.needs_grad
    return (dy * Tensor._wrap(ratio, x1._device) if need_x1 else None), (zeros_of(x2) if need_x2 else None)


# ---------------------------------------------------------------- isclose, allclose


def isclose(a: TensorLike, b: TensorLike, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """``|a - b| <= atol + rtol |b|`` elementwise (not symmetric in a and b), broadcast, as ``np.isclose``:
    infinities are close to equal infinities only, NaN to NaN only with ``equal_nan``. A boolean tensor no
    tape follows.

    Example:
        >>> import gpugrad as gg
        >>> gg.isclose(gg.tensor([1.0, 1.0]), gg.tensor([1.0 + 1e-9, 1.1])).numpy().tolist()
        [True, False]
    """
    a, b = binary(a, b, "isclose")
    rtol, atol = constant_arg(rtol, "rtol", "isclose"), constant_arg(atol, "atol", "isclose")
    xp = a._device.xp
    try:
        data = xp.isclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=bool(equal_nan))
    except (ValueError, TypeError) as e:
        raise binary_error("isclose", e, a, b) from None
    return Tensor._wrap(data, a._device)


@declare.root(declare.REFUSED)  # a Python bool: a trace would freeze it
def allclose(a: TensorLike, b: TensorLike, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``isclose(a, b, rtol, atol, equal_nan)`` is true, as ``np.allclose``: a Python
    bool (on a GPU, one read of the device). Inside ``gg.function`` it raises TraceError (a trace would
    freeze the bool); use ``gg.all(gg.isclose(a, b))`` there.

    Example:
        >>> import gpugrad as gg
        >>> gg.allclose(gg.tensor([1.0, 2.0]), gg.tensor([1.0, 2.0 + 1e-7]))
        True
    """
    close = isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return bool(close._device.xp.all(close._data))


# ---------------------------------------------------------------- concatenate


def concatenate(arrays: Sequence[TensorLike], axis: Axis = 0) -> Tensor:
    """Join tensors along an existing ``axis``, as ``np.concatenate`` (``axis=None``: of the flattened
    tensors, as NumPy); the same op as :func:`gpugrad.concat`.

    Example:
        >>> import gpugrad as gg
        >>> gg.concatenate([gg.tensor([1.0]), gg.tensor([2.0, 3.0])]).numpy().tolist()
        [1.0, 2.0, 3.0]
    """
    if axis is None:
        return concat([ravel(a) for a in arrays], axis=0)
    return concat(arrays, axis=axis)


# ---------------------------------------------------------------- bitwise ops and shifts


def _integer_operand_error(name, *tensors):
    kinds = ", ".join(str(t.dtype) for t in tensors)
    return DTypeError(f"op {name!r} takes integer or boolean tensors, not {kinds}, as NumPy's {name}; "
                      "cast with gg.cast(x, 'int32') (floats have no bits to combine)")


def _bitwise_binary(name, x1, x2):
    x1, x2 = binary(x1, x2, name, getattr(np, name))
    if x1.dtype.kind not in "biu" or x2.dtype.kind not in "biu":
        raise _integer_operand_error(name, x1, x2)
    try:
        data = getattr(x1._device.xp, name)(x1._data, x2._data)
    except (ValueError, TypeError) as e:
        raise binary_error(name, e, x1, x2) from None
    return Tensor._wrap(data, x1._device)


def bitwise_and(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 AND x2 bit by bit on integers (logical AND on booleans), broadcast, as ``np.bitwise_and`` and ``&``.

    Example:
        >>> import gpugrad as gg
        >>> (gg.tensor([12, 10]) & 6).numpy().tolist()
        [4, 2]
    """
    return _bitwise_binary("bitwise_and", x1, x2)


def bitwise_or(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 OR x2 bit by bit on integers (logical OR on booleans), broadcast, as ``np.bitwise_or`` and ``|``.

    Example:
        >>> import gpugrad as gg
        >>> (gg.tensor([12, 10]) | 1).numpy().tolist()
        [13, 11]
    """
    return _bitwise_binary("bitwise_or", x1, x2)


def bitwise_xor(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 XOR x2 bit by bit on integers (booleans: true where they differ), broadcast, as ``np.bitwise_xor`` and ``^``.

    Example:
        >>> import gpugrad as gg
        >>> (gg.tensor([12, 10]) ^ 6).numpy().tolist()
        [10, 12]
    """
    return _bitwise_binary("bitwise_xor", x1, x2)


def left_shift(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 shifted left by x2 bits (x1 * 2**x2 within the dtype), broadcast, as ``np.left_shift`` and ``<<``.

    Example:
        >>> import gpugrad as gg
        >>> (gg.tensor([1, 3]) << 2).numpy().tolist()
        [4, 12]
    """
    return _bitwise_binary("left_shift", x1, x2)


def right_shift(x1: TensorLike, x2: TensorLike) -> Tensor:
    """x1 shifted right by x2 bits (floor(x1 / 2**x2)), broadcast, as ``np.right_shift`` and ``>>``.

    Example:
        >>> import gpugrad as gg
        >>> (gg.tensor([16, -16]) >> 2).numpy().tolist()
        [4, -4]
    """
    return _bitwise_binary("right_shift", x1, x2)


def bitwise_not(x: TensorLike) -> Tensor:
    """NOT x bit by bit on integers (logical NOT on booleans), as ``np.invert`` / ``np.bitwise_not`` and ``~``.

    Example:
        >>> import gpugrad as gg
        >>> (~gg.tensor([0, 5])).numpy().tolist(), (~gg.tensor([True, False])).numpy().tolist()
        ([-1, -6], [False, True])
    """
    x = unary(x)
    if x.dtype.kind not in "biu":
        raise _integer_operand_error("invert", x)
    return Tensor._wrap(x._device.xp.invert(x._data), x._device)


invert = bitwise_not  # NumPy's other name


def _reflected(function, name):
    def method(self, other):
        return function(other, self)

    method.__name__ = name
    return method


TENSOR_METHODS = {
    "__floordiv__": floor_divide, "__rfloordiv__": _rfloordiv,
    "__and__": bitwise_and, "__rand__": _reflected(bitwise_and, "__rand__"),
    "__or__": bitwise_or, "__ror__": _reflected(bitwise_or, "__ror__"),
    "__xor__": bitwise_xor, "__rxor__": _reflected(bitwise_xor, "__rxor__"),
    "__lshift__": left_shift, "__rlshift__": _reflected(left_shift, "__rlshift__"),
    "__rshift__": right_shift, "__rrshift__": _reflected(right_shift, "__rrshift__"),
    "__invert__": bitwise_not,
}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "floor_divide", "copysign", "isclose", "allclose", "concatenate", "bitwise_and", "bitwise_or", "bitwise_xor",
        "left_shift", "right_shift", "bitwise_not", "invert"
    ]
