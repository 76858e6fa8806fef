"""Special functions: erf, and gelu in its exact (erf) form and PyTorch's tanh form.

NumPy has no erf, and SciPy is not a dependency, so the CPU computes it with
the piecewise rational approximations of Sun's fdlibm ``s_erf.c`` (1993), good
to under one ulp in float64; float32 and float16 are computed in float64 and
rounded once. On a GPU, ``cupyx.scipy.special`` (CUDA's own erf) does it.

gelu's gradient is the hot gradient ``GeluGrad``, ``dy * (Phi(x) + x phi(x))``
with Phi the standard normal CDF and phi its density, declared once (:mod:`.hot`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

import numpy as np

from ...backend import CPU, cupy_gaps
from ...backend.cpu_fast import COSTLY
from ...registry import RegisterGradient
from ...tensor import Tensor
from ... import _dtypes as _dt
from .arithmetic import minimum, multiply
from .. import replay
from ..base import emit, float_dtype_of, public_ops, unary
from ..hot import Check, Range, declare
from .activations import tanh
from .math import exp, square

if TYPE_CHECKING:
    from ..._typing import TensorLike

_SQRT_HALF = math.sqrt(0.5)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)

# ---------------------------------------------------------------- erf on the CPU (fdlibm s_erf.c)
# Coefficients from fdlibm, lowest degree first. The names are fdlibm's.

_ERX = 8.45062911510467529297e-01  # erf(1) rounded to single precision
# erf(x) = x + x R(x^2) on |x| < 0.84375, R = PP(z) / (1 + z QQ(z))
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# erf(1 + s) = erx + PA(s) / (1 + s QA(s)) on 0.84375 <= |x| < 1.25
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# erfc(x) = exp(-x^2 - 0.5625 + R(1/x^2) / S(1/x^2)) / x: RA/SA on [1.25, 1/0.35), RB/SB on [1/0.35, 28)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)
_RA_RB_SPLIT = float.fromhex("0x1.6db6ep+1")  # fdlibm's 1/0.35 (2.857...) as it compares high words
_HIGH_WORD = np.uint64(0xFFFFFFFF00000000)


def _poly(coefficients, t):
    """sum_k c_k t^k by Horner's rule, in place in one fresh array."""
    r = t * coefficients[-1]
    r += coefficients[-2]
    for c in coefficients[-3::-1]:
        r *= t
        r += c
    return r


def _small(t):
    """erf(t) - t for |t| < 0.84375."""
    z = t * t
    return t * (_poly(_PP, z) / (1.0 + z * _poly(_QQ, z)))


def _middle(a):
    """erf(a) - erx for 0.84375 <= a < 1.25."""
    s = a - 1.0
    return _poly(_PA, s) / (1.0 + s * _poly(_QA, s))


def _tail(a):
    """erfc(a) for 1.25 <= a < 28."""
    s = 1.0 / (a * a)
    near = a < _RA_RB_SPLIT
    r = np.where(near, _poly(_RA, s), _poly(_RB, s))
    q = 1.0 + s * np.where(near, _poly(_SA, s), _poly(_SB, s))
    # NOTE: exp(-a^2) loses bits to the rounding of a^2; splitting a = hi + (a - hi), hi with
    # 21 significant bits, makes hi^2 exact and leaves the small part to the second exp
    hi = (a.view(np.uint64) & _HIGH_WORD).view(np.float64)
    return np.exp(-hi * hi - 0.5625) * np.exp((hi - a) * (hi + a) + r / q) / a


def erf_numpy(x):
    """erf of a float64 NumPy array, within one ulp (fdlibm's method).

    Example:
        >>> import numpy as np
        >>> float(erf_numpy(np.array([0.5]))[0])
        0.5204998778130465
    """
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):  # the discarded branches may overflow
        out = np.asarray(x + _small(x))  # right for |x| < 0.84375, and NaN stays NaN (0-d: still an array)
        big = a >= 0.84375
        if big.any():
            ab = a[big]
            values = np.where(ab < 1.25, _ERX + _middle(ab), 1.0 - _tail(np.minimum(ab, 28.0)))
            out[big] = np.copysign(values, x[big])  # erf(28) is 1 to double precision, as is all beyond
    return out


