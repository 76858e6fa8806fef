"""Tensors made from nothing or from another's shape: zeros, ones, full, *_like.

None of these are recorded: a new constant has no gradient path.
"""
import numpy as np

from ..backend import get_device
from ..tensor import Tensor
from .base import public_ops




def _make(xp_fn, shape, fill, dtype, device):
    dev = get_device(device)
    dtype = np.dtype(dtype if dtype is not None else np.float32)
    with_index = dev.backend.asarray  # keeps the GPU's current device right
    if fill is None:
        data = getattr(dev.xp, xp_fn)(shape, dtype=dtype)
    else:
        data = dev.xp.full(shape, fill, dtype=dtype)
    return Tensor._wrap(data if dev.index == 0 else with_index(data, None, dev.index), dev)


def zeros(shape, dtype=None, device=None):
    """A tensor of zeros (float32 unless ``dtype`` says otherwise).

    Example:
        >>> import gpugrad as gg
        >>> gg.zeros((2,)).numpy().tolist()
        [0.0, 0.0]
    """
    return _make("zeros", shape, None, dtype, device)


def ones(shape, dtype=None, device=None):
    """A tensor of ones (float32 unless ``dtype`` says otherwise).

    Example:
        >>> import gpugrad as gg
        >>> gg.ones((2,)).numpy().tolist()
        [1.0, 1.0]
    """
    return _make("ones", shape, None, dtype, device)


def full(shape, value, dtype=None, device=None):
    """A tensor filled with ``value``.

    Example:
        >>> import gpugrad as gg
        >>> gg.full((2,), 7.0).numpy().tolist()
        [7.0, 7.0]
    """
    return _make("full", shape, value, dtype, device)


def zeros_like(x):
    """Zeros with ``x``'s shape, dtype and device.

    Example:
        >>> import gpugrad as gg
        >>> gg.zeros_like(gg.tensor([1.0, 2.0])).numpy().tolist()
        [0.0, 0.0]
    """
    return Tensor._wrap(x._device.xp.zeros_like(x._data), x._device)


def ones_like(x):
    """Ones with ``x``'s shape, dtype and device.

    Example:
        >>> import gpugrad as gg
        >>> gg.ones_like(gg.tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 1.0]
    """
    d, xp = x._data, x._device.xp
    # ones_like and ones are Python wrappers; a 0-d one (a loss's seed gradient) is made directly
    return Tensor._wrap(xp.asarray(1, d.dtype) if d.ndim == 0 else xp.ones(d.shape, d.dtype), x._device)


TENSOR_METHODS = {}

__all__ = public_ops(globals())
