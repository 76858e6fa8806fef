"""Matrix functions and decompositions (``gg.linalg``): NumPy's ``numpy.linalg`` names, differentiable.

Each op batches over leading axes (``(..., M, M)``) and runs the device's
``xp.linalg`` (NumPy's on the CPU, CuPy's on a GPU). A singular or
non-positive-definite input raises :class:`gpugrad.errors.LinAlgError` naming
the op and the shape (on a GPU, CuPy's check is switched on for the call, so
no NaN result passes silently). Gradients are written in gpugrad ops (matmul,
transpose, :func:`inv`, :func:`solve`, :func:`svd`), so higher orders work;
their sources:

- MatrixInverse: dA = -Y^T dY Y^T.  MatrixDeterminant: dA = dy adj(A)^T, which is dy det(A) A^{-T}
  where A is well conditioned and from the SVD where it is singular (PyTorch's linalg_det_backward).
  LogMatrixDeterminant: dA = dlogabsdet A^{-T} (sign has none; unbounded at a singular A: LinAlgError).
- MatrixSolve: db = A^{-T} dx, dA = -db x^T.
- Cholesky: Murray 2016 / Seeger et al. 2017, P = L^{-T} Phi(L^T dL) L^{-1}.
- Qr: TensorFlow's linalg_grad.py (M >= N, and M < N by splitting A = [X | Y]).  SelfAdjointEigV2: V (diag(dw) + F o V^T dV) V^T.
- Svd: PyTorch's svd_backward (Townsend 2016).  Eig: PyTorch's linalg_eig_backward (real eigenvalues).

An op that reads one triangle only (``cholesky``, ``eigh``) gets a gradient
for that triangle only: (P + P^T) on the strict triangle, P's diagonal on the
diagonal, zero in the triangle it never reads, as finite differences see it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import collections
import contextlib
import operator

import numpy as np

from ..._tracing import state as _trace
from ...backend import CPU
from ...errors import DeviceError, DTypeError, GradientError, LinAlgError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..elementwise.arithmetic import abs as _abs
from ..elementwise.arithmetic import add, divide, multiply, negative, power, subtract, where
from ..base import binary, emit, emit_many, public_ops, unary
from .linalg import einsum, matmul
from ..elementwise.math import reciprocal
from ..reduction.reductions import kept_shape
from ..reduction.reductions import max as _max
from ..reduction.reductions import min as _min
from ..reduction.reductions import prod as _prod
from ..reduction.reductions import sum as _sum
from ..array.shape import concat, expand_dims, reshape, transpose
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import Axis, TensorLike

SlogdetResult = collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("QRResult", ["Q", "R"])
SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])


# ---------------------------------------------------------------- shared helpers


def _matrix(a, op_type, square=True):
    """``a`` as a float tensor of at least 2 dimensions (square ones for ``square``)."""
    a = unary(a)
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        what = "square matrices (..., M, M)" if square else "matrices (..., M, N)"
        raise ShapeError(f"op {op_type!r} takes {what}, not shape {a.shape}")
    kind = a._data.dtype.kind
    if kind in "biu":  # NumPy's linalg computes integers in float64
        a = Tensor._wrap(a._data.astype(np.float64), a._device)
    elif kind not in "fc" or a._data.dtype.itemsize < 4:
        raise DTypeError(f"op {op_type!r} cannot take dtype {a.dtype} (shape {a.shape}); "
                         f"cast to float32 or float64 with gg.cast (half precision is refused, as by "
                         f"NumPy's linalg and torch.linalg on the CPU)")
    return a


@contextlib.contextmanager
def _linalg_errors(op_type, shape, xp):
    """NumPy's / CuPy's LinAlgError as gpugrad's, naming ``op_type`` and ``shape``.

    CuPy ignores a failed factorisation unless asked (``cupyx.errstate``);
    here it is asked, so a singular matrix raises on either device.
    """
    raising = contextlib.nullcontext()
    if xp is not np:
        try:
            import cupyx
            raising = cupyx.errstate(linalg="raise")
        except ImportError:  # pragma: no cover - a GPU device implies CuPy
            pass
    try:
        with raising:
            yield
    except np.linalg.LinAlgError as e:  # cupy.linalg.LinAlgError is NumPy's class
        raise LinAlgError(f"op {op_type!r} failed on input of shape {tuple(shape)}: {e}") from None


def _constant(array, like):
    """NumPy/CuPy ``array`` as an untracked tensor in ``like``'s dtype, on its device."""
    return Tensor._wrap(like._device.xp.asarray(array, dtype=like._data.dtype), like._device)


def _mT(x):
    """``x`` with its last two axes swapped (a recorded Transpose)."""
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return transpose(x, axes)


def _eye(n, like):
    return _constant(like._device.xp.eye(n), like)


def _diag_embed(d):
    """(..., n) -> (..., n, n) with ``d`` on the diagonal."""
    return multiply(expand_dims(d, -1), _eye(d.shape[-1], d))


def _diag_part(x):
    return einsum("...ii->...i", x)


