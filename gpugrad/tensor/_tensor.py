"""The :class:`Tensor`: an immutable array on a device, the value type of every op.

A tensor wraps one NumPy or CuPy array and the :class:`~gpugrad.backend.Device` it
lives on; nothing else, so creating one on the hot path is cheap. Operators and
method forms (``x + y``, ``x.sum()``) are the op functions of :mod:`gpugrad.ops`,
installed on the class when the package is imported; the array-exchange
protocols come from its base class, :class:`~gpugrad.tensor._interop.ArrayInterop`.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from .._tracing import state as _trace
from .. import _device_checks
from ..backend import CPU, get_device
from ..errors import DeviceUnavailableError, ShapeError
from ._interop import ArrayInterop, copy_on, numeric, owned_array, read_only

if TYPE_CHECKING:
    from .._typing import Axis, DeviceLike, DTypeLike, TensorLike
    from ..backend import Device
    from ..ops import (activations as _activations, arithmetic as _arithmetic,
                       linalg as _linalg, losses as _losses,
                       math as _math, ordering as _ordering, reductions as _reductions, shape as _shape,
                       statistics as _statistics, structure as _structure)


class Tensor(ArrayInterop):
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
        # gg.floor_divide and the bitwise ops on integers and booleans (gpugrad.ops.elementwise.numpy_names)
        def __floordiv__(self, other: TensorLike) -> Tensor: ...
        def __rfloordiv__(self, other: TensorLike) -> Tensor: ...
        def __and__(self, other: TensorLike) -> Tensor: ...
        def __rand__(self, other: TensorLike) -> Tensor: ...
        def __or__(self, other: TensorLike) -> Tensor: ...
        def __ror__(self, other: TensorLike) -> Tensor: ...
        def __xor__(self, other: TensorLike) -> Tensor: ...
        def __rxor__(self, other: TensorLike) -> Tensor: ...
        def __lshift__(self, other: TensorLike) -> Tensor: ...
        def __rlshift__(self, other: TensorLike) -> Tensor: ...
        def __rshift__(self, other: TensorLike) -> Tensor: ...
        def __rrshift__(self, other: TensorLike) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
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
        if isinstance(data, Tensor):
            data = data._data
        self._data = owned_array(data, dtype, dev)  # a copy: later writes into `data` do not show
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
        return cls._wrap(dev.backend.asarray(numeric(array), None, dev.index), dev)

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
        """The device's name, ``'cpu'`` or ``'cuda:N'``."""
        return self._device.name

    @property
    def data(self) -> Any:
        """The raw NumPy or CuPy array, shared (not copied) and writable.

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
            return read_only(self._data)
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
        return type(self)._wrap(copy_on(self._data, self._device), self._device)

    def __deepcopy__(self, memo):
        """``copy.deepcopy``: as :meth:`__copy__` (the data copied on its device, not through the host)."""
        copied = self.__copy__()
        memo[id(self)] = copied
        return copied


# --- unpickling -----------------------------------------------------------------------------


def _unpickled_device(name):
    """The Device named ``name`` where this machine has it; else the CPU, with a warning naming it."""
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
