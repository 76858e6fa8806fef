"""Tensors (immutable arrays on a device) and Variables (mutable, trainable).

A :class:`Tensor` wraps one NumPy or CuPy array and the :class:`Device` it
lives on; nothing else, so creating one on the hot path is cheap. Operators and
method forms (``x + y``, ``x.sum()``) are the op functions of :mod:`gpugrad.ops`,
installed on the class when the package is imported.

dtype rules: Python floats (and lists of them) become float32, Python ints
int64, NumPy/CuPy arrays (and PyTorch/JAX arrays) keep their dtype unless
``dtype=`` says otherwise.

Memory ownership, as in PyTorch and TensorFlow: :func:`tensor` (and
``Tensor(...)``, ``Variable(...)``) copy their data, so a later write into the
source array cannot change a tensor a tape recorded; :func:`from_numpy` and
:func:`from_dlpack` share the source's memory and say so. What a tensor hands
out cannot be written: ``np.asarray(t)`` and ``t.numpy()`` are read-only views
on the CPU (NumPy raises ``ValueError: assignment destination is read-only``),
``t.numpy()`` of a GPU tensor is a read-only host copy and a Variable's a
writable snapshot. ``t.data`` is the raw array, shared and writable.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ._tracing import declare
from ._tracing import state as _trace
from .backend import CPU, get_device
from .errors import DeviceError, DTypeError, ShapeError
from . import _device_checks, _dtypes as _dt

if TYPE_CHECKING:
    from ._typing import Axis, DeviceLike, DTypeLike, Shape, TensorLike
    from .backend import Device
    from .ops import (activations as _activations, arithmetic as _arithmetic,
                      linalg as _linalg, losses as _losses,
                      math as _math, ordering as _ordering, reductions as _reductions, shape as _shape,
                      statistics as _statistics, structure as _structure)


_KINDS = {"U": "strings", "S": "bytes", "O": "Python objects", "M": "datetimes", "m": "timedeltas", "V": "records"}


def _numeric(array):
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
        return _numeric(data if dtype is None or data.dtype == dtype else data.astype(dtype))
    try:
        array = np.asarray(data, dtype=dtype)
    except ValueError as e:
        if "inhomogeneous" not in str(e):
            raise
        raise ShapeError(f"a tensor needs nested lists of equal lengths (a rectangular array): {e}") from None
    if dtype is None and array.dtype == np.float64 and isinstance(data, _PYTHON_DATA):
        array = array.astype(np.float32)  # Python floats become float32
    return _numeric(array)


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


def _copy_on(array, dev):
    """A copy of ``array`` on ``dev`` (CuPy copies onto the current GPU)."""
    if dev is CPU:
        return array.copy()
    previous = dev.backend.use_device(dev.index)
    try:
        return array.copy()
    finally:
        if previous != dev.index:
            dev.backend.use_device(previous)


def _owned_array(data, dtype, dev):
    """``data`` as an array on ``dev`` that nothing else holds: gg.tensor's copy, made at most once.

    A dtype cast or a move between devices already makes a new array; only an
    array that would otherwise be shared is copied.
    """
    if data.__class__ in _PYTHON_CLASSES:  # Python data: np.asarray builds a new array
        return dev.backend.asarray(_host_array(data, dtype), None, dev.index)
    if isinstance(data, Tensor):
        data = data._data
    elif not isinstance(data, (np.ndarray, dev.array_type)) and _is_foreign(data):
        data = _from_foreign(data, dev)
    array = dev.backend.asarray(_host_array(data, dtype), None, dev.index)
    if array is not data and data.__class__ is array.__class__ and array.base is None:
        return array  # a cast or a move between devices made it
    return _copy_on(array, dev) if _may_share(array, data, dev) else array


def _read_only(array):
    """A view of NumPy ``array`` that refuses writes."""
    view = array.view()
    view.setflags(write=False)
    return view


def _broadcast_shape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


class Tensor:
    """An immutable array on a device, the value type of every op.

    Nothing writes into a tensor: ``t += 1`` makes a new tensor and rebinds
    ``t`` (as for Python numbers), ``t[i] = v`` is an error; a
    :class:`Variable` is the mutable kind.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0], [3.0, 4.0]], device="cpu")
        >>> (x * 2 + 1).sum().item()
        24.0
        >>> x.shape, x.dtype, x.device
        ((2, 2), dtype('float32'), 'cpu')
    """

    __slots__ = ("_data", "_device", "__weakref__")
    __array_priority__ = 1000
    # NumPy's functions and ufuncs run gpugrad's ops (gpugrad._numpy installs both at import):
    # np.exp(t) is gg.exp(t), ndarray + t is np.add(ndarray, t), np.fft.fft(t) a TypeError
    __array_ufunc__: Any
    __array_function__: Any

    if TYPE_CHECKING:  # what gpugrad.ops.methods.install attaches at import, declared for type checkers
        _data: Any  # the NumPy or CuPy array
        _device: Device

        # operators: gg.add, gg.subtract, ... (gg.remainder, gg.matmul, gg.getitem), and reflected
        def __add__(self, other: TensorLike) -> Tensor: ...
        def __sub__(self, other: TensorLike) -> Tensor: ...
        def __mul__(self, other: TensorLike) -> Tensor: ...
        def __truediv__(self, other: TensorLike) -> Tensor: ...
        def __pow__(self, other: TensorLike) -> Tensor: ...
        def __mod__(self, other: TensorLike) -> Tensor: ...
        def __matmul__(self, other: TensorLike) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __getitem__(self, key: Any) -> Tensor: ...
        def __radd__(self, other: TensorLike) -> Tensor: ...
        def __rsub__(self, other: TensorLike) -> Tensor: ...
        def __rmul__(self, other: TensorLike) -> Tensor: ...
        def __rtruediv__(self, other: TensorLike) -> Tensor: ...
        def __rpow__(self, other: TensorLike) -> Tensor: ...
        def __rmod__(self, other: TensorLike) -> Tensor: ...
        def __rmatmul__(self, other: TensorLike) -> Tensor: ...
        def __setitem__(self, key: Any, value: Any) -> None: ...  # raises TypeError: tensors are immutable
        # comparisons: elementwise boolean tensors, not recorded
        def __lt__(self, other: TensorLike) -> Tensor: ...
        def __le__(self, other: TensorLike) -> Tensor: ...
        def __gt__(self, other: TensorLike) -> Tensor: ...
        def __ge__(self, other: TensorLike) -> Tensor: ...
        def __eq__(self, other: object) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: object) -> Tensor: ...  # type: ignore[override]

        # the method forms of ops (each module's TENSOR_METHODS)
        abs = _arithmetic.abs
        exp = _math.exp
        log = _math.log
        sqrt = _math.sqrt
        square = _math.square
        tanh = _activations.tanh
        sigmoid = _activations.sigmoid
        relu = _activations.relu
        broadcast_to = _shape.broadcast_to
        expand_dims = _shape.expand_dims
        squeeze = _shape.squeeze
        ravel = _ordering.ravel
        swapaxes = _ordering.swapaxes
        repeat = _ordering.repeat
        nonzero = _ordering.nonzero
        logsumexp = _reductions.logsumexp
        ptp = _statistics.ptp
        all = _statistics.all
        any = _statistics.any
        matmul = _linalg.matmul
        diagonal = _structure.diagonal
        softmax = _losses.softmax
        log_softmax = _losses.log_softmax

        def reshape(self, *shape: Any) -> Tensor: ...  # x.reshape(2, 3) or x.reshape((2, 3))
        def transpose(self, *axes: Any) -> Tensor: ...  # x.transpose(), x.transpose(1, 0), x.transpose((1, 0))
        # ndarray's methods with NumPy's arguments (gpugrad._numpy.methods)
        def flatten(self, order: str = "C") -> Tensor: ...
        def clip(self, min: TensorLike | None = None, max: TensorLike | None = None, out: None = None) -> Tensor: ...
        def round(self, decimals: int = 0, out: None = None) -> Tensor: ...
        def copy(self, order: str = "C") -> Tensor: ...
        def argsort(self, axis: int | None = -1, kind: str | None = None, order: None = None, *,
                    stable: bool | None = None) -> Tensor: ...
        def cumsum(self, axis: int | None = None, dtype: DTypeLike = None, out: None = None) -> Tensor: ...
        def cumprod(self, axis: int | None = None, dtype: DTypeLike = None, out: None = None) -> Tensor: ...
        def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: DTypeLike = None,
                  out: None = None) -> Tensor: ...
        def dot(self, b: TensorLike, out: None = None) -> Tensor: ...
        def astype(self, dtype: DTypeLike, order: str = "K", casting: str = "unsafe", subok: bool = True,
                   copy: bool = True) -> Tensor: ...
        def conj(self) -> Tensor: ...
        def conjugate(self) -> Tensor: ...
        def to_device(self, device: DeviceLike, /, *, stream: None = None) -> Tensor: ...
        @property
        def real(self) -> Tensor: ...
        @property
        def imag(self) -> Tensor: ...
        # ndarray's in-place methods: TypeError (a tensor is immutable)
        def sort(self, *args: Any, **kwargs: Any) -> None: ...
        def partition(self, *args: Any, **kwargs: Any) -> None: ...
        def fill(self, value: Any) -> None: ...
        def searchsorted(self, v: TensorLike, side: str = "left", sorter: TensorLike | None = None) -> Tensor: ...
        def take(self, indices: TensorLike, axis: Axis = None) -> Tensor: ...
        @property
        def T(self) -> Tensor: ...  # noqa: N802 - NumPy's name
        @property
        def mT(self) -> Tensor: ...  # noqa: N802 - NumPy's name

        # the reductions NumPy's functions call: np.sum(t) passes dtype= and out=None
        def sum(self, axis: Axis = None, keepdims: bool = False, *, dtype: DTypeLike = None,
                out: None = None) -> Tensor: ...
        def mean(self, axis: Axis = None, keepdims: bool = False, *, dtype: DTypeLike = None,
                 out: None = None) -> Tensor: ...
        def prod(self, axis: Axis = None, keepdims: bool = False, *, dtype: DTypeLike = None,
                 out: None = None) -> Tensor: ...
        def var(self, axis: Axis = None, keepdims: bool = False, ddof: int = 0, *, dtype: DTypeLike = None,
                out: None = None) -> Tensor: ...
        def std(self, axis: Axis = None, keepdims: bool = False, ddof: int = 0, *, dtype: DTypeLike = None,
                out: None = None) -> Tensor: ...
        def max(self, axis: Axis = None, keepdims: bool = False, *, out: None = None) -> Tensor: ...
        def min(self, axis: Axis = None, keepdims: bool = False, *, out: None = None) -> Tensor: ...
        def argmax(self, axis: Axis = None, keepdims: bool = False, *, out: None = None) -> Tensor: ...
        def argmin(self, axis: Axis = None, keepdims: bool = False, *, out: None = None) -> Tensor: ...

    def __init__(self, data: Any, dtype: DTypeLike = None, device: DeviceLike = None) -> None:
        dev = get_device(device)
        self._data = _owned_array(data, dtype, dev)  # a copy: later writes into `data` do not show
        self._device = dev
        if _trace.active:
            _trace.made_outside_ops(self, data)

    @classmethod
    def _wrap(cls, data: Any, device: Device) -> Tensor:
        """A Tensor around an existing array, without copying or checks."""
        t = object.__new__(cls)
        t._data = data
        t._device = device
        return t

    @classmethod
    def _adopt(cls, array, device=None):
        """A Tensor that takes over NumPy or CuPy ``array``, which the caller just made and
        hands over (nothing else holds it): moved to ``device`` if it lives elsewhere, never copied
        otherwise."""
        dev = get_device(device)
        return cls._wrap(dev.backend.asarray(_numeric(array), None, dev.index), dev)

    # --- what the tensor holds ---------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._data.dtype

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def size(self) -> int:
        return self._data.size

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def tolist(self) -> Any:
        """The values as nested Python lists (a number for a 0-d tensor), as ``ndarray.tolist``.

        Example:
            >>> import gpugrad as gg
            >>> gg.tensor([[1.0, 2.0]]).tolist()
            [[1.0, 2.0]]
        """
        if _trace.active:
            _trace.check_host_read(self, "tolist()")
        return self._host().tolist()

    @property
    def device(self) -> str:
        """The device's name: ``'cpu'`` or ``'cuda:N'``."""
        return self._device.name

    @property
    def data(self) -> Any:
        """The raw NumPy or CuPy array: shared, not copied, and writable.

        A write into it changes the tensor behind the tape's back (no version
        check sees it); it is there for zero-copy interop with code that only
        reads. ``.numpy()`` and ``np.asarray(t)`` give read-only views instead.
        """
        if _trace.active:
            _trace.check_host_read(self, ".data")
        return self._data

    def numpy(self) -> np.ndarray:
        """The values as a read-only NumPy array: a view on the CPU, a host copy of a GPU tensor.

        Read-only on every device, so code that writes into it fails on the
        CPU as on a GPU; ``t.numpy().copy()`` is a writable copy.

        Example:
            >>> import gpugrad as gg
            >>> a = gg.tensor([1.0, 2.0]).numpy()
            >>> a
            array([1., 2.], dtype=float32)
            >>> a[0] = 5.0
            Traceback (most recent call last):
            ...
            ValueError: assignment destination is read-only
        """
        if _trace.active:
            _trace.check_host_read(self, "numpy()")
        return self._host()

    def _host(self):
        """``numpy()`` without the trace check (for repr, which shows the values a trace holds)."""
        if self._device is CPU:
            return _read_only(self._data)
        if _device_checks.pending:
            _device_checks.raise_pending()
        host = self._device.backend.to_numpy(self._data)
        host.setflags(write=False)
        return host

    def item(self, *args: Any) -> Any:
        """The single value as a Python number; ``item(i)`` (flat index) or ``item(i, j)`` one element, as
        ``ndarray.item``.

        Example:
            >>> import gpugrad as gg
            >>> gg.tensor([[1, 2], [3, 4]]).item(2), gg.tensor([[1, 2], [3, 4]]).item(0, 1)
            (3, 2)
        """
        if _trace.active:
            _trace.check_host_read(self, "item()")
        if not args and self._data.size != 1:
            raise ShapeError(f"item() needs a tensor of one element, got shape {self.shape}")
        if _device_checks.pending and self._device is not CPU:
            _device_checks.raise_pending()
        return self._data.item(*args)

    def to(self, device: DeviceLike) -> Tensor:
        """This tensor on ``device`` (itself if it is already there).

        Example:
            >>> import gpugrad as gg
            >>> gg.tensor([1.0]).to("cpu").device
            'cpu'
        """
        dev = get_device(device)
        if dev is self._device:
            return self
        same_kind = dev.backend is self._device.backend  # GPU to GPU: copied device to device
        if not same_kind and _device_checks.pending and self._device is not CPU:
            _device_checks.raise_pending()
        data = self._data if same_kind else self._device.backend.to_numpy(self._data)
        return Tensor._wrap(dev.backend.asarray(data, None, dev.index), dev)

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
                f"np.asarray() of a tensor on {self.device!r} would copy it silently; call .numpy()")
        data = self._data
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"np.asarray(copy=False) of a {data.dtype} tensor as {np.dtype(dtype)} needs a copy")
            return data.astype(dtype)
        return data.copy() if copy else _read_only(data)

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
                return _read_only(self._data).__dlpack__(*args, **kwargs)
            except BufferError:
                pass  # a consumer of DLPack 0.x, which cannot mark the buffer read-only, shares it as .data
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # --- Python protocol ------------------------------------------------------
    __hash__ = object.__hash__

    def __len__(self) -> int:
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        if _trace.active:
            _trace.check_host_read(self, "bool()")
        if _device_checks.pending and self._device is not CPU:
            _device_checks.raise_pending()
        return bool(self._data)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self.item())

    def __format__(self, spec: str) -> str:
        """``f"{loss:.3f}"``: a 0-d tensor formats as its Python number; others only with an empty spec.

        Example:
            >>> import gpugrad as gg
            >>> print(f"loss {gg.tensor(0.123456):.3f}, counts {gg.tensor([1, 2])}")
            loss 0.123, counts tensor([1, 2], dtype=int64, device='cpu')
        """
        if not spec:
            return str(self)
        if not self._data.ndim:
            if _trace.active:
                _trace.check_host_read(self, "format()")
            if _device_checks.pending and self._device is not CPU:
                _device_checks.raise_pending()
            return format(self._data.item(), spec)
        raise TypeError(f"format spec {spec!r} needs a 0-d tensor (one value), not one of shape {self.shape} "
                        f"(as for NumPy arrays); format t.item() or t.numpy()")

    def __round__(self, ndigits: int | None = None) -> Any:
        """``round(t)`` and ``round(t, n)`` of a 0-d tensor: Python's round of its value.

        Example:
            >>> import gpugrad as gg
            >>> round(gg.tensor(2.6)), round(gg.tensor(3.14159, dtype="float64"), 2)
            (3, 3.14)
        """
        return round(self._scalar("round()"), ndigits)

    def __trunc__(self) -> int:
        return math.trunc(self.item())

    def __floor__(self) -> int:
        return math.floor(self.item())

    def __ceil__(self) -> int:
        return math.ceil(self.item())

    def _scalar(self, what):
        """The value of a 0-d tensor as a Python number; TypeError naming ``what`` for other shapes."""
        if self._data.ndim:
            raise TypeError(f"{what} needs a 0-d tensor (one value), not one of shape {self.shape}; "
                            f"round the values with np.round(t.numpy(), n)")
        if _trace.active:
            _trace.check_host_read(self, what)
        if _device_checks.pending and self._device is not CPU:
            _device_checks.raise_pending()
        return self._data.item()

    def __repr__(self) -> str:
        body = np.array2string(self._host(), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype}, device={self.device!r})"

    # --- pickling and copying -----------------------------------------------------
    def __reduce__(self):
        """``pickle``: the values as host bytes plus the device's name; see :func:`_unpickle_tensor`.

        A GPU tensor unpickles on that GPU, or on the CPU with a warning naming
        the device where this machine cannot use it. No tape state travels:
        an unpickled tensor is a new constant that no tape watches.

        Example:
            >>> import pickle, gpugrad as gg
            >>> t = pickle.loads(pickle.dumps(gg.tensor([1.0, 2.0], dtype="float64")))
            >>> t.numpy().tolist(), t.dtype, t.device
            ([1.0, 2.0], dtype('float64'), 'cpu')
        """
        if _trace.active:
            _trace.check_host_read(self, "pickle")
        return _unpickle_tensor, (type(self), self._device.backend.to_numpy(self._data), self._device.name)

    def __copy__(self):
        """``copy.copy``: a new tensor with its own copy of the data, on the same device.

        NumPy's ``copy.copy`` of an ndarray copies the data too (``ndarray.__copy__``),
        and that is the rule here; PyTorch's ``copy.copy`` of a tensor shares
        its storage instead. A tensor has nothing but its array to share, so
        ``copy.copy`` and ``copy.deepcopy`` give the same thing.

        Example:
            >>> import copy, gpugrad as gg
            >>> t = gg.tensor([1.0, 2.0])
            >>> c = copy.copy(t)
            >>> c is t, c.data is t.data, c.numpy().tolist()
            (False, False, [1.0, 2.0])
        """
        return type(self)._wrap(_copy_on(self._data, self._device), self._device)

    def __deepcopy__(self, memo):
        """``copy.deepcopy``: as :meth:`__copy__` (the data copied on its device, not through the host)."""
        copied = self.__copy__()
        memo[id(self)] = copied
        return copied


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
        array = _numeric(np.asarray(value))  # host data: lists, NumPy arrays
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
        copied = type(self)._wrap(_copy_on(self._data, self._device), self._device)
        copied.trainable, copied.name, copied._version = self.trainable, self.name, 0
        return copied


