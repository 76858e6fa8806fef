"""Special functions of ``scipy.special`` / ``torch.special``: lgamma (gammaln), digamma, polygamma, erfc,
erfinv, xlogy, xlog1py, i0e, i1e, with their gradients (every order: each rule is made of these ops).

NumPy has none of them and SciPy is not a dependency, so the CPU computes them in float64 (float32 and
float16 rounded once from it) by classical methods, each with the accuracy measured against a float64
oracle (``tests/test_special_functions.py``):

- lgamma: Lanczos' approximation (g = 7, 9 terms) for x >= 1/2, the reflection formula below; absolute error
  under 1e-14 where |lgamma| < 1, relative under 1e-14 elsewhere (oracle: ``math.lgamma``).
- digamma and polygamma(n, x): the recurrence psi^(n)(x) = psi^(n)(x + 1) - (-1)^n n! / x^(n+1) up to
  x >= 15 + n, then the asymptotic series with Bernoulli numbers to B_18; negative x by the n-th derivative of
  the reflection formula psi(1 - x) - psi(x) = pi cot(pi x). Relative error under 1e-13 for n <= 10 away from
  digamma's root at 1.4616 (absolute there); oracle: ``torch.special`` (and finite differences of lgamma).
- erfc: fdlibm's rational approximations (:mod:`.special`), under one ulp (oracle: ``math.erfc``).
- erfinv: Giles' single-precision approximation ("Approximating the erfinv function", 2010), refined by four
  Newton steps on erf(x) - |y| (on log erfc(x) - log(1 - |y|) for |y| >= 1/2, where 1 - |y| is exact), so that
  erf(erfinv(y)) = y within 1e-14 relative and erfc(erfinv(y)) = 1 - y within 1e-13 relative for y near 1;
  erfinv(+-1) = +-inf, NaN outside [-1, 1].
- i0e, i1e: Cephes' Chebyshev expansions (Moshier) on [0, 8] and in 32/x beyond, relative error under 1e-14
  (oracle: ``np.i0``). They run as array ops on a GPU too: ``cupyx.scipy.special.i0e`` overflows to NaN
  for |x| > 709 (it computes exp(-|x|) * I0(x)).

On a GPU, lgamma, digamma, erfc and erfinv are ``cupyx.scipy.special``'s (CUDA's lgamma and Cephes' digamma
and erfinv), float16/bfloat16 in float64 and rounded once (:func:`gpugrad.backend.cupy_gaps.special`);
polygamma, xlogy, xlog1py, i0e and i1e are the same array ops as on the CPU. Each forward's array function
is also its replay kernel under ``gg.function`` (:func:`.replay.elementwise`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

import numpy as np

from ...backend import cupy_gaps
from ...registry import RegisterGradient
from ...tensor import Tensor
from .arithmetic import reciprocal, sign, where
from .. import replay
from ..base import binary, binary_error, emit, float_dtype_of, public_ops, real_operand
from .math import exp, log, log1p, square
from .special import erfc_numpy, erf_numpy
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import TensorLike

_LOG_PI = math.log(math.pi)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0


def _in_float64(function, xp, a):
    """``function(xp, a64)`` computed in float64 and rounded once to ``a``'s float dtype."""
    with np.errstate(all="ignore"):  # poles and the branches ``where`` discards
        out = function(xp, a.astype(np.float64, copy=False))
    dtype = float_dtype_of(a)
    return out if dtype == np.float64 else out.astype(dtype)


def _unary_op(op_type, compute):
    """The forward of elementwise op ``op_type`` whose output array is ``compute(xp, a)`` (``a`` the operand's
    float array); ``compute`` is declared its replay kernel too (:func:`.replay.elementwise`)."""
    replay.elementwise(op_type, compute)

    def forward(x):
        x, a = real_operand(x, op_type)
        return emit(op_type, compute(x._device.xp, a), x._device, (x,))
    return forward


def _float64_or_cupyx(op_type, cpu64, cupyx_name):
    """The forward of op ``op_type``: ``cpu64(np, a)`` in float64 on the CPU (:func:`_in_float64`), on a GPU
    ``cupyx.scipy.special.<cupyx_name>`` (float16/bfloat16 through float64, :func:`cupy_gaps.special`)."""
    def compute(xp, a):
        if xp is np:
            return _in_float64(cpu64, np, a)
        from cupyx.scipy import special as cupyx_special

        return cupy_gaps.special(getattr(cupyx_special, cupyx_name))(a)
    return _unary_op(op_type, compute)


