"""The stand-in's array: a NumPy array in host memory behind CuPy's rules.

Where CuPy 14.2 and NumPy differ and gpugrad's code could meet it, the array
behaves as CuPy's does (``tests/test_stand_in_contract.py`` pins each rule
and names the CuPy source it follows):

- integer-array indices out of bounds wrap around (``_prepare_array_indexing``);
- an integer-array assignment that writes different values to one element is
  refused: CuPy stores an undefined one of them, NumPy the last;
- float to integer casts saturate and NaN becomes 0, as CUDA converts;
- ``flags`` has only ``c_contiguous``, ``f_contiguous``, ``owndata`` (CuPy
  arrays have no ``writeable`` flag);
- ``clip`` is CuPy's kernel: a NaN bound leaves the element as it is;
- ``take`` wraps out-of-bounds indices; ``item`` takes no index;
- no ``__index__`` (``operator.index`` of a CuPy array is a ``TypeError``) and
  no in-place ``@=``; ``copy.copy`` copies the memory (CuPy's ``__copy__``);
- NumPy's floating-point warnings and ``np.errstate`` do not apply: a GPU
  raises nothing on a division by zero.
"""
import operator
import sys
import weakref
from copy import deepcopy

import numpy as np

from . import _dtypes, _names, _record, _transfers, cuda

_NO_HOST_COPY = ("Implicit conversion to a NumPy array is not allowed. "
                 "Please use `.get()` to construct a NumPy array explicitly.")
_UNSUPPORTED_KINDS = "OUSMm"  # object, strings, datetimes: CuPy 14 refuses to create such arrays
_QUIET = dict(all="ignore")  # np.errstate: a GPU kernel neither warns nor raises on FP errors


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
    if isinstance(result, tuple) and hasattr(result, "_fields"):  # numpy.linalg's named results
        return type(result)(*[wrap(r) for r in result])
    if isinstance(result, (list, tuple)):
        return type(result)(wrap(r) for r in result)
    return result


def strict(function, where):
    """``function`` on stand-in arrays: refuses NumPy array arguments, wraps what it returns."""
    def call(*args, **kwargs):
        if cuda._capturing() and where not in _HOST_ONLY:
            refuse_in_capture(where, args)
            return _deferred(function, where, args, kwargs)
        args, kwargs = to_host(args, where), to_host(kwargs, where)
        _dtypes.check(where, function, args, kwargs)
        with np.errstate(**_QUIET):
            return wrap(function(*args, **kwargs))
    call.__name__ = where
    return call


# functions of dtypes and shapes alone: no GPU work, so a capture runs them as they are
_HOST_ONLY = frozenset({"result_type", "can_cast", "promote_types", "min_scalar_type", "ndim", "shape"})


# The routines that call a CUDA library in CuPy 14.2, and so refuse while a stream captures (see cuda.py):
# cuBLAS for products of floats (cupy/_core/_routines_linalg.pyx ``tensordot_core``/``matmul``: gemm,
# gemmStridedBatched; ``cupy/linalg/_product.py``), cuSOLVER for the factorisations (``cupy/linalg/_decomposition.py``,
# ``_solve.py``, ``_eigenvalue.py``).
PRODUCTS = frozenset({"matmul", "dot", "vdot", "inner", "tensordot", "einsum", "kron", "ndarray.dot",
                      "linalg.matrix_power", "linalg.multi_dot"})
CUSOLVER = frozenset({"linalg.inv", "linalg.solve", "linalg.det", "linalg.slogdet", "linalg.cholesky", "linalg.qr",
                      "linalg.eigh", "linalg.eigvalsh", "linalg.svd", "linalg.pinv", "linalg.lstsq"})
