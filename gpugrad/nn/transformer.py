"""The parts of a small transformer: ``RMSNorm``, positional embeddings, a pre-norm ``TransformerBlock``."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..errors import ShapeError
from ..tensor import Tensor
from ._common import child_seed, float_dtype, integer, make_variable, name_of, real
from .attention import MultiHeadAttention
from .dropout import Dropout
from .linear import Dense
from .module import Module
from .normalization import LayerNorm

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from .init import Seed

__all__ = ["RMSNorm", "PositionalEmbedding", "SinusoidalPositionalEmbedding", "TransformerBlock"]


class RMSNorm(Module):
    """``x / sqrt(mean(x ** 2) + eps) * weight`` over the last axis, as PyTorch's ``nn.RMSNorm(dim)``.

    ``eps`` defaults (None) to the machine epsilon of ``x``'s dtype, as PyTorch's;
    ``weight`` starts at ones (none when ``elementwise_affine=False``).

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 4) for v in gg.nn.RMSNorm(2)(gg.tensor([[3.0, 4.0]])).numpy()[0].tolist()]
        [0.8485, 1.1314]
    """

    def __init__(self, dim: int, eps: float | None = None, elementwise_affine: bool = True,
                 dtype: DTypeLike = None, device: DeviceLike = None, name: str | None = None) -> None:
        super().__init__()
        self.dim = integer(dim, "dim", "RMSNorm", 1)
        self.eps = None if eps is None else real(eps, "eps", "RMSNorm", 0.0)
        dtype = float_dtype(dtype, "RMSNorm")
        self.weight = make_variable("ones", (self.dim,), dtype, device, None, name_of(name, "weight")) \
            if elementwise_affine else None
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        x = x if isinstance(x, Tensor) else ops.identity(x)
        if x.ndim == 0 or x.shape[-1] != self.dim:
            raise ShapeError(f"RMSNorm({self.dim}) needs inputs of shape (..., {self.dim}), got {x.shape}")
        eps = self.eps if self.eps is not None else float(np.finfo(np.dtype(x.dtype.name if x.dtype.name != "bfloat16"
                                                                              else "float32")).eps)
        y = ops.multiply(x, ops.rsqrt(ops.add(ops.mean(ops.square(x), axis=-1, keepdims=True), eps)))
        return y if self.weight is None else ops.multiply(y, self.weight)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class PositionalEmbedding(Module):
    """A learned position vector added to each step of (N, T, dim) inputs (GPT-2's ``wpe``), T <= max_len.

    ``weight`` (max_len, dim) starts normal with standard deviation 0.02 (GPT-2's).

    Example:
        >>> import gpugrad as gg
        >>> pe = gg.nn.PositionalEmbedding(16, 4, seed=0)
        >>> pe(gg.zeros((2, 5, 4))).shape
        (2, 5, 4)
    """

    def __init__(self, max_len: int, dim: int, dtype: DTypeLike = None, device: DeviceLike = None,
                 seed: Seed = None, name: str | None = None) -> None:
        super().__init__()
        self.max_len = integer(max_len, "max_len", "PositionalEmbedding", 1)
        self.dim = integer(dim, "dim", "PositionalEmbedding", 1)
        dtype = float_dtype(dtype, "PositionalEmbedding")

        def init(shape, dtype=None, seed=None):
            from .init import normal
            return normal(shape, stddev=0.02, dtype=dtype, seed=seed)
        self.weight = make_variable(init, (self.max_len, self.dim), dtype, device, child_seed(seed),
                                    name_of(name, "weight"))
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        x = x if isinstance(x, Tensor) else ops.identity(x)
        _check_steps(x, self.max_len, self.dim, "PositionalEmbedding")
        return ops.add(x, self.weight[:x.shape[-2]])

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.max_len}, {self.dim}"


def _check_steps(x, max_len, dim, layer):
    if x.ndim < 2 or x.shape[-1] != dim or x.shape[-2] > max_len:
        raise ShapeError(f"{layer} needs inputs of shape (..., T, {dim}) with T <= {max_len}, got {x.shape}")


def sinusoids(length: int, dim: int) -> np.ndarray:
    """The (length, dim) table of "Attention is all you need" (Vaswani et al., 2017), float64:
    ``sin(p / 10000^(2i/dim))`` at even column 2i, ``cos`` of the same at 2i + 1.

    Example:
        >>> sinusoids(2, 4)[1].round(4).tolist()
        [0.8415, 0.5403, 0.01, 1.0]
    """
    position = np.arange(length, dtype=np.float64)[:, None]
    rate = np.exp(-math.log(10000.0) * np.arange(0, dim, 2, dtype=np.float64) / dim)
    table = np.zeros((length, dim))
    table[:, 0::2] = np.sin(position * rate)
    table[:, 1::2] = np.cos(position * rate)[:, :dim // 2]
    return table


class SinusoidalPositionalEmbedding(Module):
    """The fixed sine/cosine position table of ``sinusoids`` added to (..., T, dim) inputs (no weights).

    Example:
        >>> import gpugrad as gg
        >>> pe = gg.nn.SinusoidalPositionalEmbedding(16, 4)
        >>> [round(v, 3) for v in pe(gg.zeros((1, 2, 4))).numpy()[0, 1].tolist()]
        [0.841, 0.54, 0.01, 1.0]
    """

    def __init__(self, max_len: int, dim: int) -> None:
        super().__init__()
        self.max_len = integer(max_len, "max_len", "SinusoidalPositionalEmbedding", 1)
        self.dim = integer(dim, "dim", "SinusoidalPositionalEmbedding", 1)
        self._table = sinusoids(self.max_len, self.dim)
        self._tensors: dict = {}  # (dtype, device) -> the table as a constant tensor

    def forward(self, x: TensorLike) -> Tensor:
        x = x if isinstance(x, Tensor) else ops.identity(x)
        _check_steps(x, self.max_len, self.dim, "SinusoidalPositionalEmbedding")
        key = (x.dtype, x.device)
        table = self._tensors.get(key)
        if table is None:
            table = self._tensors[key] = Tensor(self._table.astype(x.dtype), None, x.device)
        return ops.add(x, table[:x.shape[-2]])

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.max_len}, {self.dim}"


class TransformerBlock(Module):
    """A pre-norm transformer block (GPT-2's): ``x + attn(norm1(x))``, then ``x + mlp(norm2(x))``.

    ``attn`` is :class:`MultiHeadAttention` (``causal`` for a decoder), ``mlp`` is
    ``Dense(d_model, mlp_ratio * d_model)``, GELU (exact, erf form, as PyTorch's default),
    ``Dense`` back to ``d_model``; ``norm`` is ``"layer"`` (LayerNorm) or ``"rms"`` (RMSNorm).
    ``dropout`` applies to the attention weights and to both residual branches while training.
    Inputs are batch-first (N, T, d_model).

    Example:
        >>> import gpugrad as gg
        >>> block = gg.nn.TransformerBlock(16, 4, causal=True, seed=0)
        >>> block(gg.ones((2, 8, 16))).shape
        (2, 8, 16)
    """

    def __init__(self, d_model: int, num_heads: int, mlp_ratio: int = 4, dropout: float = 0.0, causal: bool = True,
                 norm: str = "layer", dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        if norm not in ("layer", "rms"):
            raise ValueError(f"TransformerBlock: norm is 'layer' or 'rms', not {norm!r}")
        d_model = integer(d_model, "d_model", "TransformerBlock", 1)
        hidden = d_model * integer(mlp_ratio, "mlp_ratio", "TransformerBlock", 1)
        rng = child_seed(seed)
        make_norm = (lambda: LayerNorm(d_model, dtype=dtype, device=device)) if norm == "layer" else \
            (lambda: RMSNorm(d_model, dtype=dtype, device=device))
        self.norm1 = make_norm()
        self.attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, causal=causal, dtype=dtype,
                                       device=device, seed=rng)
        self.norm2 = make_norm()
        self.fc1 = Dense(d_model, hidden, dtype=dtype, device=device, seed=rng)
        self.fc2 = Dense(hidden, d_model, dtype=dtype, device=device, seed=rng)
        self.drop = Dropout(dropout) if dropout else None
        self.name = name

    def _residual(self, y):
        return y if self.drop is None else self.drop(y)

    def forward(self, x: TensorLike, mask: TensorLike | None = None) -> Tensor:
        x = ops.add(x, self._residual(self.attn(self.norm1(x), mask=mask)))
        return ops.add(x, self._residual(self.fc2(ops.gelu(self.fc1(self.norm2(x))))))

    if TYPE_CHECKING:
        __call__ = forward
