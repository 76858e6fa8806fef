"""NumPy's own functions and ufuncs on tensors (NEP 13/18): gpugrad's op of the same meaning, or a TypeError.

Every entry of the dispatch tables (``gpugrad._numpy``) has a case here, and a completeness test
fails for an entry without one. Each case runs the same NumPy expression on ndarrays (the oracle) and
on tensors: the result must be a tensor of NumPy's values, shape and dtype, and its gradient must
match finite differences of the same expression. Every NumPy function and ufunc outside the tables
must raise a TypeError naming it.
"""
import doctest

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._numpy import FUNCTIONS
from gpugrad._numpy.methods import METHODS
from gpugrad._numpy.ufuncs import ACCUMULATE, REDUCE, UFUNCS
from tests.conftest import check, device_params, gradient_function, recorded_types

RNG = np.random.default_rng(0)
NUMPY2 = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def distinct(shape, lo=0.2, hi=0.9, seed=0):
    """Values in (lo, hi), pairwise apart (no ties for max, sort or median; away from round's halves)."""
    n = int(np.prod(shape))
    values = np.linspace(lo, hi, n) + 0.013
    return np.random.default_rng(seed).permutation(values).reshape(shape)


M = distinct((3, 4))
N = distinct((4, 3), seed=1)
V = distinct((4,), seed=2)
W = distinct((4,), seed=3)
S = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])  # symmetric positive definite
B = distinct((3, 2), seed=4)
C3 = distinct((2, 3, 4), seed=5)
I = np.array([2, 0, 1])  # noqa: E741


class Case:
    """``fn(*inputs)`` on ndarrays and on tensors; ``grad`` whether the result has a gradient to check;
    ``plain`` whether NumPy's answer is not an array (a shape, a bool, a string)."""

    def __init__(self, func, fn, *inputs, grad=True, plain=False, label=""):
        self.func, self.fn, self.inputs, self.grad, self.plain = func, fn, inputs, grad, plain
        self.id = (getattr(func, "__module__", "") or "").replace("numpy._core.", "").replace("numpy.", "") \
            .replace("numpy", "np") + "." + func.__name__ + (f"-{label}" if label else "")


def c(name, fn, *inputs, **kw):
    """The case of NumPy's function ``name`` ("linalg.norm"); None where this NumPy lacks it (1.26 has no
    np.cumulative_sum, ...)."""
    func = np
    for part in name.split("."):
        func = getattr(func, part, None)
    return None if func is None else Case(func, fn, *inputs, **kw)