# Thrust (cupy/cuda/thrust.pyx: sort, argsort, lexsort) and CUB (cupy/cuda/cub.pyx: device_reduce,
# device_segmented_reduce, device_scan, the default "cub" accelerator of cupy/_core/_accelerator.pyx) take
# their workspace from the memory pool; neither checks for a capture.
TEMPORARIES = frozenset({"sort", "argsort", "lexsort", "msort", "unique", "partition", "argpartition", "median",
                         "quantile", "percentile", "ndarray.sort", "ndarray.argsort", "ndarray.partition",
                         "ndarray.argpartition", "cumsum", "cumprod", "ndarray.cumsum", "ndarray.cumprod",
                         "sum", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "mean", "var", "std",
                         "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanargmax", "nanargmin",
                         "count_nonzero", "histogram", "bincount", "any", "all", "linalg.norm",
                         "ndarray.sum", "ndarray.prod", "ndarray.max", "ndarray.min", "ndarray.argmax",
                         "ndarray.argmin", "ndarray.mean", "ndarray.var", "ndarray.std", "ndarray.any",
                         "ndarray.all"})
# and nonzero and its kin read the count of results to the host (ndarray.get)
HOST_READS = frozenset({"nonzero", "flatnonzero", "argwhere", "ndarray.nonzero", "extract", "compress"})


def refuse_in_capture(where, args):
    """Raise what CuPy 14.2 does, or what the stand-in does for it, when routine ``where`` of operands ``args``
    is called while a stream captures (nothing if it is an ordinary kernel launch)."""
    if where in PRODUCTS:
        refuse_product_in_capture(where, [a for a in args if isinstance(a, ndarray)])
    elif where in CUSOLVER:
        cuda._refuse_library("cuSOLVER")
    elif where in TEMPORARIES:
        cuda._refuse_temporaries(f"cupy.{where}")
    elif where in HOST_READS:
        cuda._refuse_host_transfer("D2H")


def refuse_product_in_capture(where, operands):
    """A product during a capture, as ``tensordot_core`` computes it: floats through cuBLAS (refused); an
    integer product by CuPy's own kernels on contiguous copies, and a product of one element (``m == n == 1``:
    vector . vector) as ``(a.ravel() * b.ravel()).sum(out=c)`` through CUB, both with pool temporaries."""
    if any(a._host.size == 0 for a in operands):
        return  # out.fill(0): a kernel
    if where == "matmul" and len(operands) >= 2 and operands[0].ndim == 1 and operands[1].ndim == 1 \
            or where in ("dot", "vdot", "inner") and all(a.ndim <= 1 for a in operands):
        cuda._refuse_temporaries(f"cupy.{where} of two vectors (CUB's sum of their product)")
    if all(a._host.dtype.kind in "biu" for a in operands):
        cuda._refuse_temporaries(f"cupy.{where} of integers")
    cuda._refuse_library("cuBLAS")


def _deferred(function, where, args, kwargs):
    """``function`` called while a stream captures: recorded when it writes into an array it is given (``out=``,
    ``copyto``), refused otherwise (it would allocate, or read on the host)."""
    out = kwargs.get("out")
    if out is None and where != "copyto":
        cuda._refuse(f"cupy.{where} without out= (an allocation)")

    def work():
        host_args, host_kwargs = to_host(args, where), to_host(kwargs, where)
        with np.errstate(**_QUIET):
            function(*host_args, **host_kwargs)
    cuda._defer(work, where)
    return out


def from_host(data, dtype=None, order=None):
    """A stand-in array holding a copy of host ``data``, or sharing the memory of a ``__cuda_array_interface__``."""
    interface = getattr(data, "__cuda_array_interface__", None)
    if interface is not None:
        return ndarray._of(np.asarray(_SharedMemory(interface, data), dtype=dtype, order=order))
    if _all_device_arrays(data):  # CuPy stacks a nested sequence of its arrays on the device
        data = to_host(data, "asarray")
    else:
        cuda._refuse_host_transfer("H2D")  # memory.pyx MemoryPointer.copy_from_host_async
    return ndarray._of(np.array(data, dtype=dtype, order=order, copy=True))


def _all_device_arrays(data):
    if isinstance(data, (list, tuple)):
        return bool(data) and all(_all_device_arrays(d) for d in data)
    return isinstance(data, ndarray)


def is_float(dtype):
    return dtype.kind == "f" or dtype.name == "bfloat16"


def float_to_int(host, dtype):
    """``host`` (floats) cast to integer ``dtype`` as CUDA converts: saturated at the type's range, NaN to 0."""
    info = np.iinfo(dtype)
    x = host.astype(np.float64)
    out = np.zeros(x.shape, dtype)
    low, high = x <= info.min, x >= float(info.max)
    inside = ~(low | high | np.isnan(x))
    out[inside] = x[inside].astype(dtype)  # truncation toward zero, in range
    out[low], out[high] = info.min, info.max
    return out


