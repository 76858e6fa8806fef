"""Control of gradient flow: identity, stop_gradient and cast.

All pass values through (``cast`` in another dtype). ``Identity`` passes the
gradient through too, ``Cast`` casts it back to its input's dtype;
``StopGradient`` is declared not differentiable, and the tapes record it
(diagnostics can name it) without following its output, so, as in
TensorFlow, ops that read only that output are not recorded at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


from ...errors import DTypeError
from ..._recorder import active_tapes, record
from ...registry import NotDifferentiable, RegisterGradient
from ...tensor import Tensor
from ..base import emit, public_ops, unary
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import DTypeLike, TensorLike



def _read(x):
    """``x``'s array; a Variable's is copied, so a later assign does not change the result."""
    return x._data if x.__class__ is Tensor else x._data.copy()


def identity(x: TensorLike) -> Tensor:
    """A tensor with the values of ``x``; the gradient passes through unchanged.

    Reading a Variable through ``identity`` snapshots its current value.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.identity(x) * 3.0
        >>> tape.gradient(y, x).numpy().tolist()
        [3.0, 3.0]
    """
    x = unary(x)
    return emit("Identity", _read(x), x._device, (x,))


@RegisterGradient("Identity", reads_outputs=False)
def _identity_grad(op, dy):
    return (dy,)


def stop_gradient(x: TensorLike) -> Tensor:
    """A tensor with the values of ``x`` through which no gradient flows.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * gg.stop_gradient(x)
        >>> tape.gradient(y, x).numpy().tolist()  # d(x * c)/dx with c = x held constant
        [1.0, 2.0]
    """
    x = unary(x)
    out = Tensor._wrap(_read(x), x._device)
    if active_tapes():
        record((out,), (x,), "StopGradient", None, None, follow_outputs=False)
    return out


NotDifferentiable("StopGradient")


def cast(x: TensorLike, dtype: DTypeLike) -> Tensor:
    """``x`` in ``dtype`` (TensorFlow's ``tf.cast``, NumPy's ``astype``); differentiable between floats.

    The gradient is cast back to ``x``'s dtype; an integer or boolean ``x``, or
    a cast to one, has none. A cast to ``x``'s own dtype returns ``x``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.5, 2.0], dtype="float64")
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.cast(x, "float32") * 2.0
        >>> y.dtype, tape.gradient(y, x).dtype
        (dtype('float32'), dtype('float64'))
    """
    x = unary(x)
    try:
        dtype = _dt.resolve(dtype)
    except DTypeError:
        raise  # bfloat16 without ml_dtypes: the message names the extra
    except TypeError:
        raise DTypeError(f"cast: {dtype!r} is not a dtype") from None
    if dtype == x._data.dtype:
        return x
    if not _dt.numeric(dtype):
        raise DTypeError(f"cast: a tensor holds booleans or numbers, not {dtype}")
    return emit("Cast", x._data.astype(dtype), x._device, (x,), {"dtype": dtype})


@RegisterGradient("Cast", reads_outputs=False)
def _cast_grad(op, dy):
    (x,) = op.inputs
    if not _dt.inexact(x._data.dtype) or not _dt.inexact(dy._data.dtype):
        return (None,)
    return (cast(dy, x._data.dtype),)


TENSOR_METHODS: dict = {}  # x.astype: gpugrad._numpy.methods (NumPy's casting=, copy=)

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "identity", "stop_gradient", "cast"
    ]
