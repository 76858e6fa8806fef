"""Log-densities users keep writing by hand: the normal, Student's t, and the multivariate normal from a
Cholesky factor, differentiable in every argument (``gg.distributions``).

Each is a composite of recorded ops (their gradients are those ops' rules, of every order), written in the
form ``torch.distributions`` uses (``Normal``, ``StudentT``, ``MultivariateNormal(scale_tril=...)``
``.log_prob``), which the tests compare with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import math
from numbers import Real

import numpy as np

from ...errors import ShapeError
from ...tensor import Tensor
from ..base import public_ops, unary
from ..matrix.decompositions import solve
from ..elementwise.math import log, log1p, square
from ..reduction.reductions import sum  # noqa: A004 - NumPy's name
from ..array.shape import broadcast_to, expand_dims, squeeze
from ..elementwise.special_functions import lgamma
from ..matrix.structure import diagonal, tril

if TYPE_CHECKING:
    from ..._typing import TensorLike

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_HALF_LOG_PI = 0.5 * math.log(math.pi)


def normal_log_prob(x: TensorLike, loc: TensorLike = 0.0, scale: TensorLike = 1.0) -> Tensor:
    """log N(x; loc, scale^2) = -(x - loc)^2 / (2 scale^2) - log(scale) - log(2 pi) / 2, broadcast,
    as ``torch.distributions.Normal(loc, scale).log_prob(x)`` and ``scipy.stats.norm.logpdf(x, loc, scale)``.

    Example:
        >>> import gpugrad as gg
        >>> round(gg.distributions.normal_log_prob(gg.tensor(0.0, dtype="float64")).item(), 6)
        -0.918939
    """
    x = unary(x, loc, scale)
    z = (x - loc) / scale
    return square(z) * -0.5 - _log(scale, x) - _HALF_LOG_2PI


def _log(v, like):
    """log(v): of a Python number in Python (it stays weak, as NumPy 2's scalars), else as an op."""
    return math.log(v) if isinstance(v, Real) and not isinstance(v, np.ndarray) else log(unary(v, like))


def _lgamma(v):
    return math.lgamma(v) if isinstance(v, Real) and not isinstance(v, np.ndarray) else lgamma(v)


def student_t_log_prob(x: TensorLike, df: TensorLike, loc: TensorLike = 0.0, scale: TensorLike = 1.0) -> Tensor:
    """The log-density of Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``,
    broadcast, as ``torch.distributions.StudentT(df, loc, scale).log_prob(x)`` and ``scipy.stats.t.logpdf``:

    -(df + 1)/2 log1p(y^2 / df) - log(scale) - log(df pi)/2 - lgamma(df / 2) + lgamma((df + 1) / 2),
    with y = (x - loc) / scale.

    Example:
        >>> import gpugrad as gg, math
        >>> lp = gg.distributions.student_t_log_prob(gg.tensor(0.0, dtype="float64"), 1.0)  # Cauchy: 1 / pi
        >>> abs(lp.item() - math.log(1 / math.pi)) < 1e-14
        True
    """
    x = unary(x, df, loc, scale)
    if not isinstance(df, Real) or isinstance(df, np.ndarray):
        df = unary(df, x)
    y = (x - loc) / scale
    normalizer = (_log(scale, x) + 0.5 * _log(df, x) + _HALF_LOG_PI + _lgamma(0.5 * df)
                  - _lgamma(0.5 * (df + 1.0)))
    return log1p(square(y) / df) * (-0.5 * (df + 1.0)) - normalizer


def mvn_log_prob(x: TensorLike, loc: TensorLike, scale_tril: TensorLike) -> Tensor:
    """The log-density of the multivariate normal with mean ``loc`` and covariance L L^T, ``L = scale_tril``
    (lower triangular, positive diagonal; its upper triangle is not read), over the last axis of ``x``
    (..., d), batched and broadcast over the leading axes of ``x``, ``loc`` (..., d) and ``scale_tril``
    (..., d, d), as ``torch.distributions.MultivariateNormal(loc, scale_tril=L).log_prob(x)``:

    ``-|L^-1 (x - loc)|^2 / 2 - sum(log diag L) - d log(2 pi) / 2``, with L^-1 by a solve (no inverse formed).

    Example:
        >>> import gpugrad as gg
        >>> L = gg.tensor([[2.0, 0.0], [0.0, 1.0]], dtype="float64")
        >>> a = gg.distributions.mvn_log_prob(gg.tensor([2.0, 1.0], dtype="float64"), gg.tensor([0.0, 0.0]), L)
        >>> b = gg.distributions.normal_log_prob(gg.tensor([2.0, 1.0], dtype="float64"), 0.0, L.diagonal())
        >>> abs(a.item() - gg.sum(b).item()) < 1e-14
        True
    """
    x = unary(x, loc, scale_tril)
    loc, scale_tril = unary(loc, x), unary(scale_tril, x)
    if x.ndim < 1 or loc.ndim < 1 or scale_tril.ndim < 2:
        raise ShapeError(f"op 'mvn_log_prob' takes x (..., d), loc (..., d) and scale_tril (..., d, d), not shapes "
                         f"{x.shape}, {loc.shape}, {scale_tril.shape}")
    d = x.shape[-1]
    if loc.shape[-1] != d or scale_tril.shape[-2:] != (d, d):
        raise ShapeError(f"op 'mvn_log_prob': x {x.shape}, loc {loc.shape} and scale_tril {scale_tril.shape} "
                         f"disagree on the dimension d = {d} (x (..., d), loc (..., d), scale_tril (..., d, d))")
    diff = x - loc
    lower = tril(scale_tril)
    batch = _broadcast_shapes(diff.shape[:-1], lower.shape[:-2])
    lower = broadcast_to(lower, batch + (d, d))
    diff = broadcast_to(diff, batch + (d,))
    z = squeeze(solve(lower, expand_dims(diff, -1)), -1)  # L z = x - loc
    half_log_det = sum(log(diagonal(lower, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * sum(square(z), axis=-1) - half_log_det - d * _HALF_LOG_2PI


def _broadcast_shapes(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeError(f"op 'mvn_log_prob': the batch shapes {a} (of x - loc) and {b} (of scale_tril) do not "
                         "broadcast") from None


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "normal_log_prob", "student_t_log_prob", "mvn_log_prob"
    ]
