"""A stand-in for CuPy that runs on NumPy, so gpugrad's CuPy code paths run on a machine without a GPU.

Only the test suite uses it: ``tests/test_gpu_paths_on_host.py`` runs the
``gpu``-marked tests in a subprocess with ``tests/stand_in_cupy`` first on
``PYTHONPATH`` and ``GPUGRAD_STAND_IN_CUPY=1``. It is not part of the gpugrad
package, pytest never collects it (``collect_ignore`` in ``tests/conftest.py``),
and it refuses to import without ``GPUGRAD_STAND_IN_CUPY=1``, so a stray path
entry cannot pass it off as a real GPU.

One device, ``cuda:0``. Its arrays (:class:`ndarray`) hold a NumPy array in
host memory; NumPy does the arithmetic. The fused kernels (``ElementwiseKernel``
built from ``kernels/*.cu``) run their CUDA source built for the host with g++
(:mod:`gpugrad._tools.kernelcheck.host`), called with the argument layout of
``CupyBackend.fused``.

It has only what the real CuPy 14.2.0 has: a name that is neither defined here
nor listed in ``tests/stand_in_cupy/cupy_14.2.0_names.txt`` (the real CuPy's
names, checked by ``tests/test_stand_in_contract.py``) is an
``AttributeError``, on the module, its arrays and its ufuncs alike.

What it deliberately refuses, as CuPy does, so that a host/device mix-up fails
here as it would on a GPU:

- implicit conversion to NumPy: ``np.asarray(a)``, ``np.array(a)`` and
  anything else that calls ``a.__array__()`` raise ``TypeError``; ``a.get()``
  and ``cupy.asnumpy(a)`` are the ways back to the host;
- NumPy arrays as operands of its functions, ufuncs, operators, array methods
  and kernels (``cupy.exp(np_array)``, ``a + np_array``, ``np.exp(a) * np_array``):
  ``TypeError``. Python scalars and NumPy scalars are fine, and ``asarray`` and
  ``array`` copy host data to the "device". Index arguments (``a[idx]``,
  ``a[idx] = v``, ``cupy.add.at``) may be NumPy arrays, which CuPy copies over;
  a basic-index assignment of a NumPy array (``a[:] = np_array``) is refused;
- lists and tuples as ufunc operands (``cupy.add(a, [1, 2])``), and NumPy's
  ufunc keywords CuPy lacks (``where=``, ``order=``): ``TypeError``;
- NumPy's submodules it does not provide (``cupy.fft`` ...): ``AttributeError``;
- hashing an array (``TypeError``, as for NumPy and CuPy arrays);
- an integer-array assignment writing different values to one element (CuPy
  keeps an undefined one): ``RuntimeError``;
- a kernel other than gpugrad's, and a fused kernel's keyword param given as an
  array with more than one element (the host build takes params by value):
  ``NotImplementedError``.

While a stream captures (``Stream.begin_capture`` to ``end_capture``) it records
launches into arrays that exist (ufuncs and kernels given ``out=``, ``copyto``,
assignment) and refuses, as CuPy 14.2 does (``tests/test_stand_in_capture.py``
finds each message in the real wheel): cuBLAS products of floats (``matmul``,
``dot``, ``@``, ``tensordot``, ``einsum`` ...), cuSOLVER (``linalg``) and cuRAND
(``random``) calls, ``NotImplementedError('calling cuBLAS API during stream
capture is currently unsupported')``; host transfers (``get``, ``item``,
``tolist``, ``bool``, ``float``, ``int``, ``asnumpy``, ``asarray`` of host data),
``RuntimeError('the current stream is capturing, so D2H transfers are
disallowed')``; a capture on the legacy stream. It also refuses what CuPy lets
through to a graph that writes into freed memory: any allocation, and the pool
temporaries of CuPy's routines (CUB reductions and scans, Thrust sorts, the
CUB sum of a vector . vector product, integer products, a ufunc's copy of an
operand overlapping its output).

Where CuPy computes differently from NumPy it computes as CuPy (see
``_array``, ``_ufunc`` and :func:`clip`, :func:`where`, :func:`take`):
out-of-bounds integer-array indices wrap, float-to-integer casts saturate,
``clip`` ignores a NaN bound, float ``//`` and ``%`` are ``floor(x / y)``
based, integer powers take negative exponents, and no floating-point error
warns. Reductions return 0-d arrays, not NumPy scalars, as CuPy's do.

It counts every device-to-host transfer (``get``, ``asnumpy``, ``item``, ``tolist``, ``bool``,
``float``, ``int``, ``complex``, ``repr``, ``tobytes``...): ``with cupy._transfers.counting() as seen``
collects each one with its caller (``tests/test_host_syncs.py`` counts a training step's).

float16 and bfloat16 follow CuPy 14.2's type tables (:mod:`cupy._dtypes`): a
product of 3 or more dimensions in bfloat16 raises ``TypeError`` and in float16
is computed in float32 (recorded in ``_dtypes.UPCASTS``); sorts (and partitions
of short rows, ``median``, ``quantile``) refuse bfloat16; ``where`` and ``clip``
give float32 for bfloat16; ``cupyx.scipy.special.erf``/``erfc`` give float64
for float16 and float32 for bfloat16.

What it cannot show: speed (the cost of CuPy's float16 copies to float32 among it), memory (its pool reports 0 bytes), streams (so a
capture is refused whatever stream is current, and an event or another stream
cannot join one), what CUDA's driver itself refuses in a capture beyond CuPy's
checks (synchronising another stream or event, a kernel CuPy launches with
temporaries it does not list here: ``_routines`` of CuPy this list misses
capture as kernels), whether a graph replays faster than its launches,
several GPUs, the random numbers CuPy draws, the order in which a GPU
reduction adds (so the last bits of sums), and the last bits where NVRTC
contracts multiply-adds and flushes subnormals (the host build does neither;
``gpugrad._tools.kernelcheck.nvrtc`` compiles the kernels for real).
"""
import os as _os
import sys as _sys
import types as _types

