"""gg.dense: ``activation(x @ kernel + bias)`` as one op, equal to the three ops it replaces.

Its gradients (first and second order) are checked with every other op in
test_gradients.py (specs ``Dense-*``); here: the forward to the last bit, the
one record it makes, the layer that uses it, and its errors.
"""
import numpy as np
import pytest

import gpugrad as gg

RNG = np.random.default_rng(3)
ACTIVATIONS = [None, "relu", "tanh", "sigmoid"]


def composed(x, kernel, bias, activation):
    y = gg.matmul(x, kernel)
    y = y if bias is None else y + bias
    return y if activation is None else getattr(gg, activation)(y)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("x_shape", [(5, 4), (4,), (2, 3, 4)])
@pytest.mark.parametrize("dtypes", [("float32",) * 3, ("float64",) * 3, ("float32", "float64", "float32"),
                                    ("float32", "float32", "float64")])
def test_dense_equals_matmul_add_activation_to_the_last_bit(activation, x_shape, dtypes):
    x = gg.tensor(RNG.normal(size=x_shape), dtype=dtypes[0])
    kernel = gg.tensor(RNG.normal(size=(4, 3)), dtype=dtypes[1])
    bias = gg.tensor(RNG.normal(size=3), dtype=dtypes[2])
    for b in (bias, None):
        got, want = gg.dense(x, kernel, b, activation=activation), composed(x, kernel, b, activation)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_dense_gradients_equal_the_composed_ops(activation):
    x = gg.tensor(RNG.normal(size=(6, 4)))
    kernel, bias = gg.Variable(RNG.normal(size=(4, 3))), gg.Variable(RNG.normal(size=3))
    dy = gg.tensor(RNG.normal(size=(6, 3)))
    grads = []
    for f in (gg.dense, composed):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = f(x, kernel, bias, activation)
        grads.append(tape.gradient(y, [x, kernel, bias], output_gradients=dy))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13, atol=1e-15)


def test_a_dense_layer_records_one_op():
    layer = gg.nn.Dense(4, 3, activation="relu", seed=0)
    x = gg.tensor(RNG.normal(size=(5, 4)))
    with gg.GradientTape() as tape:
        y = layer(x)
    assert [rec[0] for rec in tape._ops] == ["Dense"]
    g_kernel, g_bias = tape.gradient(y, [layer.kernel, layer.bias])
    assert g_kernel.shape == (4, 3) and g_bias.shape == (3,)


def test_a_dense_layer_with_another_activation_applies_it_after_the_op():
    layer = gg.nn.Dense(4, 3, activation="gelu", seed=0)
    x = gg.tensor(RNG.normal(size=(5, 4)), dtype="float32")
    with gg.GradientTape() as tape:
        y = layer(x)
    assert [rec[0] for rec in tape._ops][0] == "Dense" and len(tape._ops) > 1
    np.testing.assert_array_equal(y.numpy(), gg.gelu(x @ layer.kernel + layer.bias).numpy())


def test_dense_errors_say_what_fits():
    x, kernel, bias = gg.ones((2, 4)), gg.ones((4, 3)), gg.ones(3)
    with pytest.raises(ValueError, match="'gelu'"):
        gg.dense(x, kernel, bias, activation="gelu")
    with pytest.raises(gg.ShapeError, match=r"kernel of shape \(in_features, out_features\), got \(4,\)"):
        gg.dense(x, gg.ones(4))
    with pytest.raises(gg.ShapeError, match=r"x of shape \(\.\.\., 4\) .* got \(2, 5\)"):
        gg.dense(gg.ones((2, 5)), kernel)
    with pytest.raises(gg.ShapeError, match=r"x of shape \(\.\.\., 4\) .* got \(\)"):
        gg.dense(gg.tensor(1.0), kernel)
    with pytest.raises(gg.ShapeError, match=r"bias of shape \(3,\) .* got \(4,\)"):
        gg.dense(x, kernel, gg.ones(4))
    with pytest.raises(gg.DTypeError, match="x has dtype int64"):
        gg.dense(gg.tensor([[1, 2, 3, 4]]), kernel)
    with pytest.raises(gg.DTypeError, match="bias has dtype bool"):
        gg.dense(x, kernel, gg.tensor([True, False, True]))


def test_dense_takes_arrays_and_lists():
    got = gg.dense(np.ones((1, 2), np.float32), [[1.0], [2.0]], [0.5], activation="relu")
    assert got.numpy().tolist() == [[3.5]]
