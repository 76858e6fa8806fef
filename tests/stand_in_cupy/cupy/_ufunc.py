"""CuPy's ufuncs on the stand-in: NumPy's ufuncs behind the rules of CuPy 14.2's ``cupy.ufunc``.

What differs from NumPy, as ``cupy/_core/_kernel.pyx`` and its ufunc
definitions have it (``tests/test_stand_in_contract.py`` pins each):

- operands are CuPy arrays or scalars (``int``, ``float``, ``bool``,
  ``complex`` and NumPy scalars) only: a list, a tuple, ``None`` or a NumPy
  array (0-d too) is a ``TypeError`` (``Unsupported type``);
- keywords: ``out``, ``dtype``, ``casting``; NumPy's ``where=``, ``order=``,
  ``subok=``, ``signature=`` are a ``TypeError`` (``Wrong arguments``);
- results are C-contiguous (NumPy keeps the operands' layout);
- ``floor_divide`` and ``remainder`` on floats are ``floor(x / y)`` and
  ``x - floor(x / y) * y`` (NumPy: ``fmod`` based, so ``1.0 // 0.1`` is 9 in
  NumPy and 10 in CuPy); integers to a negative integer power are 0, 1 or -1
  (NumPy raises ``ValueError``);
- ``at`` only for add, subtract, maximum, minimum and the bitwise and/or/xor,
  each on the dtypes CUDA has atomics for (``cupy.add.at`` on int32, int64,
  float16, float32, float64, uint32, uint64); out-of-bounds indices wrap;
- ``reduce`` and ``accumulate`` only for add and multiply, ``reduceat`` only
  for add: ``NotImplementedError`` otherwise.
"""
import sys

import numpy as np

from . import _dtypes, _record, cuda
from ._array import _QUIET, device_index, is_float, ndarray, refuse_product_in_capture, to_host, wrap

_PY_SCALARS = (int, float, bool, complex)  # exact types: CuPy's CScalar takes no subclasses
_KEYWORDS = ("out", "dtype", "casting")
_COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")
_METHODS = ("__call__", "outer", "at", "reduce", "accumulate", "reduceat")

# ufunc.at: the dtypes CuPy's scatter kernels take with an integer-array index (_scatter_op_single)
_SCATTER_DTYPES = {
    "add": ("int32", "int64", "float16", "float32", "float64", "uint32", "uint64"),
    "subtract": ("int32", "uint32"),
    "maximum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
    "minimum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
    "bitwise_and": ("int32", "int64", "uint32", "uint64"),
    "bitwise_or": ("int32", "int64", "uint32", "uint64"),
    "bitwise_xor": ("int32", "int64", "uint32", "uint64"),
}


def is_scalar(value):
    return type(value) in _PY_SCALARS or isinstance(value, np.generic)


def operand(value, where):
    """The host value of a ufunc operand, or ``TypeError`` for what CuPy's ufuncs refuse."""
    if isinstance(value, ndarray):
        return value._host
    if is_scalar(value):
        return value
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)} in {where}: a NumPy array, not a CuPy array")
    raise TypeError(f"Unsupported type {type(value)} in {where}: CuPy's ufuncs take CuPy arrays and scalars")


def contiguous(host):
    """``host`` as a new CuPy array is laid out: C-contiguous."""
    return np.ascontiguousarray(host) if host.ndim > 1 and not host.flags.c_contiguous else host


def _floor_divide(inputs, dtype):
    if not is_float(dtype):
        return None
    work = np.float32 if dtype.itemsize < 4 else dtype  # CUDA computes half and bfloat16 in float
    x, y = (np.asarray(v).astype(work) for v in inputs)
    return np.floor(x / y).astype(dtype)


def _remainder(inputs, dtype):
    if not is_float(dtype):
        return None
    work = np.float32 if dtype.itemsize < 4 else dtype
    x, y = (np.asarray(v).astype(work) for v in inputs)
    return (x - np.floor(x / y) * y).astype(dtype)


def _power(inputs, dtype):
    """CuPy's ``pow(in0, in1)`` per element on floats (NumPy's loop, given one exponent for every element, takes
    0.5 as sqrt and -1 as a reciprocal: ``-inf ** 0.5`` is nan there, inf in CuPy); on integers CuPy's
    ``integral_power``: a negative exponent gives 1 for a base of 1, +-1 for -1, else 0."""
    if is_float(dtype):
        x, y = np.broadcast_arrays(*(np.asarray(v).astype(dtype) for v in inputs))
        return np.power(x.reshape(-1).copy(), y.reshape(-1).copy()).reshape(x.shape)  # no operand of stride 0
    if dtype.kind not in "iu":
        return None
    x, y = (np.asarray(v).astype(dtype) for v in inputs)
    negative = y < 0
    if not negative.any():
        return None
    powers = np.power(x, np.where(negative, 0, y).astype(dtype))
    odd = (y & 1).astype(bool)
    special = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(dtype)
    return np.where(negative, special, powers)


