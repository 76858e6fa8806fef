"""GradientTape semantics: the autodiff contract of DESIGN.md.

Each test states one rule of the contract and checks it against a closed form.
Op types registered here for a test are removed again afterwards (the
``scratch_op`` fixture), so the completeness check of the spec table never
sees them.
"""
import gc
import math
import weakref

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import registry
from gpugrad._recorder import active_tapes


@pytest.fixture
def scratch_op():
    """A factory of fresh op-type names, unregistered again after the test."""
    names = []

    def make(stem):
        name = f"TapeTest{stem}{len(names)}"
        names.append(name)
        return name

    yield make
    for name in names:
        registry.rules.pop(name, None)
        registry._not_differentiable.discard(name)


@pytest.fixture(autouse=True)
def no_tape_leaks():
    """Every test must leave no tape recording behind it."""
    yield
    assert not active_tapes(), f"tapes left recording: {active_tapes()}"


def host_op(name, x, fn):
    """Compute ``fn(x)`` on the host and record it as op ``name`` with input ``x``."""
    y = gg.tensor(fn(x.numpy()))
    gg.record_operation(name, [y], [x])
    return y


# ---------------------------------------------------------------- watch


def test_constant_is_not_followed_unless_watched():
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        y = (x * x).sum()
    assert tape.gradient(y, x) is None


def test_watch_a_tensor():
    x = gg.tensor([1.0, 2.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = (x * x).sum()
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])


def test_watch_nested_list_tuple_dict():
    a, b, c, d = (gg.tensor(float(v)) for v in (1.0, 2.0, 3.0, 4.0))
    with gg.GradientTape() as tape:
        tape.watch([a, (b, {"c": c, "d": [d]})])
        y = a * b * c * d
    grads = tape.gradient(y, [a, b, c, d])
    assert [g.item() for g in grads] == [24.0, 12.0, 8.0, 6.0]


def test_watch_rejects_non_tensors():
    with gg.GradientTape() as tape:
        with pytest.raises(TypeError, match="str"):
            tape.watch("x")


def test_watching_an_integer_tensor_is_ignored():
    i = gg.tensor([1, 2, 3])
    assert i.dtype == np.int64
    with gg.GradientTape() as tape:
        tape.watch(i)
        y = (i * 2.0).sum()
    assert tape.gradient(y, i) is None
    assert tape.watched_variables() == ()


def test_integer_variable_is_not_watched():
    counter = gg.Variable(3)
    w = gg.Variable(2.0)
    with gg.GradientTape() as tape:
        y = w * counter
    assert tape.watched_variables() == (w,)
    assert tape.gradient(y, counter) is None


# ---------------------------------------------------------------- watched variables


def test_watched_variables_in_first_read_order():
    a, b, c = gg.Variable(1.0, name="a"), gg.Variable(2.0, name="b"), gg.Variable(3.0, name="c")
    with gg.GradientTape() as tape:
        y = c * b
        y = y + a
        y = y * c  # read again: no duplicate
    assert tape.watched_variables() == (c, b, a)


def test_explicitly_watched_variables_are_listed_in_watch_order():
    a, b = gg.Variable(1.0), gg.Variable(2.0)
    with gg.GradientTape() as tape:
        tape.watch([b, a])
    assert tape.watched_variables() == (b, a)


def test_non_trainable_variable_is_not_watched():
    w = gg.Variable(2.0)
    frozen = gg.Variable(5.0, trainable=False)
    with gg.GradientTape() as tape:
        y = w * frozen
    assert tape.watched_variables() == (w,)
    gw, gf = tape.gradient(y, [w, frozen])
    assert gw.item() == 5.0
    assert gf is None


def test_non_trainable_variable_can_be_watched_explicitly():
    frozen = gg.Variable(5.0, trainable=False)
    with gg.GradientTape() as tape:
        tape.watch(frozen)
        y = frozen * frozen
    assert tape.watched_variables() == (frozen,)
    assert tape.gradient(y, frozen).item() == 10.0


def test_watch_accessed_variables_false_needs_explicit_watch():
    a, b = gg.Variable(2.0), gg.Variable(3.0)
    with gg.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    assert tape.watched_variables() == (a,)
    ga, gb = tape.gradient(y, [a, b])
    assert ga.item() == 3.0
    assert gb is None


# ---------------------------------------------------------------- persistence


