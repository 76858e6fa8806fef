"""Matrix structure: trace diag diagonal tril triu, and the products outer inner dot vdot kron cross.

Every op here is a composition of differentiable ops (getitem, where, reshape,
transpose, multiply, matmul, tensordot, stack), so none has a rule of its
own: ``diagonal`` is an integer-array ``GetItem`` (its gradient scatters dy
onto the diagonal), ``diag`` of a vector is a ``GetItemGrad`` (zeros with the
vector written on a diagonal; its gradient reads the diagonal back),
``tril``/``triu`` are a ``Where`` with a triangular mask (the gradient masks
dy the same way), the products are ``MatMul``/``TensorDot``/``Multiply``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import ShapeError
from ..elementwise.arithmetic import multiply, subtract, where
from ..base import binary, public_ops, unary
from ..array.indexing import _to_device, getitem, getitem_grad
from .linalg import matmul, tensordot
from ..reduction.reductions import sum as reduce_sum
from ..array.shape import normalize_axis_index, reshape, stack, transpose

if TYPE_CHECKING:
    from ..._typing import Axis, TensorLike
    from ...tensor import Tensor


# ---------------------------------------------------------------- diagonal, trace, diag


def _diagonal_index(n1, n2, offset):
    """Row and column indices (host arrays) of diagonal ``offset`` of an ``n1 x n2`` matrix."""
    if offset >= 0:
        n = max(0, min(n1, n2 - offset))
        rows = np.arange(n)
        return rows, rows + offset
    n = max(0, min(n1 + offset, n2))
    cols = np.arange(n)
    return cols - offset, cols


def _int_arg(value, name, op_type):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"op {op_type!r} takes an integer {name}, not {value!r}")
    return int(value)


def diagonal(x: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The diagonal ``offset`` of the matrices in axes ``axis1``, ``axis2`` of ``x``, as ``numpy.diagonal``.

    Those two axes are removed and the diagonal becomes the last axis. NumPy
    returns a read-only view; this returns a new tensor. Recorded as a
    ``GetItem`` (integer arrays), whose gradient scatters dy onto the diagonal.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> gg.diagonal(x).numpy().tolist()
        [1.0, 5.0]
        >>> x.diagonal(offset=1).numpy().tolist()
        [2.0, 6.0]
    """
    x = unary(x)
    offset = _int_arg(offset, "offset", "Diagonal")
    if x.ndim < 2:
        raise ShapeError(f"op 'Diagonal' needs a tensor of at least 2 dimensions, not shape {x.shape}")
    a1 = normalize_axis_index(axis1, x.ndim, "Diagonal", x.shape)
    a2 = normalize_axis_index(axis2, x.ndim, "Diagonal", x.shape)
    if a1 == a2:
        raise ShapeError(f"op 'Diagonal': axis1 and axis2 are the same axis {a1} of shape {x.shape}")
    if (a1, a2) != (x.ndim - 2, x.ndim - 1):
        rest = [i for i in range(x.ndim) if i not in (a1, a2)]
        x = transpose(x, rest + [a1, a2])
    rows, cols = _diagonal_index(x.shape[-2], x.shape[-1], offset)
    return getitem(x, (Ellipsis, rows, cols))


