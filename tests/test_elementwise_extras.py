"""relu6, selu, celu, hardswish, logit, gelu(approximate="tanh"); floor_divide and //, copysign, isclose,
allclose, the bitwise ops and their operators, concatenate and NumPy's constants on gg: against NumPy and
reference formulas in float64, and against PyTorch's values and gradients (first and second order) where it is
installed (a test-only oracle)."""
import math

import numpy as np
import pytest

import gpugrad as gg

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def t64(a):
    return gg.tensor(np.asarray(a, dtype=np.float64), dtype="float64")


def grads(fn, x, order=1):
    x = t64(x)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(fn(x))
        g = inner.gradient(y, x)
        total = gg.sum(g)
    if order == 1:
        return g.numpy()
    second = outer.gradient(total, x)
    return np.zeros(x.shape) if second is None else second.numpy()


X = np.array([-7.0, -3.5, -2.0, -0.4, 0.3, 1.7, 2.9, 4.2, 6.5, 9.0])


def _formulas():
    """(name, gpugrad fn, NumPy formula of the value, of the derivative)."""
    gk, gc = math.sqrt(2 / math.pi), 0.044715

    def gelu_tanh(x):
        return 0.5 * x * (1 + np.tanh(gk * (x + gc * x ** 3)))

    def gelu_tanh_d(x):
        th = np.tanh(gk * (x + gc * x ** 3))
        return 0.5 * (1 + th) + 0.5 * x * (1 - th ** 2) * gk * (1 + 3 * gc * x ** 2)

    return [
        ("relu6", gg.relu6, lambda x: np.clip(x, 0, 6), lambda x: ((x > 0) & (x < 6)) * 1.0),
        ("selu", gg.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
         lambda x: SELU_SCALE * np.where(x > 0, 1.0, SELU_ALPHA * np.exp(x))),
        ("celu", lambda x: gg.celu(x, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x / 1.5)),
         lambda x: np.where(x > 0, 1.0, np.exp(x / 1.5))),
        ("hardswish", gg.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
         lambda x: np.where(x < -3, 0.0, np.where(x <= 3, x / 3 + 0.5, 1.0))),
        ("gelu_tanh", lambda x: gg.gelu(x, approximate="tanh"), gelu_tanh, gelu_tanh_d),
    ]