def test_persistent_tape_gives_the_same_gradients_several_times():
    x = gg.tensor([0.5, 1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gg.exp(x).sum()
        z = (x * x * x).sum()
    g1 = tape.gradient(y, x).numpy()
    g2 = tape.gradient(z, x).numpy()
    g3 = tape.gradient(y, x).numpy()
    np.testing.assert_array_equal(g1, g3)
    np.testing.assert_allclose(g1, np.exp([0.5, 1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(g2, 3 * np.array([0.5, 1.0, 2.0]) ** 2, rtol=1e-6)


def test_non_persistent_tape_raises_on_second_gradient():
    x = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x).item() == 4.0
    with pytest.raises(gg.GradientError, match="(?i)non-persistent.*persistent=True"):
        tape.gradient(y, x)


def test_non_persistent_tape_releases_recorded_tensors():
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        hidden = gg.exp(x)
        y = (hidden * hidden).sum()
    ref = weakref.ref(hidden)
    del hidden
    gc.collect()
    assert ref() is not None, "the tape must keep the intermediate alive until gradient()"
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), 2 * np.exp([2.0, 4.0]), rtol=1e-6)
    gc.collect()
    assert ref() is None, "a used non-persistent tape still references a recorded tensor"


def test_persistent_tape_releases_everything_when_dropped():
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        hidden = gg.exp(x)
        y = hidden.sum()
    tape.gradient(y, x)
    ref = weakref.ref(hidden)
    del hidden, tape
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------- stop_recording, reset


def test_stop_recording_pauses_the_tape():
    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            unrecorded = x * x
        recorded = x * 2.0
        y = unrecorded + recorded
    assert tape.gradient(y, x).item() == 2.0  # d(9 + 2x)/dx: the x*x part is a constant


def test_stop_recording_outside_the_with_block_raises():
    tape = gg.GradientTape()
    with pytest.raises(gg.GradientError):
        with tape.stop_recording():
            pass


def test_stop_recording_keeps_outer_tapes_recording():
    x = gg.tensor(3.0)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                y = x * x
    assert outer.gradient(y, x).item() == 6.0
    assert inner.gradient(y, x) is None


def test_reset_forgets_what_was_recorded():
    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        first = x * x
        tape.reset()
        tape.watch(x)
        second = x * 5.0
    assert tape.gradient(second, x).item() == 5.0


def test_reset_forgets_watched_variables():
    a, b = gg.Variable(1.0), gg.Variable(2.0)
    with gg.GradientTape() as tape:
        y = a * 2.0
        tape.reset()
        y = b * 3.0
    assert tape.watched_variables() == (b,)
    assert tape.gradient(y, [a, b])[1].item() == 3.0


# ---------------------------------------------------------------- gradient(): structure and seeds


def test_gradient_returns_the_structure_of_sources():
    a, b, c = gg.Variable(1.0), gg.Variable(2.0), gg.Variable(3.0)
    with gg.GradientTape(persistent=True) as tape:
        y = a * 10.0 + b * 20.0 + c * 30.0
    as_list = tape.gradient(y, [a, b, c])
    as_tuple = tape.gradient(y, (a, b, c))
    as_dict = tape.gradient(y, {"z": a, "b": b, "a": c})
    nested = tape.gradient(y, {"pair": (a, [b]), "one": c})
    single = tape.gradient(y, b)
    assert isinstance(as_list, list) and [g.item() for g in as_list] == [10.0, 20.0, 30.0]
    assert isinstance(as_tuple, tuple) and [g.item() for g in as_tuple] == [10.0, 20.0, 30.0]
    assert list(as_dict) == ["z", "b", "a"]
    assert {k: g.item() for k, g in as_dict.items()} == {"z": 10.0, "b": 20.0, "a": 30.0}
    assert isinstance(nested["pair"], tuple) and isinstance(nested["pair"][1], list)
    assert (nested["pair"][0].item(), nested["pair"][1][0].item(), nested["one"].item()) == (10.0, 20.0, 30.0)
    assert isinstance(single, gg.Tensor) and single.item() == 20.0


def test_output_gradients_weight_the_target():
    x = gg.tensor([1.0, 2.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=gg.tensor([1.0, 0.5, -2.0]))
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0, -12.0])


def test_output_gradients_for_several_targets():
    x = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y1 = x * x
        y2 = x * 3.0
    g = tape.gradient([y1, y2], x, output_gradients=[gg.tensor(10.0), gg.tensor(100.0)])
    assert g.item() == 10.0 * 4.0 + 100.0 * 3.0


def test_output_gradients_of_the_wrong_shape_raise_shape_error():
    x = gg.tensor([1.0, 2.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(gg.ShapeError, match=r"\(2,\).*\(3,\)"):
        tape.gradient(y, x, output_gradients=gg.tensor([1.0, 1.0]))


def test_unconnected_gradients_none_and_zero():
    x = gg.tensor([1.0, 2.0])
    unused = gg.tensor([[1.0, 2.0, 3.0]])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, unused])
        y = (x * x).sum()
    assert tape.gradient(y, unused) is None
    assert tape.gradient(y, unused, unconnected_gradients="none") is None
    zero = tape.gradient(y, unused, unconnected_gradients="zero")
    assert zero.shape == (1, 3) and zero.dtype == unused.dtype
    np.testing.assert_array_equal(zero.numpy(), np.zeros((1, 3)))
    gx, gu = tape.gradient(y, [x, unused], unconnected_gradients="zero")
    np.testing.assert_allclose(gx.numpy(), [2.0, 4.0])
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="zeros")


