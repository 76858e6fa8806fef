"""1-D convolution and the transposed convolutions, built on conv2d's op types.

- ``conv1d`` is ``conv2d`` of a height-1 image (records ``Conv2D``).
- ``conv_transpose2d`` is ``conv2d``'s input gradient (records
  ``Conv2DBackpropInput``): the transposed convolution of ``x`` with ``w`` is
  the gradient that conv2d with filters ``w`` would send back to its input
  from an upstream gradient ``x``. PyTorch's ``output_padding`` becomes extra
  rows at the bottom (right) of that input: bottom padding ``p - op`` where
  ``op <= p``, zero rows appended past it otherwise. Its gradients are conv2d's
  own rules (``Conv2D``, ``Conv2DBackpropFilter``), to every order.
- ``conv_transpose1d`` is ``conv_transpose2d`` of a height-1 image.

Layouts and argument names follow ``torch.nn.functional``: x is (N, C, L) or
(N, C, H, W); ``conv1d``'s ``w`` is (O, C/groups, K); a transposed
convolution's ``w`` is (C, O/groups, K...) (in-channels first, as PyTorch's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ... import mixed_precision as _mp
from ...errors import ShapeError
from ...tensor import Tensor
from .. import _autocast
from ..base import public_ops, unary
from .conv import Geometry, check_dtypes, conv2d, conv2d_backprop_input, pair
from ..array.indexing import pad
from ..array.shape import expand_dims, reshape, squeeze

if TYPE_CHECKING:
    from ..._typing import TensorLike


def _single(value, name, op_type, minimum):
    """An int or a 1-tuple of ints ``>= minimum`` as an int (conv1d's scalar arguments)."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"op {op_type!r}: {name} is an int or a 1-tuple of ints, not {value!r}")
    if value < minimum:
        raise ValueError(f"op {op_type!r}: {name} must be >= {minimum}, got {value}")
    return int(value)


def _check_ndim(op_type, name, t, layout):
    if t.ndim != len(layout.split(",")):
        raise ShapeError(f"op {op_type!r} takes {name} of shape {layout}, got shape {t.shape}")


def _like(t, x):
    return t if t is None or isinstance(t, Tensor) else Tensor(t, x.dtype, x._device)


# ---------------------------------------------------------------- conv1d


def conv1d(x: TensorLike, w: TensorLike, b: TensorLike | None = None, stride: int = 1, padding: Any = 0,
           dilation: int = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C, L) ``x`` with (O, C/groups, K) ``w``, as PyTorch's F.conv1d.

    ``b`` is (O,) or None. ``stride`` and ``dilation`` are ints; ``padding``
    an int (zeros on both ends), ``"valid"`` (0) or ``"same"`` (stride 1 only;
    an odd leftover pads after, as PyTorch). The output is (N, O, OL) with
    ``OL = (L + 2*padding - dilation*(K-1) - 1) // stride + 1``. Recorded as
    ``Conv2D`` of a height-1 image.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[[1.0, 2.0, 3.0, 4.0]]])
        >>> gg.conv1d(x, gg.tensor([[[1.0, -1.0]]])).numpy().tolist()
        [[[-1.0, -1.0, -1.0]]]
        >>> gg.conv1d(x, gg.ones((2, 1, 3)), padding="same").shape
        (1, 2, 4)
    """
    x = unary(x)
    w = _like(w, x)
    _check_ndim("Conv1D", "x", x, "(N, C, L)")
    _check_ndim("Conv1D", "w", w, "(O, C/groups, K)")
    stride = _single(stride, "stride", "Conv1D", 1)
    dilation = _single(dilation, "dilation", "Conv1D", 1)
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"op 'Conv1D': padding is an int, 'same' or 'valid', not {padding!r}")
        if padding == "same" and stride != 1:
            raise ValueError(f"op 'Conv1D': padding='same' needs stride 1, got stride {stride}")
        pads: Any = padding
    else:
        p = _single(padding, "padding", "Conv1D", 0)
        pads = ((0, 0), (p, p))
    y = conv2d(expand_dims(x, 2), expand_dims(w, 2), b, stride=(1, stride), padding=pads,
               dilation=(1, dilation), groups=groups)
    return squeeze(y, 2)


# ---------------------------------------------------------------- transposed convolutions


def conv_transpose2d(x: TensorLike, w: TensorLike, b: TensorLike | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 2-D convolution of (N, C, H, W) ``x`` with (C, O/groups, KH, KW) ``w``, as PyTorch's
    F.conv_transpose2d (argument order included: ``groups`` before ``dilation``).

    It is the gradient of :func:`~gpugrad.conv2d` (stride, padding, dilation, groups)
    with respect to its input, so it maps conv2d's output shape back to its
    input's: ``OH = (H-1)*stride - 2*padding + dilation*(KH-1) + output_padding + 1``.
    ``stride``, ``padding``, ``output_padding`` and ``dilation`` are ints or
    (height, width) pairs; ``output_padding`` (extra rows and columns at the
    bottom and right) must be smaller than the stride or the dilation.
    Recorded as ``Conv2DBackpropInput``.

    Example:
        >>> import gpugrad as gg
        >>> gg.conv_transpose2d(gg.ones((1, 1, 2, 2)), gg.ones((1, 1, 2, 2))).numpy()[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
        >>> gg.conv_transpose2d(gg.ones((2, 4, 5, 5)), gg.ones((4, 3, 3, 3)), stride=2, padding=1,
        ...                     output_padding=1, groups=2).shape
        (2, 6, 10, 10)
    """
    if _mp.active and (out := _autocast.autocast_op(
            conv_transpose2d, (x, w, b), stride=stride, padding=padding, output_padding=output_padding,
            groups=groups, dilation=dilation)) is not None:
        return out
    op_type = "ConvTranspose2D"
    x = unary(x)
    w, b = _like(w, x), _like(b, x)
    _check_ndim(op_type, "x", x, "(N, C, H, W)")
    _check_ndim(op_type, "w", w, "(C, O/groups, KH, KW)")
    check_dtypes(op_type, *(t for t in (x, w, b) if t is not None))
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"op {op_type!r}: groups is an int >= 1, not {groups!r}")
    groups = int(groups)
    n, c, h, wd = x.shape
    if w.shape[0] != c or c % groups:
        raise ShapeError(f"op {op_type!r}: w of shape {w.shape} must have x's {c} channels first (x of shape "
                         f"{x.shape}), and groups={groups} must divide them")
    if 0 in w.shape[2:]:
        raise ShapeError(f"op {op_type!r}: w of shape {w.shape} has an empty kernel")
    stride = pair(stride, "stride", op_type, 1)
    dilation = pair(dilation, "dilation", op_type, 1)
    pads = pair(padding, "padding", op_type, 0)
    extras = pair(output_padding, "output_padding", op_type, 0)
    geom_pads, crops, out_hw = [], [], []
    for size, k, s, d, p, e in zip((h, wd), w.shape[2:], stride, dilation, pads, extras):
        if e >= max(s, d):  # as PyTorch
            raise ValueError(f"op {op_type!r}: output_padding {extras} must be smaller than the stride {stride} "
                             f"or the dilation {dilation}")
        out = (size - 1) * s - 2 * p + d * (k - 1) + e + 1
        if out < 1:
            raise ShapeError(f"op {op_type!r}: x of shape {x.shape} with w of shape {w.shape}, stride {stride}, "
                             f"padding {pads} gives an empty output ({out} along an axis)")
        geom_pads.append((p, max(p - e, 0)))  # the conv2d whose input gradient this is: p - e rows below
        crops.append(max(e - p, 0))  # past the bottom padding: rows no window reaches, zeros
        out_hw.append(out)
    o = w.shape[1] * groups
    geom = Geometry(stride, tuple(geom_pads), dilation, groups)
    y = conv2d_backprop_input(x, w, (n, o, out_hw[0] - crops[0], out_hw[1] - crops[1]), geom)
    if crops[0] or crops[1]:
        y = pad(y, ((0, 0), (0, 0), (0, crops[0]), (0, crops[1])))
    if b is not None:
        if b.shape != (o,):
            raise ShapeError(f"op {op_type!r} takes a bias of shape ({o},) for w of shape {w.shape} and "
                             f"groups={groups}, got {b.shape}")
        y = y + reshape(b, (o, 1, 1))
    return y


