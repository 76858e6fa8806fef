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
(:mod:`gpugrad.kernelcheck.host`), called with the argument layout of
``CupyBackend.fused``.

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
- NumPy's submodules it does not provide (``cupy.fft`` ...): ``AttributeError``;
- hashing an array (``TypeError``, as for NumPy and CuPy arrays);
- a kernel other than gpugrad's, and a fused kernel's keyword param given as an
  array with more than one element (the host build takes params by value):
  ``NotImplementedError``.

Reductions return 0-d arrays, not NumPy scalars, as CuPy's do. What it cannot
show: speed, memory (its pool reports 0 bytes), streams, several GPUs, and the
last bits where NVRTC contracts multiply-adds and flushes subnormals (the host
build does neither; ``gpugrad.kernelcheck.nvrtc`` compiles the kernels for real).
"""
import os as _os
import types as _types

import numpy as _np

if _os.environ.get("GPUGRAD_STAND_IN_CUPY") != "1":
    raise ImportError("tests/stand_in_cupy is the test suite's NumPy stand-in for CuPy, not CuPy; "
                      "it loads only with GPUGRAD_STAND_IN_CUPY=1 (see tests/test_gpu_paths_on_host.py)")

from . import cuda, random  # noqa: E402
from ._array import from_host, ndarray, strict, to_host, wrap  # noqa: E402
from ._kernel import ElementwiseKernel  # noqa: E402

__version__ = "14.2.0+stand-in"
__all__ = ["ElementwiseKernel", "array", "asanyarray", "asarray", "asnumpy", "cuda", "from_dlpack",
           "get_default_memory_pool", "is_available", "lib", "ndarray", "random"]


def asarray(a, dtype=None, order=None):
    """``a`` on the device: a stand-in array itself (or cast, if ``dtype`` asks), anything else copied over."""
    if isinstance(a, ndarray):
        host = _np.asarray(a._host, dtype=dtype, order=order)
        return a if host is a._host else wrap(host)
    return from_host(a, dtype, order)


array = asanyarray = asarray


def asnumpy(a, stream=None):
    """A NumPy copy of ``a`` (host data is passed to ``numpy.asarray``)."""
    return a.get() if isinstance(a, ndarray) else _np.asarray(a)


def from_dlpack(obj):
    """The array a DLPack producer on the device shares (a stand-in array, or a wrapper of one)."""
    kind, _ = obj.__dlpack_device__()
    if kind != cuda.DLPACK_DEVICE[0]:
        raise TypeError(f"from_dlpack: the stand-in takes arrays on the CUDA device, not DLPack device type {kind}")
    return wrap(_np.from_dlpack(obj))


def is_available():
    """Always ``True``: the stand-in's one device is always there."""
    return True


_POOL = _types.SimpleNamespace(free_all_blocks=lambda: None, used_bytes=lambda: 0, total_bytes=lambda: 0)


def get_default_memory_pool():
    """A memory pool that holds nothing: 0 bytes used, 0 held."""
    return _POOL


lib = _types.SimpleNamespace(stride_tricks=_types.SimpleNamespace(
    as_strided=strict(_np.lib.stride_tricks.as_strided, "as_strided")))


def __getattr__(name):
    """Everything else from NumPy: ufuncs and functions made strict, types and constants as they are."""
    attr = getattr(_np, name)
    if isinstance(attr, _types.ModuleType):
        raise AttributeError(f"the CuPy stand-in has no submodule {name!r}")
    if isinstance(attr, _np.ufunc):
        return _Ufunc(attr)
    if callable(attr) and not isinstance(attr, type):
        return strict(attr, name)
    return attr


class _Ufunc:
    """A NumPy ufunc that takes and returns stand-in arrays; ``.at`` takes host indices as CuPy's does."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return strict(self._ufunc, self.__name__)(*args, **kwargs)

    def at(self, a, indices, b=None):
        self._ufunc.at(to_host(a, self.__name__ + ".at"), to_host(indices, "an index", allow_numpy=True),
                       to_host(b, self.__name__ + ".at"))

    def __getattr__(self, name):
        return strict(getattr(self._ufunc, name), f"{self.__name__}.{name}")
