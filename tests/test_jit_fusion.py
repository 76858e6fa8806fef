"""gg.function(jit_compile=True): every op that declares an elementwise expression, fused in a chain of three or
more, within the bound of :mod:`gpugrad._tracing.fusion.bound` of eager (float32 and float64); reductions;
NaN and infinities; the regions it finds and where it stops; the replay without numba."""
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tools.op_specs import ALL_SPECS
from gpugrad._tracing import fusion
from gpugrad._tracing.fusion import bound
from gpugrad.ops.replay import declared

needs_numba = pytest.mark.skipif(not fusion.cpu.available(),
                                 reason="the gpugrad[jit] extra (numba) compiles the CPU regions: pip install 'gpugrad[jit]'")

FUSABLE = sorted(op for op, r in declared().items() if r.expression is not None)
SPECS = {}
for _spec in sorted(ALL_SPECS, key=lambda spec: bool(spec.label)):
    SPECS.setdefault(_spec.op_type, _spec)  # each op type's plain call: its first spec without a label


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("GPUGRAD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "gpugrad-cache"))


def _chain(fn):
    """fn with each input scaled by 1 before (one exact Mul each) and its results by 1, twice, after: a chain of
    three ops or more around the op, whose Muls give eager's bits."""
    def chained(*xs):
        if len({x.shape for x in xs}) == 1:  # operands of one shape: in the op's region too
            xs = [x * 1.0 for x in xs]
        out = fn(*xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return tuple(o * 1.0 * 1.0 for o in outs)
    return chained


def _regions(f):
    (trace,) = f._traces.values()
    return trace.plan.stats["fusion"]["regions"]


def test_every_fusable_op_has_a_spec():
    assert set(FUSABLE) <= set(SPECS), sorted(set(FUSABLE) - set(SPECS))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op_type", FUSABLE)
def test_fused_op_within_bound(op_type, dtype):
    spec = SPECS[op_type]
    arrays = [a.astype(dtype) for a in spec.inputs(seed=3, dtype=np.float64)]
    tensors = [gg.tensor(a) for a in arrays]
    chained = _chain(spec.fn)
    eager = [o.numpy() for o in chained(*tensors)]
    f = gg.function(chained, jit_compile=True)
    f(*tensors)
    fused = [o.numpy() for o in f(*tensors)]
    found = _regions(f)
    assert any(op_type in r["op_types"] and r["ops"] >= 3 for r in found), found
    allowed = bound.ulps(op_type)
    for e, g in zip(eager, fused):
        assert g.dtype == e.dtype == dtype
        assert np.array_equal(np.isnan(g), np.isnan(e))
        tol = allowed * np.spacing(np.abs(e).astype(dtype))
        assert np.all(np.abs(g - e) <= tol), (op_type, np.max(np.abs(g - e) / np.spacing(np.abs(e))))


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduce", [gg.sum, gg.mean, gg.max])
@pytest.mark.parametrize("n", [7, 100_000])
def test_fused_reduction_within_bound(reduce, dtype, n):
    x = np.random.default_rng(1).uniform(-2.0, 2.0, (n // 7 + 1, 7)).astype(dtype)

    def fn(x):
        y = gg.square(x * 0.5) - x
        return reduce(y), y * 3.0
    f = gg.function(fn, jit_compile=True)
    f(gg.tensor(x))
    r, y = f(gg.tensor(x))
    r_eager, y_eager = fn(gg.tensor(x))
    assert np.array_equal(y.numpy(), y_eager.numpy())  # arithmetic: eager's bits
    terms = (np.square(x * dtype(0.5)) - x)
    if reduce in (gg.sum,):
        assert abs(r.numpy() - r_eager.numpy()) <= bound.sum_tolerance(terms)
    elif reduce is gg.max:
        assert r.numpy() == r_eager.numpy()
    else:
        assert abs(r.numpy() - r_eager.numpy()) <= bound.sum_tolerance(terms) / terms.size + np.spacing(r_eager.numpy())
    assert [reg["ops"] for reg in _regions(f)] == [5]


# (shape, axes): a bias gradient's leading axis, a row sum's trailing one (negative), middle axes, outer ones,
# alternating ones, a 0-d value, and regions split across the CPU threads (cpu.PARALLEL elements or more)
PARTIAL = [((64, 256), 0), ((64, 256), -1), ((4, 5, 6), 1), ((4, 5, 6), (0, 2)), ((2, 3, 4, 5), (1, -1)),
           ((3, 1, 5), (0, 1)), ((), None), ((40, 2000), 0), ((2000, 40), 1), ((8, 9000, 2), (-2,))]


def _within_reduction_bound(kind, terms, axes, fused, eager):
    """The bound of fusion.bound per result element: a sum's (log2 n + 2) eps sum|terms|, a mean's that over n
    plus its own rounding, a max exact; NaN where eager has NaN."""
    fused, eager = np.asarray(fused, np.float64).reshape(-1), np.asarray(eager, np.float64).reshape(-1)
    assert np.array_equal(np.isnan(fused), np.isnan(eager))
    if kind == "max":
        assert np.array_equal(fused, eager, equal_nan=True)
        return
    keep = terms.ndim and axes is not None
    n = terms.size // max(eager.size, 1)
    eps = np.finfo(terms.dtype).eps
    magnitude = np.sum(np.abs(terms.astype(np.float64)), axis=axes if keep else None).reshape(-1)
    tol = (np.log2(max(n, 2)) + 2) * eps * magnitude
    if kind == "mean":
        tol = tol / n + np.spacing(np.abs(eager).astype(terms.dtype)).astype(np.float64)
    finite = np.isfinite(eager)
    assert np.all(np.abs(fused - eager)[finite] <= tol[finite]), np.max(np.abs(fused - eager) - tol)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axes", PARTIAL)
@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
def test_fused_partial_reduction_within_bound(kind, shape, axes, keepdims, dtype):
    """A reduction over some axes ends its region (written into its result) and the region's other values are
    still written where read later; within the bound of fusion.bound of eager per result element."""
    x = np.random.default_rng(4).uniform(-2.0, 2.0, shape).astype(dtype)
    reduce = getattr(gg, kind)

    def fn(x):
        y = gg.square(x * 0.5) - x
        return reduce(y, axis=axes, keepdims=keepdims), y * 3.0
    f = gg.function(fn, jit_compile=True)
    f(gg.tensor(x))
    r, y = f(gg.tensor(x))
    r_eager, y_eager = fn(gg.tensor(x))
    assert r.shape == r_eager.shape and r.dtype == r_eager.dtype
    assert np.array_equal(y.numpy(), y_eager.numpy())
    terms = np.square(x * dtype(0.5)) - x
    normalized = None if axes is None else tuple(np.atleast_1d(axes) % max(x.ndim, 1))
    _within_reduction_bound(kind, terms, normalized, r.numpy(), r_eager.numpy())
    assert [reg["op_types"] for reg in _regions(f)] == [["Mul", "Square", "Sub", kind.capitalize(), "Mul"]]


@needs_numba
@pytest.mark.parametrize("axis", [0, 1, None])
def test_a_reduction_split_across_threads_gives_the_same_bits_each_call(axis):
    """A region of cpu.PARALLEL elements or more runs in chunks on gpugrad's threads; each chunk's partials are
    combined in chunk order, so every call gives the same bits whatever the threads' timing."""
    threads = gg.get_num_threads()
    gg.set_num_threads(4)
    try:
        x = gg.tensor(np.random.default_rng(9).normal(size=(2000, 48)).astype(np.float32))
        f = gg.function(lambda x: (gg.sum(gg.square(x) * 0.5 - x, axis=axis), gg.max(x * 2.0 - 1.0, axis=axis)),
                        jit_compile=True)
        f(x)  # the trace (eager's values)
        first = [t.numpy().copy() for t in f(x)]
        for _ in range(5):
            for a, b in zip(first, f(x)):
                assert np.array_equal(a, b.numpy())
        assert [reg["op_types"][-1] for reg in _regions(f)] in (["Sum", "Max"], ["Max"]), _regions(f)
        assert any("Sum" in reg["op_types"] for reg in _regions(f))
    finally:
        gg.set_num_threads(threads)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reductions_over_different_axes_share_one_region(dtype):
    x = np.random.default_rng(5).normal(size=(6, 7, 8)).astype(dtype)

    def fn(x):
        y = gg.square(x) * 2.0 - x  # arithmetic: eager's bits, so a max is exact
        return gg.sum(y, axis=0), gg.max(y, axis=(1, 2), keepdims=True), gg.mean(y, axis=1), gg.sum(y)
    f = gg.function(fn, jit_compile=True)
    f(gg.tensor(x))
    fused = [t.numpy() for t in f(gg.tensor(x))]
    eager = [t.numpy() for t in fn(gg.tensor(x))]
    terms = np.square(x) * dtype(2) - x
    for kind, axes, g, e in zip(["sum", "max", "mean", "sum"], [(0,), (1, 2), (1,), None], fused, eager):
        assert g.shape == e.shape
        _within_reduction_bound(kind, terms, axes, g, e)
    assert [reg["op_types"] for reg in _regions(f)] == [["Square", "Mul", "Sub", "Sum", "Max", "Mean", "Sum"]]


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_bias_gradient_fuses_the_relu_gradient_and_its_sum(dtype):
    """A dense layer's backward: ReluGrad and the bias gradient's Sum over the batch axis are one region; the
    gradient reaching it (a broadcast of the loss's) is an operand read per element, not a step."""
    rng = np.random.default_rng(6)
    w = gg.Variable(rng.normal(size=(16, 8)).astype(dtype))
    b = gg.Variable(rng.normal(size=8).astype(dtype))

    def fn(x):
        with gg.GradientTape() as tape:
            loss = gg.mean(gg.relu(gg.matmul(x, w) + b))
        return tape.gradient(loss, [w, b])
    f = gg.function(fn, jit_compile=True)
    x = gg.tensor(rng.normal(size=(64, 16)).astype(dtype))
    f(x)
    (gw, gb), (ew, eb) = f(x), fn(x)
    np.testing.assert_allclose(gb.numpy(), eb.numpy(), rtol=64 * np.finfo(dtype).eps)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=64 * np.finfo(dtype).eps)
    found = [reg["op_types"] for reg in _regions(f)]
    assert any(ops[-2:] == ["ReluGrad", "Sum"] for ops in found), found
    assert "fused:" in f.diagnostics()[0]


@needs_numba
@pytest.mark.parametrize("case", ["size-0 region", "no axes", "one element"])
def test_reductions_that_do_not_fuse_replay_as_eager(case):
    """A region of no elements, and a reduction over no axis, are not fused: the replay gives eager's values."""
    shape, axes = {"size-0 region": ((0, 5), 0), "no axes": ((3, 4), ()), "one element": ((1, 1), 1)}[case]
    x = np.random.default_rng(7).normal(size=shape).astype(np.float32)

    def fn(x):
        y = gg.exp(x) * 2.0 + 1.0
        return gg.sum(y, axis=axes), gg.mean(y, axis=axes), y
    f = gg.function(fn, jit_compile=True)
    with np.errstate(all="ignore"):
        f(gg.tensor(x))
        fused, eager = [t.numpy() for t in f(gg.tensor(x))], [t.numpy() for t in fn(gg.tensor(x))]
    for g, e in zip(fused, eager):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6, equal_nan=True)
    ops = [op for reg in _regions(f) for op in reg["op_types"]]
    assert ("Sum" in ops) == (case == "one element"), ops


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_inf_propagate_as_eager(dtype):
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 2.0], dtype)

    def fn(x):
        y = gg.exp(gg.log(gg.abs(x)) * 0.5) / x
        return gg.sum(y), gg.max(y), y, gg.tanh(y) + 1.0
    f = gg.function(fn, jit_compile=True)
    with np.errstate(all="ignore"):
        f(gg.tensor(x))
        fused = [t.numpy() for t in f(gg.tensor(x))]
        eager = [t.numpy() for t in fn(gg.tensor(x))]
    for g, e in zip(fused, eager):
        assert np.array_equal(np.isnan(g), np.isnan(e))
        assert np.array_equal(np.isinf(g) & (g > 0), np.isinf(e) & (e > 0))
        assert np.array_equal(np.isinf(g) & (g < 0), np.isinf(e) & (e < 0))
    finite = np.isfinite(eager[2])
    assert np.allclose(fused[2][finite], eager[2][finite], rtol=16 * np.finfo(dtype).eps)


