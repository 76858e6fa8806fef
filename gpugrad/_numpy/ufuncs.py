"""NumPy's ufuncs on tensors (NEP 13): each ufunc gpugrad has an elementwise op of the same meaning for,
and the ``reduce`` / ``accumulate`` / ``outer`` methods that have a gpugrad op.

``np.exp(t)`` is ``gg.exp(t)``; ``ndarray + t`` reaches here as ``np.add(ndarray, t)``. Comparisons
are Tensor's own (boolean, not recorded). ``out=`` is refused (a tensor is immutable), ``where=``
other than True too; ``dtype=`` casts the inputs first, as NumPy computes in that dtype.
"""
from __future__ import annotations

import numpy as np

from .. import ops as g
from ..ops.base import unary
from ..tensor import Tensor, ensure_tensor
from .binding import cast_arrays, no_out, refuse_out
from .refusals import unsupported


def _float_power(x, y):
    """``np.float_power``: ``power`` computed in float64 (NumPy's rule for every input dtype)."""
    x, y = unary(x, y), unary(y, x)
    return g.power(cast_arrays(x, np.float64), cast_arrays(y, np.float64))


def _conjugate(x):
    x = ensure_tensor(x)
    if x.dtype.kind == "c":
        raise unsupported("numpy.conjugate")
    return g.identity(x)


def _comparison(method, reflected):
    """``np.less(a, b)`` as ``a < b`` (Tensor's operator), or ``b > a`` when only ``b`` is a tensor."""
    def compare(x, y):
        if isinstance(x, Tensor):
            return getattr(Tensor, method)(x, y)
        return getattr(Tensor, reflected)(y, x)
    compare.__name__ = method.strip("_")
    return compare


def _vecdot(x1, x2):
    return g.sum(g.multiply(x1, x2), -1)


def _matvec(a, v):
    return g.squeeze(g.matmul(a, g.expand_dims(unary(v, a), -1)), -1)


def _vecmat(v, a):
    return g.squeeze(g.matmul(g.expand_dims(unary(v, a), -2), a), -2)


UFUNCS = {
    np.add: g.add, np.subtract: g.subtract, np.multiply: g.multiply, np.divide: g.divide, np.power: g.power,
    np.float_power: _float_power, np.negative: g.negative, np.positive: g.identity, np.absolute: g.abs,
    np.fabs: g.abs, np.sign: g.sign, np.conjugate: _conjugate,
    np.maximum: g.maximum, np.minimum: g.minimum, np.fmax: g.fmax, np.fmin: g.fmin,
    np.square: g.square, np.sqrt: g.sqrt, np.cbrt: g.cbrt, np.reciprocal: g.reciprocal,
    np.exp: g.exp, np.exp2: g.exp2, np.expm1: g.expm1, np.log: g.log, np.log2: g.log2, np.log10: g.log10,
    np.log1p: g.log1p, np.logaddexp: g.logaddexp, np.logaddexp2: g.logaddexp2,
    np.sin: g.sin, np.cos: g.cos, np.tan: g.tan, np.arcsin: g.arcsin, np.arccos: g.arccos, np.arctan: g.arctan,
    np.arctan2: g.arctan2, np.hypot: g.hypot, np.sinh: g.sinh, np.cosh: g.cosh, np.tanh: g.tanh,
    np.arcsinh: g.arcsinh, np.arccosh: g.arccosh, np.arctanh: g.arctanh,
    np.deg2rad: g.deg2rad, np.rad2deg: g.rad2deg, np.radians: g.radians, np.degrees: g.degrees,
    np.remainder: g.remainder, np.fmod: g.fmod, np.floor: g.floor, np.ceil: g.ceil, np.trunc: g.trunc,
    np.rint: g.rint, np.isfinite: g.isfinite, np.isnan: g.isnan, np.isinf: g.isinf,
    np.logical_not: g.logical_not, np.logical_and: g.logical_and, np.logical_or: g.logical_or,
    np.logical_xor: g.logical_xor, np.floor_divide: g.floor_divide, np.copysign: g.copysign,
    np.bitwise_and: g.bitwise_and, np.bitwise_or: g.bitwise_or, np.bitwise_xor: g.bitwise_xor, np.invert: g.invert,
    np.left_shift: g.left_shift, np.right_shift: g.right_shift,
    np.less: _comparison("__lt__", "__gt__"), np.less_equal: _comparison("__le__", "__ge__"),
    np.greater: _comparison("__gt__", "__lt__"), np.greater_equal: _comparison("__ge__", "__le__"),
    np.equal: _comparison("__eq__", "__eq__"), np.not_equal: _comparison("__ne__", "__ne__"),
    np.matmul: g.matmul, getattr(np, "vecdot", None): _vecdot, getattr(np, "matvec", None): _matvec,
    getattr(np, "vecmat", None): _vecmat,  # NumPy 2.0 and 2.2
}
UFUNCS.pop(None, None)

