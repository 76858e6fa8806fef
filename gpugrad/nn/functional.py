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

from typing import TYPE_CHECKING, Sequence

import numpy as _np

from .. import ops as _ops
from ..tensor import ensure_tensor as _ensure_tensor

if TYPE_CHECKING:
    from .._typing import TensorLike
    from ..tensor import Tensor

NAMES = (
    # activations
    "relu", "leaky_relu", "elu", "gelu", "sigmoid", "tanh", "softplus",
    # softmax and losses
    "softmax", "log_softmax", "logsumexp", "softmax_cross_entropy", "sigmoid_cross_entropy", "mse",
    "nll_loss", "binary_cross_entropy", "huber", "smooth_l1", "kl_div", "cosine_similarity",
    # layers' ops
    "matmul", "dense", "conv2d", "max_pool2d", "avg_pool2d", "dropout", "embedding", "layer_norm", "batch_norm",
    # convolution and pooling
    "conv1d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "avg_pool1d", "max_unpool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "interpolate", "group_norm",
    "max_unpool1d", "adaptive_max_pool1d", "adaptive_max_pool2d",
)

__all__ = [name for name in NAMES if hasattr(_ops, name)]
globals().update({name: getattr(_ops, name) for name in __all__})
from .attention import scaled_dot_product_attention  # noqa: E402 - composed of the ops above
__all__ += ["masked_softmax", "scaled_dot_product_attention"]
masked_softmax = _ops.masked_softmax

_TORCH_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad(x: TensorLike, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad ``x`` in PyTorch's form (``torch.nn.functional.pad``): ``pad`` lists (before, after) widths
    starting from the LAST axis, ``(left, right, top, bottom, ...)``.

    ``mode`` is ``"constant"`` (``value``, default 0; a negative width crops,
    as PyTorch), ``"reflect"`` (each width below the axis's length),
    ``"replicate"`` or ``"circular"`` (each width at most the axis's length);
    these are :func:`gpugrad.pad`'s ``"constant"``, ``"reflect"``, ``"edge"``
    and ``"wrap"`` (NumPy's names), which this calls.

    Example:
        >>> import gpugrad as gg
        >>> from gpugrad.nn import functional as F
        >>> x = gg.tensor([[[1.0, 2.0, 3.0]]])
        >>> F.pad(x, (2, 1), mode="reflect").numpy().tolist()
        [[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]]
        >>> F.pad(x, (1, -1), value=9.0).numpy().tolist()
        [[[9.0, 1.0, 2.0]]]
        >>> F.pad(x, (0, 0, 1, 0)).shape
        (1, 2, 3)
    """
    t = _ensure_tensor(x)
    if mode not in _TORCH_PAD_MODES:
        raise ValueError(f"pad: mode is one of {tuple(_TORCH_PAD_MODES)}, not {mode!r}")
    if not isinstance(pad, (tuple, list)) or len(pad) % 2 or len(pad) // 2 > t.ndim or any(
            isinstance(w, bool) or not isinstance(w, (int, _np.integer)) for w in pad):
        raise ValueError(f"pad: pad is an even number (at most 2 * ndim = {2 * t.ndim}) of ints, last axis "
                         f"first, not {pad!r}")
    if mode != "constant" and value:
        raise ValueError(f"pad: mode={mode!r} takes no value (got {value!r})")
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)][::-1]
    pairs = [(0, 0)] * (t.ndim - len(pairs)) + pairs
    for (before, after), n in zip(pairs, t.shape):
        widest = max(before, after)
        if mode != "constant" and min(before, after) < 0:
            raise ValueError(f"pad: mode={mode!r} takes no negative width, got {pad!r}")
        if (mode == "reflect" and widest >= n) or (mode in ("replicate", "circular") and widest > 0 and (
                n == 0 or (mode == "circular" and widest > n))):
            raise ValueError(f"pad: widths {pad!r} too large for mode={mode!r} and x of shape {t.shape} "
                             f"(reflect: each below the axis's length; circular: at most it)")
    if any(b < 0 or a < 0 for b, a in pairs):  # constant mode: a negative width crops
        t = _ops.getitem(t, tuple(slice(max(-b, 0), n - max(-a, 0)) for (b, a), n in zip(pairs, t.shape)))
        pairs = [(max(b, 0), max(a, 0)) for b, a in pairs]
    if mode == "constant":
        return _ops.pad(t, pairs, constant_values=0.0 if value is None else value)
    return _ops.pad(t, pairs, mode=_TORCH_PAD_MODES[mode])


__all__.append("pad")

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    from ..ops import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
                       avg_pool1d, avg_pool2d, batch_norm, binary_cross_entropy, conv1d, conv2d, conv_transpose1d,
                       conv_transpose2d, cosine_similarity, dense, dropout, elu, embedding, gelu, group_norm, huber,
                       interpolate, kl_div, layer_norm, leaky_relu, log_softmax, logsumexp, masked_softmax, matmul,
                       max_pool1d, max_pool2d, max_unpool1d, max_unpool2d, mse, nll_loss, relu, sigmoid,
                       sigmoid_cross_entropy, smooth_l1, softmax, softmax_cross_entropy, softplus, tanh)
    from .attention import scaled_dot_product_attention
    __all__ = [
        "relu", "leaky_relu", "elu", "gelu", "sigmoid", "tanh", "softplus", "softmax", "log_softmax", "logsumexp",
        "softmax_cross_entropy", "sigmoid_cross_entropy", "mse", "nll_loss", "binary_cross_entropy", "huber",
        "smooth_l1", "kl_div", "cosine_similarity", "matmul", "dense", "conv2d", "max_pool2d", "avg_pool2d",
        "dropout", "embedding", "layer_norm", "batch_norm", "conv1d", "conv_transpose1d", "conv_transpose2d",
        "max_pool1d", "avg_pool1d", "max_unpool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "interpolate",
        "group_norm", "max_unpool1d", "adaptive_max_pool1d", "adaptive_max_pool2d", "masked_softmax",
        "scaled_dot_product_attention", "pad"
    ]