@needs_numba
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_nan_and_inf_in_partial_reductions_as_eager(axis, dtype):
    x = np.array([[1.0, np.nan, np.inf, -np.inf], [0.0, -0.0, -1.0, 2.0], [np.inf, 3.0, -np.inf, 0.5]], dtype)

    def fn(x):
        y = gg.exp(gg.log(gg.abs(x)) * 0.5) / x
        return gg.sum(y, axis=axis), gg.max(y, axis=axis), gg.mean(y, axis=axis, keepdims=True)
    f = gg.function(fn, jit_compile=True)
    with np.errstate(all="ignore"):
        f(gg.tensor(x))
        fused = [t.numpy() for t in f(gg.tensor(x))]
        eager = [t.numpy() for t in fn(gg.tensor(x))]
    for g, e in zip(fused, eager):
        assert g.shape == e.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
        np.testing.assert_array_equal(np.isposinf(g), np.isposinf(e))
        np.testing.assert_array_equal(np.isneginf(g), np.isneginf(e))
    assert [reg["op_types"][-3:] for reg in _regions(f)] == [["Sum", "Max", "Mean"]]


@needs_numba
def test_regions_stop_at_a_matmul_and_write_only_what_is_read():
    w = gg.Variable(np.eye(3, dtype=np.float32))

    def fn(x):
        a = gg.tanh(x * 2.0) + 1.0  # region 1: a is read by the matmul
        b = gg.matmul(a, w)
        return gg.exp(b) * 3.0 - b  # region 2
    f = gg.function(fn, jit_compile=True)
    x = gg.tensor(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
    f(x)
    found = _regions(f)
    assert [r["op_types"] for r in found] == [["Mul", "Tanh", "Add"], ["Exp", "Mul", "Sub"]]
    assert found[0]["bytes_out"] == 4 * 3 * 4  # only a, not tanh's or the Mul's values
    assert "fused: 2 regions" in f.diagnostics()[0]
    np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=1e-6)