# ufunc.reduce and ufunc.accumulate that are a gpugrad reduction or scan
REDUCE = {np.add: g.sum, np.multiply: g.prod, np.maximum: g.max, np.minimum: g.min,
          np.logaddexp: g.logsumexp, np.logical_and: g.all, np.logical_or: g.any}
ACCUMULATE = {np.add: g.cumsum, np.multiply: g.cumprod}

_DEFAULTS = {"casting": "same_kind", "order": "K", "subok": True, "signature": None, "axes": None,
             "axis": None, "keepdims": False}


def _check_defaults(name, kwargs):
    for key, value in kwargs.items():
        if key not in _DEFAULTS or not (value is _DEFAULTS[key] or value == _DEFAULTS[key]):
            raise TypeError(f"{name}({key}={value!r}) on a tensor: gpugrad's op takes no {key}= other than "
                            f"NumPy's default")


def _where_all(name, where):
    if where is not True:
        raise TypeError(f"{name}(where=...) on a tensor: gpugrad computes every element; combine with "
                        f"gg.where(mask, result, other) instead")


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """``Tensor.__array_ufunc__``: NumPy's ufunc ``ufunc`` (its ``method``) as the gpugrad op of the same
    meaning; a TypeError naming the ufunc where gpugrad has none."""
    if method == "__call__" and not kwargs:  # ndarray + t, np.exp(t): straight to the op
        fn = UFUNCS.get(ufunc)
        if fn is not None:
            return fn(*inputs)
    name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    if not no_out(kwargs.pop("out", None)):
        refuse_out(name)
    dtype = kwargs.pop("dtype", None)
    where = kwargs.pop("where", True)
    if method == "__call__":
        fn = UFUNCS.get(ufunc)
        if fn is None:
            raise unsupported(name)
        _where_all(name, where)
        _check_defaults(name, kwargs)
        if dtype is not None:
            inputs = tuple(cast_arrays(x, dtype) if not isinstance(x, (int, float)) else x for x in inputs)
        return fn(*inputs)
    if method in ("reduce", "accumulate"):
        fn = (REDUCE if method == "reduce" else ACCUMULATE).get(ufunc)
        if fn is None:
            raise unsupported(name)
        _where_all(name, where)
        x = inputs[0] if dtype is None else cast_arrays(inputs[0], dtype)
        axis = kwargs.pop("axis", 0)  # NumPy's ufunc.reduce default: the first axis
        if method == "accumulate":
            _check_defaults(name, kwargs)
            return fn(x, axis=axis)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs.pop("initial", np._NoValue) not in (np._NoValue, None):
            raise TypeError(f"{name}(initial=...) on a tensor: combine the result with the initial value "
                            f"instead (gg.add, gg.maximum, ...)")
        _check_defaults(name, kwargs)
        return fn(x, axis=axis, keepdims=keepdims)
    if method == "outer" and ufunc.nin == 2 and ufunc.signature is None and ufunc in UFUNCS:
        _check_defaults(name, kwargs)
        a, b = inputs
        like = a if isinstance(a, Tensor) else b
        a, b = ensure_tensor(a, like), ensure_tensor(b, like)
        return UFUNCS[ufunc](g.reshape(a, a.shape + (1,) * b.ndim), b)
    if method == "at":
        raise TypeError(f"{name} writes into its first argument in place, and gpugrad tensors are immutable; "
                        f"build a new tensor (gg.where, or a Variable's assign)")
    raise unsupported(name)
