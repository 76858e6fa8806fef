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

if TYPE_CHECKING:  # the update above for type checkers, sorted: python -m gpugrad._tools.declared_names writes it
    from .ops import (
        abs_grad,
        arctan_grad,
        avg_pool2d_grad,
        cbrt_grad,
        clip_grad,
        conv2d_backprop_filter,
        conv2d_backprop_input,
        cosh_grad,
        div_grad,
        elu_grad,
        exp_grad,
        gelu_grad,
        getitem_grad,
        leaky_relu_grad,
        log_grad,
        log_sigmoid_grad,
        masked_softmax_grad,
        max_pool2d_grad,
        maximum_grad,
        minimum_grad,
        pow_grad,
        reciprocal_grad,
        relu_grad,
        rsqrt_grad,
        selu_grad,
        sigmoid_grad,
        silu_grad,
        sinh_grad,
        softmax_cross_entropy_grad,
        softplus_grad,
        softsign_grad,
        sqrt_grad,
        square_grad,
        tan_grad,
        tanh_grad,
    )
    __all__ = [
        "abs_grad",
        "arctan_grad",
        "avg_pool2d_grad",
        "cbrt_grad",
        "clip_grad",
        "conv2d_backprop_filter",
        "conv2d_backprop_input",
        "cosh_grad",
        "div_grad",
        "elu_grad",
        "exp_grad",
        "gelu_grad",
        "getitem_grad",
        "leaky_relu_grad",
        "log_grad",
        "log_sigmoid_grad",
        "masked_softmax_grad",
        "max_pool2d_grad",
        "maximum_grad",
        "minimum_grad",
        "pow_grad",
        "reciprocal_grad",
        "relu_grad",
        "rsqrt_grad",
        "selu_grad",
        "sigmoid_grad",
        "silu_grad",
        "sinh_grad",
        "softmax_cross_entropy_grad",
        "softplus_grad",
        "softsign_grad",
        "sqrt_grad",
        "square_grad",
        "tan_grad",
        "tanh_grad",
    ]