@needs_numba
def test_broadcast_operands_and_a_gradient_through_the_fused_replay():
    b = gg.Variable(np.linspace(-1, 1, 5).astype(np.float64))
    col = np.linspace(0.5, 2.0, 4).reshape(4, 1)

    def fn(x, c):
        with gg.GradientTape() as tape:
            loss = gg.sum(gg.square(x * c + b) * 0.5)
        return tape.gradient(loss, b)
    f = gg.function(fn, jit_compile=True)
    x = gg.tensor(np.random.default_rng(2).normal(size=(4, 5)))
    f(x, col)
    np.testing.assert_allclose(f(x, col).numpy(), fn(x, col).numpy(), rtol=1e-13)
    assert _regions(f)


def test_without_jit_compile_the_replay_is_unfused():
    f = gg.function(lambda x: gg.tanh(x) * 2.0 + 1.0)
    x = gg.tensor(np.ones(4, np.float32))
    f(x)
    assert "fused" not in f.diagnostics()[0]
    assert np.array_equal(f(x).numpy(), (np.tanh(np.ones(4, np.float32)) * np.float32(2) + np.float32(1)))


def test_without_numba_it_warns_once_and_replays_unfused(monkeypatch):
    monkeypatch.setattr(fusion.cpu, "available", lambda: False)
    monkeypatch.setattr(fusion, "_warned", [])
    x = gg.tensor(np.ones(4, np.float32))
    with pytest.warns(RuntimeWarning, match="numba is not installed"):
        f = gg.function(lambda x: gg.tanh(x) * 2.0, jit_compile=True)
        f(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = gg.function(lambda x: gg.exp(x) * 2.0, jit_compile=True)
        g(x)
    assert "unfused: numba is not installed" in g.diagnostics()[0]
    assert np.array_equal(f(x).numpy(), np.tanh(np.ones(4, np.float32)) * np.float32(2))


def test_jit_compile_takes_a_bool():
    with pytest.raises(TypeError, match="jit_compile"):
        gg.function(lambda x: x, jit_compile="yes")


@needs_numba
def test_cli_train_jit_reaches_the_unfused_accuracy(capsys):
    import json

    from gpugrad.cli import main
    runs = []
    for flags in (["--jit"], []):
        assert main(["train", "--epochs", "1", "--no-progress", "--json", *flags]) in (0, None)
        runs.append(json.loads(capsys.readouterr().out))
    assert abs(runs[0]["accuracy"] - runs[1]["accuracy"]) <= 0.005, runs


def test_cli_train_jit_refuses_eager():
    from gpugrad.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(["train", "--jit", "--eager", "--epochs", "1"])
    assert exit_.value.code == 2


# --------------------------------------------------------------------------- the stand-in GPU: generated kernels on the host

_STAND_IN_TABLE = """
import json, numpy as np, gpugrad as gg
from gpugrad._tools.op_specs import ALL_SPECS
from gpugrad._tracing.fusion import bound
from gpugrad.ops.replay import declared
specs = {}
for spec in sorted(ALL_SPECS, key=lambda spec: bool(spec.label)):
    specs.setdefault(spec.op_type, spec)
def chain(fn):
    def chained(*xs):
        if len({x.shape for x in xs}) == 1:
            xs = [x * 1.0 for x in xs]
        out = fn(*xs)
        return tuple(o * 1.0 * 1.0 for o in (out if isinstance(out, (tuple, list)) else (out,)))
    return chained
report = {}
for op in sorted(o for o, r in declared().items() if r.expression is not None):
    spec = specs[op]
    arrays = [a.astype(DTYPE) for a in spec.inputs(seed=3)]
    tensors = [gg.tensor(a, device="cuda") for a in arrays]
    f = gg.function(chain(spec.fn), jit_compile=True)
    f(*tensors)
    fused = [o.numpy() for o in f(*tensors)]
    eager = [o.numpy() for o in chain(spec.fn)(*tensors)]
    (trace,) = f._traces.values()
    regions = trace.plan.stats["fusion"]["regions"]
    worst = max(float(np.max(np.abs(g - e) / np.spacing(np.abs(e).astype(DTYPE)))) for g, e in zip(fused, eager))
    report[op] = [any(op in r["op_types"] and r["ops"] >= 3 for r in regions), worst, bound.ulps(op),
                  all(np.array_equal(np.isnan(g), np.isnan(e)) for g, e in zip(fused, eager))]
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def stand_in_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("stand-in-jit")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stand_in_gpu_fuses_every_op_within_bound(dtype, stand_in_cache):
    """Every op with an expression, fused in a chain of three or more on the stand-in GPU (its generated kernel
    built and run on the host), within the bound of the eager CuPy path."""
    import json

    from .conftest import run_in_stand_in
    report = json.loads(run_in_stand_in(f"DTYPE = {dtype!r}\n" + _STAND_IN_TABLE, stand_in_cache).splitlines()[-1])
    assert set(report) == set(FUSABLE)
    for op, (fused, worst, allowed, nans) in report.items():
        assert fused, op
        assert nans, op
        assert worst <= allowed, (op, worst, allowed)


def test_stand_in_gpu_nan_and_inf_propagate(stand_in_cache):
    from .conftest import run_in_stand_in
    out = run_in_stand_in("""
        import numpy as np, gpugrad as gg
        x = gg.tensor(np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -1.0, 2.0, 0.5], np.float32), device="cuda")
        fn = lambda x: (gg.maximum(gg.exp(gg.log(gg.abs(x)) * 0.5) / x, -3.0), gg.tanh(x) * 2.0 + 1.0)
        f = gg.function(fn, jit_compile=True)
        with np.errstate(all="ignore"):
            f(x)
            fused, eager = [t.numpy() for t in f(x)], [t.numpy() for t in fn(x)]
        (trace,) = f._traces.values()
        assert trace.plan.stats["fusion"]["regions"], trace.plan.stats
        for g, e in zip(fused, eager):
            assert np.array_equal(np.isnan(g), np.isnan(e)) and np.array_equal(np.isinf(g), np.isinf(e)), (g, e)
            assert np.array_equal(np.sign(g[np.isinf(g)]), np.sign(e[np.isinf(e)]))
        print("ok")
    """, stand_in_cache)
    assert out.strip().endswith("ok")


_STAND_IN_REDUCTIONS = """
import json, numpy as np, gpugrad as gg
rng = np.random.default_rng(8)
report = []
for dtype in (np.float16, np.float32, np.float64):
    for kind in ("sum", "mean", "max"):
        for shape, axes in [((64, 256), 0), ((64, 256), -1), ((4, 5, 6), (0, 2)), ((4, 5, 6), 1), ((300,), None)]:
            for keepdims in (False, True):
                x = rng.uniform(-2.0, 2.0, shape).astype(dtype)
                b = rng.uniform(-1.0, 1.0, shape[-1]).astype(dtype)
                def fn(x, b, reduce=getattr(gg, kind), axes=axes, keepdims=keepdims):
                    y = gg.square(x * 0.5) - x + b  # b: an operand read along the rows
                    return reduce(y, axis=axes, keepdims=keepdims), y * 3.0
                X, B = gg.tensor(x, device="cuda"), gg.tensor(b, device="cuda")
                f = gg.function(fn, jit_compile=True)
                f(X, B)
                (r, y), (r_eager, y_eager) = f(X, B), fn(X, B)
                (trace,) = f._traces.values()
                terms = y_eager.numpy().astype(np.float64) / 3.0
                normalized = None if axes is None else tuple(np.atleast_1d(axes) % len(shape))
                n = terms.size // r_eager.numpy().size
                tol = (np.log2(max(n, 2)) + 2) * np.finfo(dtype).eps * np.sum(np.abs(terms), axis=normalized)
                tol = tol / n if kind == "mean" else tol
                tol = (0 * tol if kind == "max" else tol).reshape(-1) + np.spacing(
                    np.abs(r_eager.numpy()).reshape(-1).astype(dtype)) * (kind == "mean")
                diff = np.abs(r.numpy().astype(np.float64) - r_eager.numpy()).reshape(-1)
                report.append([np.dtype(dtype).name, kind, str(shape), str(axes), keepdims,
                               [g["op_types"] for g in trace.plan.stats["fusion"]["regions"]],
                               r.shape == r_eager.shape, bool(np.array_equal(y.numpy(), y_eager.numpy())),
                               bool(np.all(diff <= tol)), trace.plan.stats.get("graph", "")])
