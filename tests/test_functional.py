"""gg.grad, value_and_grad, jacobian, hessian, hvp, vjp, jvp.

Closed forms, finite differences, argument structures and errors.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import tape as tape_module  # its global `backward` is the sweep gradient() calls
from gpugrad._recorder import active_tapes

from .conftest import numerical_jacobian

RNG = np.random.default_rng(11)
A = RNG.uniform(-1, 1, (4, 4))


def quadratic(x):
    """x^T A x, whose Hessian is A + A^T."""
    return gg.sum(x * gg.matmul(gg.tensor(A), x))


def mixed(x, y):
    """A scalar of two arguments with every kind of second derivative."""
    return gg.sum(gg.tanh(x) * y) + gg.sum(gg.exp(x * 0.5)) * gg.sum(y * y)


def np_of(f):
    """``f`` of NumPy arrays returning a NumPy array, for finite differences."""
    return lambda *arrays: f(*[gg.tensor(a) for a in arrays]).numpy()


# ---------------------------------------------------------------- grad, value_and_grad


def test_grad_agrees_with_finite_differences_for_each_argnum():
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    dx, dy = gg.grad(mixed, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(dx.numpy(), numerical_jacobian(lambda a: np_of(mixed)(a, y), x), atol=1e-8)
    np.testing.assert_allclose(dy.numpy(), numerical_jacobian(lambda b: np_of(mixed)(x, b), y), atol=1e-8)
    np.testing.assert_array_equal(gg.grad(mixed, argnums=1)(x, y).numpy(), dy.numpy())
    np.testing.assert_array_equal(gg.grad(mixed, argnums=-1)(x, y).numpy(), dy.numpy())
    assert isinstance(gg.grad(mixed, argnums=(1,))(x, y), tuple)


def test_inputs_convert_like_gg_tensor():
    g64 = gg.grad(lambda x: gg.sum(x * x))(np.array([1.0, 2.0]))
    g32 = gg.grad(lambda x: x * x)(3.0)
    assert g64.dtype == np.float64 and g32.dtype == np.float32 and g32.item() == 6.0
    w = gg.Variable([1.0, 2.0])
    np.testing.assert_array_equal(gg.grad(lambda v: gg.sum(v * v))(w).numpy(), [2.0, 4.0])


def test_value_and_grad_and_has_aux():
    x = gg.tensor(np.array([1.0, -2.0]))

    def loss(x, scale):
        value = gg.sum(x * x) * scale
        return value, {"norm": gg.sqrt(gg.sum(x * x)), "n": 2}

    (value, aux), g = gg.value_and_grad(loss, has_aux=True)(x, 3.0)
    assert value.item() == 15.0 and aux["n"] == 2 and aux["norm"].item() == pytest.approx(np.sqrt(5.0))
    np.testing.assert_array_equal(g.numpy(), [6.0, -12.0])
    g2, aux2 = gg.grad(loss, has_aux=True)(x, scale=3.0)
    np.testing.assert_array_equal(g2.numpy(), g.numpy())
    assert aux2["n"] == 2
    value, g3 = gg.value_and_grad(lambda x: gg.sum(x * x))(x)
    assert value.item() == 5.0 and g3.numpy().tolist() == [2.0, -4.0]


def test_pytree_arguments_keep_their_structure():
    params = {"w": np.array([[1.0, 2.0]]), "layers": [np.array([0.5]), (np.array(2.0), 3.0)]}

    def f(p, x):
        b, (c, d) = p["layers"]
        return gg.sum(gg.matmul(p["w"], x) * b) * c + d * d

    x = gg.tensor(np.array([[1.0], [3.0]]))
    g = gg.grad(f)(params, x)
    assert set(g) == {"w", "layers"} and isinstance(g["layers"], list) and isinstance(g["layers"][1], tuple)
    np.testing.assert_array_equal(g["w"].numpy(), [[1.0, 3.0]])  # b * c * x^T
    assert g["layers"][0].item() == 14.0  # (w @ x) * c
    assert g["layers"][1][0].item() == 3.5 and g["layers"][1][1].item() == 6.0
    gx = gg.grad(f, argnums=1)(params, x)
    np.testing.assert_array_equal(gx.numpy(), [[1.0], [2.0]])


def test_an_argument_passed_twice_is_differentiated_per_place():
    x = gg.tensor(np.array([1.0, 2.0]))
    f = lambda a, b: gg.sum(a * a * b)  # noqa: E731
    da, db = gg.grad(f, argnums=(0, 1))(x, x)
    np.testing.assert_array_equal(da.numpy(), [2.0, 8.0])  # 2 a b
    np.testing.assert_array_equal(db.numpy(), [1.0, 4.0])  # a^2
    np.testing.assert_array_equal(gg.grad(f)(x, x).numpy(), [2.0, 8.0])  # b stays a constant


def test_unconnected_arguments_get_zeros():
    dx, dy = gg.grad(lambda x, y: gg.sum(x * 2.0), argnums=(0, 1))(np.ones(2), np.ones(3))
    assert dx.numpy().tolist() == [2.0, 2.0] and dy.shape == (3,) and not dy.numpy().any()


def test_nested_grad_gives_higher_derivatives():
    f = lambda x: x ** 4.0  # noqa: E731
    x = np.array(1.5)
    assert gg.grad(gg.grad(f))(x).item() == pytest.approx(12 * 1.5 ** 2)
    assert gg.grad(gg.grad(gg.grad(f)))(x).item() == pytest.approx(24 * 1.5)


def test_an_outer_tape_records_a_functional_gradient():
    x = gg.tensor(np.array([0.2, -0.7]))
    with gg.GradientTape() as tape:
        tape.watch(x)
        g = gg.grad(lambda v: gg.sum(gg.sin(v)))(x)
    np.testing.assert_allclose(tape.gradient(g, x).numpy(), -np.sin(x.numpy()), atol=1e-15)


def test_grad_errors():
    with pytest.raises(gg.ShapeError, match=r"scalar.*\(3,\)"):
        gg.grad(lambda x: x * 2.0)(np.ones(3))
    with pytest.raises(TypeError, match="has_aux"):
        gg.grad(lambda x: (gg.sum(x), 1))(np.ones(3))
    with pytest.raises(gg.DTypeError, match="argument 0 has dtype int64"):
        gg.grad(lambda x: x * 2)(3)
    with pytest.raises(ValueError, match="out of range for 1 positional"):
        gg.grad(lambda x: x, argnums=1)(1.0)
    with pytest.raises(ValueError, match="repeats"):
        gg.grad(lambda x, y: x, argnums=(0, 0))(1.0, 2.0)
    with pytest.raises(TypeError, match="argnums must be"):
        gg.grad(lambda x: x, argnums="0")(1.0)
    with pytest.raises(TypeError, match="pair"):
        gg.value_and_grad(lambda x: x, has_aux=True)(1.0)
    assert not active_tapes()


# ---------------------------------------------------------------- jacobian, hessian


def test_jacobian_agrees_with_finite_differences():
    f = lambda x: gg.softplus(gg.matmul(gg.tensor(A), x)) * gg.sum(x)  # noqa: E731
    x = RNG.uniform(-1, 1, 4)
    np.testing.assert_allclose(gg.jacobian(f)(x).numpy(), numerical_jacobian(np_of(f), x), atol=1e-8)


def test_jacobian_of_a_linear_map_and_of_structured_outputs():
    x = RNG.uniform(-1, 1, 4)
    np.testing.assert_array_equal(gg.jacobian(lambda v: gg.matmul(gg.tensor(A), v))(x).numpy(), A)
    out = gg.jacobian(lambda a, b: {"p": a * b, "s": gg.sum(a)}, argnums=(0, 1))(np.array([1.0, 2.0]),
                                                                           np.array([3.0, 4.0]))
    np.testing.assert_array_equal(out["p"][0].numpy(), np.diag([3.0, 4.0]))
    np.testing.assert_array_equal(out["p"][1].numpy(), np.diag([1.0, 2.0]))
    np.testing.assert_array_equal(out["s"][0].numpy(), [1.0, 1.0])
    assert out["s"][1].shape == (2,) and not out["s"][1].numpy().any()


def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose():
    x = RNG.uniform(-1, 1, 4)
    np.testing.assert_allclose(gg.hessian(quadratic)(x).numpy(), A + A.T, atol=1e-12)


def test_hessian_blocks_agree_with_finite_differences_of_the_gradient():
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 2)
    f = lambda x, y: gg.sum(gg.tanh(x)) * gg.sum(y * y) + gg.sum(gg.exp(x)) * y[0]  # noqa: E731
    blocks = gg.hessian(f, argnums=(0, 1))(x, y)
    assert [[b.shape for b in row] for row in blocks] == [[(3, 3), (3, 2)], [(2, 3), (2, 2)]]
    gradient = gg.grad(f, argnums=(0, 1))
    for i in range(2):
        for j, wrt in enumerate((x, y)):
            def gi(v, i=i, j=j):
                args = [x, y]
                args[j] = v
                return gradient(*args)[i].numpy()
            np.testing.assert_allclose(blocks[i][j].numpy(), numerical_jacobian(gi, wrt), atol=1e-7)
    np.testing.assert_allclose(blocks[0][1].numpy(), blocks[1][0].numpy().T, atol=1e-12)


# ---------------------------------------------------------------- hvp, vjp, jvp


def test_hvp_equals_hessian_times_v():
    x, v = RNG.uniform(-1, 1, 4), RNG.uniform(-1, 1, 4)
    (hv,) = gg.hvp(quadratic, (x,), (v,))
    np.testing.assert_allclose(hv.numpy(), (A + A.T) @ v, atol=1e-12)
    x, y, vx, vy = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    blocks = gg.hessian(mixed, argnums=(0, 1))(x, y)
    hx, hy = gg.hvp(mixed, (x, y), (vx, vy))
    h = np.block([[b.numpy() for b in row] for row in blocks])
    expected = h @ np.concatenate([vx, vy])
    np.testing.assert_allclose(np.concatenate([hx.numpy(), hy.numpy()]), expected, atol=1e-12)


def test_hvp_takes_two_sweeps_whatever_the_size(monkeypatch):
    sweeps = []
    backward = tape_module.backward

    def counting(*args, **kwargs):
        sweeps.append(1)
        return backward(*args, **kwargs)

    monkeypatch.setattr(tape_module, "backward", counting)
    n = 2000  # the Hessian would take n sweeps and n^2 numbers
    x, v = gg.tensor(RNG.uniform(-1, 1, n)), gg.tensor(RNG.uniform(-1, 1, n))
    hv = gg.hvp(lambda x: gg.sum(x ** 3.0), x, v)
    assert len(sweeps) == 2
    np.testing.assert_allclose(hv.numpy(), 6 * x.numpy() * v.numpy(), atol=1e-12)


def test_vjp_of_matmul():
    a, b = RNG.uniform(-1, 1, (2, 3)), RNG.uniform(-1, 1, (3, 4))
    out, vjp_fn = gg.vjp(gg.matmul, a, b)
    np.testing.assert_allclose(out.numpy(), a @ b)
    for _ in range(2):  # vjp_fn can be called again
        ct = RNG.uniform(-1, 1, (2, 4))
        da, db = vjp_fn(ct)
        np.testing.assert_allclose(da.numpy(), ct @ b.T, atol=1e-14)
        np.testing.assert_allclose(db.numpy(), a.T @ ct, atol=1e-14)
    shapes = r"cotangent 0 has shape \(4, 2\) but its output has shape \(2, 4\)"
    with pytest.raises(gg.ShapeError, match=shapes):
        vjp_fn(np.ones((4, 2)))
    with pytest.raises(ValueError, match="2 cotangent arrays for 1 output"):
        vjp_fn([np.ones((2, 4)), np.ones((2, 4))])


def test_vjp_with_structured_output_and_aux():
    out, vjp_fn, aux = gg.vjp(lambda x: ({"sq": x * x, "neg": -x}, "tag"), np.array([1.0, 3.0]), has_aux=True)
    assert aux == "tag" and out["sq"].numpy().tolist() == [1.0, 9.0]
    (dx,) = vjp_fn({"sq": np.array([1.0, 1.0]), "neg": np.array([0.0, 2.0])})
    np.testing.assert_array_equal(dx.numpy(), [2.0, 4.0])  # 2 x - (0, 2)


def test_jvp_of_tanh_is_one_minus_tanh_squared_times_v():
    x, v = RNG.uniform(-2, 2, (3, 2)), RNG.uniform(-1, 1, (3, 2))
    y, dy = gg.jvp(gg.tanh, (x,), (v,))
    np.testing.assert_allclose(y.numpy(), np.tanh(x))
    np.testing.assert_allclose(dy.numpy(), (1 - np.tanh(x) ** 2) * v, atol=1e-15)


def test_jvp_is_exact_and_agrees_with_finite_differences():
    f = lambda x, y: gg.sin(gg.matmul(gg.tensor(A), x)) * gg.sum(y ** 2.0)  # noqa: E731
    x, y, vx, vy = RNG.uniform(-1, 1, 4), RNG.uniform(-1, 1, 2), RNG.uniform(-1, 1, 4), RNG.uniform(-1, 1, 2)
    out, tangent = gg.jvp(f, (x, y), (vx, vy))
    jx, jy = gg.jacobian(f, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(tangent.numpy(), jx.numpy() @ vx + jy.numpy() @ vy, atol=1e-13)
    eps = 1e-6
    central = (np_of(f)(x + eps * vx, y + eps * vy) - np_of(f)(x - eps * vx, y - eps * vy)) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), central, atol=1e-8)


def test_jvp_structures_aux_and_nesting():
    primals = ({"a": np.array([1.0, 2.0]), "b": np.array(0.5)},)
    tangents = ({"a": np.array([1.0, 0.0]), "b": np.array(2.0)},)
    f = lambda p: ((p["a"] * p["b"], gg.sum(p["a"])), 7)  # noqa: E731
    out, tangent, aux = gg.jvp(f, primals, tangents, has_aux=True)
    assert aux == 7 and isinstance(tangent, tuple)
    np.testing.assert_array_equal(tangent[0].numpy(), [0.5 + 2.0, 4.0])  # b da + a db
    assert tangent[1].item() == 1.0
    # forward over reverse: the gradient of a jvp is a second derivative
    x = np.array([0.3, -0.2])
    g = gg.grad(lambda x: gg.sum(gg.jvp(gg.tanh, (x,), (gg.ones_like(x),))[1]))(x)
    np.testing.assert_allclose(g.numpy(), -2 * np.tanh(x) * (1 - np.tanh(x) ** 2), atol=1e-15)


def test_wrong_tangents_name_both_shapes():
    with pytest.raises(gg.ShapeError, match=r"tangent 1 has shape \(2,\) but its primal has shape \(3,\)"):
        gg.jvp(lambda x, y: x * y, (np.ones(3), np.ones(3)), (np.ones(3), np.ones(2)))
    with pytest.raises(gg.ShapeError, match=r"tangent 0 has shape \(4,\) but its primal has shape \(3,\)"):
        gg.hvp(lambda x: gg.sum(x * x), (np.ones(3),), (np.ones(4),))
    with pytest.raises(ValueError, match="tangents has 1"):
        gg.jvp(lambda x, y: x * y, (np.ones(3), np.ones(3)), (np.ones(3),))
    with pytest.raises(gg.ShapeError, match="scalar"):
        gg.hvp(lambda x: x * x, (np.ones(3),), (np.ones(3),))
    assert not active_tapes()


def test_hessian_of_a_vector_function_and_with_aux():
    x = np.array([1.0, 2.0])
    h = gg.hessian(lambda x: x ** 3.0)(x)  # out.shape + x.shape + x.shape
    expected = np.zeros((2, 2, 2))
    expected[0, 0, 0], expected[1, 1, 1] = 6.0, 12.0
    np.testing.assert_array_equal(h.numpy(), expected)
    h, aux = gg.hessian(lambda x: (gg.sum(x ** 3.0), "aux"), has_aux=True)(x)
    assert aux == "aux"
    np.testing.assert_array_equal(h.numpy(), np.diag([6.0, 12.0]))
