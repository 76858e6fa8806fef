"""Conversion and interop: what becomes a tensor's array, and how a tensor's array goes out.

In: the dtype rules (Python floats become float32, Python ints int64, arrays keep
their dtype), booleans and numbers only, another library's array (PyTorch, JAX)
read through DLPack, and :func:`owned_array`, the copy :func:`gpugrad.tensor`
makes at most once. Out: :class:`ArrayInterop`, the exchange protocols of
:class:`~gpugrad.Tensor` (NumPy's ``__array__``, ``__cuda_array_interface__``,
DLPack), read-only where the consumer can honour it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._tracing import state as _trace
from ..backend import CPU
from ..errors import DeviceError, DTypeError, ShapeError
from .. import _dtypes as _dt

if TYPE_CHECKING:
    from ..backend import Device


_KINDS = {"U": "strings", "S": "bytes", "O": "Python objects", "M": "datetimes", "m": "timedeltas", "V": "records"}


def numeric(array):
    """``array`` if it holds booleans or numbers; else DTypeError naming what it holds."""
    kind = array.dtype.kind
    if not _dt.numeric(array.dtype):
        raise DTypeError(f"a tensor holds booleans or numbers, not {_KINDS.get(kind, 'values')} "
                         f"(dtype {array.dtype}); convert the data first")
    return array


_PYTHON_DATA = (bool, int, float, complex, list, tuple)  # np.asarray of these builds a new array
_PYTHON_CLASSES = frozenset(_PYTHON_DATA)
_FRESH_SOURCES = _PYTHON_DATA + (np.generic,)


def _host_array(data, dtype):
    """A host or device array of ``data`` with gpugrad's dtype rules applied."""
    if dtype is not None:
        dtype = _dt.resolve(dtype)
    if isinstance(data, np.ndarray) or isinstance(getattr(data, "dtype", None), np.dtype):  # NumPy, CuPy
        return numeric(data if dtype is None or data.dtype == dtype else data.astype(dtype))
    try:
        array = np.asarray(data, dtype=dtype)
    except ValueError as e:
        if "inhomogeneous" not in str(e):
            raise
        raise ShapeError(f"a tensor needs nested lists of equal lengths (a rectangular array): {e}") from None
    if dtype is None and array.dtype == np.float64 and isinstance(data, _PYTHON_DATA):
        array = array.astype(np.float32)  # Python floats become float32
    return numeric(array)


def _is_foreign(data):
    """Whether ``data`` is another library's array (PyTorch, JAX, ...), read through DLPack."""
    return (hasattr(data, "__dlpack_device__") and not isinstance(data, (np.ndarray, np.generic))
            and type(data).__module__.partition(".")[0] != "cupy")


def _from_foreign(data, dev):
    """A NumPy or CuPy view of another library's array ``data`` (not a copy yet).

    A PyTorch tensor that requires grad is read through ``detach()``: a gpugrad
    tensor made from it is a constant, so PyTorch's graph is not followed
    (``torch.tensor(t)`` also copies the values only). Another library's GPU
    array goes to a CPU tensor only when the caller moves it to the host.
    """
    if getattr(data, "requires_grad", False) and hasattr(data, "detach"):
        data = data.detach()
    kind, index = (int(k) for k in data.__dlpack_device__())
    if kind == 1:  # kDLCPU
        try:
            return np.from_dlpack(data)
        except (BufferError, TypeError, RuntimeError) as exc:
            return _through_array(data, exc)
    if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
        raise DeviceError(f"a {type(data).__name__} on DLPack device type {kind} is neither on the CPU nor "
                          f"on a CUDA GPU; move it to the host first")
    if dev is CPU:
        raise DeviceError(
            f"the {type(data).__name__} lives on cuda:{index} and gpugrad does not copy another library's GPU "
            f"array to the host by itself: pass device='cuda:{index}' to keep it on the GPU, or move it to "
            f"the host first (for PyTorch, x.cpu())")
    return dev.backend.from_dlpack(data, index)


def _through_array(data, exc):
    """``np.asarray(data)`` where DLPack failed with ``exc``; DTypeError where NumPy cannot read it either."""
    try:
        return np.asarray(data)
    except (TypeError, RuntimeError, ValueError):
        raise DTypeError(f"NumPy cannot read this {type(data).__name__} ({exc}); convert it to a NumPy "
                         f"dtype first (for PyTorch's bfloat16, x.float())") from None


