"""A large CPU region (``regions.LARGE`` elements or more) takes its transcendental ops: each block hands them to
NumPy's ufunc (eager's call, so eager's bits) and the region's numba loop reads the block's buffer
(``gpugrad._tracing.fusion.cpu``: ``staged_calls``, ``stage<L>``). Every one-call transcendental op, in a chain
of three or more with a reduction, at sizes each side of LARGE and PARALLEL, float32 and float64, on 1 and 2
threads, with NaN, infinities, signed zeros and subnormals; operands of every layout (an input, a value of the
region, a broadcast row, one element, a number); a staged op on a staged op's result; W3 as one region.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tracing import fusion
from gpugrad._tracing.fusion import bound, cpu, regions

needs_numba = pytest.mark.skipif(not fusion.cpu.available(),
                                 reason="the gpugrad[jit] extra (numba) compiles the CPU regions: pip install 'gpugrad[jit]'")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("GPUGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "gpugrad-cache"))


@pytest.fixture(params=[1, 2], ids=["1 thread", "2 threads"])
def threads(request):
    before = gg.set_num_threads(request.param)
    yield request.param
    gg.set_num_threads(before)


@pytest.fixture(params=[None, 1 << 13], ids=["blocks of 1 MiB", "blocks of 2 Ki elements"])
def blocks(request, monkeypatch):
    """The block size a staged region is built with: the default, and the smallest (many blocks per chunk)."""
    if request.param is not None:
        monkeypatch.setattr(cpu, "STAGED_BLOCK_BYTES", request.param)
    return request.param


def _regions(f):
    return [r for trace in f._traces.values() if trace.plan is not None
            for r in trace.plan.stats.get("fusion", {}).get("regions", [])]


def _values(n, dtype, seed=0):
    """``n`` values in [-2, 2) with NaN, +-inf, +-0.0, subnormals and the dtype's extremes among the first ones."""
    x = np.random.default_rng(seed).uniform(-2.0, 2.0, n).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, tiny, -tiny, 1.0, -1.0, np.finfo(dtype).max], dtype)
    x[:min(n, special.size)] = special[:n]
    return x


