"""Analytic against numerical Jacobians, as ``tf.test.compute_gradient`` does.

Example:
    >>> import gpugrad as gg
    >>> x = gg.tensor([1.0, 2.0], dtype="float64")
    >>> theoretical, numerical = gg.gradient_checker.compute_gradient(gg.square, [x])
    >>> gg.gradient_checker.max_error(theoretical, numerical) < 1e-6
    True
"""
import numpy as np

from .tape import GradientTape
from .tensor import Tensor, ensure_tensor


def compute_gradient(f, xs, delta=1e-3):
    """``(theoretical, numerical)``: per input, a Jacobian of ``y.size`` rows and ``x.size`` columns.

    The theoretical Jacobian comes from one backward sweep per output element;
    the numerical one from central differences, ``(f(x + d) - f(x - d)) / 2d``,
    evaluated in the inputs' dtype and differenced in float64.
    """
    xs = [ensure_tensor(x) for x in (xs if isinstance(xs, (list, tuple)) else [xs])]
    y0 = _output(f, xs)
    theoretical = [_theoretical_jacobian(f, xs, i, y0.size) for i in range(len(xs))]
    numerical = [_numerical_jacobian(f, xs, i, y0.size, delta) for i in range(len(xs))]
    return theoretical, numerical


def max_error(theoretical, numerical):
    """The largest absolute difference between matching Jacobians; inf where either holds a NaN.

    Example:
        >>> import numpy as np
        >>> max_error([np.array([[1.0, np.nan]])], [np.array([[1.5, 0.0]])])
        inf
    """
    worst = 0.0
    for t, n in zip(theoretical, numerical):
        if t.size:
            diff = np.abs(np.asarray(t, np.float64) - np.asarray(n, np.float64))
            if np.isnan(diff).any():
                return float("inf")  # a NaN is no match for anything (Python's max would skip it)
            worst = max(worst, float(np.max(diff)))
    return worst


def _output(f, xs):
    y = f(*xs)
    if not isinstance(y, Tensor):
        raise TypeError(f"the checked function must return one tensor, not {type(y).__name__}")
    return y


def _theoretical_jacobian(f, xs, which, y_size):
    x = xs[which]
    jac = np.zeros((y_size, x.size), dtype=np.float64)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _output(f, xs)
    seed = np.zeros(y.shape, dtype=y.dtype)
    flat_seed = seed.reshape(-1)
    for row in range(y_size):
        flat_seed[:] = 0
        flat_seed[row] = 1
        grad = tape.gradient(y, x, output_gradients=Tensor(seed, device=y._device))
        if grad is not None:
            jac[row] = grad.numpy().reshape(-1)
    return jac


def _numerical_jacobian(f, xs, which, y_size, delta):
    x = xs[which]
    host = x.numpy().astype(x.dtype, copy=True).reshape(-1)
    jac = np.zeros((y_size, x.size), dtype=np.float64)
    for col in range(x.size):
        original = host[col]
        host[col] = original + delta
        plus = _evaluate(f, xs, which, host, x)
        host[col] = original - delta
        minus = _evaluate(f, xs, which, host, x)
        host[col] = original
        jac[:, col] = (plus - minus) / (2 * delta)
    return jac


def _evaluate(f, xs, which, host, x):
    shifted = list(xs)
    shifted[which] = Tensor(host.reshape(x.shape), dtype=x.dtype, device=x._device)
    return _output(f, shifted).numpy().astype(np.float64).reshape(-1)