FUNCTION_CASES = [
    # reductions
    c("sum", lambda a: np.sum(a, axis=0), M), c("sum", lambda a: np.sum(a, dtype=np.float32), M, grad=False, label="dtype"),
    c("mean", lambda a: np.mean(a, axis=1, keepdims=True), M), c("prod", lambda a: np.prod(a, axis=1), M),
    c("max", lambda a: np.max(a, axis=0), M), c("min", lambda a: np.min(a), M),
    c("amax", lambda a: np.amax(a, 1), M), c("amin", lambda a: np.amin(a, 0, keepdims=True), M),
    c("var", lambda a: np.var(a, axis=0, ddof=1), M), c("std", lambda a: np.std(a, axis=1), M),
    c("argmax", lambda a: np.argmax(a, axis=1), M, grad=False), c("argmin", lambda a: np.argmin(a), M, grad=False),
    c("all", lambda a: np.all(a > 0.3, axis=0), M, grad=False), c("any", lambda a: np.any(a > 0.8), M, grad=False),
    c("ptp", lambda a: np.ptp(a, axis=1), M), c("count_nonzero", lambda a: np.count_nonzero(a > 0.5), M, grad=False),
    c("average", lambda a: np.average(a, axis=0, weights=np.array([1.0, 2.0, 3.0])), M),
    c("median", lambda a: np.median(a, axis=0), M), c("quantile", lambda a: np.quantile(a, 0.3, axis=1), M),
    c("percentile", lambda a: np.percentile(a, [10, 60]), M), c("nansum", lambda a: np.nansum(a, axis=1), M),
    c("nanmean", lambda a: np.nanmean(a, axis=0), M),
    # cumulative
    c("cumsum", lambda a: np.cumsum(a, axis=1), M), c("cumprod", lambda a: np.cumprod(a, 0), M),
    c("diff", lambda a: np.diff(a, axis=0), M), c("gradient", lambda a: np.gradient(a, axis=1), M),
    c("trapezoid", lambda a: np.trapezoid(a, dx=0.5), M), c("trapz", lambda a: np.trapz(a, dx=0.5), M),
    c("cumulative_sum", lambda a: np.cumulative_sum(a, axis=1, include_initial=True), M),
    c("cumulative_prod", lambda a: np.cumulative_prod(a, axis=0), M),
    # products
    c("dot", lambda a, b: np.dot(a, b), M, N), c("dot", lambda a: np.dot(a, N), M, label="ndarray"),
    c("vdot", lambda a, b: np.vdot(a, b), V, W), c("inner", lambda a, b: np.inner(a, b), M, V),
    c("outer", lambda a, b: np.outer(a, b), V, W), c("tensordot", lambda a, b: np.tensordot(a, b, axes=1), M, N),
    c("einsum", lambda a, b: np.einsum("ij,jk->ik", a, b), M, N), c("kron", lambda a, b: np.kron(a, b), V, B),
    c("cross", lambda a, b: np.cross(a, b), M[:, :3], N[:3]), c("trace", lambda a: np.trace(a, offset=1), M),
    c("diagonal", lambda a: np.diagonal(a, 1), M), c("diag", lambda a: np.diag(a), V),
    c("diagflat", lambda a: np.diagflat(a, 1), B), c("tril", lambda a: np.tril(a, -1), M),
    c("triu", lambda a: np.triu(a), M),
    # shape
    c("reshape", lambda a: np.reshape(a, (2, 6)), M), c("ravel", lambda a: np.ravel(a), M),
    c("transpose", lambda a: np.transpose(a, (2, 0, 1)), C3), c("matrix_transpose", lambda *xs: np.matrix_transpose(*xs), C3),
    c("swapaxes", lambda a: np.swapaxes(a, 0, 2), C3), c("moveaxis", lambda a: np.moveaxis(a, 0, -1), C3),
    c("squeeze", lambda a: np.squeeze(a[None], 0), M), c("expand_dims", lambda a: np.expand_dims(a, (0, 2)), M),
    c("broadcast_to", lambda a: np.broadcast_to(a, (2, 4)), V),
    c("broadcast_arrays", lambda a, b: np.broadcast_arrays(a, b), V, B[:, :1]),
    c("atleast_1d", lambda *xs: np.atleast_1d(*xs), np.float64(0.5)), c("atleast_2d", lambda *xs: np.atleast_2d(*xs), V),
    c("atleast_3d", lambda *xs: np.atleast_3d(*xs), M), c("copy", lambda *xs: np.copy(*xs), M), c("astype", lambda a: np.astype(a, np.float32), M, grad=False),
    # joining and splitting
    c("concatenate", lambda a, b: np.concatenate([a, b.T], axis=0), M, N),
    c("concatenate", lambda a: np.concatenate((a, M), axis=1), M, label="ndarray"),
    c("concat", lambda a, b: np.concat([a, b]), V, W), c("stack", lambda a, b: np.stack([a, b], 1), V, W),
    c("vstack", lambda a, b: np.vstack([a, b]), V, W), c("hstack", lambda a, b: np.hstack((a, b)), M, B),
    c("dstack", lambda a, b: np.dstack([a, b]), V, W), c("column_stack", lambda a, b: np.column_stack([a, b]), V, W),
    c("append", lambda a, b: np.append(a, b), M, V),
    c("split", lambda a: np.split(a, [1, 3], axis=1), M), c("split", lambda a: np.split(a, 2, 1), M, label="n"),
    c("array_split", lambda a: np.array_split(a, 3, axis=1), M), c("unstack", lambda a: np.unstack(a, axis=1), M),
    c("hsplit", lambda a: np.hsplit(a, 2), M), c("vsplit", lambda a: np.vsplit(a, [1]), M),
    c("dsplit", lambda a: np.dsplit(a, [1]), C3),
    # order
    c("roll", lambda a: np.roll(a, 1, axis=1), M), c("flip", lambda a: np.flip(a, 0), M), c("fliplr", lambda *xs: np.fliplr(*xs), M),
    c("flipud", lambda *xs: np.flipud(*xs), M), c("rot90", lambda a: np.rot90(a), M), c("tile", lambda a: np.tile(a, (2, 1)), V),
    c("repeat", lambda a: np.repeat(a, 2, axis=0), M), c("sort", lambda a: np.sort(a, axis=0), M),
    c("argsort", lambda a: np.argsort(a), M, grad=False), c("partition", lambda a: np.partition(a, 2), V),
    c("searchsorted", lambda a: np.searchsorted(a, np.array([0.3, 0.6])), np.sort(V), grad=False),
    c("nonzero", lambda a: np.nonzero(a > 0.5), M, grad=False), c("argwhere", lambda a: np.argwhere(a > 0.5), M,
                                                                       grad=False),
    c("flatnonzero", lambda a: np.flatnonzero(a > 0.5), M, grad=False),
    # indexing
    c("take", lambda a: np.take(a, I, axis=1), M), c("take_along_axis", lambda a: np.take_along_axis(
        a, np.argsort(M, axis=1), axis=1), M), c("pad", lambda a: np.pad(a, ((1, 0), (0, 2))), M),
    c("meshgrid", lambda a, b: np.meshgrid(a[0], b[:, 1], indexing="ij"), M, N.T),
    c("unique", lambda a: np.unique(a > 0.5, return_inverse=True, return_counts=True), M, grad=False),
    c("bincount", lambda a: np.bincount(np.argmax(a, axis=1), minlength=5), M, grad=False),
    # elementwise functions that are not ufuncs
    c("where", lambda a, b: np.where(a > 0.5, a, b), M, N.T), c("where", lambda a: np.where(a > 0.5), M,
                                                                 grad=False, label="nonzero"),
    c("clip", lambda a: np.clip(a, 0.3, 0.7), M), *([c("clip", lambda a: np.clip(a, max=0.6), M, label="max")] if NUMPY2 else []),  # NumPy 2's min=/max=
    c("round", lambda a: np.round(a, 1), M, grad=False), c("around", lambda a: np.around(a * 10), M, grad=False),
    c("nan_to_num", lambda a: np.nan_to_num(a, nan=0.5), M),
    c("nan_to_num", lambda a: np.nan_to_num(np.log(a > 0.5) * a, neginf=-7.0), M, grad=False, label="inf"), c("sinc", lambda *xs: np.sinc(*xs), M),
    c("fix", lambda a: np.fix(a * 4 - 2), M, grad=False), c("real", lambda *xs: np.real(*xs), M), c("imag", lambda *xs: np.imag(*xs), M, grad=False),
    c("isposinf", lambda a: np.isposinf(1 / (a > 0.5) - 0.5), M, grad=False),
    c("isneginf", lambda a: np.isneginf(-1 / (a > 0.5)), M, grad=False),
    # made like a tensor
    c("zeros_like", lambda *xs: np.zeros_like(*xs), M, grad=False), c("ones_like", lambda a: np.ones_like(a, dtype=np.int32), M,
                                                      grad=False),
    c("empty_like", lambda a: np.empty_like(a) * 0, M, grad=False),
    c("full_like", lambda a: np.full_like(a, 7, shape=(2,)), M, grad=False),
    # comparisons of values
    c("isclose", lambda a: np.isclose(a, M + 1e-9), M, grad=False),
    c("allclose", lambda a: np.allclose(a, M), M, plain=True), c("array_equal", lambda a: np.array_equal(a, M), M,
                                                                     plain=True),
    c("array_equiv", lambda a: np.array_equiv(a, M[0]), M, plain=True),
    # what a tensor is
    c("shape", lambda *xs: np.shape(*xs), M, plain=True), c("ndim", lambda *xs: np.ndim(*xs), M, plain=True),
    c("size", lambda a: np.size(a, 1), M, plain=True), c("result_type", lambda a: np.result_type(a, np.int32), M,
                                                           plain=True),
    c("iscomplexobj", lambda *xs: np.iscomplexobj(*xs), M, plain=True), c("isrealobj", lambda *xs: np.isrealobj(*xs), M, plain=True),
    c("array2string", lambda a: np.array2string(a, precision=2), M, plain=True),
    c("array_repr", lambda *xs: np.array_repr(*xs), V, plain=True), c("array_str", lambda *xs: np.array_str(*xs), V, plain=True),
    # numpy.linalg
    c("linalg.norm", lambda a: np.linalg.norm(a, axis=1), M), c("linalg.norm", lambda *xs: np.linalg.norm(*xs), M, label="fro"),
    c("linalg.det", lambda *xs: np.linalg.det(*xs), S), c("linalg.inv", lambda *xs: np.linalg.inv(*xs), S),
    c("linalg.solve", lambda *xs: np.linalg.solve(*xs), S, B), c("linalg.slogdet", lambda *xs: np.linalg.slogdet(*xs), S),
    c("linalg.cholesky", lambda *xs: np.linalg.cholesky(*xs), S), c("linalg.qr", lambda *xs: np.linalg.qr(*xs), M.T),
    c("linalg.svd", lambda a: np.linalg.svd(a, full_matrices=False), M),
    c("linalg.eigh", lambda *xs: np.linalg.eigh(*xs), S), c("linalg.eig", lambda a: np.linalg.eig(a).eigenvalues, S),
    c("linalg.pinv", lambda *xs: np.linalg.pinv(*xs), M), c("linalg.lstsq", lambda a, b: np.linalg.lstsq(a, b)[0], M.T, B[:, 0].repeat(
        2)[:4]), c("linalg.matrix_power", lambda a: np.linalg.matrix_power(a, 3), S),
    c("linalg.svdvals", lambda *xs: np.linalg.svdvals(*xs), M), c("linalg.eigvals", lambda *xs: np.linalg.eigvals(*xs), S),
    c("linalg.eigvalsh", lambda *xs: np.linalg.eigvalsh(*xs), S),
    c("linalg.multi_dot", lambda a, b: np.linalg.multi_dot([a, b, S]), M, N),
    c("linalg.vector_norm", lambda a: np.linalg.vector_norm(a, axis=(0, 2), keepdims=True), C3),
    c("linalg.vector_norm", lambda a: np.linalg.vector_norm(a, ord=1), M, label="flat"),
    c("linalg.matrix_norm", lambda *xs: np.linalg.matrix_norm(*xs), C3), c("linalg.matmul", lambda *xs: np.linalg.matmul(*xs), M, N),
    c("linalg.outer", lambda *xs: np.linalg.outer(*xs), V, W), c("linalg.tensordot", lambda *xs: np.linalg.tensordot(*xs), C3, C3.transpose(1, 2, 0).copy()),
    c("linalg.vecdot", lambda *xs: np.linalg.vecdot(*xs), M, V), c("linalg.trace", lambda *xs: np.linalg.trace(*xs), C3),
    c("linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=1), C3),
    c("linalg.cross", lambda *xs: np.linalg.cross(*xs), M[:, :3], N[:3]), c("linalg.matrix_transpose", lambda *xs: np.linalg.matrix_transpose(*xs), M),
]
FUNCTION_CASES = [case for case in FUNCTION_CASES if case is not None]

ARC = distinct((3, 4), 1.2, 2.5, seed=7)  # inside arccosh's domain
UNIT = distinct((3, 4), -0.8, 0.8, seed=8)  # inside arcsin's, arctanh's
DOMAIN = {np.arccosh: ARC, np.arcsin: UNIT, np.arccos: UNIT, np.arctanh: UNIT, np.sign: UNIT, np.floor: ARC * 3,
          np.ceil: ARC * 3, np.trunc: UNIT * 3, np.rint: ARC * 3, np.fmod: ARC * 3, np.remainder: ARC * 3}
NO_GRADIENT = {np.sign, np.floor, np.ceil, np.trunc, np.rint, np.isfinite, np.isnan, np.isinf, np.logical_not,
               np.logical_and, np.logical_or, np.logical_xor, np.less, np.less_equal, np.greater,
               np.greater_equal, np.equal, np.not_equal, np.floor_divide}
BITWISE = {np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.invert, np.left_shift, np.right_shift}


def ufunc_case(ufunc):
    first = DOMAIN.get(ufunc, M)
    if ufunc in (np.matmul,):
        return Case(ufunc, ufunc, M, N)
    if ufunc is getattr(np, "vecdot", None):
        return Case(ufunc, ufunc, M, V)
    if ufunc is getattr(np, "matvec", None):
        return Case(ufunc, ufunc, M, V)
    if ufunc is getattr(np, "vecmat", None):
        return Case(ufunc, ufunc, distinct((3,)), M)
    if ufunc in BITWISE:  # integers: bits to combine, and shifts of 0 to 2 places
        inputs = (np.arange(-6, 6).reshape(3, 4), np.arange(12).reshape(3, 4) % 3)[:ufunc.nin]
        return Case(ufunc, ufunc, *inputs, grad=False)
    if ufunc.__name__.startswith("logical"):
        inputs = (first > 0.5, N.T > 0.5)[:ufunc.nin]
        return Case(ufunc, ufunc, *inputs, grad=False)
    second = distinct((3, 4), 0.4, 1.1, seed=9)
    return Case(ufunc, ufunc, *(first, second)[:ufunc.nin], grad=ufunc not in NO_GRADIENT)


UFUNC_CASES = [ufunc_case(u) for u in UFUNCS]
METHOD_CASES = [  # ufunc methods that are a gpugrad reduction or scan
    c("add.reduce", lambda a: np.add.reduce(a), M, label="add"),
    c("multiply.reduce", lambda a: np.multiply.reduce(a, axis=1, keepdims=True), M, label="multiply"),
    c("maximum.reduce", lambda a: np.maximum.reduce(a, axis=None), M, label="maximum"),
    c("minimum.reduce", lambda a: np.minimum.reduce(a, 1), M, label="minimum"),
    c("logaddexp.reduce", lambda a: np.logaddexp.reduce(a, 0), M, label="logaddexp"),
    c("logical_and.reduce", lambda a: np.logical_and.reduce(a > 0.3), M, grad=False, label="logical_and"),
    c("logical_or.reduce", lambda a: np.logical_or.reduce(a > 0.8, axis=1), M, grad=False, label="logical_or"),
    c("add.accumulate", lambda a: np.add.accumulate(a), M, label="add-accumulate"),
    c("multiply.accumulate", lambda a: np.multiply.accumulate(a, axis=1), M, label="multiply-accumulate"),
    c("subtract.outer", lambda a, b: np.subtract.outer(a, b), V, W, label="outer"),
]
REDUCE_METHODS = {("reduce", u) for u in REDUCE} | {("accumulate", u) for u in ACCUMULATE}


# ---------------------------------------------------------------- completeness


def test_every_function_entry_has_a_case():
    covered = {case.func for case in FUNCTION_CASES}
    missing = [f"{f.__module__}.{f.__name__}" for f in FUNCTIONS if f not in covered]
    assert not missing, f"dispatch entries without a test case here: {missing}"
    assert covered <= set(FUNCTIONS)


def test_every_ufunc_entry_and_ufunc_method_has_a_case():
    assert {case.func for case in UFUNC_CASES} == set(UFUNCS)
    covered = {(case.fn.__code__.co_names[-1], getattr(case.func, "__self__", None)) for case in METHOD_CASES}
    assert REDUCE_METHODS <= covered, REDUCE_METHODS - covered


# ---------------------------------------------------------------- values, dtypes and gradients


def tensors(inputs, device="cpu"):
    return [gg.tensor(x, device=device) for x in inputs]


def assert_like(got, want, where="result"):
    """``got`` (from tensors) holds NumPy's ``want``: tensors for arrays, of the same shape, dtype, values."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_like(g, w, f"{where}[{i}]")
        return
    assert isinstance(got, gg.Tensor), f"{where}: {type(got).__name__}, not a Tensor"
    want = np.asarray(want)
    assert got.shape == want.shape, f"{where}: shape {got.shape} vs NumPy's {want.shape}"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} vs NumPy's {want.dtype}"
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-12, err_msg=where)


def float_outputs(result):
    if isinstance(result, (tuple, list)):
        return [o for r in result for o in float_outputs(r)]
    return [result] if isinstance(result, gg.Tensor) and result.dtype.kind == "f" else []


def scalar_of(case, n_inputs):
    """The case's function of its float inputs, weighted to one number (every output element counts)."""
    def f(*xs):
        outs = float_outputs(case.fn(*xs))
        return sum((gg.sum(o * np.random.default_rng(k).uniform(0.5, 1.5, o.shape)) for k, o in enumerate(outs)),
                   gg.tensor(0.0, dtype="float64", device=xs[0].device))
    return f


ALL_CASES = FUNCTION_CASES + UFUNC_CASES + METHOD_CASES


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.id for case in ALL_CASES])
def test_numpy_on_tensors_gives_numpys_values_as_tensors(case):
    want = case.fn(*case.inputs)
    if case.id in ("linalg.eig", "linalg.eigvals") and np.iscomplexobj(want) and not np.imag(want).any():
        want = np.real(want)  # NumPy 2.5's eig is complex for real eigenvalues too; gg.linalg.eig keeps 2.4's real
    got = case.fn(*tensors(case.inputs))
    if case.plain:
        assert got == want and type(got) is type(want)
    else:
        assert_like(got, want)


