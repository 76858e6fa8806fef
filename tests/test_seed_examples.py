"""Three first examples (regression, a custom gradient, a registered op), as a user would write them."""
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import registry


# ---------------------------------------------------------------- 1. linear regression


def test_linear_regression_by_gradient_descent():
    """y = 3x + 2 + noise; W from 5, B from 10; MSE; plain gradient descent, lr 0.1."""
    n, true_w, true_b, noise_std = 1000, 3.0, 2.0, 1.0
    rng = np.random.default_rng(1234)
    x_np = rng.standard_normal(n)
    y_np = true_w * x_np + true_b + noise_std * rng.standard_normal(n)
    x, y = gg.tensor(x_np, dtype=gg.float32), gg.tensor(y_np, dtype=gg.float32)

    weight = gg.Variable(5.)
    bias = gg.Variable(10.)
    assert weight.dtype == np.float32 and bias.dtype == np.float32

    losses = []
    for _ in range(150):
        with gg.GradientTape() as tape:
            loss = gg.mean(gg.square(weight * x + bias - y))
        d_weight, d_bias = tape.gradient(loss, [weight, bias])
        weight.assign_sub(0.1 * d_weight)
        bias.assign_sub(0.1 * d_bias)
        losses.append(loss.item())

    assert all(b <= a + 1e-6 for a, b in zip(losses, losses[1:])), "loss must not increase"
    # start: E[(2x + 8 - noise)^2] = 4 + 64 + 1; end: the noise variance (sample sd ~0.045)
    assert losses[0] > 60 and losses[-1] < 1.2 * noise_std ** 2

    # Gradient descent converges to the least-squares fit of this very sample ...
    fit_w, fit_b = np.polyfit(x_np, y_np, 1)
    assert weight.item() == pytest.approx(fit_w, abs=1e-4)
    assert bias.item() == pytest.approx(fit_b, abs=1e-4)
    # ... which differs from the true line by the noise: the standard error of both the
    # slope and the intercept is noise_std / sqrt(n) ~ 0.032 here (x has unit variance,
    # zero mean); 4 standard errors leave a false failure rate of about 1e-4 over seeds.
    tol = 4 * noise_std / math.sqrt(n)
    assert abs(weight.item() - true_w) < tol
    assert abs(bias.item() - true_b) < tol


# ---------------------------------------------------------------- 2. logexp with a custom gradient


@gg.custom_gradient
def logexp(x):
    e = gg.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return gg.log(1 + e), grad


def test_logexp_custom_gradient_at_100():
    x = gg.tensor(100.0, dtype=gg.float64)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = logexp(x)
    value = y.item()
    assert math.isfinite(value) and value == pytest.approx(100.0, rel=1e-15)
    assert tape.gradient(y, x).item() == 1.0

    # float32, the default dtype: exp(100) overflows, so log(1 + e) is infinite, yet the
    # custom gradient stays exactly 1.0 where the chain rule through the ops gives NaN.
    x32 = gg.tensor(100.0)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow is the point here
        with gg.GradientTape(persistent=True) as tape:
            tape.watch(x32)
            y32 = logexp(x32)
            naive = gg.log(1 + gg.exp(x32))
        assert tape.gradient(y32, x32).item() == 1.0
        assert math.isnan(tape.gradient(naive, x32).item())

    # and where nothing overflows it is the exact derivative, the logistic sigmoid
    xs = np.array([-3.0, 0.0, 2.5])
    x = gg.tensor(xs)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = logexp(x)
    np.testing.assert_allclose(y.numpy(), np.log1p(np.exp(xs)), rtol=1e-14)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 1 / (1 + np.exp(-xs)), rtol=1e-14)


# ---------------------------------------------------------------- 3. a user-registered op type


@pytest.fixture
def xexp_op():
    """The user's op type ``XExp`` (y = x e^x, computed on the host), registered for one test."""
    name = "SeedExampleXExp"

    @gg.RegisterGradient(name)
    def _xexp_grad(op, dy):
        (x,) = op.inputs
        return [dy * (1.0 + x) * gg.exp(x)]  # d(x e^x)/dx = (1 + x) e^x

    yield name
    registry.rules.pop(name, None)


def test_user_registered_gradient_first_and_second_order(xexp_op):
    def xexp(x):
        a = x.numpy()
        y = gg.tensor(a * np.exp(a))  # the forward runs outside gpugrad's ops
        gg.record_operation(xexp_op, [y], [x])
        return y

    x0 = np.array([-2.0, -0.5, 0.0, 1.0, 1.5])
    x = gg.tensor(x0)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = xexp(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(y.numpy(), x0 * np.exp(x0), rtol=1e-15)
    np.testing.assert_allclose(dy.numpy(), (1 + x0) * np.exp(x0), rtol=1e-14)
    np.testing.assert_allclose(d2y.numpy(), (2 + x0) * np.exp(x0), rtol=1e-14)
