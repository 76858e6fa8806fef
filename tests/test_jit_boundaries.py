"""gg.function(jit_compile=True) at its boundaries: every input the unfused replay takes gives eager's result
within the bound of :mod:`gpugrad._tracing.fusion.bound` (and the unfused replay eager's bits): 0-d, empty (size
0 on any axis), one element, sizes each side of the CPU thresholds (``regions.LARGE``, ``cpu.PARALLEL``) on 1 to
3 threads, views (slices, transposes, negative strides, ``broadcast_to``, reshapes of non-contiguous arrays),
every dtype (the unfused ones too) and mixed dtypes, Python scalars and 0-d tensors as operands, NaN, infinities,
-0.0 and denormals, returned intermediates and aliases, Variables assigned between fused ops, tapes inside,
retraces, threads, exceptions, nesting, ``jit_compile``'s values (``tf.function``'s: True, False, None), the
diagnostics and the warning without numba; then the stand-in GPU's generated kernels, float16 included.

A case is ``(id, fn, calls, ulps)``: ``calls`` makes each call's arguments (the later ones with other values, so
a value baked into a kernel shows), ``ulps`` the allowance per element of each output (0: eager's bits, signs of
zeros too); an output named in ``SUMS`` is a sum held to ``bound.sum_tolerance`` of the terms the case returns.
"""
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tracing import fusion
from gpugrad._tracing.fusion import bound, cpu, regions

