"""Tensor and Variable: dtype rules, operators, conversions, the Python protocol, assign*."""
import operator

import numpy as np
import pytest

import gpugrad as gg


# ---------------------------------------------------------------- dtype rules


@pytest.mark.parametrize("data, dtype", [
    (1.5, np.float32),
    ([1.0, 2.0], np.float32),
    ([[1.0], [2.5]], np.float32),
    ([1, 2.5], np.float32),
    (3, np.int64),
    ([1, 2, 3], np.int64),
    (True, np.bool_),
    (np.array([1.0, 2.0]), np.float64),
    (np.float64(1.5), np.float64),
    (np.array([1.0], dtype=np.float32), np.float32),
    (np.array([1.0], dtype=np.float16), np.float16),
    (np.array([1, 2], dtype=np.int32), np.int32),
])
def test_dtype_rules(data, dtype):
    assert gg.tensor(data).dtype == dtype
    assert gg.Variable(data).dtype == dtype


@pytest.mark.parametrize("data, dtype", [
    (1, np.float32),
    (1.5, np.float64),
    ([1.0, 2.0], "float64"),
    (np.array([1.0, 2.0]), np.float32),
    (np.array([1.7, 2.2]), np.int64),
    (gg.tensor([1.0, 2.0]), np.float64),
])
def test_dtype_argument_is_honoured(data, dtype):
    t = gg.tensor(data, dtype=dtype)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(data.numpy() if isinstance(data, gg.Tensor) else data,
                                                        dtype=dtype))
    assert gg.Variable(data, dtype=dtype).dtype == np.dtype(dtype)


def test_float64_precision_is_kept():
    t = gg.tensor(np.array([1.0 + 1e-12]))
    assert t.numpy()[0] == 1.0 + 1e-12


def test_python_scalar_keeps_the_tensor_dtype():
    for dtype in (np.float16, np.float32, np.float64):
        t = gg.tensor([1.0, 2.0], dtype=dtype)
        for result in (t + 1.5, 1.5 + t, t * 2, 2 - t, t / 3.0, 3.0 / t, t ** 2, 2.0 ** t, -t):
            assert result.dtype == dtype


def test_tensor_attributes():
    t = gg.tensor(np.zeros((2, 3, 4)))
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.size == 24
    assert t.device == "cpu"
    assert gg.tensor(2.0).shape == () and gg.tensor(2.0).ndim == 0


# ---------------------------------------------------------------- operators


A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
B = np.array([0.5, -1.5, 2.0])

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_binary_operators(op):
    a, b = gg.tensor(A), gg.tensor(B)
    expected = op(A, B)
    for result in (op(a, b), op(a, B), op(A, b)):
        assert isinstance(result, gg.Tensor)
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-15)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_reflected_operators_with_python_numbers(op):
    a = gg.tensor(A)
    np.testing.assert_allclose(op(2.0, a).numpy(), op(2.0, A), rtol=1e-15)
    np.testing.assert_allclose(op(a, 2.0).numpy(), op(A, 2.0), rtol=1e-15)
    np.testing.assert_allclose(op(3, a).numpy(), op(3, A), rtol=1e-15)


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_ndarray_on_the_left_gives_a_tensor(op):
    b = gg.tensor(B)
    result = op(A, b)  # NumPy must defer to the Tensor's reflected operator
    assert type(result) is gg.Tensor
    assert result.shape == (2, 3)
    np.testing.assert_allclose(result.numpy(), op(A, B), rtol=1e-15)


def test_ndarray_on_the_left_is_differentiable():
    x = gg.tensor(B)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = A * x + A / x - A
    g = tape.gradient(y, x)
    np.testing.assert_allclose(g.numpy(), (A - A / B ** 2).sum(axis=0), rtol=1e-14)