GRAD_CASES = [case for case in ALL_CASES if case.grad and not case.plain]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[case.id for case in GRAD_CASES])
def test_the_gradient_through_numpy_matches_finite_differences(case):
    check(scalar_of(case, len(case.inputs)), tensors(case.inputs), delta=1e-6, tol=1e-5)


@pytest.mark.parametrize("ufunc", list(UFUNCS), ids=lambda u: u.__name__)
def test_a_ufunc_records_its_gpugrad_op(ufunc):
    case = ufunc_case(ufunc)
    xs = tensors(case.inputs)
    assert recorded_types(ufunc, xs) == recorded_types(UFUNCS[ufunc], xs)


@pytest.mark.parametrize("fn, op", [
    (lambda a, b: np.dot(a, b), lambda a, b: gg.dot(a, b)),
    (lambda a, b: np.concatenate([a, b.T]), lambda a, b: gg.concat([a, b.T])),
    (lambda a, b: np.where(a > 0.5, a, b.T), lambda a, b: gg.where(a > 0.5, a, b.T)),
    (lambda a, b: np.clip(a, 0.3, 0.6) @ b, lambda a, b: gg.matmul(gg.clip(a, 0.3, 0.6), b)),
    (lambda a, b: np.linalg.norm(np.outer(a, b)), lambda a, b: gg.linalg.norm(gg.outer(a, b))),
], ids=["dot", "concatenate", "where", "clip-matmul", "norm-outer"])
def test_gradients_equal_the_gpugrad_ops_own(fn, op):
    x, y = gg.tensor(M), gg.tensor(N)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        mine, theirs = fn(x, y), op(x, y)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    for a, b in zip(tape.gradient(mine, [x, y]), tape.gradient(theirs, [x, y])):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("fn", [
    lambda a, b: np.sum(np.exp(a) * np.tanh(b.T)),
    lambda a, b: np.linalg.norm(np.dot(a, b)),
    lambda a, b: np.sum(np.concatenate([a, b.T]) ** 3),
    lambda a, b: np.sum(np.where(a > 0.5, a * a, np.log(b.T))),
    lambda a, b: np.prod(np.clip(a, 0.3, 0.7), axis=0).sum(),
], ids=["exp-tanh", "norm-dot", "concatenate", "where", "clip-prod"])
def test_second_order_through_numpy(fn):
    check(gradient_function(fn, 2), tensors([M, N]), delta=1e-6, tol=1e-5)


