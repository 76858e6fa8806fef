"""Specs of the network ops: conv2d and its two gradient ops, max/avg pooling and theirs,
dropout, embedding (a Gather), layer_norm and batch_norm (Normalize, then Mul and Add).

Shapes are small: every input element costs two forward passes in the numerical check.
"""
import numpy as np

import gpugrad as gg

from . import OpSpec

# max pooling is differentiable away from ties: values at least 0.1 apart, so that
# the float32 check's steps of 0.01 never change a window's maximum
POOL_SHAPE = (2, 2, 5, 4)
POOL_ARGS: dict = dict(kernel_size=(3, 2), stride=(2, 1), padding=1)
POOLED_SHAPE = (2, 2, 3, 5)


def distinct(shape, spacing=0.1):
    def draw(rng):
        values = rng.permutation(int(np.prod(shape))).reshape(shape) * spacing
        return [values - values.mean()]
    return draw


def pool_input(device):
    return gg.tensor(distinct(POOL_SHAPE)(np.random.default_rng(7))[0], device=device)


def conv(**kwargs):
    return lambda x, w: gg.conv2d(x, w, **kwargs)


def running(c, device, mean=0.0, var=1.0):
    """Fresh running statistics on ``device`` (batch_norm updates them in place)."""
    return (gg.Variable(np.full(c, mean), trainable=False, device=device),
            gg.Variable(np.full(c, var), trainable=False, device=device))


def batch_norm(training, **kwargs):
    def fn(x, w, b):
        rm, rv = running(x.shape[1], x.device, 0.5, 2.0)
        return gg.batch_norm(x, rm, rv, w, b, training=training, **kwargs)
    return fn


IDS = np.array([[0, 2, 0], [3, 3, 3]])

SPECS = [
    OpSpec("Conv2D", lambda x, w, b: gg.conv2d(x, w, b, padding=1), [(2, 3, 4, 4), (4, 3, 3, 3), (4,)],
           label="pad_bias"),
    OpSpec("Conv2D", conv(stride=(2, 1), padding=((1, 0), (0, 1)), dilation=(1, 2), groups=2),
           [(1, 4, 6, 5), (4, 2, 2, 2)], label="stride_dilation_groups"),
    OpSpec("Conv2D", conv(padding="same"), [(1, 2, 4, 4), (2, 2, 2, 3)], label="same_even_kernel"),
    OpSpec("Conv2D", lambda x, w: gg.square(gg.conv2d(x, w, stride=2)), [(2, 1, 5, 5), (2, 1, 3, 3)],
           label="squared"),
    OpSpec("Conv2DBackpropInput", lambda dy, w: gg.raw_ops.conv2d_backprop_input(dy, w, (1, 2, 5, 6), (2, 1, 1, 1)),
           [(1, 3, 3, 4), (3, 2, 2, 2)]),
    OpSpec("Conv2DBackpropInput",
           lambda dy, w: gg.square(gg.raw_ops.conv2d_backprop_input(dy, w, (1, 4, 5, 4), (1, "same", (1, 2), 2))),
           [(1, 2, 5, 4), (2, 2, 2, 2)], label="groups_squared"),
    OpSpec("Conv2DBackpropFilter", lambda x, dy: gg.raw_ops.conv2d_backprop_filter(x, dy, (3, 2, 2, 2), (2, 1, 1, 1)),
           [(1, 2, 5, 6), (1, 3, 3, 4)]),
    OpSpec("Conv2DBackpropFilter",
           lambda x, dy: gg.square(gg.raw_ops.conv2d_backprop_filter(x, dy, (2, 2, 2, 2), (1, "same", (1, 2), 2))),
           [(1, 4, 5, 4), (1, 2, 5, 4)], label="groups_squared"),
    OpSpec("MaxPool2D", lambda x: gg.square(gg.max_pool2d(x, **POOL_ARGS)), [POOL_SHAPE],
           draw=distinct(POOL_SHAPE), label="overlapping_padded"),
    OpSpec("MaxPool2D", lambda x: gg.max_pool2d(x, 2), [(1, 2, 4, 5)], draw=distinct((1, 2, 4, 5))),
    OpSpec("MaxPool2DGrad",
           lambda dy: gg.square(gg.raw_ops.max_pool2d_grad(pool_input(dy.device), dy, **POOL_ARGS)), [POOLED_SHAPE]),
    OpSpec("AvgPool2D", lambda x: gg.square(gg.avg_pool2d(x, **POOL_ARGS)), [POOL_SHAPE],
           label="overlapping_padded"),
    OpSpec("AvgPool2D", lambda x: gg.avg_pool2d(x, 2), [(1, 2, 4, 5)]),
    OpSpec("AvgPool2DGrad", lambda dy: gg.square(gg.raw_ops.avg_pool2d_grad(dy, POOL_SHAPE, **POOL_ARGS)),
           [POOLED_SHAPE]),
    # the mask of a seed is float32's for float16 and bfloat16 too (float64 draws its own): checked against float32
    OpSpec("Dropout", lambda x: gg.square(gg.dropout(x, 0.4, seed=1)), [(3, 5)], low_reference="float32"),
    OpSpec("Gather", lambda w: gg.square(gg.embedding(IDS, w)), [(4, 3)], label="embedding"),
    OpSpec("Normalize", lambda x, w, b: gg.layer_norm(x, 4, w, b), [(3, 4), (4,), (4,)], label="layer_norm"),
    # its gradient subtracts two means of dy from dy (cancellation): float16 reached 7.3 eps of the 8
    OpSpec("Normalize", lambda x: gg.square(gg.layer_norm(x, (2, 3))), [(2, 2, 3)], label="layer_norm_2d",
           low_factor=2.0),
    OpSpec("Normalize", batch_norm(True), [(4, 3), (3,), (3,)], label="batch_norm_nc"),
    OpSpec("Normalize", batch_norm(True), [(2, 3, 2, 2), (3,), (3,)], label="batch_norm_nchw"),
    OpSpec("Mul", batch_norm(False), [(2, 3, 2, 2), (3,), (3,)], label="batch_norm_eval"),
]
