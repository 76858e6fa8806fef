"""2-D convolution: conv2d (NCHW input, OIHW filters) and its two gradient ops.

conv2d is one matrix product per group (im2col): the padded input is viewed
as its sliding windows with ``as_strided`` (no copy), the windows are laid out
as rows (one copy), and the rows are multiplied by the filters as a matrix.

Its gradients are op types of their own, each bilinear in its two inputs:

- ``Conv2DBackpropInput(dy, w)``: ``dy`` times the filters gives one column of
  input gradients per window; the columns are added back into place (col2im).
- ``Conv2DBackpropFilter(x, dy)``: the windows of ``x`` times ``dy``.

Writing C(x, w) for conv2d, Bi(dy, w) for the first and Bf(x, dy) for the
second, ``<g, Bi(dy, w)> = <C(g, w), dy> = <g, ...>`` and ``<g, Bf(x, dy)> =
<C(x, g), dy>``, so the gradient of each of the three is made of the other
two, and derivatives of any order stay within them.

The window helpers here (:func:`windows`, :func:`col2im`) also serve pooling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import collections

import numpy as np

from ...errors import DTypeError, ShapeError
from ... import mixed_precision as _mp
from ...registry import RegisterGradient
from ...tensor import Tensor
from .. import _autocast, replay
from ..base import emit, public_ops, same_device, unary
from ..reduction.reductions import sum as reduce_sum
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import Shape, TensorLike


# stride (sh, sw), padding ((top, bottom), (left, right)), dilation (dh, dw), groups
Geometry = collections.namedtuple("Geometry", "stride padding dilation groups")


# ---------------------------------------------------------------- arguments


def pair(value, name, op_type, minimum):
    """``value`` (an int or a pair of ints) as a pair of ints ``>= minimum``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, (tuple, list)) or len(value) != 2 or any(
            isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value):
        raise TypeError(f"op {op_type!r}: {name} is an int or a pair of ints, not {value!r}")
    if value[0] < minimum or value[1] < minimum:
        raise ValueError(f"op {op_type!r}: {name} must be >= {minimum}, got {tuple(value)}")
    return int(value[0]), int(value[1])


def _padding(padding, kernel, stride, dilation, op_type):
    """((top, bottom), (left, right)) from an int, a pair, two pairs, or "same" / "valid"."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise ValueError(f"op {op_type!r}: padding is an int, a pair, 'same' or 'valid', not {padding!r}")
        if stride != (1, 1):
            raise ValueError(f"op {op_type!r}: padding='same' needs stride 1, got stride {stride}")
        pads = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)  # as PyTorch: the odd pixel goes after
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if isinstance(padding, (tuple, list)) and len(padding) == 2 and all(
            isinstance(p, (tuple, list)) for p in padding):
        return pair(padding[0], "padding", op_type, 0), pair(padding[1], "padding", op_type, 0)
    ph, pw = pair(padding, "padding", op_type, 0)
    return (ph, ph), (pw, pw)


def output_size(size, pads, kernel, stride, dilation):
    """How many windows fit along one axis: ``(size + pads - span) // stride + 1``."""
    return (size + pads[0] + pads[1] - dilation * (kernel - 1) - 1) // stride + 1


def check_fits(op_type, x_shape, kernel, geom, what):
    """ShapeError unless the (dilated) kernel fits in the padded input."""
    for axis, (size, k, pads, d) in enumerate(zip(x_shape[2:], kernel, geom.padding, geom.dilation)):
        span = d * (k - 1) + 1
        if size + pads[0] + pads[1] < span:
            raise ShapeError(
                f"op {op_type!r}: the {what} of size {tuple(kernel)} (spanning {span} with dilation {d}) "
                f"is larger than the padded input ({size} + {pads[0]} + {pads[1]} along "
                f"{'height' if axis == 0 else 'width'}) for x of shape {x_shape}")


# ---------------------------------------------------------------- windows


