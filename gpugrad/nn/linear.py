"""``Dense`` (fully connected) and ``Flatten``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ops
from ._common import child_seed, float_dtype, get_activation, integer, make_variable, name_of
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..tensor import Tensor
    from ._common import Activation, Initializer
    from .init import Seed

__all__ = ["Dense", "Flatten"]

_FUSED = ((ops.relu, "relu"), (ops.tanh, "tanh"), (ops.sigmoid, "sigmoid"))  # the Dense op applies these itself


class Dense(Module):
    """``activation(x @ kernel + bias)`` with ``kernel`` of shape (in_features, out_features).

    ``x`` has shape (..., in_features). The kernel is laid out as Keras' (the
    transpose of PyTorch's ``Linear.weight``); ``kernel_init`` defaults to
    glorot uniform and ``bias_init`` to zeros (functions of
    :mod:`gpugrad.nn.init` or their names). ``seed`` (an int or a NumPy
    Generator) makes the initial weights reproducible.

    Example:
        >>> import gpugrad as gg
        >>> layer = gg.nn.Dense(3, 2, activation="relu", seed=0)
        >>> layer.kernel.shape, layer.bias.shape, layer(gg.ones((5, 3))).shape
        ((3, 2), (2,), (5, 2))
    """

    def __init__(self, in_features: int, out_features: int, activation: Activation = None, use_bias: bool = True,
                 kernel_init: Initializer = "glorot_uniform", bias_init: Initializer = "zeros",
                 dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.in_features = integer(in_features, "in_features", "Dense", 1)
        self.out_features = integer(out_features, "out_features", "Dense", 1)
        dtype = float_dtype(dtype, "Dense")
        rng = child_seed(seed)
        self.kernel = make_variable(kernel_init, (self.in_features, self.out_features), dtype, device, rng,
                                    name_of(name, "kernel"))
        self.bias = make_variable(bias_init, (self.out_features,), dtype, device, rng,
                                  name_of(name, "bias")) if use_bias else None
        self.activation = get_activation(activation)
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        activation = self.activation
        if activation is None:
            return ops.dense(x, self.kernel, self.bias)
        for fn, name in _FUSED:
            if activation is fn:  # one op: the bias and activation applied in place
                return ops.dense(x, self.kernel, self.bias, activation=name)
        return activation(ops.dense(x, self.kernel, self.bias))

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        act = getattr(self.activation, "__name__", self.activation)
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"use_bias={self.bias is not None}, activation={act}")


class Flatten(Module):
    """Reshape (N, d1, d2, ...) to (N, d1 * d2 * ...): every axis from ``start_axis`` on becomes one.

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.Flatten()(gg.ones((2, 3, 4, 5))).shape
        (2, 60)
    """

    def __init__(self, start_axis: int = 1) -> None:
        super().__init__()
        self.start_axis = integer(start_axis, "start_axis", "Flatten")

    def forward(self, x: Tensor) -> Tensor:
        start = self.start_axis % x.ndim if x.ndim else 0
        return ops.reshape(x, tuple(x.shape[:start]) + (-1,))

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"start_axis={self.start_axis}"
