"""Attention: ``scaled_dot_product_attention`` (``gg.nn.functional``) and ``MultiHeadAttention``.

Both are composed of gpugrad ops (matmul, the fused row op ``masked_softmax``,
dropout), each of which ``gg.function`` captures as one step.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..tensor import Tensor, ensure_tensor
from ._common import child_seed, float_dtype, integer, make_variable, name_of, real
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..random import Generator
    from .init import Seed

__all__ = ["scaled_dot_product_attention", "MultiHeadAttention"]

_CAUSAL: dict = {}  # (L, S, device) -> the constant causal keep-mask, made once per device


def _causal_mask(length, source, device):
    """The (L, S) bool tensor ``tril(ones)`` on ``device`` (PyTorch's top-left causal alignment)."""
    key = (length, source, device)
    mask = _CAUSAL.get(key)
    if mask is None:
        if len(_CAUSAL) > 64:  # a few shapes are in use at a time
            _CAUSAL.clear()
        mask = _CAUSAL[key] = Tensor(np.tril(np.ones((length, source), dtype=bool)), None, device)
    return mask


def scaled_dot_product_attention(q: TensorLike, k: TensorLike, v: TensorLike, mask: TensorLike | None = None,
                                 is_causal: bool = False, dropout_rate: float = 0.0,
                                 scale: float | None = None, seed: int | Generator | None = None) -> Tensor:
    """Attention ``softmax(q @ k^T * scale + mask) @ v``, as PyTorch's
    ``torch.nn.functional.scaled_dot_product_attention``.

    ``q`` is (..., L, E), ``k`` (..., S, E), ``v`` (..., S, Ev); the leading (batch,
    head) dims broadcast; the result is (..., L, Ev). ``mask`` broadcasts to (..., L, S):
    a bool mask keeps the entries where it is True (PyTorch's ``attn_mask`` of dtype
    bool), a float mask is added to the scores (``-inf`` drops an entry). ``is_causal``
    keeps entry (i, j) where j <= i (PyTorch's top-left ``tril`` of an L x S matrix) and
    cannot be combined with ``mask`` (PyTorch raises too). ``scale`` defaults to
    ``1 / sqrt(E)``. ``dropout_rate`` drops attention weights (only where it is above 0;
    ``seed`` as :func:`gpugrad.dropout`). A query row that keeps no key gives zeros
    (PyTorch's ``_safe_softmax``). The masked softmax and its gradient are one fused
    row op each (``MaskedSoftmax``, ``MaskedSoftmaxGrad``).

    Example:
        >>> import gpugrad as gg
        >>> q = k = gg.tensor([[[1.0, 0.0], [0.0, 1.0]]])
        >>> v = gg.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> gg.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()[0, 0].tolist()
        [1.0, 2.0]
    """
    q, k, v = (t if isinstance(t, Tensor) else ensure_tensor(t) for t in (q, k, v))
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ShapeError(f"scaled_dot_product_attention needs q, k, v of at least 2 dims (..., L, E), got "
                         f"{q.shape}, {k.shape}, {v.shape}")
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ShapeError(f"scaled_dot_product_attention needs q (..., L, E), k (..., S, E) and v (..., S, Ev), got "
                         f"{q.shape}, {k.shape}, {v.shape}")
    if is_causal and mask is not None:
        raise ValueError("scaled_dot_product_attention takes a mask or is_causal=True, not both (as PyTorch)")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scores = ops.multiply(ops.matmul(q, ops.swapaxes(k, -1, -2)), float(scale))
    keep = None
    if is_causal:
        length, source = q.shape[-2], k.shape[-2]
        keep = _causal_mask(length, source, q.device)
    elif mask is not None:
        mask = mask if isinstance(mask, Tensor) else ensure_tensor(mask, like=q)
        if mask.dtype == np.bool_:
            keep = mask
        else:  # additive, in the scores' dtype (PyTorch requires the query's dtype)
            scores = ops.add(scores, mask if mask.dtype == scores.dtype else ops.cast(mask, scores.dtype))
    weights = ops.masked_softmax(scores, keep)
    if dropout_rate:
        weights = ops.dropout(weights, dropout_rate, seed=seed)
    return ops.matmul(weights, v)



class MultiHeadAttention(Module):
    """Multi-head attention over batch-first sequences, as PyTorch's ``nn.MultiheadAttention(batch_first=True)``.

    ``query`` is (N, L, embed_dim), ``key`` and ``value`` (N, S, embed_dim) (both
    default to ``query``: self-attention). Each is projected by its own
    (embed_dim, embed_dim) kernel (glorot uniform, as PyTorch's xavier-uniform
    ``in_proj_weight``; biases zeros when ``bias``), split into ``num_heads`` heads of
    ``embed_dim // num_heads``, attended by :func:`scaled_dot_product_attention`, joined and
    projected by ``out_kernel``. ``mask`` is as that function's (bool True = attend, as
    Keras' ``attention_mask``, NOT PyTorch's module, whose bool True masks out; or an
    additive float mask), broadcast over heads as (N, 1, L, S) or (L, S); ``is_causal``
    (or ``causal=True`` at construction) keeps each position from attending to later
    ones. ``dropout`` drops attention weights while training. Returns the output only
    (as Keras' ``MultiHeadAttention``; PyTorch's also returns the weights).

    Example:
        >>> import gpugrad as gg
        >>> mha = gg.nn.MultiHeadAttention(8, 2, causal=True, seed=0)
        >>> mha(gg.ones((3, 5, 8))).shape
        (3, 5, 8)
    """

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True, dropout: float = 0.0,
                 causal: bool = False, dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.embed_dim = integer(embed_dim, "embed_dim", "MultiHeadAttention", 1)
        self.num_heads = integer(num_heads, "num_heads", "MultiHeadAttention", 1)
        if self.embed_dim % self.num_heads:
            raise ValueError(f"MultiHeadAttention: embed_dim {self.embed_dim} is not divisible by num_heads "
                             f"{self.num_heads}")
        self.dropout = real(dropout, "dropout", "MultiHeadAttention", 0.0, 1.0, high_open=True)
        self.causal = bool(causal)
        dtype = float_dtype(dtype, "MultiHeadAttention")
        rng = child_seed(seed)
        shape = (self.embed_dim, self.embed_dim)

        def kernel(part):
            return make_variable("glorot_uniform", shape, dtype, device, rng, name_of(name, f"{part}_kernel"))

        def bias_of(part):
            return make_variable("zeros", (self.embed_dim,), dtype, device, rng,
                                 name_of(name, f"{part}_bias")) if bias else None
        self.q_kernel, self.q_bias = kernel("q"), bias_of("q")
        self.k_kernel, self.k_bias = kernel("k"), bias_of("k")
        self.v_kernel, self.v_bias = kernel("v"), bias_of("v")
        self.out_kernel, self.out_bias = kernel("out"), bias_of("out")
        self.name = name

    def _heads(self, x, kernel, bias):
        """(N, T, E) projected and split to (N, heads, T, E / heads)."""
        n, t = x.shape[0], x.shape[1]
        y = ops.dense(x, kernel, bias)
        return ops.transpose(ops.reshape(y, (n, t, self.num_heads, self.embed_dim // self.num_heads)), (0, 2, 1, 3))

    def forward(self, query: TensorLike, key: TensorLike | None = None, value: TensorLike | None = None,
                mask: TensorLike | None = None, is_causal: bool = False) -> Tensor:
        query = query if isinstance(query, Tensor) else ensure_tensor(query)
        key = query if key is None else key
        value = key if value is None else value
        if query.ndim != 3 or query.shape[-1] != self.embed_dim:
            raise ShapeError(f"MultiHeadAttention needs a batch-first query (N, L, {self.embed_dim}), "
                             f"got {query.shape}")
        q = self._heads(query, self.q_kernel, self.q_bias)
        k = self._heads(key, self.k_kernel, self.k_bias)
        v = self._heads(value, self.v_kernel, self.v_bias)
        if mask is not None:
            mask = mask if isinstance(mask, Tensor) else ensure_tensor(mask, like=query)
            if mask.ndim == 3:  # (N, L, S): one mask for every head
                mask = ops.expand_dims(mask, 1)
        rate = self.dropout if self.training else 0.0
        out = scaled_dot_product_attention(q, k, v, mask, is_causal or self.causal, rate)
        n, length = out.shape[0], out.shape[2]
        out = ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (n, length, self.embed_dim))
        return ops.dense(out, self.out_kernel, self.out_bias)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, bias={self.q_bias is not None}, "
                f"dropout={self.dropout}, causal={self.causal}")
