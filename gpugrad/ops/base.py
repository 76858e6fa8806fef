"""What every op module shares: operand conversion, device checks, fused dispatch.

An op function converts its operands with :func:`unary` / :func:`binary`,
computes its output array with the device's array module, and ends in
:func:`gpugrad.recorder.emit`. A hot gradient op runs :func:`fused`: NumPy on
the CPU, the CUDA kernel of the same name from ``kernels/`` on a GPU.
"""
import numpy as np

from ..backend import CPU
from ..backend.cpu_threads import SPLIT_MIN_CHEAP, SPLIT_MIN_COSTLY, split_formula, split_ufunc  # noqa: F401
from ..errors import DeviceError, DTypeError, ShapeError
from ..recorder import emit, emit_many  # noqa: F401 - re-exported for op modules
from ..tensor import Tensor, Variable, ensure_tensor

_scalar_tensors = {}  # (value, dtype, device) -> 0-d Tensor, for Python numbers in ops
_host_scalars = {}  # (value, dtype) -> 0-d NumPy array, for CPU gradient formulas


def unary(x):
    """``x`` as a Tensor (a Python number or array goes to the default device)."""
    return x if isinstance(x, Tensor) else ensure_tensor(x)


def scalar_tensor(value, like):
    """A cached 0-d tensor of Python number ``value`` in ``like``'s float dtype and device.

    Converting a Python float costs NumPy more than the op itself on small arrays.
    """
    if value == 0 or like._data.dtype.kind not in "fc" or value != value:
        return ensure_tensor(value, like=like)  # -0.0 == 0.0 and NaN != NaN: not cacheable
    key = (value, like._data.dtype, like._device)
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

UINT_OF = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}
_BOOL = np.dtype(np.bool_)
SELECT_MIN = 2048  # a smaller mask: np.where's one call costs less than select's three


def select(mask, a, b):
    """``np.where(mask, a, b)`` bit for bit, without a branch per element (CPU only).

    ``mask`` is a boolean NumPy array; ``a`` and ``b`` are NumPy arrays (or
    NumPy scalars) of one float dtype, and all three broadcast together. The
    bits are blended as unsigned integers, ``b ^ ((a ^ b) * mask)``, so NaN
    payloads, signed zeros, infinities and subnormals come out as np.where's.
    NumPy 2.4's where branches per element: on a mask of mixed signs it costs
    10x more at 256 Ki float32 elements. Anything else (other dtypes, a small
    mask) goes to np.where. The result is an array, 0-d ones included.

    Example:
        >>> import numpy as np
        >>> select(np.array([True, False]), np.array([1.0, -0.0]), np.array([-0.0, np.nan])).tolist()
        [1.0, nan]
    """
    u = UINT_OF.get(a.dtype)
    if u is None or b.dtype != a.dtype or mask.dtype != _BOOL or mask.size < SELECT_MIN:
        return np.where(mask, a, b)
    bb = b.view(u)
    return np.bitwise_xor(bb, np.bitwise_xor(a.view(u), bb) * mask, out=...).view(a.dtype)


def binary(x, y, op_type):
    """``x`` and ``y`` as Tensors on one device; a Python number takes the other's dtype."""
    if x.__class__ is Tensor and (y.__class__ is float or y.__class__ is int):  # tensor * 1.01: one lookup
        t = _scalar_tensors.get((y, x._data.dtype, x._device))
        if t is not None:
            return x, t
    if not isinstance(y, Tensor):
        y = scalar_tensor(y, x) if isinstance(y, (int, float)) and isinstance(x, Tensor) \
            else ensure_tensor(y, like=x if isinstance(x, Tensor) else None)
    if not isinstance(x, Tensor):
        x = scalar_tensor(x, y) if isinstance(x, (int, float)) else ensure_tensor(x, like=y)
    if x._device is not y._device:
        raise DeviceError(
            f"op {op_type!r} got tensors on two devices, {x.device!r} and {y.device!r}; "
            f"move one with .to(device)")
    return x, y


def elementwise(ufunc, data, device, split_min=SPLIT_MIN_COSTLY):
    """``ufunc(data)`` for NumPy ufunc ``ufunc`` on ``device``: on the CPU split across threads
    from ``split_min`` elements, on a GPU the array module's function of the same name.

    Example:
        >>> import numpy as np
        >>> elementwise(np.exp, np.zeros(2), CPU).tolist()
        [1.0, 1.0]
    """
    if device is CPU:
        return ufunc(data) if data.size < split_min else split_ufunc(ufunc, data)
    return getattr(device.xp, ufunc.__name__)(data)


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


def fused(kernel_name, cpu_formula, device, *arrays, **params):
    """Run ``cpu_formula(*arrays, **params)`` on the CPU, else the fused kernel."""
    try:
        if device is CPU:
            return cpu_formula(*arrays, **params)
        return device.backend.fused(kernel_name, *arrays, **params)
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise ShapeError(f"fused kernel {kernel_name!r} cannot broadcast shapes {shapes} together") from None


# The upstream gradient array the backward sweep may overwrite: set by the sweep only
# while it runs a rule declared ``donates_dy`` whose dy nobody else holds (see gpugrad.tape);
# the first fused gradient op that takes it clears it. Another thread cannot hold that array.
donated = [None]


def _take_donated(a, dy):
    """Whether ``dy``'s buffer is donated and fits the result of ``a``'s fused gradient; taking it."""
    d = dy._data
    if d is donated[0] and d.dtype == a._data.dtype and d.shape == a._data.shape:
        donated[0] = None
        return True
    return False


def writes_out(cpu_formula):
    """Mark a hot gradient's CPU formula as taking ``out=``, so a free dy buffer can hold its result."""
    cpu_formula.writes_out = True
    return cpu_formula


def hot_grad(op_type, kernel_name, cpu_formula, a, dy, attrs=None):
    """Emit fused gradient op ``op_type`` of saved tensor ``a`` and upstream ``dy``.

    On the CPU ``cpu_formula(a, dy, **attrs)`` computes it with NumPy; on a
    GPU the kernel ``kernels/<kernel_name>.cu`` does, in one pass.
    """
    dev = a._device
    if dy._device is not dev:
        same_device((a, dy), op_type)
    try:
        if dev is CPU:
            if a._data.size >= SPLIT_MIN_CHEAP and hasattr(cpu_formula, "writes_out"):  # across threads
                free = donated[0] is not None and _take_donated(a, dy)
                data = split_formula(cpu_formula, (a._data, dy._data), dy._data if free else None, attrs)
            elif donated[0] is not None and hasattr(cpu_formula, "writes_out") and _take_donated(a, dy):
                data = cpu_formula(a._data, dy._data, out=dy._data)  # dy's buffer is free: reuse it
            elif attrs is None:
                data = cpu_formula(a._data, dy._data)
            else:
                data = cpu_formula(a._data, dy._data, **attrs)
        else:
            data = dev.backend.fused(kernel_name, a._data, dy._data, **(attrs or {}))
    except ValueError:
        raise broadcast_error(op_type, a, dy) from None
    return emit(op_type, data, dev, (a, dy), attrs)


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
    return x.dtype if x.dtype.kind in "fc" else np.dtype(np.float32)
