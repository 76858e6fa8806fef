"""The fused optimizer updates, one function each: in-place NumPy on the CPU, a CUDA kernel on a GPU.

On a GPU the kernels in ``kernels/sgd_momentum_update.cu`` and
``kernels/adam_update.cu`` run through ``device.backend.fused``: the kernel's
array inputs (``grad``) first, then its outputs (updated in place), then its
scalar params by keyword. This module is the only place that knows that convention.

On the CPU, float32 and float64 parameters are updated in place, without
copies, split across threads when large (see
:mod:`gpugrad.backend.cpu_threads`), with the arithmetic of
:mod:`gpugrad.optimizers.kernels_ref` (the kernels' reference) in the same order and
precision, so to the same bits; float16 parameters (computed in float32) and
mixed dtypes take the reference itself.

Example:
    >>> import numpy as np
    >>> from gpugrad.backend import CPU
    >>> p, v = np.ones(2, np.float32), np.zeros(2, np.float32)
    >>> sgd_momentum(CPU, p, v, np.ones(2, np.float32), lr=0.1, momentum=0.9)
    >>> p.tolist()
    [0.8999999761581421, 0.8999999761581421]
"""
import numpy as np

from ..backend import CPU
from ..backend.cpu_threads import SPLIT_MIN_CHEAP, split_apply
from . import kernels_ref


def _in_place(param, *others):
    """Whether the arrays can be updated in place at their own precision: one float32/float64 dtype."""
    dtype = param.dtype
    return (dtype == np.float32 or dtype == np.float64) and all(a.dtype == dtype for a in others)


def sgd(device, param, grad, lr, weight_decay=0.0, grad_is_scratch=False):
    """One plain SGD step of array ``param`` in place: ``param -= lr * (grad + weight_decay * param)``.

    With ``grad_is_scratch`` the step may overwrite ``grad`` (same dtype as
    ``param``) instead of making a temporary of its size.

    Example:
        >>> import numpy as np
        >>> from gpugrad.backend import CPU
        >>> p = np.ones(2, np.float32)
        >>> sgd(CPU, p, np.ones(2, np.float32), lr=0.5)
        >>> p.tolist()
        [0.5, 0.5]
    """
    # not split across threads: right after a backward pass's matrix products the BLAS threads
    # still spin on the other cores, and two passes over memory gain less than they lose (W4 is slower split)
    if weight_decay:
        g = grad + weight_decay * param  # a temporary of our own
    elif grad_is_scratch:
        g = grad
    else:
        param -= lr * grad
        return
    # p - lr g as p + (-lr) g, in g: the same bits, as negation is exact
    g *= -lr
    param += g


def _sgd_momentum_cpu(param, velocity, grad, lr, momentum, weight_decay, nesterov):
    # kernels_ref.sgd_momentum_update in place: g = grad + wd p; v = momentum v - lr g; p += v (or the Nesterov step)
    g = grad + weight_decay * param if weight_decay else grad
    lr_g = lr * g
    np.multiply(velocity, momentum, out=velocity)
    velocity -= lr_g
    if nesterov:
        param += momentum * velocity - lr_g
    else:
        param += velocity


def sgd_momentum(device, param, velocity, grad, lr, momentum, weight_decay=0.0, nesterov=False):
    """One SGD-with-momentum step of arrays ``param`` and ``velocity`` in place (see ``kernels_ref``)."""
    if device is CPU:
        if not _in_place(param, velocity, grad):
            kernels_ref.sgd_momentum_update(param, velocity, grad, lr, momentum, weight_decay, nesterov)
            return
        a = param.dtype.type
        params = {"lr": a(lr), "momentum": a(momentum), "weight_decay": a(weight_decay), "nesterov": bool(nesterov)}
        if param.size < SPLIT_MIN_CHEAP or not split_apply(_sgd_momentum_cpu, [param, velocity, grad], params):
            _sgd_momentum_cpu(param, velocity, grad, **params)
    else:
        device.backend.fused("sgd_momentum_update", grad, param, velocity, lr=float(lr),
                             momentum=float(momentum), weight_decay=float(weight_decay), nesterov=bool(nesterov))


def _adam_cpu(param, m, v, grad, step_size, one_minus_beta1, one_minus_beta2, eps, weight_decay,
              bias_correction2_sqrt):
    # kernels_ref.adam_update in place: m += (1 - b1)(g - m); v += (1 - b2)(g^2 - v);
    # p -= step m / (sqrt(v) / bc2_sqrt + eps), the division left out where it is by 1 (exact)
    g = grad + weight_decay * param if weight_decay else grad
    m += one_minus_beta1 * (g - m)
    v += one_minus_beta2 * (g * g - v)
    denominator = np.sqrt(v, out=np.empty_like(v))  # an array even when v is 0-d (a ufunc returns a scalar)
    if bias_correction2_sqrt != 1:
        denominator /= bias_correction2_sqrt
    denominator += eps
    update = np.multiply(step_size, m, out=np.empty_like(m))
    update /= denominator
    param -= update