def erfc_numpy(x):
    """erfc = 1 - erf of a float64 NumPy array, without the cancellation of 1 - erf for large x.

    Example:
        >>> import numpy as np
        >>> f"{erfc_numpy(np.array([10.0]))[0]:.12e}"
        '2.088487583763e-45'
    """
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    with np.errstate(over="ignore", invalid="ignore"):
        e = _small(x)
        out = np.where(x < 0.25, 1.0 - (x + e), 0.5 - (e + (x - 0.5)))  # |x| < 0.84375
        big = a >= 0.84375
        if big.any():
            ab, positive = a[big], x[big] > 0
            m = _middle(ab)
            c = _tail(np.minimum(ab, 28.0))  # erfc(28) is 0 to double precision, as is all beyond
            out[big] = np.where(ab < 1.25, np.where(positive, (1.0 - _ERX) - m, 1.0 + (_ERX + m)),
                                np.where(positive, c, 2.0 - c))
    return out


def _on_cpu(fn, a):
    """``fn`` (a float64 routine) applied to ``a`` and rounded back to ``a``'s float dtype."""
    out = fn(a)
    dtype = float_dtype_of(a)
    return out if dtype == np.float64 else out.astype(dtype)


def _erf_array(device, a):
    if device is CPU:
        return _on_cpu(erf_numpy, a)
    from cupyx.scipy.special import erf as cupy_erf

    return cupy_gaps.special(cupy_erf)(a)  # float16/bfloat16: in float64, rounded once, as on the CPU


def _normal_cdf_array(device, a):
    """Phi(a) = erfc(-a / sqrt 2) / 2, accurate in both tails."""
    if device is CPU:
        return _on_cpu(lambda v: 0.5 * erfc_numpy(v * -_SQRT_HALF), a)
    from cupyx.scipy.special import erfc as cupy_erfc

    a = a.astype(float_dtype_of(a), copy=False)
    return cupy_gaps.special(lambda v: 0.5 * cupy_erfc(v))(a * a.dtype.type(-_SQRT_HALF))


# ---------------------------------------------------------------- erf


def erf(x: TensorLike) -> Tensor:
    """The error function 2/sqrt(pi) * integral_0^x exp(-t^2) dt, elementwise.

    Example:
        >>> import gpugrad as gg
        >>> gg.erf(gg.tensor([0.0, 0.5], dtype="float64")).numpy().tolist()
        [0.0, 0.5204998778130465]
    """
    if x.__class__ is not Tensor:
        x = unary(x)
    return emit("Erf", _erf_array(x._device, x._data), x._device, (x,))


@RegisterGradient("Erf", reads_outputs=False)
def _erf_grad(op, dy):
    # d erf / dx = 2 / sqrt(pi) * exp(-x^2)
    return (multiply(dy, exp(-square(op.inputs[0])) * _TWO_OVER_SQRT_PI),)


# ---------------------------------------------------------------- gelu