def cast(host, dtype, copy=True, order="K"):
    """``host.astype(dtype)`` with CUDA's float to integer conversion."""
    dtype = np.dtype(dtype)
    if is_float(host.dtype) and dtype.kind in "iu":
        return float_to_int(host, dtype)
    with np.errstate(**_QUIET):
        return host.astype(dtype, order=order, copy=copy)


class _SharedMemory:
    """A CUDA array interface read back as NumPy's array interface (the stand-in's "device" is the host)."""

    def __init__(self, interface, owner):
        self.__array_interface__ = {key: interface[key] for key in ("shape", "typestr", "data", "strides")}
        self.__array_interface__["version"] = 3
        self._owner = owner  # the memory lives as long as the array made from it


class Flags:
    """CuPy's ``ndarray.flags``: three read-only layout flags, by attribute or by key."""

    def __init__(self, host):
        self.c_contiguous = bool(host.flags.c_contiguous)
        self.f_contiguous = bool(host.flags.f_contiguous)
        self.owndata = host.base is None

    @property
    def fnc(self):
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self):
        return self.f_contiguous or self.c_contiguous

    def __getitem__(self, name):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


# --- indexing as CuPy does it ----------------------------------------------------

def _is_array_index(item):
    return isinstance(item, np.ndarray) and item.ndim > 0


def device_index(index, shape):
    """``index`` for NumPy, with CuPy's rule that out-of-bounds entries of integer arrays wrap around."""
    index = to_host(index, "an index", allow_numpy=True)
    items = list(index) if isinstance(index, tuple) else [index]
    items = [np.asarray(i) if isinstance(i, list) else i for i in items]
    if not any(_is_array_index(i) and i.dtype.kind in "iu" for i in items):
        return index
    used = sum(i.ndim if _is_array_index(i) and i.dtype.kind == "b" else 1
               for i in items if i is not None and i is not Ellipsis)
    dim, out = 0, []
    for item in items:
        if item is Ellipsis:
            dim += len(shape) - used
        elif _is_array_index(item) and item.dtype.kind == "b":
            dim += item.ndim
        elif item is not None:
            if _is_array_index(item) and item.dtype.kind in "iu" and dim < len(shape) and shape[dim]:
                item = np.mod(item, shape[dim])
            dim += 1
        out.append(item)
    return tuple(out)


def _has_array_index(index):
    """True when ``index`` (host or device) holds an array or a list: advanced indexing."""
    items = index if isinstance(index, tuple) else (index,)
    return any(np.ndim(i._host if isinstance(i, ndarray) else i) > 0
               for i in items if isinstance(i, (list, np.ndarray, ndarray)))


def _refuse_conflicting_duplicates(host, index, value):
    """Refuse an integer-array assignment that writes different values to one element.

    CuPy's ``__setitem__`` stores an undefined one of them (its documented
    difference from NumPy, which stores the last), so code relying on either
    gives different answers on a GPU.
    """
    value = np.asarray(value)
    if value.size <= 1:
        return
    targets = np.arange(host.size).reshape(host.shape)[index]
    try:
        values = np.broadcast_to(value, targets.shape).reshape(-1)
    except ValueError:
        return  # NumPy's own assignment reports the shape mismatch
    order = np.argsort(targets.reshape(-1), kind="stable")
    t, v = targets.reshape(-1)[order], values[order]
    same_target = t[1:] == t[:-1]
    differ = v[1:] != v[:-1]
    if v.dtype.kind in "fc":
        differ &= ~(np.isnan(v[1:]) & np.isnan(v[:-1]))
    if np.any(same_target & differ):
        raise RuntimeError("the CuPy stand-in refuses an integer-array assignment that writes different values to "
                           "the same element: CuPy stores an undefined one of them (NumPy the last)")


_HOST_DATA_METHODS = frozenset({"tobytes", "tofile", "dump", "dumps"})  # they copy the data to the host
_WRAPPERS = weakref.WeakValueDictionary()  # id(host array) -> its stand-in array


