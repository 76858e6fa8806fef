"""Tensors made from nothing or from another's shape: zeros, ones, full, *_like, arange, linspace, eye, tri.

``identity`` is not here: ``gg.identity`` is TensorFlow's ``tf.identity`` (gpugrad.ops.elementwise.control);
``gg.eye(n)`` is NumPy's ``np.identity(n)``.

A new constant has no gradient path, and none of these record anything, except where a
tensor gives the values: ``full`` / ``full_like`` with a tensor fill and ``linspace`` with
tensor endpoints are written with recorded ops (broadcast_to, cast, multiply, add, where),
so they are differentiable with respect to that tensor, as in JAX and PyTorch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _dtypes as _dt
from ...backend import get_device
from ...errors import DeviceError, DTypeError, ShapeError
from ...tensor import Tensor
from ..base import public_ops, unary, zeros_of
from ..elementwise.arithmetic import add, multiply, subtract, where
from ..elementwise.control import cast
from .shape import broadcast_to
from ..._tracing import declare

if TYPE_CHECKING:
    from ..._typing import DTypeLike, DeviceLike, Shape, TensorLike




def _make(xp_fn, shape, fill, dtype, device):
    dev = get_device(device)
    dtype = _dt.resolve(dtype if dtype is not None else np.float32)
    with_index = dev.backend.asarray  # keeps the GPU's current device right
    if fill is None:
        data = getattr(dev.xp, xp_fn)(shape, dtype=dtype)
    else:
        data = dev.xp.full(shape, fill, dtype=dtype)
    return Tensor._wrap(data if dev.index == 0 else with_index(data, None, dev.index), dev)


def zeros(shape: Shape, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype`` says otherwise).

    Example:
        >>> import gpugrad as gg
        >>> gg.zeros((2,)).numpy().tolist()
        [0.0, 0.0]
    """
    return _make("zeros", shape, None, dtype, device)


def ones(shape: Shape, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype`` says otherwise).

    Example:
        >>> import gpugrad as gg
        >>> gg.ones((2,)).numpy().tolist()
        [1.0, 1.0]
    """
    return _make("ones", shape, None, dtype, device)


def full(shape: Shape, value: float | Tensor, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor filled with ``value`` (float32 for a number unless ``dtype`` says otherwise).

    A tensor ``value`` (0-d, or any shape that broadcasts to ``shape``, as ``np.full``) keeps its
    dtype and device, as ``np.full`` keeps a 0-d array's dtype, and the result is differentiable
    with respect to it (the gradient is dy summed over the broadcast, as ``jnp.full``).

    Example:
        >>> import gpugrad as gg
        >>> gg.full((2,), 7.0).numpy().tolist()
        [7.0, 7.0]
        >>> v = gg.tensor(3.0, dtype="float64")
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(v)
        ...     y = gg.full((2, 3), v)
        >>> y.dtype, tape.gradient(y, v).item()
        (dtype('float64'), 6.0)
    """
    if isinstance(value, Tensor):
        return _filled(value, shape, dtype, device, "full")
    return _make("full", shape, value, dtype, device)


def _filled(value, shape, dtype, device, name):
    """Tensor ``value`` broadcast to ``shape`` in ``dtype`` (its own by default), recorded: differentiable in it."""
    if device is not None and get_device(device) is not value._device:
        raise DeviceError(f"{name}: the fill is on {value.device!r}, not on device {get_device(device).name!r}; "
                          f"move it with .to(device)")
    if dtype is not None:
        value = cast(value, dtype)
    return broadcast_to(value, (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))


@declare.root(declare.SHAPE)
def zeros_like(x: TensorLike) -> Tensor:
    """Zeros with ``x``'s shape, dtype and device.

    Example:
        >>> import gpugrad as gg
        >>> gg.zeros_like(gg.tensor([1.0, 2.0])).numpy().tolist()
        [0.0, 0.0]
    """
    return zeros_of(x)


@declare.root(declare.SHAPE)
def ones_like(x: TensorLike) -> Tensor:
    """Ones with ``x``'s shape, dtype and device.

    Example:
        >>> import gpugrad as gg
        >>> gg.ones_like(gg.tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 1.0]
    """
    d, xp = x._data, x._device.xp
    # ones_like and ones are Python wrappers; a 0-d one (a loss's seed gradient) is made directly
    return Tensor._wrap(xp.asarray(1, d.dtype) if d.ndim == 0 else xp.ones(d.shape, d.dtype), x._device)


