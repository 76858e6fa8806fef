"""``cupy.random`` of the stand-in: ``RandomState`` on NumPy's generator (other numbers than CuPy's).

As in CuPy (``cupy/random/_generator.py``), the float draws take a ``dtype``
and only float32 or float64 (``TypeError`` otherwise, e.g. for float16).
"""
import sys as _sys

import numpy as _np

from . import _record
from . import cuda as _cuda
from ._array import wrap as _wrap


def _float_dtype(dtype):
    dtype = _np.dtype(dtype)
    if dtype.char not in ("f", "d"):
        raise TypeError("cupy.random only supports float32 and float64")
    return dtype


class RandomState:
    """Draws on the stand-in's device; the same seed gives the same numbers, not CuPy's numbers."""

    @_record.calls_recorded("cupy.random.RandomState")
    def __init__(self, seed=None, method=None):
        self._state = _np.random.RandomState(None if seed is None else int(seed) % 2**32)

    def random_sample(self, size=None, dtype=float):
        dtype = _float_dtype(dtype)
        _cuda._refuse_library("cuRAND")  # curand.generateUniform(Double): its setStream refuses in a capture
        return _wrap(_np.asarray(self._state.random_sample(size)).astype(dtype))

    def standard_normal(self, size=None, dtype=float):
        dtype = _float_dtype(dtype)
        _cuda._refuse_library("cuRAND")  # curand.generateNormal(Double)
        return _wrap(_np.asarray(self._state.standard_normal(size)).astype(dtype))

    def randint(self, low, high=None, size=None, dtype=int):
        _cuda._refuse_library("cuRAND")  # curand.generate (the bits CuPy's interval kernel maps)
        return _wrap(_np.asarray(self._state.randint(low, high, size, dtype)))


_record.watch_module(_sys.modules[__name__])
_record.watch_class(RandomState, lambda _: "cupy.random.RandomState")
