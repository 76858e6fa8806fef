"""Properties every registered gradient rule has, table-driven over the op specs.

A rule is linear in its upstream gradient ``dy``: the rule at ``a * dy`` is ``a`` times the
rule at ``dy`` (``a = 0`` included), and its derivative in ``dy`` is the same at every
``dy`` (0 included). ``gg.jvp`` differentiates a rule in ``dy`` at a zero cotangent, so a
numerical mend that selects on ``dy``'s value (or where the unmended value is finite) shows
up here as a wrong tangent. The tangent of ``gg.jvp`` must equal the finite-difference
Jacobian times the tangent, and ``gg.jacobian(f)(x) @ v``.
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import device_params, recorded_types
from gpugrad._tools.op_specs import ALL_SPECS, OpSpec

SPEC_PARAMS = [pytest.param(spec, id=spec.id) for spec in ALL_SPECS]
TWICE = [p for p in SPEC_PARAMS if p.values[0].order >= 2]
RTOL, ATOL = 1e-9, 1e-10  # float64, same inputs, only the rounding of a product differs


def _rtol(spec, xs):
    """float32's rounding where the op casts its gradient through float32 (Cast), else float64's."""
    return 1e-6 if "Cast" in recorded_types(spec.fn, xs) else RTOL


def _inputs(spec, device):
    """The spec's inputs on ``device``; None (after checking the DeviceError) where its op runs on the CPU only."""
    xs = [gg.tensor(a) for a in spec.inputs()]
    if spec.refused_on(device):
        with pytest.raises(gg.DeviceError, match="CPU only"):
            spec.fn(*xs)
        return None
    return xs


def _vjp(spec, xs, u):
    """The gradient of ``<spec.fn(xs), u>`` with respect to each of ``xs`` (zeros where unconnected)."""
    with gg.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(xs)
        y = spec.fn(*xs)
    return tape.gradient(y, xs, output_gradients=u, unconnected_gradients="zero")


def _output(spec, xs):
    return spec.fn(*xs)


def _like(y, rng):
    return gg.tensor(rng.uniform(0.5, 1.5, y.shape) * rng.choice([-1.0, 1.0], y.shape), dtype=y.dtype)


def _close(actual, expected, what, rtol=RTOL):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=ATOL, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", SPEC_PARAMS)
def test_rule_is_linear_in_dy(spec: OpSpec, device):
    with gg.device(device):
        xs = _inputs(spec, device)
        if xs is None:
            return
        w = _like(_output(spec, xs), np.random.default_rng(3))
        base = [g.numpy() for g in _vjp(spec, xs, w)]
        rtol = _rtol(spec, xs)
        for a in (0.0, 2.5, -1.0):
            scaled = _vjp(spec, xs, w * a)
            for i, (g, b) in enumerate(zip(scaled, base)):
                with np.errstate(invalid="ignore"):  # 0 * inf: where a rule may mend its value (not its derivative)
                    expected = a * b
                finite = np.isfinite(expected)
                _close(g.numpy()[finite], expected[finite], f"{spec.id}: gradient {i} at {a} * dy is not {a} times "
                                                            f"the one at dy", rtol)


def _derivative_in_dy(spec, xs, u, v):
    """d<vjp(u), v>/du at ``u``: the rule's derivative in its upstream gradient, through its own gradient."""
    with gg.GradientTape(watch_accessed_variables=False) as outer:
        outer.watch(u)
        grads = _vjp(spec, xs, u)
    return outer.gradient(grads, u, output_gradients=v, unconnected_gradients="zero").numpy()


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", TWICE)
def test_rule_derivative_in_dy_is_the_same_at_zero(spec: OpSpec, device):
    with gg.device(device):
        xs = _inputs(spec, device)
        if xs is None:
            return
        rng = np.random.default_rng(5)
        y = _output(spec, xs)
        vs = [_like(x, rng) for x in xs]
        at_random = _derivative_in_dy(spec, xs, _like(y, rng), vs)
        at_zero = _derivative_in_dy(spec, xs, gg.zeros_like(y), vs)
        _close(at_zero, at_random, f"{spec.id}: the rule's derivative in dy at dy = 0 differs from that at a random dy",
               _rtol(spec, xs))


