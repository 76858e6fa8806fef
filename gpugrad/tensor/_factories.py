"""The functions that make tensors: :func:`tensor` (a copy), :func:`as_tensor` (shared when it can),
:func:`from_numpy` and :func:`from_dlpack` (shared), and :func:`ensure_tensor`, the ops' conversion of
their operands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._tracing import declare
from ..backend import CPU, get_device
from ..errors import DeviceError
from .. import _dtypes as _dt
from ._interop import numeric
from ._tensor import Tensor

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike

_WEAK_CLASSES = frozenset([bool, int, float, complex])


@declare.root()
def tensor(data: Any, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A constant :class:`Tensor` holding a copy of ``data``; a tape follows it only after ``tape.watch``.

    ``data``: a Python number or nested list, a NumPy or CuPy array, a gpugrad
    tensor, or another library's array (PyTorch, JAX; read through DLPack). The
    values are copied, as ``torch.tensor`` and ``tf.constant`` copy, so writing
    into ``data`` later changes nothing here; :func:`from_numpy` shares instead.
    A PyTorch tensor that requires grad gives its values (PyTorch's graph is
    not followed); one on a GPU goes to a CPU tensor only once moved to the
    host (``x.cpu()``).

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> gg.tensor(1.5).dtype, gg.tensor([1, 2]).dtype
        (dtype('float32'), dtype('int64'))
        >>> a = np.array([1.0, 2.0])
        >>> t = gg.tensor(a)
        >>> a[0] = 99.0
        >>> t.numpy().tolist()
        [1.0, 2.0]
    """
    return Tensor(data, dtype, device)


@declare.root()
def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor that shares memory with NumPy ``array``: no copy (PyTorch's ``torch.from_numpy``).

    Writes into ``array`` (or into the memory it views) show in the tensor,
    and a tape that recorded the tensor is not told: do not change the array
    while a tape that read it may still compute a gradient. :func:`tensor`
    copies instead. Strided and read-only arrays are shared as they are (the
    tensor never writes into them); a subclass (``np.memmap``) is shared as a
    plain ``ndarray`` view. :func:`tensor` always copies; :func:`as_tensor`
    shares when it can, as PyTorch's does.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> a = np.zeros(3, dtype=np.float32)
        >>> t = gg.from_numpy(a)
        >>> a[0] = 7.0
        >>> t.numpy().tolist(), t.device
        ([7.0, 0.0, 0.0], 'cpu')
    """
    if not isinstance(array, np.ndarray) or isinstance(array, np.ma.MaskedArray):
        kind = "masked array (its mask would be lost)" if isinstance(array, np.ndarray) else type(array).__name__
        raise TypeError(f"from_numpy takes a NumPy array, not a {kind}; gg.tensor(data) copies anything else")
    return Tensor._wrap(numeric(array.view(np.ndarray) if type(array) is not np.ndarray else array), CPU)


@declare.root()
def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with ``obj``, any DLPack producer (NumPy, CuPy, PyTorch, JAX), no copy.

    A producer on GPU N gives a tensor on ``"cuda:N"``; one on the host, a CPU
    tensor. As with :func:`from_numpy`, writes into the producer's memory show
    in the tensor and a tape that recorded it is not told. A gpugrad tensor or
    Variable comes back as itself (a Variable stays version-checked).

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> a = np.arange(3.0)
        >>> t = gg.from_dlpack(a)
        >>> t.device, np.shares_memory(t.numpy(), a)
        ('cpu', True)
    """
    if isinstance(obj, Tensor):
        return obj  # shares its own memory; a Variable read through a copy would lose its version check
    kind, index = obj.__dlpack_device__()
    if kind == 1:  # kDLCPU
        return Tensor._wrap(np.from_dlpack(obj), CPU)
    if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
        raise DeviceError(f"from_dlpack: DLPack device type {kind} is neither the CPU nor a CUDA GPU")
    dev = get_device(f"cuda:{index}")
    return Tensor._wrap(dev.backend.from_dlpack(obj, index), dev)


@declare.root()
def as_tensor(data: Any, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """``data`` as a tensor, sharing its memory when it can (PyTorch's ``torch.as_tensor``).

    A tensor of the asked dtype and device comes back as itself; a NumPy array
    (for a CPU tensor) or a CuPy array (for one on its GPU) of the asked dtype
    is shared, as :func:`from_numpy` and :func:`from_dlpack` share it, so
    writes into it show in the tensor and a tape that recorded it is not told.
    Anything else (Python data, another dtype, another device) is converted
    into a new array, as :func:`tensor` does.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> a = np.zeros(2, dtype=np.float32)
        >>> np.shares_memory(gg.as_tensor(a).numpy(), a), np.shares_memory(gg.as_tensor(a, "float64").numpy(), a)
        (True, False)
    """
    dev = get_device(device)
    wanted = None if dtype is None else _dt.resolve(dtype)
    if isinstance(data, Tensor):
        if data._device is dev and (wanted is None or data._data.dtype == wanted):
            return data
        data = data._data if data._device is dev else data._device.backend.to_numpy(data._data)
    elif isinstance(data, dev.array_type) and (wanted is None or data.dtype == wanted) \
            and not isinstance(data, np.ma.MaskedArray):
        return Tensor._wrap(numeric(data.view(dev.array_type) if type(data) is not dev.array_type else data), dev)
    return Tensor(data, dtype, dev)


@declare.root()
def ensure_tensor(value: Any, like: Tensor | None = None) -> Tensor:
    """``value`` itself if it is a Tensor, else a new tensor (a copy, as :func:`tensor`) on ``like``'s device.

    The ops convert their non-tensor operands with it, so an op never records
    a NumPy array the caller may write into later. A Python number next to
    ``like`` is weak, as in NumPy 2 (:func:`gpugrad._dtypes.weak_dtype`): an int
    next to an int32 tensor is int32, a float next to a float16 tensor float16.
    """
    if isinstance(value, Tensor):
        return value
    if like is None:
        return Tensor(value, None, None)
    dev = like._device
    if value.__class__ in _WEAK_CLASSES:  # NumPy 2's weak scalar (NEP 50), made on the host
        host = _dt.weak_array(value, like._data.dtype)  # so an int out of bounds raises OverflowError on any device
        return Tensor._wrap(host if dev is CPU else dev.backend.asarray(host, None, dev.index), dev)
    return Tensor(value, None, dev)