def test_unwatched_source_is_unconnected():
    x = gg.tensor(1.0)
    never_watched = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * never_watched
    g = tape.gradient(y, [x, never_watched])
    assert g[0].item() == 2.0 and g[1] is None


def test_non_scalar_target_differentiates_its_sum():
    x = gg.tensor([[1.0, 2.0], [3.0, 4.0]])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        total = y.sum()
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), tape.gradient(total, x).numpy())
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 3 * x.numpy() ** 2)


def test_several_targets_add_their_gradients():
    x = gg.tensor(2.0)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y1 = x * x
        y2 = gg.exp(x)
    both = tape.gradient([y1, y2], x).item()
    assert both == pytest.approx(4.0 + math.exp(2.0), rel=1e-6)
    as_dict = tape.gradient({"a": y1, "b": y2}, x).item()
    assert as_dict == pytest.approx(both, rel=1e-7)


def test_same_target_twice_counts_twice():
    x = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient([y, y], x).item() == 8.0


def test_source_used_several_times_accumulates():
    x = gg.tensor(3.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x + x * 2.0 + gg.sin(x) + x  # 2x + 2 + cos x + 1
    assert tape.gradient(y, x).item() == pytest.approx(2 * 3.0 + 3.0 + math.cos(3.0), rel=1e-6)


def test_intermediate_as_source():
    x = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        h = x * x
        y = h * h * h
    assert tape.gradient(y, h).item() == pytest.approx(3 * 4.0 ** 2)


def test_target_as_source_is_one():
    x = gg.tensor([2.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])


def test_integer_target_raises_dtype_error():
    x = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
    with pytest.raises(gg.DTypeError):
        tape.gradient(gg.tensor([1, 2]), x)


# ---------------------------------------------------------------- broadcasting


@pytest.mark.parametrize("shape_a, shape_b", [
    ((3, 1), (4,)),
    ((3, 1), (1, 4)),
    ((), (2, 3)),
    ((2, 1, 3), (4, 1)),
    ((5,), (5,)),
])
def test_broadcasting_is_undone_for_every_input(shape_a, shape_b):
    rng = np.random.default_rng(0)
    a_np, b_np = rng.uniform(1, 2, shape_a), rng.uniform(1, 2, shape_b)
    a, b = gg.tensor(a_np), gg.tensor(b_np)
    with gg.GradientTape() as tape:
        tape.watch([a, b])
        y = a * b + a - b / a
    ga, gb = tape.gradient(y, [a, b])
    assert ga.shape == shape_a and gb.shape == shape_b
    out_shape = np.broadcast_shapes(shape_a, shape_b)
    a_full, b_full = np.broadcast_to(a_np, out_shape), np.broadcast_to(b_np, out_shape)
    # y = a b + a - b / a:  dy/da = b + 1 + b / a^2,  dy/db = a - 1 / a
    np.testing.assert_allclose(ga.numpy(), _sum_to(b_full + 1 + b_full / a_full ** 2, shape_a), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), _sum_to(a_full - 1 / a_full, shape_b), rtol=1e-12)