def _finite_difference_jvp(spec, xs, vs, delta=1e-6):
    """(f(x + delta v) - f(x - delta v)) / (2 delta), in float64 on the host's copy of the inputs."""
    plus = [gg.tensor(x.numpy() + delta * v.numpy()) for x, v in zip(xs, vs)]
    minus = [gg.tensor(x.numpy() - delta * v.numpy()) for x, v in zip(xs, vs)]
    return (spec.fn(*plus).numpy() - spec.fn(*minus).numpy()) / (2 * delta)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", TWICE)
def test_jvp_is_jacobian_times_tangent(spec: OpSpec, device):
    with gg.device(device):
        xs = _inputs(spec, device)
        if xs is None:
            return
        rng = np.random.default_rng(7)
        vs = [_like(x, rng) for x in xs]
        _, tangent = gg.jvp(spec.fn, tuple(xs), tuple(vs))
        tangent = tangent.numpy()
        jacs = gg.jacobian(spec.fn, argnums=tuple(range(len(xs))))(*xs)
        by_jacobian = sum(np.tensordot(j.numpy(), v.numpy(), axes=v.ndim) for j, v in zip(jacs, vs))
        _close(tangent, by_jacobian, f"{spec.id}: jvp is not jacobian @ v", _rtol(spec, xs))
        numerical = _finite_difference_jvp(spec, xs, vs)
        scale = max(1.0, float(np.max(np.abs(numerical))) if numerical.size else 1.0)
        np.testing.assert_allclose(tangent, numerical, rtol=0, atol=1e-5 * scale,
                                   err_msg=f"{spec.id}: jvp is not the finite-difference J v")


# --------------------------------------------------------------------------- the cases that found the faults


SIN_POWERS = [  # f, and d/dx of f's gradient: x ** 2 records Square, a tensor exponent Pow
    ("sin_squared", lambda t: gg.sin(t) ** 2, lambda x: 2 * np.cos(2 * x)),
    ("sin_to_the_tensor_2", lambda t: gg.sin(t) ** gg.tensor(2.0, dtype=t.dtype), lambda x: 2 * np.cos(2 * x)),
    ("sin_cubed", lambda t: gg.sin(t) ** 3.0,
     lambda x: 6 * np.sin(x) * np.cos(x) ** 2 - 3 * np.sin(x) ** 3),
]


@pytest.mark.parametrize("name, f, second", SIN_POWERS, ids=[c[0] for c in SIN_POWERS])
def test_jvp_of_the_gradient_of_sum_sin_squared(name, f, second):
    """The issue's case: jvp of grad(sum(sin(x) ** 2)) where sin(x) < 0 too (a power of a negative base)."""
    x = gg.tensor(np.linspace(-3.0, 3.0, 13))
    v = gg.tensor(np.random.default_rng(0).uniform(0.5, 1.5, 13))
    _, tangent = gg.jvp(gg.grad(lambda t: gg.sum(f(t))), (x,), (v,))
    np.testing.assert_allclose(tangent.numpy(), second(x.numpy()) * v.numpy(), rtol=1e-12, atol=1e-12)