import numpy as _np

if _os.environ.get("GPUGRAD_STAND_IN_CUPY") != "1":
    raise ImportError("tests/stand_in_cupy is the test suite's NumPy stand-in for CuPy, not CuPy; "
                      "it loads only with GPUGRAD_STAND_IN_CUPY=1 (see tests/test_gpu_paths_on_host.py)")

from . import _dtypes, _names, _record, _transfers, cuda, random  # noqa: E402
from ._array import cast as _cast, from_host as _from_host, is_float as _is_float, ndarray  # noqa: E402
from ._array import strict as _strict, to_host as _to_host, wrap as _wrap  # noqa: E402
from ._kernel import ElementwiseKernel, ReductionKernel  # noqa: E402
from ._ufunc import contiguous as _contiguous, operand as _operand, ufunc  # noqa: E402

__version__ = "14.2.0+stand-in"
__all__ = ["ElementwiseKernel", "ReductionKernel", "array", "asanyarray", "asarray", "asnumpy", "clip", "cuda", "from_dlpack",
           "get_default_memory_pool", "is_available", "lib", "ndarray", "random", "take", "take_along_axis",
           "ufunc", "where"]


def asarray(a, dtype=None, order=None, *, copy=None, blocking=False):
    """``a`` on the device: a stand-in array itself (or cast, if ``dtype`` asks), anything else copied over."""
    if isinstance(a, ndarray):
        host = a._host if dtype is None else _cast(a._host, dtype, copy=False)
        if cuda._capturing() and (host is not a._host or copy or order is not None):
            cuda._refuse("cupy.asarray making a new array (an allocation)")
        if order is not None:
            host = _np.asarray(host, order=order)
        if copy and host is a._host:
            host = host.copy()
        return a if host is a._host else ndarray._of(host)
    return _from_host(a, dtype, order)


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    """A new array on the device (``copy=True``: a stand-in array is copied too, as CuPy does)."""
    out = asarray(obj, dtype=dtype, order=None if order == "K" else order, copy=copy)
    if ndmin > out._host.ndim:
        out = ndarray._of(out._host.reshape((1,) * (ndmin - out._host.ndim) + out._host.shape))
    return out