def _may_share(array, source, dev):
    """Whether ``array``, made on ``dev`` from ``source``, may share memory with it."""
    if array is source:
        return True
    if isinstance(source, (np.ndarray, dev.array_type)):
        return array.base is not None  # a cast or a move made a new array; a view (of a subclass) shares
    if isinstance(source, _FRESH_SOURCES):
        return False
    on_gpu = hasattr(array, "__cuda_array_interface__")
    if on_gpu != hasattr(source, "__cuda_array_interface__"):
        return False  # copied between the host and a GPU
    return bool(dev.xp.may_share_memory(array, source))


def copy_on(array, dev):
    """A copy of ``array`` on ``dev`` (CuPy copies onto the current GPU)."""
    if dev is CPU:
        return array.copy()
    previous = dev.backend.use_device(dev.index)
    try:
        return array.copy()
    finally:
        if previous != dev.index:
            dev.backend.use_device(previous)


def owned_array(data, dtype, dev):
    """``data`` (an array or Python data, not a gpugrad tensor: pass its ``_data``) as an array on ``dev``
    that nothing else holds: gg.tensor's copy, made at most once.

    A dtype cast or a move between devices already makes a new array; only an
    array that would otherwise be shared is copied.
    """
    if data.__class__ in _PYTHON_CLASSES:  # Python data: np.asarray builds a new array
        return dev.backend.asarray(_host_array(data, dtype), None, dev.index)
    if not isinstance(data, (np.ndarray, dev.array_type)) and _is_foreign(data):
        data = _from_foreign(data, dev)
    array = dev.backend.asarray(_host_array(data, dtype), None, dev.index)
    if array is not data and data.__class__ is array.__class__ and array.base is None:
        return array  # a cast or a move between devices made it
    return copy_on(array, dev) if _may_share(array, data, dev) else array


def read_only(array):
    """A view of NumPy ``array`` that refuses writes."""
    view = array.view()
    view.setflags(write=False)
    return view


class ArrayInterop:
    """The array-exchange protocols of :class:`~gpugrad.Tensor` (its base class): ``np.asarray(t)``,
    ``__cuda_array_interface__`` and DLPack hand out the tensor's own buffer, read-only where the
    consumer can honour it, and a GPU tensor never goes to the host through them silently.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> t = gg.tensor([1.0, 2.0])
        >>> np.asarray(t).flags.writeable, np.from_dlpack(t).tolist()
        (False, [1.0, 2.0])
    """

    __slots__ = ()
    if TYPE_CHECKING:
        _data: Any  # the NumPy or CuPy array
        _device: Device

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: a read-only view of a CPU tensor (a copy where ``dtype`` or ``copy=True`` asks).

        Example:
            >>> import numpy as np, gpugrad as gg
            >>> view = np.asarray(gg.tensor([1.0, 2.0]))
            >>> view.flags.writeable, np.array(gg.tensor([1.0])).flags.writeable
            (False, True)
        """
        if _trace.active:
            _trace.check_host_read(self, "np.asarray()")
        if self._device is not CPU:
            raise DeviceError(
                f"np.asarray() of a tensor on {self._device.name!r} would copy it silently; call .numpy()")
        data = self._data
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(copy=False) of a {data.dtype} tensor as {np.dtype(dtype)} needs a copy")
            return data.astype(dtype)
        return data.copy() if copy else read_only(data)

    @property
    def __cuda_array_interface__(self):
        """The GPU buffer itself, shared and writable as ``.data`` (CuPy, Numba and PyTorch read it)."""
        if self._device is CPU:
            raise AttributeError("a CPU tensor has no __cuda_array_interface__")
        if _trace.active:
            _trace.check_host_read(self, "__cuda_array_interface__")
        return self._data.__cuda_array_interface__

    def __dlpack__(self, *args, **kwargs):
        """The buffer, shared: read-only on the CPU where the consumer speaks DLPack 1 (NumPy 2 does)."""
        if _trace.active:
            _trace.check_host_read(self, "DLPack export")
        if self._device is CPU:
            try:
                return read_only(self._data).__dlpack__(*args, **kwargs)
            except BufferError:
                pass  # a consumer of DLPack 0.x, which cannot mark the buffer read-only, shares it as .data
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()