def _sum_to(a, shape):
    """NumPy reference: sum ``a`` down to ``shape`` (the inverse of broadcasting)."""
    lead = a.ndim - len(shape)
    a = a.sum(axis=tuple(range(lead)))
    keep = tuple(i for i, n in enumerate(shape) if n == 1 and a.shape[i] != 1)
    return a.sum(axis=keep, keepdims=True).reshape(shape)


def test_broadcast_variable_gets_its_own_shape():
    bias = gg.Variable(np.zeros((1, 3)))
    x = gg.tensor(np.ones((4, 3)))
    with gg.GradientTape() as tape:
        y = (x + bias).sum()
    g = tape.gradient(y, bias)
    assert g.shape == (1, 3)
    np.testing.assert_array_equal(g.numpy(), [[4.0, 4.0, 4.0]])


# ---------------------------------------------------------------- nested tapes, higher order


def derivatives(fn, x0, order):
    """The first ``order`` derivatives of ``fn`` at ``x0`` from ``order`` nested tapes."""
    x = gg.tensor(x0, dtype=gg.float64)
    tapes = [gg.GradientTape() for _ in range(order)]
    for tape in tapes:
        tape.__enter__()
        tape.watch(x)
    try:
        y = fn(x)
        results = []
        for tape in reversed(tapes):
            tape.__exit__(None, None, None)
            y = tape.gradient(y, x)
            results.append(y.item())
    finally:
        for tape in tapes:
            tape.__exit__(None, None, None)
    return results


@pytest.mark.parametrize("name, fn, closed_forms", [
    ("cube", lambda x: x ** 3, [lambda v: 3 * v ** 2, lambda v: 6 * v, lambda v: 6.0]),
    ("sin", gg.sin, [math.cos, lambda v: -math.sin(v), lambda v: -math.cos(v)]),
    ("exp", gg.exp, [math.exp, math.exp, math.exp]),
])
@pytest.mark.parametrize("x0", [-1.3, 0.7, 2.0])
def test_second_and_third_derivatives(name, fn, closed_forms, x0):
    got = derivatives(fn, x0, 3)
    expected = [f(x0) for f in closed_forms]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_nested_tapes_with_context_managers():
    x = gg.tensor(1.5, dtype=gg.float64)
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert dy.item() == pytest.approx(3 * 1.5 ** 2)
    assert d2y.item() == pytest.approx(6 * 1.5)


def test_persistent_tape_records_its_own_gradient_inside_its_block():
    x = gg.tensor(2.0, dtype=gg.float64)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        dy = tape.gradient(y, x)  # computed inside its own with block: recorded there, as in TensorFlow
    assert dy.item() == 12.0
    assert tape.gradient(dy, x).item() == 12.0  # 6 x
    assert tape.gradient(tape.gradient(dy, x), x) is None  # computed outside the block: not recorded
    assert dy.item() == 12.0


def test_gradient_inside_the_with_block_of_a_persistent_tape():
    x = gg.tensor(2.0)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        first = tape.gradient(y, x)
        z = y * x  # recording goes on after gradient()
    assert first.item() == 4.0
    assert tape.gradient(z, x).item() == 12.0


def test_gradient_inside_the_with_block_of_a_non_persistent_tape():
    x = gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        g = tape.gradient(y, x)
        after = x * 3.0  # the tape is used up; ops on a watched tensor must still work
    assert g.item() == 4.0
    assert after.item() == 6.0
    with pytest.raises(gg.GradientError):
        tape.gradient(after, x)


# ---------------------------------------------------------------- entering and leaving


def test_no_tape_left_after_an_exception_inside_with():
    x = gg.tensor(1.0)
    with pytest.raises(ZeroDivisionError):
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                with inner.stop_recording():
                    _ = x * 2.0
                    1 / 0
    assert not active_tapes()


def test_no_tape_left_after_an_error_in_an_op():
    a, b = gg.tensor([1.0, 2.0]), gg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(gg.ShapeError):
        with gg.GradientTape() as tape:
            tape.watch(a)
            a + b
    assert not active_tapes()


def test_tape_cannot_be_entered_twice_at_once():
    tape = gg.GradientTape()
    with tape:
        with pytest.raises(gg.GradientError):
            tape.__enter__()
    assert not active_tapes()


def test_used_non_persistent_tape_cannot_record_again():
    x = gg.tensor(1.0)
    tape = gg.GradientTape()
    with tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(gg.GradientError):
        with tape:
            pass
    assert not active_tapes()


