"""No silently wrong gradient at the edges of smooth functions (the "trust" issue).

Each test puts an op at a point where the function is smooth (or constant) and
its derivative is a finite number, where a rule used to give NaN: a 0 * inf
inside a formula (``d x**0 / dx`` at 0, HIPS autograd issue #116), a zero
filled in for an unused output gradient times an inf (``0 ** y`` in forward
mode), or 0 / 0 (``std`` over one element). Every case is checked to first
order (``tape.gradient``), in forward mode (``gg.jvp``) and to second order
(nested tapes), in float64 and float32, on the CPU and on the GPU path (the
``cuda`` params, run on the host by ``tests/test_gpu_paths_on_host.py``).
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import device_params

DEVICES = device_params()
DTYPES = ["float64", "float32"]


def tensor(values, dtype, device):
    return gg.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, device=device)


def first(f, x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x).numpy()


def forward(f, x):
    """J v with v all ones, by gg.jvp."""
    return gg.jvp(f, (x,), (gg.ones_like(x),))[1].numpy()


def second(f, x):
    """The gradient of sum(gradient of sum(f)): the Hessian's row sums."""
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(f(x))
        g = gg.sum(inner.gradient(y, x))
    return outer.gradient(g, x).numpy()


TOLERANCE = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-6}


def check(got, want):
    assert np.isfinite(got).all(), f"got {got}, want {want}"
    tol = TOLERANCE[got.dtype]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