needs_numba = pytest.mark.skipif(not fusion.cpu.available(),
                                 reason="the gpugrad[jit] extra (numba) compiles the CPU regions: pip install 'gpugrad[jit]'")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("GPUGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "gpugrad-cache"))


def _leaves(r):
    if isinstance(r, (list, tuple)):
        return [y for x in r for y in _leaves(x)]
    if isinstance(r, dict):
        return [y for k in sorted(r) for y in _leaves(r[k])]
    return [r]


def _array(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def _within(got, want, ulps, what, tol=None):
    """``got`` is ``want`` (eager's) within ``ulps`` per element (or the absolute ``tol``): shape, dtype, NaN,
    infinities and (exact ops) the sign of zeros as eager's."""
    got, want = _array(got), _array(want)
    assert (got.shape, got.dtype) == (want.shape, want.dtype), what
    if want.dtype.kind not in "fc" and want.dtype.name != "bfloat16":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, w = got.astype(np.complex128 if want.dtype.kind == "c" else np.float64), \
        want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaN where eager has none or not")
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
    finite = np.isfinite(w)
    if tol is not None:
        assert np.all(np.abs(g[finite] - w[finite]) <= tol), (what, g, w, tol)
    elif ulps == 0:
        np.testing.assert_array_equal(g[finite], w[finite], err_msg=f"{what}: not eager's bits")
        if want.dtype.kind == "f":
            np.testing.assert_array_equal(np.signbit(g[finite]), np.signbit(w[finite]), err_msg=f"{what}: zero signs")
    else:
        spacing = np.spacing(np.abs(want[finite]).astype(np.float64 if want.dtype.kind == "c" else want.dtype))
        assert np.all(np.abs(g[finite] - w[finite]) <= ulps * np.abs(spacing).astype(np.float64)), \
            (what, g[finite], w[finite])


def _compare(fn, calls, ulps, sums=None):
    """Each call's arguments through eager ``fn``, ``gg.function(fn)`` and ``gg.function(fn, jit_compile=True)``
    (each function called twice per call); returns the jit function."""
    unfused, jit = gg.function(fn), gg.function(fn, jit_compile=True)
    for k, make in enumerate(calls):
        eager = _leaves(fn(*make()))
        for name, f in (("unfused", unfused), ("jit", jit)):
            for repeat in range(2):
                got = _leaves(f(*make()))
                assert len(got) == len(eager)
                for i, (g, e) in enumerate(zip(got, eager)):
                    what = f"{name} call {k}.{repeat} output {i}"
                    if name == "unfused":
                        _within(g, e, 0, what)
                    elif sums and i in sums:
                        terms = _array(eager[sums[i]])
                        _within(g, e, None, what, tol=bound.sum_tolerance(terms) if terms.size else 0.0)
                    else:
                        _within(g, e, ulps, what)
    return jit


def _fused(f):
    """The fused regions of ``f``'s traces (``ops`` each)."""
    return [r["ops"] for trace in f._traces.values() if trace.plan is not None
            for r in trace.plan.stats.get("fusion", {}).get("regions", [])]


rng = np.random.default_rng(29)


def _rand(*shape, dtype=np.float32):
    return rng.uniform(-2.0, 2.0, shape).astype(dtype)


def _tensor_calls(*arrays_per_call):
    return [lambda arrays=arrays: tuple(gg.tensor(a) for a in arrays) for arrays in arrays_per_call]


# --------------------------------------------------------------------------- shapes: 0-d, empty, one element

def _arith(x):
    return (x * 2.0 - 1.0) * x


def _transcendental(x):
    return gg.tanh(x * 2.0) * 3.0  # tanh's 4 ulp, times 3 rounded: within 8 ulp of eager's product


def _sum(x):
    y = gg.square(x * 0.5) - x
    return gg.sum(y), y


def _max(x):
    return gg.max(gg.square(x * 0.5) - x)


CHAINS = [("arith", _arith, 0, None), ("transcendental", _transcendental, 8, None), ("sum", _sum, 0, {0: 1}),
          ("max", _max, 0, None)]
SHAPES = [(), (0,), (3, 0), (0, 4), (1,), (1, 1), (5,), (2, 3)]


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name,fn,ulps,sums", CHAINS, ids=[c[0] for c in CHAINS])
def test_shapes_zero_d_empty_and_one_element(name, fn, ulps, sums, shape, dtype):
    if fn is _max and 0 in shape:
        with pytest.raises(ValueError):  # eager's error (no identity), traced or fused alike
            gg.function(fn, jit_compile=True)(gg.tensor(np.zeros(shape, dtype)))
        return
    _compare(fn, _tensor_calls([_rand(*shape, dtype=dtype)], [_rand(*shape, dtype=dtype)]), ulps, sums)


# --------------------------------------------------------------------------- sizes about the CPU thresholds

SIZES = sorted({regions.LARGE - 1, regions.LARGE, regions.LARGE + 1, cpu.PARALLEL - 1, cpu.PARALLEL,
                cpu.PARALLEL + 1, 3 * cpu.PARALLEL + 7})


@needs_numba
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("n", SIZES)
def test_sizes_about_the_large_and_parallel_thresholds(n, threads):
    before = gg.get_num_threads()
    gg.set_num_threads(threads)
    try:
        x = [_rand(n)], [_rand(n)]
        for name, fn, ulps, sums in CHAINS:
            f = _compare(fn, _tensor_calls(*x), ulps, sums)
            # every chain fuses at every size (from LARGE elements tanh is NumPy's loop, per block of the region)
            (ops,) = _fused(f)
            assert ops == 3 if fn is _transcendental else ops >= 2, name
    finally:
        gg.set_num_threads(before)


@needs_numba
def test_a_split_sum_is_the_same_on_every_call_and_thread_count():
    x = gg.tensor(_rand(3 * cpu.PARALLEL + 7))
    before = gg.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            gg.set_num_threads(threads)
            f = gg.function(lambda x: gg.sum(gg.square(x * 0.5) - x), jit_compile=True)
            f(x)  # the call that traces returns the trace's (eager) values; the replays the fused ones
            results.append([f(x).numpy() for _ in range(3)])
    finally:
        gg.set_num_threads(before)
    for per_threads in results:
        assert len({r.tobytes() for r in per_threads}) == 1  # chunks combined in order: no timing in the result


@needs_numba
def test_thread_count_changed_after_the_trace():
    """A region split across 3 threads at its trace runs after gg.set_num_threads(1) (the pool is gone: its chunks
    in turn) and after other counts, with the same bits."""
    before = gg.get_num_threads()
    x = gg.tensor(_rand(3 * cpu.PARALLEL + 7))
    fn = lambda x: (gg.sum(gg.square(x * 0.5) - x), gg.square(x * 0.5) - x)  # noqa: E731
    try:
        gg.set_num_threads(3)
        f = gg.function(fn, jit_compile=True)
        f(x)
        first = [o.numpy() for o in f(x)]
        for threads in (1, 2, 4, 1):
            gg.set_num_threads(threads)
            for g, e in zip(f(x), first):
                assert g.numpy().tobytes() == e.tobytes(), threads
    finally:
        gg.set_num_threads(before)
    _within(first[1], fn(x)[1], 0, "the terms")
    _within(first[0], fn(x)[0], None, "the sum", tol=bound.sum_tolerance(first[1]))


# --------------------------------------------------------------------------- views

VIEWS = [("slice", lambda t: t[::2, 1:]), ("transpose", lambda t: gg.transpose(t)), ("negative rows", lambda t: t[::-1]),
         ("negative columns", lambda t: t[:, ::-1]), ("reshape of a transpose", lambda t: gg.reshape(gg.transpose(t), (-1,))),
         ("broadcast_to", lambda t: gg.broadcast_to(t[:1], (6, 8))), ("column", lambda t: t[:, 3:4])]


@needs_numba
@pytest.mark.parametrize("name,view", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_inside_the_function(name, view):
    calls = _tensor_calls([_rand(6, 8)], [_rand(6, 8)])
    _compare(lambda t: gg.exp(view(t) * 2.0) * view(t), calls, 10)  # exp's 4 ulp, relative, through a product
    _compare(lambda t: view(t * 2.0 + 1.0) * 3.0 + 1.0, calls, 0)  # a view into a fused value
    _compare(lambda t: (gg.sum(view(t) * 2.0 - 1.0), view(t) * 2.0 - 1.0), calls, 0, {0: 1})


@needs_numba
@pytest.mark.parametrize("name,make", [("slice", lambda a: a[::2, 1:]), ("transpose", lambda a: a.T),
                                       ("negative strides", lambda a: a[::-1, ::-1]),
                                       ("broadcast", lambda a: np.broadcast_to(a[:1], a.shape))], ids=str)
def test_views_given_as_arguments(name, make):
    calls = _tensor_calls([make(_rand(6, 8))], [make(_rand(6, 8))])
    _compare(_arith, calls, 0)
    _compare(_transcendental, calls, 8)


NUMPY_VIEWS = [("contiguous", lambda a: a), ("slice", lambda a: a[::2, 1:]), ("transpose", lambda a: a.T),
               ("negative rows", lambda a: a[::-1]), ("negative columns", lambda a: a[:, ::-2]),
               ("broadcast", lambda a: np.broadcast_to(a[:1], a.shape))]


@needs_numba
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name,make", NUMPY_VIEWS, ids=[v[0] for v in NUMPY_VIEWS])
def test_numpy_views_given_as_arguments(name, make, jit):
    """A NumPy argument is fed by value in any layout (a strided view too: its buffer is laid out as it is), and
    the trace's ops on it and on its views replay, as ``tf.function`` takes any ndarray."""
    fn = lambda a: (gg.multiply(a, 2.0) + 1.0, gg.multiply(a[1:], 3.0) - 1.0, gg.sum(gg.multiply(a, 0.5)))  # noqa: E731
    f = gg.function(fn, jit_compile=jit)
    for data in (_rand(6, 8), _rand(6, 8), _rand(6, 8)):
        a = make(data)
        got, eager = f(a), fn(a)
        _within(got[0], eager[0], 0, name)
        _within(got[1], eager[1], 0, name)
        _within(got[2], eager[2], 0 if not jit else None, name,
                tol=bound.sum_tolerance(a * np.float32(0.5)) if jit else None)
    assert f.trace_count == 1


# --------------------------------------------------------------------------- dtypes

def _bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs the bfloat16 extra (ml_dtypes)")
    return ml_dtypes.bfloat16


@needs_numba
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int32", "int64", "complex64", "float32", "float64"])
def test_every_dtype_gives_eager_result(dtype):
    dtype = _bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    scale = (1 + 1j) if np.dtype(dtype).kind == "c" else 1
    a, b = [(rng.uniform(-3, 3, 7) * scale).astype(dtype) for _ in range(2)]
    calls = _tensor_calls([a, b], [b, a])
    _compare(lambda x, y: (x * y + x) - y, calls, 0)
    if np.dtype(dtype).kind in "fcV" or dtype is not np.dtype(dtype):
        _compare(lambda x, y: gg.exp(x * 0.5) * 2.0 * y, calls, 10)


@needs_numba
def test_bool_and_mixed_dtypes_with_casts():
    a, b = rng.uniform(-3, 3, 7) > 0, rng.uniform(-3, 3, 7) > 0
    _compare(lambda x, y: gg.logical_and(x, y), _tensor_calls([a, b]), 0)
    x32, x64 = _rand(7), _rand(7, dtype=np.float64)
    _compare(lambda x, y: (x * 2.0 + y) * x, _tensor_calls([x32, x64]), 0)
    _compare(lambda x: gg.cast(x * 2.0, gg.float64) + 1.0, _tensor_calls([x32]), 0)
    _compare(lambda x: gg.cast(gg.exp(x * 2.0), gg.float16) * 2.0, _tensor_calls([x32]), 1)  # 4 ulp of f32 < 1 of f16
    _compare(lambda x: gg.cast(x * 3.0 - 1.0, gg.int32) * 2, _tensor_calls([x32 * 10]), 0)


# --------------------------------------------------------------------------- operands: numbers, 0-d arrays, variables

@needs_numba
@pytest.mark.parametrize("kind", ["python float", "python int", "numpy scalar", "0-d tensor", "0-d numpy array",
                                  "one-element tensor"])
def test_scalar_operands_are_read_each_call(kind):
    make = {"python float": float, "python int": int, "numpy scalar": np.float32,
            "0-d tensor": lambda v: gg.tensor(np.float32(v)), "0-d numpy array": lambda v: np.asarray(v, np.float32),
            "one-element tensor": lambda v: gg.tensor(np.array([v], np.float32))}[kind]
    x = _rand(6)
    f = _compare(lambda x, s: (x * s + 1.0) * s, [lambda: (gg.tensor(x), make(2)), lambda: (gg.tensor(x), make(-3))], 0)
    if kind in ("0-d tensor", "0-d numpy array", "one-element tensor"):
        assert f.trace_count == 1  # fed as data: one trace, so a baked value would show in the second call


SCALARS = [0.0, -0.0, np.nan, np.inf, -np.inf, 0, False, 1e-45, 3.4e38]


@needs_numba
@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_every_python_number_is_a_constant_of_the_region(value):
    """x + 0.0, x * nan and the others are constants of the region, as x + 0.5 is (their signs and NaN kept):
    the op fuses rather than ending the region as a call step."""
    x = np.array([0.0, -0.0, 1.0, -1.0, np.inf, np.nan, 1e-45], np.float32)
    with np.errstate(all="ignore"):
        for fn in (lambda x: (x * 1.0 - value) * 2.0, lambda x: (x * 1.0 + value) * 2.0,
                   lambda x: (x * value) * 2.0 - 1.0):
            f = _compare(fn, _tensor_calls([x], [x[::-1].copy()]), 0)
            assert _fused(f) == [3], f.diagnostics()


@pytest.mark.parametrize("value", [2.5, 0.0, -0.0, np.nan], ids=repr)
def test_numpy_and_python_scalars_keep_their_own_dtype(value):
    """NumPy's rule (NEP 50), whatever came before: a Python float takes the tensor's dtype, an np.float64 makes a
    float64 (they are equal numbers: the cached constants tell them apart by type); eager, traced and fused."""
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    fn = lambda x, s: (x * s + 1.0) * 2.0  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the one "numba is not installed" warning, without numba
        for f in (fn, gg.function(fn), gg.function(fn, jit_compile=True)):
            for s in (np.float64(value), value, np.float64(value), value):
                want = (x * s + 1.0) * 2.0  # NumPy's result, dtype and value
                with np.errstate(invalid="ignore"):
                    _within(f(gg.tensor(x), s), want, 0, f"{f} with {type(s).__name__}")


@needs_numba
@pytest.mark.parametrize("alpha", [-0.0, 0.0, np.nan, 0.1], ids=repr)
def test_a_param_keeps_its_sign_and_nan(alpha):
    x = np.array([0.0, -0.0, 1.0, -1.0, -2.0], np.float32)
    fn = lambda x: gg.raw_ops.leaky_relu_grad(x * 1.0, x * 2.0, alpha=alpha) * 3.0  # noqa: E731
    with np.errstate(all="ignore"):
        f = _compare(fn, _tensor_calls([x]), 0)
    assert _fused(f) == [4]


@needs_numba
def test_a_zero_d_variable_assigned_between_calls_is_read_each_call():
    v = gg.Variable(np.float32(2.0))
    x = _rand(6)

    def set_to(value):
        v.assign(np.float32(value))
        return (gg.tensor(x),)
    f = _compare(lambda x: (x * v + 1.0) * v, [lambda: set_to(2.0), lambda: set_to(-5.0)], 0)
    assert f.trace_count == 1 and _fused(f) == [3]


# --------------------------------------------------------------------------- special values

SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1e-40, 3.4e38, -1.0, 1.0, 7.0, -2.5],
                   np.float32)


def _special(dtype):
    a = SPECIAL.astype(dtype)
    if dtype == np.float64:
        a[5:7] = [5e-324, -5e-324]  # the smallest denormals of the dtype
    return a


SPECIAL_CASES = [  # (id, fn, ulps or {sum output: its terms' output}, whether it fuses)
    ("arithmetic", lambda x, y: (x * 1.0 - 0.5) * x + y, 0),
    ("negation and zero signs", lambda x, y: -(x * 1.0) * y, 0),
    ("relu of -0.0", lambda x, y: gg.relu(x * 1.0) * 2.0, 0),
    ("maximum", lambda x, y: gg.maximum(x * 1.0, y) * 2.0, 0),
    ("minimum", lambda x, y: gg.minimum(x * 1.0, y) * 2.0, 0),
    ("where with NaN in the branch not taken", lambda x, y: gg.where(x > 0, gg.log(x * 1.0), x * 0.0) + 1.0, 4),
    ("division by zeros", lambda x, y: (x * 1.0) / (y * 0.0) + 1.0, 0),
    ("division by negative zeros", lambda x, y: (x * 1.0) / (y * -0.0) + 1.0, 0),
    ("abs and sqrt", lambda x, y: gg.sqrt(gg.abs(x * 1.0)) * gg.sqrt(y * 1.0), 0),
    ("denormals", lambda x, y: x * 1e-30 * 1e-8 + x * 0.5, 0),
    ("pow by one exponent 0.5", lambda x, y: (x * 1.0) ** 0.5 * 1.0, 4),
    ("pow by one exponent -1", lambda x, y: gg.power(x * 1.0, -1.0) * 1.0, 4),
    ("pow by one exponent 2", lambda x, y: gg.power(x * 1.0, 2.0) * 1.0, 4),
    ("pow by a 0-d tensor 0.5", lambda x, y: gg.power(x * 1.0, gg.tensor(np.asarray(0.5, x.dtype))) * 1.0, 4),
    ("pow elementwise", lambda x, y: gg.power(x * 1.0, y) * 1.0, 4),
    ("copysign", lambda x, y: gg.copysign(x * 1.0, y) * 1.0, 0),
    ("exp and log", lambda x, y: gg.exp(gg.log(gg.abs(x * 1.0)) * 0.5) * 2.0, 160),  # log's 4 ulp of 88 in exp
    ("sum", lambda x, y: (gg.sum(x * 1.0 * 2.0), x * 1.0 * 2.0), {0: 1}),
    ("max", lambda x, y: gg.max(x * 1.0 * 2.0), 0),
]
NOT_FUSED = {"maximum", "minimum"}  # ops with no expression: their eager kernels between regions


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ulps", SPECIAL_CASES, ids=[c[0] for c in SPECIAL_CASES])
def test_nan_inf_negative_zero_and_denormals(name, fn, ulps, dtype):
    x = _special(dtype)
    y = x[::-1].copy()
    with np.errstate(all="ignore"):
        if isinstance(ulps, dict):
            f = _compare(fn, _tensor_calls([x, y], [y, x]), 0, ulps)
        else:
            f = _compare(fn, _tensor_calls([x, y], [y, x]), ulps)
    assert bool(_fused(f)) != (name in NOT_FUSED), name


@needs_numba
@pytest.mark.parametrize("values", [[np.nan, 1.0, 2.0], [1.0, np.nan], [-np.inf, -np.inf], [-0.0, 0.0], [0.0, -0.0],
                                    [3e38, 3e38, -3e38]], ids=str)
def test_reductions_of_special_values(values):
    x = np.array(values, np.float32)
    with np.errstate(all="ignore"):
        for reduce, ulps, sums in ((gg.max, 0, None), (gg.sum, 0, {0: 1}), (gg.mean, 1, None)):
            f = _compare(lambda x: (reduce(x * 1.0 * 2.0), x * 1.0 * 2.0), _tensor_calls([x]), ulps, sums)
            assert _fused(f) == [5], reduce


@needs_numba
@pytest.mark.parametrize("values", [[3e38] * 5 + [-3e38] * 5, [3e38, 3e38, -3e38, -3e38], [2e38, 2e38, -1e38],
                                    [1e38, 1e38, 1e38], [3e38, -3e38, np.inf]], ids=str)
def test_a_float32_sum_past_the_largest_float32(values):
    """bound.may_overflow: where the terms' magnitudes add up past float32's largest finite value, the fused sum is
    the float64 total rounded (NumPy's float32 partial sums may overflow to inf or NaN); else as eager."""
    x = np.array(values, np.float32)
    def fn(x):
        y = x * 1.0 * 1.0
        return gg.sum(y), y
    f = gg.function(fn, jit_compile=True)
    with np.errstate(all="ignore"):
        f(gg.tensor(x))
        (total, terms), (eager, _) = f(gg.tensor(x)), fn(gg.tensor(x))
        if bound.may_overflow(x) and np.isfinite(x).all():
            assert total.numpy() == np.float32(np.sum(x.astype(np.float64)))
        else:
            _within(total, eager, None, "sum", tol=bound.sum_tolerance(x) if np.isfinite(x).all() else 0.0)
    assert _fused(f) == [3]


@needs_numba
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_floor_division_and_mod_by_zero(dtype):
    a, b = np.array([7, -7, 0, 5, -5, 3], dtype), np.array([2, 2, 0, 0, -3, -1], dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _compare(lambda x, y: gg.floor_divide(x * 1, y) + 1, _tensor_calls([a, b]), 0)
        _compare(lambda x, y: gg.mod(x * 1, y) + 1, _tensor_calls([a, b]), 0)


# --------------------------------------------------------------------------- what is returned

def _twice(x):
    y = x * 2.0 + 1.0
    return y, y, {"a": y, "b": gg.sum(y)}


def _view_of_intermediate(x):
    y = x * 2.0 + 1.0
    return y[1:], gg.reshape(y, (7, 1)), y * 3.0


RETURNS = [("intermediates", lambda x: (x * 2.0, x * 2.0 + 1.0, gg.exp(x * 2.0 + 1.0)), 4, None),
           ("a value twice and in a dict", _twice, 0, {3: 0}),  # (the dict's leaves: "a", then the sum "b")
           ("the input itself", lambda x: (x, x * 2.0 + 1.0, x), 0, None),
           ("views of an intermediate", _view_of_intermediate, 0, None)]


@needs_numba
@pytest.mark.parametrize("name,fn,ulps,sums", RETURNS, ids=[r[0] for r in RETURNS])
def test_returned_values(name, fn, ulps, sums):
    _compare(fn, _tensor_calls([_rand(7)], [_rand(7)]), ulps, sums)


@needs_numba
def test_a_result_is_the_callers_own():
    f = gg.function(lambda x: (x, x * 2.0 + 1.0), jit_compile=True)
    x = gg.tensor(_rand(7))
    first = f(x)
    kept = first[1].numpy().copy()
    f(gg.tensor(_rand(7)))
    assert np.array_equal(first[1].numpy(), kept)  # a later call writes its own buffers, not what it returned
    assert not np.shares_memory(first[0].numpy(), x.numpy())  # an input returned is a copy, as tf.function's


# --------------------------------------------------------------------------- state, tapes, retraces

@needs_numba
def test_variables_assigned_between_fused_ops():
    x = _rand(7)
    v, w = gg.Variable(_rand(7)), gg.Variable(_rand(7))
    start = v.numpy().copy(), w.numpy().copy()

    def fn(x):
        y = gg.exp(x * v) + 1.0
        v.assign_add(y * 0.5)
        w.assign(x * 2.0 + v)
        w.assign_sub(y)
        return y, (v * 2.0 - x) * w
    runs = []
    for f in (fn, gg.function(fn, jit_compile=True)):
        v.assign(start[0])
        w.assign(start[1])
        runs.append([[o.numpy() for o in f(gg.tensor(x))] + [v.numpy().copy(), w.numpy().copy()] for _ in range(3)])
    for eager, fused in zip(*runs):
        for e, g in zip(eager, fused):
            # exp's 4 ulp, passed on through v and w (a difference may cancel): against the values' size
            np.testing.assert_allclose(g, e, rtol=0, atol=64 * np.finfo(np.float32).eps * np.max(np.abs(e)))


@needs_numba
def test_gradient_tapes_inside_first_and_second_order():
    def first(x):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(gg.tanh(x * 2.0) * x + 1.0)
        return y, tape.gradient(y, x)

    def second(x):
        with gg.GradientTape() as outer:
            outer.watch(x)
            with gg.GradientTape() as inner:
                inner.watch(x)
                y = gg.sum(gg.exp(x * 0.5) * x)
            g = inner.gradient(y, x)
            s = gg.sum(g * g)
        return g, outer.gradient(s, x)
    v = gg.Variable(_rand(7))

    def of_variable(x):
        with gg.GradientTape() as tape:
            y = gg.sum(gg.square(v * x - 1.0))
        return tape.gradient(y, v)
    calls = _tensor_calls([_rand(7, dtype=np.float64)], [_rand(7, dtype=np.float64)])
    for fn in (first, second, of_variable):
        f = gg.function(fn, jit_compile=True)
        for make in calls:
            f(*make())
            for g, e in zip(_leaves(f(*make())), _leaves(fn(*make()))):
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-13, atol=1e-13)
        assert _fused(f), fn.__name__


@needs_numba
def test_new_shapes_and_dtypes_trace_again():
    fn = lambda x: gg.exp(x * 2.0) * 3.0 * x  # noqa: E731
    f = gg.function(fn, jit_compile=True)
    inputs = [_rand(7), _rand(3, 5), np.float32(0.5), _rand(7, dtype=np.float64), np.zeros((0,), np.float32),
              _rand(7).astype(np.float16), np.arange(5, dtype=np.int32), _rand(7)]
    for a in inputs:
        _within(f(gg.tensor(a)), fn(gg.tensor(a)), 10 if np.dtype(a.dtype).kind == "f" else 0, str(a.dtype))
    assert f.trace_count == len(inputs) - 1  # the last signature is the first's


@needs_numba
def test_one_function_from_several_threads():
    fn = lambda x: gg.sum(gg.tanh(x * 2.0) * 3.0 + x)  # noqa: E731
    f = gg.function(fn, jit_compile=True)
    xs = [gg.tensor(_rand(cpu.PARALLEL + 5)) for _ in range(4)]
    alone = [(f(x), f(x).numpy())[1] for x in xs]  # (the call that traces returns the trace's eager values)
    got, errors = {}, []

    def worker(k):
        try:
            for r in range(10):
                got[(k, r)] = f(xs[k]).numpy()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for (k, _), value in got.items():
        assert value.tobytes() == alone[k].tobytes()
    assert f.trace_count == 1


@needs_numba
def test_exceptions_inside_leave_the_function_usable():
    def fn(x, fail):
        y = x * 2.0 + 1.0
        if fail:
            raise KeyError("from the body")
        return gg.exp(y) * 2.0
    f = gg.function(fn, jit_compile=True)
    x = gg.tensor(_rand(7))
    with pytest.raises(KeyError):
        f(x, True)
    for _ in range(2):
        _within(f(x, False), fn(x, False), 8, "after an exception")
    g = gg.function(lambda x, y: gg.exp(x * 2.0) + y, jit_compile=True)
    with pytest.raises(gg.errors.ShapeError):
        g(gg.tensor(_rand(3)), gg.tensor(_rand(4)))
    _within(g(gg.tensor(np.ones(3, np.float32)), gg.tensor(np.ones(3, np.float32))),
            np.exp(np.float32(2)) + np.ones(3, np.float32), 4, "after an op's error")


@needs_numba
def test_nested_functions():
    """A gg.function called inside another's trace runs its body there (as a tf.function inside a tf.function):
    the outer function's jit_compile decides whether its ops fuse; eager calls of the inner one fuse by its own."""
    body = lambda x: gg.tanh(x * 2.0) * 3.0  # noqa: E731
    inner_jit, inner_plain = gg.function(body, jit_compile=True), gg.function(body)
    x = gg.tensor(_rand(7))
    eager = body(x + 1.0) + 4.0
    for inner in (inner_jit, inner_plain):
        for jit in (True, False):
            f = gg.function(lambda x: inner(x + 1.0) + 4.0, jit_compile=jit)
            for _ in range(3):
                _within(f(x), eager, 8 if jit else 0, f"{inner} in jit_compile={jit}")
            assert _fused(f) == ([5] if jit else []), (inner, jit)
    for _ in range(3):
        _within(inner_jit(x), body(x), 8, "the inner function called alone")


# --------------------------------------------------------------------------- jit_compile's values, diagnostics

@pytest.mark.parametrize("value,fuses", [(True, True), (False, False), (None, False), (np.bool_(True), True)], ids=str)
def test_jit_compile_takes_tf_functions_values(value, fuses):
    """``tf.function(jit_compile=None)`` is TensorFlow's default: XLA on a TPU only; here the replay unfused."""
    f = gg.function(lambda x: gg.tanh(x) * 2.0 + 3.0, jit_compile=value)
    x = gg.tensor(_rand(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the one "numba is not installed" warning
        f(x)
    assert ("fused:" in f.diagnostics()[0]) == fuses
    _within(f(x), gg.tanh(x) * 2.0 + 3.0, 8, str(value))


@pytest.mark.parametrize("value", ["yes", 1, 0.0])
def test_jit_compile_refuses_other_values(value):
    with pytest.raises(TypeError, match="jit_compile"):
        gg.function(lambda x: x, jit_compile=value)


@needs_numba
def test_diagnostics_say_what_was_fused():
    f = gg.function(lambda x: (gg.sum(gg.exp(x * 2.0) - 1.0), gg.matmul(x, x) * 2.0 + 1.0), jit_compile=True)
    f(gg.tensor(_rand(3, 3, dtype=np.float64)))
    line = f.diagnostics()[0]
    assert "fused: 2 regions (4 ops over 9 elements, 72 B in, 8 B out; 2 ops over 9 elements, 72 B in, 72 B out)" in line
    assert "compiled in" in line
    empty = gg.function(lambda x: (x * 2.0 + 1.0) * x, jit_compile=True)
    empty(gg.tensor(np.zeros((0, 3), np.float32)))
    assert "3 ops over 0 elements, 0 B in, 0 B out" in empty.diagnostics()[0]
    single = gg.function(lambda x: x * 2.0, jit_compile=True)
    single(gg.tensor(_rand(3)))
    assert "fused: no regions" in single.diagnostics()[0]


@needs_numba
def test_a_cache_folder_that_cannot_be_written(tmp_path, monkeypatch):
    """GPUGRAD_CACHE_DIR naming a file (or a folder that cannot be written): one warning, and the regions compile
    in a temporary folder of the process, fused and within the bound."""
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("")
    monkeypatch.setenv("GPUGRAD_CACHE_DIR", str(not_a_folder))
    monkeypatch.setattr(cpu, "_fallback", [])
    x = gg.tensor(_rand(9))
    with pytest.warns(RuntimeWarning, match="cannot write its cache folder"):
        f = _compare(lambda x: gg.exp(x * 1.2345) * 2.0 + 0.75, _tensor_calls([x.numpy()]), 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _compare(lambda x: gg.exp(x * 2.3456) * 2.0 + 0.75, _tensor_calls([x.numpy()]), 8)
    assert _fused(f) == _fused(g) == [4]


@needs_numba
def test_a_region_that_does_not_compile_replays_its_ops_unfused(monkeypatch):
    """numba (or NVRTC) failing on a region: one warning, the diagnostics say why, and the region's own steps run in
    its place with eager's bits, the other regions fused."""
    def fails(region, *arrays):
        if "Tanh" in region.op_types:
            raise RuntimeError("Failed in nopython mode pipeline (step: a stand-in failure)\nmore")
        return original(region, *arrays)
    original = cpu.build
    monkeypatch.setattr(cpu, "build", fails)
    monkeypatch.setattr(fusion, "_failed", [])

    def fn(x, w):
        y = gg.tanh(x * 2.0) * 3.0 + 1.0
        return gg.sum(y), gg.matmul(w, w) * 2.0 - 1.0
    x, w = _rand(9, dtype=np.float64), _rand(3, 3, dtype=np.float64)
    with pytest.warns(RuntimeWarning, match="did not compile .*RuntimeError: Failed in nopython mode"):
        f = gg.function(fn, jit_compile=True)
        f(gg.tensor(x), gg.tensor(w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for a in (x, _rand(9, dtype=np.float64)):
            for g, e in zip(f(gg.tensor(a), gg.tensor(w)), fn(gg.tensor(a), gg.tensor(w))):
                _within(g, e, 0, "unfused region")
    line = f.diagnostics()[0]
    assert "fused: 2 regions (5 ops over 9 elements" in line and line.count("(unfused: RuntimeError") == 1, line


def test_without_numba_one_warning_that_says_how_to_install():
    """In a process where numba does not import: the first jit function warns once (naming the extra), the
    others are silent, all replay unfused with eager's bits."""
    code = textwrap.dedent("""
        import sys, warnings
        sys.modules["numba"] = None  # import numba raises ImportError
        import numpy as np, gpugrad as gg
        x = gg.tensor(np.linspace(-1, 1, 5, dtype=np.float32))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for k in range(3):
                f = gg.function(lambda x: gg.tanh(x * 2.0) + float(k), jit_compile=True)
                f(x); f(x)
                assert np.array_equal(f(x).numpy(), (gg.tanh(x * 2.0) + float(k)).numpy())
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 1, messages
        assert "pip install 'gpugrad[jit]'" in messages[0] and "numba" in messages[0], messages
        assert "unfused: numba is not installed" in f.diagnostics()[0]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


# --------------------------------------------------------------------------- the stand-in GPU: generated kernels on the host

_STAND_IN_BOUNDARIES = """
import json, numpy as np, gpugrad as gg
np.seterr(all="ignore")
rng = np.random.default_rng(29)
failures, fused = [], {}

def leaves(r):
    return [y for x in r for y in leaves(x)] if isinstance(r, (list, tuple)) else [r]

def within(g, e, ulps):
    g, e = g.numpy(), e.numpy()
    if (g.shape, g.dtype) != (e.shape, e.dtype):
        return "shape or dtype"
    if not np.array_equal(np.isnan(g), np.isnan(e)) or not np.array_equal(g[np.isinf(e)], e[np.isinf(e)]):
        return "NaN or infinities"
    fin = np.isfinite(e)
    g64, e64 = g[fin].astype(np.float64), e[fin].astype(np.float64)
    if ulps == 0:
        return None if np.array_equal(g64, e64) and np.array_equal(np.signbit(g[fin]), np.signbit(e[fin])) else "bits"
    return None if np.all(np.abs(g64 - e64) <= ulps * np.spacing(np.abs(e[fin])).astype(np.float64)) else "beyond"

def check(name, fn, calls, ulps):
    f = gg.function(fn, jit_compile=True)
    for make in calls:
        eager = leaves(fn(*make()))
        for repeat in range(2):
            for i, (g, e) in enumerate(zip(leaves(f(*make())), eager)):
                why = within(g, e, ulps)
                if why:
                    failures.append(f"{name} output {i}: {why}")
                    return
    fused[name] = sum(len(t.plan.stats["fusion"]["regions"]) for t in f._traces.values() if t.plan is not None)

def on_gpu(*arrays):
    return lambda: tuple(gg.tensor(a, device="cuda") for a in arrays)

def rand(shape, dtype):
    return rng.uniform(-2.0, 2.0, shape).astype(dtype)

special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45, -1e-45, 1e-40, 3.4e38, -1.0, 1.0, 7.0], np.float32)
for dtype in (np.float16, np.float32, np.float64):
    d, tanh_ulps = dtype.__name__, (1 if dtype == np.float16 else 8)
    for shape in [(), (0,), (3, 0), (1,), (1, 1), (5,), (2, 3), (70000,)]:
        calls = [on_gpu(rand(shape, dtype)), on_gpu(rand(shape, dtype))]
        check(f"{d} arithmetic {shape}", lambda x: (x * 2.0 - 1.0) * x, calls, 0)
        check(f"{d} tanh {shape}", lambda x: gg.tanh(x * 2.0) * 3.0, calls, tanh_ulps)
    x = special.astype(dtype)
    calls = [on_gpu(x, x[::-1].copy()), on_gpu(x[::-1].copy(), x)]
    check(f"{d} special arithmetic", lambda x, y: (x * 1.0 - 0.5) * x + y, calls, 0)
    check(f"{d} signed zero constants", lambda x, y: (x * 1.0 - -0.0) * 2.0 + 0.0, calls, 0)
    check(f"{d} division by zero", lambda x, y: (x * 1.0) / (y * 0.0) + 1.0, calls, 0)
    check(f"{d} where with NaN in the branch not taken", lambda x, y: gg.where(x > 0, gg.log(x * 1.0), x * 0.0) + 1.0,
          calls, 4)
    check(f"{d} pow by 0.5", lambda x, y: (x * 1.0) ** 0.5 * 1.0, calls, 4)
    if dtype != np.float16:  # the stand-in's float16 maximum is NumPy's, which keeps the first of tied zeros
        check(f"{d} relu of -0.0", lambda x, y: gg.relu(x * 1.0) * 2.0, calls, 0)
    t = rand((6, 8), dtype)
    for name, view in [("slice", lambda t: t[::2, 1:]), ("transpose", lambda t: gg.transpose(t)),
                       ("negative strides", lambda t: t[::-1]), ("broadcast_to", lambda t: gg.broadcast_to(t[:1], (6, 8))),
                       ("reshape of a transpose", lambda t: gg.reshape(gg.transpose(t), (-1,)))]:
        check(f"{d} view {name}", lambda t, view=view: view(t * 2.0 + 1.0) * 3.0 + 1.0, [on_gpu(t), on_gpu(t[::-1].copy())], 0)
    v = rand(7, dtype)
    check(f"{d} 0-d tensor operand", lambda x, s: (x * s + 1.0) * s,
          [on_gpu(v, np.asarray(1.5, dtype)), on_gpu(v, np.asarray(-3.0, dtype))], 0)
    var = gg.Variable(np.asarray(2.0, dtype), device="cuda")
    def set_to(value, v=v, var=var):
        var.assign(np.asarray(value, dtype))
        return (gg.tensor(v, device="cuda"),)
    check(f"{d} 0-d variable operand", lambda x, var=var: (x * var + 1.0) * var, [lambda: set_to(2.0), lambda: set_to(5.0)], 0)
    check(f"{d} returned values", lambda x: (x, x * 2.0, x * 2.0 + 1.0, x * 2.0 + 1.0), [on_gpu(v)], 0)
print(json.dumps({"failures": failures, "fused": fused}))
"""


def test_stand_in_gpu_boundaries(tmp_path):
    """The generated kernels (float16, float32, float64) on the stand-in GPU against its eager kernels: 0-d, empty,
    one element, a launch over 70000 elements, special values, views, 0-d operands read each call, returns."""
    import json

    from .conftest import run_in_stand_in
    report = json.loads(run_in_stand_in(_STAND_IN_BOUNDARIES, tmp_path).splitlines()[-1])
    assert report["failures"] == []
    fused = report["fused"]
    for dtype in ("float16", "float32", "float64"):
        assert fused[f"{dtype} arithmetic (5,)"] == fused[f"{dtype} tanh (70000,)"] == 1, fused
        assert fused[f"{dtype} 0-d variable operand"] == 1 and fused[f"{dtype} pow by 0.5"] == 1, fused