def test_an_ndarray_on_the_left_gives_tensors_with_gradients():
    x = gg.tensor(M)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(N.T + x) + np.sum(N.T * x) + np.sum(N @ x) + np.sum(N.T - x) + np.sum(N.T / x) + np.sum(N.T ** x)
    assert isinstance(y, gg.Tensor)
    want = 1 + N.T + N.sum(axis=0)[:, None] * np.ones_like(M) - 1 - N.T / M ** 2 + N.T ** M * np.log(N.T)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-10)
    for op in ["<", "<=", ">", ">=", "==", "!="]:
        got = eval(f"N.T {op} x")
        assert isinstance(got, gg.Tensor) and got.dtype == bool
        np.testing.assert_array_equal(got.numpy(), eval(f"N.T {op} M"))


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
@pytest.mark.parametrize("fn", [
    lambda a: np.sum(a), lambda a: np.add(a, a), lambda a: np.multiply(a, 2), lambda a: np.maximum(a, a[::-1]),
    lambda a: np.cumsum(a), lambda a: np.concatenate([a, a]), lambda a: np.where(a > 0, a, a), lambda a: np.max(a),
    lambda a: np.dot(a, a), lambda a: np.clip(a, 0, 1), lambda a: np.sort(a), lambda a: np.mean(a),
], ids=["sum", "add", "multiply", "maximum", "cumsum", "concatenate", "where", "max", "dot", "clip", "sort", "mean"])
def test_integer_and_bool_tensors_keep_numpys_dtypes(fn, dtype):
    a = np.array([3, 0, 2, 1]).astype(dtype)
    assert_like(fn(gg.tensor(a)), fn(a))


