"""``Conv2D``: 2-D convolution over NCHW input with OIHW filters (``gg.conv2d``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import child_seed, float_dtype, get_activation, int_pair, integer, make_variable, name_of, network_op
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..tensor import Tensor
    from ._common import Activation, Initializer
    from .init import Seed

__all__ = ["Conv2D"]


def _check_padding(padding, stride):
    """TypeError / ValueError unless ``padding`` is one of the forms conv2d takes."""
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Conv2D: padding is an int, a pair, two pairs, 'same' or 'valid', not {padding!r}")
        if padding == "same" and stride != (1, 1):
            raise ValueError(f"Conv2D: padding='same' needs stride 1, got stride {stride}")
    elif isinstance(padding, (tuple, list)) and len(padding) == 2 and all(
            isinstance(p, (tuple, list)) for p in padding):
        for p in padding:
            int_pair(p, "padding", "Conv2D", 0)
    else:
        int_pair(padding, "padding", "Conv2D", 0)


class Conv2D(Module):
    """``activation(conv2d(x, kernel, bias, stride, padding, dilation, groups))``.

    ``x`` is (N, in_channels, H, W); ``kernel`` has shape (out_channels,
    in_channels // groups, KH, KW) (PyTorch's layout); ``padding`` is an int,
    a pair, ``"valid"`` or ``"same"`` as :func:`gpugrad.conv2d` takes it.
    ``kernel_init`` defaults to glorot uniform (fans over the receptive field),
    ``bias_init`` to zeros.

    Example:
        >>> import gpugrad as gg
        >>> conv = gg.nn.Conv2D(1, 4, kernel_size=3, padding=1, seed=0)
        >>> conv.kernel.shape, conv(gg.ones((2, 1, 8, 8))).shape
        ((4, 1, 3, 3), (2, 4, 8, 8))
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, padding: Any = 0, dilation: int | tuple[int, int] = 1,
                 groups: int = 1, activation: Activation = None, use_bias: bool = True,
                 kernel_init: Initializer = "glorot_uniform", bias_init: Initializer = "zeros",
                 dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        in_channels = integer(in_channels, "in_channels", "Conv2D", 1)
        out_channels = integer(out_channels, "out_channels", "Conv2D", 1)
        groups = integer(groups, "groups", "Conv2D", 1)
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: in_channels ({in_channels}) and out_channels ({out_channels}) must both "
                             f"be divisible by groups ({groups})")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = int_pair(kernel_size, "kernel_size", "Conv2D", 1)
        _check_padding(padding, int_pair(stride, "stride", "Conv2D", 1))
        int_pair(dilation, "dilation", "Conv2D", 1)
        self.stride, self.padding, self.dilation = stride, padding, dilation  # as given: conv2d takes each form
        dtype = float_dtype(dtype, "Conv2D")
        rng = child_seed(seed)
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.kernel = make_variable(kernel_init, shape, dtype, device, rng, name_of(name, "kernel"))
        self.bias = make_variable(bias_init, (out_channels,), dtype, device, rng,
                                  name_of(name, "bias")) if use_bias else None
        self.activation = get_activation(activation)
        self.name = name

    def forward(self, x: TensorLike) -> Tensor:
        y = network_op("conv2d")(x, self.kernel, self.bias, stride=self.stride, padding=self.padding,
                                 dilation=self.dilation, groups=self.groups)
        return y if self.activation is None else self.activation(y)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding!r}, dilation={self.dilation}, groups={self.groups}")