@declare.root(declare.SHAPE)
def full_like(x: TensorLike, fill_value: float | Tensor, dtype: DTypeLike = None, shape: Shape | None = None) -> Tensor:
    """A tensor of ``x``'s shape (or ``shape``), dtype (or ``dtype``) and device filled with ``fill_value``.

    A tensor ``fill_value`` is cast to that dtype (as ``np.full_like``) and the result is differentiable
    with respect to it, as :func:`full`.

    Example:
        >>> import gpugrad as gg
        >>> gg.full_like(gg.tensor([1.0, 2.0]), 7).numpy().tolist()
        [7.0, 7.0]
    """
    x = unary(x)
    dtype = _dt.resolve(dtype if dtype is not None else x._data.dtype)
    shape = x.shape if shape is None else shape
    if isinstance(fill_value, Tensor):
        return _filled(fill_value, shape, dtype, x._device, "full_like")
    return _place(x._device.xp.full(shape, fill_value, dtype=dtype), x._device)


def _place(data, dev):
    """Array ``data`` (made by ``dev.xp``) as a tensor on ``dev``."""
    return Tensor._wrap(data if dev.index == 0 else dev.backend.asarray(data, None, dev.index), dev)


def _count(value, name, op_type):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{op_type}: {name} must be an int, not {value!r}")
    if value < 0:
        raise ShapeError(f"{op_type}: {name} must be non-negative, got {value}")
    return int(value)


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def arange(start: float, stop: float | None = None, step: float | None = None, dtype: DTypeLike = None,
           device: DeviceLike = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` ``step`` apart, as ``np.arange``.

    The dtype is int64 when ``start``, ``stop`` and ``step`` are ints, else
    float32 (gpugrad's default float), unless ``dtype`` says otherwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.arange(4).numpy().tolist()
        [0, 1, 2, 3]
        >>> gg.arange(0.0, 1.0, 0.25).numpy().tolist()
        [0.0, 0.25, 0.5, 0.75]
    """
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
            raise DTypeError(f"arange: {name} must be a real number, not {v!r}")
    if step == 0:
        raise ShapeError("arange: step must not be zero")
    if dtype is None:
        dtype = np.int64 if _is_int(start) and _is_int(stop) and _is_int(step) else np.float32
    dev = get_device(device)
    return _place(dev.xp.arange(start, stop, step, dtype=_dt.resolve(dtype)), dev)


def linspace(start: float | TensorLike, stop: float | TensorLike, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: DTypeLike = None, device: DeviceLike = None,
             axis: int = 0) -> Tensor | tuple[Tensor, Any]:
    """``num`` evenly spaced values from ``start`` to ``stop`` (included with ``endpoint``), as ``np.linspace``.

    For numbers the dtype is float32 unless ``dtype`` says otherwise. ``start`` and ``stop``
    may be tensors or arrays (broadcast together, the samples along ``axis``, as NumPy): then the
    dtype is theirs where it is a float (float32 for integers), and the result is differentiable
    with respect to them (``d/dstart = 1 - i / div``, ``d/dstop = i / div``, as ``jnp.linspace``).
    With ``retstep`` it returns ``(values, step)`` (a tensor for tensor endpoints).

    Example:
        >>> import gpugrad as gg
        >>> gg.linspace(0.0, 1.0, 5).numpy().tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
        >>> gg.linspace(0, 1, 2, endpoint=False, retstep=True)[1]
        0.5
        >>> a = gg.tensor(1.0)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(a)
        ...     y = gg.linspace(a, 3.0, 3)
        >>> y.numpy().tolist(), tape.gradient(y, a).item()
        ([1.0, 2.0, 3.0], 1.5)
    """
    num = _count(num, "num", "linspace")
    if not (_is_number(start) and _is_number(stop)):
        return _linspace_tensors(start, stop, num, endpoint, retstep, dtype, device, axis)
    if axis not in (0, -1):
        raise ShapeError(f"linspace: axis {axis} is out of bounds for the 1-D result of number endpoints")
    dev = get_device(device)
    dtype = _dt.resolve(dtype if dtype is not None else np.float32)
    data = dev.xp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)
    out = _place(data, dev)
    if retstep:
        div = (num - 1) if endpoint else num
        return out, ((stop - start) / div if div > 0 else float("nan"))
    return out


def _is_number(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _linspace_tensors(start, stop, num, endpoint, retstep, dtype, device, axis):
    """linspace with tensor or array endpoints, written with recorded ops, NumPy's formula:
    ``i * step + start`` with ``step = (stop - start) / div``, the last sample ``stop`` itself."""
    from .ordering import moveaxis

    dev = None if device is None else get_device(device)
    ends = []
    for name, v in (("start", start), ("stop", stop)):
        if isinstance(v, Tensor):
            if dev is not None and v._device is not dev:
                raise DeviceError(f"linspace: {name} is on {v.device!r}, not on device {dev.name!r}; "
                                  f"move it with .to(device)")
        elif not _is_number(v):
            v = Tensor(np.asarray(v), None, dev)
        if isinstance(v, Tensor) and not (v._data.dtype.kind in "iuf" or _dt.is_bfloat16(v._data.dtype)):
            raise DTypeError(f"linspace: {name} must hold real numbers, not {v.dtype}")
        ends.append(v)
    tensors = [v for v in ends if isinstance(v, Tensor)]
    dev = tensors[0]._device
    if any(t._device is not dev for t in tensors):
        raise DeviceError(f"linspace: start is on {tensors[0].device!r} and stop on {tensors[-1].device!r}; "
                          f"move one with .to(device)")
    promoted = np.result_type(*[t._data.dtype for t in tensors])
    work = promoted if _dt.floating(promoted) else np.dtype(np.float32)  # gpugrad's default float for ints
    start, stop = [cast(v, work) if isinstance(v, Tensor) else Tensor(np.asarray(v, work), None, dev) for v in ends]
    shape = np.broadcast_shapes(start.shape, stop.shape)
    div = (num - 1) if endpoint else num
    i = dev.backend.asarray(np.arange(num, dtype=work).reshape((num,) + (1,) * len(shape)), None, dev.index)
    delta = subtract(stop, start)
    step = delta / div if div > 0 else multiply(delta, float("nan"))  # NumPy's step of one sample: NaN
    out = add(multiply(Tensor._wrap(i, dev), step if div > 0 else delta), start)  # i * step + start (i is 0 alone)
    out = broadcast_to(out, (num,) + shape)
    if endpoint and num > 1:  # the last sample is stop itself, as NumPy sets it
        last = dev.backend.asarray((np.arange(num) == num - 1).reshape((num,) + (1,) * len(shape)), None, dev.index)
        out = where(Tensor._wrap(last, dev), broadcast_to(stop, (num,) + shape), out)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    if dtype is not None:
        wanted = _dt.resolve(dtype)
        if wanted.kind in "iu":  # NumPy floors before an integer cast
            from ..elementwise.ufuncs import floor
            out = floor(out)
        out = cast(out, wanted)
    return (out, step) if retstep else out


def eye(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:  # noqa: N803 - NumPy's names
    """An ``N`` x ``M`` matrix with ones on diagonal ``k`` (0 the main, > 0 above), as ``np.eye``.

    Example:
        >>> import gpugrad as gg
        >>> gg.eye(2, 3, k=1).numpy().tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    return _diagonal_matrix("eye", N, M, k, dtype, device)


def tri(N: int, M: int | None = None, k: int = 0, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:  # noqa: N803 - NumPy's names
    """An ``N`` x ``M`` matrix with ones at and below diagonal ``k``, zeros above, as ``np.tri``.

    Example:
        >>> import gpugrad as gg
        >>> gg.tri(2, 3).numpy().tolist()
        [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]
    """
    return _diagonal_matrix("tri", N, M, k, dtype, device)


def _diagonal_matrix(name, N, M, k, dtype, device):  # noqa: N803 - NumPy's names
    """``xp.<name>(N, M, k, dtype)`` (eye or tri) on ``device``, the arguments checked; float32 by default."""
    N = _count(N, "N", name)
    M = N if M is None else _count(M, "M", name)
    if not _is_int(k):
        raise DTypeError(f"{name}: k must be an int, not {k!r}")
    dev = get_device(device)
    maker = getattr(dev.xp, name)
    return _place(maker(N, M, int(k), dtype=_dt.resolve(dtype if dtype is not None else np.float32)), dev)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "linspace", "eye", "tri"
    ]