def test_jvp_does_not_depend_on_the_cotangent_it_picks():
    """The double-VJP construction at a zero cotangent and at a random one give the same tangent."""
    x = gg.tensor(np.linspace(-2.0, 2.0, 9))
    v = gg.tensor(np.random.default_rng(1).uniform(-1.0, 1.0, 9))
    f = gg.grad(lambda t: gg.sum(gg.power(t, 3.0) * gg.sin(t)))
    _, tangent = gg.jvp(f, (x,), (v,))
    u = gg.tensor(np.random.default_rng(2).uniform(-1.0, 1.0, 9))
    _, vjp_fn = gg.vjp(f, x)
    with gg.GradientTape() as tape:
        tape.watch(u)
        (transposed,) = vjp_fn(u)
    np.testing.assert_allclose(tangent.numpy(), tape.gradient(transposed, u, output_gradients=v).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_eigh_rule_derivative_in_dv_at_a_repeated_eigenvalue_does_not_depend_on_dv():
    """The eigenvector term at a repeated eigenvalue is inf whatever dv is: no mend reads dv's value."""
    a = gg.tensor(np.diag([2.0, 2.0, 5.0]))
    spec = OpSpec("SelfAdjointEigV2", lambda m: gg.linalg.eigh(m)[1], [(3, 3)])
    vs = [gg.tensor(np.random.default_rng(4).uniform(0.5, 1.5, (3, 3)))]
    with np.errstate(all="ignore"):
        at_zero = _derivative_in_dy(spec, [a], gg.zeros_like(a), vs)
        at_random = _derivative_in_dy(spec, [a], gg.tensor(np.random.default_rng(6).uniform(-1, 1, (3, 3))), vs)
    assert not np.all(np.isfinite(at_random))
    np.testing.assert_array_equal(np.isfinite(at_zero), np.isfinite(at_random))


@pytest.mark.parametrize("device", device_params())
def test_singular_values_gradient_is_finite_at_repeated_singular_values(device):
    """With U and Vh computed but unused, dA = U diag(dS) Vh (PyTorch's rule): no 0 / 0 from their terms."""
    a = np.diag([3.0, 3.0, 1.0]) @ np.linalg.qr(np.random.default_rng(8).normal(size=(3, 3)))[0]
    with gg.device(device):
        x = gg.tensor(a)
        with gg.GradientTape() as tape:
            tape.watch(x)
            s = gg.linalg.svd(x)[1]
            loss = gg.sum(s * gg.tensor([1.0, 2.0, 3.0]))
        g = tape.gradient(loss, x).numpy()
    u, _, vh = np.linalg.svd(a)
    np.testing.assert_allclose(g, u @ np.diag([1.0, 2.0, 3.0]) @ vh, atol=1e-12)


# --------------------------------------------------------------------------- low precision: the order of a product

LOW_ORDER_CASES = [  # (name, f of float tensors, inputs): a float16 result that an intermediate would overflow
    ("pow_exponent", lambda x, y: gg.power(x, y) * 1e-3, [4.0, 7.9]),  # x**y log(x) = 7.9e4 > 65504
    ("pow_base", lambda x, y: gg.power(x, y) * 1e-3, [0.01, -1.35]),  # y * x**(y - 1) = -6.8e4
    ("reciprocal", lambda x: gg.reciprocal(x) * 1e-3, [0.003]),  # 1 / x**2 = 1.1e5
    ("rsqrt", lambda x: gg.rsqrt(x) * 1e-3, [4e-4]),  # x**-1.5 / 2 = 6.2e4, y**3 = 1.25e5
    ("tan", lambda x: gg.tan(x) * 1e-3, [1.5675]),  # tan(x)^2 = 1.0e5
    ("arctan2", gg.arctan2, [300.0, 400.0]),  # x1^2 + x2^2 = 2.5e5
    ("arcsinh", gg.arcsinh, [300.0]),  # x^2 + 1 = 9e4
    ("arccosh", gg.arccosh, [300.0]),  # x^2 - 1 = 9e4
]


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name, f, values", LOW_ORDER_CASES, ids=[c[0] for c in LOW_ORDER_CASES])
def test_float16_gradient_is_not_computed_through_an_overflowing_product(name, f, values, device):
    with gg.device(device):
        def gradients(dtype):
            xs = [gg.tensor(np.array(v, dtype=np.float16).astype(dtype)) for v in values]  # float16's inputs
            with gg.GradientTape() as tape:
                tape.watch(xs)
                y = f(*xs)
            return [g.numpy().astype(np.float64) for g in tape.gradient(y, xs)]

        with np.errstate(over="ignore"):
            low = gradients(np.float16)
        for got, want in zip(low, gradients(np.float64)):
            assert np.isfinite(got), f"{name}: float16 gradient {got}, float64 {want}"
            np.testing.assert_allclose(got, want, rtol=1e-2)