def trace(x: TensorLike, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """Sum along the diagonal ``offset`` of axes ``axis1``, ``axis2``, as ``numpy.trace``.

    The sum of :func:`diagonal`: a ``GetItem`` and a ``Sum``.

    Example:
        >>> import gpugrad as gg
        >>> gg.trace(gg.tensor([[1.0, 2.0], [3.0, 4.0]])).item()
        5.0
        >>> gg.ones((2, 3, 3)).trace(axis1=1, axis2=2).numpy().tolist()
        [3.0, 3.0]
    """
    return reduce_sum(diagonal(x, offset, axis1, axis2), axis=-1)


def diag(v: TensorLike, k: int = 0) -> Tensor:
    """A square matrix with 1-D ``v`` on diagonal ``k``, or the diagonal ``k`` of 2-D ``v``, as ``numpy.diag``.

    For a vector it is recorded as a ``GetItemGrad`` (zeros with ``v`` written
    on the diagonal; the gradient reads the diagonal of dy); for a matrix as
    :func:`diagonal`.

    Example:
        >>> import gpugrad as gg
        >>> gg.diag(gg.tensor([1.0, 2.0])).numpy().tolist()
        [[1.0, 0.0], [0.0, 2.0]]
        >>> gg.diag(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), k=-1).numpy().tolist()
        [3.0]
    """
    v = unary(v)
    k = _int_arg(k, "k", "Diag")
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ShapeError(f"op 'Diag' takes a 1-D or 2-D tensor, not shape {v.shape}")
    n = v.shape[0] + abs(k)
    rows, cols = _diagonal_index(n, n, k)
    dev = v._device
    key = (_to_device(rows, True, dev), _to_device(cols, True, dev))
    return getitem_grad(v, key, (n, n), accumulate=False)


# ---------------------------------------------------------------- tril, triu


def _triangle(x, k, op_type, lower):
    x = unary(x)
    k = _int_arg(k, "k", op_type)
    if x.ndim == 0:
        raise ShapeError(f"op {op_type!r} needs a tensor of at least 1 dimension, not a 0-d one")
    m, n = x.shape[-2:] if x.ndim >= 2 else (x.shape[-1], x.shape[-1])
    xp = x._device.xp
    mask = xp.tri(m, n, k, dtype=bool) if lower else ~xp.tri(m, n, k - 1, dtype=bool)
    return where(mask, x, False)  # a Python bool is weak to every dtype: the result keeps x's (bool too), as NumPy


def tril(x: TensorLike, k: int = 0) -> Tensor:
    """``x`` with the elements above diagonal ``k`` of its last two axes set to zero, as ``numpy.tril``.

    Batched over the leading axes; a 1-D ``x`` is taken as the rows of a
    square matrix, as NumPy does. Recorded as a ``Where`` (the gradient masks
    dy the same way).

    Example:
        >>> import gpugrad as gg
        >>> gg.tril(gg.ones((2, 2))).numpy().tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _triangle(x, k, "Tril", True)


def triu(x: TensorLike, k: int = 0) -> Tensor:
    """``x`` with the elements below diagonal ``k`` of its last two axes set to zero, as ``numpy.triu``.

    Batched over the leading axes, as :func:`tril`. Recorded as a ``Where``.

    Example:
        >>> import gpugrad as gg
        >>> gg.triu(gg.ones((2, 3)), k=1).numpy().tolist()
        [[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]]
    """
    return _triangle(x, k, "Triu", False)


# ---------------------------------------------------------------- products


def outer(a: TensorLike, b: TensorLike) -> Tensor:
    """The outer product of ``a`` and ``b`` flattened, as ``numpy.outer``: ``out[i, j] = a[i] * b[j]``.

    Example:
        >>> import gpugrad as gg
        >>> gg.outer(gg.tensor([1.0, 2.0]), gg.tensor([1.0, 10.0, 100.0])).numpy().tolist()
        [[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]]
    """
    a, b = binary(a, b, "Outer")
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def inner(a: TensorLike, b: TensorLike) -> Tensor:
    """Sum of products over the last axes of ``a`` and ``b``, as ``numpy.inner`` (a product for a scalar).

    Example:
        >>> import gpugrad as gg
        >>> gg.inner(gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])).item()
        11.0
        >>> gg.inner(gg.ones((2, 3)), gg.ones((4, 3))).shape
        (2, 4)
    """
    a, b = binary(a, b, "Inner")
    if not a.ndim or not b.ndim:
        return multiply(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ShapeError(f"op 'Inner': the last axes of shapes {a.shape} and {b.shape} differ "
                         f"({a.shape[-1]} and {b.shape[-1]})")
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 1]))


def dot(a: TensorLike, b: TensorLike) -> Tensor:
    """NumPy's ``dot``: a product for a scalar, ``matmul`` for 1-D and 2-D operands, and for N-D
    ``a`` and M-D ``b`` (M >= 2) the sum over the last axis of ``a`` and the second-to-last of ``b``.

    Recorded as ``Multiply``, ``MatMul`` (1-D/2-D operands, or a 1-D ``b``) or ``TensorDot``.

    Example:
        >>> import gpugrad as gg
        >>> gg.dot(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), gg.tensor([1.0, 1.0])).numpy().tolist()
        [3.0, 7.0]
        >>> gg.ones((2, 3, 4)).dot(gg.ones((5, 4, 6))).shape
        (2, 3, 5, 6)
    """
    a, b = binary(a, b, "Dot")
    if not a.ndim or not b.ndim:
        return multiply(a, b)
    k_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if a.shape[-1] != k_b:
        raise ShapeError(f"op 'Dot': shapes {a.shape} and {b.shape} are not aligned: "
                         f"{a.shape[-1]} (last axis of a) != {k_b} ({'second-to-last' if b.ndim > 1 else 'only'} "
                         f"axis of b)")
    if b.ndim == 1 or (a.ndim <= 2 and b.ndim <= 2):
        return matmul(a, b)
    return tensordot(a, b, ([a.ndim - 1], [b.ndim - 2]))


def vdot(a: TensorLike, b: TensorLike) -> Tensor:
    """The dot product of ``a`` and ``b`` flattened, as ``numpy.vdot`` (real dtypes: nothing to conjugate).

    Example:
        >>> import gpugrad as gg
        >>> gg.vdot(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), gg.ones((4,))).item()
        10.0
    """
    a, b = binary(a, b, "VDot")
    if a.size != b.size:
        raise ShapeError(f"op 'VDot' needs operands of one size, got shapes {a.shape} (size {a.size}) "
                         f"and {b.shape} (size {b.size})")
    return matmul(reshape(a, -1), reshape(b, -1))


def kron(a: TensorLike, b: TensorLike) -> Tensor:
    """The Kronecker product of ``a`` and ``b``, as ``numpy.kron``: blocks ``a[i, j] * b``.

    The operand of fewer dimensions gets leading axes of length 1. Recorded as
    reshapes and a broadcasting ``Multiply``.

    Example:
        >>> import gpugrad as gg
        >>> gg.kron(gg.tensor([1.0, 10.0]), gg.tensor([1.0, 2.0, 3.0])).numpy().tolist()
        [1.0, 2.0, 3.0, 10.0, 20.0, 30.0]
        >>> gg.kron(gg.ones((2, 2)), gg.ones((3, 1))).shape
        (6, 2)
    """
    a, b = binary(a, b, "Kron")
    nd = max(a.ndim, b.ndim)
    if nd == 0:
        return multiply(a, b)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    ar = reshape(a, tuple(d for n in sa for d in (n, 1)))
    br = reshape(b, tuple(d for n in sb for d in (1, n)))
    return reshape(multiply(ar, br), tuple(p * q for p, q in zip(sa, sb)))


def _axis_to_last(x, axis, op_type):
    axis = normalize_axis_index(axis, x.ndim, op_type, x.shape)
    if axis == x.ndim - 1:
        return x
    return transpose(x, [i for i in range(x.ndim) if i != axis] + [axis])


def cross(a: TensorLike, b: TensorLike, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: Axis = None) -> Tensor:
    """The cross product of 3-vectors along ``axisa`` of ``a`` and ``axisb`` of ``b``, as ``numpy.cross``.

    The other axes broadcast; the vectors of the result lie along ``axisc``;
    ``axis``, when given, sets all three. Only 3-vectors: NumPy 2 deprecates
    2-vectors, and here they raise a ShapeError (pad them with a zero third
    component to get the 3-D product). Recorded as getitems, multiplies,
    subtracts and a ``Stack``.

    Example:
        >>> import gpugrad as gg
        >>> gg.cross(gg.tensor([1.0, 0.0, 0.0]), gg.tensor([0.0, 1.0, 0.0])).numpy().tolist()
        [0.0, 0.0, 1.0]
    """
    a, b = binary(a, b, "Cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    if not a.ndim or not b.ndim:
        raise ShapeError(f"op 'Cross' takes vectors, not 0-d tensors (shapes {a.shape} and {b.shape})")
    a = _axis_to_last(a, axisa, "Cross")
    b = _axis_to_last(b, axisb, "Cross")
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ShapeError(f"op 'Cross' takes 3-vectors along the vector axes, got lengths {a.shape[-1]} and "
                         f"{b.shape[-1]}; 2-vectors (deprecated in NumPy 2) are not supported: pad them "
                         f"with a zero third component")
    try:
        np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except ValueError:
        raise ShapeError(f"op 'Cross' cannot broadcast shapes {a.shape[:-1]} and {b.shape[:-1]} "
                         f"(the vector axes set aside)") from None
    a0, a1, a2 = (getitem(a, (Ellipsis, i)) for i in range(3))
    b0, b1, b2 = (getitem(b, (Ellipsis, i)) for i in range(3))
    parts = [subtract(multiply(a1, b2), multiply(a2, b1)),
             subtract(multiply(a2, b0), multiply(a0, b2)),
             subtract(multiply(a0, b1), multiply(a1, b0))]
    c = stack(parts, axis=-1)
    axisc = normalize_axis_index(axisc, c.ndim, "Cross", c.shape)
    if axisc == c.ndim - 1:
        return c
    order = list(range(c.ndim - 1))
    order.insert(axisc, c.ndim - 1)
    return transpose(c, order)


TENSOR_METHODS = {"diagonal": diagonal}  # x.trace, x.dot: gpugrad._numpy.methods (NumPy's dtype=, out=None)

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "diagonal", "trace", "diag", "tril", "triu", "outer", "inner", "dot", "vdot", "kron", "cross"
    ]
