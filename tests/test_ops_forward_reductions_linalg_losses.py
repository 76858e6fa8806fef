"""Forward values of the reductions, linear algebra ops and losses against NumPy and
closed forms, and the errors they raise."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import ops

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 3, 4))
AXES = [None, 0, 1, -1, (0, 2), (-1, -2), (0, 1, 2)]


def grad(f, x, **tape_kwargs):
    x = gg.tensor(x)
    with gg.GradientTape(**tape_kwargs) as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


# ---------------------------------------------------------------- reductions


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std"])
def test_reduction_matches_numpy(name, axis, keepdims):
    out = getattr(gg, name)(gg.tensor(X), axis=axis, keepdims=keepdims)
    expected = getattr(np, name)(X, axis=axis, keepdims=keepdims)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("axis", AXES)
def test_logsumexp_matches_closed_form(axis):
    out = gg.logsumexp(gg.tensor(X), axis=axis, keepdims=True)
    np.testing.assert_allclose(out.numpy(), np.log(np.sum(np.exp(X), axis=axis, keepdims=True)), rtol=1e-12)


def test_logsumexp_is_stable():
    assert gg.logsumexp(gg.tensor([1000.0, 1000.0], dtype="float64")).item() == pytest.approx(1000 + np.log(2))
    assert gg.logsumexp(gg.tensor([-np.inf, -np.inf], dtype="float64")).item() == -np.inf
    assert gg.logsumexp(gg.tensor([-1000.0, -1000.0], dtype="float64")).item() == pytest.approx(-1000 + np.log(2))


@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_var_std_ddof_and_gradient(ddof):
    x = RNG.normal(size=(3, 5))
    np.testing.assert_allclose(gg.var(gg.tensor(x), axis=1, ddof=ddof).numpy(), np.var(x, axis=1, ddof=ddof))
    np.testing.assert_allclose(gg.tensor(x).std(ddof=ddof).item(), np.std(x, ddof=ddof))
    g = grad(lambda t: gg.var(t, axis=1, ddof=ddof), x).numpy()
    np.testing.assert_allclose(g, 2 * (x - x.mean(axis=1, keepdims=True)) / (5 - ddof))


def test_float32_stays_float32():
    x = gg.tensor(X.astype(np.float32))
    for fn in (gg.sum, gg.mean, gg.max, gg.prod, gg.var, gg.std, gg.logsumexp):
        assert fn(x, axis=1).dtype == np.float32, fn.__name__


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, 2])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_match_numpy(name, axis, keepdims):
    out = getattr(gg, name)(gg.tensor(X), axis=axis, keepdims=keepdims)
    expected = getattr(np, name)(X, axis=axis, keepdims=keepdims)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), expected)


def test_argmax_over_several_axes_indexes_them_flattened():
    out = gg.argmax(gg.tensor(X), axis=(0, 2))
    moved = np.moveaxis(X, 1, 0).reshape(3, -1)
    np.testing.assert_array_equal(out.numpy(), moved.argmax(axis=1))
    assert gg.argmax(gg.tensor(X), axis=(2, 0), keepdims=True).shape == (1, 3, 1)


def test_argmax_is_recorded_but_not_differentiable():
    x = gg.tensor(X)
    with gg.GradientTape() as tape:
        tape.watch(x)
        i = x.argmax(axis=1)
        y = x.max()
    assert "ArgMax" in [rec[0] for rec in tape._ops]  # recorded, so diagnostics can name it
    assert i.dtype == np.int64
    assert {"ArgMax", "ArgMin"} <= set(gg.registry.not_differentiable_ops())
    expected = (X == X.max()).astype(float)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), expected)


def test_method_forms():
    t = gg.tensor(X)
    for name in ("max", "min", "prod", "var", "std", "argmax", "argmin", "logsumexp", "sum", "mean"):
        assert getattr(t, name)(axis=1).shape == (2, 4), name


def test_max_splits_the_gradient_between_ties():
    g = grad(lambda t: gg.max(t, axis=1), np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [0.0, 5.0, 1.0]]))
    np.testing.assert_allclose(g.numpy(), [[0, 0.5, 0.5], [1 / 3] * 3, [0, 1, 0]])
    g = grad(gg.min, np.array([1.0, 1.0, 4.0]))
    np.testing.assert_allclose(g.numpy(), [0.5, 0.5, 0.0])


def test_prod_gradients_at_zeros():
    np.testing.assert_array_equal(grad(gg.prod, np.array([0.0, 2.0, 3.0])).numpy(), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(grad(gg.prod, np.array([0.0, 2.0, 0.0])).numpy(), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(grad(gg.prod, np.array([4.0, 2.0, 3.0])).numpy(), [6.0, 12.0, 8.0])
    # second derivatives: the Hessian of x0 x1 x2 at (0, 2, 3) is [[0, 3, 2], [3, 0, 0], [2, 0, 0]]
    x = gg.tensor([0.0, 2.0, 3.0], dtype="float64")
    hessian = []
    for i in range(3):
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                y = gg.prod(x)
            g = inner.gradient(y, x)
            gi = gg.sum(g * gg.tensor(np.eye(3)[i]))
        hessian.append(outer.gradient(gi, x).numpy())
    np.testing.assert_array_equal(np.array(hessian), [[0, 3, 2], [3, 0, 0], [2, 0, 0]])


def test_reduction_errors():
    with pytest.raises(gg.ShapeError, match="axis 3"):
        gg.sum(gg.tensor(X), axis=3)
    with pytest.raises(gg.ShapeError, match="axis -4"):
        gg.max(gg.tensor(X), axis=-4)
    with pytest.raises(gg.ShapeError, match="'Max'"):
        gg.max(gg.zeros((0, 3)), axis=0)
    with pytest.raises(gg.ShapeError, match="'ArgMin'"):
        gg.argmin(gg.zeros((0,)))


# ---------------------------------------------------------------- linear algebra


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 5)),
    ((2, 3, 4), (4,)), ((4,), (4,)), ((4,), (2, 4, 3)), ((1, 3, 4), (4, 2)),
])
def test_matmul_matches_numpy(a_shape, b_shape):
    a, b = RNG.normal(size=a_shape), RNG.normal(size=b_shape)
    out = gg.matmul(gg.tensor(a), gg.tensor(b))
    np.testing.assert_allclose(out.numpy(), np.matmul(a, b), rtol=1e-12)
    assert (gg.tensor(a) @ gg.tensor(b)).shape == np.matmul(a, b).shape
    assert (a @ gg.tensor(b)).shape == np.matmul(a, b).shape  # __rmatmul__ from a NumPy array


def test_matmul_transpose_flags():
    a, b = RNG.normal(size=(2, 4, 3)), RNG.normal(size=(2, 5, 4))
    out = gg.matmul(gg.tensor(a), gg.tensor(b), transpose_a=True, transpose_b=True)
    np.testing.assert_allclose(out.numpy(), np.swapaxes(a, -1, -2) @ np.swapaxes(b, -1, -2))


def test_matmul_gradient_matches_closed_form():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
    ta, tb = gg.tensor(a), gg.tensor(b)
    with gg.GradientTape() as tape:
        tape.watch([ta, tb])
        y = ta @ tb
    ga, gb = tape.gradient(y, [ta, tb])
    np.testing.assert_allclose(ga.numpy(), np.ones((3, 2)) @ b.T)
    np.testing.assert_allclose(gb.numpy(), a.T @ np.ones((3, 2)))


def test_matmul_errors_name_both_shapes():
    with pytest.raises(gg.ShapeError, match=r"\(3, 4\) and \(5, 2\)"):
        gg.matmul(gg.ones((3, 4)), gg.ones((5, 2)))
    with pytest.raises(gg.ShapeError, match=r"\(2, 3, 4\) and \(3, 4, 2\).*batch"):
        gg.ones((2, 3, 4)) @ gg.ones((3, 4, 2))
    with pytest.raises(gg.ShapeError, match="scalar"):
        gg.matmul(gg.tensor(2.0), gg.ones((2, 2)))
    with pytest.raises(gg.ShapeError, match="MatMul"):
        gg.matmul(gg.ones((3,)), gg.ones((3, 2)), transpose_a=True)


@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ba,ca", [(3, 4), (2, 4)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("...ij,jk", [(5, 2, 3), (3, 4)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("Ab,bC->AC", [(2, 3), (3, 4)]), ("i...,i...", [(3, 2), (3, 1)]),
])
def test_einsum_matches_numpy(subscripts, shapes):
    arrays = [RNG.normal(size=s) for s in shapes]
    out = gg.einsum(subscripts, *[gg.tensor(a) for a in arrays])
    np.testing.assert_allclose(out.numpy(), np.einsum(subscripts, *arrays), rtol=1e-12, atol=1e-14)


def test_einsum_errors():
    with pytest.raises(gg.ShapeError, match="Einsum"):
        gg.einsum("ij,jk->ik", gg.ones((3, 4)), gg.ones((5, 2)))
    with pytest.raises(gg.ShapeError, match="2 operand subscripts for 1"):
        gg.einsum("ij,jk", gg.ones((3, 4)))
    with pytest.raises(gg.ShapeError, match="axes"):
        gg.einsum("ijk->i", gg.ones((3, 4)))
    with pytest.raises(gg.ShapeError, match="letters"):
        gg.einsum("i1->i", gg.ones((3, 4)))


@pytest.mark.parametrize("axes, b_shape", [
    (2, (3, 4, 2)), (1, (4, 5)), (0, (2,)), (([0, 2], [1, 0]), (4, 2, 3)), ((-1, 0), (4, 5)), (([1], [0]), (3, 2)),
])
def test_tensordot_matches_numpy(axes, b_shape):
    a, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=b_shape)
    out = gg.tensordot(gg.tensor(a), gg.tensor(b), axes=axes)
    np.testing.assert_allclose(out.numpy(), np.tensordot(a, b, axes=axes), rtol=1e-12)


def test_tensordot_errors():
    with pytest.raises(gg.ShapeError, match="sizes 4 and 3 differ"):
        gg.tensordot(gg.ones((2, 4)), gg.ones((3, 2)), axes=1)
    with pytest.raises(gg.ShapeError, match="out of range"):
        gg.tensordot(gg.ones((2, 4)), gg.ones((4, 2)), axes=([5], [0]))


# ---------------------------------------------------------------- softmax family and losses


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1, (1, 2)])
def test_softmax_and_log_softmax_match_closed_forms(axis):
    np.testing.assert_allclose(gg.softmax(gg.tensor(X), axis=axis).numpy(), _softmax(X, axis), rtol=1e-12)
    np.testing.assert_allclose(gg.log_softmax(gg.tensor(X), axis=axis).numpy(), np.log(_softmax(X, axis)),
                               rtol=1e-12)


def test_softmax_family_is_stable():
    x = gg.tensor([1000.0, -1000.0, 0.0], dtype="float64")
    np.testing.assert_allclose(gg.softmax(x).numpy(), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(gg.log_softmax(x).numpy(), [0.0, -2000.0, -1000.0])


def _cross_entropy(logits, labels):
    log_p = np.log(_softmax(logits))
    return -np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]


@pytest.mark.parametrize("as_type", [list, np.asarray, gg.tensor, lambda v: np.asarray(v, dtype=np.int32)])
def test_softmax_cross_entropy_matches_closed_form(as_type):
    logits = RNG.normal(size=(4, 5)) * 3
    labels = np.array([0, 4, 2, 2])
    expected = _cross_entropy(logits, labels)
    t = gg.tensor(logits)
    np.testing.assert_allclose(gg.softmax_cross_entropy(t, as_type(labels.tolist()), reduction="none").numpy(),
                               expected, rtol=1e-12)
    assert gg.softmax_cross_entropy(t, as_type(labels.tolist())).item() == pytest.approx(expected.mean())
    assert gg.softmax_cross_entropy(t, as_type(labels.tolist()), reduction="sum").item() == pytest.approx(expected.sum())


def test_softmax_cross_entropy_many_axes_and_extreme_logits():
    logits = RNG.normal(size=(2, 3, 4))
    labels = np.array([[0, 1, 2], [3, 3, 0]])
    np.testing.assert_allclose(gg.softmax_cross_entropy(gg.tensor(logits), labels, reduction="none").numpy(),
                               _cross_entropy(logits, labels), rtol=1e-12)
    big = gg.tensor([[1000.0, -1000.0]], dtype="float64")
    assert gg.softmax_cross_entropy(big, [1]).item() == pytest.approx(2000.0)
    assert gg.softmax_cross_entropy(big, [0]).item() == 0.0


def test_softmax_cross_entropy_gradient_and_second_order():
    logits = RNG.normal(size=(3, 4))
    labels = np.array([1, 0, 3])
    x = gg.tensor(logits)
    lab = gg.tensor(labels)
    v = RNG.normal(size=(3, 4))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch([x, lab])
            loss = gg.softmax_cross_entropy(x, lab, reduction="sum")
        g, g_labels = inner.gradient(loss, [x, lab])
        gv = gg.sum(g * gg.tensor(v))
    p = _softmax(logits)
    np.testing.assert_allclose(g.numpy(), p - np.eye(4)[labels], rtol=1e-12, atol=1e-15)
    assert g_labels is None
    # Hessian of each example's loss is diag(p) - p p^T, so H v = p * v - p (p . v)
    hv = p * v - p * np.sum(p * v, axis=1, keepdims=True)
    np.testing.assert_allclose(outer.gradient(gv, x).numpy(), hv, rtol=1e-10, atol=1e-14)


def test_softmax_cross_entropy_grad_cpu_formula():
    probs = _softmax(RNG.normal(size=(2, 3, 4)))
    labels = np.array([[0, 1, 2], [3, 3, 0]])
    dy = RNG.normal(size=(2, 3))
    out = ops.softmax_cross_entropy_grad(gg.tensor(probs), gg.tensor(labels), gg.tensor(dy))
    np.testing.assert_allclose(out.numpy(), (probs - np.eye(4)[labels]) * dy[..., None])
    broadcast_dy = gg.tensor(np.broadcast_to(np.float64(0.5), (2, 3)))  # as a mean's gradient arrives
    out = ops.softmax_cross_entropy_grad(gg.tensor(probs), gg.tensor(labels), broadcast_dy)
    np.testing.assert_allclose(out.numpy(), (probs - np.eye(4)[labels]) * 0.5)
    assert probs.min() > 0  # the inputs were not written to


def test_softmax_cross_entropy_errors():
    logits = gg.ones((2, 3))
    with pytest.raises(gg.errors.IndexOutOfRangeError, match=r"'SoftmaxCrossEntropy'.*label 3") as info:
        gg.softmax_cross_entropy(logits, [0, 3])
    assert isinstance(info.value, IndexError)
    with pytest.raises(gg.errors.IndexOutOfRangeError, match="label -1"):
        gg.softmax_cross_entropy(logits, np.array([-1, 0]))
    with pytest.raises(gg.DTypeError, match="integer"):
        gg.softmax_cross_entropy(logits, [0.0, 1.0])
    with pytest.raises(gg.ShapeError, match=r"\(2,\)"):
        gg.softmax_cross_entropy(logits, [0, 1, 2])
    with pytest.raises(ValueError, match="reduction"):
        gg.softmax_cross_entropy(logits, [0, 1], reduction="avg")


def test_sigmoid_cross_entropy_matches_closed_form_and_is_stable():
    x = RNG.normal(size=(3, 4)) * 3
    z = RNG.uniform(size=(3, 4))
    sig = 1 / (1 + np.exp(-x))
    expected = -(z * np.log(sig) + (1 - z) * np.log(1 - sig))
    out = gg.sigmoid_cross_entropy(gg.tensor(x), gg.tensor(z), reduction="none")
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    assert gg.sigmoid_cross_entropy(gg.tensor(x), gg.tensor(z)).item() == pytest.approx(expected.mean())
    extreme = gg.sigmoid_cross_entropy(gg.tensor([1000.0, -1000.0], dtype="float64"), [0.0, 0.0], reduction="none")
    np.testing.assert_allclose(extreme.numpy(), [1000.0, 0.0])
    g = grad(lambda t: gg.sigmoid_cross_entropy(t, gg.tensor(z), reduction="sum"), x)
    np.testing.assert_allclose(g.numpy(), sig - z, rtol=1e-10)
    with pytest.raises(ValueError, match="reduction"):
        gg.sigmoid_cross_entropy(gg.tensor(x), gg.tensor(z), reduction="total")


def test_mse():
    p, t = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    assert gg.mse(gg.tensor(p), gg.tensor(t)).item() == pytest.approx(np.mean((p - t) ** 2))
    assert gg.mse(gg.tensor(p), gg.tensor(t), reduction="sum").item() == pytest.approx(np.sum((p - t) ** 2))
    np.testing.assert_allclose(gg.mse(gg.tensor(p), gg.tensor(t), reduction="none").numpy(), (p - t) ** 2)
    with pytest.raises(ValueError, match="reduction"):
        gg.mse(gg.tensor(p), gg.tensor(t), reduction=None)
