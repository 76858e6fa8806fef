"""The network ops of :mod:`gpugrad.ops` under one roof, as ``torch.nn.functional`` / ``tf.nn``.

Only the ops this build of gpugrad has are exported (``__all__`` lists them),
so this module imports whichever of the later network ops exist.

Example:
    >>> import gpugrad as gg
    >>> from gpugrad.nn import functional as F
    >>> F.relu(gg.tensor([-1.0, 2.0])).numpy().tolist()
    [0.0, 2.0]
    >>> F.softmax_cross_entropy(gg.tensor([[0.0, 0.0]]), [1]).item() == gg.log(gg.tensor(2.0)).item()
    True
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ops as _ops

NAMES = (
    # activations
    "relu", "leaky_relu", "elu", "gelu", "sigmoid", "tanh", "softplus",
    # softmax and losses
    "softmax", "log_softmax", "logsumexp", "softmax_cross_entropy", "sigmoid_cross_entropy", "mse",
    "nll_loss", "binary_cross_entropy", "huber", "smooth_l1", "kl_div", "cosine_similarity",
    # layers' ops
    "matmul", "dense", "conv2d", "max_pool2d", "avg_pool2d", "dropout", "embedding", "layer_norm", "batch_norm",
)

__all__ = [name for name in NAMES if hasattr(_ops, name)]
globals().update({name: getattr(_ops, name) for name in __all__})
from .attention import scaled_dot_product_attention  # noqa: E402 - composed of the ops above
__all__ += ["masked_softmax", "scaled_dot_product_attention"]
masked_softmax = _ops.masked_softmax

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    from ..ops import (avg_pool2d, batch_norm, binary_cross_entropy, conv2d, cosine_similarity, dense, dropout, elu,
                       embedding, gelu, huber, kl_div, layer_norm, leaky_relu, log_softmax, logsumexp, matmul,
                       max_pool2d, mse, nll_loss, relu, sigmoid, sigmoid_cross_entropy, smooth_l1, softmax,
                       softmax_cross_entropy, softplus, tanh, masked_softmax)
    from .attention import scaled_dot_product_attention
    __all__ = [
        "relu", "leaky_relu", "elu", "gelu", "sigmoid", "tanh", "softplus", "softmax", "log_softmax", "logsumexp",
        "softmax_cross_entropy", "sigmoid_cross_entropy", "mse", "nll_loss", "binary_cross_entropy", "huber",
        "smooth_l1", "kl_div", "cosine_similarity", "matmul", "dense", "conv2d", "max_pool2d",
        "avg_pool2d", "dropout", "embedding", "layer_norm", "batch_norm", "masked_softmax",
        "scaled_dot_product_attention"
    ]
