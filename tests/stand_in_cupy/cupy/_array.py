"""The stand-in's array: a NumPy array in host memory that refuses to mix with NumPy arrays."""
import operator

import numpy as np

from . import cuda

_NO_HOST_COPY = ("Implicit conversion to a NumPy array is not allowed. "
                 "Please use `.get()` to construct a NumPy array explicitly.")


def to_host(value, where, allow_numpy=False):
    """``value`` with every stand-in array inside it (lists, tuples, dicts too) replaced by its NumPy array.

    A NumPy array met on the way raises ``TypeError`` as CuPy does, unless
    ``allow_numpy`` (indices, which CuPy copies to the device itself).
    """
    if isinstance(value, ndarray):
        return value._host
    if isinstance(value, np.ndarray):
        if not allow_numpy:
            raise TypeError(f"Unsupported type {type(value)} in {where}: a NumPy array, not a CuPy array")
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(to_host(v, where, allow_numpy) for v in value)
    if isinstance(value, dict):
        return {k: to_host(v, where, allow_numpy) for k, v in value.items()}
    return value


def wrap(result):
    """A NumPy result as the stand-in returns it: arrays (and NumPy scalars, as 0-d arrays) wrapped."""
    if isinstance(result, np.ndarray):
        return ndarray._of(result)
    if isinstance(result, np.generic) and not isinstance(result, (np.str_, np.bytes_)):
        return ndarray._of(np.asarray(result))
    if isinstance(result, (list, tuple)):
        return type(result)(wrap(r) for r in result)
    return result


def strict(function, where):
    """``function`` on stand-in arrays: refuses NumPy array arguments, wraps what it returns."""
    def call(*args, **kwargs):
        return wrap(function(*to_host(args, where), **to_host(kwargs, where)))
    call.__name__ = where
    return call


def from_host(data, dtype=None, order=None):
    """A stand-in array holding a copy of host ``data``, or sharing the memory of a ``__cuda_array_interface__``."""
    interface = getattr(data, "__cuda_array_interface__", None)
    if interface is not None:
        return ndarray._of(np.asarray(_SharedMemory(interface, data), dtype=dtype, order=order))
    return ndarray._of(np.array(data, dtype=dtype, order=order, copy=True))


class _SharedMemory:
    """A CUDA array interface read back as NumPy's array interface (the stand-in's "device" is the host)."""

    def __init__(self, interface, owner):
        self.__array_interface__ = {key: interface[key] for key in ("shape", "typestr", "data", "strides")}
        self.__array_interface__["version"] = 3
        self._owner = owner  # the memory lives as long as the array made from it


class _MemoryPointer:
    """CuPy's ``MemoryPointer``, reduced to the address it holds."""

    def __init__(self, ptr):
        self.ptr = ptr


def _has_array_index(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, (list, np.ndarray, ndarray)) for i in items)


class ndarray:
    """An array on the stand-in's one device: NumPy's array in host memory behind CuPy's rules."""

    __array_priority__ = 100  # NumPy defers binary operators to this class
    __hash__ = None

    def __init__(self, shape, dtype=float, order="C"):
        self._host = np.empty(shape, dtype, order=order)

    @classmethod
    def _of(cls, host):
        a = cls.__new__(cls)
        a._host = host
        return a

    # --- the ways to and from NumPy -----------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_NO_HOST_COPY)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return strict(getattr(ufunc, method), ufunc.__name__)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return strict(func, func.__name__)(*args, **kwargs)

    def get(self, stream=None, order="C", out=None):
        """A NumPy copy in host memory (CuPy's device-to-host transfer)."""
        return self._host.copy(order=order)

    def tolist(self):
        return self._host.tolist()

    def item(self):
        return self._host.item()

    def __bool__(self):
        return bool(self._host)

    def __float__(self):
        return float(self._host)

    def __int__(self):
        return int(self._host)

    def __index__(self):
        return operator.index(self._host)

    # --- device memory ------------------------------------------------------
    @property
    def data(self):
        """Where the array's memory starts, as CuPy's ``MemoryPointer`` tells it (``.ptr``)."""
        return _MemoryPointer(self._host.ctypes.data)

    @property
    def __cuda_array_interface__(self):
        strides = None if self._host.flags.c_contiguous else self._host.strides
        return {"shape": self._host.shape, "typestr": self._host.dtype.str, "strides": strides,
                "data": (self._host.ctypes.data, not self._host.flags.writeable), "version": 3}

    def __dlpack__(self, **kwargs):
        return self._host.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return cuda.DLPACK_DEVICE

    @property
    def device(self):
        return cuda.Device(0)

    @property
    def base(self):
        return wrap(self._host.base) if isinstance(self._host.base, np.ndarray) else None

    # --- NumPy's attributes and methods, strict -----------------------------
    @property
    def T(self):
        return ndarray._of(self._host.T)

    def __getattr__(self, name):
        if name.startswith("__"):  # NumPy's protocols (__array_interface__ ...) would hand NumPy the host memory
            raise AttributeError(f"'ndarray' object has no attribute {name!r}")
        attr = getattr(self._host, name)
        return strict(attr, f"ndarray.{name}") if callable(attr) else wrap(attr)

    def __len__(self):
        return len(self._host)

    def __iter__(self):
        return (wrap(row) for row in self._host)

    def __getitem__(self, index):
        return wrap(self._host[to_host(index, "an index", allow_numpy=True)])

    def __setitem__(self, index, value):
        if isinstance(value, np.ndarray) and value.ndim and not _has_array_index(index):
            raise TypeError(f"Unsupported type {type(value)}: CuPy fills a basic-index assignment from a "
                            "scalar or a CuPy array, not a NumPy array")
        self._host[to_host(index, "an index", allow_numpy=True)] = to_host(value, "setitem", allow_numpy=True)

    def __repr__(self):
        return "stand_in_cupy." + repr(self._host)


def _operators():
    """Put Python's operators on ndarray: binary, reflected and in-place ones strict, unary ones plain."""
    binary = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift")
    for name in binary:
        function = getattr(operator, name + "_" if name in ("and", "or") else name)
        in_place = getattr(operator, "i" + name)
        setattr(ndarray, f"__{name}__", _binary(function, reflected=False))
        setattr(ndarray, f"__r{name}__", _binary(function, reflected=True))
        setattr(ndarray, f"__i{name}__", _in_place(in_place))
    for name in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(ndarray, f"__{name}__", _binary(getattr(operator, name), reflected=False))
    for name in ("neg", "pos", "abs", "invert"):
        setattr(ndarray, f"__{name}__", _unary(getattr(operator, name)))


def _binary(function, reflected):
    where = function.__name__
    if reflected:
        return lambda self, other: wrap(function(to_host(other, where), self._host))
    return lambda self, other: wrap(function(self._host, to_host(other, where)))


def _in_place(function):
    def method(self, other):
        function(self._host, to_host(other, function.__name__))
        return self
    return method


def _unary(function):
    return lambda self: wrap(function(self._host))


_operators()
