"""Forward values of the cumulative ops, statistics and creation functions against NumPy; the zero
cases of cumprod's gradient; NaN handling; error cases."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import DTypeError, ShapeError

RNG = np.random.default_rng(0)
A = RNG.permutation(24).reshape(2, 3, 4).astype(np.float64) - 11.5
AXES = [None, 0, 1, -1]


def grad(f, x):
    x = gg.tensor(x)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x).numpy()


# ---------------------------------------------------------------- cumulative


@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_cumsum_cumprod_match_numpy(axis, dtype):
    a = (A / 8).astype(dtype) if dtype != np.int64 else (A % 3).astype(dtype)
    np.testing.assert_allclose(gg.cumsum(gg.tensor(a), axis=axis).numpy(), np.cumsum(a, axis=axis), rtol=1e-6)
    np.testing.assert_allclose(gg.tensor(a).cumprod(axis=axis).numpy(), np.cumprod(a, axis=axis), rtol=1e-6)
    assert gg.cumsum(gg.tensor(a), axis=axis).dtype == np.cumsum(a, axis=axis).dtype


def test_cumsum_dtype_casts_first():
    out = gg.cumsum(gg.tensor([1, 2, 3]), dtype="float64")
    assert out.dtype == np.float64 and out.numpy().tolist() == [1.0, 3.0, 6.0]


def _cumprod_grad_reference(x, w):
    """d sum(w * cumprod(x)) / dx by brute force: sum_{j >= i} w_j prod_{k <= j, k != i} x_k."""
    n = len(x)
    return np.array([sum(w[j] * np.prod([x[k] for k in range(j + 1) if k != i]) for j in range(i, n))
                     for i in range(n)])


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 0.5], [0.0, 2.0, 3.0], [2.0, 3.0, 0.0],
                               [2.0, 0.0, 3.0, 0.0, 1.5], [0.0, 0.0, 2.0], [1.5, -2.0, 0.5]])
def test_cumprod_gradient_exact_with_zeros(x):
    x = np.array(x)
    w = np.arange(1.0, len(x) + 1)
    got = grad(lambda t: gg.sum(gg.cumprod(t) * gg.tensor(w)), x)
    np.testing.assert_allclose(got, _cumprod_grad_reference(x, w), rtol=1e-12, atol=1e-12)
    assert np.isfinite(got).all()


def test_cumprod_second_order_with_zeros():
    x = np.array([[2.0, 0.0, 3.0, 0.5], [1.0, 0.0, 0.0, 2.0]])
    w = np.arange(1.0, 5.0)

    def first(t):
        with gg.GradientTape() as inner:
            inner.watch(t)
            y = gg.sum(gg.cumprod(t, axis=1) * gg.tensor(w))
        return inner.gradient(y, t)

    theoretical, numerical = gg.gradient_checker.compute_gradient(first, [gg.tensor(x)], delta=1e-6)
    assert gg.gradient_checker.max_error(theoretical, numerical) < 1e-6


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("axis", [0, -1])
def test_diff_matches_numpy(n, axis):
    np.testing.assert_array_equal(gg.diff(gg.tensor(A), n=n, axis=axis).numpy(), np.diff(A, n=n, axis=axis))


def test_diff_prepend_append():
    a = np.array([[1.0, 4.0, 9.0], [2.0, 3.0, 7.0]])
    np.testing.assert_array_equal(gg.diff(gg.tensor(a), prepend=0.0, append=gg.tensor(np.array([[1.0], [2.0]]))).numpy(),
                                  np.diff(a, prepend=0.0, append=[[1.0], [2.0]]))
    with pytest.raises(ShapeError):
        gg.diff(gg.tensor(a), prepend=gg.tensor([1.0, 2.0]))
    with pytest.raises(ShapeError):
        gg.diff(gg.tensor(a), n=-1)
    with pytest.raises(ShapeError):
        gg.diff(gg.tensor(1.0))


def test_gradient_matches_numpy():
    np.testing.assert_allclose(gg.gradient(gg.tensor(A)[0, 0]).numpy(), np.gradient(A[0, 0]))
    for g, e in zip(gg.gradient(gg.tensor(A)), np.gradient(A)):
        np.testing.assert_allclose(g.numpy(), e)
    for g, e in zip(gg.gradient(gg.tensor(A), 0.5, axis=(0, 2)), np.gradient(A, 0.5, axis=(0, 2))):
        np.testing.assert_allclose(g.numpy(), e)
    np.testing.assert_allclose(gg.gradient(gg.tensor(A), 2.0, axis=-1).numpy(), np.gradient(A, 2.0, axis=-1))
    assert isinstance(gg.gradient(gg.tensor(A)), tuple) and len(gg.gradient(gg.tensor(A))) == 3


def test_gradient_errors():
    with pytest.raises(ShapeError, match="at least 2"):
        gg.gradient(gg.tensor([1.0]))
    with pytest.raises(ShapeError, match="edge_order"):
        gg.gradient(gg.tensor([1.0, 2.0, 3.0]), edge_order=2)
    with pytest.raises(ShapeError, match="scalar spacings"):
        gg.gradient(gg.tensor([1.0, 2.0, 3.0]), [0.0, 1.0, 3.0])
    with pytest.raises(ShapeError):
        gg.gradient(gg.tensor(A), 1.0, 2.0)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_trapezoid_matches_numpy(axis):
    np.testing.assert_allclose(gg.trapezoid(gg.tensor(A), axis=axis).numpy(), np.trapezoid(A, axis=axis))
    np.testing.assert_allclose(gg.trapezoid(gg.tensor(A), dx=0.3, axis=axis).numpy(),
                               np.trapezoid(A, dx=0.3, axis=axis))
    x = np.sort(RNG.uniform(0, 5, A.shape[axis]))
    np.testing.assert_allclose(gg.trapezoid(gg.tensor(A), x=gg.tensor(x), axis=axis).numpy(),
                               np.trapezoid(A, x=x, axis=axis))
    xs = RNG.uniform(0, 5, A.shape)
    np.testing.assert_allclose(gg.trapezoid(gg.tensor(A), x=gg.tensor(xs), axis=axis).numpy(),
                               np.trapezoid(A, x=xs, axis=axis))
    with pytest.raises(ShapeError):
        gg.trapezoid(gg.tensor(A), x=gg.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), axis=axis)


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("axis", AXES + [(0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(axis, keepdims):
    t = gg.tensor(A)
    for ours, theirs in [(gg.median, np.median), (gg.ptp, np.ptp), (gg.ops.all, np.all),
                         (gg.ops.any, np.any), (gg.count_nonzero, np.count_nonzero),
                         (gg.nansum, np.nansum), (gg.nanmean, np.nanmean)]:
        got, want = ours(t, axis=axis, keepdims=keepdims).numpy(), theirs(A, axis=axis, keepdims=keepdims)
        assert got.shape == np.shape(want), ours.__name__
        np.testing.assert_allclose(got, want, err_msg=ours.__name__)
    for q in [0.0, 0.3, 1.0, [0.1, 0.5, 0.9]]:
        got, want = gg.quantile(t, q, axis=axis, keepdims=keepdims).numpy(), np.quantile(A, q, axis=axis,
                                                                                      keepdims=keepdims)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(gg.percentile(t, [25, 75], axis=axis, keepdims=keepdims).numpy(),
                               np.percentile(A, [25, 75], axis=axis, keepdims=keepdims))


def test_all_any_count_nonzero_are_not_differentiable():
    x = gg.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert gg.ops.all(x).dtype == np.bool_ and not gg.ops.all(x).item() and x.any().item()
    assert gg.count_nonzero(x).dtype == np.int64 and gg.count_nonzero(x).item() == 3
    assert {"All", "Any", "CountNonzero"} <= set(gg.registry.not_differentiable_ops())
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(x) + gg.cast(gg.count_nonzero(x), "float32") + gg.cast(x.all(axis=0), "float32").sum()
    assert tape.gradient(y, x).numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_nan_handling():
    a = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan], [4.0, 5.0, 6.0]])
    t = gg.tensor(a)
    np.testing.assert_array_equal(gg.nansum(t, axis=1).numpy(), np.nansum(a, axis=1))
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanmean(a, axis=1)
    np.testing.assert_array_equal(gg.nanmean(t, axis=1).numpy(), want)
    np.testing.assert_array_equal(gg.median(t, axis=1).numpy(), np.median(a, axis=1))
    np.testing.assert_array_equal(gg.quantile(t, 0.4, axis=1).numpy(), np.quantile(a, 0.4, axis=1))
    g = grad(lambda x: gg.nanmean(x, axis=1)[0] + gg.nansum(x), a)
    np.testing.assert_array_equal(g, [[1.5, 0.0, 1.5], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


def test_median_quantile_gradients():
    x = np.array([4.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(grad(gg.median, x), [0.0, 0.0, 0.5, 0.5])
    np.testing.assert_array_equal(grad(gg.median, x[:3]), [0.0, 0.0, 1.0])
    # q = 0.5 over 4: virtual index 1.5, half to ranks 1 and 2; q = 0.1: 0.3 of rank 1, 0.7 of rank 0
    np.testing.assert_allclose(grad(lambda t: gg.quantile(t, 0.1), x), [0.0, 0.7, 0.0, 0.3])


def test_average_matches_numpy():
    w = RNG.uniform(0.5, 2.0, A.shape)
    np.testing.assert_allclose(gg.average(gg.tensor(A)).item(), np.average(A))
    np.testing.assert_allclose(gg.average(gg.tensor(A), axis=1, weights=gg.tensor(w)).numpy(),
                               np.average(A, axis=1, weights=w))
    w1 = RNG.uniform(0.5, 2.0, 4)
    avg, scl = gg.average(gg.tensor(A), axis=-1, weights=w1, returned=True)
    want_avg, want_scl = np.average(A, axis=-1, weights=w1, returned=True)
    np.testing.assert_allclose(avg.numpy(), want_avg)
    np.testing.assert_allclose(scl.numpy(), want_scl)
    avg, scl = gg.average(gg.tensor(A), axis=0, returned=True)
    np.testing.assert_allclose(scl.numpy(), np.average(A, axis=0, returned=True)[1])
    np.testing.assert_allclose(gg.average(gg.tensor(A), axis=(0, 2), weights=w, keepdims=True).numpy(),
                               np.average(A, axis=(0, 2), weights=w, keepdims=True))


def test_statistics_errors():
    t = gg.tensor(A)
    with pytest.raises(ShapeError, match=r"range \[0, 1\]"):
        gg.quantile(t, 1.5)
    with pytest.raises(ShapeError, match=r"range \[0, 100\]"):
        gg.percentile(t, -1)
    with pytest.raises(ShapeError, match="method"):
        gg.quantile(t, 0.5, method="nearest")
    with pytest.raises(ShapeError, match="no elements"):
        gg.median(gg.zeros((0, 3)), axis=0)
    with pytest.raises(ShapeError):
        gg.median(t, axis=3)
    with pytest.raises(ShapeError):
        gg.average(t, weights=np.ones(4))
    with pytest.raises(ShapeError):
        gg.average(t, axis=1, weights=np.ones(4))
    with pytest.raises(ZeroDivisionError):
        gg.average(gg.tensor([1.0, 2.0]), weights=[1.0, -1.0])
    with pytest.raises(TypeError):
        gg.median(t, out=np.zeros(1))


# ---------------------------------------------------------------- creation


@pytest.mark.parametrize("args, kwargs", [((5,), {}), ((2, 9, 3), {}), ((0.0, 1.0, 0.1), {}), ((1, 4.5), {}),
                                          ((10, 0, -3), {}), ((0, 1, 0.25), {"dtype": "float64"}),
                                          ((4,), {"dtype": "float32"})])
def test_arange_matches_numpy(args, kwargs):
    got = gg.arange(*args, **kwargs)
    ints = all(isinstance(a, int) for a in args)
    want = np.arange(*args, dtype=kwargs.get("dtype", np.int64 if ints else np.float32))
    assert got.dtype == want.dtype and got.device == "cpu"
    np.testing.assert_array_equal(got.numpy(), want)


def test_linspace_eye_tri_full_like_match_numpy():
    np.testing.assert_array_equal(gg.linspace(-1, 2, 7).numpy(), np.linspace(-1, 2, 7, dtype=np.float32))
    np.testing.assert_array_equal(gg.linspace(0, 1, 4, endpoint=False, dtype="float64").numpy(),
                                  np.linspace(0, 1, 4, endpoint=False))
    values, step = gg.linspace(0, 3, 4, retstep=True)
    assert step == np.linspace(0, 3, 4, retstep=True)[1] and values.dtype == np.float32
    assert gg.linspace(0, 1, 0).shape == (0,)
    for args in [(3,), (3, 4), (3, 4, 1), (4, 3, -2), (3, None, 5)]:
        np.testing.assert_array_equal(gg.eye(*args).numpy(), np.eye(*args, dtype=np.float32))
        np.testing.assert_array_equal(gg.tri(*args).numpy(), np.tri(*args, dtype=np.float32))
    assert gg.eye(2, dtype="int64").dtype == np.int64 and gg.tri(2, dtype=bool).dtype == np.bool_
    x = gg.tensor([[1, 2], [3, 4]])
    np.testing.assert_array_equal(gg.full_like(x, 7.9).numpy(), np.full_like(x.numpy(), 7.9))
    assert gg.full_like(x, 1.5, dtype="float64").dtype == np.float64
    assert gg.full_like(x, 1, shape=(3,)).shape == (3,)


def test_creation_device_and_errors():
    for t in [gg.arange(3, device="cpu"), gg.linspace(0, 1, 3, device="cpu"), gg.eye(2, device="cpu"),
              gg.tri(2, device="cpu")]:
        assert t.device == "cpu"
    with gg.device("cpu"):
        assert gg.eye(2).device == "cpu"
    with pytest.raises(ShapeError):
        gg.arange(0, 5, 0)
    with pytest.raises(DTypeError):
        gg.arange("5")
    with pytest.raises(ShapeError):
        gg.linspace(0, 1, -1)
    with pytest.raises(DTypeError):
        gg.linspace(0, 1, 2.5)
    with pytest.raises(DTypeError):
        gg.linspace("0", 2.0)  # tensor and array ends are differentiable (tests/test_tensor_arguments.py)
    with pytest.raises(ShapeError):
        gg.eye(-1)
    with pytest.raises(DTypeError):
        gg.tri(2, k=0.5)
