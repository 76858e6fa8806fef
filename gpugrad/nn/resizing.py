"""``Upsample`` (``gg.interpolate``), ``AdaptiveAvgPool2D`` (``gg.adaptive_avg_pool2d``) and ``GroupNorm``
(``gg.group_norm``), with PyTorch's arguments."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import float_dtype, integer, make_variable, name_of, network_op, real
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..tensor import Tensor

__all__ = ["Upsample", "AdaptiveAvgPool2D", "GroupNorm"]


class Upsample(Module):
    """Resize (N, C, L) or (N, C, H, W) input to ``size`` or by ``scale_factor``, as PyTorch's nn.Upsample:
    :func:`gpugrad.interpolate` with these arguments (mode ``"nearest"``, ``"nearest-exact"``,
    ``"linear"`` or ``"bilinear"``).

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.Upsample(scale_factor=2, mode="bilinear")(gg.ones((1, 3, 4, 5))).shape
        (1, 3, 8, 10)
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None) -> None:
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, x: TensorLike) -> Tensor:
        return network_op("interpolate")(x, size=self.size, scale_factor=self.scale_factor, mode=self.mode,
                                         align_corners=self.align_corners)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        what = f"size={self.size!r}" if self.size is not None else f"scale_factor={self.scale_factor!r}"
        return f"{what}, mode={self.mode!r}"


class AdaptiveAvgPool2D(Module):
    """Average pooling of (N, C, H, W) input to ``output_size`` whatever its size, as PyTorch's
    nn.AdaptiveAvgPool2d (an int, or (OH, OW) where None keeps that axis).

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.AdaptiveAvgPool2D(1)(gg.ones((2, 8, 5, 7))).shape
        (2, 8, 1, 1)
    """

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: TensorLike) -> Tensor:
        return network_op("adaptive_avg_pool2d")(x, self.output_size)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"output_size={self.output_size!r}"


class GroupNorm(Module):
    """Group normalisation of (N, C, ...) input, as PyTorch's nn.GroupNorm: :func:`gpugrad.group_norm` with
    a per-channel ``weight`` (ones) and ``bias`` (zeros) when ``affine``.

    Example:
        >>> import gpugrad as gg
        >>> gn = gg.nn.GroupNorm(2, 6)
        >>> gn.weight.shape, gn(gg.ones((3, 6, 4, 4))).shape
        ((6,), (3, 6, 4, 4))
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 dtype: DTypeLike = None, device: DeviceLike = None, name: str | None = None) -> None:
        super().__init__()
        self.num_groups = integer(num_groups, "num_groups", "GroupNorm", 1)
        self.num_channels = integer(num_channels, "num_channels", "GroupNorm", 1)
        if self.num_channels % self.num_groups:
            raise ValueError(f"GroupNorm: num_groups ({num_groups}) must divide num_channels ({num_channels})")
        self.eps = real(eps, "eps", "GroupNorm", 0.0)
        dtype = float_dtype(dtype, "GroupNorm")
        if affine:
            self.weight = make_variable("ones", (self.num_channels,), dtype, device, None, name_of(name, "weight"))
            self.bias = make_variable("zeros", (self.num_channels,), dtype, device, None, name_of(name, "bias"))
        else:
            self.weight = self.bias = None
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        return network_op("group_norm")(x, self.num_groups, self.weight, self.bias, eps=self.eps)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.weight is not None}"
