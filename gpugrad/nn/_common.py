"""What the layers share: checking constructor arguments, making a weight Variable from an initialiser,
naming activations, finding ops.

A layer checks its arguments when it is built, so ``Dense(2.5, 3)`` fails at
that line, naming the argument, not steps later inside an op (or never, had
``int()`` truncated it): sizes and counts are ints (NumPy's too, not floats or
bools: TypeError) within their range (ValueError), as in Keras 3 and PyTorch.
"""
from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .. import _dtypes as _dt
from .. import ops
from ..tensor import Variable
from . import init as _init

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..tensor import Tensor

    # A weight initialiser: a function of gpugrad.nn.init, its name, or a callable with the same arguments.
    Initializer: TypeAlias = str | Callable[..., Any]
    # A layer's activation: None (or "linear"), the name of a gpugrad op ("relu"), or a callable.
    Activation: TypeAlias = str | Callable[[Tensor], Tensor] | None

# every op of ops.activations (its hot gradients aside), gelu beside erf, and the softmaxes of losses
_ACTIVATIONS = tuple(name for name in ops.activations.__all__ if not name.endswith("_grad")) + \
    ("gelu", "softmax", "log_softmax")


def integer(value, name, layer, minimum=None):
    """``value`` as an int ``>= minimum``; TypeError for a non-integer (2.5, "3", True), ValueError below.

    Example:
        >>> integer(3, "out_features", "Dense", 1)
        3
        >>> integer(2.5, "in_features", "Dense", 1)
        Traceback (most recent call last):
        ...
        TypeError: Dense: in_features is an int, not 2.5 (float)
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{layer}: {name} is an int, not {value!r} ({type(value).__name__})")
    if minimum is not None and value < minimum:
        raise ValueError(f"{layer}: {name} must be at least {minimum}, got {value}")
    return int(value)


def int_pair(value, name, layer, minimum):
    """``value`` (an int or a pair of ints, each ``>= minimum``) as a pair of ints."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{layer}: {name} is an int or a pair of ints, not {value!r}")
        return integer(value[0], name, layer, minimum), integer(value[1], name, layer, minimum)
    value = integer(value, name, layer, minimum)
    return value, value


def real(value, name, layer, low, high=None, high_open=False):
    """``value`` as a float in ``[low, high]`` (``[low, high)`` with ``high_open``); TypeError for a
    non-number (a string, a bool), ValueError outside the range (NaN included)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{layer}: {name} is a number, not {value!r} ({type(value).__name__})")
    value = float(value)
    above = high is not None and (value >= high if high_open else value > high)
    if not value >= low or above:
        bounds = f"[{low}, {high}{')' if high_open else ']'}" if high is not None else f">= {low}"
        raise ValueError(f"{layer}: {name} must be in {bounds}, got {value!r}")
    return value


def float_dtype(dtype, layer):
    """``dtype`` (None: float32) as a float NumPy dtype: a layer's weights are floats (an integer dtype
    would truncate the initial weights to whole numbers)."""
    try:
        dtype = np.dtype(dtype if dtype is not None else np.float32)
    except TypeError:
        raise TypeError(f"{layer}: dtype {dtype!r} is not a dtype") from None
    if not _dt.floating(dtype):
        raise TypeError(f"{layer}: weights are floats, not {dtype} (pass dtype='float32' or 'float64')")
    return dtype


def make_variable(initializer, shape, dtype, device, seed, name, trainable=True):
    """A Variable of ``initializer(shape, dtype=..., seed=...)`` on ``device``.

    ``initializer`` is a function of :mod:`gpugrad.nn.init`, its name
    (``"he_normal"``), or any callable with the same arguments.
    """
    if isinstance(initializer, str):
        found = getattr(_init, initializer, None)
        if found is None or initializer not in _init.__all__:
            raise ValueError(f"unknown initialiser {initializer!r}; gpugrad.nn.init has {_init.__all__[:8]}")
        initializer = found
    dtype = float_dtype(dtype, name or "layer")
    value = initializer(tuple(shape), dtype=dtype, seed=seed)
    if tuple(np.shape(value)) != tuple(shape):
        raise ValueError(f"initialiser {initializer!r} returned shape {np.shape(value)} for {tuple(shape)}")
    return Variable(value, dtype=dtype, device=device, trainable=trainable, name=name)


def child_seed(seed):
    """One generator for all of a layer's weights: ``seed`` as a Generator (None stays None)."""
    return None if seed is None else _init.generator(seed)


def get_activation(activation):
    """``None``, a callable, or the name of a gpugrad op (``"relu"``, ``"tanh"``, ...) as a callable or None."""
    if activation is None or activation == "linear":
        return None
    if callable(activation):
        return activation
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return getattr(ops, activation)
    raise ValueError(f"activation is None, a callable or one of {list(_ACTIVATIONS)}, not {activation!r}")


def network_op(name):
    """The op ``gpugrad.ops.<name>``, looked up when a layer runs (network ops may land after this module)."""
    op = getattr(ops, name, None)
    if op is None:
        raise NotImplementedError(f"gpugrad.{name} is not available in this build of gpugrad")
    return op


def name_of(layer_name, weight):
    return f"{layer_name}.{weight}" if layer_name else weight
