"""Python operators and method forms on Tensor, bound to the op functions.

Binding the op functions themselves (not wrappers) keeps ``x + y`` as cheap
as ``gg.add(x, y)``. Each op module lists its method forms in
``TENSOR_METHODS``; the operators are listed here. The reductions NumPy's
functions forward to (``np.sum(t)`` calls ``t.sum(axis=None, dtype=None,
out=None)``) get one thin wrapper that takes those keywords.
"""
import numpy as np

from ..tensor import Tensor
from .._tracing import declare

# the reduction methods np.<name>(t) calls, and whether NumPy passes them dtype=
NUMPY_REDUCTIONS = {"sum": True, "mean": True, "prod": True, "var": True, "std": True,
                    "max": False, "min": False, "argmax": False, "argmin": False}


def _reflected(fn):
    def op(self, other):
        return fn(other, self)

    op.__name__ = f"r{fn.__name__}"
    return op


def _comparison(ufunc_name):
    """A comparison operator: elementwise, boolean, not recorded (no gradient)."""
    def op(self, other):
        if isinstance(other, Tensor):
            other_data = other._data
        elif isinstance(other, (int, float, bool, self._device.array_type)):
            other_data = other
        else:  # an ndarray or a list next to a GPU tensor: onto its device, as the ops' operands go
            other_data = Tensor(other, None, self._device)._data
        return Tensor._wrap(getattr(self._device.xp, ufunc_name)(self._data, other_data), self._device)

    op.__name__ = ufunc_name
    return op


def _numpy_reduction(fn, name, takes_dtype):
    """Reduction ``fn`` as the method NumPy's ``np.<name>(t)`` calls: it also takes ``dtype=``
    (the input is cast first, so the reduction runs and returns in that dtype, as NumPy's does) and
    ``out=None``; any other ``out`` is a TypeError, as there is no array to write into."""
    from .elementwise.control import cast

    if takes_dtype:
        def method(self, axis=None, keepdims=False, *args, dtype=None, out=None, **kwargs):
            if out is not None:
                _refuse_out(name)
            if keepdims is not None and not isinstance(keepdims, (bool, int, np.bool_)):
                _dtype_in_keepdims(name, keepdims)
            if dtype is not None:
                self = cast(self, dtype)
            return fn(self, axis, keepdims, *args, **kwargs) if args or kwargs else fn(self, axis, keepdims)
    else:
        def method(self, axis=None, keepdims=False, *, out=None):
            if out is not None:
                _refuse_out(name)
            return fn(self, axis, keepdims)

    method.__name__, method.__qualname__, method.__doc__ = name, f"Tensor.{name}", fn.__doc__
    return method


def _dtype_in_keepdims(name, value):
    """ndarray's ``x.sum(0, np.float64)`` passes a dtype second; gg's order has keepdims there."""
    raise TypeError(f"Tensor.{name}: the second positional argument is keepdims (gg.{name}(x, axis, keepdims)), "
                    f"not {value!r}; pass dtype= by keyword")


def _refuse_out(name):
    raise TypeError(f"Tensor.{name}(out=...): a gpugrad tensor is immutable, so there is no output array "
                    f"to write into; use the tensor {name} returns")


def install(modules):
    """Attach operators and every module's ``TENSOR_METHODS`` to :class:`Tensor`."""
    from .elementwise import arithmetic as a

    operators = {
        "__add__": a.add, "__radd__": _reflected(a.add),
        "__sub__": a.subtract, "__rsub__": _reflected(a.subtract),
        "__mul__": a.multiply, "__rmul__": _reflected(a.multiply),
        "__truediv__": a.divide, "__rtruediv__": _reflected(a.divide),
        "__pow__": a.power, "__rpow__": _reflected(a.power),
        "__neg__": a.negative, "__abs__": a.abs,
        "__lt__": _comparison("less"), "__le__": _comparison("less_equal"),
        "__gt__": _comparison("greater"), "__ge__": _comparison("greater_equal"),
        "__eq__": _comparison("equal"), "__ne__": _comparison("not_equal"),
    }
    for name, fn in operators.items():
        setattr(Tensor, name, _declared(fn))
    for module in modules:
        for name, fn in getattr(module, "TENSOR_METHODS", {}).items():
            if name in NUMPY_REDUCTIONS:
                fn = _numpy_reduction(fn, name, NUMPY_REDUCTIONS[name])
            setattr(Tensor, name, _declared(fn))


def _declared(fn):
    """Method or property ``fn`` declared an op for ``gg.function``'s capture (:mod:`gpugrad._tracing.declare`)."""
    if isinstance(fn, property):
        return property(declare.declared(fn.fget), doc=fn.__doc__)
    return declare.declared(fn)