@pytest.mark.parametrize("name", ["relu6", "selu", "celu", "hardswish", "gelu_tanh"])
def test_activations_match_their_formulas_and_derivatives(name):
    _, fn, value, derivative = next(case for case in _formulas() if case[0] == name)
    np.testing.assert_allclose(fn(t64(X)).numpy(), value(X), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(grads(fn, X), derivative(X), rtol=1e-13, atol=1e-15)


def test_activations_keep_float32_and_take_integers_as_float32():
    for fn in (gg.relu6, gg.selu, gg.celu, gg.hardswish, gg.logit, lambda x: gg.gelu(x, approximate="tanh")):
        assert fn(gg.tensor([0.25], dtype="float32")).dtype == np.float32
        assert fn(gg.tensor([1])).dtype == np.float32


def test_logit_inverts_sigmoid_and_its_eps_clamps_value_and_gradient():
    p = np.array([0.0, 0.02, 0.3, 0.5, 0.97, 1.0])
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(gg.logit(t64(p)).numpy(), np.log(p / (1 - p)), rtol=1e-14)
    np.testing.assert_allclose(gg.logit(gg.sigmoid(t64(X))).numpy(), X, rtol=1e-12)
    clamped = np.clip(p, 0.05, 0.95)
    np.testing.assert_allclose(gg.logit(t64(p), eps=0.05).numpy(), np.log(clamped / (1 - clamped)), rtol=1e-14)
    inside = (p >= 0.05) & (p <= 0.95)
    np.testing.assert_allclose(grads(lambda x: gg.logit(x, eps=0.05), p), np.where(inside, 1 / (p * (1 - p)), 0.0))
    assert np.isfinite(grads(lambda x: gg.logit(x, eps=0.05), p, order=2)).all()  # no 0 * inf outside
    with pytest.raises(ValueError, match="Logit"):
        gg.logit(t64(p), eps=0.7)


def test_gelu_refuses_an_unknown_approximation_and_celu_a_zero_alpha():
    with pytest.raises(ValueError, match="Gelu.*tanh"):
        gg.gelu(t64([1.0]), approximate="sigmoid")
    with pytest.raises(ValueError, match="Celu"):
        gg.celu(t64([1.0]), alpha=0.0)


# ---------------------------------------------------------------- NumPy's names


def test_floor_divide_and_the_operator_match_numpy_with_a_zero_gradient():
    a, b = np.array([7, -7, 7, -7, 0]), np.array([2, 2, -2, -2, 3])
    np.testing.assert_array_equal((gg.tensor(a) // gg.tensor(b)).numpy(), a // b)
    assert (gg.tensor(a) // gg.tensor(b)).dtype == (a // b).dtype
    af, bf = a + 0.5, b * 1.5
    np.testing.assert_array_equal(gg.floor_divide(t64(af), t64(bf)).numpy(), np.floor_divide(af, bf))
    np.testing.assert_array_equal((7.0 // t64(bf)).numpy(), 7.0 // bf)
    np.testing.assert_array_equal(np.floor_divide(t64(af), 2.0).numpy(), np.floor_divide(af, 2.0))
    x, y = t64(af), t64(bf)
    with gg.GradientTape() as tape:
        tape.watch([x, y])
        z = gg.sum(x // y)
    gx, gy = tape.gradient(z, [x, y])
    assert gx.numpy().tolist() == [0.0] * 5 and gy.numpy().tolist() == [0.0] * 5  # PyTorch's: zeros, declared


def test_copysign_matches_numpy_and_its_gradient_is_the_sign_flip():
    a, b = np.array([1.5, -2.0, 3.0, 0.0, -0.5]), np.array([-1.0, 1.0, -0.0, -2.0, -3.0])
    np.testing.assert_array_equal(gg.copysign(t64(a), t64(b)).numpy(), np.copysign(a, b))
    x, y = t64(a), t64(b)
    with gg.GradientTape() as tape:
        tape.watch([x, y])
        z = gg.sum(gg.copysign(x, y) * t64([1.0, 2.0, 3.0, 4.0, 5.0]))
    gx, gy = tape.gradient(z, [x, y])
    flip = np.where(a == 0, 0.0, np.copysign(a, b) / np.where(a == 0, 1.0, a))
    np.testing.assert_array_equal(gx.numpy(), flip * [1, 2, 3, 4, 5])
    assert gy.numpy().tolist() == [0.0] * 5


def test_isclose_and_allclose_follow_numpy():
    a = np.array([1.0, 1.0, np.inf, -np.inf, np.nan, 0.0, 1e-9])
    b = np.array([1.0 + 1e-9, 1.1, np.inf, np.inf, np.nan, 1e-9, 0.0])
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 0.0}):
        np.testing.assert_array_equal(gg.isclose(t64(a), t64(b), **kwargs).numpy(), np.isclose(a, b, **kwargs))
        assert gg.allclose(t64(a[:2]), t64(b[:2]), **kwargs) == np.allclose(a[:2], b[:2], **kwargs)
    assert gg.allclose(t64(a), t64(a), equal_nan=True) is True and gg.allclose(t64(a), t64(a)) is False


def test_allclose_refuses_to_be_frozen_by_a_trace():
    @gg.function
    def f(x):
        return gg.allclose(x, x)

    with pytest.raises(gg.TraceError):
        f(t64([1.0]))


@pytest.mark.parametrize("name, op", [("bitwise_and", "__and__"), ("bitwise_or", "__or__"),
                                      ("bitwise_xor", "__xor__"), ("left_shift", "__lshift__"),
                                      ("right_shift", "__rshift__")])
def test_bitwise_ops_and_their_operators_match_numpy(name, op):
    a, b = np.arange(-6, 6, dtype=np.int32).reshape(3, 4), (np.arange(12, dtype=np.int32) % 4).reshape(3, 4)
    want = getattr(np, name)(a, b)
    for got in (getattr(gg, name)(gg.tensor(a), gg.tensor(b)), getattr(gg.tensor(a), op)(gg.tensor(b)),
                getattr(gg.tensor(a), op)(b), getattr(np, name)(a, gg.tensor(b))):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    reflected = getattr(gg.tensor(b), "__r" + op[2:])(3)  # 3 <op> b
    np.testing.assert_array_equal(reflected.numpy(), getattr(np, name)(3, b))
    if name != "left_shift" and name != "right_shift":
        pa, pb = a > 0, b > 1
        np.testing.assert_array_equal(getattr(gg.tensor(pa), op)(gg.tensor(pb)).numpy(), getattr(np, name)(pa, pb))


def test_invert_matches_numpy_and_floats_are_refused_by_name():
    a = np.array([0, 5, -3], dtype=np.int64)
    np.testing.assert_array_equal((~gg.tensor(a)).numpy(), ~a)
    np.testing.assert_array_equal(gg.invert(gg.tensor(a > 0)).numpy(), ~(a > 0))
    with pytest.raises(gg.DTypeError, match="bitwise_and"):
        gg.tensor([1.0]) & gg.tensor([1.0])
    with pytest.raises(gg.DTypeError, match="invert"):
        ~gg.tensor([1.0])


def test_concatenate_and_numpys_constants_on_gg():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3)
    np.testing.assert_array_equal(gg.concatenate([t64(a), t64(b)]).numpy(), np.concatenate([a, b]))
    np.testing.assert_array_equal(gg.concatenate([t64(a), t64(b)], axis=None).numpy(),
                                  np.concatenate([a, b], axis=None))
    assert (gg.pi, gg.e, gg.inf, gg.newaxis) == (np.pi, np.e, np.inf, np.newaxis) and np.isnan(gg.nan)
    assert t64(a)[:, gg.newaxis].shape == (2, 1, 3)


# ---------------------------------------------------------------- against PyTorch


def _torch():
    return pytest.importorskip("torch", reason="PyTorch is the test-only oracle here (not a dependency of gpugrad)")


@pytest.mark.parametrize("name", ["relu6", "selu", "celu", "hardswish", "gelu_tanh", "logit", "logit_eps",
                                  "copysign"])
def test_activations_match_torch_values_and_gradients_of_two_orders(name):
    torch = _torch()
    F = torch.nn.functional
    p = np.array([0.01, 0.03, 0.2, 0.5, 0.8, 0.96, 0.99])
    sign = torch.tensor([-1.0, 2.0, -3.0, 1.0, -1.0, 1.0, -2.0, 3.0, 1.0, -1.0], dtype=torch.float64)
    cases = {
        "relu6": (gg.relu6, F.relu6, X), "selu": (gg.selu, F.selu, X),
        "celu": (lambda x: gg.celu(x, alpha=1.5), lambda x: F.celu(x, alpha=1.5), X),
        "hardswish": (gg.hardswish, F.hardswish, X),
        "gelu_tanh": (lambda x: gg.gelu(x, approximate="tanh"), lambda x: F.gelu(x, approximate="tanh"), X),
        "logit": (gg.logit, torch.logit, p),
        "logit_eps": (lambda x: gg.logit(x, eps=0.05), lambda x: torch.logit(x, eps=0.05), p),
        "copysign": (lambda x: gg.copysign(x, t64(sign.numpy())), lambda x: torch.copysign(x, sign), X),
    }
    fn, ref, x = cases[name]
    xt = torch.tensor(x, requires_grad=True)
    yt = ref(xt)
    np.testing.assert_allclose(fn(t64(x)).numpy(), yt.detach().numpy(), rtol=1e-14, atol=1e-15)
    (g1,) = torch.autograd.grad(yt.sum(), xt, create_graph=True)
    np.testing.assert_allclose(grads(fn, x), g1.detach().numpy(), rtol=1e-13, atol=1e-15)
    g2 = torch.autograd.grad(g1.sum(), xt, allow_unused=True)[0] if g1.requires_grad else None
    want2 = np.zeros_like(x) if g2 is None else g2.numpy()
    np.testing.assert_allclose(grads(fn, x, order=2), want2, rtol=1e-12, atol=1e-14)


def test_floor_divide_matches_torch_on_integers_and_floats():
    torch = _torch()
    a, b = np.array([7, -7, 7, -7, 0]), np.array([2, 2, -2, -2, 3])
    np.testing.assert_array_equal((gg.tensor(a) // gg.tensor(b)).numpy(), (torch.tensor(a) // torch.tensor(b)).numpy())
    af, bf = a + 0.5, b * 1.5
    np.testing.assert_array_equal((t64(af) // t64(bf)).numpy(), (torch.tensor(af) // torch.tensor(bf)).numpy())