print(json.dumps(report))
"""


def test_stand_in_gpu_fuses_reductions_over_any_axes_within_bound(stand_in_cache):
    """On the stand-in GPU a region holding a reduction (sum, mean, max; any axes; keepdims or not; float16,
    float32, float64) is one generated ElementwiseKernel program reduced by one ReductionKernel, the elementwise
    step after the reduction (``y * 3.0``) in the same region, its one step held in the plan's CUDA graph (two
    launches), within the bound of the eager CuPy path."""
    import json

    from .conftest import run_in_stand_in
    report = json.loads(run_in_stand_in(_STAND_IN_REDUCTIONS, stand_in_cache).splitlines()[-1])
    assert len(report) == 3 * 3 * 5 * 2
    for dtype, kind, shape, axes, keepdims, found, same_shape, same_y, within, graph in report:
        case = (dtype, kind, shape, axes, keepdims)
        assert found == [["Mul", "Square", "Sub", "Add", kind.capitalize(), "Mul"]], (case, found)
        assert same_shape and same_y and within, case
        assert "1 of 1 steps graphed" in graph, (case, graph)


_STAND_IN_W3 = """
import json, numpy as np, cupy, gpugrad as gg
from benchmarks.workload_w3 import gpugrad_w3, numpy_w3
from gpugrad._tracing import binding
binding.GPU_IN_PLACE_BYTES = 1 << 10  # its 16 Ki floats bind as 64 Mi do on a device
launches = {}
def counted(cls, what):
    call = cls.__call__
    def wrapped(self, *args, **kwargs):
        launches[what] = launches.get(what, 0) + 1
        return call(self, *args, **kwargs)
    cls.__call__ = wrapped