def asanyarray(a, dtype=None, order=None):
    return asarray(a, dtype, order)


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    """A NumPy copy of ``a`` (host data is passed to ``numpy.asarray``)."""
    return a.get(order=order, out=out) if isinstance(a, ndarray) else _np.asarray(a, order=order)


def from_dlpack(obj):
    """The array a DLPack producer on the device shares (a stand-in array, or a wrapper of one)."""
    kind, _ = obj.__dlpack_device__()
    if kind != cuda._DLPACK_DEVICE[0]:
        raise TypeError(f"from_dlpack: the stand-in takes arrays on the CUDA device, not DLPack device type {kind}")
    return _wrap(_np.from_dlpack(obj))


def is_available():
    """Always ``True``: the stand-in's one device is always there."""
    return True


_POOL = cuda.MemoryPool()


def get_default_memory_pool():
    """A memory pool that holds nothing: 0 bytes used, 0 held."""
    return _POOL


def _submodule(name, **attrs):
    module = _types.ModuleType(name)
    module.__dict__.update(attrs)
    _sys.modules[name] = module
    _record.watch_module(module)
    return module


lib = _submodule("cupy.lib", stride_tricks=_submodule(
    "cupy.lib.stride_tricks", as_strided=_strict(_np.lib.stride_tricks.as_strided, "as_strided")))


def _linalg_function(name):
    if not _names.has("cupy.linalg", name):
        raise AttributeError(f"module 'cupy.linalg' has no attribute {name!r} (the real CuPy 14.2 has none)")
    return _strict(getattr(_np.linalg, name), f"linalg.{name}")


# NumPy's linalg behind CuPy's names. CuPy returns NaN for a failed factorisation unless
# cupyx.errstate(linalg="raise") is on; NumPy always raises: gpugrad asks CuPy to raise.
linalg = _submodule("cupy.linalg", LinAlgError=_np.linalg.LinAlgError, **{
    name: _linalg_function(name) for name in ("inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh",
                                              "svd", "norm", "pinv", "matrix_power")
    if _names.has("cupy.linalg", name)})


# --- functions where CuPy computes differently from NumPy -------------------------

def clip(a, a_min, a_max, out=None):
    """CuPy's clip kernel, ``lo > hi ? hi : (x < lo ? lo : (x > hi ? hi : x))``: a NaN bound leaves x as it is.

    NumPy propagates a NaN bound into the result; a missing bound is the
    dtype's infinity or integer limit, as in CuPy's ``_ndarray_clip``.
    """
    if not isinstance(a, ndarray):
        raise TypeError(f"Unsupported type {type(a)}: cupy.clip clips a CuPy array")
    x = a._host
    if a_min is None:
        a_min = -_np.inf if _is_float(x.dtype) else _np.iinfo(x.dtype).min
    if a_max is None:
        a_max = _np.inf if _is_float(x.dtype) else _np.iinfo(x.dtype).max
    if cuda._capturing():
        if out is None:
            cuda._refuse("cupy.clip without out= (an allocation)")
        return cuda._defer(lambda: clip(a, a_min, a_max, out=out), "clip") or out
    lo, hi = _operand(a_min, "clip"), _operand(a_max, "clip")
    dtype = _np.result_type(x, lo, hi)
    x, lo, hi = (_np.asarray(v).astype(dtype) for v in (x, lo, hi))
    result = _np.where(lo > hi, hi, _np.where(x < lo, lo, _np.where(x > hi, hi, x)))
    result = result.astype(_dtypes.clip_dtype(result), copy=False)  # no bfloat16 loop: float32
    if out is not None:
        _np.copyto(out._host, result, casting="same_kind")
        return out
    return ndarray._of(_contiguous(result))


