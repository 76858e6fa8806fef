"""``cupyx.scipy.special.erf`` and ``erfc`` of the CuPy stand-in: gpugrad's CPU erf in float64, then rounded
to the dtype CuPy's loops give (``e->d``, ``f->f``, ``d->d``: float16 gives float64, bfloat16 float32).

In CuPy both are ufuncs (one input), so they take CuPy arrays and scalars only.
"""
import sys as _sys

from cupy import _dtypes, _record
from cupy._ufunc import operand as _operand
from cupy._array import wrap as _wrap


def _in_float64(function, x, name):
    host = _operand(x, name)
    return _wrap(function(host.astype("float64")).astype(_dtypes.special_dtype(name, host.dtype)))


def erf(x):
    from gpugrad.ops.special import erf_numpy

    return _in_float64(erf_numpy, x, "erf")


def erfc(x):
    from gpugrad.ops.special import erfc_numpy

    return _in_float64(erfc_numpy, x, "erfc")


_record.watch_module(_sys.modules[__name__])