@pytest.mark.parametrize("fn", [
    lambda a: np.sum(a), lambda a: np.exp(a), lambda a: np.negative(a),
    lambda a: np.reshape(a, (1, 1)), lambda a: np.where(a > 0, a, 0.0), lambda a: np.linalg.norm(a),
], ids=["sum", "exp", "negative", "reshape", "where", "norm"])
def test_0d_tensors(fn):
    assert_like(fn(gg.tensor(np.float64(0.7))), fn(np.float64(0.7)))


@pytest.mark.parametrize("fn", [
    lambda a: np.sum(a, axis=0), lambda a: np.exp(a), lambda a: np.concatenate([a, a]), lambda a: np.dot(a.T, a),
    lambda a: np.cumsum(a, axis=1), lambda a: np.mean(a, axis=1), lambda a: np.add.reduce(a, axis=0),
], ids=["sum", "exp", "concatenate", "dot", "cumsum", "mean", "add.reduce"])
def test_empty_tensors(fn):
    a = np.zeros((0, 3))
    with np.errstate(invalid="ignore"):
        assert_like(fn(gg.tensor(a)), fn(a))


# ---------------------------------------------------------------- the keywords NumPy passes


def test_out_is_refused_for_functions_ufuncs_and_their_methods():
    t = gg.tensor(M)
    for call in [lambda: np.exp(t, out=np.empty_like(M)), lambda: np.add(t, t, out=(np.empty_like(M),)),
                 lambda: np.add.reduce(t, out=np.empty(4)), lambda: np.dot(t, N, out=np.empty((3, 3))),
                 lambda: np.concatenate([t, t], out=np.empty((6, 4))), lambda: np.exp(M, out=t)]:
        with pytest.raises(TypeError, match=r"out=.*immutable"):
            call()


