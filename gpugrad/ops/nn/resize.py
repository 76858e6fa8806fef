"""Resizing along the trailing axes of (N, C, L) or (N, C, H, W) tensors: interpolate, adaptive average pooling.

Each is linear in ``x`` and separable by axis, so each is a constant matrix
per axis: (out, in) rows of interpolation weights or window averages, applied
by ``matmul`` (``M_h @ x @ M_w.T``), or, for nearest neighbours, a gather of
source rows (``take``). Their gradients are those ops' own (a product by the
transposed matrix; a scatter-add), to every order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...errors import DTypeError, ShapeError
from ...tensor import Tensor
from ... import _dtypes as _dt
from ..base import public_ops, unary
from ..array.indexing import take
from ..matrix.linalg import matmul

if TYPE_CHECKING:
    from ..._typing import TensorLike


def _apply(x, matrices):
    """``x`` with each trailing spatial axis multiplied by its (out, in) matrix (None: left as it is)."""
    spatial = len(matrices)  # at most 2: the trailing axes
    for k, m in enumerate(matrices):
        if m is None:
            continue
        axis = x.ndim - spatial + k
        m = Tensor(m, x.dtype, x._device)
        # the last axis: x @ M.T; the one before: M @ x (a 2-D matrix broadcasts over N and C)
        x = matmul(x, m, transpose_b=True) if axis == x.ndim - 1 else matmul(m, x)
    return x


def _spatial(op_type, x, output_size):
    """The spatial sizes of (N, C, L) or (N, C, H, W) ``x`` and the requested ones (int, pair, None keeps)."""
    if x.ndim not in (3, 4):
        raise ShapeError(f"op {op_type!r} takes x of shape (N, C, L) or (N, C, H, W), got shape {x.shape}")
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op {op_type!r} takes a float tensor, got dtype {x.dtype}")
    sizes = x.shape[2:]
    wanted = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * len(sizes)
    if len(wanted) != len(sizes) or any(
            w is not None and (isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1) for w in wanted):
        raise ValueError(f"op {op_type!r}: the output size is an int >= 1 or {len(sizes)} of them (None keeps "
                         f"an axis), not {output_size!r}")
    return sizes, tuple(s if w is None else int(w) for s, w in zip(sizes, wanted))


# ---------------------------------------------------------------- adaptive average pooling


def _adaptive_matrix(n_in, n_out):
    """(out, in) window means of PyTorch's adaptive pooling: window i spans [floor(i*in/out), ceil((i+1)*in/out))."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        start, end = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, start:end] = 1.0 / (end - start)
    return m


def adaptive_avg_pool2d(x: TensorLike, output_size: int | None | Sequence[int | None]) -> Tensor:
    """Average pooling of (N, C, H, W) ``x`` to ``output_size`` (an int, or (OH, OW) where None keeps that
    axis), as PyTorch's F.adaptive_avg_pool2d: output row i averages input rows
    ``floor(i*H/OH)`` to ``ceil((i+1)*H/OH) - 1``, and likewise for columns.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.arange(12.0), (1, 1, 3, 4))
        >>> gg.adaptive_avg_pool2d(x, (1, 2)).numpy().tolist()
        [[[[4.5, 6.5]]]]
        >>> gg.adaptive_avg_pool2d(x, 1).shape
        (1, 1, 1, 1)
    """
    x = unary(x)
    if x.ndim != 4:
        raise ShapeError(f"op 'AdaptiveAvgPool2D' takes x of shape (N, C, H, W), got shape {x.shape}")
    sizes, out = _spatial("AdaptiveAvgPool2D", x, output_size)
    return _apply(x, [None if o == s else _adaptive_matrix(s, o) for s, o in zip(sizes, out)])


def adaptive_avg_pool1d(x: TensorLike, output_size: int) -> Tensor:
    """Average pooling of (N, C, L) ``x`` to length ``output_size``, as PyTorch's F.adaptive_avg_pool1d.

    Example:
        >>> import gpugrad as gg
        >>> gg.adaptive_avg_pool1d(gg.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2).numpy().tolist()
        [[[2.0, 4.0]]]
    """
    x = unary(x)
    if x.ndim != 3:
        raise ShapeError(f"op 'AdaptiveAvgPool1D' takes x of shape (N, C, L), got shape {x.shape}")
    sizes, out = _spatial("AdaptiveAvgPool1D", x, output_size)
    return _apply(x, [None if out[0] == sizes[0] else _adaptive_matrix(sizes[0], out[0])])


# ---------------------------------------------------------------- interpolate

INTERPOLATE_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic")
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient; Keys' is -0.5


def _linear_matrix(n_in, n_out, scale, align_corners):
    """(out, in) weights of linear interpolation, as PyTorch computes source coordinates."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((dst + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    m = np.zeros((n_out, n_in))
    np.add.at(m, (np.arange(n_out), i0), 1.0 - frac)
    np.add.at(m, (np.arange(n_out), i1), frac)
    return m


def _cubic_weights(t):
    """The four weights of the samples at offsets -1, 0, 1, 2 from a source coordinate ``t`` past its floor
    (Keys' cubic convolution with A = -0.75, PyTorch's ``get_cubic_upsample_coefficients``)."""
    a = _CUBIC_A

    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _cubic_matrix(n_in, n_out, scale, align_corners):
    """(out, in) weights of cubic interpolation, as PyTorch's upsample_bicubic2d: the source coordinate not
    clamped at 0, the four samples' positions clamped to the input (border replication)."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = (dst + 0.5) * scale - 0.5
    base = np.floor(src)
    m = np.zeros((n_out, n_in))
    for offset, w in zip((-1, 0, 1, 2), _cubic_weights(src - base)):
        np.add.at(m, (np.arange(n_out), np.clip(base.astype(np.int64) + offset, 0, n_in - 1)), w)
    return m