def test_reflected_operators_are_differentiable():
    x = gg.tensor(np.array([0.5, 2.0]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = (2.0 - x) + (3.0 / x) + (2.0 ** x) + (5.0 * x) + (1.0 + x)
    g = tape.gradient(y, x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(g, -1 - 3 / xv ** 2 + np.log(2) * 2 ** xv + 5 + 1, rtol=1e-14)


def test_unary_operators():
    a = gg.tensor(np.array([-2.0, 0.0, 3.5]))
    np.testing.assert_array_equal((-a).numpy(), [2.0, -0.0, -3.5])
    np.testing.assert_array_equal(abs(a).numpy(), [2.0, 0.0, 3.5])
    np.testing.assert_array_equal(a.abs().numpy(), [2.0, 0.0, 3.5])


def test_method_forms():
    a = gg.tensor(A)
    assert a.sum().item() == 21.0
    np.testing.assert_array_equal(a.sum(axis=0).numpy(), [5.0, 7.0, 9.0])
    assert a.mean().item() == 3.5
    assert a.reshape((3, 2)).shape == (3, 2)
    assert a.reshape((-1,)).shape == (6,)


def test_mismatched_shapes_raise_shape_error_with_the_shapes():
    with pytest.raises(gg.ShapeError, match=r"\(2,\).*\(3,\)"):
        gg.tensor([1.0, 2.0]) * gg.tensor([1.0, 2.0, 3.0])


# ---------------------------------------------------------------- comparisons


CMP = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("op", CMP, ids=lambda f: f.__name__)
def test_comparisons_are_elementwise_booleans(op):
    a = gg.tensor(np.array([1.0, 2.0, 3.0]))
    b = np.array([2.0, 2.0, 2.0])
    for result, expected in ((op(a, gg.tensor(b)), op(a.numpy(), b)), (op(a, 2.0), op(a.numpy(), 2.0)),
                             (op(b, a), op(b, a.numpy()))):
        assert isinstance(result, gg.Tensor)
        assert result.dtype == np.bool_
        np.testing.assert_array_equal(result.numpy(), expected)


def test_comparisons_are_not_recorded():
    x = gg.tensor([1.0, -1.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        mask = x > 0.0
        also = x == x
    assert [op.type for op in tape._ops] == []
    assert mask.numpy().tolist() == [True, False] and also.numpy().all()


def test_tensors_stay_hashable():
    a, b = gg.tensor(1.0), gg.tensor(1.0)
    assert len({a, b}) == 2
    assert {a: 1}[a] == 1


# ---------------------------------------------------------------- conversions


def test_numpy_asarray_item_data_to():
    a = gg.tensor(A)
    n = a.numpy()
    assert isinstance(n, np.ndarray) and n.dtype == np.float64
    np.testing.assert_array_equal(n, A)
    np.testing.assert_array_equal(np.asarray(a), A)
    assert np.asarray(a, dtype=np.float32).dtype == np.float32
    assert isinstance(a.data, np.ndarray)
    np.testing.assert_array_equal(a.data, A)
    assert a.to("cpu").device == "cpu"
    np.testing.assert_array_equal(a.to("cpu").numpy(), A)
    assert gg.tensor(2.5).item() == 2.5 and isinstance(gg.tensor(2.5).item(), float)
    assert gg.tensor([7]).item() == 7 and isinstance(gg.tensor([7]).item(), int)
    assert float(gg.tensor(2.5)) == 2.5 and int(gg.tensor(3)) == 3


def test_item_of_many_values_raises():
    with pytest.raises(ValueError, match=r"\(2,\)"):
        gg.tensor([1.0, 2.0]).item()


def test_numpy_functions_accept_tensors():
    a = gg.tensor(A)
    assert np.sum(np.asarray(a)) == 21.0
    np.testing.assert_array_equal(np.array(a), A)


def test_tensor_of_a_tensor():
    a = gg.tensor([1.0, 2.0])
    b = gg.tensor(a)
    np.testing.assert_array_equal(b.numpy(), [1.0, 2.0])


def test_len_and_bool():
    assert len(gg.tensor(A)) == 2
    assert len(gg.tensor([1.0, 2.0, 3.0])) == 3
    with pytest.raises(TypeError):
        len(gg.tensor(1.0))
    assert bool(gg.tensor(1.0)) is True
    assert bool(gg.tensor(0.0)) is False
    assert bool(gg.tensor([3])) is True
    with pytest.raises(ValueError):
        bool(gg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        iter(gg.tensor(1.0)).__next__()


def test_iteration_yields_the_rows():
    rows = list(gg.tensor(A))
    assert len(rows) == 2
    assert all(isinstance(r, gg.Tensor) and r.shape == (3,) for r in rows)
    np.testing.assert_array_equal(rows[1].numpy(), A[1])


def test_repr():
    r = repr(gg.tensor([1.0, 2.5]))
    assert r.startswith("tensor(") and "1." in r and "2.5" in r
    assert "float32" in r and "'cpu'" in r
    v = repr(gg.Variable([3.0], name="weights"))
    assert v.startswith("Variable(") and "'weights'" in v and "3." in v


# ---------------------------------------------------------------- Variable


def test_variable_defaults():
    v = gg.Variable([1.0, 2.0])
    assert v.trainable is True and v.name is None
    assert isinstance(v, gg.Tensor)
    assert gg.Variable(1.0, trainable=False, name="n").trainable is False


def test_variable_owns_its_array():
    source = np.array([1.0, 2.0])
    v = gg.Variable(source)
    v.assign_add(1.0)
    np.testing.assert_array_equal(source, [1.0, 2.0])
    t = gg.tensor([1.0, 2.0])
    w = gg.Variable(t)
    w.assign([9.0, 9.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_assign_in_place():
    v = gg.Variable([1.0, 2.0, 3.0])
    array = v.data
    assert v.assign([4.0, 5.0, 6.0]) is v
    assert v.data is array
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0, 6.0])
    assert v.assign_add(gg.tensor([1.0, 1.0, 1.0])) is v
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0, 7.0])
    assert v.assign_sub(np.array([0.5, 0.5, 0.5])) is v
    np.testing.assert_array_equal(v.numpy(), [4.5, 5.5, 6.5])
    assert v.data is array and v.dtype == np.float32


def test_assign_keeps_the_variable_dtype():
    v = gg.Variable([1.0, 2.0])
    v.assign(np.array([1.25, 2.5]))  # float64 values into a float32 variable
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v.numpy(), [1.25, 2.5])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
@pytest.mark.parametrize("value", [[1.0, 2.0], np.ones((3, 3)), np.ones((2, 3))])
def test_assign_shape_mismatch_raises_shape_error(method, value):
    v = gg.Variable([1.0, 2.0, 3.0], name="v")
    with pytest.raises(gg.ShapeError, match=r"\(3,\)"):
        getattr(v, method)(value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])


def test_numpy_of_a_variable_is_a_snapshot():
    v = gg.Variable([1.0, 2.0])
    before = v.numpy()  # DESIGN.md: ".numpy() (host copy)"
    v.assign_add(10.0)
    np.testing.assert_array_equal(v.numpy(), [11.0, 12.0])
    np.testing.assert_array_equal(before, [1.0, 2.0])


def test_tensor_of_a_variable_is_a_constant():
    v = gg.Variable([1.0, 2.0])
    constant = gg.tensor(v)  # a Tensor is immutable: later assigns must not show through
    v.assign_add(10.0)
    np.testing.assert_array_equal(constant.numpy(), [1.0, 2.0])


def test_ops_on_variables_give_tensors():
    v = gg.Variable([1.0, 2.0])
    y = v * 2.0
    assert type(y) is gg.Tensor
    v.assign([5.0, 5.0])
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])


def test_views_of_a_variable_do_not_change_when_it_is_assigned():
    v = gg.Variable([1.0, 2.0, 3.0])
    views = [v[0:2], v[::-1], gg.reshape(v, (3, 1)), v.T, gg.broadcast_to(v, (3,)),
             gg.expand_dims(v, 0), gg.split(v, 3)[1]]
    before = [t.numpy().copy() for t in views]
    v.assign([9.0, 9.0, 9.0])
    for t, old in zip(views, before):
        np.testing.assert_array_equal(t.numpy(), old)


def test_views_of_a_tensor_stay_views():
    x = gg.tensor([1.0, 2.0, 3.0])
    assert np.shares_memory(gg.reshape(x, (3, 1)).data, x.data)
