"""NumPy references of the fused optimizer updates in ``kernels/``.

``sgd_momentum_update`` and ``adam_update`` update NumPy arrays in place with
the same arithmetic, in the same order and precision, as the CUDA kernels of
the same names: float16 and float32 parameters are updated in float32 (float16
rounded once on store), float64 ones in float64. They are the CPU path of the
optimizers and the truth the host kernel check compares the kernels against.

Example:
    >>> import numpy as np
    >>> p, v = np.array([1.0, 2.0]), np.zeros(2)
    >>> sgd_momentum_update(p, v, np.array([0.5, -0.5]), lr=0.1, momentum=0.9)
    >>> p.tolist(), v.tolist()
    ([0.95, 2.05], [-0.05, 0.05])
"""
import math

import numpy as np


def compute_dtype(dtype):
    """The dtype a kernel computes in for storage ``dtype``: float64 stays, the rest use float32.

    Example:
        >>> compute_dtype(np.float16), compute_dtype(np.float64)
        (dtype('float32'), dtype('float64'))
    """
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def sgd_momentum_update(param, velocity, grad, lr, momentum, weight_decay=0.0, nesterov=False):
    """One SGD-with-momentum step in place (the Keras form), as ``kernels/sgd_momentum_update.cu``.

    ``g = grad + weight_decay param``; ``velocity = momentum velocity - lr g``;
    ``param += velocity``, or with Nesterov ``param += momentum velocity - lr g``.

    Example:
        >>> p, v = np.ones(1, np.float32), np.zeros(1, np.float32)
        >>> sgd_momentum_update(p, v, np.ones(1, np.float32), lr=0.5, momentum=0.9, nesterov=True)
        >>> p.tolist(), v.tolist()
        ([0.050000011920928955], [-0.5])
    """
    a = compute_dtype(param.dtype).type
    lr, momentum, weight_decay = a(lr), a(momentum), a(weight_decay)
    p = param.astype(a)
    g = grad.astype(a) + weight_decay * p
    v = momentum * velocity.astype(a) - lr * g
    velocity[...] = v
    param[...] = p + (momentum * v - lr * g) if nesterov else p + v


def adam_step_size(lr, beta1, beta2, step):
    """``lr sqrt(1 - beta2^t) / (1 - beta1^t)``, the bias-corrected step size of Adam at step t >= 1 (Keras' form).

    Example:
        >>> round(adam_step_size(0.001, 0.9, 0.999, 1), 8)
        0.00031623
    """
    return lr * math.sqrt(1.0 - beta2 ** step) / (1.0 - beta1 ** step)


def adam_step_params(lr, beta1, beta2, step, epsilon_placement="keras"):
    """``(step_size, bias_correction2_sqrt)`` of Adam at step t >= 1, for :func:`adam_update`.

    ``"keras"``: ``(lr sqrt(1 - beta2^t) / (1 - beta1^t), 1.0)``, epsilon added to ``sqrt(v)``;
    ``"pytorch"``: ``(lr / (1 - beta1^t), sqrt(1 - beta2^t))``, epsilon added to ``sqrt(v_hat)``.

    Example:
        >>> [round(x, 6) for x in adam_step_params(0.001, 0.9, 0.999, 1, "pytorch")]
        [0.01, 0.031623]
    """
    if epsilon_placement == "keras":
        return adam_step_size(lr, beta1, beta2, step), 1.0
    return lr / (1.0 - beta1 ** step), math.sqrt(1.0 - beta2 ** step)


def adam_update(param, m, v, grad, step_size, beta1, beta2, eps, weight_decay=0.0, bias_correction2_sqrt=1.0):
    """One Adam step in place, as ``kernels/adam_update.cu``.

    ``g = grad + weight_decay param``; ``m += (1 - beta1)(g - m)``;
    ``v += (1 - beta2)(g^2 - v)``; ``param -= step_size m / (sqrt(v) / bias_correction2_sqrt + eps)``,
    with ``step_size`` and ``bias_correction2_sqrt`` from :func:`adam_step_params` (the Keras form
    divides by 1, which is exact).

    Example:
        >>> p, m, v = np.ones(1), np.zeros(1), np.zeros(1)
        >>> adam_update(p, m, v, np.array([2.0]), step_size=0.1, beta1=0.9, beta2=0.999, eps=1e-7)
        >>> [round(float(x), 6) for x in (p[0], m[0], v[0])]
        [0.683773, 0.2, 0.004]
    """
    a = compute_dtype(param.dtype).type
    step_size, eps, weight_decay = a(step_size), a(eps), a(weight_decay)
    one_minus_beta1, one_minus_beta2 = a(1.0 - beta1), a(1.0 - beta2)
    p = param.astype(a)
    g = grad.astype(a) + weight_decay * p
    m_new = m.astype(a)
    m_new += one_minus_beta1 * (g - m_new)
    v_new = v.astype(a)
    v_new += one_minus_beta2 * (g * g - v_new)
    m[...] = m_new
    v[...] = v_new
    param[...] = p - step_size * m_new / (np.sqrt(v_new) / a(bias_correction2_sqrt) + eps)