def where(condition, x=None, y=None):
    """CuPy's where: the condition must be a CuPy array, ``x`` and ``y`` ufunc operands (no lists)."""
    if cuda._capturing():
        cuda._refuse("cupy.where (an allocation)")
    missing = (x is None, y is None).count(True)
    if missing == 1:
        raise ValueError("Must provide both 'x' and 'y' or neither.")
    if missing == 2:
        return _wrap(_np.nonzero(condition._host))  # CuPy calls condition.nonzero(): arrays only
    condition = condition.astype("?", copy=False)  # as CuPy: AttributeError for a bool or list
    if not isinstance(condition, ndarray):
        raise TypeError(f"Unsupported type {type(condition)} in where: a NumPy array, not a CuPy array")
    result = _np.where(condition._host, _operand(x, "where"), _operand(y, "where"))
    return ndarray._of(_contiguous(result.astype(_dtypes.where_dtype(result), copy=False)))


def take(a, indices, axis=None, out=None):
    """CuPy's take: out-of-bounds indices wrap around (NumPy raises ``IndexError``)."""
    if not isinstance(a, ndarray):
        raise TypeError(f"Unsupported type {type(a)}: cupy.take takes from a CuPy array")
    if cuda._capturing():
        if out is None:
            cuda._refuse("cupy.take without out= (an allocation)")
        return cuda._defer(lambda: take(a, indices, axis=axis, out=out), "take") or out
    result = _np.take(a._host, _np.asarray(_to_host(indices, "an index", allow_numpy=True)), axis=axis, mode="wrap")
    if out is not None:
        out._host[...] = result
        return out
    return _wrap(result)


def take_along_axis(a, indices, axis):
    """CuPy's take_along_axis, as CuPy writes it: an integer-array index, so out-of-bounds indices wrap."""
    if indices.dtype.kind not in ("i", "u"):
        raise IndexError("`indices` must be an integer array")
    if axis is None:
        a, axis = a.ravel(), 0
    ndim = a.ndim
    axis = axis + ndim if axis < 0 else axis
    if ndim != indices.ndim:
        raise ValueError("`indices` and `a` must have the same number of dimensions")
    fancy = [indices if i == axis else _wrap(_np.arange(n).reshape((1,) * i + (-1,) + (1,) * (ndim - i - 1)))
             for i, n in enumerate(a.shape)]
    return a[tuple(fancy)]


def _count_nonzero(a, axis=None):
    """CuPy's count_nonzero: a 0-d intp array without an axis (NumPy 2.2's returns a Python int, 2.3's an intp)."""
    return _np.asarray(_np.count_nonzero(a, axis=axis), dtype=_np.intp)


count_nonzero = _strict(_count_nonzero, "count_nonzero")


_cache = {}


def __getattr__(name):
    """Everything else from NumPy, where the real CuPy has it: ufuncs and functions strict, types as they are."""
    found = _cache.get(name)
    if found is not None:
        return found
    if not _names.has("cupy", name):
        raise AttributeError(f"module 'cupy' has no attribute {name!r} (the real CuPy 14.2 has none)")
    try:
        attr = getattr(_np, name)
    except AttributeError:
        raise AttributeError(f"the CuPy stand-in does not provide cupy.{name} (NumPy has no such name)") from None
    if isinstance(attr, _types.ModuleType):
        raise AttributeError(f"the CuPy stand-in has no submodule {name!r}")
    if isinstance(attr, _np.ufunc):
        attr = ufunc(attr)
    elif callable(attr) and not isinstance(attr, type):
        attr = _strict(attr, name)
    _cache[name] = attr
    return attr


_record.watch_module(_sys.modules[__name__])
