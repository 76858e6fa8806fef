"""What the layers share: making a weight Variable from an initialiser, naming activations, finding ops."""
import numpy as np

from .. import ops
from ..tensor import Variable
from . import init as _init

_ACTIVATIONS = ("relu", "tanh", "sigmoid", "gelu", "elu", "softplus", "leaky_relu", "softmax", "log_softmax")


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
    dtype = np.dtype(dtype if dtype is not None else np.float32)
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
