"""``cupyx.scipy.special.erf``, ``erfc``, ``gammaln``, ``digamma`` and ``erfinv`` of the CuPy stand-in: gpugrad's
CPU functions in float64, then rounded to the dtype CuPy's loops give (erf's ``e->d``, ``f->f``, ``d->d``: float16
gives float64, bfloat16 float32; erfinv has no float16 loop, so float16 gives float32).

In CuPy they are ufuncs (one input), so they take CuPy arrays and scalars only.
"""
import sys as _sys

import numpy as np

from cupy import _dtypes, _record
from cupy._ufunc import operand as _operand
from cupy._array import wrap as _wrap


def _in_float64(function, x, name):
    host = _operand(x, name)
    return _wrap(function(host.astype("float64")).astype(_dtypes.special_dtype(name, host.dtype)))


def erf(x):
    from gpugrad.ops.elementwise.special import erf_numpy

    return _in_float64(erf_numpy, x, "erf")


def erfc(x):
    from gpugrad.ops.elementwise.special import erfc_numpy

    return _in_float64(erfc_numpy, x, "erfc")


def gammaln(x):
    from gpugrad.ops.elementwise.special_functions import _lgamma64

    return _in_float64(lambda v: _lgamma64(np, v), x, "gammaln")


def digamma(x):
    from gpugrad.ops.elementwise.special_functions import _polygamma64

    return _in_float64(lambda v: _polygamma64(np, 0, v), x, "digamma")


def erfinv(x):
    from gpugrad.ops.elementwise.special_functions import _erfinv64

    return _in_float64(lambda v: _erfinv64(np, v), x, "erfinv")


_record.watch_module(_sys.modules[__name__])