class ndarray:
    """An array on the stand-in's one device: NumPy's array in host memory behind CuPy's rules."""

    __array_priority__ = 100  # NumPy defers binary operators to this class
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("the CuPy stand-in makes arrays on new memory only")
        self._host = np.empty(shape, dtype, order=order)

    @classmethod
    def _of(cls, host):
        # one stand-in array per host array, as CuPy has one ndarray per allocation or view: a view's
        # ``base`` is the very array it views, as CuPy's is
        a = _WRAPPERS.get(id(host))
        if a is not None and a._host is host:
            return a
        if host.dtype.kind in _UNSUPPORTED_KINDS:
            raise ValueError(f"Unsupported dtype {host.dtype}")
        a = cls.__new__(cls)
        a._host = host
        _WRAPPERS[id(host)] = a
        return a

    # --- the ways to and from NumPy -----------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_NO_HOST_COPY)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufunc on stand-in arrays runs CuPy's ufunc of that name, as CuPy dispatches it."""
        from . import _ufunc

        return _ufunc.from_numpy(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """NumPy's function on stand-in arrays runs CuPy's function of that name (absent: NumPy's TypeError)."""
        module = sys.modules["cupy"]
        try:
            for part in func.__module__.split(".")[1:]:
                module = getattr(module, part)
            cupy_func = getattr(module, func.__name__)
        except AttributeError:
            return NotImplemented
        if not all(issubclass(t, (ndarray, np.ndarray)) for t in types):
            return NotImplemented
        qualname = ".".join(["cupy"] + func.__module__.split(".")[1:] + [func.__name__])
        _record.seen(qualname)
        _record.call(qualname, args, kwargs)
        return cupy_func(*args, **kwargs)

    def get(self, stream=None, order="C", out=None, blocking=True):
        """A NumPy copy in host memory (CuPy's device-to-host transfer), or written into ``out``; refused while a
        stream captures (``MemoryPointer.copy_to_host_async``), except of an empty array (CuPy copies nothing);
        counted (``_transfers``)."""
        self._to_host("get")
        if out is not None:
            if not isinstance(out, np.ndarray) or out.shape != self._host.shape or out.dtype != self._host.dtype:
                raise ValueError("`out` must be a NumPy array of the same shape and dtype")
            out[...] = self._host
            return out
        return self._host.copy(order=order)

    # each of these reads through ``get`` in CuPy (core.pyx), so refuses while a stream captures
    def tolist(self):
        return self._to_host("tolist").tolist()

    def item(self):
        if self._host.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._to_host("item").item()

    def __bool__(self):
        if self._host.size == 1:
            return bool(self._to_host("bool()"))
        return bool(self._host)

    def __float__(self):
        return float(self._to_host("float()"))

    def __int__(self):
        return int(self._to_host("int()"))

    def __complex__(self):
        return complex(self._to_host("complex()"))

    def _to_host(self, what):
        """The host data, read as CuPy reads it (through ``get``): refused while a stream captures, counted as a
        device-to-host transfer named ``what``."""
        if self._host.size:
            cuda._refuse_host_transfer("D2H")
        _transfers.note(what)
        return self._host

    def __copy__(self):
        return ndarray._of(self._host.copy())

    def __deepcopy__(self, memo):
        return ndarray._of(deepcopy(self._host, memo))

    # --- device memory ------------------------------------------------------
    @property
    def data(self):
        """Where the array's memory starts, as CuPy's ``MemoryPointer`` tells it (``.ptr``)."""
        return cuda.MemoryPointer(self._host.ctypes.data)

    @property
    def __cuda_array_interface__(self):
        strides = None if self._host.flags.c_contiguous else self._host.strides
        return {"shape": self._host.shape, "typestr": self._host.dtype.str, "strides": strides,
                "data": (self._host.ctypes.data, not self._host.flags.writeable), "version": 3}

    def __dlpack__(self, **kwargs):
        return self._host.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return cuda._DLPACK_DEVICE

    @property
    def device(self):
        return cuda.Device(0)

    @property
    def base(self):
        return wrap(self._host.base) if isinstance(self._host.base, np.ndarray) else None

    @property
    def flags(self):
        return Flags(self._host)

    # --- where CuPy's methods differ from NumPy's -----------------------------
    @property
    def T(self):
        return ndarray._of(self._host.T)

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        """A cast on the device: float to integer as CUDA converts (saturated, NaN to 0)."""
        host = cast(self._host, dtype, copy=copy, order=order)
        if host is not self._host and cuda._capturing():
            cuda._refuse("ndarray.astype to a new array (an allocation)")
        return self if host is self._host else ndarray._of(host)

    def clip(self, min=None, max=None, out=None):
        from . import clip

        return clip(self, min, max, out=out)

    def take(self, indices, axis=None, out=None):
        from . import take

        return take(self, indices, axis=axis, out=out)

    def __getattr__(self, name):
        if name.startswith("__") or not _names.has("cupy.ndarray", name):
            # NumPy's protocols (__array_interface__ ...) would hand NumPy the host memory
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r} (real CuPy 14.2 has none)")
        attr = getattr(self._host, name)
        if name in _HOST_DATA_METHODS:
            _transfers.note(name)
        return strict(attr, f"ndarray.{name}") if callable(attr) else wrap(attr)

    def __len__(self):
        return len(self._host)

    def __iter__(self):
        return (wrap(row) for row in self._host)

    def __getitem__(self, index):
        if cuda._capturing() and _has_array_index(index):
            cuda._refuse("an integer-array or mask index (an allocation)")
        return wrap(self._host[device_index(index, self._host.shape)])

    def __setitem__(self, index, value):
        if cuda._capturing():
            cuda._defer(lambda: self._assign(index, value), "setitem")
            return
        self._assign(index, value)

    def _assign(self, index, value):
        if isinstance(value, np.ndarray) and value.ndim and not _has_array_index(index):
            raise TypeError(f"Unsupported type {type(value)}: CuPy fills a basic-index assignment from a "
                            "scalar or a CuPy array, not a NumPy array")
        index = device_index(index, self._host.shape)
        value = to_host(value, "setitem", allow_numpy=True)
        if self._host.dtype.kind in "iu" and is_float(np.asarray(value).dtype):
            value = float_to_int(np.asarray(value), self._host.dtype)
        if _has_array_index(index):
            _refuse_conflicting_duplicates(self._host, index, value)
        with np.errstate(**_QUIET):
            self._host[index] = value

    def __repr__(self):
        _transfers.note("repr()")
        return "stand_in_cupy." + repr(self._host)


