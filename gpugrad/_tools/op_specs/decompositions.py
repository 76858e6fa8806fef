"""Specs of ``gg.linalg``: inverses, determinants, solves and decompositions, on well-conditioned draws.

Square draws are ``random + n I`` (invertible), SPD ones ``B B^T + n I``,
symmetric ones with well-separated eigenvalues. Outputs defined up to a sign
(eigenvectors, singular vectors) are checked through sign-free functions of
them (``v * v``, weighted sums).
"""
import dataclasses

import numpy as np

import gpugrad as gg

from . import OpSpec


def square(n, batch=()):
    return lambda rng: [rng.uniform(-1, 1, batch + (n, n)) + n * np.eye(n)]


def spd(n, batch=()):
    def draw(rng):
        b = rng.uniform(-1, 1, batch + (n, n))
        return [b @ np.swapaxes(b, -1, -2) + n * np.eye(n)]
    return draw


def separated(n, batch=()):
    """Symmetric matrices with eigenvalues 1, 2, ..., n (a random rotation of diag)."""
    def draw(rng):
        q, _ = np.linalg.qr(rng.normal(size=batch + (n, n)))
        return [q @ (np.arange(1.0, n + 1)[:, None] * np.swapaxes(q, -1, -2))]
    return draw


def singular(n, rank, batch=()):
    """Matrices of rank ``rank`` < n with distinct nonzero singular values (det 0): the adjugate path."""
    def draw(rng):
        u, _ = np.linalg.qr(rng.normal(size=batch + (n, n)))
        v, _ = np.linalg.qr(rng.normal(size=batch + (n, n)))
        s = np.zeros(n)
        s[:rank] = np.arange(rank + 1.0, 1.0, -1)
        return [(u * s) @ v]
    return draw


def nonsymmetric(n):
    """A P diag(1..n) P^{-1} with a well-conditioned P: real, distinct eigenvalues."""
    def draw(rng):
        p = rng.uniform(-0.3, 0.3, (n, n)) + np.eye(n)
        return [p @ np.diag(np.arange(1.0, n + 1)) @ np.linalg.inv(p)]
    return draw


def rectangular(m, n, batch=()):
    """Matrices with well-separated singular values."""
    def draw(rng):
        u, _ = np.linalg.qr(rng.normal(size=batch + (m, m)))
        v, _ = np.linalg.qr(rng.normal(size=batch + (n, n)))
        k = min(m, n)
        s = np.zeros(batch + (m, n))
        s[..., range(k), range(k)] = np.arange(k + 1.0, 1.0, -1)
        return [u @ s @ v]
    return draw


def weights(x, seed, shape):
    w = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    return gg.tensor(w, dtype=x.dtype, device=x.device)


def eigh_fn(uplo="L"):
    def fn(a):
        w, v = gg.linalg.eigh(a, UPLO=uplo)
        return gg.sum(w * weights(a, 1, w.shape)) + gg.sum(v * v * weights(a, 2, v.shape))
    return fn


def eig_fn(a):
    w, v = gg.linalg.eig(a)
    return gg.sum(w * weights(a, 1, w.shape)) + gg.sum(v * v * weights(a, 2, v.shape))


def svd_fn(full_matrices=False):
    def fn(a):
        u, s, vh = gg.linalg.svd(a, full_matrices=full_matrices)
        return (gg.sum(u * u * weights(a, 1, u.shape)) + gg.sum(s * weights(a, 2, s.shape))
                + gg.sum(vh * vh * weights(a, 3, vh.shape)))
    return fn


def qr_fn(a, mode="reduced"):
    q, r = gg.linalg.qr(a, mode)
    return gg.sum(q * weights(a, 1, q.shape)) + gg.sum(r * weights(a, 2, r.shape))


def svd_null_unused(a):
    """Full U of a (5, 3) input with its null-space columns unused: they are not unique, but no gradient needs them."""
    u, s, vh = gg.linalg.svd(a, full_matrices=True)
    return gg.sum(u[:, :3] * u[:, :3] * weights(a, 1, (5, 3))) + gg.sum(s * weights(a, 2, s.shape))


def slogdet_fn(a):
    return gg.linalg.slogdet(a)[1]