def padded(xp, x, padding, value=0):
    """``x`` (N, C, H, W) with ``padding`` ((top, bottom), (left, right)) of ``value`` around it."""
    (pt, pb), (pl, pr) = padding
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + pt + pb, w + pl + pr), value, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def windows(xp, xpad, kernel, stride, dilation, out_hw):
    """The (N, C, OH, OW, KH, KW) sliding windows of ``xpad`` as a strided view (no copy)."""
    n, c = xpad.shape[:2]
    sn, sc, sh, sw = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, (n, c) + tuple(out_hw) + tuple(kernel),
        (sn, sc, sh * stride[0], sw * stride[1], sh * dilation[0], sw * dilation[1]))


def col2im(xp, piece, shape, dtype, kernel, stride, dilation, out_hw, padding, axis=2):
    """Add window contributions back into an input of ``shape``; the adjoint of the windows view.

    ``shape`` has its height and width at ``axis`` and ``axis + 1`` (2 for
    NCHW). ``piece(i, j)`` is the contribution of kernel offset (i, j), shaped
    like the input with (OH, OW) in place of (H, W); each lands on a strided
    slice of the padded input, which is cropped at the end.
    """
    (pt, pb), (pl, pr) = padding
    h, w = shape[axis:axis + 2]
    oh, ow = out_hw
    lead = (slice(None),) * axis
    out = xp.zeros(shape[:axis] + (h + pt + pb, w + pl + pr) + shape[axis + 2:], dtype=dtype)
    for i in range(kernel[0]):
        r = i * dilation[0]
        rows = slice(r, r + stride[0] * (oh - 1) + 1, stride[0])
        for j in range(kernel[1]):
            q = j * dilation[1]
            out[lead + (rows, slice(q, q + stride[1] * (ow - 1) + 1, stride[1]))] += piece(i, j)
    if pt or pb or pl or pr:
        out = out[lead + (slice(pt, pt + h), slice(pl, pl + w))]
    return out


# ---------------------------------------------------------------- array kernels
# The windows are channel-last rows, (N*OH*OW, KH*KW*C/G) per group; filters
# and dy are (O/G, ...) matrices, and BLAS reads the transposes it needs in
# place. In an NHWC copy of the padded input each window row is KH runs of
# KW*C contiguous values, which NumPy copies several times faster than the
# short rows of an NCHW window.


def _nhwc_padded(xp, x, padding):
    """``x`` (N, C, H, W) as a zero-padded (N, Hp, Wp, C) copy."""
    n, c, h, w = x.shape
    (pt, pb), (pl, pr) = padding
    out = xp.zeros((n, h + pt + pb, w + pl + pr, c), dtype=x.dtype)
    out[:, pt:pt + h, pl:pl + w, :] = x.transpose(0, 2, 3, 1)
    return out


