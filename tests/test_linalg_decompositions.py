"""gg.linalg against numpy.linalg: batched forward values, LinAlgError, degenerate eigenvalues, norm orders."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import DeviceError, GradientError, LinAlgError, ShapeError

from .conftest import GPU_PRESENT, device_params

RNG = np.random.default_rng(0)
A = RNG.uniform(-1, 1, (2, 3, 4, 4)) + 4 * np.eye(4)
SPD = A @ np.swapaxes(A, -1, -2) + np.eye(4)
RECT = RNG.uniform(-1, 1, (2, 5, 3))


def t(a, device):
    return gg.tensor(a, dtype=np.float64, device=device)


def grad_of(fn, a, device):
    x = t(a, device)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x).numpy()


@pytest.mark.parametrize("device", device_params())
def test_forward_matches_numpy_batched(device):
    ok = lambda got, want: np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)  # noqa: E731
    ok(gg.linalg.inv(t(A, device)), np.linalg.inv(A))
    ok(gg.linalg.det(t(A, device)), np.linalg.det(A))
    sign, logdet = gg.linalg.slogdet(t(A, device))
    ok(sign, np.linalg.slogdet(A)[0])
    ok(logdet, np.linalg.slogdet(A)[1])
    ok(gg.linalg.cholesky(t(SPD, device)), np.linalg.cholesky(SPD))
    ok(gg.linalg.cholesky(t(SPD, device), upper=True), np.linalg.cholesky(SPD, upper=True))
    w, v = gg.linalg.eigh(t(SPD, device))
    ok(w, np.linalg.eigh(SPD)[0])
    ok(abs(v), np.abs(np.linalg.eigh(SPD)[1]))
    q, r = gg.linalg.qr(t(RECT, device))
    ok(q @ r, RECT)
    ok(abs(r), np.abs(np.linalg.qr(RECT)[1]))
    assert gg.linalg.qr(t(RECT, device), mode="r").shape == (2, 3, 3)
    assert gg.linalg.qr(t(RECT, device), mode="complete").Q.shape == (2, 5, 5)
    u, s, vh = gg.linalg.svd(t(RECT, device))
    assert (u.shape, s.shape, vh.shape) == ((2, 5, 5), (2, 3), (2, 3, 3))
    ok(s, np.linalg.svd(RECT, compute_uv=False))
    ok(gg.linalg.svd(t(RECT, device), compute_uv=False), np.linalg.svd(RECT, compute_uv=False))
    ok(gg.linalg.pinv(t(RECT, device)), np.linalg.pinv(RECT))
    for n in (0, 1, 2, 3, 5, -1, -3):
        ok(gg.linalg.matrix_power(t(A, device), n), np.linalg.matrix_power(A, n))


@pytest.mark.parametrize("device", device_params())
def test_solve_shapes_follow_numpy(device):
    b_vec = RNG.uniform(-1, 1, 4)
    b_mat = RNG.uniform(-1, 1, (3, 4, 2))
    for b in (b_vec, b_mat, b_mat[0]):
        got = gg.linalg.solve(t(A, device), t(b, device))
        np.testing.assert_allclose(got.numpy(), np.linalg.solve(A, b), rtol=1e-10)
    with pytest.raises(ShapeError, match="MatrixSolve"):
        gg.linalg.solve(t(A, device), t(np.ones(3), device))


@pytest.mark.parametrize("device", device_params())
def test_singular_and_not_positive_definite_raise_linalg_error(device):
    singular = t(np.ones((2, 3, 3)), device)
    for fn, name in ((gg.linalg.inv, "MatrixInverse"), (lambda a: gg.linalg.solve(a, gg.ones(3, dtype="float64")),
                                                         "MatrixSolve")):
        with pytest.raises(LinAlgError, match=rf"'{name}'.*\(2, 3, 3\)"):
            fn(singular)
    with pytest.raises(LinAlgError, match=r"'Cholesky'.*\(2, 2\)"):
        gg.linalg.cholesky(t([[1.0, 2.0], [2.0, 1.0]], device))
    with pytest.raises(ValueError):  # NumPy's base class: code written for numpy catches it
        gg.linalg.inv(singular)
    with pytest.raises(ShapeError, match="square"):
        gg.linalg.inv(t(np.ones((2, 3)), device))


def test_linalg_error_is_numpy_compatible():
    assert issubclass(LinAlgError, ValueError) and issubclass(np.linalg.LinAlgError, ValueError)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the eigenvector gradient's inf/NaN, on purpose
@pytest.mark.parametrize("device", device_params())
def test_degenerate_eigenvalues(device):
    """Repeated eigenvalues: the eigenvalue gradient stays finite, the eigenvector one does not."""
    a = np.diag([2.0, 2.0, 5.0])
    g = grad_of(lambda x: gg.sum(gg.linalg.eigh(x)[0] * gg.tensor([1.0, 2.0, 3.0], dtype="float64",
                                                                   device=x.device)), a, device)
    assert np.all(np.isfinite(g))
    # d(sum_i c_i w_i)/dA on the lower triangle: V diag(c) V^T with the symmetric part folded in
    w, v = np.linalg.eigh(a)
    full = v @ np.diag([1.0, 2.0, 3.0]) @ v.T
    np.testing.assert_allclose(g, np.tril(full + full.T) - np.diag(np.diag(full)), atol=1e-12)
    g_vec = grad_of(lambda x: gg.sum(gg.linalg.eigh(x)[1] * gg.tensor(np.arange(9.0).reshape(3, 3),
                                                                      device=x.device)), a, device)
    assert not np.all(np.isfinite(g_vec))


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("ord_, axis", [(None, None), (2, None), (1, None), (np.inf, None), (-np.inf, None),
                                        (0, None), (3, None), (0.5, None), (-1, None), (2, 1), (1, 0)])
def test_vector_norms(device, ord_, axis):
    x = RNG.uniform(-1, 1, (3, 4)) if axis is not None else RNG.uniform(-1, 1, 5)
    np.testing.assert_allclose(gg.linalg.norm(t(x, device), ord_, axis).numpy(), np.linalg.norm(x, ord_, axis),
                               rtol=1e-12)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("ord_", [None, "fro", "nuc", 1, -1, np.inf, -np.inf, 2, -2])
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norms(device, ord_, keepdims):
    x = RNG.uniform(-1, 1, (2, 3, 4))
    for axis in ((1, 2), (2, 0)):
        got = gg.linalg.norm(t(x, device), ord_, axis, keepdims)
        np.testing.assert_allclose(got.numpy(), np.linalg.norm(x, ord_, axis, keepdims), rtol=1e-10)
    np.testing.assert_allclose(gg.linalg.norm(t(x[0], device), ord_).numpy(), np.linalg.norm(x[0], ord_),
                               rtol=1e-10)


def test_norm_errors():
    with pytest.raises(ValueError, match="Invalid norm order"):
        gg.linalg.norm(gg.ones((2, 2)), "nuc", axis=0)
    with pytest.raises(ValueError, match="Invalid norm order"):
        gg.linalg.norm(gg.ones((2, 2)), 3)
    with pytest.raises(ShapeError):
        gg.linalg.norm(gg.ones((2, 2, 2)), 1)


@pytest.mark.parametrize("device", device_params())
def test_norm_gradient_at_zero_is_zero(device):
    for fn in (gg.linalg.norm, lambda x: gg.linalg.norm(x, axis=1), lambda x: gg.linalg.norm(x, "fro")):
        g = grad_of(fn, np.zeros((2, 3)), device)
        np.testing.assert_array_equal(g, np.zeros((2, 3)))


def test_svd_full_matrices_gradient_needs_square():
    x = gg.tensor(RECT[0], dtype="float64")
    with gg.GradientTape() as tape:
        tape.watch(x)
        u, s, vh = gg.linalg.svd(x)
        y = gg.sum(s) + gg.sum(u * u)
    with pytest.raises(GradientError, match="full_matrices=False"):
        tape.gradient(y, x)


def test_qr_gradient_of_tall_matrix_with_complete_q_raises():
    x = gg.tensor(RECT[0], dtype="float64")
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.linalg.qr(x, mode="complete").Q)
    with pytest.raises(GradientError, match="needs the reduced Q"):
        tape.gradient(y, x)


def _adjugate_transposed(a):
    """The cofactor matrix by its definition, (-1)^(i+j) det(minor_ij): the oracle for det's gradient."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, axis=-2), j, axis=-1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


