"""dtypes as NumPy 2 gives them: Python scalars are weak (NEP 50), structure ops keep their input's dtype.

The oracle is NumPy itself on the same arrays. The contract's deviations, each named where it is
tested: a Python float next to a bool or integer tensor gives float32 (gpugrad's default float, as
PyTorch and JAX; NumPy gives float64), and ``where`` raises OverflowError for an int out of the
tensor's bounds (as every NumPy ufunc does; ``np.where`` wraps it silently).
"""
import warnings

import numpy as np
import pytest

import gpugrad as gg

from .conftest import HAVE_ML_DTYPES

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64"]
SCALARS = [True, 2, 2.5, -1, 1000, 2 ** 40, 2 ** 70]
COND = np.array([True, False, True])

BINARY = {  # name: (gpugrad, NumPy), each f(tensor_or_array, python_scalar)
    "add": (gg.add, np.add), "subtract": (gg.subtract, np.subtract), "multiply": (gg.multiply, np.multiply),
    "divide": (gg.divide, np.divide), "power": (gg.power, np.power),
    "maximum": (gg.maximum, np.maximum), "minimum": (gg.minimum, np.minimum),
    "arctan2": (gg.arctan2, np.arctan2), "hypot": (gg.hypot, np.hypot), "fmod": (gg.fmod, np.fmod),
    "remainder": (gg.remainder, np.remainder), "fmax": (gg.fmax, np.fmax), "fmin": (gg.fmin, np.fmin),
    "logaddexp": (gg.logaddexp, np.logaddexp), "logaddexp2": (gg.logaddexp2, np.logaddexp2),
    "logical_and": (gg.logical_and, np.logical_and), "logical_xor": (gg.logical_xor, np.logical_xor),
    "+": (lambda a, s: a + s, np.add), "r+": (lambda a, s: s + a, lambda a, s: np.add(s, a)),
    "r-": (lambda a, s: s - a, lambda a, s: np.subtract(s, a)), "*": (lambda a, s: a * s, np.multiply),
    "r/": (lambda a, s: s / a, lambda a, s: np.divide(s, a)), "**": (lambda a, s: a ** s, np.power),
    "r**": (lambda a, s: s ** a, lambda a, s: np.power(s, a)), "%": (lambda a, s: a % s, np.remainder),
    "<": (lambda a, s: a < s, np.less), "==": (lambda a, s: a == s, np.equal),
    "where": (lambda a, s: gg.where(COND, a, s), lambda a, s: np.where(COND, a, s)),
    "rwhere": (lambda a, s: gg.where(COND, s, a), lambda a, s: np.where(COND, s, a)),
    "clip_lo": (lambda a, s: gg.clip(a, s, None), lambda a, s: np.clip(a, s, None)),
    "clip_hi": (lambda a, s: gg.clip(a, None, s), lambda a, s: np.clip(a, None, s)),
}


