"""``MaxPool2D`` and ``AvgPool2D`` over NCHW input (``gg.max_pool2d``, ``gg.avg_pool2d``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import int_pair, network_op
from .module import Module

if TYPE_CHECKING:
    from .._typing import TensorLike
    from ..tensor import Tensor

__all__ = ["MaxPool2D", "AvgPool2D"]


class _Pool2D(Module):
    _op: str | None = None

    def __init__(self, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                 padding: Any = 0) -> None:
        super().__init__()
        layer = type(self).__name__
        kernel = int_pair(kernel_size, "kernel_size", layer, 1)
        if stride is not None:
            int_pair(stride, "stride", layer, 1)
        pads = int_pair(padding, "padding", layer, 0)
        if pads[0] > kernel[0] // 2 or pads[1] > kernel[1] // 2:
            raise ValueError(f"{layer}: padding {padding!r} must be at most half the kernel size {kernel_size!r}")
        self.kernel_size = kernel_size  # as given: the pooling ops take an int or a pair
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, x: TensorLike) -> Tensor:
        return network_op(self._op)(x, self.kernel_size, stride=self.stride, padding=self.padding)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2D(_Pool2D):
    """The maximum over each ``kernel_size`` window; ``stride`` defaults to ``kernel_size``.

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.MaxPool2D(2)(gg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    _op = "max_pool2d"


class AvgPool2D(_Pool2D):
    """The mean over each ``kernel_size`` window; ``stride`` defaults to ``kernel_size``.

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.AvgPool2D(2, stride=1)(gg.ones((1, 3, 8, 8))).shape
        (1, 3, 7, 7)
    """

    _op = "avg_pool2d"