_NUMBERS = (bool, int, float, complex)  # Python numbers (NumPy's float64 scalar is a float too)


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
    return Tensor._wrap(_numeric(array.view(np.ndarray) if type(array) is not np.ndarray else array), CPU)


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
        return Tensor._wrap(_numeric(data.view(dev.array_type) if type(data) is not dev.array_type else data), dev)
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


_WEAK_CLASSES = frozenset([bool, int, float, complex])


# --- unpickling -----------------------------------------------------------------------------


def _unpickled_device(name):
    """The Device named ``name`` where this machine has it; else the CPU, with a warning naming it."""
    import warnings
    from .errors import DeviceUnavailableError

    try:
        return get_device(name)
    except DeviceUnavailableError as exc:
        warnings.warn(f"a tensor pickled on {name!r} is loaded on the CPU: {exc}", RuntimeWarning, stacklevel=3)
        return CPU


def _unpickle_tensor(cls, host, device_name):
    """A ``cls`` on ``device_name`` (or the CPU) holding host array ``host``, which it owns."""
    dev = _unpickled_device(device_name)
    array = dev.backend.asarray(host, None, dev.index)
    if dev is CPU and not array.flags.writeable:  # pickle protocol 5 may hand in a read-only buffer
        array = array.copy()
    return cls._wrap(array, dev)


def _unpickle_variable(cls, host, device_name, trainable, name):
    var = _unpickle_tensor(cls, host, device_name)
    var.trainable, var.name, var._version = trainable, name, 0
    return var
