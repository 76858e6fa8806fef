"""@gg.custom_gradient and gg.record_operation: the user's ways to define a gradient.

Both go through the same recording path as built-in ops, so the checks here
are the tape's: first and second order against closed forms, variables, and
clear errors when a user's gradient function returns the wrong thing.
"""
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import registry
from gpugrad._recorder import active_tapes

from .conftest import check, gradient_function


@pytest.fixture(autouse=True)
def no_tape_leaks():
    yield
    assert not active_tapes(), f"tapes left recording: {active_tapes()}"


@pytest.fixture
def scratch_op():
    """A factory of fresh op-type names, unregistered again after the test."""
    names = []

    def make(stem):
        name = f"CustomGradTest{stem}{len(names)}"
        names.append(name)
        return name

    yield make
    for name in names:
        registry.rules.pop(name, None)
        registry._not_differentiable.discard(name)


# ---------------------------------------------------------------- without variables


@gg.custom_gradient
def clipped_identity(x):
    """Identity forward, gradient clipped to [-1, 1] (a classic custom gradient)."""
    def grad(dy):
        return gg.clip(dy, -1.0, 1.0)  # a bare tensor for the single input

    return x * 1.0, grad


def test_single_input_bare_tensor_gradient():
    x = gg.tensor([1.0, 2.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = clipped_identity(x)
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])
    g = tape.gradient(y, x, output_gradients=gg.tensor([0.5, -3.0, 7.0]))
    np.testing.assert_array_equal(g.numpy(), [0.5, -1.0, 1.0])


@gg.custom_gradient
def double(x):
    return x * 2.0, lambda dy: [dy * 2.0]


def test_single_input_gradient_as_a_one_element_list():
    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    assert y.item() == 6.0
    assert tape.gradient(y, x).item() == 2.0


@gg.custom_gradient
def fake_square(x):
    def grad(dy):
        return dy * 100.0  # deliberately not 2x: proves the inner ops are not used

    return x * x, grad


def test_custom_gradient_replaces_the_ops_inside():
    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = fake_square(x) + x
    assert y.item() == 12.0
    assert tape.gradient(y, x).item() == 101.0


@gg.custom_gradient
def weighted(a, b):
    def grad(dy):
        return dy * b, dy * a * 2.0  # b's gradient doubled on purpose: grad decides

    return a * b, grad


def test_multiple_inputs():
    a, b = gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])
    with gg.GradientTape() as tape:
        tape.watch([a, b])
        y = weighted(a, b)
    np.testing.assert_allclose(y.numpy(), [3.0, 8.0])
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(gb.numpy(), [2.0, 4.0])


@gg.custom_gradient
def scale(x, factor):
    return x * factor, lambda dy: (dy * factor, None)


def test_multiple_inputs_with_one_none_gradient():
    x, factor = gg.tensor([1.0, 2.0]), gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch([x, factor])
        y = scale(x, factor)
    gx, gf = tape.gradient(y, [x, factor])
    np.testing.assert_array_equal(gx.numpy(), [3.0, 3.0])
    assert gf is None


def test_custom_gradient_without_a_tape_just_computes():
    y = clipped_identity(gg.tensor([4.0]))
    assert isinstance(y, gg.Tensor)
    np.testing.assert_array_equal(y.numpy(), [4.0])


def test_custom_gradient_sees_only_upstream_it_is_given():
    received = []

    @gg.custom_gradient
    def spy(x):
        def grad(dy):
            received.append(dy.numpy().copy())
            return dy

        return x + 0.0, grad

    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = spy(x) * gg.tensor([5.0, 7.0])
    tape.gradient(y, x)
    np.testing.assert_array_equal(received[0], [5.0, 7.0])


# ---------------------------------------------------------------- with variables