def _im2col(xp, x, kernel, geom, out_hw):
    """The windows of ``x`` as rows: (G, N*OH*OW, KH*KW*C/G), one copy after the padding."""
    n, c = x.shape[:2]
    g = geom.groups
    xh = _nhwc_padded(xp, x, geom.padding)
    sn, sh, sw, sc = xh.strides
    (st_h, st_w), (d_h, d_w) = geom.stride, geom.dilation
    win = xp.lib.stride_tricks.as_strided(  # (N, OH, OW, KH, KW, C)
        xh, (n,) + tuple(out_hw) + tuple(kernel) + (c,), (sn, sh * st_h, sw * st_w, sh * d_h, sw * d_w, sc))
    rows, cols = n * out_hw[0] * out_hw[1], kernel[0] * kernel[1] * (c // g)  # explicit: any may be 0
    if g == 1:
        return xp.ascontiguousarray(win).reshape(1, rows, cols)
    win = win.reshape(win.shape[:5] + (g, c // g)).transpose(5, 0, 1, 2, 3, 4, 6)
    return xp.ascontiguousarray(win).reshape(g, rows, cols)


def _w_matrix(xp, w, groups):
    """Filters (O, C/G, KH, KW) as (G, O/G, KH*KW*C/G), columns in the order of :func:`_im2col`'s."""
    o, cg, kh, kw = w.shape
    w = w.reshape(groups, o // groups, cg, kh, kw).transpose(0, 1, 3, 4, 2)
    return xp.ascontiguousarray(w).reshape(groups, o // groups, kh * kw * cg)


def _dy_matrix(xp, dy, groups):
    """``dy`` (N, O, OH, OW) as (G, O/G, N*OH*OW): a copy that moves whole OH*OW planes."""
    n, o, oh, ow = dy.shape
    return xp.ascontiguousarray(dy.transpose(1, 0, 2, 3)).reshape(groups, o // groups, n * oh * ow)


def _dy_rows(xp, dy, groups):
    """``dy`` (N, O, OH, OW) as (G, N*OH*OW, O/G), contiguous (batched products read it faster)."""
    n, o, oh, ow = dy.shape
    d = dy.reshape(n, groups, o // groups, oh, ow).transpose(1, 0, 3, 4, 2)
    return xp.ascontiguousarray(d).reshape(groups, n * oh * ow, o // groups)


def _contiguous(xp, a, out):
    """``a`` as a C-contiguous array: a copy, into ``out`` when given (the same values either way)."""
    if out is None:
        return xp.ascontiguousarray(a)
    xp.copyto(out, a)
    return out


def _conv_forward(xp, x, w, geom, out=None):
    n = x.shape[0]
    o, _, kh, kw = w.shape
    oh, ow = (output_size(s, p, k, st, d) for s, p, k, st, d in
              zip(x.shape[2:], geom.padding, (kh, kw), geom.stride, geom.dilation))
    cols = _im2col(xp, x, (kh, kw), geom, (oh, ow))
    product = _dt.narrow(xp.matmul(_w_matrix(xp, w, geom.groups), cols.transpose(0, 2, 1)), x, w)  # (G, O/G, N*OH*OW)
    return _contiguous(xp, product.reshape(o, n, oh, ow).transpose(1, 0, 2, 3), out)


def _backprop_input(xp, dy, w, x_shape, geom, out=None):
    n, o, oh, ow = dy.shape
    _, cg, kh, kw = w.shape
    g = geom.groups
    # the input gradient each window offset (i, j) receives, (G, KH*KW, N*OH*OW, C/G): one
    # product per offset, so that each offset's block is contiguous for the strided adds below
    w_offsets = w.reshape(g, o // g, cg, kh * kw).transpose(0, 3, 1, 2)  # (G, KH*KW, O/G, C/G)
    dcols = _dt.narrow(xp.matmul(_dy_rows(xp, dy, g)[:, None], w_offsets), dy, w)
    dcols = dcols.reshape(g, kh, kw, n, oh, ow, cg)
    piece = (lambda i, j: dcols[0, i, j]) if g == 1 else (lambda i, j: dcols[:, i, j].transpose(1, 2, 3, 0, 4))
    dxh = col2im(xp, piece, (n,) + tuple(x_shape[2:]) + (g, cg)[g == 1:], dcols.dtype, (kh, kw), geom.stride,
                 geom.dilation, (oh, ow), geom.padding, axis=1)  # (N, H, W, C) or (N, H, W, G, C/G)
    return _contiguous(xp, dxh.reshape(dxh.shape[:3] + (g * cg,)).transpose(0, 3, 1, 2), out)


def _backprop_filter(xp, x, dy, w_shape, geom, out=None):
    o, cg, kh, kw = w_shape
    cols = _im2col(xp, x, (kh, kw), geom, dy.shape[2:])
    dw = _dt.narrow(xp.matmul(_dy_matrix(xp, dy, geom.groups), cols), x, dy)  # (G, O/G, KH*KW*C/G)
    return _contiguous(xp, dw.reshape(o, kh, kw, cg).transpose(0, 3, 1, 2), out)


# ---------------------------------------------------------------- conv2d


def check_dtypes(op_type, *tensors):
    dtype = tensors[0].dtype
    if not _dt.inexact(dtype) or any(t.dtype != dtype for t in tensors):
        raise DTypeError(f"op {op_type!r} takes float tensors of one dtype, got "
                         f"{', '.join(str(t.dtype) for t in tensors)}")


def _check_4d(op_type, name, t, layout):
    if t.ndim != 4:
        raise ShapeError(f"op {op_type!r} takes {name} of shape {layout}, got shape {t.shape}")


def conv2d(x: TensorLike, w: TensorLike, b: TensorLike | None = None, stride: int | tuple[int, int] = 1,
           padding: Any = 0, dilation: int | tuple[int, int] = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as in PyTorch and TensorFlow) of NCHW ``x`` with OIHW ``w``.

    ``x`` has shape (N, C, H, W), ``w`` (O, C/groups, KH, KW), ``b`` (O,) or
    None; ``w`` and ``b`` given as lists or arrays take ``x``'s dtype.
    ``stride``, ``padding`` (zeros) and ``dilation`` are ints or (height,
    width) pairs; ``padding`` may also be ``((top, bottom), (left, right))``,
    ``"valid"`` (0) or ``"same"`` (stride 1 only; an odd leftover pixel pads
    after). With ``groups`` G the channels split into G groups, each
    convolved with its own O/G filters. The output has shape (N, O, OH, OW)
    with ``OH = (H + pad_top + pad_bottom - dilation*(KH-1) - 1) // stride + 1``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.tensor([float(i) for i in range(16)]), (1, 1, 4, 4))
        >>> w = gg.ones((1, 1, 2, 2))
        >>> gg.conv2d(x, w, stride=2).numpy().tolist()
        [[[[10.0, 18.0], [42.0, 50.0]]]]
        >>> gg.conv2d(x, w, b=gg.tensor([1.0]), padding="same").shape
        (1, 1, 4, 4)
        >>> gg.conv2d(gg.ones((2, 4, 5, 5)), gg.ones((6, 2, 3, 3)), padding=1, dilation=2, groups=2).shape
        (2, 6, 3, 3)
    """
    if _mp.active and (out := _autocast.autocast_op(conv2d, (x, w, b), stride=stride, padding=padding, dilation=dilation, groups=groups)) is not None:
        return out
    x = unary(x)
    w = w if isinstance(w, Tensor) else Tensor(w, x.dtype, x._device)
    if b is None:
        inputs = (x, w)
    else:
        inputs = (x, w, b if isinstance(b, Tensor) else Tensor(b, x.dtype, x._device))
    dev = same_device(inputs, "Conv2D")
    _check_4d("Conv2D", "x", x, "(N, C, H, W)")
    _check_4d("Conv2D", "w", w, "(O, C/groups, KH, KW)")
    check_dtypes("Conv2D", *inputs)
    geom = _conv_geometry("Conv2D", x.shape, w.shape, stride, padding, dilation, groups)
    if b is not None and inputs[2].shape != (w.shape[0],):
        raise ShapeError(f"op 'Conv2D' takes a bias of shape ({w.shape[0]},) for w of shape {w.shape}, "
                         f"got {inputs[2].shape}")
    xp = dev.xp
    out = _conv_forward(xp, x._data, w._data, geom)
    if b is not None:
        out += inputs[2]._data.reshape(-1, 1, 1)  # out is a fresh array
    return emit("Conv2D", out, dev, inputs, {"geom": geom})


@replay.replays("Conv2D")
def _conv2d_replay(inputs, attrs, outputs, device):
    x, w = inputs[0], inputs[1]
    b = inputs[2].reshape(-1, 1, 1) if len(inputs) == 3 else None
    geom, out, xp = attrs["geom"], outputs[0], device.xp
    if not out.flags.c_contiguous:
        return None

    def run():
        _conv_forward(xp, x, w, geom, out=out)
        if b is not None:
            xp.add(out, b, out=out)  # as conv2d adds it to its fresh array
    return run


def _conv_geometry(op_type, x_shape, w_shape, stride, padding, dilation, groups):
    """The checked :class:`Geometry` of a convolution of shapes ``x_shape`` and ``w_shape``."""
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"op {op_type!r}: groups is an int >= 1, not {groups!r}")
    groups = int(groups)
    c, o, cg = x_shape[1], w_shape[0], w_shape[1]
    if c % groups or o % groups:
        raise ShapeError(f"op {op_type!r}: groups={groups} must divide both the input channels ({c}, "
                         f"x of shape {x_shape}) and the output channels ({o}, w of shape {w_shape})")
    if cg * groups != c:
        raise ShapeError(f"op {op_type!r}: x of shape {x_shape} has {c} channels but w of shape {w_shape} "
                         f"expects {cg} per group x {groups} groups = {cg * groups}")
    kernel = w_shape[2:]
    if 0 in kernel:
        raise ShapeError(f"op {op_type!r}: w of shape {w_shape} has an empty kernel; KH and KW must be >= 1")
    stride = pair(stride, "stride", op_type, 1)
    dilation = pair(dilation, "dilation", op_type, 1)
    geom = Geometry(stride, _padding(padding, kernel, stride, dilation, op_type), dilation, groups)
    check_fits(op_type, x_shape, kernel, geom, "kernel")
    return geom


@RegisterGradient("Conv2D", reads_outputs=False)
def _conv2d_grad(op, dy):
    x, w = op.inputs[:2]
    geom = op.attrs["geom"]
    needs = op.needs_grad
    dx = conv2d_backprop_input(dy, w, x.shape, geom) if needs[0] else None
    dw = conv2d_backprop_filter(x, dy, w.shape, geom) if needs[1] else None
    if len(needs) == 2:
        return dx, dw
    return dx, dw, (reduce_sum(dy, axis=(0, 2, 3)) if needs[2] else None)


def _as_geometry(geom, op_type, x_shape, w_shape):
    if isinstance(geom, Geometry):
        return geom
    return _conv_geometry(op_type, x_shape, w_shape, *geom)


def conv2d_backprop_input(dy: TensorLike, w: TensorLike, x_shape: Shape, geom: Any) -> Tensor:
    """Gradient of :func:`~gpugrad.conv2d` with respect to its input, of shape ``x_shape``.

    ``dy`` is the (N, O, OH, OW) upstream gradient; ``geom`` a conv
    :class:`Geometry` or a tuple ``(stride, padding, dilation, groups)`` in
    conv2d's forms. The transposed convolution: each window's share of ``dy``
    times the filters is added back where the window read the input.

    Example:
        >>> import gpugrad as gg
        >>> g = gg.raw_ops.conv2d_backprop_input(gg.ones((1, 1, 2, 2)), gg.ones((1, 1, 2, 2)), (1, 1, 3, 3),
        ...                              (1, 0, 1, 1))
        >>> g.numpy()[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    dy, w = unary(dy), unary(w)
    dev = same_device((dy, w), "Conv2DBackpropInput")
    x_shape = tuple(int(s) for s in x_shape)
    geom = _as_geometry(geom, "Conv2DBackpropInput", x_shape, w.shape)
    _check_dy("Conv2DBackpropInput", dy, x_shape, w.shape, geom)
    data = _backprop_input(dev.xp, dy._data, w._data, x_shape, geom)
    return emit("Conv2DBackpropInput", data, dev, (dy, w), {"geom": geom, "x_shape": x_shape})


@replay.replays("Conv2DBackpropInput")
def _conv2d_backprop_input_replay(inputs, attrs, outputs, device):
    (dy, w), out, xp = inputs, outputs[0], device.xp
    geom, x_shape = attrs["geom"], attrs["x_shape"]
    return lambda: replay.into(out, _backprop_input(xp, dy, w, x_shape, geom, out=out))


@RegisterGradient("Conv2DBackpropInput", reads_outputs=False)
def _conv2d_backprop_input_grad(op, g):
    # out = Bi(dy, w):  d/ddy = C(g, w),  d/dw = Bf(g, dy)
    dy, w = op.inputs
    geom = op.attrs["geom"]
    need_dy, need_w = op.needs_grad
    return (_conv(g, w, geom) if need_dy else None,
            conv2d_backprop_filter(g, dy, w.shape, geom) if need_w else None)


def conv2d_backprop_filter(x: TensorLike, dy: TensorLike, w_shape: Shape, geom: Any) -> Tensor:
    """Gradient of :func:`~gpugrad.conv2d` with respect to its filters, of shape ``w_shape``.

    ``x`` is the (N, C, H, W) input, ``dy`` the (N, O, OH, OW) upstream
    gradient, ``geom`` as in :func:`conv2d_backprop_input`: the windows of
    ``x`` times ``dy``, summed over the batch and the output positions.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.tensor([float(i) for i in range(9)]), (1, 1, 3, 3))
        >>> gg.raw_ops.conv2d_backprop_filter(x, gg.ones((1, 1, 2, 2)), (1, 1, 2, 2), (1, 0, 1, 1)).numpy().tolist()
        [[[[8.0, 12.0], [20.0, 24.0]]]]
    """
    x, dy = unary(x), unary(dy)
    dev = same_device((x, dy), "Conv2DBackpropFilter")
    w_shape = tuple(int(s) for s in w_shape)
    geom = _as_geometry(geom, "Conv2DBackpropFilter", x.shape, w_shape)
    _check_dy("Conv2DBackpropFilter", dy, x.shape, w_shape, geom)
    data = _backprop_filter(dev.xp, x._data, dy._data, w_shape, geom)
    return emit("Conv2DBackpropFilter", data, dev, (x, dy), {"geom": geom, "w_shape": w_shape})


@replay.replays("Conv2DBackpropFilter")
def _conv2d_backprop_filter_replay(inputs, attrs, outputs, device):
    (x, dy), out, xp = inputs, outputs[0], device.xp
    geom, w_shape = attrs["geom"], attrs["w_shape"]
    return lambda: replay.into(out, _backprop_filter(xp, x, dy, w_shape, geom, out=out))


@RegisterGradient("Conv2DBackpropFilter", reads_outputs=False)
def _conv2d_backprop_filter_grad(op, g):
    # out = Bf(x, dy):  d/dx = Bi(dy, g),  d/ddy = C(x, g)
    x, dy = op.inputs
    geom = op.attrs["geom"]
    need_x, need_dy = op.needs_grad
    return (conv2d_backprop_input(dy, g, x.shape, geom) if need_x else None,
            _conv(x, g, geom) if need_dy else None)


def _conv(x, w, geom):
    """conv2d with a checked geometry, no bias (for the gradient rules)."""
    dev = same_device((x, w), "Conv2D")
    return emit("Conv2D", _conv_forward(dev.xp, x._data, w._data, geom), dev, (x, w), {"geom": geom})


def _check_dy(op_type, dy, x_shape, w_shape, geom):
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ShapeError(f"op {op_type!r} takes 4-D input and filter shapes, got {x_shape} and {w_shape}")
    expected = (x_shape[0], w_shape[0]) + tuple(
        output_size(s, p, k, st, d) for s, p, k, st, d in
        zip(x_shape[2:], geom.padding, w_shape[2:], geom.stride, geom.dilation))
    if tuple(dy.shape) != expected:
        raise ShapeError(f"op {op_type!r}: dy of shape {dy.shape} does not match the output {expected} of a "
                         f"convolution of x of shape {x_shape} with w of shape {w_shape}")
    check_dtypes(op_type, dy)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals(), not_ops=('pair', 'output_size', 'check_fits', 'padded', 'windows', 'col2im', 'check_dtypes'))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"
    ]