SINGULAR = np.array([[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],  # rank 2
                     [[1.0, 0.0, 1.0], [2.0, 0.0, 2.0], [3.0, 0.0, 3.0]],  # rank 1
                     [[0.0, 0.0, 0.0]] * 3,                                 # zero
                     [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]])  # regular, in the same batch


@pytest.mark.parametrize("device", device_params())
def test_det_gradient_at_singular_matrices_is_the_adjugate(device):
    """PyTorch's linalg_det_backward: finite at a singular A (the gradient used to raise LinAlgError from an
    inverse the user never called)."""
    g = grad_of(gg.linalg.det, SINGULAR, device)
    np.testing.assert_allclose(g, _adjugate_transposed(SINGULAR), atol=1e-12)
    for a in SINGULAR[:2]:
        np.testing.assert_allclose(grad_of(gg.linalg.det, a, device), _adjugate_transposed(a), atol=1e-12)


def test_slogdet_gradient_at_a_singular_matrix_names_slogdet():
    """Unbounded there (logabsdet = -inf): an error naming the op called, as PyTorch and TensorFlow raise."""
    x = gg.tensor(SINGULAR[:2])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        sign, logabsdet = gg.linalg.slogdet(x)
    with pytest.raises(LinAlgError, match="'LogMatrixDeterminant'.*singular"):
        tape.gradient(logabsdet, x)
    # sign is piecewise constant: zeros, singular or not (PyTorch's slogdet backward ignores a real sign's gradient)
    np.testing.assert_array_equal(tape.gradient(sign, x).numpy(), np.zeros(x.shape))
    mixed = gg.tensor(SINGULAR[2:])
    with gg.GradientTape() as tape:
        tape.watch(mixed)
        y = gg.linalg.slogdet(mixed)[1][1]  # only the regular matrix's logabsdet flows back
    g = tape.gradient(y, mixed).numpy()
    np.testing.assert_array_equal(g[0], np.zeros((3, 3)))
    np.testing.assert_allclose(g[1], np.linalg.inv(SINGULAR[3]).T, rtol=1e-12)


