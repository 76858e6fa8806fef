"""``LayerNorm`` and ``BatchNorm`` (``gg.layer_norm``, ``gg.batch_norm``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import float_dtype, integer, make_variable, name_of, network_op, real
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, Shape, TensorLike
    from ..tensor import Tensor

__all__ = ["LayerNorm", "BatchNorm"]


def _shape(normalized_shape):
    """``normalized_shape`` (an int or a sequence of ints, each >= 1) as a tuple."""
    if not isinstance(normalized_shape, (tuple, list)):
        return (integer(normalized_shape, "normalized_shape", "LayerNorm", 1),)
    if not normalized_shape:
        raise ValueError("LayerNorm: normalized_shape names at least one axis, got ()")
    return tuple(integer(s, "normalized_shape", "LayerNorm", 1) for s in normalized_shape)


class LayerNorm(Module):
    """Normalise over the last ``len(normalized_shape)`` axes, then scale by ``weight`` and shift by ``bias``.

    ``(x - mean) / sqrt(var + eps) * weight + bias``, mean and (biased)
    variance over the normalised axes; ``weight`` starts at ones, ``bias`` at
    zeros; ``elementwise_affine=False`` has neither.

    Example:
        >>> import gpugrad as gg
        >>> ln = gg.nn.LayerNorm(4)
        >>> ln.weight.shape, ln(gg.ones((2, 4))).shape
        ((4,), (2, 4))
    """

    def __init__(self, normalized_shape: Shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 dtype: DTypeLike = None, device: DeviceLike = None, name: str | None = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = real(eps, "eps", "LayerNorm", 0.0)
        dtype = float_dtype(dtype, "LayerNorm")
        if elementwise_affine:
            self.weight = make_variable("ones", self.normalized_shape, dtype, device, None, name_of(name, "weight"))
            self.bias = make_variable("zeros", self.normalized_shape, dtype, device, None, name_of(name, "bias"))
        else:
            self.weight = self.bias = None
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        return network_op("layer_norm")(x, self.normalized_shape, self.weight, self.bias, eps=self.eps)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


class BatchNorm(Module):
    """Batch normalisation over every axis but the channels (axis 1): (N, C) or (N, C, H, W) input.

    While training it normalises with the batch's statistics and updates
    ``running_mean`` and ``running_var`` (non-trainable Variables) as
    ``running = (1 - momentum) * running + momentum * batch`` (PyTorch's
    convention; the running variance takes the unbiased batch variance); in
    evaluation mode it normalises with the running statistics.

    Example:
        >>> import gpugrad as gg
        >>> bn = gg.nn.BatchNorm(3)
        >>> [name for name, _ in bn.named_variables()]
        ['weight', 'bias', 'running_mean', 'running_var']
        >>> len(bn.trainable_variables)
        2
    """

    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5, affine: bool = True,
                 dtype: DTypeLike = None, device: DeviceLike = None, name: str | None = None) -> None:
        super().__init__()
        self.num_features = integer(num_features, "num_features", "BatchNorm", 1)
        self.momentum = real(momentum, "momentum", "BatchNorm", 0.0, 1.0)
        self.eps = real(eps, "eps", "BatchNorm", 0.0)
        dtype = float_dtype(dtype, "BatchNorm")
        shape = (self.num_features,)
        if affine:
            self.weight = make_variable("ones", shape, dtype, device, None, name_of(name, "weight"))
            self.bias = make_variable("zeros", shape, dtype, device, None, name_of(name, "bias"))
        else:
            self.weight = self.bias = None
        self.running_mean = make_variable("zeros", shape, dtype, device, None, name_of(name, "running_mean"),
                                          trainable=False)
        self.running_var = make_variable("ones", shape, dtype, device, None, name_of(name, "running_var"),
                                         trainable=False)
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        return network_op("batch_norm")(x, self.running_mean, self.running_var, self.weight, self.bias,
                                        training=self.training, momentum=self.momentum, eps=self.eps)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.num_features}, momentum={self.momentum}, eps={self.eps}, affine={self.weight is not None}"