def conv_transpose1d(x: TensorLike, w: TensorLike, b: TensorLike | None = None, stride: int = 1,
                     padding: int = 0, output_padding: int = 0, groups: int = 1, dilation: int = 1) -> Tensor:
    """Transposed 1-D convolution of (N, C, L) ``x`` with (C, O/groups, K) ``w``, as PyTorch's
    F.conv_transpose1d: :func:`conv_transpose2d` of a height-1 image.

    ``OL = (L-1)*stride - 2*padding + dilation*(K-1) + output_padding + 1``.

    Example:
        >>> import gpugrad as gg
        >>> gg.conv_transpose1d(gg.tensor([[[1.0, 2.0]]]), gg.tensor([[[1.0, 1.0, 1.0]]]), stride=2).numpy().tolist()
        [[[1.0, 1.0, 3.0, 2.0, 2.0]]]
    """
    x = unary(x)
    w = _like(w, x)
    _check_ndim("ConvTranspose1D", "x", x, "(N, C, L)")
    _check_ndim("ConvTranspose1D", "w", w, "(C, O/groups, K)")
    args = [_single(v, name, "ConvTranspose1D", low) for v, name, low in (
        (stride, "stride", 1), (padding, "padding", 0), (output_padding, "output_padding", 0),
        (dilation, "dilation", 1))]
    s, p, e, d = args
    y = conv_transpose2d(expand_dims(x, 2), expand_dims(w, 2), b, stride=(1, s), padding=(0, p),
                         output_padding=(0, e), groups=groups, dilation=(1, d))
    return squeeze(y, 2)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "conv1d", "conv_transpose2d", "conv_transpose1d"
    ]