def _nearest_source(n_in, n_out, scale, exact):
    dst = np.arange(n_out, dtype=np.float64)
    return np.minimum(np.floor((dst + 0.5) * scale if exact else dst * scale).astype(np.int64), n_in - 1)


def interpolate(x: TensorLike, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> Tensor:
    """Resize the trailing axes of (N, C, L) or (N, C, H, W) ``x``, as PyTorch's F.interpolate.

    Give ``size`` (an int or one per axis) or ``scale_factor`` (a number or
    one per axis; the size is ``floor(in * scale_factor)``). ``mode``:
    ``"nearest"`` (PyTorch's: source ``floor(dst * in/out)``),
    ``"nearest-exact"`` (``floor((dst + 0.5) * in/out)``), ``"linear"`` (3-D
    ``x``), ``"bilinear"`` or ``"bicubic"`` (4-D ``x``). Bicubic is PyTorch's:
    Keys' cubic convolution with A = -0.75 over four samples per axis, the
    samples past the border read at the border (the result may overshoot the
    input's range, as PyTorch's is not clamped). For the linear and cubic modes
    ``align_corners=True`` maps the corner pixels' centres onto each other;
    False (the default) maps the pixels' edges (the linear modes' source
    clamped at 0, as PyTorch's). With a
    ``scale_factor`` and no ``recompute_scale_factor``, the source coordinates
    use ``1 / scale_factor``, as PyTorch.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[[1.0, 2.0, 4.0]]])
        >>> gg.interpolate(x, scale_factor=2).numpy().tolist()
        [[[1.0, 1.0, 2.0, 2.0, 4.0, 4.0]]]
        >>> gg.interpolate(x, size=5, mode="linear", align_corners=True).numpy().tolist()
        [[[1.0, 1.5, 2.0, 3.0, 4.0]]]
        >>> gg.interpolate(gg.ones((1, 3, 4, 4)), scale_factor=(2, 0.5), mode="bilinear").shape
        (1, 3, 8, 2)
        >>> y = gg.interpolate(gg.tensor([[[[0.0, 1.0], [1.0, 0.0]]]]), size=(3, 3), mode="bicubic", align_corners=True)
        >>> y.numpy().round(4).tolist()
        [[[[0.0, 0.5, 1.0], [0.5, 0.5, 0.5], [1.0, 0.5, 0.0]]]]
    """
    op_type = "Interpolate"
    x = unary(x)
    if mode not in INTERPOLATE_MODES:
        raise ValueError(f"op {op_type!r}: mode is one of {INTERPOLATE_MODES}, not {mode!r}")
    weighted = mode in ("linear", "bilinear", "bicubic")  # a matrix of weights per axis
    if weighted and x.ndim != (3 if mode == "linear" else 4):
        raise ShapeError(f"op {op_type!r}: mode={mode!r} takes x of shape "
                         f"{'(N, C, L)' if mode == 'linear' else '(N, C, H, W)'}, got shape {x.shape}")
    if not weighted and align_corners is not None:
        raise ValueError(f"op {op_type!r}: align_corners applies to the linear and cubic modes only, not "
                         f"mode={mode!r}")
    if (size is None) == (scale_factor is None):
        raise ValueError(f"op {op_type!r}: give exactly one of size and scale_factor")
    n = x.ndim - 2
    if size is not None:
        sizes, out = _spatial(op_type, x, size)
        if None in (size if isinstance(size, (tuple, list)) else (size,)):
            raise ValueError(f"op {op_type!r}: size is an int >= 1 or {n} of them, not {size!r}")
        scales = [i / o for i, o in zip(sizes, out)]
    else:
        sizes = _spatial(op_type, x, None)[0]
        factors = scale_factor if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * n
        if len(factors) != n or any(isinstance(f, bool) or not isinstance(f, (int, float, np.number)) or not f > 0
                                    for f in factors):
            raise ValueError(f"op {op_type!r}: scale_factor is a number > 0 or {n} of them, not {scale_factor!r}")
        out = tuple(int(math.floor(s * float(f))) for s, f in zip(sizes, factors))
        if min(out) < 1:
            raise ShapeError(f"op {op_type!r}: scale_factor {scale_factor!r} leaves x of shape {x.shape} empty")
        scales = [i / o if recompute_scale_factor else 1.0 / float(f) for i, o, f in zip(sizes, out, factors)]
    if weighted:
        matrix = _cubic_matrix if mode == "bicubic" else _linear_matrix
        return _apply(x, [matrix(i, o, s, bool(align_corners)) for i, o, s in zip(sizes, out, scales)])
    for k, (i, o, s) in enumerate(zip(sizes, out, scales)):
        if i != o or s != 1.0:
            x = take(x, _nearest_source(i, o, s, mode == "nearest-exact"), axis=2 + k)
    return x


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "adaptive_avg_pool2d", "adaptive_avg_pool1d", "interpolate"
    ]
