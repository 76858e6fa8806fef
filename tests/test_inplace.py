"""In-place safety: changing a Variable that a live tape still needs never gives a silently wrong gradient.

A Variable carries a version that ``assign``, ``assign_add``, ``assign_sub``
and every optimizer update bump. Each recorded op that read a Variable keeps
the version it saw; ``tape.gradient`` checks it and raises GradientError
naming the op and the variable when it changed. Ops that return views
(reshape, slicing, transpose, ...) copy a Variable's array, and so do the ops
that keep a Variable's array as an attribute (masks, clip bounds, indices), so
what a tape saved keeps the old value.

The property every test here checks: after an in-place change, ``.gradient``
either raises GradientError or returns the gradient at the values the forward
pass saw.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import GradientError

OLD = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
NEW = np.array([[3.0, 1.0, -2.0], [0.5, 4.0, 1.0]], np.float32)


def shares_memory(a, b):
    return gg.get_device(a.device).xp.shares_memory(a.data, b.data)


def variable(value=OLD, name="w"):
    return gg.Variable(value.copy(), name=name)


def expected_gradient(fn, value=OLD):
    """The gradient of sum(fn(v)) at ``value``, from a fresh variable nobody changes."""
    v = variable(value)
    with gg.GradientTape() as tape:
        y = gg.sum(fn(v))
    return tape.gradient(y, v).numpy()


def assert_never_silently_wrong(fn, change):
    """Record sum(fn(v)), ``change(v)`` in place, then: GradientError, or the gradient at the old value."""
    want = expected_gradient(fn)
    v = variable()
    with gg.GradientTape() as tape:
        y = gg.sum(fn(v))
    value_before = y.numpy()
    change(v)
    assert v._version > 0, "an in-place change must bump the variable's version"
    assert y.numpy() == value_before, "the forward result changed with the variable"
    try:
        got = tape.gradient(y, v)
    except GradientError as e:
        assert "was assigned after op" in str(e) and "'w'" in str(e)
        return "raised"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    return "kept"


CHANGES = {
    "assign": lambda v: v.assign(NEW),
    "assign_add": lambda v: v.assign_add(NEW),
    "assign_sub": lambda v: v.assign_sub(NEW),
    "sgd": lambda v: gg.optimizers.SGD(0.5).apply_gradients([(gg.tensor(NEW), v)]),
    "adam": lambda v: gg.optimizers.Adam(0.5).apply_gradients([(gg.tensor(NEW), v)]),
    "rmsprop": lambda v: gg.optimizers.RMSProp(0.5).apply_gradients([(gg.tensor(NEW), v)]),
    "adagrad": lambda v: gg.optimizers.AdaGrad(0.5).apply_gradients([(gg.tensor(NEW), v)]),
    "minimize": lambda v: gg.optimizers.SGD(0.5, momentum=0.9).minimize(lambda: gg.sum(v * v), [v]),
}

FUNCTIONS = {
    "square": lambda v: v * v,
    "sin": gg.sin,
    "tanh": gg.tanh,  # its rule reads the op's output
    "matmul": lambda v: gg.matmul(v, v.T),
    "reshape": lambda v: v.reshape(3, 2) * v.reshape(3, 2),
    "slice": lambda v: v[:, 1:] * v[:, :-1],
    "transpose": lambda v: gg.transpose(v) * 2.0 * gg.transpose(v),
    "expand_squeeze": lambda v: gg.squeeze(gg.expand_dims(v, 0)) * v,
    "broadcast_to": lambda v: gg.broadcast_to(v, (4, 2, 3)) ** 2,
    "split": lambda v: gg.split(v, 3, axis=1)[1] * v[:, 1:2],
    "identity": lambda v: gg.identity(v) * v,
    "mean_var": lambda v: gg.var(v, axis=1) + gg.mean(v),
    "softmax_xent": lambda v: gg.softmax_cross_entropy(v, [2, 0]),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_in_place_change_of_a_variable_is_caught_at_gradient(change):
    assert assert_never_silently_wrong(FUNCTIONS["square"], CHANGES[change]) == "raised"


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_reads_through_views_and_rules_that_read_outputs_are_never_silently_wrong(name):
    assert_never_silently_wrong(FUNCTIONS[name], CHANGES["assign"])


@pytest.mark.parametrize("view", ["reshape", "getitem", "transpose", "T", "expand_dims", "squeeze", "broadcast_to",
                                  "split", "identity", "stop_gradient", "flatten"])
def test_views_of_a_variable_are_copies(view):
    v = variable()
    out = {
        "reshape": lambda: v.reshape(3, 2), "getitem": lambda: v[1], "transpose": lambda: gg.transpose(v),
        "T": lambda: v.T, "expand_dims": lambda: gg.expand_dims(v, 0), "squeeze": lambda: gg.squeeze(v),
        "broadcast_to": lambda: gg.broadcast_to(v, (2, 3)), "split": lambda: gg.split(v, 2)[0],
        "identity": lambda: gg.identity(v), "stop_gradient": lambda: gg.stop_gradient(v),
        "flatten": lambda: v.flatten(),
    }[view]()
    before = out.numpy().copy()
    assert not shares_memory(out, v)
    v.assign(NEW)
    np.testing.assert_array_equal(out.numpy(), before)


def test_views_of_a_plain_tensor_stay_views():
    x = gg.tensor(OLD)
    assert shares_memory(x.reshape(3, 2), x)  # no copy where nothing can change


def test_a_persistent_tape_refuses_a_second_gradient_after_an_update():
    v = variable()
    with gg.GradientTape(persistent=True) as tape:
        y = gg.sum(v * v)
    first = tape.gradient(y, v)
    np.testing.assert_allclose(first.numpy(), 2 * OLD)
    gg.optimizers.SGD(0.1).apply_gradients([(first, v)])
    with pytest.raises(GradientError, match=r"variable .w. of shape \(2, 3\) was assigned after op .Mul. read it \(version 0, now 1"):
        tape.gradient(y, v)


def test_an_assignment_between_two_reads_is_caught():
    v = variable()
    with gg.GradientTape() as tape:
        a = v * 2.0
        v.assign(NEW)
        y = gg.sum(a + v * 3.0)
    with pytest.raises(GradientError, match="'Mul'"):
        tape.gradient(y, v)


def test_an_assignment_of_a_variable_the_gradient_does_not_reach_is_no_error():
    v, other = variable(), variable(name="other")
    with gg.GradientTape() as tape:
        y = gg.sum(v * v)
        unused = gg.sum(other * other)  # noqa: F841 - recorded, not on y's path
    other.assign(NEW)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * OLD)


def test_assigning_after_the_gradient_is_no_error_and_a_new_tape_sees_the_new_value():
    v = variable()
    with gg.GradientTape() as tape:
        y = gg.sum(v * v)
    tape.gradient(y, v)
    v.assign(NEW)
    with gg.GradientTape() as tape:
        y = gg.sum(v * v)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 2 * NEW)


def test_integer_variable_indices_are_saved_by_value():
    x = gg.tensor(np.arange(5.0, dtype=np.float32))
    idx = gg.Variable(np.array([0, 0, 3]), trainable=False)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.take(x, idx) * gg.embedding(idx, gg.reshape(x, (5, 1)))[:, 0])
    idx.assign(np.array([4, 4, 4]))
    grad = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(grad, [0.0, 0.0, 0.0, 6.0, 0.0])  # d/dx of x0^2 + x0^2 + x3^2 at the old idx


def test_a_variable_mask_and_clip_bounds_are_saved_by_value():
    x = gg.tensor(np.array([-2.0, 0.5, 2.0], np.float32))
    mask = gg.Variable(np.array([True, False, True]), trainable=False)
    lo = np.array([-1.0, -1.0, -1.0], np.float32)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.where(mask, x, 0.0) + gg.clip(x, lo, 1.0))
    mask.assign(np.array([False, True, False]))
    lo[...] = -5.0
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 1.0, 1.0])  # where: 1,0,1; clip: 0,1,0


def test_a_float_variable_clip_bound_is_an_input_and_keeps_the_variable_contract():
    # a float bound has a gradient (TensorFlow's clip_by_value, PyTorch's clamp), so the op reads the
    # variable as any op does: assigning it before the gradient is the clear error, never a silent change
    x = gg.tensor(np.array([-2.0, 0.5, 2.0], np.float32))
    lo = gg.Variable(np.float32(-1.0), trainable=False)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.clip(x, lo, 1.0))
    lo.assign(np.float32(-5.0))
    with pytest.raises(gg.GradientError, match="assigned after op 'Clip'"):
        tape.gradient(y, x)


def test_every_update_bumps_the_version_once():
    v = variable()
    versions = [v._version]
    for change in CHANGES.values():
        change(v)
        versions.append(v._version)
    assert np.all(np.diff(versions) == 1), versions