def test_out_none_and_numpys_defaults_are_accepted():
    t = gg.tensor(M)
    assert_like(np.exp(t, out=None, where=True, casting="same_kind"), np.exp(M))
    assert_like(np.sum(t, out=None, where=True), np.sum(M))
    assert_like(np.einsum("ij->j", t, optimize=True), np.einsum("ij->j", M))
    assert_like(np.reshape(t, (4, 3), order="C"), np.reshape(M, (4, 3)))


@pytest.mark.parametrize("call, word", [
    (lambda t: np.exp(t, where=t > 0.5), "where"), (lambda t: np.sum(t, where=t > 0.5), "where"),
    (lambda t: np.reshape(t, (4, 3), order="F"), "order"), (lambda t: np.pad(t, 1, mode="mean", stat_length=2), "stat_length"),
    (lambda t: np.take(t, [0], mode="clip"), "mode"), (lambda t: np.sum(t, initial=1.0), "initial"),
    (lambda t: np.add.reduce(t, initial=1.0), "initial"), (lambda t: np.exp(t, casting="unsafe"), "casting"),
], ids=["ufunc-where", "sum-where", "order", "pad-mode", "take-mode", "initial", "reduce-initial", "casting"])
def test_a_numpy_keyword_gpugrad_lacks_is_a_type_error_naming_it(call, word):
    with pytest.raises(TypeError, match=word):
        call(gg.tensor(M))


def test_dtype_casts_the_inputs_first():
    x = gg.tensor(M)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.exp(x, dtype=np.float32))
    assert y.dtype == np.float32 and tape.gradient(y, x).dtype == np.float64
    assert_like(np.add.reduce(x, dtype=np.float32), np.add.reduce(M, dtype=np.float32))
    assert_like(np.float_power(gg.tensor([2, 3]), 2), np.float_power(np.array([2, 3]), 2))


# ---------------------------------------------------------------- NumPy functions gpugrad has no op for


def _dispatched(module):
    return [v for k, v in sorted(vars(module).items()) if not k.startswith("_") and hasattr(v, "_implementation")]


UNSUPPORTED = [f for module in (np, np.linalg, np.fft, np.emath) for f in _dispatched(module) if f not in FUNCTIONS]


def _name(func):
    module = func.__module__
    return f"{'numpy' if module.startswith(('numpy._core', 'numpy.lib')) else module}.{func.__name__}"


@pytest.mark.parametrize("func", UNSUPPORTED, ids=_name)
def test_every_other_numpy_function_is_a_type_error_naming_it(func):
    t = gg.tensor(M)
    for n in range(1, 5):  # as many tensors as the dispatcher needs to see one
        try:
            func(*[t] * n)
        except TypeError as exc:  # NumPy's own, where the dispatcher found no tensor among n arguments
            if _name(func) in str(exc):
                assert "np.asarray(t)" in str(exc)
                return
        else:
            pytest.fail(f"{_name(func)} on tensors gave a result")
    pytest.fail(f"{_name(func)}: no call with tensors reached the dispatch")


OTHER_UFUNCS = sorted({v for v in vars(np).values() if isinstance(v, np.ufunc) and v not in UFUNCS},
                      key=lambda u: u.__name__)


