"""The fused optimizer updates, one function each: NumPy reference on the CPU, CUDA kernel on a GPU.

The CPU path is :mod:`gpugrad.kernels_ref` (whose arithmetic the kernels in
``kernels/sgd_momentum_update.cu`` and ``kernels/adam_update.cu`` reproduce);
a GPU runs the kernel through ``device.backend.fused``: the kernel's array
inputs (``grad``) first, then its outputs (updated in place), then its scalar
params by keyword. This module is the only place that knows that convention.

Example:
    >>> import numpy as np
    >>> from gpugrad.backend import CPU
    >>> p, v = np.ones(2, np.float32), np.zeros(2, np.float32)
    >>> sgd_momentum(CPU, p, v, np.ones(2, np.float32), lr=0.1, momentum=0.9)
    >>> p.tolist()
    [0.8999999761581421, 0.8999999761581421]
"""
from ..backend import CPU
from .. import kernels_ref


def sgd_momentum(device, param, velocity, grad, lr, momentum, weight_decay=0.0, nesterov=False):
    """One SGD-with-momentum step of arrays ``param`` and ``velocity`` in place (see ``kernels_ref``)."""
    if device is CPU:
        kernels_ref.sgd_momentum_update(param, velocity, grad, lr, momentum, weight_decay, nesterov)
    else:
        device.backend.fused("sgd_momentum_update", grad, param, velocity, lr=float(lr),
                             momentum=float(momentum), weight_decay=float(weight_decay), nesterov=bool(nesterov))


def adam(device, param, m, v, grad, step_size, beta1, beta2, eps, weight_decay=0.0):
    """One Adam step of arrays ``param``, ``m`` and ``v`` in place (see ``kernels_ref``).

    ``step_size`` is the bias-corrected rate of :func:`gpugrad.kernels_ref.adam_step_size`.
    """
    if device is CPU:
        kernels_ref.adam_update(param, m, v, grad, step_size, beta1, beta2, eps, weight_decay)
    else:
        device.backend.fused("adam_update", grad, param, m, v, step_size=float(step_size), beta1=float(beta1),
                             beta2=float(beta2), eps=float(eps), weight_decay=float(weight_decay))
