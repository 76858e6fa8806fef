"""``Conv1D``, ``ConvTranspose2D`` and ``ConvTranspose1D``: layers over ``gg.conv1d`` and the transposed
convolutions, with PyTorch's weight layouts."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._common import child_seed, float_dtype, get_activation, int_pair, integer, make_variable, name_of, network_op
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..tensor import Tensor
    from ._common import Activation, Initializer
    from .init import Seed

__all__ = ["Conv1D", "ConvTranspose2D", "ConvTranspose1D"]


def _channels(layer, in_channels, out_channels, groups):
    in_channels = integer(in_channels, "in_channels", layer, 1)
    out_channels = integer(out_channels, "out_channels", layer, 1)
    groups = integer(groups, "groups", layer, 1)
    if in_channels % groups or out_channels % groups:
        raise ValueError(f"{layer}: in_channels ({in_channels}) and out_channels ({out_channels}) must both "
                         f"be divisible by groups ({groups})")
    return in_channels, out_channels, groups


class _ConvBase(Module):
    _op = ""
    in_channels: int
    out_channels: int
    kernel_size: Any
    activation: Any
    _kwargs: dict

    def _weights(self, shape, out_channels, use_bias, kernel_init, bias_init, dtype, device, seed, name):
        dtype = float_dtype(dtype, type(self).__name__)
        rng = child_seed(seed)
        self.kernel = make_variable(kernel_init, shape, dtype, device, rng, name_of(name, "kernel"))
        self.bias = make_variable(bias_init, (out_channels,), dtype, device, rng,
                                  name_of(name, "bias")) if use_bias else None

    def forward(self, x: TensorLike) -> Tensor:
        y = network_op(self._op)(x, self.kernel, self.bias, **self._kwargs)
        return y if self.activation is None else self.activation(y)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, {args}"


class Conv1D(_ConvBase):
    """``activation(conv1d(x, kernel, bias, stride, padding, dilation, groups))`` over (N, C, L) input.

    ``kernel`` has shape (out_channels, in_channels // groups, kernel_size)
    (PyTorch's nn.Conv1d layout); ``padding`` is an int, ``"valid"`` or
    ``"same"``. ``kernel_init`` defaults to glorot uniform, ``bias_init`` to zeros.

    Example:
        >>> import gpugrad as gg
        >>> conv = gg.nn.Conv1D(2, 4, kernel_size=3, padding="same", seed=0)
        >>> conv.kernel.shape, conv(gg.ones((5, 2, 16))).shape
        ((4, 2, 3), (5, 4, 16))
    """

    _op = "conv1d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: Any = 0,
                 dilation: int = 1, groups: int = 1, activation: Activation = None, use_bias: bool = True,
                 kernel_init: Initializer = "glorot_uniform", bias_init: Initializer = "zeros",
                 dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.in_channels, self.out_channels, self.groups = _channels("Conv1D", in_channels, out_channels, groups)
        self.kernel_size = integer(kernel_size, "kernel_size", "Conv1D", 1)
        stride = integer(stride, "stride", "Conv1D", 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Conv1D: padding is an int, 'same' or 'valid', not {padding!r}")
            if padding == "same" and stride != 1:
                raise ValueError(f"Conv1D: padding='same' needs stride 1, got stride {stride}")
        else:
            padding = integer(padding, "padding", "Conv1D", 0)
        self._kwargs = dict(stride=stride, padding=padding, dilation=integer(dilation, "dilation", "Conv1D", 1),
                            groups=self.groups)
        self._weights((self.out_channels, self.in_channels // self.groups, self.kernel_size), self.out_channels,
                      use_bias, kernel_init, bias_init, dtype, device, seed, name)
        self.activation = get_activation(activation)
        self.name = name


class ConvTranspose2D(_ConvBase):
    """``activation(conv_transpose2d(x, kernel, bias, stride, padding, output_padding, groups, dilation))``.

    ``kernel`` has shape (in_channels, out_channels // groups, KH, KW)
    (PyTorch's nn.ConvTranspose2d layout); the output of (N, in_channels, H, W)
    input is (N, out_channels, (H-1)*stride - 2*padding + dilation*(KH-1) +
    output_padding + 1, ...): a stride-2 layer doubles the size of what a
    stride-2 Conv2D halved.

    Example:
        >>> import gpugrad as gg
        >>> up = gg.nn.ConvTranspose2D(8, 4, kernel_size=3, stride=2, padding=1, output_padding=1, seed=0)
        >>> up.kernel.shape, up(gg.ones((2, 8, 7, 7))).shape
        ((8, 4, 3, 3), (2, 4, 14, 14))
    """

    _op = "conv_transpose2d"
    _layer = "ConvTranspose2D"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | tuple[int, int],
                 stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                 output_padding: int | tuple[int, int] = 0, groups: int = 1, dilation: int | tuple[int, int] = 1,
                 activation: Activation = None, use_bias: bool = True, kernel_init: Initializer = "glorot_uniform",
                 bias_init: Initializer = "zeros", dtype: DTypeLike = None, device: DeviceLike = None,
                 seed: Seed = None, name: str | None = None) -> None:
        super().__init__()
        layer = self._layer
        self.in_channels, self.out_channels, self.groups = _channels(layer, in_channels, out_channels, groups)
        kernel = self._size(kernel_size, "kernel_size", 1)
        self.kernel_size = kernel
        strides, dilations = self._size(stride, "stride", 1), self._size(dilation, "dilation", 1)
        extras = self._size(output_padding, "output_padding", 0)
        if any(e >= max(s, d) for e, s, d in zip(extras, strides, dilations)):
            raise ValueError(f"{layer}: output_padding {output_padding!r} must be smaller than the stride "
                             f"{stride!r} or the dilation {dilation!r}")
        self._kwargs = dict(stride=stride, padding=padding, output_padding=output_padding, groups=self.groups,
                            dilation=dilation)  # as given: the op takes each form
        self._size(padding, "padding", 0)
        self._weights((self.in_channels, self.out_channels // self.groups) + kernel, self.out_channels,
                      use_bias, kernel_init, bias_init, dtype, device, seed, name)
        self.activation = get_activation(activation)
        self.name = name

    def _size(self, value, name, minimum):
        return int_pair(value, name, self._layer, minimum)


class ConvTranspose1D(ConvTranspose2D):
    """``activation(conv_transpose1d(...))`` over (N, C, L) input; ``kernel`` is (in_channels,
    out_channels // groups, kernel_size), PyTorch's nn.ConvTranspose1d layout.

    Example:
        >>> import gpugrad as gg
        >>> gg.nn.ConvTranspose1D(3, 2, kernel_size=4, stride=2, padding=1, seed=0)(gg.ones((1, 3, 8))).shape
        (1, 2, 16)
    """

    _op = "conv_transpose1d"
    _layer = "ConvTranspose1D"

    def _size(self, value, name, minimum):
        return (integer(value, name, self._layer, minimum),)