@pytest.mark.parametrize("ufunc", OTHER_UFUNCS, ids=lambda u: u.__name__)
def test_every_other_ufunc_is_a_type_error_naming_it(ufunc):
    with pytest.raises(TypeError, match=rf"numpy\.{ufunc.__name__} has no gpugrad op.*np\.asarray\(t\)"):
        ufunc(*[gg.tensor(M)] * ufunc.nin)


def test_the_ufunc_methods_without_a_gpugrad_op_are_type_errors():
    t = gg.tensor(M)
    for call, name in [(lambda: np.subtract.reduce(t), "numpy.subtract.reduce"),
                       (lambda: np.maximum.accumulate(t), "numpy.maximum.accumulate"),
                       (lambda: np.add.reduceat(t, [0, 1]), "numpy.add.reduceat")]:
        with pytest.raises(TypeError, match=name.replace(".", r"\.")):
            call()
    with pytest.raises(TypeError, match="in place.*immutable"):
        np.add.at(t, [0], 1.0)


def test_a_refusal_names_the_nearest_gpugrad_call():
    with pytest.raises(TypeError, match=r"numpy\.divmod has no gpugrad op.*gg\.floor_divide"):
        np.divmod(gg.tensor(M), 2.0)
    with pytest.raises(TypeError, match=r"numpy\.nanmax has no gpugrad op.*gg\.max"):
        np.nanmax(gg.tensor(M))
    with pytest.raises(TypeError, match=r"numpy\.fft\.fft has no gpugrad op"):
        np.fft.fft(gg.tensor(M))


# ---------------------------------------------------------------- the explicit ways out still work


def test_asarray_array_and_numbers_still_convert():
    t = gg.tensor(M)
    assert type(np.asarray(t)) is np.ndarray and not np.asarray(t).flags.writeable
    assert type(np.array(t)) is np.ndarray and np.array(t).flags.writeable
    np.testing.assert_array_equal(np.asarray(t), M)
    assert float(gg.tensor(2.5)) == 2.5 and np.float64(gg.tensor(2.5)) == 2.5
    np.testing.assert_allclose(np.exp(t.numpy()), np.exp(M))  # an ndarray stays NumPy's own


# ---------------------------------------------------------------- ndarray's methods


def test_methods_take_numpys_arguments():
    x, a = gg.tensor(M), M
    for got, want in [(x.clip(max=0.5), a.clip(max=0.5)), (x.clip(0.3, 0.6), a.clip(0.3, 0.6)),
                      (x.clip(min=0.4), a.clip(min=0.4)), (x.flatten(), a.flatten()), (x.ravel("C"), a.ravel("C")),
                      (x.reshape(2, 6), a.reshape(2, 6)), (x.reshape((6, 2)), a.reshape((6, 2))),
                      (x.transpose(1, 0), a.transpose(1, 0)), (x.dot(N), a.dot(N)), (x.round(1), a.round(1)),
                      (x.trace(1), a.trace(1)), (x.cumsum(1), a.cumsum(1)), (x.cumprod(axis=0), a.cumprod(axis=0)),
                      (x.take([0, 2], axis=1), a.take([0, 2], axis=1)), (x.repeat(2), a.repeat(2)),
                      (x.diagonal(), a.diagonal()), (x.swapaxes(0, 1), a.swapaxes(0, 1)),
                      (x.astype(np.float32), a.astype(np.float32)), (x.conj(), a.conj()),
                      (x.conjugate(), a.conjugate()), (x.real, a.real), (x.imag, a.imag), (x.copy(), a.copy()),
                      (x.argsort(axis=0), a.argsort(axis=0)), (x.any(axis=0), a.any(axis=0)),
                      (x[None].squeeze(0), a[None].squeeze(0)), (x.nonzero(), a.nonzero()),
                      (x.sum(axis=1), a.sum(axis=1)), (x.std(ddof=1), a.std(ddof=1)), (x.to_device("cpu"), a)]:
        assert_like(got, want)
    assert x.item(1) == a.item(1) and x.item(1, 2) == a.item(1, 2) and x.tolist() == a.tolist()


def test_methods_are_differentiable():
    x = gg.tensor(M)
    check(lambda t: (t.clip(max=0.6).dot(N) ** 2).sum() + t.flatten().cumsum().sum() + t.take([1, 5]).sum(),
          [x], delta=1e-6, tol=1e-5)


@pytest.mark.parametrize("name, args", [("sort", ()), ("partition", (1,)), ("fill", (0.0,)), ("put", ([0], [1.0])),
                                        ("resize", ((2, 6),)), ("itemset", (0, 1.0)), ("setflags", (True,))])
def test_methods_that_work_in_place_are_refused(name, args):
    x = gg.tensor(M)
    with pytest.raises(TypeError, match=rf"Tensor\.{name}\(\).*in place.*immutable"):
        getattr(x, name)(*args)
    np.testing.assert_array_equal(x.numpy(), M)


def test_a_dtype_in_keepdims_place_is_a_type_error():
    with pytest.raises(TypeError, match=r"keepdims.*dtype="):
        gg.tensor(M).sum(0, np.float64)


# ---------------------------------------------------------------- inside gg.function