def _adam_cpu_scratch(param, m, v, grad, step_size, one_minus_beta1, one_minus_beta2, eps, weight_decay,
                      bias_correction2_sqrt):
    # _adam_cpu's arithmetic, each result rounded as there, with grad's array as the scratch of the v
    # update and the denominator: one temporary of the variable's size where _adam_cpu has several.
    # Every temporary is made with empty_like, never as a ufunc's result: on 0-d arrays a ufunc returns a
    # NumPy scalar, which cannot be an out= (TypeError: return arrays must be of ArrayType)
    g = grad
    if weight_decay:
        np.add(grad, weight_decay * param, out=grad)
    step = np.subtract(g, m, out=np.empty_like(m))
    np.multiply(one_minus_beta1, step, out=step)
    m += step
    np.multiply(g, g, out=g)
    g -= v
    np.multiply(one_minus_beta2, g, out=g)
    v += g
    np.sqrt(v, out=g)
    if bias_correction2_sqrt != 1:
        g /= bias_correction2_sqrt
    g += eps
    np.multiply(step_size, m, out=step)
    step /= g
    param -= step


def adam(device, param, m, v, grad, step_size, beta1, beta2, eps, weight_decay=0.0, grad_is_scratch=False,
         bias_correction2_sqrt=1.0):
    """One Adam step of arrays ``param``, ``m`` and ``v`` in place (see ``kernels_ref``).

    ``step_size`` and ``bias_correction2_sqrt`` come from
    :func:`gpugrad.optimizers.kernels_ref.adam_step_params`. With ``grad_is_scratch`` the step may
    overwrite ``grad`` (same dtype as ``param``) instead of making temporaries of its size; the result is
    the same to the bit.
    """
    if device is CPU:
        if not _in_place(param, m, v, grad):
            kernels_ref.adam_update(param, m, v, grad, step_size, beta1, beta2, eps, weight_decay,
                                    bias_correction2_sqrt)
            return
        a = param.dtype.type
        params = {"step_size": a(step_size), "one_minus_beta1": a(1.0 - beta1), "one_minus_beta2": a(1.0 - beta2),
                  "eps": a(eps), "weight_decay": a(weight_decay), "bias_correction2_sqrt": a(bias_correction2_sqrt)}
        # a gradient that is a NumPy scalar (some 0-d results are) is not writable: no scratch
        fn = _adam_cpu_scratch if grad_is_scratch and isinstance(grad, np.ndarray) else _adam_cpu
        if param.size < SPLIT_MIN_CHEAP or not split_apply(fn, [param, m, v, grad], params):
            fn(param, m, v, grad, **params)
    else:
        device.backend.fused("adam_update", grad, param, m, v, step_size=float(step_size), beta1=float(beta1),
                             beta2=float(beta2), eps=float(eps), weight_decay=float(weight_decay),
                             bias_correction2_sqrt=float(bias_correction2_sqrt))


def adam_launch(device, param, m, v, grad, scalars):
    """:func:`adam`'s GPU kernel as a function of no arguments whose scalar params are the 0-d device arrays of
    ``scalars`` (:class:`gpugrad.optimizers.graph_step.DeviceScalars`), read when it runs: the same float64
    values the eager call passes by value, so the same bits; a CUDA Graph may hold it.

    Example (a GPU function; on the CPU there is none)::

        >>> from gpugrad.backend import CPU
        >>> adam_launch(CPU, None, None, None, None, None) is None
        True
    """
    if device is CPU:
        return None
    names = ("step_size", "beta1", "beta2", "eps", "weight_decay", "bias_correction2_sqrt")
    params = {name: scalars.array(name, "float64") for name in names}
    fused = device.backend.fused
    return lambda: fused("adam_update", grad, param, m, v, **params)


def sgd_momentum_launch(device, param, velocity, grad, scalars):
    """:func:`sgd_momentum`'s GPU kernel as a function of no arguments reading its scalars from ``scalars``'
    device arrays (see :func:`adam_launch`).

    Example (a GPU function; on the CPU there is none)::

        >>> from gpugrad.backend import CPU
        >>> sgd_momentum_launch(CPU, None, None, None, None) is None
        True
    """
    if device is CPU:
        return None
    params = {name: scalars.array(name, "float64") for name in ("lr", "momentum", "weight_decay")}
    params["nesterov"] = scalars.array("nesterov", "bool")
    fused = device.backend.fused
    return lambda: fused("sgd_momentum_update", grad, param, velocity, **params)