def _bits(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    assert got.tobytes() == want.tobytes(), (what, np.flatnonzero(got.view(np.uint8) != want.view(np.uint8))[:5])


def _within_sum(got, want, terms, what):
    got, want = float(np.asarray(got)), float(np.asarray(want))
    if np.isnan(want):
        assert np.isnan(got), what
    elif np.isinf(want) and not bound.may_overflow(terms[np.isfinite(terms)]):
        assert got == want, what
    elif np.isfinite(want):
        assert abs(got - want) <= bound.sum_tolerance(terms), what


# each one-call transcendental op (expr.ufunc_call) in a chain: a product before it, a product after, a sum
UNARY = {"Exp": gg.exp, "Log": gg.log, "Expm1": gg.expm1, "Log1p": gg.log1p, "Sin": gg.sin, "Cos": gg.cos,
         "Tanh": gg.tanh}
CHAINS = {**{name: (lambda op: lambda x, y: op(x * 0.5) * 3.0)(op) for name, op in UNARY.items()},
          "Pow": lambda x, y: gg.power(gg.abs(x) * 0.5, y) * 3.0,  # an exponent per element
          "Pow one exponent": lambda x, y: gg.power(x * 0.5, 0.5) * 3.0}  # NumPy's loop takes 0.5 as sqrt
SIZES = sorted({regions.LARGE - 1, regions.LARGE, regions.LARGE + 1, cpu.PARALLEL - 1, cpu.PARALLEL,
                cpu.PARALLEL + 1})


def test_every_one_call_transcendental_op_is_covered():
    from gpugrad.ops import replay
    from gpugrad._tracing.fusion import expr
    one_call = {name for name, r in replay._DECLARED.items() if r.expression is not None and expr.ufunc_call(r.expression)}
    assert one_call == set(UNARY) | {"Pow"}


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(CHAINS))
def test_a_transcendental_op_fuses_at_every_size_with_eagers_bits_from_large(name, n, dtype, threads, blocks):
    """One region at every size (``Mul``, the op, ``Mul``, ``Sum``); from LARGE elements the op is NumPy's, so
    the product is eager's bits; below, numba's libm call within the op's ulps (times 3, rounded: 2 ulp more)."""
    chain = CHAINS[name]

    def fn(x, y):
        z = chain(x, y)
        return gg.sum(z), z
    x, y = _values(n, dtype, 1), np.random.default_rng(2).uniform(-3.0, 3.0, n).astype(dtype)
    f = gg.function(fn, jit_compile=True)
    for call in range(2):
        xs, ys = (x, y) if call == 0 else (x[::-1].copy(), y[::-1].copy())
        s, z = f(gg.tensor(xs), gg.tensor(ys))
        s_eager, z_eager = fn(gg.tensor(xs), gg.tensor(ys))
        if n >= regions.LARGE:
            _bits(z.numpy(), z_eager.numpy(), name)
        else:
            w, g = z_eager.numpy().astype(np.float64), z.numpy().astype(np.float64)
            assert np.array_equal(np.isnan(g), np.isnan(w)) and np.array_equal(g[np.isinf(w)], w[np.isinf(w)])
            finite = np.isfinite(w)
            allowed = (bound.ulps("Pow" if "Pow" in name else name) + 2) * np.spacing(np.abs(z_eager.numpy()[finite]))
            assert np.all(np.abs(g[finite] - w[finite]) <= allowed), name
        _within_sum(s.numpy(), s_eager.numpy(), z_eager.numpy(), name)
    (region,) = _regions(f)
    assert region["ops"] == len(region["op_types"]) >= 4 and region["op_types"][-1] == "Sum", region


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [regions.LARGE, 3 * cpu.PARALLEL + 7])
def test_staged_ops_on_values_broadcast_rows_and_staged_results(n, dtype, threads, blocks):
    """A staged op on a value of the region (a block buffer the stage below writes), on a broadcast row (``i % m``)
    and on a staged op's result (``exp(log(.))``: two levels), with a sum over the leading axis; eager's bits but
    for the sum, which is within its bound; the same bits on every call."""
    m = 256
    rows = -(-n // m)
    x = _values(rows * m, dtype, 3).reshape(rows, m)
    b = np.random.default_rng(4).uniform(0.5, 2.0, m).astype(dtype)

    def fn(x, b):
        z = gg.exp(gg.log(x * b) + 1.0) * 2.0 + gg.tanh(b * x)
        return gg.sum(z, axis=0), z
    f = gg.function(fn, jit_compile=True)
    f(gg.tensor(x), gg.tensor(b))
    first = None
    for _ in range(2):
        s, z = f(gg.tensor(x), gg.tensor(b))
        s_eager, z_eager = fn(gg.tensor(x), gg.tensor(b))
        _bits(z.numpy(), z_eager.numpy(), "z")
        terms = z_eager.numpy()
        for k in range(m):
            _within_sum(s.numpy()[k], s_eager.numpy()[k], terms[:, k], f"sum {k}")
        first = first if first is not None else s.numpy().tobytes()
        assert s.numpy().tobytes() == first
    (region,) = _regions(f)
    assert region["op_types"] == ["Mul", "Log", "Add", "Exp", "Mul", "Mul", "Tanh", "Add", "Sum"]


@needs_numba
def test_a_staged_split_region_gives_the_same_bits_on_any_thread_count_after_its_trace(blocks):
    """The chunks are fixed at the trace (each with its own block buffers); run on 1 to 4 threads, in turn or
    in parallel, the same bits."""
    x = gg.tensor(np.abs(_values(3 * cpu.PARALLEL + 7, np.float32, 5)))
    fn = lambda x: (gg.sum(gg.square(gg.log(x))), gg.exp(x * 0.25))  # noqa: E731
    before = gg.set_num_threads(3)
    try:
        f = gg.function(fn, jit_compile=True)
        f(x)
        first = [o.numpy().tobytes() for o in f(x)]
        for n in (1, 2, 4, 3):
            gg.set_num_threads(n)
            assert [o.numpy().tobytes() for o in f(x)] == first, n
    finally:
        gg.set_num_threads(before)
    assert [r["op_types"] for r in _regions(f)] == [["Log", "Square", "Sum", "Mul", "Exp"]]


@needs_numba
def test_w3_is_one_region_with_eagers_gradient(threads):
    """W3 (the gradient of sum(square(log(x))) over 4 Mi float32) is one pass: one region of its five ops that
    reads x and writes the gradient, which is eager's bits (log NumPy's; 2 * log(x) / x exact in order)."""
    from benchmarks import workload_w3
    x = gg.tensor(workload_w3.make_x())
    f = gg.function(workload_w3.gpugrad_w3, jit_compile=True)
    f(x)
    g = f(x)
    _bits(g.numpy(), workload_w3.gpugrad_w3(x).numpy(), "W3's gradient")
    (region,) = _regions(f)
    assert region["op_types"] == ["Log", "Square", "Sum", "SquareGrad", "LogGrad"]
    assert region["bytes_out"] == x.numpy().nbytes + 4  # the gradient and the loss; log(x) stays in the blocks


@needs_numba
def test_a_gradient_calling_a_transcendental_function_inside_still_ends_a_large_region():
    """SoftplusGrad's ``exp(-abs(x))`` is not one ufunc call: from LARGE elements it stays NumPy's eager step."""
    x = gg.tensor(np.random.default_rng(6).uniform(-2, 2, regions.LARGE).astype(np.float32))

    def fn(x):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(gg.softplus(x * 2.0))
        return tape.gradient(y, x)
    f = gg.function(fn, jit_compile=True)
    f(x)
    np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=1e-5)
    assert all("SoftplusGrad" not in r["op_types"] for r in _regions(f))


@needs_numba
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_a_staged_reduction_whose_rows_cross_blocks(axis, threads, blocks):
    """Rows of 3000 elements, reduced along or across: a block ends inside a row, and the row's sum (or max) goes
    on in the next block; within the bound, the terms eager's bits."""
    x = np.random.default_rng(7).uniform(-2, 2, (40, 3000)).astype(np.float32)

    def fn(x):
        z = gg.exp(x * 0.5) - 1.0
        return gg.sum(z, axis=axis), gg.max(z, axis=axis), z
    f = gg.function(fn, jit_compile=True)
    f(gg.tensor(x))
    s, mx, z = f(gg.tensor(x))
    s_eager, mx_eager, z_eager = fn(gg.tensor(x))
    _bits(z.numpy(), z_eager.numpy(), "z")
    _bits(mx.numpy(), mx_eager.numpy(), "max")
    terms = z_eager.numpy()
    for got, want, t in zip(np.atleast_1d(s.numpy()), np.atleast_1d(s_eager.numpy()),
                            [terms] if axis is None else list(np.moveaxis(terms, axis, 0).T)):
        _within_sum(got, want, t, "sum")
    assert [r["op_types"] for r in _regions(f)] == [["Mul", "Exp", "Sub", "Sum", "Max"]]
