"""Python operators and method forms on Tensor, bound to the op functions.

Binding the op functions themselves (not wrappers) keeps ``x + y`` as cheap
as ``gg.add(x, y)``. Each op module lists its method forms in
``TENSOR_METHODS``; the operators are listed here.
"""
from ..tensor import Tensor


def _reflected(fn):
    def op(self, other):
        return fn(other, self)

    op.__name__ = f"r{fn.__name__}"
    return op


def _comparison(ufunc_name):
    """A comparison operator: elementwise, boolean, not recorded (no gradient)."""
    def op(self, other):
        other_data = other._data if isinstance(other, Tensor) else other
        return Tensor._wrap(getattr(self._device.xp, ufunc_name)(self._data, other_data), self._device)

    op.__name__ = ufunc_name
    return op


def install(modules):
    """Attach operators and every module's ``TENSOR_METHODS`` to :class:`Tensor`."""
    from . import arithmetic as a

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
        setattr(Tensor, name, fn)
    for module in modules:
        for name, fn in getattr(module, "TENSOR_METHODS", {}).items():
            setattr(Tensor, name, fn)