def test_eig_cpu_matches_numpy():
    a = np.array([[2.0, 1.0, 0.0], [0.5, 3.0, 0.2], [0.0, 0.1, 5.0]])
    w, v = gg.linalg.eig(gg.tensor(a, device="cpu"))
    want_w, want_v = np.linalg.eig(a)
    np.testing.assert_allclose(w.numpy(), want_w)
    np.testing.assert_allclose(v.numpy(), want_v)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
def test_eig_on_gpu_says_cupy_has_none():
    with pytest.raises(DeviceError, match="CuPy has no general eig"):
        gg.linalg.eig(gg.tensor(np.eye(3), device="cuda"))


def test_bad_dtypes_and_arguments():
    with pytest.raises(gg.errors.DTypeError):
        gg.linalg.inv(gg.tensor(np.eye(2), dtype="float16"))
    np.testing.assert_allclose(gg.linalg.inv(gg.tensor(np.eye(2, dtype=np.int64))).numpy(), np.eye(2))
    with pytest.raises(TypeError, match="integer"):
        gg.linalg.matrix_power(gg.ones((2, 2)), 1.5)
    with pytest.raises(ValueError, match="mode"):
        gg.linalg.qr(gg.ones((2, 2)), mode="raw")


def test_jvp_through_eigh_uses_the_eigenvector_term():
    """gg.jvp differentiates the rule in a zero cotangent: the gap mask must not drop it."""
    a = np.random.default_rng(3).normal(size=(3, 3))
    a = a + a.T
    da = np.random.default_rng(4).normal(size=(3, 3))
    da = np.tril(da)
    f = lambda x: gg.linalg.eigh(x)[1] ** 2  # noqa: E731
    _, tangent = gg.jvp(f, (gg.tensor(a, dtype="float64"),), (gg.tensor(da, dtype="float64"),))
    eps = 1e-6
    sym = lambda m: np.tril(m) + np.tril(m, -1).T  # noqa: E731
    num = (np.linalg.eigh(sym(a + eps * da))[1] ** 2 - np.linalg.eigh(sym(a - eps * da))[1] ** 2) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), num, atol=1e-6)


@pytest.mark.parametrize("shapes", [((6, 3), (6,)), ((6, 3), (6, 2)), ((3, 5), (3,)), ((4, 4), (4, 3))])
def test_lstsq_is_numpys(shapes):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    want = np.linalg.lstsq(a, b, rcond=None)
    x, residuals, rank, s = gg.linalg.lstsq(gg.tensor(a), gg.tensor(b))
    np.testing.assert_allclose(x.numpy(), want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(residuals.numpy(), want[1], rtol=1e-10, atol=1e-12)
    assert residuals.shape == want[1].shape and rank == want[2]
    np.testing.assert_allclose(s.numpy(), want[3], rtol=1e-12)


def test_lstsq_of_a_rank_deficient_matrix_has_no_residuals_and_its_rank():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.array([1.0, 2.0, 3.5])
    want = np.linalg.lstsq(a, b, rcond=None)
    x, residuals, rank, _ = gg.linalg.lstsq(gg.tensor(a), gg.tensor(b))
    np.testing.assert_allclose(x.numpy(), want[0], rtol=1e-10)
    assert rank == want[2] == 1 and residuals.shape == want[1].shape == (0,)


def test_lstsq_refuses_mismatched_shapes():
    with pytest.raises(gg.ShapeError, match="lstsq"):
        gg.linalg.lstsq(gg.tensor(np.ones((3, 2))), gg.tensor(np.ones(4)))
    with pytest.raises(gg.ShapeError, match="lstsq"):
        gg.linalg.lstsq(gg.tensor(np.ones((2, 3, 2))), gg.tensor(np.ones(3)))
