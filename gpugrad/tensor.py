"""Tensors (immutable arrays on a device) and Variables (mutable, trainable).

A :class:`Tensor` wraps one NumPy or CuPy array and the :class:`Device` it
lives on; nothing else, so creating one on the hot path is cheap. Operators and
method forms (``x + y``, ``x.sum()``) are the op functions of :mod:`gpugrad.ops`,
installed on the class when the package is imported.

dtype rules: Python floats (and lists of them) become float32, Python ints
int64, NumPy/CuPy arrays keep their dtype unless ``dtype=`` says otherwise.
"""
import numpy as np

from .backend import CPU, Device, get_device
from .errors import DeviceError, DTypeError, ShapeError


_KINDS = {"U": "strings", "S": "bytes", "O": "Python objects", "M": "datetimes", "m": "timedeltas", "V": "records"}


def _numeric(array):
    """``array`` if it holds booleans or numbers; else DTypeError naming what it holds."""
    kind = array.dtype.kind
    if kind not in "biufc":
        raise DTypeError(f"a tensor holds booleans or numbers, not {_KINDS.get(kind, 'values')} "
                         f"(dtype {array.dtype}); convert the data first")
    return array


def _host_array(data, dtype):
    """A host or device array of ``data`` with gpugrad's dtype rules applied."""
    if dtype is not None:
        dtype = np.dtype(dtype)
    if hasattr(data, "dtype") and hasattr(data, "shape"):
        return _numeric(data if dtype is None or data.dtype == dtype else data.astype(dtype))
    try:
        array = np.asarray(data, dtype=dtype)
    except ValueError as e:
        if "inhomogeneous" not in str(e):
            raise
        raise ShapeError(f"a tensor needs nested lists of equal lengths (a rectangular array): {e}") from None
    if dtype is None and array.dtype == np.float64:
        array = array.astype(np.float32)  # Python floats become float32
    return _numeric(array)


def _broadcast_shape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


