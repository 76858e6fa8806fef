"""Specs of convolution and pooling beyond conv2d's own rows (in ``nn``): conv1d, the transposed
convolutions (conv2d's input gradient), pooling options, unpooling, padding modes, resizing.

Shapes are small: every input element costs two forward passes in the numerical check.
"""
import gpugrad as gg

from . import OpSpec

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
