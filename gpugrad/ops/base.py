"""What every op module shares: operand conversion, device checks, fused dispatch.

An op function converts its operands with :func:`unary` / :func:`binary`,
computes its output array with the device's array module, and ends in
:func:`gpugrad._recorder.emit`. A hot gradient op runs :func:`fused`: NumPy on
the CPU, the CUDA kernel of the same name from ``kernels/`` on a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..backend import CPU, cpu_fast
from ..backend.cpu_fast import COSTLY
from ..errors import DeviceError, DTypeError, GradientError, ShapeError
from .._recorder import _thread_stack, emit, emit_many  # noqa: F401 - re-exported for op modules
from ..tensor import Tensor, Variable, ensure_tensor
from .. import _dtypes as _dt
from .._tracing import declare

if TYPE_CHECKING:
    from .._typing import TensorLike

_scalar_tensors: dict[tuple[Any, ...], Tensor] = {}  # (value, dtype, device) -> 0-d Tensor, for Python numbers in ops
_host_scalars: dict[tuple[Any, ...], Any] = {}  # (value, dtype) -> 0-d NumPy array, for CPU gradient formulas


def unary(x: TensorLike, *company: Any) -> Tensor:
    """``x`` as a Tensor: a Python number or array goes to the device of the first tensor among
    ``company`` (the op's other operands, so ``gg.clip(ndarray, lo_on_gpu, hi)`` runs on that GPU, as
    NumPy's functions given a tensor later in their arguments do), else to the default device."""
    if isinstance(x, Tensor):
        return x
    for other in company:
        if isinstance(other, Tensor):
            return Tensor(x, None, other._device)
    return ensure_tensor(x)


def zeros_of(like: Tensor) -> Tensor:
    """Zeros with ``like``'s shape, dtype and device that no tape follows (``gg.zeros_like``; a rule's zero gradient)."""
    return Tensor._wrap(like._device.xp.zeros_like(like._data), like._device)


def scalar_tensor(value: float, like: Tensor) -> Tensor:
    """A cached 0-d tensor of Python number ``value`` in ``like``'s float dtype and device.

    Converting a Python float costs NumPy more than the op itself on small arrays.
    """
    if not _dt.inexact(like._data.dtype):
        return ensure_tensor(value, like=like)
    # -0.0 == 0.0 and NaN != NaN: those by their text, so that a trace (and a fused region) knows them as constants;
    # by type too: np.float64(2.5) == 2.5, but it is a float64 operand where the Python float takes x's dtype
    key = (value.__class__, value if value == value and value != 0 else repr(float(value)), like._data.dtype,
           like._device)
    t = _scalar_tensors.get(key)
    if t is None:
        if len(_scalar_tensors) > 4096:
            _scalar_tensors.clear()
        t = _scalar_tensors[key] = ensure_tensor(value, like=like)
    return t


def host_scalar(value, like):
    """A cached 0-d NumPy array of ``value`` in the dtype of array ``like``."""
    key = (value, like.dtype)
    a = _host_scalars.get(key)
    if a is None:
        a = _host_scalars[key] = np.asarray(value, dtype=like.dtype)
    return a


class _ScalarByDtype(dict):
    """``ONE[dtype]``: a cached 0-d NumPy array of one value per dtype.

    NumPy converts a Python number in ``1 - y`` more slowly than it computes
    the whole op on a small array; a 0-d array of the right dtype costs nothing.
    """

    def __init__(self, value):
        super().__init__()
        self.value = value

    def __missing__(self, dtype):
        self[dtype] = a = np.asarray(self.value, dtype=dtype)
        return a


ONE = _ScalarByDtype(1)
ZERO = _ScalarByDtype(0)


def is_constant(a) -> bool:
    """Whether array ``a`` is one of the ops' cached 0-d constants (:func:`scalar_tensor`, :func:`host_scalar`,
    :data:`ONE`, :data:`ZERO`): the same array, and value, every call.

    Example:
        >>> import numpy as np
        >>> is_constant(ONE[np.dtype(np.float32)]), is_constant(np.asarray(1.0, np.float32))
        (True, False)
    """
    if getattr(a, "ndim", 1) != 0:
        return False
    return any(t._data is a for t in _scalar_tensors.values()) or \
        any(c is a for c in _host_scalars.values()) or \
        any(c is a for table in (ONE, ZERO) for c in table.values())


def _int_operand(value, like, ufunc):
    """Python int ``value`` next to tensor ``like`` in ``ufunc``: in the dtype NumPy 2's loop takes
    it in (``np.arctan2(int8_array, 1000)`` computes in float16, ``np.logical_and`` in bool), or None
    where that is ``like``'s own dtype (then the plain weak rule applies)."""
    dtype = like._data.dtype
    try:
        loop = ufunc.resolve_dtypes((dtype, int, None))[1]
    except (TypeError, ValueError):  # no loop: the op itself reports it
        return None
    if loop == dtype or loop.kind in "iu":  # an integer loop: the weak rule, with its OverflowError
        return None
    if loop.kind == "b" and not -2 ** 63 <= value < 2 ** 64:
        raise OverflowError(f"Python int {value} too large to convert to C long")  # as NumPy 2 refuses it
    dev = like._device
    host = np.asarray(value, dtype=loop)
    return Tensor._wrap(host if dev is CPU else dev.backend.asarray(host, None, dev.index), dev)


# ufuncs that compute in bool whatever their inputs: a cached scalar of a float tensor's dtype is not their operand
_BOOL_LOOPS = frozenset([np.logical_and, np.logical_or, np.logical_xor])


def _default_float(x):
    """Bool or integer tensor ``x`` in float32, where a Python float meets it: the result is gpugrad's
    default float, as a weak float gives the default float in NumPy 2 (float64 there), PyTorch and JAX."""
    return emit("Cast", x._data.astype(_FLOAT32), x._device, (x,), {"dtype": _FLOAT32})  # gg.cast's record


_FLOAT32 = np.dtype(np.float32)


def binary(x: TensorLike, y: TensorLike, op_type: str, ufunc=None) -> tuple[Tensor, Tensor]:
    """``x`` and ``y`` as Tensors on one device; a Python number is weak, as in NumPy 2 (NEP 50).

    A Python number takes the other operand's dtype where its kind fits (int32 * 2 is int32,
    float16 * 2.5 is float16); see :func:`gpugrad._dtypes.weak_dtype`. With NumPy ``ufunc`` given, a
    Python int next to a bool or integer tensor takes the dtype that ufunc's loop computes in, as in NumPy 2
    (``arctan2(int8, 1000)`` is float16). A Python float next to a bool or integer tensor gives
    float32, gpugrad's default float (NumPy 2 gives its default, float64; PyTorch and JAX float32).
    An int out of an integer tensor's bounds raises OverflowError naming the op, as NumPy 2 raises.

    Example:
        >>> import gpugrad as gg, numpy as np
        >>> x, y = binary(gg.tensor(np.int32([1])), 2, "Mul")
        >>> y.dtype
        dtype('int32')
    """
    if x.__class__ is Tensor and (y.__class__ is float or y.__class__ is int) \
            and (ufunc is None or ufunc not in _BOOL_LOOPS):  # tensor * 1.01: one lookup
        t = _scalar_tensors.get((y, x._data.dtype, x._device))
        if t is not None:
            return x, t
    if y.__class__ is float and isinstance(x, Tensor) and x._data.dtype.kind in "biu":
        x = _default_float(x)
    elif x.__class__ is float and isinstance(y, Tensor) and y._data.dtype.kind in "biu":
        y = _default_float(y)
    try:
        if ufunc is not None:
            if y.__class__ is int and isinstance(x, Tensor):
                t = _int_operand(y, x, ufunc)
                y = y if t is None else t
            elif x.__class__ is int and isinstance(y, Tensor):
                t = _int_operand(x, y, ufunc)
                x = x if t is None else t
        if not isinstance(y, Tensor):
            y = scalar_tensor(y, x) if isinstance(y, (int, float)) and isinstance(x, Tensor) \
                else ensure_tensor(y, like=x if isinstance(x, Tensor) else None)
        if not isinstance(x, Tensor):
            x = scalar_tensor(x, y) if isinstance(x, (int, float)) else ensure_tensor(x, like=y)
    except OverflowError as e:  # a Python int out of an integer tensor's bounds, as NumPy 2 raises
        raise OverflowError(f"op {op_type!r}: {e}") from None
    if x._device is not y._device:
        raise DeviceError(
            f"op {op_type!r} got tensors on two devices, {x.device!r} and {y.device!r}; "
            f"move one with .to(device)")
    return x, y


def constant_arg(value, name, op_type):
    """``value`` itself, where it is a number the op takes as a constant (a slope, a bound, an epsilon);
    GradientError where it is a tensor a tape follows, whose gradient the op could not give (it
    would be a silent None), with the way out.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.tensor(0.1)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(a)
        ...     try:
        ...         constant_arg(a, "alpha", "LeakyRelu")
        ...     except gg.GradientError as e:
        ...         print(str(e).split(":")[0])
        op 'LeakyRelu' takes alpha as a constant
    """
    if isinstance(value, Tensor):
        for r in _thread_stack() or ():
            if id(value) in r.watched or (isinstance(value, Variable) and value.trainable and r.watch_accessed):
                raise GradientError(
                    f"op {op_type!r} takes {name} as a constant: a tape follows this tensor, and its gradient "
                    f"through {name} would be lost; pass a number (float({name})), or write the formula "
                    f"with gg ops where {name} must be differentiable")
    return value


def elementwise(ufunc, data, device, cost=COSTLY):
    """``ufunc(data)`` for NumPy ufunc ``ufunc`` on ``device``: on the CPU by :func:`cpu_fast.run`
    (split across threads when large for its ``cost`` class), on a GPU the array module's
    function of the same name.

    Example:
        >>> import numpy as np
        >>> elementwise(np.exp, np.zeros(2), CPU).tolist()
        [1.0, 1.0]
    """
    if device is CPU:
        return ufunc(data) if data.size < cost else cpu_fast.run(ufunc, (data,), cost)
    return getattr(device.xp, ufunc.__name__)(data)


def public_ops(module_globals: dict[str, Any], not_ops: tuple[str, ...] = ()) -> list[str]:
    """The public ops of an op module: the functions defined in it (or declared by it) without a leading ``_``,
    each declared a root for ``gg.function``'s capture (:mod:`gpugrad._tracing.declare`) where it is.

    An op module ends with ``__all__ = public_ops(globals())``; a helper that is not an op starts
    with ``_``, or, when other modules use it, is named in ``not_ops``. An op is pure (kind ``OP``)
    unless its definition declares otherwise (``@declare.root(declare.HOST, effects=...)`` on
    ``dropout`` and ``batch_norm``, ``declare.SHAPE`` on ``ones_like``).

    Example:
        >>> from gpugrad.ops import math
        >>> from gpugrad._tracing import declare
        >>> math.__all__[:3], declare.kind_of(math.square)
        (['square', 'square_grad', 'sqrt'], 'op')
    """
    name = module_globals["__name__"]
    names = [k for k, v in module_globals.items()
             if not k.startswith("_") and k not in not_ops and callable(v)
             and getattr(v, "__module__", None) == name and not isinstance(v, type)]
    made: dict[int, Any] = {}  # an alias (radians = deg2rad) stays the same function
    for k in names:
        v = module_globals[k]
        module_globals[k] = made.setdefault(id(v), declare.declared(v))
    return names


def unaliased(x, data):
    """``data``, or a copy of it when it is a view of variable ``x``.

    View ops (reshape, transpose, slicing, ...) return views; a view of a
    Variable would change when the variable is assigned, so it is copied,
    as reading a TensorFlow variable does. Views of tensors are safe.
    """
    if x.__class__ is Tensor or not isinstance(x, Variable):
        return data
    if data is x._data or data.base is not None:
        return data.copy()
    return data


def same_device(tensors, op_type):
    """Raise DeviceError unless every tensor is on the first one's device."""
    dev = tensors[0]._device
    for t in tensors:
        if t._device is not dev:
            raise DeviceError(
                f"op {op_type!r} got tensors on two devices, {dev.name!r} and {t.device!r}; "
                f"move one with .to(device)")
    return dev


def broadcast_error(op_type, *tensors):
    shapes = ", ".join(str(t.shape) for t in tensors)
    return ShapeError(f"op {op_type!r} cannot broadcast shapes {shapes} together")


def binary_error(op_type, exc, x, y):
    """The gpugrad error for NumPy's ValueError or TypeError ``exc`` in binary op ``op_type``:
    a ShapeError when the shapes do not broadcast, else a DTypeError (booleans subtracted,
    integers raised to negative powers, ...)."""
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return broadcast_error(op_type, x, y)
    return DTypeError(f"op {op_type!r} cannot take {x.dtype} and {y.dtype} (shapes {x.shape} and {y.shape}): "
                      f"{exc}; cast with gg.tensor(..., dtype=...)")


def scalar_of_broadcast(a):
    """The one value of ``a`` as a 0-d array if ``a`` is a broadcast of it, else ``None``.

    Gradients of reductions arrive as stride-0 views of a single value; a rule
    that sees one can multiply by a scalar and save a pass over memory.
    """
    if a.ndim and not any(a.strides) and a.size:  # an empty broadcast has no value to take
        return a.reshape(-1)[:1].reshape(())
    return None


def float_dtype_of(x):
    """The float dtype results of ``x`` take: its own, or float32 for integers."""
    return x.dtype if _dt.inexact(x.dtype) else np.dtype(np.float32)


def real_operand(x: TensorLike, op_type: str) -> tuple[Tensor, Any]:
    """``x`` as a Tensor and its array as floats: integers and booleans as float32 (as the activations and
    ``torch.special`` promote them), or DTypeError naming ``op_type`` (complex numbers, strings).

    Example:
        >>> import gpugrad as gg
        >>> t, a = real_operand(gg.tensor([1, 2]), "Selu")
        >>> t.dtype.name, a.dtype.name
        ('int64', 'float32')
    """
    x = unary(x)
    if _dt.floating(x.dtype):
        return x, x._data
    if x.dtype.kind in "biu":
        return x, x._data.astype(np.float32)
    raise DTypeError(f"op {op_type!r} takes real numbers, not {x.dtype} (shape {x.shape})")