_MIMICS = {"floor_divide": _floor_divide, "remainder": _remainder, "power": _power, "matmul": _dtypes.matmul}


def _refuse_overlap_copies(name, inputs, outs):
    """CuPy's ufunc copies an input that may share memory with an output it is not (``_copy_in_args_if_needed``
    in cupy/_core/_kernel.pyx): a temporary from the pool, refused while a stream captures."""
    for a in inputs:
        if isinstance(a, ndarray) and any(isinstance(o, ndarray) and a is not o
                                          and np.may_share_memory(a._host, o._host) for o in outs):
            cuda._refuse_temporaries(f"cupy.{name} of an operand that overlaps its output (CuPy copies it)")


class ufunc:
    """``cupy.ufunc``: a NumPy ufunc that takes and returns stand-in arrays under CuPy's rules."""

    def __init__(self, numpy_ufunc):
        self._ufunc = numpy_ufunc
        self.__name__ = numpy_ufunc.__name__
        self.name = "cupy_" + numpy_ufunc.__name__

    def __call__(self, *args, **kwargs):
        _record.call("cupy." + self.__name__, args, kwargs)
        if cuda._capturing():
            outs = tuple(args[self._ufunc.nin:]) or kwargs.get("out")
            if outs is None:
                cuda._refuse(f"cupy.{self.__name__} without out= (an allocation)")
            if self.__name__ == "matmul":  # NumPy's matmul is a ufunc; CuPy's runs cuBLAS (_routines_linalg.pyx)
                refuse_product_in_capture("matmul", [a for a in args[:2] if isinstance(a, ndarray)])
            _refuse_overlap_copies(self.__name__, args[:self._ufunc.nin], outs if isinstance(outs, tuple) else (outs,))
            cuda._defer(lambda: self._apply(args, kwargs), self.__name__)
            return outs[0] if isinstance(outs, tuple) and len(outs) == 1 else outs
        return self._apply(args, kwargs)

    def _apply(self, args, kwargs):
        """The call, unrecorded."""
        unknown = set(kwargs) - set(_KEYWORDS)
        if unknown:
            raise TypeError(f"Wrong arguments { {k: kwargs[k] for k in sorted(unknown)} }")
        u = self._ufunc
        if not u.nin <= len(args) <= u.nargs:
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {u.nin} or "
                            f"{u.nargs} (with outputs), but given {len(args)}.")
        inputs = [operand(a, self.__name__) for a in args[:u.nin]]
        outs = tuple(args[u.nin:]) or kwargs.get("out")
        if outs is not None and not isinstance(outs, tuple):
            outs = (outs,)
        if outs is not None and not all(isinstance(o, ndarray) for o in outs):
            raise TypeError("Output arguments must be cupy.ndarray")
        dtype, casting = kwargs.get("dtype"), kwargs.get("casting", "same_kind")
        with np.errstate(**_QUIET):
            results = None
            if self.__name__ in _MIMICS and len(inputs) == 2:
                want = np.dtype(dtype) if dtype is not None else np.result_type(*inputs)
                mimic = _MIMICS[self.__name__](inputs, want)
                results = None if mimic is None else (mimic,)
            if results is None:
                results = u(*inputs, dtype=dtype, casting=casting)
                results = results if isinstance(results, tuple) else (results,)
            if outs is None:
                results = tuple(wrap(contiguous(np.asarray(r))) for r in results)
            else:
                for out, r in zip(outs, results):
                    np.copyto(out._host, r, casting=casting)
                results = outs
        return results[0] if len(results) == 1 else results

    def at(self, a, indices, b=None):
        """CuPy's scatter: atomics, on the dtypes CUDA has them for; out-of-bounds indices wrap."""
        if self.__name__ not in _SCATTER_DTYPES:
            raise NotImplementedError(f"`{self.name}.at` is not supported yet")
        if not isinstance(a, ndarray):
            raise TypeError(f"Unsupported type {type(a)}: {self.__name__}.at writes into a CuPy array")
        index = device_index(indices, a._host.shape)
        items = index if isinstance(index, tuple) else (index,)
        integer_arrays = any(isinstance(i, np.ndarray) and i.ndim and i.dtype.kind in "iu" for i in items)
        if integer_arrays and a._host.dtype.name not in _SCATTER_DTYPES[self.__name__]:
            raise TypeError(f"cupy.{self.__name__}.at only supports {', '.join(_SCATTER_DTYPES[self.__name__])} "
                            "as data type")
        value = to_host(b, self.__name__ + ".at", allow_numpy=True)
        with np.errstate(**_QUIET):
            self._ufunc.at(a._host, index, np.asarray(value).astype(a._host.dtype))

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False):
        if self.__name__ == "add":
            return array.sum(axis, dtype, out, keepdims)
        if self.__name__ == "multiply":
            return array.prod(axis, dtype, out, keepdims)
        raise NotImplementedError(f"`{self.name}.reduce` is not supported yet")

    def accumulate(self, array, axis=0, dtype=None, out=None):
        if self.__name__ == "add":
            return array.cumsum(axis, dtype, out)
        if self.__name__ == "multiply":
            return array.cumprod(axis, dtype, out)
        raise NotImplementedError(f"`{self.name}.accumulate` is not supported yet")

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        if self.__name__ == "add":
            return wrap(np.add.reduceat(to_host(array, "add.reduceat"), to_host(indices, "an index", True),
                                        axis, dtype))
        raise NotImplementedError(f"`{self.name}.reduceat` is not supported yet")

    def outer(self, A, B, **kwargs):
        cupy = sys.modules["cupy"]
        A, B = cupy.array(A), cupy.array(B)
        ndim_a, ndim_b = A.ndim, B.ndim
        return self(A.reshape(A.shape + (1,) * ndim_b), B.reshape((1,) * ndim_a + B.shape), **kwargs)

    def __getattr__(self, name):
        if name in ("nin", "nout", "nargs", "types", "ntypes", "identity"):
            return getattr(self._ufunc, name)
        raise AttributeError(f"'cupy.ufunc' object has no attribute {name!r}")

    def __repr__(self):
        return f"<ufunc '{self.name}'>"