# ---------------------------------------------------------------- power


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", ["number", "tensor"])
def test_zeroth_power_has_gradient_zero_everywhere(exponent, dtype, device):
    # x ** 0 = 1: every derivative is 0, at x = 0 too (it was 0 * 0 ** -1 = NaN)
    x = tensor([0.0, 1.5, -2.0], dtype, device)
    y = 0.0 if exponent == "number" else tensor([0.0, 0.0, 0.0], dtype, device)
    f = lambda t: t ** y  # noqa: E731
    check(first(f, x), [0.0, 0.0, 0.0])
    check(forward(f, x), [0.0, 0.0, 0.0])
    check(second(f, x), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_first_power_has_second_derivative_zero_at_zero(dtype, device):
    # x ** 1 = x: d2/dx2 = 1 * 0 * x ** -1 was NaN at 0
    x = tensor([0.0, 2.0, -3.0], dtype, device)
    f = lambda t: t ** 1.0  # noqa: E731
    check(first(f, x), [1.0, 1.0, 1.0])
    check(forward(f, x), [1.0, 1.0, 1.0])
    check(second(f, x), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_power_with_integer_exponents_on_negative_bases(dtype, device):
    x = tensor([-2.0, 0.0, 3.0], dtype, device)
    f = lambda t: t ** 3.0  # noqa: E731
    check(first(f, x), [12.0, 0.0, 27.0])
    check(forward(f, x), [12.0, 0.0, 27.0])
    check(second(f, x), [-12.0, 0.0, 18.0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_base_in_forward_mode(dtype, device):
    # 0 ** y = 0 for y > 0: the tangent is 0. gg.jvp's sweep fills a zero in for the unused
    # gradient of x, which met d(0 ** y)/dx = y 0 ** (y - 1) = inf at y < 1: 0 * inf = NaN
    zero = tensor([0.0, 0.0], dtype, device)
    y = tensor([0.5, 2.0], dtype, device)
    f = lambda t: zero ** t  # noqa: E731
    check(first(f, y), [0.0, 0.0])
    check(forward(f, y), [0.0, 0.0])
    check(second(f, y), [0.0, 0.0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_base_to_second_order(dtype, device):
    # y * 0 ** y = 0 for y > 0: its second derivative is 0 (it was NaN through the same 0 * inf)
    zero = tensor([0.0, 0.0], dtype, device)
    y = tensor([0.5, 2.0], dtype, device)
    f = lambda t: t * zero ** t  # noqa: E731
    check(first(f, y), [0.0, 0.0])
    check(forward(f, y), [0.0, 0.0])
    check(second(f, y), [0.0, 0.0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_power_in_the_unselected_branch_of_where(dtype, device):
    # where(x > 0, x ** 0.5, 0) is constant 0 for x < 0: its gradient there is 0, not 0 * NaN
    x = tensor([-1.0, 4.0], dtype, device)
    f = lambda t: gg.where(t.numpy() > 0, t ** 0.5, 0.0)  # noqa: E731
    check(first(f, x), [0.0, 0.25])
    check(forward(f, x), [0.0, 0.25])
    check(second(f, x), [0.0, -1.0 / 32.0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_jacobian_of_an_elementwise_power_is_diagonal(dtype, device):
    # d(x_j ** 0.5)/dx_i = 0 for i != j, though d(x_0 ** 0.5)/dx_0 is inf at x_0 = 0
    x = tensor([0.0, 1.0], dtype, device)
    jac = gg.jacobian(lambda t: t ** 0.5)(x).numpy()
    assert jac[0, 0] == np.inf
    np.testing.assert_array_equal(jac[0, 1:], [0.0])
    np.testing.assert_array_equal(jac[1], [0.0, 0.5])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_power_in_both_arguments_at_a_zero_base(dtype, device):
    # f(x, y) = x ** y at (0, 1): df/dx = 1 and d2f/dx2 = 0; df/dy and the mixed term are 0 by
    # convention (x ** y has no derivative in y at x = 0); every entry finite
    x, y = tensor([0.0], dtype, device), tensor([1.0], dtype, device)
    f = lambda a, b: gg.sum(a ** b)  # noqa: E731
    out, tangent = gg.jvp(f, (x, y), (gg.ones_like(x), gg.ones_like(y)))
    check(tangent.numpy(), 1.0)
    hx, hy = gg.hvp(f, (x, y), (gg.ones_like(x), gg.ones_like(y)))
    check(hx.numpy(), [0.0])
    check(hy.numpy(), [0.0])


# ---------------------------------------------------------------- std


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_std_over_one_element_has_gradient_zero(dtype, device):
    # std over an axis of one element is 0 whatever x is: every derivative is 0 (it was 0 / 0)
    x = tensor([[3.0], [-2.0]], dtype, device)
    f = lambda t: gg.std(t, axis=1)  # noqa: E731
    check(first(f, x), [[0.0], [0.0]])
    check(forward(f, x), [0.0, 0.0])
    check(second(f, x), [[0.0], [0.0]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_std_of_equal_elements_has_gradient_zero(dtype, device):
    # std has a kink at its minimum (all elements equal); 0 is PyTorch's choice there, not NaN,
    # and other groups keep their gradient
    x = tensor([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]], dtype, device)
    got = first(lambda t: gg.std(t, axis=1, keepdims=True), x)
    check(got[0], [0.0, 0.0, 0.0])
    check(got[1], np.array([-1.0, 0.0, 1.0]) / 3.0 / np.sqrt(2.0 / 3.0))
    check(forward(lambda t: gg.std(t, axis=1), x), [0.0, 0.0])


@pytest.mark.parametrize("device", DEVICES)
def test_std_gradient_away_from_the_edge_is_unchanged(device):
    x = tensor([[1.0, 2.0, 4.0]], "float64", device)
    centered = np.array([1.0, 2.0, 4.0]) - 7.0 / 3.0
    want = centered / 3.0 / np.sqrt(np.mean(centered ** 2))
    np.testing.assert_allclose(first(lambda t: gg.std(t), x)[0], want, rtol=1e-12)


# ---------------------------------------------------------------- gelu


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES + ["float16"])
def test_gelu_second_derivative_far_out_is_zero(dtype, device):
    # gelu''(x) = phi(x) (2 - x^2) -> 0; x^2 overflowing to inf made it 0 * -inf = NaN
    # (float16 at |x| = 300, float32 at 1e30)
    big = {"float16": 300.0, "float32": 1e30, "float64": 1e200}[dtype]
    x = tensor([big, -big, 0.0], dtype, device)
    check(first(gg.gelu, x), [1.0, 0.0, 0.5])
    check(second(gg.gelu, x), [0.0, 0.0, 2.0 / np.sqrt(2.0 * np.pi)])


# ---------------------------------------------------------------- guards: edges already right


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_logsumexp_and_softmax_with_minus_inf_entries(dtype, device):
    x = tensor([-np.inf, 0.0, 1.0], dtype, device)
    p = np.array([0.0, 1.0, np.e]) / (1.0 + np.e)
    check(first(gg.logsumexp, x), p)
    check(forward(gg.logsumexp, x), 1.0)
    # lse(w x): Hessian diag(w) (diag(q) - q q^T) diag(w) with q = softmax(w x); its row sums
    w_np = np.array([1.0, 2.0, 3.0])
    q = np.array([0.0, 1.0, np.exp(3.0)]) / (1.0 + np.exp(3.0))
    w = tensor(w_np, dtype, device)
    check(second(lambda t: gg.logsumexp(t * w), x), w_np * (q * w_np - q * np.dot(q, w_np)))
    for f in (lambda t: gg.softmax(t) * w, lambda t: gg.log_softmax(t)[1:] * w[1:],
              lambda t: gg.softmax_cross_entropy(gg.reshape(t, (1, 3)), [2])):
        for got in (first(f, x), forward(f, x), second(f, x)):
            assert np.isfinite(got).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_prod_with_zeros_is_exact(dtype, device):
    x = tensor([0.0, 2.0, 3.0], dtype, device)
    check(first(gg.prod, x), [6.0, 0.0, 0.0])
    check(forward(gg.prod, x), 6.0)
    check(second(gg.prod, x), [5.0, 3.0, 2.0])  # the Hessian's rows: [0 3 2], [3 0 0], [2 0 0]


# ---------------------------------------------------------------- max, min


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_and_min_send_zero_to_the_others_even_under_an_infinite_dy(dtype, device):
    # sqrt(max(x)) at max(x) = 0: d/dx is inf at the maximum and exactly 0 at the others (the
    # function does not depend on them nearby); a 0/1 mask times dy = inf made those 0 * inf = NaN
    x = tensor([[0.0, -1.0, 0.0, -3.0]], dtype, device)
    got = first(lambda t: gg.sqrt(gg.max(t, axis=1)), x)
    np.testing.assert_array_equal(got, [[np.inf, 0.0, np.inf, 0.0]])
    got = first(lambda t: gg.sqrt(-3.0 - gg.min(t, axis=1)), x)
    np.testing.assert_array_equal(got, [[0.0, 0.0, 0.0, -np.inf]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_ties_still_share_the_gradient(dtype, device):
    x = tensor([[1.0, 5.0, 5.0], [3.0, 3.0, 3.0]], dtype, device)
    check(first(lambda t: gg.max(t, axis=1), x), [[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    check(forward(lambda t: gg.max(t, axis=1), x), [1.0, 1.0])
    check(second(lambda t: gg.square(gg.max(t, axis=1)), x), [[0.0, 1.0, 1.0], [2 / 3, 2 / 3, 2 / 3]])


@pytest.mark.parametrize("device", DEVICES)
def test_anomaly_mode_accepts_the_gradient_of_a_zero_base_power(device):
    # d(0 ** y)/dy = 0 is finite; the unused d(0 ** y)/dx = y 0 ** (y - 1) = inf at y = 0.5 is not
    # part of it, and must not be reported as an anomaly
    zero = tensor([0.0, 0.0, 2.0], "float64", device)
    y = tensor([0.5, 2.0, 0.5], "float64", device)
    with gg.detect_anomaly():
        got = first(lambda t: zero ** t, y)
    check(got, [0.0, 0.0, np.sqrt(2.0) * np.log(2.0)])


@pytest.mark.parametrize("device", device_params())
def test_clip_with_a_nan_bound_is_nan_on_every_device_as_in_numpy(device):
    x = gg.tensor([-1.0, 0.5, 2.0, np.nan], device=device)
    lo = gg.tensor([np.nan, 0.0, 0.0, 0.0], device=device)
    expected = np.clip(x.numpy(), lo.numpy(), 1.0)  # [nan, 0.5, 1.0, nan]
    np.testing.assert_array_equal(gg.clip(x, lo, 1.0).numpy(), expected)
    np.testing.assert_array_equal(gg.clip(x, None, 1.0).numpy(), np.clip(x.numpy(), None, 1.0))
    for bound, expected_grad in ((float("nan"), [0.0, 0.0, 0.0, 0.0]), (None, [1.0, 1.0, 0.0, 0.0])):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(gg.clip(x, bound, 1.0) * 1.0)
        assert tape.gradient(y, x).numpy().tolist() == expected_grad
