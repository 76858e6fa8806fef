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


def test_single_input_gradient_as_a_one_element_list():
    @gg.custom_gradient
    def double(x):
        return x * 2.0, lambda dy: [dy * 2.0]

    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    assert y.item() == 6.0
    assert tape.gradient(y, x).item() == 2.0


def test_custom_gradient_replaces_the_ops_inside():
    @gg.custom_gradient
    def fake_square(x):
        def grad(dy):
            return dy * 100.0  # deliberately not 2x: proves the inner ops are not used

        return x * x, grad

    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = fake_square(x) + x
    assert y.item() == 12.0
    assert tape.gradient(y, x).item() == 101.0


def test_multiple_inputs():
    @gg.custom_gradient
    def weighted(a, b):
        def grad(dy):
            return dy * b, dy * a * 2.0  # b's gradient doubled on purpose: grad decides

        return a * b, grad

    a, b = gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])
    with gg.GradientTape() as tape:
        tape.watch([a, b])
        y = weighted(a, b)
    np.testing.assert_allclose(y.numpy(), [3.0, 8.0])
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(gb.numpy(), [2.0, 4.0])


def test_multiple_inputs_with_one_none_gradient():
    @gg.custom_gradient
    def scale(x, factor):
        return x * factor, lambda dy: (dy * factor, None)

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


def test_custom_gradient_third_order():
    x = gg.tensor(1.25, dtype=gg.float64)
    with gg.GradientTape() as t3:
        t3.watch(x)
        with gg.GradientTape() as t2:
            t2.watch(x)
            with gg.GradientTape() as t1:
                t1.watch(x)
                y = cube(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    assert (d1.item(), d2.item(), d3.item()) == pytest.approx((3 * 1.25 ** 2, 6 * 1.25, 6.0), rel=1e-14)


def test_custom_gradient_matches_finite_differences():
    from gpugrad.gradient_checker import compute_gradient, max_error

    @gg.custom_gradient
    def softplus(x):
        e = gg.exp(x)

        def grad(dy):
            return dy * (1.0 - 1.0 / (1.0 + e))

        return gg.log(1.0 + e), grad

    x = gg.tensor(np.array([-2.0, -0.3, 0.4, 1.7]))
    theoretical, numerical = compute_gradient(softplus, [x], delta=1e-6)
    assert max_error(theoretical, numerical) < 1e-8


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