def from_numpy(numpy_ufunc, method, inputs, kwargs):
    """NumPy's ``numpy_ufunc`` met a stand-in array: CuPy's ufunc of that name, as ``ndarray.__array_ufunc__``."""
    if method not in _METHODS:
        return NotImplemented
    try:
        cupy_ufunc = getattr(sys.modules["cupy"], numpy_ufunc.__name__)
    except AttributeError:
        return NotImplemented
    if "out" in kwargs:
        out = kwargs["out"]
        if len(out) != 1:
            raise ValueError("The 'out' parameter must have exactly one array value")
        kwargs = {**kwargs, "out": out[0]}
        inout = inputs + out
    else:
        inout = inputs
    if not all(is_scalar(x) or isinstance(x, (ndarray, np.ndarray)) for x in inout):
        return NotImplemented
    if numpy_ufunc.__name__ in _COMPARISONS:
        inputs = tuple(x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in inputs)
    qualname = f"cupy.{numpy_ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    _record.seen(qualname, depth=2)  # the frame that called NumPy
    _record.call(qualname, inputs, kwargs, depth=2)
    if method == "__call__":
        return cupy_ufunc._apply(inputs, kwargs)
    return getattr(cupy_ufunc, method)(*inputs, **kwargs)


def operator(name, reflected=False, in_place=False, comparison=False, unary=False):
    """The method behind one of Python's operators on ``ndarray``, as CuPy's ``core.pyx`` defines it."""
    def ufunc_of():
        return getattr(sys.modules["cupy"], name)

    if unary:
        return lambda self: ufunc_of()._apply((self,), {})
    if in_place:
        def method(self, other):
            return ufunc_of()._apply((self, other, self), {})
    elif reflected:
        def method(self, other):
            return ufunc_of()._apply((other, self), {})
    else:
        def method(self, other):
            if isinstance(other, ndarray):
                return ufunc_of()._apply((self, other), {})
            if _should_use_rop(self, other):
                return NotImplemented
            if comparison:
                if isinstance(other, np.ndarray) and other.ndim == 0:
                    other = other.item()
                if name in ("equal", "not_equal") and (other is None or type(other).__eq__ is object.__eq__):
                    # CuPy: an object with object's __eq__ equals no element of an array
                    return wrap(np.full(self._host.shape, name == "not_equal"))
            return getattr(np, name)(self, other)  # NumPy hands it back through __array_ufunc__, as in CuPy
    method.__name__ = name
    return method


_NO_UFUNC = object()


def _should_use_rop(x, y):
    """CuPy's rule for leaving a binary operator to ``y`` (``_should_use_rop`` in ``core.pyx``)."""
    y_ufunc = getattr(y, "__array_ufunc__", _NO_UFUNC)
    if y_ufunc is not _NO_UFUNC:
        return y_ufunc is None
    return getattr(x, "__array_priority__", 0) < getattr(y, "__array_priority__", 0)


_record.watch_class(ufunc, lambda u: "cupy." + object.__getattribute__(u, "__name__"))
