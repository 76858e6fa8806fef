"""Forward values of the shape, indexing and control ops against NumPy, scatter-add
gradients against ``np.add.at``, stop_gradient, and the errors these ops raise."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import IndexOutOfRangeError
from gpugrad.registry import not_differentiable_ops, registered_ops

from .conftest import recorded_types

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5) / 7.0
MASK = (np.arange(12).reshape(3, 4) * 7 % 5) > 1

KEYS = [
    pytest.param(1, id="int"),
    pytest.param(-1, id="negative_int"),
    pytest.param(np.s_[::-1], id="reverse"),
    pytest.param(np.s_[:, ::-2, 1:], id="negative_step"),
    pytest.param(np.s_[1, -2:0:-1, ::3, 4], id="ints_and_negative_slices"),
    pytest.param(np.s_[..., 2], id="ellipsis_last"),
    pytest.param(np.s_[0, ..., None, 1:3], id="ellipsis_newaxis"),
    pytest.param(np.s_[None, :, None], id="newaxis"),
    pytest.param(np.s_[[1, 0, 1]], id="list"),
    pytest.param(np.s_[:, [2, 2, 0], 1:3], id="array_and_slices"),
    pytest.param(np.s_[:, np.array([[0, 1], [2, 2]]), ::-1, np.array([4, 0])], id="split_advanced"),
    pytest.param(np.s_[[0, 1], [2, 0]], id="two_lists"),
    pytest.param(np.s_[..., [-1, 0, -1]], id="ellipsis_negative_array"),
    pytest.param(np.s_[:, MASK], id="bool_mask_2d"),
    pytest.param(np.s_[np.array([True, False])], id="bool_mask_1d"),
    pytest.param(np.s_[1, [True, False, True], ..., 3], id="bool_and_ints"),
    pytest.param(np.s_[[]], id="empty_list"),
]


@pytest.mark.parametrize("key", KEYS)
def test_getitem_matches_numpy(key):
    assert np.array_equal(gg.tensor(A)[key].numpy(), A[key])


@pytest.mark.parametrize("key", KEYS)
def test_getitem_gradient_matches_add_at(key):
    x = gg.tensor(A)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x[key]
    dy = np.random.default_rng(0).uniform(size=A[key].shape)
    grad = tape.gradient(y, x, output_gradients=gg.tensor(dy))
    expected = np.zeros_like(A)
    np.add.at(expected, key, dy)
    np.testing.assert_allclose(grad.numpy(), expected)


def test_index_tensors_and_numpy_scalars():
    x = gg.tensor(A)
    assert np.array_equal(x[gg.tensor([1, 0, 1])].numpy(), A[[1, 0, 1]])
    assert np.array_equal(x[0][gg.tensor(A[0] > 1.0)].numpy(), A[0][A[0] > 1.0])
    assert np.array_equal(x[np.int64(1), gg.tensor(2)].numpy(), A[1, 2])
    assert np.array_equal(x[0, np.array(1)].numpy(), A[0, 1])


def test_repeated_indices_add_up_in_the_gradient():
    x = gg.tensor(np.array([1.0, 2.0, 3.0]))
    idx = [0, 2, 0, 0]
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(x[idx] * gg.tensor(np.array([1.0, 10.0, 100.0, 1000.0])))
    assert tape.gradient(y, x).numpy().tolist() == [1101.0, 0.0, 10.0]


def test_second_order_through_repeated_indices():
    x = gg.tensor(np.array([1.0, 2.0, 3.0]))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(x[[0, 0, 2]] ** 3.0)
        g = inner.gradient(y, x)  # 3 x^2 per use: [6, 0, 27]
        z = gg.sum(g)
    assert g.numpy().tolist() == [6.0, 0.0, 27.0]
    assert outer.gradient(z, x).numpy().tolist() == [12.0, 0.0, 18.0]  # 6 x per use


def test_variable_slice_gets_a_gradient():
    v = gg.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with gg.GradientTape() as tape:
        y = gg.sum(v[::-1, 1] * v[:, 0])
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), [[4.0, 3.0], [2.0, 1.0]])


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take_matches_numpy(axis):
    a = A[0]
    idx = np.array([[2, 0], [2, -1]])
    x = gg.tensor(a)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.take(x, idx, axis=axis)
    assert np.array_equal(y.numpy(), np.take(a, idx, axis=axis))
    dy = np.random.default_rng(1).uniform(size=y.shape)
    expected = np.zeros(a.size if axis is None else a.shape)
    if axis is None:
        np.add.at(expected, idx, dy)
    else:
        np.add.at(expected, (slice(None),) * (axis % a.ndim) + (idx,), dy)
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=gg.tensor(dy)).numpy(),
                               expected.reshape(a.shape))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_has_tensorflow_shape_and_scatter_add_gradient(axis):
    params = gg.tensor(A[0])  # (3, 4, 5)
    idx = gg.tensor([[0, 2, 2], [1, 0, 2]])
    with gg.GradientTape() as tape:
        tape.watch(params)
        y = gg.gather(params, idx, axis=axis)
    ax = axis % 3
    assert y.shape == A[0].shape[:ax] + (2, 3) + A[0].shape[ax + 1:]
    assert np.array_equal(y.numpy(), np.take(A[0], idx.numpy(), axis=ax))
    dy = np.random.default_rng(2).uniform(size=y.shape)
    expected = np.zeros(A[0].shape)
    np.add.at(expected, (slice(None),) * ax + (idx.numpy(),), dy)
    np.testing.assert_allclose(tape.gradient(y, params, output_gradients=gg.tensor(dy)).numpy(), expected)


# ---------------------------------------------------------------- shape ops


def test_shape_ops_match_numpy():
    x = gg.tensor(A)
    assert np.array_equal(gg.transpose(x).numpy(), A.T)
    assert np.array_equal(x.transpose(1, 3, 0, 2).numpy(), A.transpose(1, 3, 0, 2))
    assert np.array_equal(x.transpose((3, 2, 1, 0)).numpy(), A.transpose())
    assert np.array_equal(x.T.numpy(), A.T)
    assert np.array_equal(gg.expand_dims(x, 2).numpy(), np.expand_dims(A, 2))
    assert np.array_equal(x.expand_dims((-1, 0)).numpy(), np.expand_dims(A, (-1, 0)))
    b = A[:, :1, :, None]
    assert np.array_equal(gg.squeeze(gg.tensor(b)).numpy(), np.squeeze(b))
    assert np.array_equal(gg.tensor(b).squeeze(-2).numpy(), np.squeeze(b, -2))
    assert np.array_equal(x.flatten().numpy(), A.reshape(-1))
    assert np.array_equal(gg.concat([x, x[:, :1]], axis=1).numpy(), np.concatenate([A, A[:, :1]], axis=1))
    assert np.array_equal(gg.stack([x, x * 2.0], axis=-1).numpy(), np.stack([A, A * 2.0], axis=-1))
    for got, want in zip(gg.split(x, 2, axis=-2), np.split(A, 2, axis=-2)):
        assert np.array_equal(got.numpy(), want)
    for got, want in zip(gg.split(x, [1, 0, -1], axis=3), np.split(A, [1, 1], axis=3)):
        assert np.array_equal(got.numpy(), want)


@pytest.mark.parametrize("width", [0, 2, (1, 2), ((1, 0),), ((0, 1), (2, 0), (0, 0), (3, 1))])
def test_pad_matches_numpy(width):
    x = gg.tensor(A)
    assert np.array_equal(gg.pad(x, width).numpy(), np.pad(A, width))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.pad(x, width)
    dy = np.random.default_rng(3).uniform(size=y.shape)
    inner = tuple(slice(b, b + n) for (b, _), n in zip(np.broadcast_to(width, (4, 2)), A.shape))
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=gg.tensor(dy)).numpy(), dy[inner])


def test_split_gradient_with_unused_parts():
    x = gg.tensor(np.arange(6.0))
    with gg.GradientTape() as tape:
        tape.watch(x)
        parts = gg.split(x, 3)
        y = gg.sum(parts[1] * 5.0)
    assert isinstance(parts, list) and len(parts) == 3
    assert tape.gradient(y, x).numpy().tolist() == [0.0, 0.0, 5.0, 5.0, 0.0, 0.0]


def test_concat_and_stack_gradients_reach_every_input():
    xs = [gg.tensor(np.full((2, k), float(k))) for k in (1, 2, 3)]
    with gg.GradientTape() as tape:
        tape.watch(xs)
        y = gg.sum(gg.concat(xs, axis=1) * gg.tensor(np.arange(6.0)))
    grads = tape.gradient(y, xs)
    assert [g.numpy()[0].tolist() for g in grads] == [[0.0], [1.0, 2.0], [3.0, 4.0, 5.0]]
    with gg.GradientTape() as tape:
        tape.watch(xs[0])
        y = gg.sum(gg.stack([xs[0], xs[0] * 3.0], axis=0))
    assert tape.gradient(y, xs[0]).numpy().tolist() == [[4.0], [4.0]]


# ---------------------------------------------------------------- control


def test_stop_gradient_blocks_the_gradient():
    assert "StopGradient" in not_differentiable_ops()
    assert "StopGradient" not in registered_ops()
    x = gg.tensor(np.array([1.0, 2.0]))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gg.stop_gradient(x * 3.0)
        z = x * gg.stop_gradient(x)
    assert np.array_equal(y.numpy(), [3.0, 6.0])
    assert tape.gradient(y, x) is None
    assert tape.gradient(y, x, unconnected_gradients="zero").numpy().tolist() == [0.0, 0.0]
    assert tape.gradient(z, x).numpy().tolist() == [1.0, 2.0]


def test_stop_gradient_is_recorded():
    x = gg.tensor(np.array([1.0, 2.0]))
    assert "StopGradient" in recorded_types(lambda x: gg.stop_gradient(x) * x, [x])


def test_identity_and_stop_gradient_snapshot_a_variable():
    v = gg.Variable([1.0, 2.0])
    a, b = gg.identity(v), gg.stop_gradient(v)
    v.assign([5.0, 6.0])
    assert a.numpy().tolist() == [1.0, 2.0] and b.numpy().tolist() == [1.0, 2.0]
    with gg.GradientTape() as tape:
        y = gg.sum(gg.identity(v) * 2.0)
    assert tape.gradient(y, v).numpy().tolist() == [2.0, 2.0]


# ---------------------------------------------------------------- errors


def raises(cls, *words):
    """pytest.raises for ``cls`` whose message contains every one of ``words`` (any case)."""
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(cls)
            self.info = self.ctx.__enter__()

        def __exit__(self, *exc):
            suppressed = self.ctx.__exit__(*exc)
            message = str(self.info.value)
            for w in words:  # case-insensitive: CuPy capitalises some of NumPy's messages
                assert w.lower() in message.lower(), f"{w!r} not in {message!r}"
            return suppressed

    return Check()


def test_index_errors_name_the_op_index_and_length():
    x = gg.tensor(A)  # (2, 3, 4, 5)
    with raises(IndexOutOfRangeError, "GetItem", "index 5", "size 2", "(2, 3, 4, 5)"):
        x[5]
    with raises(IndexOutOfRangeError, "GetItem", "index 3", "size 3"):
        x[:, [0, 3]]
    with raises(IndexOutOfRangeError, "GetItem", "index -6", "size 5"):
        x[..., gg.tensor([-6])]
    with raises(IndexError, "GetItem"):
        x[0, 0, 0, 0, 0]
    with raises(IndexOutOfRangeError, "Take", "index 120", "size 120"):
        gg.take(x, [0, 120])
    with raises(IndexOutOfRangeError, "Gather", "index -5", "axis 2", "size 4"):
        gg.gather(x, [[0], [-5]], axis=2)
    with raises(IndexOutOfRangeError, "Gather", "index 2", "axis 0", "size 2"):
        gg.gather(x, np.array([0, 2]))
    assert issubclass(IndexOutOfRangeError, gg.GpugradError) and issubclass(IndexOutOfRangeError, IndexError)


@pytest.mark.parametrize("key, axis, value", [
    ((slice(None), [0, 3]), 1, 3),
    ((Ellipsis, [0, -6]), 3, -6),
    ((np.array([[False, True, False], [False, False, False]]), [1, 7]), 2, 7),
    ((None, 1, Ellipsis, [[3], [-4]], [0, 5]), 3, 5),
])
def test_gpu_range_check_finds_the_axis(key, axis, value):
    # CuPy wraps out-of-range indices, so off the CPU gpugrad checks them itself; run that
    # check on host arrays here (the axis it reports must be the one NumPy reports).
    from gpugrad.ops.array.indexing import _axes_indexed, _check_range, _index_array

    parts = [_index_array("GetItem", k, gg.backend.CPU) if isinstance(k, list) or hasattr(k, "dtype")
             else k for k in key]
    axes = _axes_indexed(parts, A.ndim)
    with pytest.raises(IndexError, match=f"index {value} is out of bounds for axis {axis} with size"):
        A[key]
    with raises(IndexOutOfRangeError, "GetItem", f"index {value}", f"axis {axis}", f"size {A.shape[axis]}"):
        for p, ax in zip(parts, axes):
            if isinstance(p, tuple) and p[0].dtype.kind != "b":
                _check_range("GetItem", p[0], A.shape[ax], ax, A.shape)


def test_bad_index_types():
    x = gg.tensor(A)
    with raises(gg.DTypeError, "GetItem", "float"):
        x[np.array([0.5])]
    with raises(gg.DTypeError, "GetItem"):
        x[1.5]
    with raises(gg.DTypeError, "Gather", "bool"):
        gg.gather(x, [True, False])
    with raises(TypeError, "immutable", "assign"):
        x[0] = 1.0
    with raises(TypeError, "immutable"):
        gg.Variable([1.0])[0] = 2.0


def test_shape_errors_name_the_op_and_shapes():
    x = gg.tensor(A)
    with raises(gg.ShapeError, "Concat", "(2, 3, 4, 5)", "(2, 4, 4, 5)", "axis 0"):
        gg.concat([x, gg.zeros((2, 4, 4, 5), dtype="float64")])
    with raises(gg.ShapeError, "Concat", "(2, 3, 4, 5)", "(2, 3)"):
        gg.concat([x, gg.zeros((2, 3), dtype="float64")], axis=1)
    with raises(gg.ShapeError, "Concat", "axis 4"):
        gg.concat([x, x], axis=4)
    with raises(gg.DTypeError, "Concat", "float32", "float64"):
        gg.concat([x, gg.zeros((2, 3, 4, 5))])
    with raises(TypeError, "Concat"):
        gg.concat(x)
    with raises(gg.ShapeError, "Stack", "(2, 3, 4, 5)", "(1, 3, 4, 5)"):
        gg.stack([x, x[:1]])
    with raises(gg.ShapeError, "Transpose", "(0, 1, 1, 2)", "(2, 3, 4, 5)"):
        x.transpose(0, 1, 1, 2)
    with raises(gg.ShapeError, "Transpose"):
        x.transpose(0, 1)
    with raises(gg.ShapeError, "Squeeze", "axis 1", "(2, 3, 4, 5)"):
        x.squeeze(1)
    with raises(gg.ShapeError, "ExpandDims", "axis 6"):
        gg.expand_dims(x, 6)
    with raises(gg.ShapeError, "Split", "length 4", "3 equal parts"):
        gg.split(x, 3, axis=2)
    with raises(gg.ShapeError, "Split", "length 5"):
        gg.split(x, [2, 2], axis=3)
    with raises(gg.ShapeError, "Split"):
        gg.split(x, [-1, -1], axis=3)
    with raises(gg.ShapeError, "Pad", "(2, 3, 4, 5)"):
        gg.pad(x, ((1, 1), (1, 1)))
    with raises(gg.ShapeError, "Pad", ">= 0"):
        gg.pad(x, -1)
    with raises(TypeError, "Pad"):
        gg.pad(x, 1.5)


@pytest.mark.parametrize("shape, idx", [
    ((10, 3), [1, -1, 1, 0, 9]),
    ((5, 2, 3), [[0, 4], [4, -5]]),
    ((4,), [0, 0, 3]),
])
def test_row_scatter_add_matches_numpy_add_at(shape, idx):
    from gpugrad.ops.array.indexing import getitem_grad

    idx = np.array(idx)
    values = np.random.default_rng(0).standard_normal(idx.shape + shape[1:])
    expected = np.zeros(shape)
    np.add.at(expected, (idx,), values)
    np.testing.assert_array_equal(getitem_grad(gg.tensor(values), (idx,), shape).numpy(), expected)