def _sinpi_cotpi_arg(xp, x):
    """x - round(x): sin(pi x) and cot(pi x) of it have the magnitudes of those of x (exact for any x)."""
    return x - xp.rint(x)


# ---------------------------------------------------------------- lgamma (Lanczos)

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)


def _lanczos_lgamma(xp, x):
    """lgamma(x) for x >= 1/2."""
    z = x - 1.0
    series = xp.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series += c / (z + i)
    t = z + (_LANCZOS_G + 0.5)
    return _HALF_LOG_2PI + (z + 0.5) * xp.log(t) - t + xp.log(series)


def _lgamma64(xp, x):
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x) for x < 1/2 (+inf at the poles 0, -1, ...)
    small = x < 0.5
    right = _lanczos_lgamma(xp, xp.where(small, 1.0 - x, x))
    sin_pi = xp.abs(xp.sin(math.pi * _sinpi_cotpi_arg(xp, x)))
    return xp.where(small, _LOG_PI - xp.log(sin_pi) - right, right)


def lgamma(x: TensorLike) -> Tensor:
    """``log |Gamma(x)|`` elementwise, as ``scipy.special.gammaln`` and ``torch.lgamma`` (+inf at 0, -1, -2, ...).

    Gradient: digamma(x). Accuracy: see :mod:`gpugrad.ops.elementwise.special_functions`.

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 12) for v in gg.lgamma(gg.tensor([0.5, 4.0], dtype="float64")).numpy().tolist()]
        [0.572364942925, 1.791759469228]
    """
    return _lgamma(x)


_lgamma = _float64_or_cupyx("Lgamma", _lgamma64, "gammaln")
gammaln = lgamma  # scipy.special's name


@RegisterGradient("Lgamma", reads_outputs=False)
def _lgamma_grad(op, dy):
    return (dy * digamma(op.inputs[0]),)


# ---------------------------------------------------------------- digamma, polygamma

_BERNOULLI = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510,
              43867.0 / 798)  # B_2, B_4, ..., B_18


def _cot_derivative_poly(n):
    """Coefficients (lowest first) of P_n with d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)).

    P_0(c) = c and P_{k+1}(c) = -(1 + c^2) P_k'(c), since d cot(pi x)/dx = -pi (1 + cot^2(pi x)).
    """
    p = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        p = -np.polynomial.Polynomial([1.0, 0.0, 1.0]) * p.deriv()
    return p.coef


def _polygamma_nonnegative(xp, n, y):
    """psi^(n)(y) for y >= 0 by upward recurrence to y >= 15 + n, then the asymptotic series."""
    shift = 15 + n
    fact_n = float(math.factorial(n))
    sign_n = -1.0 if n % 2 else 1.0  # (-1)^n
    acc = xp.zeros_like(y)
    for _ in range(shift):  # psi^(n)(y) = psi^(n)(y + 1) - (-1)^n n! / y^(n+1), below the threshold
        low = y < shift
        acc -= xp.where(low, sign_n * fact_n / y ** (n + 1), 0.0)
        y = xp.where(low, y + 1.0, y)
    inv = 1.0 / y
    inv2 = inv * inv
    if n == 0:
        # psi(y) ~ log y - 1/(2y) - sum_k B_2k / (2k y^2k)
        series = xp.zeros_like(y)
        power = inv2.copy()
        for k, b in enumerate(_BERNOULLI, start=1):
            series += (b / (2 * k)) * power
            power = power * inv2
        return acc + xp.log(y) - 0.5 * inv - series
    # psi^(n)(y) ~ (-1)^(n+1) [(n-1)!/y^n + n!/(2 y^(n+1)) + sum_k B_2k (2k+n-1)! / ((2k)! y^(2k+n))]
    lead = inv ** n
    total = math.factorial(n - 1) * lead + 0.5 * fact_n * lead * inv
    power = lead * inv2
    for k, b in enumerate(_BERNOULLI, start=1):
        total += (b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)) * power
        power = power * inv2
    return acc - sign_n * total