# --- Python's operators: CuPy's ufuncs (see _ufunc) ---------------------------------------

_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
           "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "and": "bitwise_and",
           "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift", "rshift": "right_shift"}
_COMPARISONS = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal",
                "ne": "not_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}


def _operators():
    """Python's operators on ndarray, each CuPy's ufunc (``a @= b`` is not in place: CuPy has no ``__imatmul__``)."""
    from . import _ufunc

    for name, ufunc in _BINARY.items():
        setattr(ndarray, f"__{name}__", _ufunc.operator(ufunc))
        setattr(ndarray, f"__r{name}__", _ufunc.operator(ufunc, reflected=True))
        setattr(ndarray, f"__i{name}__", _ufunc.operator(ufunc, in_place=True))
    for name, ufunc in _COMPARISONS.items():
        setattr(ndarray, f"__{name}__", _ufunc.operator(ufunc, comparison=True))
    for name, ufunc in _UNARY.items():
        setattr(ndarray, f"__{name}__", _ufunc.operator(ufunc, unary=True))
    ndarray.__matmul__ = lambda self, other: _matmul(self, other)
    ndarray.__rmatmul__ = lambda self, other: _matmul(other, self)


def _matmul(a, b):
    if not isinstance(a, ndarray) or not isinstance(b, ndarray):
        return NotImplemented
    if cuda._capturing():
        refuse_product_in_capture("matmul", [a, b])
        cuda._refuse("the @ operator (an allocation)")
    with np.errstate(**_QUIET):
        product = _dtypes.matmul((a._host, b._host), None)  # CuPy's float16/bfloat16 rules
        return wrap(operator.matmul(a._host, b._host) if product is None else product)


_operators()
_record.watch_class(ndarray, lambda _: "cupy.ndarray")