def test_a_traced_function_of_numpy_calls_replays_the_eager_numbers():
    def f(x, y):
        return np.sum(np.exp(x) * np.tanh(np.dot(x, y)).sum(axis=1, keepdims=True)) + np.linalg.norm(
            np.concatenate([x, y.T]))

    traced = gg.function(f)
    traced(gg.tensor(M), gg.tensor(N))  # traces
    for seed in (1, 2):
        x, y = gg.tensor(distinct((3, 4), seed=seed + 10)), gg.tensor(distinct((4, 3), seed=seed + 20))
        np.testing.assert_array_equal(traced(x, y).numpy(), f(x, y).numpy())


# ---------------------------------------------------------------- HIPS autograd's workflow


def test_a_function_written_against_numpy_is_differentiated_by_passing_tensors():
    def loss(w, x):  # plain NumPy: no gpugrad name inside
        return np.mean(np.log1p(np.exp(-np.dot(x, w))))

    x = RNG.normal(size=(5, 3))
    w = gg.tensor(np.array([0.1, -0.2, 0.3]))
    g = gg.grad(loss)(w, x)
    s = 1 / (1 + np.exp(np.dot(x, w.numpy())))
    np.testing.assert_allclose(g.numpy(), -(x * s[:, None]).mean(axis=0), rtol=1e-12)
    assert isinstance(loss(w, x), gg.Tensor) and isinstance(loss(w.numpy(), x), np.floating)


# ---------------------------------------------------------------- on the GPU


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("case", [case for case in ALL_CASES if case.func in {
    np.exp, np.add, np.matmul, np.less, np.sum, np.dot, np.concatenate, np.where, np.clip, np.linalg.norm,
    np.cumsum, np.split, np.isclose, np.allclose, np.outer, np.maximum, np.add.accumulate}], ids=lambda c: c.id)
def test_results_and_gradients_stay_on_the_tensors_device(case, device):
    xs = tensors(case.inputs, device)
    got = case.fn(*xs)
    if case.plain:
        assert got == case.fn(*case.inputs)
        return
    for out in (got if isinstance(got, (list, tuple)) else [got]):
        assert out.device == xs[0].device
    assert_like(got, case.fn(*case.inputs))
    if case.grad:
        check(scalar_of(case, len(xs)), xs, delta=1e-6, tol=1e-5)



MIXED_CASES = [case for case in ALL_CASES if len(case.inputs) > 1 and not case.plain]


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("case", MIXED_CASES, ids=[case.id for case in MIXED_CASES])
def test_an_ndarray_first_and_a_tensor_later_runs_on_the_tensors_device(case, device):
    """NumPy's arguments mixed: the ndarray goes to the tensor's device, not the default one."""
    first, *rest = case.inputs
    other = "cuda" if device == "cpu" else "cpu"  # the default device is the other one
    if other == "cuda" and "cuda:0" not in gg.devices():
        other = device
    with gg.device(other):
        later = tensors(rest, device)
        got = case.fn(first, *later)
    for out in (got if isinstance(got, (list, tuple)) else [got]):
        assert out.device == later[0].device
    assert_like(got, case.fn(*case.inputs))


@pytest.mark.gpu
@pytest.mark.skipif("cuda:0" not in gg.devices(), reason="no usable CUDA GPU on this machine (gg.devices() lists only "
                                                         "the CPU)")
@pytest.mark.parametrize("fn", [
    lambda a, t: gg.clip(a, t, 3.0), lambda a, t: gg.einsum("ij,jk->ik", a, t), lambda a, t: gg.linalg.lstsq(a, t)[0],
    lambda a, t: gg.take(a, gg.argmax(t, axis=0)), lambda a, t: gg.take_along_axis(a, gg.argsort(t, axis=0), 0),
    lambda a, t: gg.average(a, axis=0, weights=t), lambda a, t: gg.trapezoid(a, t), lambda a, t: gg.diff(a, prepend=t),
    lambda a, t: gg.searchsorted(np.sort(a[0]), t), lambda a, t: gg.quantile(a, t[0, :1] * 0.1),
    lambda a, t: t > a, lambda a, t: t == a,
], ids=["clip", "einsum", "lstsq", "take", "take_along_axis", "average", "trapezoid", "diff", "searchsorted", "quantile",
        "greater", "equal"])
def test_a_gpugrad_op_puts_an_ndarray_operand_on_the_tensors_device(fn):
    """An ndarray before a GPU tensor among an op's operands goes to that GPU (it went to the default device:
    a DeviceError, a CuPy TypeError, or a result on the CPU)."""
    a = distinct((2, 2), 0.5, 2.0, seed=30)
    t = gg.tensor(distinct((2, 2), 0.5, 2.0, seed=31), device="cuda")
    with gg.device("cpu"):
        got = fn(a, t)
    assert got.device == t.device
    np.testing.assert_allclose(got.numpy(), fn(a, gg.tensor(t.numpy())).numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(n for n, m in METHODS.items() if callable(m)))
def test_every_ndarray_method_docstring_has_an_example_that_runs(name):
    """The methods are made in a table (closures doctest does not find): their examples run here."""
    doc = METHODS[name].__doc__
    assert "Example:" in doc, name
    test = doctest.DocTestParser().get_doctest(doc, {}, f"Tensor.{name}", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries > 0, name