def _polygamma64(xp, n, x):
    # reflection, differentiated n times: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)), for x < 0
    negative = x < 0
    right = _polygamma_nonnegative(xp, n, xp.where(negative, 1.0 - x, x))
    if xp is np and not negative.any():
        return right
    cot = 1.0 / xp.tan(math.pi * _sinpi_cotpi_arg(xp, x))
    p = xp.zeros_like(x)
    for c in _cot_derivative_poly(n)[::-1]:
        p = p * cot + c
    reflected = (-1.0 if n % 2 else 1.0) * right - math.pi ** (n + 1) * p
    return xp.where(negative, reflected, right)


def digamma(x: TensorLike) -> Tensor:
    """psi(x) = d lgamma(x) / dx elementwise, as ``scipy.special.digamma`` / ``torch.digamma`` (-inf at 0).

    Gradient: polygamma(1, x). Accuracy: see :mod:`gpugrad.ops.elementwise.special_functions`.

    Example:
        >>> import gpugrad as gg
        >>> round(gg.digamma(gg.tensor(1.0, dtype="float64")).item(), 12)  # minus the Euler-Mascheroni constant
        -0.577215664902
    """
    return _digamma(x)


_digamma = _float64_or_cupyx("Digamma", lambda xp, v: _polygamma64(xp, 0, v), "digamma")
psi = digamma  # scipy.special's other name


@RegisterGradient("Digamma", reads_outputs=False)
def _digamma_grad(op, dy):
    return (dy * polygamma(1, op.inputs[0]),)