def gelu(x: TensorLike, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit, exact form: 0.5 x (1 + erf(x / sqrt 2)) = x Phi(x).

    Computed as ``0.5 x erfc(-x / sqrt 2)``, the same function without the
    cancellation of ``1 + erf`` for very negative x. ``approximate="tanh"`` gives
    PyTorch's tanh form ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``
    (``torch.nn.functional.gelu(x, approximate="tanh")``, ``tf.nn.gelu(x, approximate=True)``).

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 6) for v in gg.gelu(gg.tensor([-1.0, 0.0, 1.0], dtype="float64")).numpy().tolist()]
        [-0.158655, 0.0, 0.841345]
        >>> round(gg.gelu(gg.tensor(1.0, dtype="float64"), approximate="tanh").item(), 6)
        0.841192
    """
    if x.__class__ is not Tensor:
        x = unary(x)
    if approximate == "tanh":
        return _gelu_tanh(x)
    if approximate != "none":
        raise ValueError(f"op 'Gelu': approximate must be 'none' or 'tanh' (PyTorch's), not {approximate!r}")
    return emit("Gelu", x._data * _normal_cdf_array(x._device, x._data), x._device, (x,))


_GELU_K = math.sqrt(2.0 / math.pi)
_GELU_C = 0.044715


def _gelu_tanh(x):
    d = x._data if _dt.floating(x.dtype) else x._data.astype(np.float32)
    return emit("GeluTanh", _gelu_tanh_array(x._device.xp, d), x._device, (x,))


def _gelu_tanh_array(xp, d):
    t = d.dtype.type
    inner = xp.tanh((d + t(_GELU_C) * d * d * d) * t(_GELU_K))
    return t(0.5) * d * (t(1) + inner)


replay.elementwise("GeluTanh", _gelu_tanh_array)  # the forward's array function is its replay kernel


@RegisterGradient("GeluTanh", reads_outputs=False)
def _gelu_tanh_grad(op, dy):
    # d/dx 0.5 x (1 + tanh u) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 c x^2), u = k (x + c x^3)
    x = op.inputs[0]
    x2 = square(x)
    th = tanh(x * (x2 * _GELU_C + 1.0) * _GELU_K)
    slope = (th + 1.0) * 0.5 + x * (1.0 - square(th)) * ((x2 * (3.0 * _GELU_C) + 1.0) * (0.5 * _GELU_K))
    return (dy * slope,)


@RegisterGradient("Gelu", reads_outputs=False, donates_dy=True)
def _gelu_grad(op, dy):
    return (gelu_grad(op.inputs[0], dy),)


def _gelu_grad_cpu(x, dy, out=None):
    x64 = x.astype(np.float64, copy=False)
    cdf = 0.5 * erfc_numpy(x64 * -_SQRT_HALF)
    pdf = np.exp(-0.5 * x64 * x64) * _INV_SQRT_2PI
    result = dy * (cdf + x64 * pdf)
    if out is None:
        return result.astype(np.result_type(x.dtype, dy.dtype), copy=False)
    out[...] = result
    return out


def _gelu_grad_unfused(xp, x, dy):
    """The gradient as a chain of array ops (erfc is cupyx.scipy.special's on a GPU)."""
    if xp is np:
        erfc = erfc_numpy
    else:
        from cupyx.scipy.special import erfc

        erfc = cupy_gaps.special(erfc)
    cdf = 0.5 * erfc(x * -_SQRT_HALF)
    pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return (dy * (cdf + x * pdf),)


# x^2 beyond this has phi(x) = exp(-x^2 / 2) / sqrt(2 pi) = 0 in every float dtype (exp(-1000) = 0 in float64)
_X2_PAST_UNDERFLOW = 2000.0


def _gelu_grad_grad(op, g):
    # d/dx [dy (Phi + x phi)] = dy phi(x) (2 - x^2), since phi'(x) = -x phi(x); x^2 is capped where
    # phi is 0 anyway, so an x^2 overflowing to inf (float16 at |x| = 256) gives 0, not 0 * -inf
    x, dy = op.inputs
    x2 = minimum(square(x), _X2_PAST_UNDERFLOW)
    pdf = exp(x2 * -0.5) * _INV_SQRT_2PI
    return multiply(g, dy * pdf * (2.0 - x2)), gelu_grad(x, g)


gelu_grad = declare(
    globals(), name="gelu_grad", op_type="GeluGrad", inputs=("x", "dy"), forward="gelu",
    summary="Fused gradient of gelu: dy (Phi(x) + x phi(x))",
    math="dy * (0.5 * erfc(-x / sqrt(2)) + x * exp(-0.5 * x * x) / sqrt(2 * pi))", unfused_chain=_gelu_grad_unfused,
    cpu=_gelu_grad_cpu, cost=COSTLY, reuses_dy=True, grad=_gelu_grad_grad,
    check=Check({"x": Range(-6.0, 6.0)}, ulps={"float16": 1, "float32": 16, "float64": 16},
                scale="abs(dy) * (1 + abs(x) * exp(-0.5 * x * x))", unfused_ops=10),
    example=">>> gg.raw_ops.gelu_grad(gg.tensor(0.0), gg.tensor(2.0)).item()\n1.0")


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals(), not_ops=("erf_numpy", "erfc_numpy"))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "erf", "gelu", "gelu_grad"
    ]
