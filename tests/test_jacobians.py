"""GradientTape.jacobian and .batch_jacobian: shapes, values, tapes, unconnected sources, errors."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad._recorder import active_tapes

from .conftest import numerical_jacobian

RNG = np.random.default_rng(7)


def layer(x, w):
    """A per-row function: row b of the result depends on row b of x only."""
    return gg.tanh(gg.matmul(x, w)) * gg.sum(x * x, axis=-1, keepdims=True)


def test_jacobian_shape_and_values_agree_with_finite_differences():
    x = gg.tensor(RNG.uniform(-1, 1, (3, 2)))
    w = gg.tensor(RNG.uniform(-1, 1, (2, 4)))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, w)
    jac = tape.jacobian(y, x)
    assert jac.shape == (3, 4, 3, 2) and jac.dtype == np.float64
    expected = numerical_jacobian(lambda a: layer(gg.tensor(a), w).numpy(), x.numpy())
    np.testing.assert_allclose(jac.numpy(), expected, atol=1e-8)


def test_jacobian_of_several_sources_keeps_their_structure():
    x = gg.tensor(RNG.uniform(-1, 1, (3, 2)))
    w = gg.tensor(RNG.uniform(-1, 1, (2, 4)))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = layer(x, w)
    jacs = tape.jacobian(y, {"x": x, "w": [w]})
    assert set(jacs) == {"x", "w"} and jacs["x"].shape == (3, 4, 3, 2) and jacs["w"][0].shape == (3, 4, 2, 4)
    expected_w = numerical_jacobian(lambda a: layer(x, gg.tensor(a)).numpy(), w.numpy())
    np.testing.assert_allclose(jacs["w"][0].numpy(), expected_w, atol=1e-8)
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), jacs["x"].numpy())  # persistent: again


def test_jacobian_of_a_scalar_target_is_the_gradient_and_of_the_source_is_the_identity():
    x = gg.tensor(RNG.uniform(-1, 1, (2, 3)))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gg.sum(gg.exp(x))
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(), np.exp(x.numpy()))
    np.testing.assert_array_equal(tape.jacobian(x, x).numpy(), np.eye(6).reshape(2, 3, 2, 3))


def test_jacobian_float32_and_variables():
    w = gg.Variable([[1.0, 2.0], [3.0, 4.0]])
    x = gg.tensor([0.5, -1.0])
    with gg.GradientTape() as tape:  # the variable is watched because it is read
        y = gg.matmul(w, x)
    jac = tape.jacobian(y, w)
    assert jac.dtype == np.float32
    expected = np.zeros((2, 2, 2), np.float32)
    expected[0, 0], expected[1, 1] = x.numpy(), x.numpy()
    np.testing.assert_array_equal(jac.numpy(), expected)


def test_non_persistent_tape_allows_one_jacobian():
    x = gg.tensor(np.array([1.0, 2.0]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), np.diag([2.0, 4.0]))
    with pytest.raises(gg.GradientError, match="persistent=True"):
        tape.jacobian(y, x)
    with pytest.raises(gg.GradientError, match="persistent=True"):
        tape.gradient(y, x)
    with pytest.raises(gg.GradientError, match="non-persistent"):
        with tape:
            pass


def test_jacobian_inside_the_recording_block_keeps_the_tape_recording():
    x = gg.tensor(np.array([1.0, 2.0]))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        jac = tape.jacobian(y, x)
        z = gg.sum(y * 3.0)
    np.testing.assert_array_equal(jac.numpy(), np.diag([2.0, 4.0]))
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [6.0, 12.0])


def test_unconnected_source_is_none_or_zeros():
    x = gg.tensor(np.array([1.0, 2.0]))
    other = gg.tensor(np.array([1.0, 2.0, 3.0]))
    unwatched = gg.tensor(np.array([5.0]))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = x * 2.0
        cut = gg.stop_gradient(x) * 2.0
    assert tape.jacobian(y, other) is None
    assert tape.jacobian(y, unwatched) is None
    assert tape.jacobian(cut, x) is None  # as tape.gradient: a cut path gives None
    zeros = tape.jacobian(y, [x, other], unconnected_gradients="zero")
    np.testing.assert_array_equal(zeros[0].numpy(), np.diag([2.0, 2.0]))
    assert zeros[1].shape == (2, 3) and not zeros[1].numpy().any()
    assert tape.jacobian(cut, x, unconnected_gradients="zero").shape == (2, 2)


def test_rows_that_do_not_reach_a_source_are_zeros():
    x = gg.tensor(np.array([1.0, 2.0]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.concat([x * 3.0, gg.tensor(np.array([7.0]))])
    np.testing.assert_array_equal(tape.jacobian(y, x).numpy(), [[3.0, 0.0], [0.0, 3.0], [0.0, 0.0]])


def test_jacobian_of_an_empty_target_is_empty():
    x = gg.tensor(np.array([1.0, 2.0]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = (x * 2.0)[:0]
    jac = tape.jacobian(y, x)
    assert jac.shape == (0, 2)


def test_outer_tape_records_the_jacobian_hessian_of_a_quadratic_form():
    a = RNG.uniform(-1, 1, (3, 3))
    x = gg.tensor(RNG.uniform(-1, 1, 3))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(x * gg.matmul(gg.tensor(a), x))
        g = inner.gradient(y, x)
    np.testing.assert_allclose(outer.jacobian(g, x).numpy(), a + a.T, atol=1e-12)


def test_outer_tape_differentiates_a_jacobian():
    x = gg.tensor(np.array([0.3, -0.4]))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sin(x) * gg.sum(x)
        trace = gg.sum(gg.reshape(inner.jacobian(y, x), (4,))[::3])  # d y_i / d x_i summed
    # trace = sum_i cos(x_i) s + sin(x_i), s = sum(x); d/dx_j = -sin(x_j) s + sum_i cos(x_i) + cos(x_j)
    xs = x.numpy()
    expected = -np.sin(xs) * xs.sum() + np.cos(xs).sum() + np.cos(xs)
    np.testing.assert_allclose(outer.gradient(trace, x).numpy(), expected, atol=1e-12)


def test_batch_jacobian_is_the_diagonal_blocks_of_the_jacobian():
    x = gg.tensor(RNG.uniform(-1, 1, (4, 3)))
    w = gg.tensor(RNG.uniform(-1, 1, (3, 2)))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = layer(x, w)
    batch = tape.batch_jacobian(y, x)
    full = tape.jacobian(y, x).numpy()
    assert batch.shape == (4, 2, 3)
    for b in range(4):
        np.testing.assert_allclose(batch.numpy()[b], full[b, :, b, :], atol=1e-14)
    assert not np.delete(full[0], 0, axis=1).any()  # the function really is per row


def test_batch_jacobian_of_higher_rank_entries():
    x = gg.tensor(RNG.uniform(-1, 1, (2, 3)))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.expand_dims(x, 1) * gg.reshape(gg.tensor(np.arange(4.0)), (1, 4, 1))  # (2, 4, 3)
    batch = tape.batch_jacobian(y, x)
    assert batch.shape == (2, 4, 3, 3)
    expected = np.arange(4.0)[None, :, None, None] * np.eye(3)[None, None]
    np.testing.assert_array_equal(batch.numpy(), np.broadcast_to(expected, (2, 4, 3, 3)))


def test_batch_jacobian_unconnected_and_errors():
    x = gg.tensor(np.ones((2, 3)))
    z = gg.tensor(np.ones((2, 3)))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, z])
        y = x * 2.0
        s = gg.sum(x)
    assert tape.batch_jacobian(y, z) is None
    assert tape.batch_jacobian(y, z, unconnected_gradients="zero").shape == (2, 3, 3)
    with pytest.raises(gg.ShapeError, match=r"\(2, 3\).*\(3, 2\)"):
        tape.batch_jacobian(y, gg.tensor(np.ones((3, 2))))
    with pytest.raises(gg.ShapeError, match=r"at least one dimension.*\(\)"):
        tape.batch_jacobian(s, x)
    with pytest.raises(TypeError, match="one source"):
        tape.batch_jacobian(y, [x])


def test_argument_errors():
    x = gg.tensor(np.array([1.0, 2.0]))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
    with pytest.raises(TypeError, match="one tensor"):
        tape.jacobian([y, y], x)
    with pytest.raises(TypeError, match="sources must be tensors"):
        tape.jacobian(y, [x, 3.0])
    with pytest.raises(gg.DTypeError, match="integer"):
        tape.jacobian(gg.tensor([1, 2]), x)
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.jacobian(y, x, unconnected_gradients="zeros")
    assert not active_tapes()