def polygamma(n: int, x: TensorLike) -> Tensor:
    """The n-th derivative of digamma, elementwise, as ``torch.polygamma(n, x)`` and ``scipy.special.polygamma``.

    ``n`` is a non-negative Python int (polygamma(0, x) is digamma). Gradient: polygamma(n + 1, x).
    Accuracy: see :mod:`gpugrad.ops.elementwise.special_functions`.

    Example:
        >>> import gpugrad as gg, math
        >>> abs(gg.polygamma(1, gg.tensor(1.0, dtype="float64")).item() - math.pi ** 2 / 6) < 1e-14
        True
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"op 'Polygamma' takes a non-negative int order n, not {n!r}")
    n = int(n)
    if n == 0:
        return digamma(x)
    x, a = real_operand(x, "Polygamma")
    return emit("Polygamma", _polygamma_array(x._device.xp, a, n), x._device, (x,), {"n": n})


def _polygamma_array(xp, a, n):
    return _in_float64(lambda xp_, v: _polygamma64(xp_, n, v), xp, a)


replay.elementwise("Polygamma", _polygamma_array, attrs=("n",))


@RegisterGradient("Polygamma", reads_outputs=False)
def _polygamma_grad(op, dy):
    return (dy * polygamma(op.attrs["n"] + 1, op.inputs[0]),)


# ---------------------------------------------------------------- erfc, erfinv


def erfc(x: TensorLike) -> Tensor:
    """1 - erf(x) elementwise, without the cancellation for large x, as ``scipy.special.erfc`` / ``torch.erfc``.

    Gradient: -2/sqrt(pi) exp(-x^2).

    Example:
        >>> import gpugrad as gg
        >>> f"{gg.erfc(gg.tensor(10.0, dtype='float64')).item():.6e}"
        '2.088488e-45'
    """
    return _erfc(x)


_erfc = _float64_or_cupyx("Erfc", lambda xp, v: erfc_numpy(v), "erfc")


@RegisterGradient("Erfc", reads_outputs=False)
def _erfc_grad(op, dy):
    return (dy * (exp(-square(op.inputs[0])) * -_TWO_OVER_SQRT_PI),)


_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257)


def _horner(coefficients, t):
    r = np.full_like(t, coefficients[-1])
    for c in coefficients[-2::-1]:
        r = r * t + c
    return r


def _erfinv64(xp, y):
    a = np.abs(y)
    w = -np.log((1.0 - a) * (1.0 + a))
    x = np.where(w < 5.0, _horner(_GILES_CENTRAL, w - 2.5), _horner(_GILES_TAIL, np.sqrt(w) - 3.0)) * a
    tail = a >= 0.5
    log_one_minus_a = np.log(1.0 - a)  # 1 - a is exact on [1/2, 1] (Sterbenz)
    for _ in range(4):
        # Newton on erf(x) - a in the middle, on log erfc(x) - log(1 - a) in the tail (nearly linear in x^2 there)
        slope = _TWO_OVER_SQRT_PI * np.exp(-x * x)
        c = erfc_numpy(x)
        step = np.where(tail, (np.log(c) - log_one_minus_a) * c / -slope, (erf_numpy(x) - a) / slope)
        x = x - step
    x = np.where(a == 1.0, np.inf, x)
    x = np.where(a > 1.0, np.nan, x)  # and NaN stays NaN
    return np.copysign(x, y)


def erfinv(y: TensorLike) -> Tensor:
    """The inverse of erf on [-1, 1] elementwise, as ``scipy.special.erfinv`` / ``torch.erfinv``
    (+-inf at +-1, NaN outside).

    Gradient: sqrt(pi)/2 exp(erfinv(y)^2). Accuracy: see :mod:`gpugrad.ops.elementwise.special_functions`.

    Example:
        >>> import gpugrad as gg
        >>> round(gg.erfinv(gg.erf(gg.tensor(0.7, dtype="float64"))).item(), 14)
        0.7
    """
    return _erfinv(y)


_erfinv = _float64_or_cupyx("Erfinv", _erfinv64, "erfinv")


@RegisterGradient("Erfinv")
def _erfinv_grad(op, dy):
    # d erfinv(y)/dy = sqrt(pi)/2 exp(erfinv(y)^2); the output is recomputed as a function of y, so that
    # the second order sees it depend on y
    return (dy * (exp(square(erfinv(op.inputs[0]))) * _SQRT_PI_OVER_2),)


# ---------------------------------------------------------------- xlogy, xlog1py


def _xlog_pair(x, y, op_type, log_name):
    x, y = binary(x, y, op_type, np.multiply)
    xp = x._device.xp
    xd, yd = x._data, y._data
    if not _dt.floating(xd.dtype):
        xd = xd.astype(float_dtype_of(yd) if _dt.floating(yd.dtype) else np.float32)
    try:
        out = _xlog_array(xp, xd, yd, log_name)
    except (ValueError, TypeError) as e:
        raise binary_error(op_type, e, x, y) from None
    return emit(op_type, out, x._device, (x, y))


def _xlog_array(xp, xd, yd, log_name):
    with np.errstate(divide="ignore", invalid="ignore"):
        product = xp.multiply(xd, getattr(xp, log_name)(yd))
    return xp.where(xd == 0, xp.zeros((), dtype=product.dtype), product)


replay.elementwise("Xlogy", lambda xp, x, y: _xlog_array(xp, x, y, "log"))
replay.elementwise("Xlog1py", lambda xp, x, y: _xlog_array(xp, x, y, "log1p"))


def xlogy(x: TensorLike, y: TensorLike) -> Tensor:
    """x * log(y) elementwise, 0 where x == 0 (y = 0 included; NaN where y is NaN), as
    ``scipy.special.xlogy`` and ``torch.xlogy``.

    Gradients (PyTorch's): log(y) for x (0 where x == 0 and y <= 0), x / y for y.

    Example:
        >>> import gpugrad as gg
        >>> gg.xlogy(gg.tensor([0.0, 2.0]), gg.tensor([0.0, 1.0])).numpy().tolist()
        [0.0, 0.0]
    """
    return _xlog_pair(x, y, "Xlogy", "log")


@RegisterGradient("Xlogy", reads_outputs=False)
def _xlogy_grad(op, dy):
    return _xlog_grad(op, dy, log, 0.0)


def _xlog_grad(op, dy, log_fn, pole):
    # PyTorch's: log_fn(y) for x, 0 where x == 0 and y <= pole (where log_fn(y) is -inf or NaN and the
    # function is 0); x / (y - pole) for y
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    gx = gy = None
    if need_x:
        xp = x._device.xp
        flat = xp.logical_and(x._data == 0, y._data <= pole)
        safe = where(flat, pole + 1.0, y)  # no log of the pole, where a second order would meet 0 * inf
        gx = where(flat, 0.0, dy * log_fn(safe))
    if need_y:
        gy = dy * x / (y if pole == 0.0 else y + 1.0)
    return gx, gy


def xlog1py(x: TensorLike, y: TensorLike) -> Tensor:
    """x * log1p(y) elementwise, 0 where x == 0, as ``scipy.special.xlog1py`` and ``torch.special.xlog1py``.

    Gradients (PyTorch's): log1p(y) for x (0 where x == 0 and y <= -1), x / (1 + y) for y.

    Example:
        >>> import gpugrad as gg
        >>> gg.xlog1py(gg.tensor([0.0, 2.0]), gg.tensor([-1.0, 0.0])).numpy().tolist()
        [0.0, 0.0]
    """
    return _xlog_pair(x, y, "Xlog1py", "log1p")


@RegisterGradient("Xlog1py", reads_outputs=False)
def _xlog1py_grad(op, dy):
    return _xlog_grad(op, dy, log1p, -1.0)


# ---------------------------------------------------------------- i0e, i1e (Cephes)

_I0_A = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
         1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
         -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
         9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
         -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
         1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
         -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
         1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
         -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
         1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0_B = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
         3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
         1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
         -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
         7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
         -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
         3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
         2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
         8.04490411014108831608E-1)
_I1_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
         -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
         3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
         -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
         9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
         -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
         4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
         -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
         2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
         -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
         -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
         -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
         4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
         -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
         3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
         -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
         -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
         7.78576235018280120474E-1)


def _chbevl(xp, t, coefficients):
    """Cephes' chbevl: sum of Chebyshev series ``coefficients`` (highest first, half the last) at t."""
    b0 = xp.full_like(t, coefficients[0])
    b1 = xp.zeros_like(t)
    b2 = b1
    for c in coefficients[1:]:
        b2 = b1
        b1 = b0
        b0 = t * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _i0e64(xp, x):
    a = xp.abs(x)
    near = a <= 8.0
    safe = xp.where(near, 8.0, a)  # 32 / safe stays finite where the near branch is taken
    return xp.where(near, _chbevl(xp, a * 0.5 - 2.0, _I0_A),
                    _chbevl(xp, 32.0 / safe - 2.0, _I0_B) / xp.sqrt(safe))


def _i1e64(xp, x):
    a = xp.abs(x)
    near = a <= 8.0
    safe = xp.where(near, 8.0, a)
    magnitude = xp.where(near, _chbevl(xp, a * 0.5 - 2.0, _I1_A) * a,
                         _chbevl(xp, 32.0 / safe - 2.0, _I1_B) / xp.sqrt(safe))
    return xp.where(x < 0, -magnitude, magnitude)


def i0e(x: TensorLike) -> Tensor:
    """``exp(-|x|) I0(x)``, the exponentially scaled modified Bessel function of order 0, elementwise, as
    ``scipy.special.i0e`` and ``torch.special.i0e``.

    Gradient (PyTorch's): i1e(x) - sign(x) i0e(x).

    Example:
        >>> import gpugrad as gg, numpy as np
        >>> bool(abs(gg.i0e(gg.tensor(2.0, dtype="float64")).item() - np.exp(-2.0) * np.i0(2.0)) < 1e-15)
        True
    """
    return _i0e(x)


_i0e = _unary_op("I0e", lambda xp, a: _in_float64(_i0e64, xp, a))


@RegisterGradient("I0e", reads_outputs=False)
def _i0e_grad(op, dy):
    x = op.inputs[0]
    return (dy * (i1e(x) - sign(x) * i0e(x)),)


def i1e(x: TensorLike) -> Tensor:
    """``exp(-|x|) I1(x)``, the exponentially scaled modified Bessel function of order 1, elementwise, as
    ``scipy.special.i1e`` and ``torch.special.i1e``.

    Gradient (PyTorch's): i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at x = 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.i1e(gg.tensor([0.0])).numpy().tolist()
        [0.0]
    """
    return _i1e(x)


_i1e = _unary_op("I1e", lambda xp, a: _in_float64(_i1e64, xp, a))


@RegisterGradient("I1e", reads_outputs=False)
def _i1e_grad(op, dy):
    x = op.inputs[0]
    at_zero = x._data == 0
    safe = where(at_zero, 1.0, x)  # 1/x is not formed at 0, where the limit 1/2 is taken
    slope = i0e(x) - i1e(x) * (sign(x) + reciprocal(safe))
    return (dy * where(at_zero, 0.5, slope),)


TENSOR_METHODS: dict = {"lgamma": lgamma, "digamma": digamma, "erfinv": erfinv}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "lgamma", "gammaln", "digamma", "psi", "polygamma", "erfc", "erfinv", "xlogy", "xlog1py", "i0e", "i1e"
    ]