def test_persistent_tape_can_record_again():
    x = gg.tensor(1.5)
    tape = gg.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        y = x * x
    with tape:
        z = y * 2.0
    assert tape.gradient(z, x).item() == pytest.approx(4 * 1.5)


# ---------------------------------------------------------------- the registry


def test_op_without_registered_gradient_fails_at_gradient_naming_it(scratch_op):
    name = scratch_op("NoGrad")
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = host_op(name, x, np.square)  # recording does not check for a rule
    with pytest.raises(gg.GradientError, match=name) as info:
        tape.gradient(y, x)
    assert isinstance(info.value, LookupError)


def test_registering_a_name_twice_raises(scratch_op):
    name = scratch_op("Twice")

    @gg.RegisterGradient(name)
    def _first(op, dy):
        return [dy]

    with pytest.raises(gg.GradientError, match=name):
        @gg.RegisterGradient(name)
        def _second(op, dy):
            return [dy]

    with pytest.raises(gg.GradientError, match=name):
        gg.NotDifferentiable(name)
    assert registry.rules[name] is _first


def test_registering_a_builtin_name_again_raises():
    with pytest.raises(gg.GradientError, match="'Mul'"):
        gg.RegisterGradient("Mul")(lambda op, dy: (dy, dy))


def test_not_differentiable_gives_none(scratch_op):
    name = scratch_op("Flat")
    gg.NotDifferentiable(name)
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        rounded = host_op(name, x, np.round)
        mixed = rounded * 10.0 + x * 3.0
    assert tape.gradient(rounded, x) is None
    np.testing.assert_array_equal(tape.gradient(rounded, x, unconnected_gradients="zero").numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(tape.gradient(mixed, x).numpy(), [3.0, 3.0])


def test_builtin_not_differentiable_op():
    x = gg.tensor([[-1.0, 2.0], [3.0, 0.5]])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.cast(gg.argmax(x, axis=1), "float32") * 4.0  # integer indices: no gradient, as in TF and PyTorch
    assert tape.gradient(y, x) is None


def test_rule_returning_the_wrong_number_of_gradients_raises(scratch_op):
    name = scratch_op("TooMany")

    @gg.RegisterGradient(name)
    def _grad(op, dy):
        return dy, dy

    x = gg.tensor(1.0)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = host_op(name, x, np.negative)
    with pytest.raises(gg.GradientError, match=name):
        tape.gradient(y, x)


def test_rule_sees_type_inputs_outputs_attrs(scratch_op):
    name = scratch_op("Seen")
    seen = {}

    @gg.RegisterGradient(name)
    def _grad(op, dy):
        seen.update(type=op.type, inputs=op.inputs, outputs=op.outputs, attrs=op.attrs)
        return [dy * 2.0]

    x = gg.tensor([1.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = host_op(name, x, lambda a: a * 2)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 2.0])
    assert seen["type"] == name
    assert seen["inputs"][0] is x and seen["outputs"][0] is y
    assert isinstance(seen["attrs"], dict)


def test_a_rule_that_keeps_op_keeps_its_own_record(scratch_op):
    """Each rule call gets an Op of its own: one kept past the call (here in a dict, read after the
    sweep) still shows its own record, and no field carries over from the record swept before it
    (``filled`` of a two-output op swept first is not a one-output op's)."""
    pair, single = scratch_op("KeptPair"), scratch_op("KeptSingle")
    kept, filled_during = {}, {}

    @gg.RegisterGradient(pair)
    def _pair_grad(op, da, db):
        kept["pair"], filled_during["pair"] = op, op.filled
        return [da + db]

    @gg.RegisterGradient(single)
    def _single_grad(op, dy):
        kept["single"], filled_during["single"] = op, op.filled
        return [dy * 3.0]

    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        s = host_op(single, x, lambda v: v * 3.0)
        a, b = gg.tensor(s.numpy()), gg.tensor(s.numpy())
        gg.record_operation(pair, [a, b], [s])
        loss = gg.sum(a)  # no gradient reaches b: the pair's op.filled is (1,)
    np.testing.assert_array_equal(tape.gradient(loss, x).numpy(), [3.0, 3.0])
    assert filled_during == {"pair": (1,), "single": ()}
    assert kept["pair"] is not kept["single"]
    assert kept["pair"].type == pair and kept["pair"].inputs[0] is s and kept["pair"].outputs[1] is b
    assert kept["pair"].filled == (1,)
    assert kept["single"].type == single and kept["single"].inputs[0] is x and kept["single"].outputs[0] is s
    assert kept["single"].needs_grad == (True,)


def test_freed_outputs_name_their_own_op_after_the_sweep(scratch_op):
    """``op.outputs`` of a rule registered ``reads_outputs=False`` names that rule's op, even read from an
    ``op`` kept until another such rule ran."""
    first, second = scratch_op("FreedFirst"), scratch_op("FreedSecond")
    kept = {}
    for name in (first, second):
        gg.RegisterGradient(name, reads_outputs=False)(
            lambda op, dy, name=name: kept.setdefault(name, op) and [dy])
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = host_op(second, host_op(first, x, np.negative), np.negative)
    tape.gradient(y, x)  # the sweep runs second's rule, then first's
    for name in (first, second):
        with pytest.raises(gg.GradientError, match=f"op '{name}' reads op.outputs"):
            len(kept[name].outputs)


# ---------------------------------------------------------------- variables changed after being read


def test_variable_assigned_after_being_read_raises_at_gradient():
    w = gg.Variable([1.0, 2.0], name="w")
    with gg.GradientTape() as tape:
        y = (w * w).sum()
    w.assign([5.0, 5.0])
    with pytest.raises(gg.GradientError, match=r"(?i)assign") as info:
        tape.gradient(y, w)
    assert "'w'" in str(info.value) or " w " in str(info.value)
    assert "Mul" in str(info.value)


@pytest.mark.parametrize("update", ["assign_add", "assign_sub"])
def test_variable_updated_in_place_after_being_read_raises(update):
    w = gg.Variable(3.0)
    with gg.GradientTape() as tape:
        y = gg.exp(w)
    getattr(w, update)(1.0)
    with pytest.raises(gg.GradientError):
        tape.gradient(y, w)


def test_variable_assigned_before_recording_is_fine():
    w = gg.Variable(3.0)
    w.assign(4.0)
    with gg.GradientTape() as tape:
        y = w * w
    assert tape.gradient(y, w).item() == 8.0


def test_variable_assigned_after_gradient_is_fine():
    w = gg.Variable(3.0)
    for expected in (6.0, 4.0):
        with gg.GradientTape() as tape:
            y = w * w
        g = tape.gradient(y, w)
        assert g.item() == expected
        w.assign_sub(1.0)


def test_the_path_search_is_skipped_only_when_every_watched_root_is_a_source(monkeypatch):
    """With every watched tensor a source, every record is on a path and the sweep skips the search;
    otherwise it searches, and records that reach no source give no gradient."""
    from gpugrad import _sweep as sweep_module

    searches = []
    search = sweep_module.records_on_paths
    monkeypatch.setattr(sweep_module, "records_on_paths", lambda *a: searches.append(1) or search(*a))
    x, z = gg.tensor([1.0, 2.0]), gg.tensor(3.0)

    def record(watch_mid=False):
        tape = gg.GradientTape(persistent=True)
        with tape:
            tape.watch([x, z])
            mid = x * z
            if watch_mid:
                tape.watch(mid)
            y = gg.sum(gg.square(mid) + z)
        return tape, mid, y

    tape, mid, y = record()
    gx, gz = tape.gradient(y, [x, z])  # every root is a source: no search
    assert searches == []
    np.testing.assert_allclose(gx.numpy(), [2 * 1 * 9, 2 * 2 * 9])  # d/dx (xz)^2 = 2 x z^2
    assert gz.item() == 2 * (1 * 3) * 1 + 2 * (2 * 3) * 2 + 2  # sum 2 xz x, plus 1 per element
    assert tape.gradient(y, x).numpy().tolist() == gx.numpy().tolist()  # z not a source: a search
    assert searches == [1]
    tape, mid, y = record(watch_mid=True)
    g_mid, = tape.gradient(y, [mid])  # mid is a root made by an op: x and z are not sources
    np.testing.assert_allclose(g_mid.numpy(), 2 * mid.numpy())
    assert searches == [1, 1]
    assert [g.shape for g in tape.gradient(y, [x, z, mid])] == [(2,), (), (2,)]
    assert searches == [1, 1]