def test_with_variables():
    w = gg.Variable([2.0, 3.0], name="w")

    @gg.custom_gradient
    def scaled(x):
        out = x * w

        def grad(dy, variables=None):
            assert variables is not None and len(variables) == 1 and variables[0] is w
            return [dy * w], [dy * x * 10.0]  # variable gradient deliberately scaled by 10

        return out, grad

    x = gg.tensor([1.0, 4.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x)
    np.testing.assert_array_equal(y.numpy(), [2.0, 12.0])
    assert tape.watched_variables() == (w,)
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_array_equal(gx.numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(gw.numpy(), [10.0, 40.0])


def test_with_two_variables_and_a_bare_input_gradient():
    a, b = gg.Variable(2.0, name="a"), gg.Variable(5.0, name="b")

    @gg.custom_gradient
    def affine(x):
        def grad(dy, variables=None):
            assert [v.name for v in variables] == ["a", "b"]
            return dy * a, [dy * x, dy]

        return a * x + b, grad

    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = affine(x)
    assert y.item() == 11.0
    gx, ga, gb = tape.gradient(y, [x, a, b])
    assert (gx.item(), ga.item(), gb.item()) == (2.0, 3.0, 1.0)


def test_variables_read_but_grad_fn_without_variables_keyword_raises():
    w = gg.Variable(2.0)

    @gg.custom_gradient
    def forgets_variables(x):
        return x * w, lambda dy: dy * w

    x = gg.tensor(1.0)
    with pytest.raises(gg.GradientError, match="forgets_variables.*variables"):
        with gg.GradientTape() as tape:
            tape.watch(x)
            forgets_variables(x)


def test_wrong_number_of_variable_gradients_raises():
    w = gg.Variable(2.0)

    @gg.custom_gradient
    def too_few_variable_grads(x):
        def grad(dy, variables=None):
            return dy * w, []

        return x * w, grad

    x = gg.tensor(1.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = too_few_variable_grads(x)
    with pytest.raises(gg.GradientError, match="too_few_variable_grads"):
        tape.gradient(y, [x, w])


# ---------------------------------------------------------------- errors


def test_wrong_number_of_input_gradients_names_the_function():
    @gg.custom_gradient
    def two_inputs_one_grad(a, b):
        return a * b, lambda dy: dy * b  # one gradient for two inputs

    a, b = gg.tensor(1.0), gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch([a, b])
        y = two_inputs_one_grad(a, b)
    with pytest.raises(gg.GradientError, match="two_inputs_one_grad") as info:
        tape.gradient(y, [a, b])
    assert "1" in str(info.value) and "2" in str(info.value)


def test_too_many_input_gradients_names_the_function():
    @gg.custom_gradient
    def one_input_three_grads(x):
        return x * 2.0, lambda dy: (dy, dy, dy)

    x = gg.tensor(1.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = one_input_three_grads(x)
    with pytest.raises(gg.GradientError, match="one_input_three_grads"):
        tape.gradient(y, x)


# ---------------------------------------------------------------- higher order


@gg.custom_gradient
def cube(x):
    def grad(dy):
        return dy * 3.0 * x * x  # written with gg ops, so an outer tape records it

    return x * x * x, grad


def test_custom_gradient_second_order_in_nested_tapes():
    x0 = np.array([-1.5, 0.5, 2.0])
    x = gg.tensor(x0)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(dy.numpy(), 3 * x0 ** 2, rtol=1e-14)
    np.testing.assert_allclose(d2y.numpy(), 6 * x0, rtol=1e-14)


def _three_derivatives(f, x):
    """The first three derivatives of elementwise ``f`` at ``x``, each from a tape nested in the next."""
    with gg.GradientTape() as t3:
        t3.watch(x)
        with gg.GradientTape() as t2:
            t2.watch(x)
            with gg.GradientTape() as t1:
                t1.watch(x)
                y = f(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    return d1, d2, t3.gradient(d2, x)


def test_custom_gradient_third_order():
    x = gg.tensor(1.25, dtype=gg.float64)
    d1, d2, d3 = _three_derivatives(cube, x)
    assert (d1.item(), d2.item(), d3.item()) == pytest.approx((3 * 1.25 ** 2, 6 * 1.25, 6.0), rel=1e-14)


def test_custom_gradient_matches_finite_differences():
    from gpugrad.gradient_checker import compute_gradient, max_error

    x = gg.tensor(np.array([-2.0, -0.3, 0.4, 1.7]))
    theoretical, numerical = compute_gradient(log1pexp, [x], delta=1e-6)
    assert max_error(theoretical, numerical) < 1e-8


# ---------------------------------------------------------------- higher order through forward values
# As TensorFlow does, the ops f runs are recorded on the active tapes, and only the custom op connects
# the inputs to y: so a grad_fn that reads a forward value (e = exp(x)) has the right higher derivatives.


@gg.custom_gradient
def log1pexp(x):
    """The README's example, word for word."""
    e = gg.exp(x)

    def grad(dy):
        return dy * (1 - 1 / (1 + e))

    return gg.log(1 + e), grad


@gg.custom_gradient
def clipped_log(x):
    """tests/test_anomaly.py's custom gradient (its grad_fn reads the input only)."""
    def grad(dy):
        return dy / (x - 1.0)

    return gg.log(x), grad


@gg.custom_gradient
def nested_weighted(pair, scale):
    """tests/test_trust_tape.py's nested-argument custom gradient."""
    a, b = pair
    y = a * b * scale

    def grad(dy):
        return [dy * b * scale, dy * a * scale], dy * a * b

    return y, grad


@gg.custom_gradient
def no_gradient(x):
    """tests/test_diagnostics.py's grad_fn that returns None."""
    return x * 2.0, lambda dy: None


@gg.custom_gradient
def tanh_from_its_output(x):
    """grad_fn reads the forward's output and an intermediate two ops deep."""
    e2 = gg.exp(x * 2.0)
    t = (e2 - 1.0) / (e2 + 1.0)

    def grad(dy):
        return dy * (1.0 - t * t)

    return t, grad


@gg.custom_gradient
def product_and_ratio(a, b):
    """Two outputs, two inputs; grad_fn reads both outputs."""
    p, r = a * b, a / b

    def grad(dp, dr):
        return dp * p / a + dr * r / a, dp * p / b - dr * r / b

    return (p, r), grad


def _both_outputs(a, b):
    p, r = product_and_ratio(a, b)
    return gg.sum(p) + gg.sum(r * 2.0)


# Every custom gradient of the suite that computes (those that raise on purpose are left out), with
# inputs: the second-order check is against central differences of the first-order gradient function,
# so a grad_fn that is deliberately not the true derivative (fake_square) is checked for what it is.
# Those of other test files are repeated here (test modules do not import each other): test_seed_examples'
# logexp is log1pexp, test_reference_cycles' and test_errors' double is double.
SECOND_ORDER_TABLE = [
    ("log1pexp (README)", log1pexp, [(-2.0, 3.0, (4,))]),
    ("tanh_from_its_output", tanh_from_its_output, [(-1.5, 1.5, (3,))]),
    ("product_and_ratio", _both_outputs, [(0.5, 2.0, (3,)), (0.5, 2.0, (3,))]),
    ("cube", cube, [(-2.0, 2.0, (3,))]),
    ("clipped_identity", clipped_identity, [(-2.0, 2.0, (3,))]),
    ("double", double, [(-2.0, 2.0, (3,))]),
    ("fake_square", fake_square, [(-2.0, 2.0, (3,))]),
    ("weighted", weighted, [(-2.0, 2.0, (2,)), (-2.0, 2.0, (2,))]),
    ("scale", scale, [(-2.0, 2.0, (2,)), (0.5, 2.0, ())]),
    ("clipped_log (anomaly)", clipped_log, [(1.5, 3.0, (3,))]),
    ("nested_weighted (trust_tape)", lambda a, b, c: nested_weighted([a, b], c), [(0.5, 2.0, ())] * 3),
    ("no_gradient (diagnostics)", no_gradient, [(-1.0, 1.0, (2,))]),
    ("double after exp (as test_reference_cycles uses it)", lambda x: double(gg.exp(x)), [(-1.0, 1.0, (3,))]),
]


def _inputs(ranges, seed=0):
    rng = np.random.default_rng(seed)
    return [gg.tensor(rng.uniform(lo, hi, shape)) for lo, hi, shape in ranges]


@pytest.mark.parametrize("name, fn, ranges", SECOND_ORDER_TABLE, ids=[row[0] for row in SECOND_ORDER_TABLE])
def test_every_custom_gradient_to_second_order_against_finite_differences(name, fn, ranges):
    xs = _inputs(ranges)
    check(gradient_function(fn, len(xs)), xs, delta=1e-6, tol=1e-6)


@pytest.mark.parametrize("fn", [log1pexp, tanh_from_its_output], ids=["log1pexp", "tanh_from_its_output"])
def test_third_order_through_forward_values_against_finite_differences(fn):
    xs = _inputs([(-1.5, 1.5, (3,))])
    second = gradient_function(fn, 1)
    check(second, xs, delta=1e-6, tol=1e-6)  # the level below must hold too, or the third is vacuous
    check(gradient_function(second, 1, seed=2), xs, delta=1e-6, tol=1e-5)


def _sigmoid_derivatives(x):
    s = 1.0 / (1.0 + np.exp(-x))
    return s, s * (1 - s), s * (1 - s) * (1 - 2 * s)  # d/dx log1pexp, its derivative, and the next


def test_readme_log1pexp_second_derivative_at_zero_is_a_quarter_and_third_is_its_derivative():
    x0 = np.array([0.0, 0.7, -1.3])
    x = gg.tensor(x0)
    d1, d2, d3 = _three_derivatives(log1pexp, x)
    expected = _sigmoid_derivatives(x0)
    assert d2.numpy()[0] == 0.25
    for got, want in zip((d1, d2, d3), expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)


def test_first_order_is_grad_fns_and_second_order_does_not_reach_the_recorded_internals():
    x = gg.tensor(3.0, dtype=gg.float64)
    with gg.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = fake_square(x)  # forward x * x, gradient dy * 100
        g = inner.gradient(y, x)
    assert "Mul" in [rec[0] for rec in outer._ops]  # the forward's op is recorded, as TensorFlow records it
    assert g.item() == 100.0
    assert outer.gradient(g, x, unconnected_gradients="zero").item() == 0.0  # d(100 dy)/dx, not 2
    assert outer.gradient(y, x).item() == 100.0


def test_second_order_in_a_persistent_tape_that_records_its_own_gradient():
    x0 = np.array([-0.5, 0.25, 1.5])
    x = gg.tensor(x0)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gg.sum(log1pexp(x))
        g = tape.gradient(y, x)  # recorded on the tape itself, inside its block
    np.testing.assert_allclose(tape.gradient(g, x).numpy(), _sigmoid_derivatives(x0)[1], rtol=1e-12)


def test_jacobian_of_a_recorded_gradient_and_hessian():
    x0 = np.array([-0.5, 0.25, 1.5])
    x = gg.tensor(x0)
    want = np.diag(_sigmoid_derivatives(x0)[1])
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(log1pexp(x))
        g = inner.gradient(y, x)
    np.testing.assert_allclose(outer.jacobian(g, x).numpy(), want, rtol=1e-12, atol=1e-15)
    hess = gg.hessian(lambda v: gg.sum(log1pexp(v)))(x)
    np.testing.assert_allclose(hess.numpy(), want, rtol=1e-12, atol=1e-15)
    check(lambda v: gg.jacobian(lambda u: gg.sum(log1pexp(u)))(v), [x], delta=1e-6, tol=1e-6)


def test_jvp_and_hvp_of_a_custom_gradients_gradient():
    x0, v0 = np.array([-0.5, 0.25, 1.5]), np.array([1.0, -2.0, 0.5])
    x, v = gg.tensor(x0), gg.tensor(v0)
    want = _sigmoid_derivatives(x0)[1] * v0  # the Hessian is diagonal
    _, tangent = gg.jvp(gg.grad(lambda u: gg.sum(log1pexp(u))), (x,), (v,))
    np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(gg.hvp(lambda u: gg.sum(log1pexp(u)), x, v).numpy(), want, rtol=1e-12)


def test_custom_gradient_second_order_inside_gg_function():
    def derivatives(x):
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                y = gg.sum(log1pexp(x))
            g = inner.gradient(y, x)
        return g, outer.gradient(g, x)

    traced = gg.function(derivatives)
    for x0 in ([0.0, 1.0, -2.0], [0.5, 0.3, 2.0]):  # the trace, then a replay
        x = gg.tensor(np.array(x0))
        g, h = traced(x)
        s, ds, _ = _sigmoid_derivatives(np.array(x0))
        np.testing.assert_allclose(g.numpy(), s, rtol=1e-12)
        np.testing.assert_allclose(h.numpy(), ds, rtol=1e-12)
    assert traced.trace_count == 1


def test_second_order_with_a_variable_read_inside_f():
    w = gg.Variable(np.array([0.7, -0.4]), name="w")

    @gg.custom_gradient
    def exp_scaled(x):
        e = gg.exp(x * w)  # reads w: grad_fn gets it in `variables`

        def grad(dy, variables=None):
            assert len(variables) == 1 and variables[0] is w
            return dy * w * e, [dy * x * e]

        return e, grad

    rng = np.random.default_rng(3)
    x0, w0 = rng.uniform(-1.0, 1.0, 2), w.numpy().copy()
    vx, vw = rng.uniform(0.5, 1.5, 2), rng.uniform(0.5, 1.5, 2)

    def first_order_total(x):
        """<d y/d x, vx> + <d y/d w, vw>: its derivatives are second derivatives of y."""
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(exp_scaled(x))
        gx, gw = inner.gradient(y, [x, w])
        return gg.sum(gx * vx) + gg.sum(gw * vw)

    x = gg.tensor(x0)
    with gg.GradientTape() as outer:
        outer.watch(x)
        total = first_order_total(x)
    assert outer.watched_variables() == (w,)
    tx, tw = outer.gradient(total, [x, w])

    def moved_total(which, i, step):
        xs, ws = x0.copy(), w0.copy()
        (xs if which == "x" else ws)[i] += step
        w.assign(ws)
        return first_order_total(gg.tensor(xs)).item()

    numeric = {which: np.array([(moved_total(which, i, 1e-6) - moved_total(which, i, -1e-6)) / 2e-6
                                for i in range(2)]) for which in ("x", "w")}
    np.testing.assert_allclose(tx.numpy(), numeric["x"], rtol=1e-6)
    np.testing.assert_allclose(tw.numpy(), numeric["w"], rtol=1e-6)


def test_second_order_in_threads_each_on_its_own_tapes():
    import threading

    errors = []

    def work(offset):
        try:
            for i in range(20):
                x0 = np.array([offset + 0.1 * i, -offset])
                x = gg.tensor(x0)
                with gg.GradientTape() as outer:
                    outer.watch(x)
                    with gg.GradientTape() as inner:
                        inner.watch(x)
                        y = gg.sum(log1pexp(x))
                    g = inner.gradient(y, x)
                np.testing.assert_allclose(outer.gradient(g, x).numpy(), _sigmoid_derivatives(x0)[1], rtol=1e-12)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(0.3 * k,)) for k in range(4)]
    with gg.GradientTape(persistent=True) as bystander:  # this thread's tape sees none of the threads' ops
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    assert bystander._ops == []


# ---------------------------------------------------------------- record_operation


def test_record_operation_with_a_backward_fn():
    x = gg.tensor(np.array([0.5, 1.0, 2.0]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.tensor(np.sin(x.numpy()))  # computed outside gpugrad
        gg.record_operation("HostSin", [y], [x], lambda dy: [dy * gg.cos(x)])
        z = y * y
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2 * np.sin(x.numpy()) * np.cos(x.numpy()), rtol=1e-14)


def test_record_operation_backward_fn_second_order():
    x = gg.tensor(np.array([0.5, 1.0, 2.0]))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.tensor(np.exp(2 * x.numpy()))
            gg.record_operation("HostExp2", [y], [x], lambda dy: [dy * 2.0 * gg.exp(x * 2.0)])
        dy = inner.gradient(y, x)
    np.testing.assert_allclose(outer.gradient(dy, x).numpy(), 4 * np.exp(2 * x.numpy()), rtol=1e-14)


def test_record_operation_backward_fn_reading_a_recorded_forward_value_has_its_second_derivative():
    x0 = np.array([0.5, 1.0, 2.0])
    x = gg.tensor(x0)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            e = gg.exp(x)  # recorded: the backward_fn's e stays a function of x for the outer tape
            y = gg.tensor(e.numpy())
            gg.record_operation("HostExpFromE", [y], [x], lambda dy: [dy * e])
        g = inner.gradient(y, x)
    np.testing.assert_allclose(outer.gradient(g, x).numpy(), np.exp(x0), rtol=1e-14)


def test_record_operation_several_inputs_and_outputs():
    a, b = gg.tensor(2.0), gg.tensor(5.0)
    with gg.GradientTape() as tape:
        tape.watch([a, b])
        s, p = gg.tensor(7.0), gg.tensor(10.0)  # a + b and a * b, computed by hand

        def backward(ds, dp):
            return ds + dp * b, ds + dp * a

        gg.record_operation("SumAndProduct", [s, p], [a, b], backward)
        y = s * 3.0 + p
    ga, gb = tape.gradient(y, [a, b])
    assert (ga.item(), gb.item()) == (3.0 + 5.0, 3.0 + 2.0)


def test_record_operation_uses_the_registered_gradient(scratch_op):
    name = scratch_op("Square")

    @gg.RegisterGradient(name)
    def _square_grad(op, dy):
        (x,) = op.inputs
        return [dy * 2.0 * x]

    x = gg.tensor(np.array([1.0, -3.0]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.tensor(x.numpy() ** 2)
        gg.record_operation(name, [y], [x], backward_fn=None)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, -6.0])


def test_record_operation_without_a_tape_does_nothing(scratch_op):
    name = scratch_op("Nothing")
    x = gg.tensor(1.0)
    y = gg.tensor(2.0)
    assert gg.record_operation(name, [y], [x]) is None
    with gg.GradientTape() as tape:
        tape.watch(x)
    assert tape.gradient(y, x) is None


def test_record_operation_on_unwatched_inputs_is_not_recorded():
    x = gg.tensor(1.0)
    with gg.GradientTape() as tape:
        y = gg.tensor(2.0)
        gg.record_operation("Ignored", [y], [x], lambda dy: [dy])
    assert tape.gradient(y, x) is None


def test_record_operation_rejects_non_tensor_outputs():
    x = gg.tensor(1.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError):
            gg.record_operation("Bad", [math.pi], [x], lambda dy: [dy])
