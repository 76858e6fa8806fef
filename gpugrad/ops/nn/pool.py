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

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ... import _device_checks
from ...backend import CPU
from ...errors import DeviceError, DTypeError, ShapeError
from ...registry import NotDifferentiable, RegisterGradient
from .. import replay
from ..base import emit, public_ops, unary
from ..array.indexing import take
from ..array.shape import expand_dims, reshape, squeeze
from .conv import Geometry, check_fits, col2im, output_size, padded, pair, windows
from ... import _dtypes as _dt
from ...tensor import Tensor

if TYPE_CHECKING:
    from ..._typing import Shape, TensorLike



def _geometry(op_type, x_shape, kernel_size, stride, padding, dilation=1, ceil_mode=False):
    """``(kernel, Geometry, (OH, OW))`` of a pooling of an input of ``x_shape``, checked.

    As PyTorch: ``OH = (H + 2*pad - dilation*(KH-1) - 1 [+ stride-1 with ceil_mode]) // stride + 1``,
    less one where ceil_mode's last window would start past the input and its left padding. The
    windows ceil_mode adds past the bottom (right) padding read extra padding, which ``Geometry``
    holds as bottom (right) padding (so ``padding`` may be uneven).
    """
    if len(x_shape) != 4:
        raise ShapeError(f"op {op_type!r} takes x of shape (N, C, H, W), got shape {tuple(x_shape)}")
    kernel = pair(kernel_size, "kernel_size", op_type, 1)
    stride = kernel if stride is None else pair(stride, "stride", op_type, 1)
    dilation = pair(dilation, "dilation", op_type, 1)
    ph, pw = pair(padding, "padding", op_type, 0)
    if ph > kernel[0] // 2 or pw > kernel[1] // 2:  # as PyTorch, dilated or not
        raise ValueError(f"op {op_type!r}: padding {(ph, pw)} must be at most half the kernel size {kernel}")
    check_fits(op_type, tuple(x_shape), kernel, Geometry(stride, ((ph, ph), (pw, pw)), dilation, 1),
               "pooling window")
    out_hw, pads = [], []
    for size, k, s, d, p in zip(x_shape[2:], kernel, stride, dilation, (ph, pw)):
        span = d * (k - 1) + 1
        out = (size + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        out_hw.append(out)
        pads.append((p, max(p, (out - 1) * s + span - size - p)))
    return kernel, Geometry(stride, tuple(pads), dilation, 1), tuple(out_hw)


def _counts(size, kernel, stride, pad, out, include_pad):
    """How many of each window's KH (or KW) rows avg_pool2d divides by along one axis, as PyTorch:
    the window clipped to the input and its padding (``include_pad``), or to the input alone."""
    start = np.arange(out) * stride - pad
    end = np.minimum(start + kernel, size + pad)
    if not include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


def _window_rows(xp, x, kernel, geom, out_hw, pad_value):
    """The windows of ``x`` as (N, C, OH, OW, KH*KW), one copy."""
    win = windows(xp, padded(xp, x, geom.padding, pad_value), kernel, geom.stride, geom.dilation, out_hw)
    return win.reshape(win.shape[:4] + (kernel[0] * kernel[1],))


def _offset_views(xpad, kernel, geom, out_hw):
    """Yield ``(k, view)``: for each kernel offset k = i*KW + j, the (N, C, OH, OW) values it reads."""
    (oh, ow), (sh, sw), (dh, dw) = out_hw, geom.stride, geom.dilation
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r, q = i * dh, j * dw
            yield i * kernel[1] + j, xpad[:, :, r:r + sh * (oh - 1) + 1:sh, q:q + sw * (ow - 1) + 1:sw]


def _tiles(attrs):
    """Whether the windows tile the input (stride = kernel, no padding): then each input
    element is in at most one window, and a gradient writes each once instead of adding
    into zeros."""
    geom = attrs["geom"]
    return geom.stride == attrs["kernel"] and geom.padding == ((0, 0), (0, 0)) and geom.dilation == (1, 1)


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
               padding: Any = 0, dilation: int | tuple[int, int] = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """The largest value of each ``kernel_size`` window of NCHW ``x``, as PyTorch's F.max_pool2d.

    ``kernel_size``, ``stride`` (default: ``kernel_size``), ``padding`` and
    ``dilation`` (the spacing of a window's elements) are ints or (height,
    width) pairs; padding (at most half the dilated kernel) never wins the
    maximum. ``ceil_mode`` rounds the output size up (a last, partial window
    where it starts inside the input or its left padding). The gradient goes
    to the first maximum of each window. With ``return_indices`` it returns
    ``(out, indices)``: int64 positions ``h * W + w`` of each maximum in its
    (H, W) plane, as :func:`max_unpool2d` takes them (no gradient).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.tensor([float(i) for i in range(16)]), (1, 1, 4, 4))
        >>> gg.max_pool2d(x, 2).numpy().tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
        >>> gg.max_pool2d(x, 3, stride=2, padding=1).numpy().tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
        >>> gg.max_pool2d(x, 3, stride=2, ceil_mode=True).shape, gg.max_pool2d(x, 2, stride=1, dilation=2).shape
        ((1, 1, 2, 2), (1, 1, 2, 2))
        >>> gg.max_pool2d(x, 2, return_indices=True)[1].numpy().tolist()
        [[[[5, 7], [13, 15]]]]
    """
    x = unary(x)
    kernel, geom, out_hw = _geometry("MaxPool2D", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    out, arg = _max_and_argmax(x._device.xp, x._data, kernel, geom, out_hw)
    attrs = {"argmax": arg, "kernel": kernel, "geom": geom, "x_shape": x.shape}
    y = emit("MaxPool2D", out, x._device, (x,), attrs)
    if not return_indices:
        return y
    return y, emit("MaxPool2DIndices", _flat_indices(x._device.xp, arg, kernel, geom, x.shape), x._device, (x,),
                   attrs)


def _flat_indices(xp, arg, kernel, geom, x_shape):
    """Window offsets ``arg`` (k = i*KW + j) as positions ``h * W + w`` in the unpadded input plane."""
    oh, ow = arg.shape[2:]
    arg = arg.astype(np.int64)
    rows = xp.arange(oh).reshape(-1, 1) * geom.stride[0] - geom.padding[0][0] + (arg // kernel[1]) * geom.dilation[0]
    cols = xp.arange(ow) * geom.stride[1] - geom.padding[1][0] + (arg % kernel[1]) * geom.dilation[1]
    return rows * x_shape[3] + cols


@replay.replays("MaxPool2DIndices")
def _max_pool2d_indices_replay(inputs, attrs, outputs, device):
    (x,), out, xp = inputs, outputs[0], device.xp
    kernel, geom, x_shape = attrs["kernel"], attrs["geom"], attrs["x_shape"]

    def run():
        arg = _max_and_argmax(xp, x, kernel, geom, out.shape[2:])[1]
        replay.into(out, _flat_indices(xp, arg, kernel, geom, x_shape))
    return run


NotDifferentiable("MaxPool2DIndices")


def _max_and_argmax(xp, x, kernel, geom, out_hw):
    """The maximum of each window and its offset ``i * KW + j`` in the window (the first at a tie)."""
    views = _offset_views(padded(xp, x, geom.padding, _lowest(x.dtype)), kernel, geom, out_hw)
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
                  geom.stride, geom.dilation, arg.shape[2:], geom.padding)


@replay.replays("MaxPool2DGrad")
def _max_pool2d_grad_replay(inputs, attrs, outputs, device):
    (dy,), out, xp = inputs, outputs[0], device.xp
    return lambda: replay.into(out, max_pool_route_array(xp, dy, attrs))


def max_pool2d_grad(x: TensorLike, dy: TensorLike, kernel_size: int | tuple[int, int],
                    stride: int | tuple[int, int] | None = None, padding: Any = 0, dilation: Any = 1,
                    ceil_mode: bool = False) -> Tensor:
    """Gradient of :func:`~gpugrad.max_pool2d` of ``x``: ``dy`` routed to the maximum of each window.

    ``dy`` has the pooled shape; the result has ``x``'s. Differentiable in
    ``dy`` only (the positions of the maxima are constant).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[[[1.0, 3.0], [2.0, 3.0]]]])
        >>> gg.raw_ops.max_pool2d_grad(x, gg.tensor([[[[10.0]]]]), 2).numpy().tolist()
        [[[[0.0, 10.0], [0.0, 0.0]]]]
    """
    x = unary(x)
    kernel, geom, out_hw = _geometry("MaxPool2DGrad", x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    arg = _max_and_argmax(x._device.xp, x._data, kernel, geom, out_hw)[1]
    return _max_pool_route(dy, {"argmax": arg, "kernel": kernel, "geom": geom, "x_shape": x.shape})


@RegisterGradient("MaxPool2DGrad", reads_outputs=False)
def _max_pool2d_grad_grad(op, g):
    return (_max_pool_select(g, op.attrs),)


# ---------------------------------------------------------------- avg_pool2d


def avg_pool2d(x: TensorLike, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """The mean of each ``kernel_size`` window of NCHW ``x``, as PyTorch's F.avg_pool2d.

    ``kernel_size``, ``stride`` and ``padding`` as in :func:`~gpugrad.max_pool2d`.
    With ``count_include_pad`` (the default) zero padding counts in the mean:
    a window divides by ``kernel_h * kernel_w``, less what ``ceil_mode``'s
    last window hangs past the padding; without it, by the number of input
    elements it covers. ``divisor_override`` divides every window by that.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.reshape(gg.tensor([float(i) for i in range(16)]), (1, 1, 4, 4))
        >>> gg.avg_pool2d(x, 2).numpy().tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
        >>> gg.avg_pool2d(gg.ones((1, 1, 2, 2)), 2, stride=1, padding=1).numpy().tolist()
        [[[[0.25, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 0.25]]]]
        >>> gg.avg_pool2d(gg.ones((1, 1, 2, 2)), 2, stride=1, padding=1, count_include_pad=False).numpy().tolist()
        [[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]]
    """
    x = unary(x)
    kernel, geom, out_hw = _geometry("AvgPool2D", x.shape, kernel_size, stride, padding, 1, ceil_mode)
    return _avg_pool(x, _avg_attrs(x.shape, kernel, geom, out_hw, count_include_pad, divisor_override))


def _avg_attrs(x_shape, kernel, geom, out_hw, count_include_pad, divisor_override):
    """AvgPool2D's attributes; ``scale``: the (OH, OW) reciprocals of the divisors, or None for 1/(KH*KW)."""
    scale = None
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, (int, np.integer)) \
                or divisor_override < 1:
            raise ValueError(f"op 'AvgPool2D': divisor_override is an int >= 1 or None, not {divisor_override!r}")
        scale = np.full(out_hw, 1.0 / int(divisor_override))
    else:
        counts = [_counts(size, k, s, p[0], o, count_include_pad) for size, k, s, p, o in
                  zip(x_shape[2:], kernel, geom.stride, geom.padding, out_hw)]
        if any((c != k).any() for c, k in zip(counts, kernel)):
            scale = 1.0 / np.multiply.outer(counts[0], counts[1])
    return {"kernel": kernel, "geom": geom, "x_shape": tuple(x_shape), "out_hw": out_hw, "scale": scale}


def _scale(xp, attrs, dtype):
    """What avg pooling multiplies each window's sum by: a 0-d array, or the (OH, OW) array of ``scale``."""
    kernel, scale = attrs["kernel"], attrs.get("scale")
    if scale is None:
        return xp.asarray(1.0 / (kernel[0] * kernel[1]), dtype=dtype)
    return xp.asarray(scale, dtype=dtype)


def _avg_pool(x, attrs):
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'AvgPool2D' takes a float tensor, got dtype {x.dtype}")
    xp = x._device.xp
    kernel = attrs["kernel"]
    views = _offset_views(padded(xp, x._data, attrs["geom"].padding), kernel, attrs["geom"], attrs["out_hw"])
    out = next(views)[1].copy()
    for _, v in views:
        out += v  # NOTE: a sum over the strided windows view reduces along short rows, several times slower
    out *= _scale(xp, attrs, out.dtype)
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
    share = dy._data * _scale(xp, attrs, dy.dtype)
    if _tiles(attrs):  # each input element is in one window: written once
        n, c, oh, ow = share.shape
        tiled = xp.empty((n, c, oh, kernel[0], ow, kernel[1]), dtype=share.dtype)
        for i in range(kernel[0]):
            for j in range(kernel[1]):
                tiled[:, :, :, i, :, j] = share
        data = _untile(xp, tiled, attrs["x_shape"])
    else:
        data = col2im(xp, lambda i, j: share, attrs["x_shape"], share.dtype, kernel, geom.stride, geom.dilation,
                      attrs["out_hw"], geom.padding)
    return emit("AvgPool2DGrad", data, dy._device, (dy,), attrs)


def avg_pool2d_grad(dy: TensorLike, x_shape: Shape, kernel_size: int | tuple[int, int],
                    stride: int | tuple[int, int] | None = None, padding: Any = 0, ceil_mode: bool = False,
                    count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Gradient of :func:`~gpugrad.avg_pool2d` of an input of ``x_shape``: ``dy`` spread evenly over each window.

    Example:
        >>> import gpugrad as gg
        >>> gg.raw_ops.avg_pool2d_grad(gg.tensor([[[[4.0]]]]), (1, 1, 2, 2), 2).numpy().tolist()
        [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    x_shape = tuple(int(s) for s in x_shape)
    kernel, geom, out_hw = _geometry("AvgPool2DGrad", x_shape, kernel_size, stride, padding, 1, ceil_mode)
    return _avg_pool_spread(dy, _avg_attrs(x_shape, kernel, geom, out_hw, count_include_pad, divisor_override))


@RegisterGradient("AvgPool2DGrad", reads_outputs=False)
def _avg_pool2d_grad_grad(op, g):
    return (_avg_pool(unary(g), op.attrs),)


# ---------------------------------------------------------------- max_unpool2d


def max_unpool2d(x: TensorLike, indices: TensorLike, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] | None = None, padding: Any = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """Each value of NCHW ``x`` put at its position ``indices`` (``h * W + w``, as :func:`~gpugrad.max_pool2d`'s
    ``return_indices`` gives them) of an otherwise zero output, as PyTorch's F.max_unpool2d.

    The output's (H, W) is ``output_size`` (a pair, or a shape ending in it),
    by default ``((H_in - 1) * stride - 2 * padding + kernel_size)`` per axis.
    Recorded as ``MaxUnpool2D``; its gradient reads the upstream gradient at
    ``indices`` (as PyTorch's, also where two values share an index and only
    the last one written shows).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[[[1.0, 3.0], [2.0, 3.5]]]])
        >>> y, idx = gg.max_pool2d(x, 2, return_indices=True)
        >>> gg.max_unpool2d(y, idx, 2).numpy().tolist()
        [[[[0.0, 0.0], [0.0, 3.5]]]]
    """
    op_type = "MaxUnpool2D"
    x = unary(x)
    if x.ndim != 4:
        raise ShapeError(f"op {op_type!r} takes x of shape (N, C, H, W), got shape {x.shape}")
    kernel = pair(kernel_size, "kernel_size", op_type, 1)
    stride = kernel if stride is None else pair(stride, "stride", op_type, 1)
    pads = pair(padding, "padding", op_type, 0)
    n, c, h, w = x.shape
    if output_size is None:
        out_hw = tuple((size - 1) * s - 2 * p + k for size, s, p, k in zip((h, w), stride, pads, kernel))
    else:
        out_hw = tuple(int(v) for v in tuple(output_size)[-2:])
        if len(out_hw) != 2 or min(out_hw) < 1:
            raise ShapeError(f"op {op_type!r}: output_size {output_size!r} does not end in a (H, W) pair >= 1")
    dev = x._device
    xp = dev.xp
    if isinstance(indices, Tensor) and indices._device is not dev:
        raise DeviceError(f"op {op_type!r} got indices on {indices.device!r} for x on {dev.name!r}; move one "
                          f"with .to(device)")
    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx.dtype.kind not in "iu" or tuple(idx.shape) != x.shape:
        raise ShapeError(f"op {op_type!r} takes integer indices of x's shape {x.shape}, got "
                         f"{idx.dtype} of shape {tuple(idx.shape)}")
    plane = out_hw[0] * out_hw[1]
    if dev is not CPU and isinstance(idx, np.ndarray):
        idx = xp.asarray(idx)
    # at once on the CPU; on a GPU at the thread's next host read (no sync here)
    _device_checks.check(idx, 0, plane, f"op {op_type!r}: index {{value}} is outside [0, {plane}) for an output "
                                        f"of (H, W) {out_hw}")
    base = (xp.arange(n * c, dtype=np.int64) * plane).reshape(n, c, 1, 1)
    flat = xp.asarray(idx, dtype=np.int64) + base  # positions in the flattened output
    data = xp.zeros((n, c) + out_hw, dtype=x._data.dtype)
    data.reshape(-1)[flat.reshape(-1)] = x._data.reshape(-1)
    return emit(op_type, data, dev, (x,), {"flat": flat, "x_shape": x.shape})


@RegisterGradient("MaxUnpool2D", reads_outputs=False)
def _max_unpool2d_grad(op, dy):
    # out.flat[flat] = x:  dx = dy.flat[flat]
    return (take(reshape(dy, -1), op.attrs["flat"]),)


# ---------------------------------------------------------------- 1-D pooling


def max_pool1d(x: TensorLike, kernel_size: int, stride: int | None = None, padding: int = 0, dilation: int = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The largest value of each window of (N, C, L) ``x``, as PyTorch's F.max_pool1d: :func:`~gpugrad.max_pool2d` of
    a height-1 image (indices are positions along L).

    Example:
        >>> import gpugrad as gg
        >>> gg.max_pool1d(gg.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2, ceil_mode=True).numpy().tolist()
        [[[3.0, 5.0, 4.0]]]
    """
    x = _as_image(x, "MaxPool1D")
    out = max_pool2d(x, _one(kernel_size, 1), None if stride is None else _one(stride, 1), _one(padding, 0),
                     _one(dilation, 1), ceil_mode, return_indices)
    return (squeeze(out[0], 2), squeeze(out[1], 2)) if return_indices else squeeze(out, 2)


def avg_pool1d(x: TensorLike, kernel_size: int, stride: int | None = None, padding: int = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """The mean of each window of (N, C, L) ``x``, as PyTorch's F.avg_pool1d: :func:`~gpugrad.avg_pool2d` of a
    height-1 image.

    Example:
        >>> import gpugrad as gg
        >>> gg.avg_pool1d(gg.tensor([[[1.0, 3.0, 2.0, 6.0]]]), 2).numpy().tolist()
        [[[2.0, 4.0]]]
    """
    x = _as_image(x, "AvgPool1D")
    return squeeze(avg_pool2d(x, _one(kernel_size, 1), None if stride is None else _one(stride, 1),
                              _one(padding, 0), ceil_mode, count_include_pad), 2)


def max_unpool1d(x: TensorLike, indices: TensorLike, kernel_size: int, stride: int | None = None,
                 padding: int = 0, output_size: Sequence[int] | None = None) -> Tensor:
    """Each value of (N, C, L) ``x`` put at its position ``indices`` along L (as :func:`max_pool1d`'s
    ``return_indices`` gives them) of an otherwise zero output, as PyTorch's F.max_unpool1d:
    :func:`max_unpool2d` of a height-1 image. The output's length is ``output_size`` (an int, or a shape
    ending in it), by default ``(L_in - 1) * stride - 2 * padding + kernel_size``.

    Example:
        >>> import gpugrad as gg
        >>> y, idx = gg.max_pool1d(gg.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]]), 2, return_indices=True)
        >>> gg.max_unpool1d(y, idx, 2, output_size=5).numpy().tolist()
        [[[0.0, 3.0, 0.0, 5.0, 0.0]]]
    """
    x = _as_image(x, "MaxUnpool1D")
    if isinstance(indices, Tensor):
        indices = expand_dims(indices, 2)
    else:
        indices = np.expand_dims(np.asarray(indices), 2)
    if output_size is not None:
        sizes = (output_size,) if isinstance(output_size, (int, np.integer)) else tuple(output_size)
        output_size = (1, sizes[-1]) if sizes else sizes
    return squeeze(max_unpool2d(x, indices, _one(kernel_size, 1), None if stride is None else _one(stride, 1),
                                _one(padding, 0), output_size), 2)


def _as_image(x, op_type):
    x = unary(x)
    if x.ndim != 3:
        raise ShapeError(f"op {op_type!r} takes x of shape (N, C, L), got shape {x.shape}")
    return expand_dims(x, 2)


def _one(value, height):
    """A 1-D pooling argument (an int or a 1-tuple) as the (height, width) pair of a height-1 image."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    return (height, value)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals(), not_ops=("max_pool_route_array",))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad", "max_unpool2d", "max_pool1d", "avg_pool1d",
        "max_unpool1d"
    ]
