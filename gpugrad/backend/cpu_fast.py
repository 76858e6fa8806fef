"""The CPU's fast paths: NumPy calls that give NumPy's own bits, faster.

Op modules hold the math and call this layer for the CPU tricks:

- :func:`run` is the one call for elementwise work: ``formula(*arrays, out=out)``,
  split across threads (:mod:`.cpu_threads`) when the arrays are large for the
  formula's cost class, :data:`CHEAP` (arithmetic, bound by memory bandwidth)
  or :data:`COSTLY` (exp, log, tanh, erf: bound by the cores).
- :func:`select`, :func:`select_or_zero` and :func:`split_by_mask` are
  ``np.where`` without its branch per element (NumPy's where branches on each
  element; on a mask of mixed signs that costs 10x at 256 Ki float32 elements).
- :func:`relu` and :func:`sigmoid` are ``np.maximum(x, 0)`` and the stable
  sigmoid, 2-3x faster on large arrays.
- :func:`sum`, :func:`mean` and :func:`max` are the ndarray reductions without
  their Python wrappers (a few microseconds a call on small arrays).

Every function returns what the plain NumPy expression in its docstring returns,
bit for bit: NaN payloads, signed zeros, infinities and subnormals included
(``tests/test_branch_free.py``, ``tests/test_relu_cpu.py``, ``tests/test_cpu_threads.py``).

Example:
    >>> import numpy as np
    >>> run(np.tanh, (np.zeros(3),), COSTLY).tolist()
    [0.0, 0.0, 0.0]
"""
import numpy as np

from .cpu_threads import SPLIT_MIN_CHEAP, SPLIT_MIN_COSTLY, split_formula

__all__ = ["CHEAP", "COSTLY", "run", "select", "select_or_zero", "split_by_mask", "relu", "sigmoid",
           "sum", "mean", "max"]

# A cost class is the number of elements from which an op of that class is split across threads.
CHEAP = SPLIT_MIN_CHEAP  # + - * / sqrt, comparisons, selections: bound by memory bandwidth
COSTLY = SPLIT_MIN_COSTLY  # exp, log, tanh, erf: a chunk of 64 Ki elements pays for a thread hand-off


def run(formula, arrays, cost=None, out=None, params=None):
    """``formula(*arrays, out=out, **params)`` on NumPy arrays, across threads when it pays.

    ``formula`` computes elementwise and takes ``out=`` (a ufunc, or a NumPy
    formula written with ``out=``); ``cost`` is its class, :data:`CHEAP` or
    :data:`COSTLY`, or None for a formula that is never split (one that has no
    ``out=``, or returns several arrays; it is called without ``out``). An op is
    split from as many elements as its class says, when its arrays share one
    shape and float dtype and its params are scalars; the result is the one
    call's to the last bit either way. Small arrays cost one comparison more
    than the call itself.

    Example:
        >>> import numpy as np
        >>> run(np.add, (np.ones(2), np.ones(2)), CHEAP).tolist()
        [2.0, 2.0]
    """
    if cost is None or arrays[0].size < cost:
        if params is None:
            return formula(*arrays) if out is None else formula(*arrays, out=out)
        return formula(*arrays, **params) if out is None else formula(*arrays, out=out, **params)
    params = params or {}
    if all(np.ndim(v) == 0 for v in params.values()):
        return split_formula(formula, arrays, out, params)
    return formula(*arrays, out=out, **params)


UINT_OF = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
_BOOL = np.dtype(np.bool_)
SELECT_MIN = 2048  # a smaller mask: np.where's one call costs less than the blend's three


def _blendable(mask, a):
    return mask.dtype == _BOOL and mask.size >= SELECT_MIN and a.dtype in UINT_OF


def select(mask, a, b):
    """``np.where(mask, a, b)`` bit for bit, without a branch per element.

    ``mask`` is a boolean array; ``a`` and ``b`` are arrays (or NumPy scalars)
    of one float dtype, and all three broadcast together. The bits are blended
    as unsigned integers, ``b ^ ((a ^ b) * mask)``. Other dtypes and small
    masks go to np.where. The result is an array, 0-d ones included.

    Example:
        >>> import numpy as np
        >>> select(np.array([True, False]), np.array([1.0, -0.0]), np.array([-0.0, np.nan])).tolist()
        [1.0, nan]
    """
    if b.dtype != a.dtype or not _blendable(mask, a):
        return np.where(mask, a, b)
    u = UINT_OF[a.dtype]
    bb = b.view(u)
    # np.asarray: an array for 0-d operands too (a ufunc gives a scalar there; out=... needs NumPy 2.3)
    return np.asarray(np.bitwise_xor(bb, np.bitwise_xor(a.view(u), bb) * mask)).view(a.dtype)


def select_or_zero(mask, a, out=None):
    """``np.where(mask, a, 0)`` in ``a``'s dtype, bit for bit (``a`` or +0.0), into ``out`` if given.

    ``a``'s bits times the mask are ``a``'s or +0.0's.

    Example:
        >>> import numpy as np
        >>> select_or_zero(np.array([True, False]), np.array([-2.0, 3.0])).tolist()
        [-2.0, 0.0]
    """
    if not _blendable(mask, a):
        result = np.where(mask, a, a.dtype.type(0))
        if out is None:
            return result
        out[...] = result
        return out
    u = UINT_OF[a.dtype]
    return np.multiply(a.view(u), mask, out=None if out is None else out.view(u)).view(a.dtype)