L = gg.linalg
SPECS = [
    OpSpec("MatrixInverse", L.inv, [(3, 3)], draw=square(3)),
    OpSpec("MatrixInverse", L.inv, [(2, 3, 3)], draw=square(3, (2,)), label="batched"),
    OpSpec("MatrixSolve", L.solve, [(3, 3), (3,)],
           draw=lambda rng: square(3)(rng) + [rng.uniform(-1, 1, (3,))], label="vector"),
    OpSpec("MatrixSolve", L.solve, [(2, 3, 3), (3, 2)],
           draw=lambda rng: square(3, (2,))(rng) + [rng.uniform(-1, 1, (3, 2))], label="batch_broadcast"),
    OpSpec("MatrixSolve", L.solve, [(2, 3, 3), (3,)],
           draw=lambda rng: square(3, (2,))(rng) + [rng.uniform(-1, 1, (3,))], label="batch_vector"),
    OpSpec("MatrixDeterminant", L.det, [(3, 3)], draw=square(3)),
    OpSpec("MatrixDeterminant", L.det, [(2, 3, 3)], draw=square(3, (2,)), label="batched"),
    OpSpec("MatrixDeterminant", L.det, [(3, 3)], draw=singular(3, 2), label="singular"),
    OpSpec("MatrixDeterminant", L.det, [(2, 4, 4)], draw=singular(4, 2, (2,)), label="rank_2_of_4_batched"),
    OpSpec("LogMatrixDeterminant", slogdet_fn, [(2, 3, 3)],
           draw=lambda rng: [square(3, (2,))(rng)[0] * np.array([1.0, -1.0])[:, None, None]]),
    OpSpec("Cholesky", L.cholesky, [(3, 3)], draw=spd(3)),
    OpSpec("Cholesky", L.cholesky, [(2, 3, 3)], draw=spd(3, (2,)), label="batched"),
    OpSpec("Cholesky", lambda a: L.cholesky(a, upper=True), [(3, 3)], draw=spd(3), label="upper"),
    OpSpec("Qr", qr_fn, [(4, 3)], draw=rectangular(4, 3)),
    OpSpec("Qr", qr_fn, [(2, 3, 3)], draw=square(3, (2,)), label="batched_square"),
    OpSpec("Qr", qr_fn, [(3, 5)], draw=rectangular(3, 5), label="wide"),
    OpSpec("Qr", lambda a: qr_fn(a, "complete"), [(2, 2, 4)], draw=rectangular(2, 4, (2,)), label="wide_complete"),
    OpSpec("SelfAdjointEigV2", eigh_fn(), [(3, 3)], draw=separated(3)),
    OpSpec("SelfAdjointEigV2", eigh_fn("U"), [(2, 3, 3)], draw=separated(3, (2,)), label="upper_batched"),
    OpSpec("Svd", lambda a: L.svd(a, compute_uv=False), [(4, 3)], draw=rectangular(4, 3), label="values"),
    OpSpec("Svd", svd_fn(), [(4, 3)], draw=rectangular(4, 3), label="tall"),
    OpSpec("Svd", svd_fn(), [(3, 4)], draw=rectangular(3, 4), label="wide"),
    OpSpec("Svd", svd_fn(True), [(2, 3, 3)], draw=rectangular(3, 3, (2,)), label="square_full"),
    OpSpec("Svd", svd_fn(True), [(4, 3)], draw=rectangular(4, 3), label="tall_full"),
    OpSpec("Svd", svd_fn(True), [(2, 3, 4)], draw=rectangular(3, 4, (2,)), label="wide_full"),
    OpSpec("Svd", svd_null_unused, [(5, 3)], draw=rectangular(5, 3), label="tall_full_null_unused"),
    OpSpec("Svd", L.pinv, [(4, 3)], draw=rectangular(4, 3), label="pinv"),
    OpSpec("Svd", lambda a, b: L.lstsq(a, b)[0], [(5, 3), (5,)],
           draw=lambda rng: [rectangular(5, 3)(rng)[0], rng.uniform(-1, 1, 5)], label="lstsq_solution"),
    OpSpec("Svd", lambda a, b: L.lstsq(a, b)[1], [(5, 3), (5, 2)],
           draw=lambda rng: [rectangular(5, 3)(rng)[0], rng.uniform(-1, 1, (5, 2))], label="lstsq_residuals"),
    OpSpec("Svd", lambda a: L.norm(a, "nuc"), [(3, 4)], draw=rectangular(3, 4), label="norm_nuc"),
    OpSpec("Svd", lambda a: L.norm(a, 2, axis=(1, 2)), [(2, 3, 3)], draw=rectangular(3, 3, (2,)), label="norm_2"),
    OpSpec("Eig", eig_fn, [(3, 3)], draw=nonsymmetric(3), cpu_only="CuPy has no general eig"),
    OpSpec("EuclideanNorm", L.norm, [(3, 4)], away_from_zero=0.1),
    OpSpec("EuclideanNorm", lambda x: L.norm(x, axis=1, keepdims=True), [(3, 4)], label="axis_keepdims"),
    OpSpec("EuclideanNorm", lambda x: L.norm(x, "fro", axis=(0, 2)), [(2, 3, 4)], label="fro_axes"),
    OpSpec("Abs", lambda x: L.norm(x, 3, axis=-1), [(3, 4)], away_from_zero=0.2, label="norm_p3"),
    OpSpec("MatMul", lambda a: L.matrix_power(a, 5), [(3, 3)], low=-0.5, high=0.5, label="matrix_power"),
    OpSpec("MatrixInverse", lambda a: L.matrix_power(a, -2), [(3, 3)], draw=square(3), label="matrix_power_neg"),
]

# float16 and bfloat16: the decompositions refuse them with a DTypeError, as NumPy's linalg and
# torch.linalg on the CPU do; the norms and the matrix products (EuclideanNorm, Abs, MatMul) take them
_TAKES_LOW = {"EuclideanNorm", "Abs", "MatMul"}
SPECS = [spec if spec.op_type in _TAKES_LOW else
         dataclasses.replace(spec, low_refuses="a decomposition: NumPy's and torch.linalg's CPU refuse half precision")
         for spec in SPECS]