counted(cupy.ElementwiseKernel, "ElementwiseKernel")
counted(cupy.ReductionKernel, "ReductionKernel")
setitem = cupy.ndarray.__setitem__
def copy_in(self, key, value):
    launches.setdefault("copied bytes", []).append(self.nbytes)
    return setitem(self, key, value)
cupy.ndarray.__setitem__ = copy_in
rng = np.random.default_rng(5)
x = gg.tensor(rng.uniform(0.5, 2.0, N).astype(np.float32), device="cuda")
def w3(x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sum(gg.square(gg.log(x)))
    return tape.gradient(loss, x), loss
f = gg.function(w3, jit_compile=True)
f(x)
launches.clear()
grad, loss = f(x)
per_call = dict(launches)
(trace,) = f._traces.values()
st = trace.plan.stats
eager_grad, eager_loss = w3(x)
with np.errstate(all="ignore"):
    ulps = float(np.max(np.abs(grad.numpy() - eager_grad.numpy()) / np.spacing(np.abs(eager_grad.numpy()))))
print(json.dumps({"regions": [r["op_types"] for r in st["fusion"]["regions"]], "launches": per_call,
                  "in_place": [st["inputs_in_place"], st["results_in_place"]], "ulps": ulps,
                  "loss": [float(loss.numpy()), float(eager_loss.numpy())]}))
"""


@pytest.mark.parametrize("n, reductions", [(1 << 14, 1), (1 << 20, 2)])
def test_stand_in_w3_is_one_region_of_two_kernels_reading_x_in_place(n, reductions, stand_in_cache):
    """W3 (the gradient of ``sum(square(log(x)))``) on the stand-in GPU through ``jit_compile=True``: one region, the
    loss's gradient after its reduction; each call one ElementwiseKernel writing the gradient into the array the
    call returns and one ReductionKernel for the loss, both reading the caller's ``x`` where it is: nothing copied
    in or out but the loss's 4 bytes. The gradient within the fused ops' bound (a few ulps) of the eager path, the
    loss within a sum's. From ``gpu.SPLIT`` elements the loss is reduced to partials over many blocks, then to one
    value: two ReductionKernel launches."""
    import json

    from gpugrad._tracing.fusion import bound
    from .conftest import run_in_stand_in
    report = json.loads(run_in_stand_in(f"N = {n}\n" + _STAND_IN_W3, stand_in_cache).splitlines()[-1])
    assert report["regions"] == [["Log", "Square", "Sum", "SquareGrad", "LogGrad"]], report
    assert report["launches"] == {"ElementwiseKernel": 1, "ReductionKernel": reductions, "copied bytes": [4]}, report
    assert report["in_place"] == [1, 1], report
    assert report["ulps"] <= bound.ulps("Log") + bound.ulps("SquareGrad") + bound.ulps("LogGrad"), report
    got, want = report["loss"]
    assert abs(got - want) <= (np.log2(n) + 2) * np.finfo(np.float32).eps * want, report


_STAND_IN_SPLIT = """
import json, numpy as np, cupy, gpugrad as gg
from gpugrad._tracing.fusion import gpu
launches = []
call = cupy.ReductionKernel.__call__
def counted(self, *args, **kwargs):
    launches.append(kwargs.get("out").shape)
    return call(self, *args, **kwargs)
cupy.ReductionKernel.__call__ = counted
rng = np.random.default_rng(4)
report = []
for dtype in (np.float32, np.float64):
    for kind in ("sum", "mean", "max"):
        for shape, keepdims in (((gpu.SPLIT,), False), ((1024, gpu.SPLIT // 1024), True)):
            x = gg.tensor(rng.uniform(-1.0, 1.0, shape).astype(dtype), device="cuda")
            fn = lambda x: getattr(gg, kind)(gg.square(x) * 0.5 - x, keepdims=keepdims)
            f = gg.function(fn, jit_compile=True)
            f(x)
            launches.clear()
            got, want = f(x), fn(x)
            terms = np.abs((gg.square(x) * 0.5 - x).numpy().astype(np.float64))
            tol = 0.0 if kind == "max" else (np.log2(terms.size) + 2) * np.finfo(dtype).eps * terms.sum() / (
                terms.size if kind == "mean" else 1)
            report.append([np.dtype(dtype).name, kind, str(shape), got.shape == want.shape,
                           [list(s) for s in launches],
                           bool(abs(float(got.numpy().reshape(-1)[0]) - float(want.numpy().reshape(-1)[0])) <= tol)])
print(json.dumps(report))
"""


def test_stand_in_reduction_to_one_value_runs_over_partials(stand_in_cache):
    """A fused reduction of ``gpu.SPLIT`` elements or more to one value (sum, mean, max; float32, float64) runs as
    two ReductionKernel launches: the region reduced over its leading axis to ``gpu.PARTIALS`` partials (CuPy's
    kernel gives one block a 32 of them: over all axes it would run on one block), then the partials to the result;
    within a fused sum's bound of eager, max exactly."""
    import json

    from gpugrad._tracing.fusion import gpu
    from .conftest import run_in_stand_in
    report = json.loads(run_in_stand_in(_STAND_IN_SPLIT, stand_in_cache).splitlines()[-1])
    assert len(report) == 12
    for dtype, kind, shape, same_shape, launches, within in report:
        assert same_shape and within, (dtype, kind, shape)
        assert launches == [[gpu.PARTIALS], []], (dtype, kind, shape, launches)


def test_stand_in_reduction_kernel_follows_cupy(stand_in_cache):
    """The stand-in's ReductionKernel refuses what CuPy 14.2's does, and, as CuPy's CUB path allocates a work
    area for a reduction over all axes of one operand, refuses that call while a stream captures."""
    from .conftest import run_in_stand_in
    out = run_in_stand_in("""
        import numpy as np, pytest, cupy, gpugrad as gg
        from gpugrad._tracing.capture import Capture
        from gpugrad._tracing.fusion import gpu, regions
        capture = Capture()
        x = capture.input(gg.tensor(np.ones((4, 200), np.float32), device="cuda"))
        with capture:
            y = gg.sum(gg.square(x * 2.0))
        (region,) = regions.find(capture, capture.steps, {id(y._data)}, "gpu")
        spec = gpu.reduction_kernel(region)
        k = cupy.ReductionKernel(**spec)
        a = cupy.asarray(np.linspace(-1, 1, 800, dtype=np.float32).reshape(4, 200))
        out = cupy.empty((), np.float32)
        k(a, 800, out=out)
        assert np.isclose(float(out.get()), np.sum(np.square(np.linspace(-1, 1, 800, dtype=np.float32) * 2)))
        with pytest.raises(ValueError, match="Invalid kernel name"):
            cupy.ReductionKernel(**dict(spec, name="no name"))
        with pytest.raises(TypeError, match="Wrong arguments"):
            k(a, 800, out=out, dtype=np.float32)
        with pytest.raises(TypeError, match="Wrong number of arguments"):
            k(a)
        with pytest.raises(ValueError, match="both"):
            k(a, 800, out, out=out)
        with pytest.raises(ValueError, match="Out shape is mismatched"):
            k(a, 800, out=cupy.empty((4,), np.float32))
        with pytest.raises(TypeError, match="Type is mismatched"):
            k(a.astype(np.float64), 800, out=out)
        with pytest.raises(ValueError, match="no identity"):
            cupy.ReductionKernel(**dict(spec, identity=None))(cupy.empty((0, 3), np.float32), 0, axis=0)
        one = cupy.ReductionKernel(**dict(spec, in_params="T a0"))  # one operand, one result: CuPy's CUB path
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            with pytest.raises(Exception, match="temporaries"):
                one(a, out=out)
            stream.end_capture()
        with stream:
            stream.begin_capture()
            k(a, 800, out=out)  # two in-params: CuPy's own kernel, allocating nothing
            stream.end_capture().launch(stream)
        print("ok")
    """, stand_in_cache)
    assert out.strip().endswith("ok")


def test_sample_regions_compile_with_nvrtc_for_sm90(tmp_path):
    """A region of every op that declares an expression, and a region ending in a reduction (its ReductionKernel's
    preamble), generated for float16, float32 and float64, compile through NVRTC for sm_90 as CuPy compiles them
    (the kernel check of kernels/)."""
    from gpugrad._tools.kernelcheck import nvrtc
    from gpugrad._tracing.fusion import gpu

    from .conftest import needs_cupy
    needs_cupy()
    for dtype in ("float16", "float32", "float64"):
        name, text = gpu.source(gpu.sample_region(dtype))
        (tmp_path / f"{name}.cu").write_text(text)
        reduction = gpu.sample_reduction(dtype)  # its map's kernel file and the _value function map_expr calls
        (tmp_path / f"{reduction['name'][len('gpugrad_'):]}.cu").write_text(reduction["preamble"])
    code, results, stderr = nvrtc.run_in_subprocess(tmp_path, jobs=1)
    assert code == 0 and results and all(r["ok"] for r in results), stderr + str([r["error"] for r in results])
    assert {r["layout"] for r in results} >= {"standalone", "contiguous"}


def test_sample_reduction_kernels_compile_as_cupy_generates_them_for_sm90():
    """The whole ReductionKernel CuPy 14.2 generates for a region ending in a sum, mean or max (float16, float32,
    float64; its own kernel, not CUB) compiles through NVRTC for sm_90."""
    import json
    import subprocess
    import sys

    from .conftest import needs_cupy
    needs_cupy()
    code = ("import json; from gpugrad._tools.kernelcheck import nvrtc\n"
            "for r in nvrtc.check_sample_reductions(): print(json.dumps(r))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and len(results) == 9, done.stderr
    assert all(r["ok"] for r in results), [r["error"] for r in results if not r["ok"]]


@needs_numba
def test_a_region_is_compiled_once_and_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUGRAD_CACHE_DIR", str(tmp_path))
    fn = lambda x: gg.exp(x * 3.0 - 1.0) * 0.5  # noqa: E731
    x = gg.tensor(np.linspace(0, 1, 9))
    f = gg.function(fn, jit_compile=True)
    f(x)
    modules = list((tmp_path / "fusion").glob("region_*.py"))
    assert len(modules) == 1
    assert list((tmp_path / "fusion" / "__pycache__").glob("*.nbi")), "numba's on-disk cache of the region"
    g = gg.function(fn, jit_compile=True)  # another function, the same region: the same module
    g(x)
    assert list((tmp_path / "fusion").glob("region_*.py")) == modules
    assert "compiled in" in f.diagnostics()[0]


@needs_numba
def test_a_param_given_as_a_tensor_is_read_each_call_not_baked():
    x = gg.tensor(np.linspace(-2.0, 2.0, 8))
    fn = lambda x, a: gg.raw_ops.leaky_relu_grad(x * 1.0, x * 2.0, alpha=a) * 3.0  # noqa: E731
    f = gg.function(fn, jit_compile=True)
    f(x, gg.tensor(0.3))
    for alpha in (0.3, 0.5):
        np.testing.assert_array_equal(f(x, gg.tensor(alpha)).numpy(), fn(x, gg.tensor(alpha)).numpy())
    assert f.trace_count == 1