class Tensor:
    """An immutable array on a device, the value type of every op.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0], [3.0, 4.0]], device="cpu")
        >>> (x * 2 + 1).sum().item()
        24.0
        >>> x.shape, x.dtype, x.device
        ((2, 2), dtype('float32'), 'cpu')
    """

    __slots__ = ("_data", "_device", "__weakref__")
    __array_ufunc__ = None  # make ndarray + Tensor call Tensor.__radd__
    __array_priority__ = 1000

    def __init__(self, data, dtype=None, device=None):
        dev = get_device(device)
        if isinstance(data, Tensor):
            if isinstance(data, Variable):
                data = data._data.copy()  # a snapshot, not a view of the mutable variable
            else:
                data = data._device.backend.to_numpy(data._data) if data._device is not dev else data._data
        self._data = dev.backend.asarray(_host_array(data, dtype), None, dev.index)
        self._device = dev

    @classmethod
    def _wrap(cls, data, device):
        """A Tensor around an existing array, without copying or checks."""
        t = object.__new__(cls)
        t._data = data
        t._device = device
        return t

    # --- what the tensor holds ---------------------------------------------
    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def size(self):
        return self._data.size

    @property
    def device(self):
        """The device's name: ``'cpu'`` or ``'cuda:N'``."""
        return self._device.name

    @property
    def data(self):
        """The raw NumPy or CuPy array (shared, not copied)."""
        return self._data

    def numpy(self):
        """A NumPy array of the values (a host copy for GPU tensors).

        Example:
            >>> import gpugrad as gg
            >>> gg.tensor([1.0, 2.0]).numpy()
            array([1., 2.], dtype=float32)
        """
        return self._device.backend.to_numpy(self._data)

    def item(self):
        """The single value as a Python number."""
        if self._data.size != 1:
            raise ShapeError(f"item() needs a tensor of one element, got shape {self.shape}")
        return self._data.item()

    def to(self, device):
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
        data = self._data if same_kind else self._device.backend.to_numpy(self._data)
        return Tensor._wrap(dev.backend.asarray(data, None, dev.index), dev)

    def __array__(self, dtype=None, copy=None):
        if self._device is not CPU:
            raise DeviceError(
                f"np.asarray() of a tensor on {self.device!r} would copy it silently; call .numpy()")
        return self._data if dtype is None else self._data.astype(dtype)

    @property
    def __cuda_array_interface__(self):
        if self._device is CPU:
            raise AttributeError("a CPU tensor has no __cuda_array_interface__")
        return self._data.__cuda_array_interface__

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    # --- Python protocol ------------------------------------------------------
    __hash__ = object.__hash__

    def __len__(self):
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self):
        return bool(self._data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        return int(self.item())

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        return f"tensor({body}, dtype={self.dtype}, device={self.device!r})"


class Variable(Tensor):
    """A mutable tensor; a trainable one read inside a tape is watched automatically.

    ``assign``, ``assign_add`` and ``assign_sub`` write into the variable's
    array in place and bump its version, so a tape that saved the old value
    refuses to compute a gradient from a changed one.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable(2.0, name="w")
        >>> with gg.GradientTape() as tape:
        ...     y = w * w
        >>> tape.gradient(y, w).item()
        4.0
        >>> w.assign_sub(0.5).item()
        1.5
    """

    __slots__ = ("trainable", "name", "_version")

    def __init__(self, initial, dtype=None, device=None, trainable=True, name=None):
        super().__init__(initial, dtype, device)
        if isinstance(initial, Tensor) or self._data is initial:
            self._data = self._data.copy()  # a variable owns its array
        self.trainable = bool(trainable)
        self.name = name
        self._version = 0

    def _value_array(self, value):
        array = value._data if isinstance(value, Tensor) else value
        if not isinstance(value, Tensor) and not isinstance(array, self._device.array_type) \
                and not hasattr(array, "__cuda_array_interface__"):  # host data (numbers, lists, NumPy arrays)
            array = self._device.backend.asarray(array, None if hasattr(array, "dtype") else self.dtype,
                                                 self._device.index)
        if isinstance(value, Tensor) and value._device is not self._device:
            raise DeviceError(f"cannot assign a tensor on {value.device!r} to a variable on {self.device!r}")
        if array.shape != self.shape and _broadcast_shape(array.shape, self.shape) != self.shape:
            raise ShapeError(
                f"cannot assign a value of shape {array.shape} to variable {self.name or ''} of shape {self.shape}")
        return array

    def numpy(self):
        """A NumPy copy of the current value (later assigns do not change it)."""
        array = self._device.backend.to_numpy(self._data)
        return array.copy() if array is self._data else array

    def assign(self, value):
        """Set the value in place; returns the variable."""
        self._data[...] = self._value_array(value)
        self._version += 1
        return self

    def assign_add(self, delta):
        """Add ``delta`` in place; returns the variable."""
        self._data += self._value_array(delta)
        self._version += 1
        return self

    def assign_sub(self, delta):
        """Subtract ``delta`` in place; returns the variable."""
        self._data -= self._value_array(delta)
        self._version += 1
        return self

    def __repr__(self):
        label = f"{self.name!r}, " if self.name else ""
        return f"Variable({label}{Tensor.__repr__(self)})"


def tensor(data, dtype=None, device=None):
    """A constant :class:`Tensor`; a tape follows it only after ``tape.watch``.

    Example:
        >>> import gpugrad as gg
        >>> gg.tensor(1.5).dtype, gg.tensor([1, 2]).dtype
        (dtype('float32'), dtype('int64'))
    """
    return Tensor(data, dtype, device)


def from_dlpack(obj):
    """A tensor sharing memory with ``obj``, any DLPack producer (NumPy, CuPy, PyTorch, JAX), no copy.

    A producer on GPU N gives a tensor on ``"cuda:N"``; one on the host, a CPU tensor.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> a = np.arange(3.0)
        >>> t = gg.from_dlpack(a)
        >>> t.device, np.shares_memory(t.numpy(), a)
        ('cpu', True)
    """
    kind, index = obj.__dlpack_device__()
    if kind == 1:  # kDLCPU
        return Tensor._wrap(np.from_dlpack(obj), CPU)
    if kind not in (2, 13):  # kDLCUDA, kDLCUDAManaged
        raise DeviceError(f"from_dlpack: DLPack device type {kind} is neither the CPU nor a CUDA GPU")
    dev = get_device(f"cuda:{index}")
    return Tensor._wrap(dev.backend.from_dlpack(obj, index), dev)


def as_tensor(value, like=None):
    """``value`` itself if it is a Tensor, else a new tensor on ``like``'s device.

    A Python scalar next to a float tensor takes that tensor's dtype, as in NumPy.
    """
    if isinstance(value, Tensor):
        return value
    dev = like._device if like is not None else None
    if like is not None and isinstance(value, (int, float)) and like._data.dtype.kind == "f":
        return Tensor._wrap(dev.xp.asarray(value, dtype=like._data.dtype), dev)
    return Tensor(value, None, dev)
