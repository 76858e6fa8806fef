"""The fused gradient ops and the backward convolutions, as TensorFlow's ``tf.raw_ops``.

Gradient rules call them: each is an op type of its own (``TanhGrad``,
``Conv2DBackpropInput``, ...), one fused CUDA kernel on a GPU and NumPy on the
CPU, with a registered gradient of its own, so second order runs through
them. A user's rule may call them too; ``dy`` is never written into unless
the rule is registered with ``donates_dy=True``.

Example:
    >>> import gpugrad as gg
    >>> gg.raw_ops.tanh_grad(gg.tensor([0.5]), gg.tensor([2.0])).numpy().tolist()  # dy (1 - y^2)
    [1.5]
"""
from typing import TYPE_CHECKING

from . import ops as _ops

__all__ = list(_ops.RAW_OPS)
globals().update({name: getattr(_ops, name) for name in __all__})

if TYPE_CHECKING:  # the update above, spelled out for type checkers (tests/test_typing.py checks it)
    from .ops import (
        div_grad, pow_grad, abs_grad, maximum_grad, minimum_grad, clip_grad, square_grad, sqrt_grad, rsqrt_grad,
        reciprocal_grad, exp_grad, log_grad, cbrt_grad, tan_grad, arctan_grad, sinh_grad, cosh_grad, tanh_grad,
        sigmoid_grad, relu_grad, leaky_relu_grad, elu_grad, softplus_grad, softsign_grad, silu_grad,
        log_sigmoid_grad, selu_grad, gelu_grad, getitem_grad, softmax_cross_entropy_grad, conv2d_backprop_input,
        conv2d_backprop_filter, max_pool2d_grad, avg_pool2d_grad, masked_softmax_grad
    )
    __all__ = [
        "div_grad", "pow_grad", "abs_grad", "maximum_grad", "minimum_grad", "clip_grad", "square_grad", "sqrt_grad",
        "rsqrt_grad", "reciprocal_grad", "exp_grad", "log_grad", "cbrt_grad", "tan_grad", "arctan_grad",
        "sinh_grad", "cosh_grad", "tanh_grad", "sigmoid_grad", "relu_grad", "leaky_relu_grad", "elu_grad",
        "softplus_grad", "softsign_grad", "silu_grad", "log_sigmoid_grad", "selu_grad", "gelu_grad", "getitem_grad",
        "softmax_cross_entropy_grad", "conv2d_backprop_input", "conv2d_backprop_filter", "max_pool2d_grad",
        "avg_pool2d_grad", "masked_softmax_grad"
    ]