def _numpy(fn, a, s):
    """NumPy's result, or the exception class it raises."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(a, s)
        except (OverflowError, TypeError, ValueError) as e:
            return type(e)


def _expected_dtype(a, s, numpy_dtype):
    """NumPy 2's dtype, with the contract's one deviation: a Python float next to bool or int is float32."""
    if s.__class__ is float and a.dtype.kind in "biu" and numpy_dtype == np.float64:
        return np.dtype(np.float32)
    return numpy_dtype


def _check(name, dt, s, device):
    ours, theirs = BINARY[name]
    a = np.array([1, 0, 3]).astype(dt)
    expected = _numpy(theirs, a, s)
    x = gg.tensor(a, device=device)
    wraps = name in ("where", "rwhere") and s.__class__ is int and a.dtype.kind in "iu" \
        and not np.iinfo(a.dtype).min <= s <= np.iinfo(a.dtype).max  # np.where wraps it silently; we refuse
    if expected is OverflowError or wraps:
        with pytest.raises(OverflowError, match="out of bounds|too large"):
            ours(x, s)
        return
    if isinstance(expected, type):  # NumPy refuses (bool - bool, int ** -1): so do we, with our own error
        with pytest.raises((TypeError, ValueError)):
            ours(x, s)
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = ours(x, s)
    want = _expected_dtype(a, s, expected.dtype)
    assert got.dtype == want, f"{name}({dt}, {s!r}) is {got.dtype}; NumPy 2 gives {expected.dtype}"
    np.testing.assert_allclose(got.numpy().astype(np.float64), expected.astype(np.float64),
                               rtol=1e-6 if want != expected.dtype else 0, equal_nan=True)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(BINARY))
def test_python_scalar_is_weak_as_in_numpy_2(name, dt):
    for s in SCALARS:
        _check(name, dt, s, "cpu")


@pytest.mark.parametrize("name", ["multiply", "r-", "divide", "arctan2", "where", "maximum"])
def test_python_scalar_is_weak_on_the_cupy_path(stand_in_gpu, name):
    for dt in DTYPES:
        for s in SCALARS:
            _check(name, dt, s, stand_in_gpu)


def test_the_contract_examples():
    """DESIGN.md: an int32 tensor times 2 stays int32; a float16 tensor times 2.5 stays float16."""
    assert (gg.tensor(np.int32([1, 2])) * 2).dtype == np.int32
    assert (gg.tensor(np.float16([1, 2])) * 2.5).dtype == np.float16
    assert (gg.tensor([True]) * 2).dtype == np.int64  # NumPy's default int
    assert (gg.tensor(np.int64([1])) * 2.5).dtype == np.float32  # the default float (NumPy: float64)
    assert gg.tensor(2).dtype == np.int64 and gg.tensor(2.5).dtype == np.float32  # a Python number alone
    with pytest.raises(OverflowError, match="'Mul'.*1000 out of bounds for int8"):
        gg.tensor(np.int8([1])) * 1000


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs the optional ml_dtypes")
@pytest.mark.parametrize("s", [True, 2, 2.5, -1, 1000])
def test_python_scalar_is_weak_next_to_bfloat16(s):
    a = np.array([1, 0, 3]).astype(gg.bfloat16)
    for name in ["add", "multiply", "divide", "maximum", "*", "r-"]:
        ours, theirs = BINARY[name]
        got, want = ours(gg.tensor(a), s), theirs(a, s)
        assert got.dtype == want.dtype == a.dtype
        np.testing.assert_array_equal(got.numpy().astype(np.float64), want.astype(np.float64))


# ---------------------------------------------------------------- structure ops keep their input's dtype

M = np.array([[1, 0, 3], [0, 2, 5], [4, 0, 1]])
IDX = np.array([2, 0, 1])
STRUCTURE = {  # name: f(module, a), called with (np, ndarray) and (gg, Tensor)
    "tril": lambda m, a: m.tril(a), "triu": lambda m, a: m.triu(a, 1), "tril_1d": lambda m, a: m.tril(a[0], -1),
    "diag": lambda m, a: m.diag(a), "diag_1d": lambda m, a: m.diag(a[0], 1), "diagonal": lambda m, a: m.diagonal(a),
    "trace": lambda m, a: m.trace(a), "flip": lambda m, a: m.flip(a, 0), "fliplr": lambda m, a: m.fliplr(a),
    "flipud": lambda m, a: m.flipud(a), "rot90": lambda m, a: m.rot90(a), "roll": lambda m, a: m.roll(a, 1, 0),
    "pad": lambda m, a: m.pad(a, 1),
    "concat": lambda m, a: (m.concat if m is gg else np.concatenate)([a, a]),
    "stack": lambda m, a: m.stack([a, a]), "hstack": lambda m, a: m.hstack([a, a]),
    "vstack": lambda m, a: m.vstack([a, a]), "dstack": lambda m, a: m.dstack([a, a]),
    "column_stack": lambda m, a: m.column_stack([a[0], a[1]]), "append": lambda m, a: m.append(a, a),
    "where": lambda m, a: m.where(M > 1, a, a[::-1]), "cumsum": lambda m, a: m.cumsum(a, 0),
    "cumprod": lambda m, a: m.cumprod(a, 0), "sort": lambda m, a: m.sort(a, 0),
    "partition": lambda m, a: m.partition(a, 1, 0), "take": lambda m, a: m.take(a, IDX),
    "take_along_axis": lambda m, a: m.take_along_axis(a, np.argsort(M, 0), 0),
    "repeat": lambda m, a: m.repeat(a, 2, 0), "tile": lambda m, a: m.tile(a, 2),
    "reshape": lambda m, a: m.reshape(a, (9,)), "transpose": lambda m, a: m.transpose(a),
    "ravel": lambda m, a: m.ravel(a), "moveaxis": lambda m, a: m.moveaxis(a, 0, 1),
    "swapaxes": lambda m, a: m.swapaxes(a, 0, 1), "expand_dims": lambda m, a: m.expand_dims(a, 0),
    "squeeze": lambda m, a: m.squeeze(a[None]), "broadcast_to": lambda m, a: m.broadcast_to(a, (2, 3, 3)),
    "atleast_3d": lambda m, a: m.atleast_3d(a), "split": lambda m, a: m.split(a, 3)[0],
    "getitem": lambda m, a: a[1:, IDX[:2]], "copy": lambda m, a: m.copy(a),
    "max": lambda m, a: m.max(a, 0), "min": lambda m, a: m.min(a), "sum": lambda m, a: m.sum(a, 0),
    "prod": lambda m, a: m.prod(a, 0), "diff": lambda m, a: m.diff(a, axis=0), "diff_2": lambda m, a: m.diff(a, 2),
    "maximum": lambda m, a: m.maximum(a, a.T), "abs": lambda m, a: m.abs(a), "square": lambda m, a: m.square(a),
    "kron": lambda m, a: m.kron(a, a), "outer": lambda m, a: m.outer(a[0], a[1]),
    "matmul": lambda m, a: m.matmul(a, a), "dot": lambda m, a: m.dot(a, a),
    "nan_to_num": lambda m, a: m.nan_to_num(a), "round": lambda m, a: m.round(a), "floor": lambda m, a: m.floor(a),
}


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", list(STRUCTURE))
def test_structure_ops_give_numpys_dtype(name, dt):
    a = M.astype(dt)
    want = _numpy(lambda a, _: np.asarray(STRUCTURE[name](np, a)), a, None)
    if isinstance(want, type):  # NumPy refuses (bool - bool in diff of ints is fine; ptp of bool is not)
        with pytest.raises((TypeError, ValueError)):
            STRUCTURE[name](gg, gg.tensor(a))
        return
    got = STRUCTURE[name](gg, gg.tensor(a))
    assert got.dtype == want.dtype, f"{name} of {dt} is {got.dtype}; NumPy gives {want.dtype}"
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.skipif(not HAVE_ML_DTYPES, reason="bfloat16 needs the optional ml_dtypes")
@pytest.mark.parametrize("name", ["tril", "triu", "tril_1d", "diag_1d", "pad", "where", "flip"])
def test_structure_ops_keep_bfloat16(name):
    a = M.astype(gg.bfloat16)
    got, want = STRUCTURE[name](gg, gg.tensor(a)), np.asarray(STRUCTURE[name](np, a))
    assert got.dtype == want.dtype == a.dtype
    np.testing.assert_array_equal(got.numpy().astype(np.float64), want.astype(np.float64))
