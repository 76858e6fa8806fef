"""Specs of convolution and pooling beyond conv2d's own rows (in ``nn``): conv1d, the transposed
convolutions (conv2d's input gradient), pooling options, unpooling, padding modes, resizing.

Shapes are small: every input element costs two forward passes in the numerical check.
"""
import numpy as np

import gpugrad as gg

from . import OpSpec
from .nn import distinct

SPECS = [
    OpSpec("Conv2D", lambda x, w, b: gg.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
           [(2, 4, 7), (2, 2, 3), (2,)], label="conv1d"),
    OpSpec("Conv2D", lambda x, w: gg.square(gg.conv1d(x, w, padding="same")), [(1, 2, 5), (3, 2, 4)],
           label="conv1d_same_squared"),
    OpSpec("Conv2DBackpropInput", lambda x, w, b: gg.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                                     output_padding=1),
           [(1, 2, 3, 2), (2, 3, 3, 2), (3,)], label="conv_transpose2d"),
    OpSpec("Conv2DBackpropInput",
           lambda x, w: gg.square(gg.conv_transpose2d(x, w, stride=(2, 1), output_padding=(1, 0), groups=2,
                                                      dilation=(1, 2))),
           [(1, 4, 2, 3), (4, 1, 2, 2)], label="conv_transpose2d_groups_squared"),
    OpSpec("Conv2DBackpropInput", lambda x, w: gg.square(gg.conv_transpose1d(x, w, stride=3, padding=1,
                                                                             output_padding=2)),
           [(2, 2, 3), (2, 1, 3)], label="conv_transpose1d_squared"),
]
SPECS += [
    OpSpec("Pad", lambda x: gg.square(gg.pad(x, ((1, 0), (2, 1)), constant_values=-0.5)), [(2, 3)],
           label="value_squared"),
    OpSpec("Gather", lambda x: gg.square(gg.pad(x, ((2, 1), (1, 2)), mode="reflect")), [(3, 3)], label="pad_reflect"),
    OpSpec("Gather", lambda x: gg.nn.functional.pad(x, (2, 1, 0, 3), mode="replicate"), [(1, 2, 3)],
           label="pad_replicate"),
    OpSpec("Gather", lambda x: gg.square(gg.nn.functional.pad(x, (3, 1), mode="circular")), [(2, 3)],
           label="pad_circular_squared"),
]


def _unpool(x):
    """max_unpool2d of ``x`` (2, 2, 3, 3) at the maxima of a fixed input's 2x2 windows (disjoint windows:
    with overlapping ones two values may land on one position, and only the last one counts)."""
    source = gg.tensor(distinct((2, 2, 7, 6))(np.random.default_rng(3))[0], device=x.device)
    _, idx = gg.max_pool2d(source, 2, return_indices=True)
    return gg.square(gg.max_unpool2d(x, idx, 2, output_size=(7, 6)))


SPECS += [
    OpSpec("MaxPool2D", lambda x: gg.square(gg.max_pool2d(x, 3, stride=2, padding=1, dilation=(1, 2),
                                                          ceil_mode=True)),
           [(1, 2, 6, 7)], draw=distinct((1, 2, 6, 7)), label="dilated_ceil"),
    OpSpec("MaxPool2DGrad", lambda dy: gg.square(gg.raw_ops.max_pool2d_grad(
        gg.tensor(distinct((1, 2, 6, 7))(np.random.default_rng(5))[0], device=dy.device), dy, 3, stride=2,
        padding=1, dilation=(1, 2), ceil_mode=True)), [(1, 2, 4, 3)], label="dilated_ceil"),
    OpSpec("AvgPool2D", lambda x: gg.square(gg.avg_pool2d(x, (3, 2), stride=2, padding=1, ceil_mode=True,
                                                          count_include_pad=False)),
           [(1, 2, 6, 5)], label="ceil_exclude_pad"),
    OpSpec("AvgPool2DGrad", lambda dy: gg.square(gg.raw_ops.avg_pool2d_grad(
        dy, (1, 2, 6, 5), (3, 2), stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
        [(1, 2, 4, 3)], label="ceil_exclude_pad"),
    OpSpec("MaxPool2D", lambda x: gg.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True), [(2, 2, 6)],
           draw=distinct((2, 2, 6)), label="max_pool1d"),
    OpSpec("AvgPool2D", lambda x: gg.avg_pool1d(x, 3, stride=2, padding=1, count_include_pad=False),
           [(2, 2, 6)], label="avg_pool1d"),
    OpSpec("MaxUnpool2D", _unpool, [(2, 2, 3, 3)]),
]

SPECS += [
    OpSpec("MatMul", lambda x: gg.square(gg.adaptive_avg_pool2d(x, (2, 3))), [(1, 2, 5, 4)],
           label="adaptive_avg_pool2d"),
    OpSpec("MatMul", lambda x: gg.square(gg.interpolate(x, size=(5, 3), mode="bilinear")), [(1, 2, 3, 4)],
           label="interpolate_bilinear"),
    OpSpec("MatMul", lambda x: gg.square(gg.interpolate(x, scale_factor=2.5, mode="linear", align_corners=True)),
           [(2, 1, 3)], label="interpolate_linear_align_corners"),
    OpSpec("Gather", lambda x: gg.square(gg.interpolate(x, scale_factor=(2, 0.5))), [(1, 2, 2, 4)],
           label="interpolate_nearest"),
]

SPECS += [
    OpSpec("Var", lambda x, w, b: gg.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)], label="group_norm"),
]


def _unpool1d(x):
    """max_unpool1d of ``x`` (2, 2, 3) at the maxima of a fixed input's disjoint windows of 2."""
    source = gg.tensor(distinct((2, 2, 7))(np.random.default_rng(4))[0], device=x.device)
    _, idx = gg.max_pool1d(source, 2, return_indices=True)
    return gg.square(gg.max_unpool1d(x, idx, 2, output_size=7))


SPECS += [
    OpSpec("AdaptiveMaxPool2D", lambda x: gg.square(gg.adaptive_max_pool2d(x, (2, 3))), [(2, 2, 5, 4)],
           draw=distinct((2, 2, 5, 4))),
    OpSpec("AdaptiveMaxPool2D", lambda x: gg.square(gg.adaptive_max_pool2d(x, (4, 3))), [(1, 2, 3, 5)],
           draw=distinct((1, 2, 3, 5)), label="upsampling_overlaps"),
    OpSpec("AdaptiveMaxPool2D", lambda x: gg.adaptive_max_pool1d(x, 3) * gg.adaptive_max_pool1d(x, 3), [(2, 2, 7)],
           draw=distinct((2, 2, 7)), label="adaptive_max_pool1d"),
    OpSpec("MaxUnpool2D", _unpool1d, [(2, 2, 3)], label="max_unpool1d"),
    OpSpec("MatMul", lambda x: gg.square(gg.adaptive_avg_pool1d(x, 3)), [(2, 2, 7)], label="adaptive_avg_pool1d"),
    OpSpec("MatMul", lambda x: gg.square(gg.interpolate(x, size=(5, 3), mode="bicubic")), [(1, 2, 3, 4)],
           label="interpolate_bicubic"),
    OpSpec("MatMul", lambda x: gg.square(gg.interpolate(x, scale_factor=1.5, mode="bicubic", align_corners=True)),
           [(1, 1, 2, 4)], label="interpolate_bicubic_align_corners"),
]