def split_by_mask(mask, a):
    """``(np.where(mask, a, 0), np.where(mask, 0, a))`` bit for bit: ``a`` sent one way or the other.

    Example:
        >>> import numpy as np
        >>> [p.tolist() for p in split_by_mask(np.array([True, False]), np.array([1.0, 2.0]))]
        [[1.0, 0.0], [0.0, 2.0]]
    """
    if not _blendable(mask, a):
        zero = a.dtype.type(0)
        return np.where(mask, a, zero), np.where(mask, zero, a)
    u = UINT_OF[a.dtype]
    bits = a.view(u)
    first = np.asarray(np.multiply(bits, mask))
    return first.view(a.dtype), np.asarray(np.bitwise_xor(bits, first)).view(a.dtype)


_ZERO_ROW = 8192  # elements: long rows amortize maximum's per-row start
_ZERO_ROWS: dict = {}  # dtype -> a read-only row of _ZERO_ROW zeros


def _zero_row(dtype):
    row = _ZERO_ROWS.get(dtype)
    if row is None:
        row = _ZERO_ROWS[dtype] = np.zeros(_ZERO_ROW, dtype)
        row.flags.writeable = False
    return row


def relu(d, out=None):
    """``np.maximum(d, 0, out=out)`` bit for bit; 2-3x faster on large contiguous float arrays.

    NumPy compares an array with a scalar element by element, and two arrays
    with its vector loop (256 Ki float32: 185 us against 55 us in place, 180
    against 80 into a new array). So a large C-contiguous array is compared in
    rows of ``_ZERO_ROW`` elements with one read-only row of zeros. Anything else
    takes the scalar.

    Example:
        >>> import numpy as np
        >>> relu(np.array([-1.0, 0.5])).tolist()
        [0.0, 0.5]
    """
    n = d.size
    if n < _ZERO_ROW or d.dtype.kind != "f" or not d.flags.c_contiguous or (
            out is not None and (out.dtype != d.dtype or out.shape != d.shape or not out.flags.c_contiguous)):
        return np.maximum(d, 0, out=out)
    if out is None:
        out = np.empty(d.shape, d.dtype)
    zeros, flat, flat_out = _zero_row(d.dtype), d.reshape(-1), out.reshape(-1)
    body = n - n % _ZERO_ROW
    np.maximum(flat[:body].reshape(-1, _ZERO_ROW), zeros, out=flat_out[:body].reshape(-1, _ZERO_ROW))
    if body < n:
        np.maximum(flat[body:], zeros[:n - body], out=flat_out[body:])
    return out


def sigmoid(x, out=None):
    """The sigmoid of NumPy array ``x``, finite for any x, in ``x``'s float dtype (into ``out`` if given).

    ``e = exp(-|x|)`` never overflows; the sigmoid is ``1 / (1 + e)`` for x >= 0
    and ``e / (1 + e)`` below, and the numerator ``max(e, [x >= 0])`` is that 1 or
    e (e <= 1; NaN stays NaN) 10x faster than np.where on a mask of mixed signs.
    It gives the bits of ``np.where(x >= 0, 1, e) / (1 + e)``.

    Example:
        >>> import numpy as np
        >>> sigmoid(np.array([0.0, 800.0, -800.0])).tolist()
        [0.5, 1.0, 0.0]
    """
    e = np.exp(-np.abs(x))
    y = np.divide(np.maximum(e, (x >= 0).view(np.uint8)), 1 + e)  # uint8 keeps the float dtype
    if out is None:
        return y.astype(x.dtype, copy=False)
    out[...] = y
    return out


def sum(d, axes, keepdims=False):  # noqa: A001 - the reduction's name
    """``d.sum(axis=axes, keepdims=keepdims)``; for floats the ufunc's reduce, without ndarray.sum's wrapper.

    Example:
        >>> import numpy as np
        >>> sum(np.ones((2, 3)), (1,)).tolist()
        [3.0, 3.0]
    """
    if d.dtype.kind == "f":
        return np.add.reduce(d, axis=axes, keepdims=keepdims)
    return d.sum(axis=axes, keepdims=keepdims)


def mean(d, axes, keepdims=False, count=None):
    """``d.mean(axis=axes, keepdims=keepdims)`` in ``d``'s float dtype.

    For float32 and float64, ndarray.mean's own steps without its wrapper: the
    sum, then one division by ``count`` (the number of elements averaged).

    Example:
        >>> import numpy as np
        >>> mean(np.arange(6.0).reshape(2, 3), (1,), count=3).tolist()
        [1.0, 4.0]
    """
    if count is not None and (d.dtype == np.float32 or d.dtype == np.float64):
        return np.true_divide(np.add.reduce(d, axis=axes, keepdims=keepdims), count)
    out = d.mean(axis=axes, keepdims=keepdims)
    if out.dtype != d.dtype and d.dtype.kind == "f":
        out = out.astype(d.dtype)  # not astype(copy=False) on a NumPy scalar: it leaks ~55 B a call
    return out


def max(d, axes, keepdims=False):  # noqa: A001 - the reduction's name
    """``d.max(axis=axes, keepdims=keepdims)`` by the ufunc's reduce, without ndarray.max's wrapper.

    Example:
        >>> import numpy as np
        >>> max(np.array([[1.0, 5.0], [7.0, 2.0]]), (1,), keepdims=True).tolist()
        [[5.0], [7.0]]
    """
    return np.maximum.reduce(d, axis=axes, keepdims=keepdims)
