"""``MaxPool2D``, ``AvgPool2D`` over NCHW input and ``MaxPool1D``, ``AvgPool1D`` over NCL input (``gg.max_pool2d``,
``gg.avg_pool2d``, ...), with PyTorch's options."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import int_pair, integer, network_op
from .module import Module

if TYPE_CHECKING:
    from .._typing import TensorLike
    from ..tensor import Tensor

__all__ = ["MaxPool2D", "AvgPool2D", "MaxPool1D", "AvgPool1D"]


class _Pool2D(Module):
    _op: str | None = None

    def __init__(self, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                 padding: Any = 0, **options: Any) -> None:
        super().__init__()
        layer = type(self).__name__
        size = int_pair if self._op and self._op.endswith("2d") else _int_single
        kernel = size(kernel_size, "kernel_size", layer, 1)
        if stride is not None:
            size(stride, "stride", layer, 1)
        pads = size(padding, "padding", layer, 0)
        if any(p > k // 2 for p, k in zip(pads, kernel)):
            raise ValueError(f"{layer}: padding {padding!r} must be at most half the kernel size {kernel_size!r}")
        self.kernel_size = kernel_size  # as given: the pooling ops take an int or a pair
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.options = options  # the op's own (ceil_mode, dilation, ...), checked by it

    def forward(self, x: TensorLike) -> Any:
        return network_op(self._op)(x, self.kernel_size, stride=self.stride, padding=self.padding, **self.options)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}{extra}"


def _int_single(value, name, layer, minimum):
    return (integer(value, name, layer, minimum),)


class MaxPool2D(_Pool2D):
    """The maximum over each ``kernel_size`` window; ``stride`` defaults to ``kernel_size``; ``dilation``,
    ``ceil_mode`` and ``return_indices`` as :func:`gpugrad.max_pool2d` (PyTorch's nn.MaxPool2d).

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.MaxPool2D(2)(gg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
        >>> gg.nn.MaxPool2D(3, stride=2, ceil_mode=True)(gg.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    _op = "max_pool2d"

    def __init__(self, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                 padding: Any = 0, dilation: int | tuple[int, int] = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding, dilation=dilation, ceil_mode=ceil_mode,
                         return_indices=return_indices)


class AvgPool2D(_Pool2D):
    """The mean over each ``kernel_size`` window; ``stride`` defaults to ``kernel_size``; ``ceil_mode``,
    ``count_include_pad`` and ``divisor_override`` as :func:`gpugrad.avg_pool2d` (PyTorch's nn.AvgPool2d).

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.AvgPool2D(2, stride=1)(gg.ones((1, 3, 8, 8))).shape
        (1, 3, 7, 7)
    """

    _op = "avg_pool2d"

    def __init__(self, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
                 padding: Any = 0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         divisor_override=divisor_override)


class MaxPool1D(_Pool2D):
    """The maximum over each window of (N, C, L) input, as PyTorch's nn.MaxPool1d (:func:`gpugrad.max_pool1d`).

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.MaxPool1D(2)(gg.ones((1, 3, 9))).shape
        (1, 3, 4)
    """

    _op = "max_pool1d"

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0, dilation: int = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__(kernel_size, stride, padding, dilation=dilation, ceil_mode=ceil_mode,
                         return_indices=return_indices)


class AvgPool1D(_Pool2D):
    """The mean over each window of (N, C, L) input, as PyTorch's nn.AvgPool1d (:func:`gpugrad.avg_pool1d`).

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.AvgPool1D(2, ceil_mode=True)(gg.ones((1, 3, 9))).shape
        (1, 3, 5)
    """

    _op = "avg_pool1d"

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
