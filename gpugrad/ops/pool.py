"""Pooling over the height and width of NCHW tensors: max_pool2d, avg_pool2d.

Both view the padded input as its windows (the strided view conv2d uses) and
reduce each window. Their gradients are op types of their own that add each
window's share back where it was read (col2im):

- ``MaxPool2DGrad(dy)`` sends each window's gradient to the position of its
  maximum (the first one at a tie, as PyTorch does), found by the forward pass
  and kept with the op. Reading the values at those positions is ``MaxPool2D``
  again with the positions given, so the two op types are each other's
  gradients.
- ``AvgPool2DGrad(dy)`` spreads each window's gradient evenly over it; its
  gradient is ``AvgPool2D``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DTypeError, ShapeError
from ..registry import RegisterGradient
from . import replay
from .base import emit, public_ops, unary
from .conv import Geometry, check_fits, col2im, output_size, padded, pair, windows
from .. import _dtypes as _dt

if TYPE_CHECKING:
    from .._typing import Shape, TensorLike
    from ..tensor import Tensor



def _geometry(op_type, x_shape, kernel_size, stride, padding):
    """``(kernel, Geometry, (OH, OW))`` of a pooling of an input of ``x_shape``, checked."""
    if len(x_shape) != 4:
        raise ShapeError(f"op {op_type!r} takes x of shape (N, C, H, W), got shape {tuple(x_shape)}")
    kernel = pair(kernel_size, "kernel_size", op_type, 1)
    stride = kernel if stride is None else pair(stride, "stride", op_type, 1)
    ph, pw = pair(padding, "padding", op_type, 0)
    if ph > kernel[0] // 2 or pw > kernel[1] // 2:
        raise ValueError(f"op {op_type!r}: padding {(ph, pw)} must be at most half the kernel size {kernel}")
    geom = Geometry(stride, ((ph, ph), (pw, pw)), (1, 1), 1)
    check_fits(op_type, tuple(x_shape), kernel, geom, "pooling window")
    out_hw = tuple(output_size(s, p, k, st, 1) for s, p, k, st in zip(x_shape[2:], geom.padding, kernel, stride))
    return kernel, geom, out_hw


def _window_rows(xp, x, kernel, geom, out_hw, pad_value):
    """The windows of ``x`` as (N, C, OH, OW, KH*KW), one copy."""
    win = windows(xp, padded(xp, x, geom.padding, pad_value), kernel, geom.stride, (1, 1), out_hw)
    return win.reshape(win.shape[:4] + (kernel[0] * kernel[1],))


def _offset_views(xpad, kernel, stride, out_hw):
    """Yield ``(k, view)``: for each kernel offset k = i*KW + j, the (N, C, OH, OW) values it reads."""
    (oh, ow), (sh, sw) = out_hw, stride
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            yield i * kernel[1] + j, xpad[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]


def _tiles(attrs):
    """Whether the windows tile the input (stride = kernel, no padding): then each input
    element is in at most one window, and a gradient writes each once instead of adding
    into zeros."""
    return attrs["geom"].stride == attrs["kernel"] and attrs["geom"].padding == ((0, 0), (0, 0))


def _untile(xp, tiled, x_shape):
    """(N, C, OH, KH, OW, KW) window values as an input of ``x_shape``, zeros where no window reads."""
    n, c, oh, kh, ow, kw = tiled.shape
    out = tiled.reshape(n, c, oh * kh, ow * kw)
    if out.shape != tuple(x_shape):
        full = xp.zeros(x_shape, dtype=out.dtype)
        full[:, :, :oh * kh, :ow * kw] = out
        out = full
    return out


# ---------------------------------------------------------------- max_pool2d


def _lowest(dtype):
    return -np.inf if _dt.inexact(dtype) else np.iinfo(dtype).min


def max_pool2d(x: TensorLike, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: Any = 0) -> Tensor:
    """The largest value of each ``kernel_size`` window of NCHW ``x``.

    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` are
    ints or (height, width) pairs; padding (at most half the kernel) never
    wins the maximum. The gradient goes to the first maximum of each window.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.tensor([float(i) for i in range(16)]), (1, 1, 4, 4))
        >>> gg.max_pool2d(x, 2).numpy().tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
        >>> gg.max_pool2d(x, 3, stride=2, padding=1).numpy().tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    x = unary(x)
    kernel, geom, out_hw = _geometry("MaxPool2D", x.shape, kernel_size, stride, padding)
    out, arg = _max_and_argmax(x._device.xp, x._data, kernel, geom, out_hw)
    return emit("MaxPool2D", out, x._device, (x,),
                {"argmax": arg, "kernel": kernel, "geom": geom, "x_shape": x.shape})


def _max_and_argmax(xp, x, kernel, geom, out_hw):
    """The maximum of each window and its offset ``i * KW + j`` in the window (the first at a tie)."""
    views = _offset_views(padded(xp, x, geom.padding, _lowest(x.dtype)), kernel, geom.stride, out_hw)
    best = next(views)[1]
    arg = xp.zeros(best.shape, dtype=np.int8 if kernel[0] * kernel[1] < 128 else np.int32)
    if kernel == (1, 1):
        best = best.copy()  # not a view of x
    for k, v in views:  # NOTE: whole-array ops; copyto(..., where=) is several times slower in NumPy
        later = v > best  # strictly: an equal value later in the window does not win
        arg = xp.where(later, arg.dtype.type(k), arg)
        best = xp.maximum(best, v)
    return best, arg


# the window maxima and their positions (attrs["argmax"], which the gradient reads): the kernel computes both
@replay.replays("MaxPool2D", fills_attrs=("argmax",))
def _max_pool2d_replay(inputs, attrs, outputs, device):
    (x,), out, xp = inputs, outputs[0], device.xp
    argmax, kernel, geom = attrs["argmax"], attrs["kernel"], attrs["geom"]
    out_hw = out.shape[2:]

    def run():
        best, arg = _max_and_argmax(xp, x, kernel, geom, out_hw)
        replay.into(out, best)
        replay.into(argmax, arg)
    return run


def _max_pool_select(x, attrs):
    """``x`` read at the window positions ``attrs["argmax"]`` names: MaxPool2D with the positions given."""
    xp = x._device.xp
    rows = _window_rows(xp, x._data, attrs["kernel"], attrs["geom"], attrs["argmax"].shape[2:], 0)
    out = xp.take_along_axis(rows, attrs["argmax"][..., None].astype(np.intp), axis=-1)[..., 0]
    return emit("MaxPool2D", out, x._device, (x,), attrs)


@RegisterGradient("MaxPool2D", reads_outputs=False)
def _max_pool2d_grad(op, dy):
    return (_max_pool_route(dy, op.attrs),)


def _max_pool_route(dy, attrs):
    dy = unary(dy)
    xp = dy._device.xp
    arg = attrs["argmax"]
    if dy.shape != arg.shape:
        raise ShapeError(f"op 'MaxPool2DGrad': dy of shape {dy.shape} does not match the pooled output "
                         f"{arg.shape} of x of shape {attrs['x_shape']}")
    return emit("MaxPool2DGrad", max_pool_route_array(xp, dy._data, attrs), dy._device, (dy,), attrs)


def max_pool_route_array(xp, d, attrs):
    """The array ``MaxPool2DGrad`` computes: array ``d`` (the pooled gradient) routed to the window maxima
    ``attrs["argmax"]`` names, in the input's shape."""
    kernel, geom, arg = attrs["kernel"], attrs["geom"], attrs["argmax"]
    zero = xp.zeros((), dtype=d.dtype)
    kh, kw = kernel
    if _tiles(attrs):  # each input element is in one window: written once, no zeros to add to
        n, c, oh, ow = d.shape
        tiled = xp.empty((n, c, oh, kh, ow, kw), dtype=d.dtype)
        for i in range(kh):
            for j in range(kw):
                tiled[:, :, :, i, :, j] = xp.where(arg == i * kw + j, d, zero)
        return _untile(xp, tiled, attrs["x_shape"])
    return col2im(xp, lambda i, j: xp.where(arg == i * kw + j, d, zero), attrs["x_shape"], d.dtype, kernel,
                  geom.stride, (1, 1), arg.shape[2:], geom.padding)


@replay.replays("MaxPool2DGrad")
def _max_pool2d_grad_replay(inputs, attrs, outputs, device):
    (dy,), out, xp = inputs, outputs[0], device.xp
    return lambda: replay.into(out, max_pool_route_array(xp, dy, attrs))


def max_pool2d_grad(x: TensorLike, dy: TensorLike, kernel_size: int | tuple[int, int],
                    stride: int | tuple[int, int] | None = None, padding: Any = 0) -> Tensor:
    """Gradient of :func:`max_pool2d` of ``x``: ``dy`` routed to the maximum of each window.

    ``dy`` has the pooled shape; the result has ``x``'s. Differentiable in
    ``dy`` only (the positions of the maxima are constant).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[[[1.0, 3.0], [2.0, 3.0]]]])
        >>> gg.raw_ops.max_pool2d_grad(x, gg.tensor([[[[10.0]]]]), 2).numpy().tolist()
        [[[[0.0, 10.0], [0.0, 0.0]]]]
    """
    x = unary(x)
    kernel, geom, out_hw = _geometry("MaxPool2DGrad", x.shape, kernel_size, stride, padding)
    arg = _max_and_argmax(x._device.xp, x._data, kernel, geom, out_hw)[1]
    return _max_pool_route(dy, {"argmax": arg, "kernel": kernel, "geom": geom, "x_shape": x.shape})


@RegisterGradient("MaxPool2DGrad", reads_outputs=False)
def _max_pool2d_grad_grad(op, g):
    return (_max_pool_select(g, op.attrs),)


# ---------------------------------------------------------------- avg_pool2d


def avg_pool2d(x: TensorLike, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: Any = 0) -> Tensor:
    """The mean of each ``kernel_size`` window of NCHW ``x``.

    Arguments as in :func:`max_pool2d`. Zero padding counts in the mean
    (PyTorch's default ``count_include_pad=True``): every window divides by
    ``kernel_h * kernel_w``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.tensor([float(i) for i in range(16)]), (1, 1, 4, 4))
        >>> gg.avg_pool2d(x, 2).numpy().tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
        >>> gg.avg_pool2d(gg.ones((1, 1, 2, 2)), 2, stride=1, padding=1).numpy().tolist()
        [[[[0.25, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 0.25]]]]
    """
    x = unary(x)
    kernel, geom, out_hw = _geometry("AvgPool2D", x.shape, kernel_size, stride, padding)
    return _avg_pool(x, {"kernel": kernel, "geom": geom, "x_shape": x.shape, "out_hw": out_hw})


def _avg_pool(x, attrs):
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'AvgPool2D' takes a float tensor, got dtype {x.dtype}")
    xp = x._device.xp
    kernel = attrs["kernel"]
    views = _offset_views(padded(xp, x._data, attrs["geom"].padding), kernel, attrs["geom"].stride, attrs["out_hw"])
    out = next(views)[1].copy()
    for _, v in views:
        out += v  # NOTE: a sum over the strided windows view reduces along short rows, several times slower
    out *= xp.asarray(1.0 / (kernel[0] * kernel[1]), dtype=out.dtype)
    return emit("AvgPool2D", out, x._device, (x,), attrs)


@RegisterGradient("AvgPool2D", reads_outputs=False)
def _avg_pool2d_grad(op, dy):
    return (_avg_pool_spread(dy, op.attrs),)


def _avg_pool_spread(dy, attrs):
    dy = unary(dy)
    xp = dy._device.xp
    kernel, geom = attrs["kernel"], attrs["geom"]
    expected = tuple(attrs["x_shape"][:2]) + tuple(attrs["out_hw"])
    if dy.shape != expected:
        raise ShapeError(f"op 'AvgPool2DGrad': dy of shape {dy.shape} does not match the pooled output "
                         f"{expected} of x of shape {attrs['x_shape']}")
    share = dy._data * xp.asarray(1.0 / (kernel[0] * kernel[1]), dtype=dy.dtype)
    if _tiles(attrs):  # each input element is in one window: written once
        n, c, oh, ow = share.shape
        tiled = xp.empty((n, c, oh, kernel[0], ow, kernel[1]), dtype=share.dtype)
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                tiled[:, :, :, i, :, j] = share
        data = _untile(xp, tiled, attrs["x_shape"])
    else:
        data = col2im(xp, lambda i, j: share, attrs["x_shape"], share.dtype, kernel, geom.stride, (1, 1),
                      attrs["out_hw"], geom.padding)
    return emit("AvgPool2DGrad", data, dy._device, (dy,), attrs)


def avg_pool2d_grad(dy: TensorLike, x_shape: Shape, kernel_size: int | tuple[int, int],
                    stride: int | tuple[int, int] | None = None, padding: Any = 0) -> Tensor:
    """Gradient of :func:`avg_pool2d` of an input of ``x_shape``: ``dy`` spread evenly over each window.

    Example:
        >>> import gpugrad as gg
        >>> gg.raw_ops.avg_pool2d_grad(gg.tensor([[[[4.0]]]]), (1, 1, 2, 2), 2).numpy().tolist()
        [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    x_shape = tuple(int(s) for s in x_shape)
    kernel, geom, out_hw = _geometry("AvgPool2DGrad", x_shape, kernel_size, stride, padding)
    return _avg_pool_spread(dy, {"kernel": kernel, "geom": geom, "x_shape": x_shape, "out_hw": out_hw})


@RegisterGradient("AvgPool2DGrad", reads_outputs=False)
def _avg_pool2d_grad_grad(op, g):
    return (_avg_pool(unary(g), op.attrs),)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals(), not_ops=("max_pool_route_array",))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad"
    ]
