"""``MaxPool2D`` and ``AvgPool2D`` over NCHW input (``gg.max_pool2d``, ``gg.avg_pool2d``)."""
from ._common import network_op
from .module import Module

__all__ = ["MaxPool2D", "AvgPool2D"]


class _Pool2D(Module):
    _op = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, x):
        return network_op(self._op)(x, self.kernel_size, stride=self.stride, padding=self.padding)

    def extra_repr(self):
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