def _triangle_mask(n, like, lower=True):
    """1 in the strict lower (upper) triangle, 0.5 on the diagonal, 0 elsewhere."""
    xp = like._device.xp
    m = xp.tril(xp.ones((n, n)), -1) if lower else xp.triu(xp.ones((n, n)), 1)
    return _constant(m + 0.5 * xp.eye(n), like)


def _one_triangle(p, lower=True):
    """The gradient of a function of the symmetric matrix built from one triangle:
    (P + P^T) on the strict triangle, P's diagonal on the diagonal."""
    return multiply(add(p, _mT(p)), _triangle_mask(p.shape[-1], p, lower))


def _as_matrix_scalar(t):
    """(...) -> (..., 1, 1), to scale a batch of matrices."""
    return reshape(t, t.shape + (1, 1))


# ---------------------------------------------------------------- inv, solve


def inv(a: TensorLike) -> Tensor:
    """The inverse of each square matrix in ``a`` (..., M, M), as ``numpy.linalg.inv``.

    Raises :class:`gpugrad.errors.LinAlgError` for a singular matrix.

    Example:
        >>> import gpugrad as gg
        >>> gg.linalg.inv(gg.tensor([[2.0, 0.0], [0.0, 4.0]])).numpy().tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    a = _matrix(a, "MatrixInverse")
    xp = a._device.xp
    with _linalg_errors("MatrixInverse", a.shape, xp):
        out = xp.linalg.inv(a._data)
    return emit("MatrixInverse", out, a._device, (a,))


@RegisterGradient("MatrixInverse")
def _inv_grad(op, dy):
    # Y = A^{-1}:  dA = -Y^T dY Y^T
    y = op.outputs[0]
    return (negative(matmul(y, matmul(dy, y, transpose_b=True), transpose_a=True)),)


def solve(a: TensorLike, b: TensorLike) -> Tensor:
    """The solution x of ``a @ x = b``, as ``numpy.linalg.solve`` (NumPy 2's rule for ``b``).

    ``a`` is (..., M, M); ``b`` is a vector (M,) or a batch of matrices
    (..., M, K), whose batch axes broadcast with ``a``'s. Raises
    :class:`gpugrad.errors.LinAlgError` for a singular ``a``.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.tensor([[3.0, 1.0], [1.0, 2.0]])
        >>> gg.linalg.solve(a, gg.tensor([9.0, 8.0])).numpy().tolist()
        [2.0, 3.0]
    """
    a, b = binary(a, b, "MatrixSolve")
    a = _matrix(a, "MatrixSolve")
    if b._data.dtype.kind in "biu":
        b = Tensor._wrap(b._data.astype(np.float64), b._device)
    m = a.shape[-1]
    vector = b.ndim == 1
    if b.ndim == 0 or b.shape[0 if vector else -2] != m:
        raise ShapeError(f"op 'MatrixSolve' cannot solve with a of shape {a.shape} and b of shape {b.shape}: "
                         f"b is (M,) or (..., M, K) with M = {m}")
    xp = a._device.xp
    bd = b._data[:, None] if vector else b._data
    try:
        batch = np.broadcast_shapes(a.shape[:-2], bd.shape[:-2])
    except ValueError:
        raise ShapeError(f"op 'MatrixSolve' cannot broadcast the batch shapes of a {a.shape} and "
                         f"b {b.shape}") from None
    ad = xp.broadcast_to(a._data, batch + a.shape[-2:])
    bd = xp.broadcast_to(bd, batch + bd.shape[-2:])
    with _linalg_errors("MatrixSolve", a.shape, xp):
        out = xp.linalg.solve(ad, bd)
    if vector:
        out = out[..., 0]
    return emit("MatrixSolve", out, a._device, (a, b))


@RegisterGradient("MatrixSolve")
def _solve_grad(op, dx):
    # x = A^{-1} b:  db = A^{-T} dx,  dA = -db x^T
    a, b = op.inputs
    x = op.outputs[0]
    if b.ndim == 1:
        x, dx = expand_dims(x, -1), expand_dims(dx, -1)
    gb = solve(_mT(a), dx)
    ga = negative(matmul(gb, x, transpose_b=True)) if op.needs_grad[0] else None
    if b.ndim == 1:
        gb = reshape(gb, gb.shape[:-1])
    return ga, gb


# ---------------------------------------------------------------- det, slogdet


def det(a: TensorLike) -> Tensor:
    """The determinant of each square matrix in ``a`` (..., M, M), as ``numpy.linalg.det``.

    The gradient is the cofactor matrix adj(A)^T: det(A) A^{-T} where A is well conditioned,
    and from the SVD where it is singular or nearly (PyTorch's linalg_det_backward), so a
    singular A has its finite gradient, differentiable again where its singular values differ.

    Example:
        >>> import gpugrad as gg
        >>> round(gg.linalg.det(gg.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 5)
        -2.0
    """
    a = _matrix(a, "MatrixDeterminant")
    with _linalg_errors("MatrixDeterminant", a.shape, a._device.xp):
        out = a._device.xp.linalg.det(a._data)
    return emit("MatrixDeterminant", out, a._device, (a,))


@RegisterGradient("MatrixDeterminant")
def _det_grad(op, dy):
    # dA = dy adj(A)^T = dy det(A) A^{-T} (the cofactors from the SVD where A is singular or nearly)
    a, y = op.inputs[0], op.outputs[0]
    if _near_singular(a, y):
        return (multiply(_as_matrix_scalar(dy), _cofactors(a)),)
    return (multiply(_as_matrix_scalar(multiply(dy, y)), _mT(inv(a))),)


def _near_singular(a, d):
    """Whether any matrix of ``a`` has a determinant ``d`` within 100 eps of its Hadamard bound (the
    product of its row norms, |det A| <= prod ||a_i||): PyTorch's test |det| < 100 eps, made scale-free."""
    xp = a._device.xp
    bound = xp.prod(xp.sqrt(xp.sum(a._data * a._data, axis=-1)), axis=-1)
    return bool(xp.any(xp.abs(d._data) <= 100 * np.finfo(a._data.dtype).eps * bound))


def _cofactors(a):
    """The cofactor matrix adj(A)^T of each square matrix, with no inverse: for A = U S V^T it is
    det(U) det(V) U diag(prod_{j != i} s_j) V^T (PyTorch's linalg_det_backward at singular input)."""
    u, s, vh = svd(a, full_matrices=False)
    xp = a._device.xp
    signs = _constant(xp.linalg.det(u._data) * xp.linalg.det(vh._data), a)  # +-1: piecewise constant
    n = s.shape[-1]
    others = where(_constant(xp.eye(n), a)._data.astype(bool), 1.0, expand_dims(s, -2))  # row i: s_j, 1 at j = i
    scale = _prod(others, axis=-1)  # prod_{j != i} s_j, differentiable where several s_j are 0
    return multiply(_as_matrix_scalar(signs), matmul(multiply(u, expand_dims(scale, -2)), vh))


def slogdet(a: TensorLike) -> SlogdetResult:
    """``(sign, logabsdet)`` of each square matrix in ``a``, as ``numpy.linalg.slogdet``.

    The gradient flows through ``logabsdet`` (``sign`` is piecewise constant): A^{-T}. At a
    singular matrix (sign 0, logabsdet -inf) it is unbounded: the gradient raises LinAlgError naming
    this op, as PyTorch's and TensorFlow's raise, unless nothing flows into ``logabsdet``.

    Example:
        >>> import gpugrad as gg
        >>> sign, logabsdet = gg.linalg.slogdet(gg.tensor([[-2.0, 0.0], [0.0, 3.0]]))
        >>> sign.item(), round(logabsdet.item(), 6)
        (-1.0, 1.791759)
    """
    a = _matrix(a, "LogMatrixDeterminant")
    with _linalg_errors("LogMatrixDeterminant", a.shape, a._device.xp):
        sign, logdet = a._device.xp.linalg.slogdet(a._data)
    sign, logdet = emit_many("LogMatrixDeterminant", [sign, logdet], a._device, (a,))
    return SlogdetResult(sign, logdet)


@RegisterGradient("LogMatrixDeterminant")
def _slogdet_grad(op, dsign, dlogdet):
    # d log|det A| = A^{-T}
    a, sign = op.inputs[0], op.outputs[0]
    xp = a._device.xp
    singular = sign._data == 0
    if bool(xp.any(singular)):
        if not bool(xp.any(dlogdet._data[singular] != 0)):  # nothing flows in where it is unbounded
            safe = where(singular[..., None, None], _eye(a.shape[-1], a), a)  # an invertible stand-in there
            return (multiply(_as_matrix_scalar(dlogdet), _mT(inv(safe))),)
        raise LinAlgError(f"the gradient of op 'LogMatrixDeterminant' (slogdet) of shape {a.shape} is unbounded at "
                          f"a singular matrix (sign 0, logabsdet -inf), as in PyTorch and TensorFlow, which raise "
                          f"too; the gradient of det (gg.linalg.det) is finite there")
    return (multiply(_as_matrix_scalar(dlogdet), _mT(inv(a))),)


# ---------------------------------------------------------------- cholesky


def cholesky(a: TensorLike, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of each positive-definite matrix in ``a``, as ``numpy.linalg.cholesky``.

    ``L`` (lower, ``a = L @ L.T``) by default, reading the lower triangle of
    ``a`` only; ``upper=True`` gives ``U = L.T`` from the upper triangle. Raises
    :class:`gpugrad.errors.LinAlgError` for a matrix that is not positive definite.

    Example:
        >>> import gpugrad as gg
        >>> gg.linalg.cholesky(gg.tensor([[4.0, 2.0], [2.0, 5.0]])).numpy().tolist()
        [[2.0, 0.0], [1.0, 2.0]]
    """
    a = _matrix(a, "Cholesky")
    if upper:
        return _mT(cholesky(_mT(a)))
    xp = a._device.xp
    d = a._data
    if a._device is not CPU:  # NumPy reads the lower triangle only; make CuPy see the same matrix
        low = xp.tril(d)
        d = low + xp.swapaxes(xp.tril(d, -1), -1, -2)
    with _linalg_errors("Cholesky", a.shape, xp):
        out = xp.linalg.cholesky(d)
    return emit("Cholesky", out, a._device, (a,))


@RegisterGradient("Cholesky")
def _cholesky_grad(op, dl):
    # Murray 2016: P = L^{-T} Phi(L^T dL) L^{-1}, Phi = lower triangle with half the diagonal
    l = op.outputs[0]
    phi = multiply(matmul(l, dl, transpose_a=True), _triangle_mask(l.shape[-1], l))
    linv = inv(l)
    p = matmul(linv, matmul(phi, linv), transpose_a=True)
    return (_one_triangle(p),)


# ---------------------------------------------------------------- qr


def qr(a: TensorLike, mode: str = "reduced") -> Tensor | QRResult:
    """The QR decomposition of each matrix in ``a`` (..., M, N), as ``numpy.linalg.qr``.

    ``mode``: ``"reduced"`` (Q (..., M, K), R (..., K, N), K = min(M, N)),
    ``"complete"`` (Q (..., M, M)) or ``"r"`` (R alone). The gradient is TensorFlow's:
    for M >= N with the reduced Q (``"complete"`` of a tall input raises GradientError, Q's
    extra columns not being unique, as TensorFlow raises), and for wide input (M < N, either
    mode) by splitting A = [X | Y] with X square (Roberts & Roberts 2020, arXiv:2009.10071).

    Example:
        >>> import gpugrad as gg
        >>> q, r = gg.linalg.qr(gg.tensor([[3.0, 0.0], [4.0, 5.0]]))
        >>> (q @ r).numpy().round(6).tolist()
        [[3.0, 0.0], [4.0, 5.0]]
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr mode is 'reduced', 'complete' or 'r', not {mode!r}")
    a = _matrix(a, "Qr", square=False)
    xp = a._device.xp
    with _linalg_errors("Qr", a.shape, xp):
        q, r = xp.linalg.qr(a._data, mode="complete" if mode == "complete" else "reduced")
    q, r = emit_many("Qr", [q, r], a._device, (a,), {"full_matrices": mode == "complete"})
    return r if mode == "r" else QRResult(q, r)


@RegisterGradient("Qr")
def _qr_grad(op, dq, dr):
    a = op.inputs[0]
    q, r = op.outputs
    m, n = a.shape[-2:]
    if m >= n:
        if q.shape[-1] != n:
            raise GradientError(f"the gradient of op 'Qr' of a tall input (M > N) needs the reduced Q "
                                f"(mode='reduced'): the complete Q's last M - N columns are not unique; got input "
                                f"shape {a.shape} and Q of shape {q.shape}, as TensorFlow raises")
        return (_qr_grad_square_or_tall(q, r, dq, dr),)
    # wide (TensorFlow's _QrGrad): A = [X | Y], R = [U | V] with X = Q U square; Y = Q V gives dY = Q dV,
    # and X's gradient is the square one with dQ + Y dV^T
    y, u = a[..., :, m:], r[..., :, :m]
    du, dv = dr[..., :, :m], dr[..., :, m:]
    dx = _qr_grad_square_or_tall(q, u, add(dq, matmul(y, dv, transpose_b=True)), du)
    return (concat([dx, matmul(q, dv)], axis=-1),)


def _qr_grad_square_or_tall(q, r, dq, dr):
    # TensorFlow's _QrGradSquareAndDeepMatrices: dA = Q (dR + tril(Q^T dQ - dQ^T Q + R dR^T - dR R^T) R^{-T})
    #                                                + (dQ - Q Q^T dQ) R^{-T}
    n = r.shape[-1]
    qdq = matmul(q, dq, transpose_a=True)
    rdr = matmul(r, dr, transpose_b=True)
    low = _constant(q._device.xp.tril(q._device.xp.ones((n, n)), -1), q)
    tril = multiply(add(subtract(qdq, _mT(qdq)), subtract(rdr, _mT(rdr))), low)
    rinv = inv(r)
    grad_a = matmul(q, add(dr, matmul(tril, rinv, transpose_b=True)))
    grad_b = matmul(subtract(dq, matmul(q, qdq)), rinv, transpose_b=True)
    return add(grad_a, grad_b)


# ---------------------------------------------------------------- eigh, eig


def eigh(a: TensorLike, UPLO: str = "L") -> EighResult:  # noqa: N803 - NumPy's name
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix in ``a``, as ``numpy.linalg.eigh``.

    Returns ``(w, v)`` with ``a @ v = v * w``; only the ``UPLO`` triangle of
    ``a`` is read (``"L"`` or ``"U"``), and the gradient has that triangle only.

    NOTE: the eigenvector gradient divides by w_j - w_i: with degenerate
    (repeated) eigenvalues it is inf/NaN, as the eigenvectors are not unique.
    The eigenvalue gradient, V diag(dw) V^T, stays finite there: when only ``w``
    is used (so V^T dV is 0), the degenerate pairs are left out.

    Example:
        >>> import gpugrad as gg
        >>> w, v = gg.linalg.eigh(gg.tensor([[2.0, 1.0], [1.0, 2.0]]))
        >>> w.numpy().round(6).tolist()
        [1.0, 3.0]
    """
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh UPLO is 'L' or 'U', not {UPLO!r}")
    a = _matrix(a, "SelfAdjointEigV2")
    xp = a._device.xp
    with _linalg_errors("SelfAdjointEigV2", a.shape, xp):
        w, v = xp.linalg.eigh(a._data, UPLO=UPLO)
    w, v = emit_many("SelfAdjointEigV2", [w, v], a._device, (a,), {"lower": UPLO == "L"})
    return EighResult(w, v)


def _eigen_gaps(w):
    """F with F_ij = 1 / (w_j - w_i) off the diagonal and 0 on it: inf at a repeated eigenvalue, where the
    eigenvectors have no derivative (PyTorch's and JAX's rules give inf or NaN there too). It reads the
    eigenvalues only, never the upstream gradient, so the rule stays linear in it."""
    xp = w._device.xp
    diff = subtract(expand_dims(w, -2), expand_dims(w, -1))
    off = _constant(~xp.eye(w.shape[-1], dtype=bool), w)
    with np.errstate(divide="ignore"):  # 1 / 0 at a repeated eigenvalue: the inf meant
        return multiply(reciprocal(add(diff, subtract(1.0, off))), off)


@RegisterGradient("SelfAdjointEigV2")
def _eigh_grad(op, dw, dv):
    # dA = V (diag(dw) + F o (V^T dV)) V^T, F_ij = 1 / (w_j - w_i); then the triangle read. Where no
    # gradient reached V (op.filled), its term is left out: the eigenvalues' gradient stays finite at a
    # repeated eigenvalue (PyTorch's rule leaves out an undefined gradient's term the same way)
    w, v = op.outputs
    inner = _diag_embed(dw)
    if 1 not in op.filled:
        vdv = matmul(v, dv, transpose_a=True)
        inner = add(inner, multiply(_eigen_gaps(w), vdv))
    g = matmul(v, matmul(inner, v, transpose_b=True))
    return (_one_triangle(g, lower=op.attrs["lower"]),)


def eig(a: TensorLike) -> EigResult:
    """Eigenvalues and right eigenvectors of each square matrix in ``a``, as ``numpy.linalg.eig``.

    CPU only: CuPy has no general (non-symmetric) eig, so a GPU tensor raises
    :class:`gpugrad.errors.DeviceError`. The results are real when every
    eigenvalue is (NumPy 2.4's rule, on every NumPy: 2.5's always returns
    complex), else complex. The gradient is implemented for
    real eigenvalues only (complex ones raise GradientError); like ``eigh``'s it
    is inf/NaN at repeated eigenvalues when the eigenvectors are used.

    Example:
        >>> import gpugrad as gg
        >>> w, v = gg.linalg.eig(gg.tensor([[2.0, 1.0], [0.0, 3.0]], device="cpu"))
        >>> w.numpy().tolist()
        [2.0, 3.0]
    """
    a = _matrix(a, "Eig")
    if a._device is not CPU:
        raise DeviceError(f"op 'Eig' runs on the CPU only: CuPy has no general eig (input of shape {a.shape} "
                          f"on {a.device!r}); move it with .to('cpu'), or use gg.linalg.eigh for a symmetric matrix")
    with _linalg_errors("Eig", a.shape, np):
        w, v = np.linalg.eig(a._data)
    if w.dtype.kind == "c" and not np.iscomplexobj(a._data) and not (w.imag.any() or v.imag.any()):
        # NumPy 2.5 returns complex even for real eigenvalues (as torch.linalg.eig);
        # keep NumPy 2.4's real results, so a program's dtypes do not hang on the NumPy version
        w, v = w.real.copy(), v.real.copy()
    w, v = emit_many("Eig", [w, v], a._device, (a,))
    return EigResult(w, v)


@RegisterGradient("Eig")
def _eig_grad(op, dw, dv):
    # PyTorch's linalg_eig_backward, real case (unit-norm columns of V):
    # dA = V^{-T} (diag(dw) + (V^T dV - V^T V diag(diag(V^T dV))) / E) V^T, E_ij = w_j - w_i
    w, v = op.outputs
    if w._data.dtype.kind == "c":
        raise GradientError(f"the gradient of op 'Eig' is implemented for real eigenvalues only; input of "
                            f"shape {op.inputs[0].shape} has complex ones")
    if 1 in op.filled:  # no gradient reached V: its term is left out (see _eigh_grad)
        return (solve(_mT(v), matmul(_diag_embed(dw), v, transpose_b=True)),)
    vdv = matmul(v, dv, transpose_a=True)
    vv = matmul(v, v, transpose_a=True)
    inner = subtract(vdv, multiply(vv, expand_dims(_diag_part(vdv), -2)))
    inner = add(multiply(inner, _eigen_gaps(w)), _diag_embed(dw))
    return (solve(_mT(v), matmul(inner, v, transpose_b=True)),)


# ---------------------------------------------------------------- svd, pinv


def svd(a: TensorLike, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Tensor | SVDResult:
    """The singular value decomposition of each matrix in ``a``, as ``numpy.linalg.svd``.

    Returns ``(U, S, Vh)`` with ``a = U @ diag(S) @ Vh`` (S descending), or S
    alone for ``compute_uv=False``. ``hermitian=True`` is not supported.

    The gradient of S alone is U diag(dS) V^T; with U and Vh it is PyTorch's
    (Townsend 2016), which divides by s_k^2 - s_j^2 (inf/NaN at repeated
    singular values) and by s (at zero ones). With ``full_matrices=True`` and
    a non-square input, the columns of U (rows of Vh) past min(M, N) span the
    null space: where it is one-dimensional (``|M - N| = 1``) they are unique up to
    sign and differentiated, as TensorFlow does; where it is larger they are
    not unique, and a gradient that flows into them raises GradientError, as
    TensorFlow raises (a loss that does not use them gets its gradient).

    Example:
        >>> import gpugrad as gg
        >>> gg.linalg.svd(gg.tensor([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).numpy().tolist()
        [4.0, 3.0]
    """
    if hermitian:
        raise ValueError("svd(hermitian=True) is not supported; use gg.linalg.eigh for a symmetric matrix")
    a = _matrix(a, "Svd", square=False)
    xp = a._device.xp
    attrs = {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv)}
    with _linalg_errors("Svd", a.shape, xp):
        out = xp.linalg.svd(a._data, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return emit("Svd", out, a._device, (a,), attrs)
    return SVDResult(*emit_many("Svd", list(out), a._device, (a,), attrs))


@RegisterGradient("Svd")
def _svd_grad(op, *grads):
    a = op.inputs[0]
    if not op.attrs["compute_uv"]:  # dA = U diag(dS) V^T
        u, _, vh = svd(a, full_matrices=False)
        return (matmul(multiply(u, expand_dims(grads[0], -2)), vh),)
    m, n = a.shape[-2:]
    u, s, vh = op.outputs
    du, ds, dvh = grads
    if 0 in op.filled and 2 in op.filled:  # no gradient reached U or Vh: dA = U diag(dS) V^T, finite at a
        return (matmul(multiply(u, expand_dims(ds, -2)), vh),)  # repeated singular value (PyTorch's rule)
    k = s.shape[-1]
    null = None  # (basis, its gradient) of the null space that full_matrices adds, where a loss uses it
    if op.attrs["full_matrices"] and m != n:
        if m > n:
            null, u, du = (u[..., :, k:], du[..., :, k:]), u[..., :, :k], du[..., :, :k]
        else:
            null, vh, dvh = (vh[..., k:, :], dvh[..., k:, :]), vh[..., :k, :], dvh[..., :k, :]
        if (0 if m > n else 2) in op.filled:  # no gradient reached the factor: its null space is unused
            null = None
        elif abs(m - n) > 1:  # the null basis is arbitrary: only a loss that ignores it has a gradient
            if not bool(a._device.xp.any(null[1]._data != 0)):
                null = None
            else:
                raise GradientError(f"the gradient of op 'Svd' with full_matrices=True of shape {a.shape}: the "
                                    f"{'columns of U' if m > n else 'rows of Vh'} past min(M, N) = {k} are not "
                                    f"unique (any basis of a {abs(m - n)}-dimensional null space), and the loss uses "
                                    f"them, as TensorFlow refuses; pass full_matrices=False")
    dv = _mT(dvh)
    # PyTorch's svd_backward: U [(skew(U^T dU) S + S skew(V^T dV)) / E + diag(dS)] V^T, E_jk = s_k^2 - s_j^2
    uu = matmul(u, du, transpose_a=True)
    vv = matmul(vh, dv)
    s2 = multiply(s, s)
    e = add(subtract(expand_dims(s2, -2), expand_dims(s2, -1)), _eye(k, s))
    inner = add(multiply(subtract(uu, _mT(uu)), expand_dims(s, -2)),
                multiply(expand_dims(s, -1), subtract(vv, _mT(vv))))
    inner = add(divide(inner, e), _diag_embed(ds))
    if m > k:  # + (I - U U^T) dU S^{-1} V^T, and with the null vector u2 (TensorFlow's): - u2 du2^T U S^{-1} V^T
        dus = divide(du, expand_dims(s, -2))
        g = add(matmul(u, inner), subtract(dus, matmul(u, matmul(u, dus, transpose_a=True))))
        if null is not None:
            u2, du2 = null
            g = subtract(g, divide(matmul(u2, matmul(du2, u, transpose_a=True)), expand_dims(s, -2)))
        return (matmul(g, vh),)
    if n > k:  # + U S^{-1} dV^T (I - V V^T), and with the null vector v2 (TensorFlow's): - U S^{-1} V^T dv2 v2^T
        dvs = divide(dv, expand_dims(s, -2))
        g = add(matmul(inner, vh), subtract(_mT(dvs), matmul(matmul(dvs, vh, transpose_a=True, transpose_b=True), vh)))
        if null is not None:
            vh2, dvh2 = null
            g = subtract(g, divide(matmul(matmul(vh, dvh2, transpose_b=True), vh2), expand_dims(s, -1)))
        return (matmul(u, g),)
    return (matmul(u, matmul(inner, vh)),)


_NO_VALUE = object()


def pinv(a: TensorLike, rcond: float | None = None, hermitian: bool = False, *, rtol: float = _NO_VALUE) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix in ``a`` (..., M, N), as ``numpy.linalg.pinv``.

    Singular values at or below ``rcond * max(S)`` count as zero (NumPy's
    default ``rcond`` is 1e-15; ``rtol`` is its Array API name, ``rtol=None``
    meaning ``max(M, N) * eps``). Computed by :func:`svd` (``hermitian`` gives
    the same result), so the gradient is the SVD's: defined where the rank
    does not change.

    Example:
        >>> import gpugrad as gg
        >>> gg.linalg.pinv(gg.tensor([[2.0, 0.0], [0.0, 0.0]])).numpy().tolist()
        [[0.5, 0.0], [0.0, 0.0]]
    """
    a = _matrix(a, "Svd", square=False)
    xp = a._device.xp
    if rcond is None:
        if rtol is _NO_VALUE:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape[-2:]) * np.finfo(a._data.dtype).eps
        else:
            rcond = rtol
    elif rtol is not _NO_VALUE:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return Tensor._wrap(xp.zeros(a.shape[:-2] + (n, m), dtype=a._data.dtype), a._device)
    u, s, vh = svd(a, full_matrices=False)
    rcond = xp.asarray(rcond.numpy() if isinstance(rcond, Tensor) else rcond)
    cutoff = rcond[..., None] * xp.max(s._data, axis=-1, keepdims=True)
    large = _constant(s._data > cutoff, s)
    s_inv = multiply(reciprocal(add(multiply(s, large), subtract(1.0, large))), large)
    return matmul(multiply(vh, expand_dims(s_inv, -1)), u, transpose_a=True, transpose_b=True)


def lstsq(a: TensorLike, b: TensorLike, rcond: float | None = None) -> tuple[Tensor, Tensor, int, Tensor]:
    """The least-squares solution of ``a @ x = b``, as ``numpy.linalg.lstsq``: ``(x, residuals, rank, s)``.

    ``a`` is (M, N), ``b`` (M,) or (M, K). Singular values at or below
    ``rcond * max(s)`` count as zero (``rcond=None``: ``max(M, N) * eps``, NumPy's
    default). ``x`` is ``pinv(a) @ b`` through :func:`svd`, so it is
    differentiable in ``a`` and ``b`` wherever the rank does not change;
    ``residuals`` (the squared 2-norm of ``b - a @ x`` per column, empty unless the
    rank is N < M) and ``s`` are differentiable too, ``rank`` is an integer.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]], dtype="float64")
        >>> x, residuals, rank, s = gg.linalg.lstsq(a, gg.tensor([1.0, 2.0, 2.0], dtype="float64"))
        >>> [round(v, 4) for v in x.numpy().tolist()], round(residuals.item(), 4), rank
        ([1.1667, 0.5], 0.1667, 2)
    """
    _trace.dynamic_output_shape("lstsq (its rank and the residuals' shape come from the data)")
    a = _matrix(unary(a, b), "Svd", square=False)
    if a.ndim != 2:
        raise ShapeError(f"op 'lstsq' takes a matrix a of shape (M, N), not {a.shape}")
    b = unary(b) if not isinstance(b, Tensor) else b
    m, n = a.shape
    if b.ndim not in (1, 2) or b.shape[0] != m:
        raise ShapeError(f"op 'lstsq' needs b of shape ({m},) or ({m}, K) for a of shape {a.shape}, not {b.shape}")
    if b._data.dtype != a._data.dtype:
        b = Tensor._wrap(b._data.astype(a._data.dtype), b._device) if not _dt.floating(b._data.dtype) else b
    if rcond is None:
        rcond = max(m, n) * np.finfo(a._data.dtype).eps
    s = svd(a, compute_uv=False)
    xp = a._device.xp
    rank = int(xp.count_nonzero(s._data > rcond * xp.max(s._data))) if s.size else 0
    x = matmul(pinv(a, rcond=rcond), b)
    if rank == n and m > n:
        r = subtract(b, matmul(a, x))
        residuals = _sum(multiply(r, r), axis=0)
        if b.ndim == 1:
            residuals = reshape(residuals, (1,))
    else:
        residuals = Tensor._wrap(xp.zeros((0,), dtype=x._data.dtype), x._device)
    return x, residuals, rank, s  # type: ignore[return-value]  # svd(compute_uv=False): a Tensor


# ---------------------------------------------------------------- matrix_power


def matrix_power(a: TensorLike, n: int) -> Tensor:
    """``a`` (..., M, M) raised to the integer power ``n``, as ``numpy.linalg.matrix_power``.

    By repeated squaring (NumPy's order of products); ``n < 0`` inverts first
    (LinAlgError for a singular matrix), ``n == 0`` gives the identity.

    Example:
        >>> import gpugrad as gg
        >>> gg.linalg.matrix_power(gg.tensor([[1.0, 1.0], [0.0, 1.0]]), 3).numpy().tolist()
        [[1.0, 3.0], [0.0, 1.0]]
    """
    a = unary(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"op 'matrix_power' takes square matrices (..., M, M), not shape {a.shape}")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power exponent must be an integer, not {type(n).__name__}") from None
    xp = a._device.xp
    if n == 0:
        eye = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a._data.dtype), a.shape)
        return Tensor._wrap(xp.ascontiguousarray(eye), a._device)
    if n < 0:
        a = inv(a)
        n = -n
    if n == 1:
        return reshape(a, a.shape)  # a new tensor (a copy of a variable), as NumPy returns a copy
    z = result = None
    while n > 0:
        z = a if z is None else matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else matmul(result, z)
    return result  # type: ignore[return-value]  # n >= 2 here: the loop sets it


# ---------------------------------------------------------------- norm


def _euclidean_norm(x, axes, keepdims):
    xp = x._device.xp
    d = x._data
    sq = (d.conj() * d).real if d.dtype.kind == "c" else d * d
    out = _dt.narrow(xp.sqrt(xp.sum(_dt.wide(sq), axis=axes, keepdims=keepdims)), d)  # low dtypes: in float32
    return emit("EuclideanNorm", out, x._device, (x,), {"axes": axes, "keepdims": keepdims})


@RegisterGradient("EuclideanNorm")
def _euclidean_norm_grad(op, dy):
    # d||x|| = x / ||x||, and 0 at x = 0 (PyTorch's subgradient)
    x, y = op.inputs[0], op.outputs[0]
    axes = op.attrs["axes"]
    kept = kept_shape(x.shape, axes)
    if y.shape != kept:
        y, dy = reshape(y, kept), reshape(dy, kept)
    zero = _constant(y._data == 0, y)
    ratio = multiply(divide(dy, add(y, zero)), subtract(1.0, zero))
    return (multiply(x, ratio),)


def _moved_last(x, row, col):
    """``x`` with axes ``row``, ``col`` moved to the end."""
    rest = [i for i in range(x.ndim) if i not in (row, col)]
    return transpose(x, tuple(rest) + (row, col))


def norm(x: TensorLike, ord: Any = None, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A002 - NumPy's name
    """A vector or matrix norm, as ``numpy.linalg.norm``.

    ``axis`` an int (or ``x`` 1-D): vector norms, ``ord`` None or 2 (Euclidean),
    1, inf, -inf, 0 (the count of nonzeros, no gradient) or any other p.
    ``axis`` a pair (or ``x`` 2-D): matrix norms, ``ord`` None or 'fro', 'nuc'
    (sum of singular values), 1 / -1 (max / min column sum), inf / -inf (rows),
    2 / -2 (largest / smallest singular value). ``axis=None`` with ``ord=None``
    is the 2-norm of all of ``x``. The gradient of the 2-norm (and of 'fro') at
    0 is 0, PyTorch's subgradient.

    Example:
        >>> import gpugrad as gg
        >>> gg.linalg.norm(gg.tensor([3.0, 4.0])).item()
        5.0
        >>> gg.linalg.norm(gg.tensor([[1.0, -2.0], [3.0, 4.0]]), ord=1).item()
        6.0
    """
    x = unary(x)
    if x._data.dtype.kind in "biu":
        x = Tensor._wrap(x._data.astype(np.float64), x._device)
    nd = x.ndim
    if axis is None:
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            return _euclidean_norm(x, tuple(range(nd)), keepdims)
        if nd not in (1, 2):
            raise ShapeError(f"op 'norm' with ord={ord!r} takes a 1-D or 2-D tensor (or an axis), not shape {x.shape}")
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise TypeError(f"norm axis is an int or a tuple of ints, not {axis!r}") from None
    for ax in axis:
        if not -nd <= ax < nd:
            raise ShapeError(f"axis {ax} is out of range for a tensor of {nd} dimensions")
    axis = tuple(ax % nd for ax in axis)
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        out = _matrix_norm(x, ord, axis)
        return reshape(out, kept_shape(x.shape, axis)) if keepdims else out
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis, keepdims):  # noqa: A002
    if ord is None or ord == 2:
        return _euclidean_norm(x, axis, keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order {ord!r} for vectors.")
    if ord == np.inf:
        return _max(_abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return _min(_abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # a count: no gradient
        xp = x._device.xp
        count = xp.sum(x._data != 0, axis=axis, keepdims=keepdims).astype(x._data.real.dtype)
        return Tensor._wrap(xp.asarray(count), x._device)
    if ord == 1:
        return _sum(_abs(x), axis=axis, keepdims=keepdims)
    return power(_sum(power(_abs(x), float(ord)), axis=axis, keepdims=keepdims), 1.0 / float(ord))


def _matrix_norm(x, ord, axis):  # noqa: A002
    row, col = axis
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (None, "fro", "f"):
        return _euclidean_norm(x, tuple(sorted(axis)), False)
    if ord in (2, -2, "nuc"):
        s = svd(_moved_last(x, row, col), compute_uv=False)
        if ord == "nuc":
            return _sum(s, axis=-1)
        return _max(s, axis=-1) if ord == 2 else _min(s, axis=-1)
    if ord in (1, -1, np.inf, -np.inf):
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        other = other - 1 if other > summed else other
        sums = _sum(_abs(x), axis=summed)
        return _max(sums, axis=other) if ord > 0 else _min(sums, axis=other)
    raise ValueError(f"Invalid norm order {ord!r} for matrices.")


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eig", "svd", "pinv", "lstsq", "matrix_power",
        "norm"
    ]
