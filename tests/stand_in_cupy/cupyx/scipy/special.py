"""``cupyx.scipy.special.erf`` and ``erfc`` of the CuPy stand-in: gpugrad's CPU erf in float64, then rounded."""
from cupy._array import strict


def _in_float64(function):
    def call(a):
        return function(a.astype("float64")).astype(a.dtype)
    return call


def erf(x):
    from gpugrad.ops.special import erf_numpy

    return strict(_in_float64(erf_numpy), "erf")(x)


def erfc(x):
    from gpugrad.ops.special import erfc_numpy

    return strict(_in_float64(erfc_numpy), "erfc")(x)
