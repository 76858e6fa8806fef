"""The :class:`Variable`: a mutable tensor, watched by a tape when trainable and read.

Its updates (``assign``, ``assign_add``, ``assign_sub``, the in-place operators)
write into its own array, keep its dtype and shape (NumPy's ``same_kind`` rule),
and bump its version, so a tape that saved an older value refuses the gradient.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._tracing import declare
from .._tracing import state as _trace
from .. import _device_checks
from ..errors import DeviceError, DTypeError, ShapeError
from ..backend import CPU
from ._interop import copy_on, numeric
from ._tensor import Tensor, _unpickle_tensor

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike

_NUMBERS = (bool, int, float, complex)  # Python numbers (NumPy's float64 scalar is a float too)


def _broadcast_shape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


class Variable(Tensor):
    """A mutable tensor; a trainable one read inside a tape is watched automatically.

    ``assign``, ``assign_add``, ``assign_sub`` and the in-place operators
    (``+= -= *= /= **= @=``) write into the variable's array and bump its
    version, so a tape that saved the old value refuses to compute a gradient
    from a changed one. ``w -= lr * g`` keeps ``w`` the same Variable (as in
    PyTorch under ``no_grad``; TensorFlow refuses the operator). The dtype
    never changes: a value NumPy's ``same_kind`` rule would not write into it
    (a float into an integer variable) raises DTypeError, as the same NumPy
    in-place operation does; a value of another shape raises ShapeError.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable(2.0, name="w")
        >>> with gg.GradientTape() as tape:
        ...     y = w * w
        >>> tape.gradient(y, w).item()
        4.0
        >>> w.assign_sub(0.5).item()
        1.5
        >>> w -= 0.25
        >>> type(w).__name__, w.item()
        ('Variable', 1.25)
        >>> gg.Variable(3, name="steps").assign_add(0.5)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        gpugrad.errors.DTypeError: Variable 'steps' (int64): assign_add of a float64 value would drop its fractional...
    """

    __slots__ = ("trainable", "name", "_version")

    def __init__(self, initial: Any, dtype: DTypeLike = None, device: DeviceLike = None, trainable: bool = True,
                 name: str | None = None) -> None:
        if _trace.active:
            _trace.check_new_variable()
        super().__init__(initial, dtype, device)  # a copy: the variable owns its array
        self.trainable = bool(trainable)
        self.name = name
        self._version = 0

    def _label(self):
        return f"Variable {self.name!r} ({self.dtype})" if self.name else f"Variable ({self.dtype})"

    def _operand(self, value, what):
        """``value`` ready to combine with the variable's array: a Python number as it is, else an
        array on the variable's device whose shape broadcasts to the variable's."""
        operand = self._as_operand(value, what)
        if not isinstance(operand, _NUMBERS) and operand.shape != self.shape \
                and _broadcast_shape(operand.shape, self.shape) != self.shape:
            raise ShapeError(f"cannot assign a value of shape {operand.shape} to variable {self.name or ''} of "
                             f"shape {self.shape} ({what}; a variable keeps its shape)")
        return operand

    def _as_operand(self, value, what):
        """``value`` as a Python number or an array on the variable's device, of any shape."""
        if isinstance(value, Tensor):
            if value._device is not self._device:
                raise DeviceError(f"{self._label()}.{what}: the value is on {value.device!r}, the variable on "
                                  f"{self.device!r}; move it with .to({self.device!r})")
            return value._data
        if isinstance(value, _NUMBERS):
            return value
        if value is None:
            raise TypeError(f"{self._label()}.{what}(None): a variable takes a tensor, an array or a number")
        if isinstance(value, self._device.array_type) or hasattr(value, "__cuda_array_interface__"):
            return value
        array = numeric(np.asarray(value))  # host data: lists, NumPy arrays
        if isinstance(value, (list, tuple)) and np.can_cast(array.dtype, self.dtype, "same_kind"):
            array = array.astype(self.dtype)  # Python floats take the variable's float dtype
        return self._device.backend.asarray(array, None, self._device.index)

    def _check_cast(self, operand, what, ufunc=None):
        """DTypeError unless NumPy's same_kind rule writes ``ufunc(self, operand)`` (or, without a
        ufunc, ``operand``) into the variable's dtype, as ``np.add(a, b, out=a)`` does."""
        dst = self._data.dtype
        if isinstance(operand, _NUMBERS):
            src = np.result_type(dst, operand)  # a Python number takes the variable's dtype if it can (NEP 50)
        else:
            src = operand.dtype if ufunc is None else np.result_type(dst, operand.dtype)
        if ufunc == "true_divide" and src.kind in "biu":
            src = np.dtype(np.float64)
        if src.kind in "biufc" and dst.kind in "biufc" and not np.can_cast(src, dst, "same_kind"):
            lost = {"f": "fractional part", "c": "imaginary part"}.get(src.kind, "sign or range")
            raise DTypeError(
                f"{self._label()}: {what} of a {src} value would drop its {lost}; NumPy's same_kind casting "
                f"refuses it. Cast the value first (value.astype({dst.name!r}), gg.cast) or make the variable "
                f"{src.name}")

    def _update(self, ufunc, value, what):
        """``self = ufunc(self, value)`` in place; bumps the version, returns the variable."""
        operand = self._operand(value, what)
        self._check_cast(operand, what, ufunc)
        getattr(self._device.xp, ufunc)(self._data, operand, out=self._data)
        self._version += 1
        return self

    def numpy(self) -> np.ndarray:
        """A writable NumPy copy of the current value (later assigns do not change it)."""
        if _trace.active:
            _trace.check_host_read(self, "numpy()")
        if _device_checks.pending and self._device is not CPU:
            _device_checks.raise_pending()
        array = self._device.backend.to_numpy(self._data)
        return array.copy() if array is self._data else array

    @declare.root(declare.HOST, effects="writes the variable")
    def assign(self, value: TensorLike) -> Variable:
        """Set the value in place; returns the variable."""
        operand = self._operand(value, "assign")
        self._check_cast(operand, "assign")
        self._data[...] = operand
        self._version += 1
        return self

    @declare.root(declare.HOST, effects="writes the variable")
    def assign_add(self, delta: TensorLike) -> Variable:
        """Add ``delta`` in place; returns the variable."""
        return self._update("add", delta, "assign_add")

    @declare.root(declare.HOST, effects="writes the variable")
    def assign_sub(self, delta: TensorLike) -> Variable:
        """Subtract ``delta`` in place; returns the variable."""
        return self._update("subtract", delta, "assign_sub")

    # ``w op= x`` updates w in place (Python would otherwise rebind w to a new constant Tensor)
    @declare.root(declare.HOST, effects="writes the variable")
    def __iadd__(self, other: TensorLike) -> Variable:
        return self._update("add", other, "+=")

    @declare.root(declare.HOST, effects="writes the variable")
    def __isub__(self, other: TensorLike) -> Variable:
        return self._update("subtract", other, "-=")

    @declare.root(declare.HOST, effects="writes the variable")
    def __imul__(self, other: TensorLike) -> Variable:
        return self._update("multiply", other, "*=")

    @declare.root(declare.HOST, effects="writes the variable")
    def __itruediv__(self, other: TensorLike) -> Variable:
        return self._update("true_divide", other, "/=")

    @declare.root(declare.HOST, effects="writes the variable")
    def __ipow__(self, other: TensorLike) -> Variable:
        return self._update("power", other, "**=")

    @declare.root(declare.HOST, effects="writes the variable")
    def __imatmul__(self, other: TensorLike) -> Variable:
        matrix = self._as_operand(other, "@=")
        if isinstance(matrix, _NUMBERS):
            raise TypeError(f"{self._label()} @= takes a matrix, not the number {other!r} (use *=)")
        product = self._device.xp.matmul(self._data, matrix)
        if product.shape != self.shape:
            raise ShapeError(f"{self._label()} @=: the product has shape {product.shape}, the variable "
                             f"{self.shape}; a variable keeps its shape (v = v @ m makes a new tensor)")
        return self.assign(product)

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"Variable({label}{Tensor.__repr__(self)})"

    def __reduce__(self):
        """``pickle``: values, device, ``name`` and ``trainable``; the unpickled Variable is a new one
        (version 0, watched by no tape).

        Example:
            >>> import pickle, gpugrad as gg
            >>> w = pickle.loads(pickle.dumps(gg.Variable([1.0], name="w", trainable=False)))
            >>> w.name, w.trainable, w.numpy().tolist()
            ('w', False, [1.0])
        """
        if _trace.active:
            _trace.check_host_read(self, "pickle")
        return _unpickle_variable, (type(self), self._device.backend.to_numpy(self._data), self._device.name,
                                    self.trainable, self.name)

    def __copy__(self):
        """``copy.copy`` and ``copy.deepcopy``: a new Variable (version 0) with a copy of the data, as NumPy's
        ``copy.copy`` of an ndarray copies (see :meth:`Tensor.__copy__`); ``name`` and ``trainable`` kept."""
        copied = type(self)._wrap(copy_on(self._data, self._device), self._device)
        copied.trainable, copied.name, copied._version = self.trainable, self.name, 0
        return copied


def _unpickle_variable(cls, host, device_name, trainable, name):
    var = _unpickle_tensor(cls, host, device_name)
    var.trainable, var.name, var._version = trainable, name, 0
    return var
