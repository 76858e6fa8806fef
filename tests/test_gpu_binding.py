"""A GPU plan's binding (gpugrad/_tracing/binding.py): a large cupy input read where the caller holds it, a large
result written into the array the call returns, the steps that do so run between the CUDA graph segments and
bound anew each call, the others graphed; the same bits as the plan that copies, inputs never written.

The tests bind from :data:`SMALL` bytes a step (their arrays of 16 Ki floats then bind as 64 Mi floats do at
:data:`gpugrad._tracing.binding.GPU_IN_PLACE_BYTES`) and compare with the plan built with no binding (the
threshold out of reach); they run on a GPU or on the CuPy stand-in (``tests/stand_in_cupy``).
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _nest as nest
from gpugrad._tracing import binding

pytestmark = pytest.mark.gpu
SMALL = 1 << 10  # bytes a step from which these tests bind
N = 1 << 14


def _plan(f):
    (trace,) = f._traces.values()
    return trace.plan


def _cuda(a):
    return gg.tensor(a, device="cuda")


def _w3(x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sum(gg.square(gg.log(x)))
    return tape.gradient(loss, x), loss


def _chain(x):
    from benchmarks.gpu_jit import chain
    return chain(x)


def _broadcast(x, b):
    y = gg.tanh(x * b) + gg.exp(x * 0.25)
    return y, gg.mean(y, axis=0)


def _workload(name, seed):
    rng = np.random.default_rng(seed)
    if name == "w3":
        return _w3, [_cuda(rng.uniform(0.5, 2.0, N).astype(np.float32))]
    if name == "chain":
        return _chain, [_cuda(rng.uniform(-1.0, 1.0, N).astype(np.float32))]
    return _broadcast, [_cuda(rng.uniform(-1.0, 1.0, (N // 64, 64)).astype(np.float32)),
                        _cuda(rng.uniform(-1.0, 1.0, 64).astype(np.float32))]


def _same_bits(got, want):
    for g, w in zip(nest.flatten(got), nest.flatten(want)):
        g, w = g.numpy(), w.numpy()
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("name", ["w3", "chain", "broadcast"])
def test_a_bound_plan_gives_the_copying_plans_bits(name, jit, monkeypatch):
    fn, args = _workload(name, 0)
    _, others = _workload(name, 1)
    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", 1 << 62, raising=False)
    copying = gg.function(fn, jit_compile=jit)
    copying(*args)
    want = [copying(*args), copying(*others)]
    assert _plan(copying).binding is None
    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", SMALL, raising=False)
    bound = gg.function(fn, jit_compile=jit)
    bound(*args)
    got = [bound(*args), bound(*others)]  # the second call reads the other arrays where they are
    st = _plan(bound).stats
    assert st["inputs_in_place"] >= 1 and st["results_in_place"] >= 1, st
    _same_bits(got, want)


def test_results_are_the_callers_across_calls(monkeypatch):
    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", SMALL, raising=False)
    f = gg.function(lambda x: gg.exp(x) * 2.0)
    (x1,), (x2,) = _workload("chain", 0)[1], _workload("chain", 1)[1]
    first = f(x1)
    kept = first.numpy().copy()
    second = f(x2)
    third = f(x1)
    assert _plan(f).stats["results_in_place"] == 1
    assert np.array_equal(first.numpy(), kept) and np.array_equal(third.numpy(), kept)
    assert len({r._data.data.ptr for r in (first, second, third)}) == 3  # each call's own array


def test_an_input_is_read_in_place_and_never_written(monkeypatch):
    import cupy

    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", SMALL, raising=False)
    fn = _w3
    (x0,), (x1,) = _workload("w3", 0)[1], _workload("w3", 1)[1]
    f = gg.function(fn, jit_compile=True)
    f(x0)
    buffer = _plan(f).inputs[0][0]
    traced = cupy.asnumpy(buffer)
    given = x1.numpy().copy()
    grad, loss = f(x1)
    assert _plan(f).stats["inputs_in_place"] == 1
    assert np.array_equal(x1.numpy(), given)  # the caller's input: unwritten
    assert np.array_equal(cupy.asnumpy(buffer), traced)  # read where the caller holds it: nothing copied in
    eager_grad, eager_loss = fn(x1)
    np.testing.assert_allclose(grad.numpy(), eager_grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-5)


def test_a_numpy_array_is_never_read_in_place_by_a_gpu_plan(monkeypatch):
    """A NumPy array does not fit a GPU plan's input (it is copied, as without a binding); through gg.function a
    NumPy argument is a host input, so the plan spans two devices and binds nothing."""
    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", SMALL, raising=False)
    f = gg.function(lambda x: gg.exp(x) * 2.0)
    (x0,), (x1,) = _workload("chain", 0)[1], _workload("chain", 1)[1]
    f(x0)
    plan = _plan(f)
    assert plan.binding._fits(x1._data, plan.inputs[0][0]) and not plan.binding._fits(x1.numpy(), plan.inputs[0][0])
    g = gg.function(lambda x: gg.exp(x) * 2.0)
    with gg.device("cuda"):
        g(x0.numpy())
        got = g(x1.numpy())
    assert got.device.startswith("cuda") and "inputs read in place" not in g.diagnostics()[0]
    _same_bits([got], [gg.exp(x1) * 2.0])


@pytest.mark.parametrize("given", ["strided view", "other device"])
def test_an_array_that_does_not_fit_is_copied_in(given, monkeypatch):
    """A view of other strides, an array on another GPU than the plan's: copied into the input buffer, as
    without a binding, to the same result."""
    import cupy

    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", SMALL, raising=False)
    f = gg.function(lambda x: gg.sum(gg.exp(x) * 2.0))  # (its result small: copied out, nothing made on a GPU)
    (x0,), (x1,) = _workload("chain", 0)[1], _workload("chain", 1)[1]
    f(x0)
    plan = _plan(f)
    assert plan.stats["inputs_in_place"] == 1
    host = x1.numpy()
    if given == "strided view":
        wide = cupy.zeros(2 * N, np.float32)
        wide[::2] = x1._data
        a = wide[::2]
    else:
        a = x1._data
        monkeypatch.setattr(plan.binding, "device", plan.binding.device + 1)  # the plan as if on another GPU
    result = plan.run([a])
    assert np.array_equal(cupy.asnumpy(plan.inputs[0][0]), host)  # copied in
    _same_bits([result], [gg.sum(gg.exp(x1) * 2.0)])


def test_the_small_steps_stay_graphed(monkeypatch):
    """The steps that read a bound input or write a bound result run between the graph segments; the others (on
    a small operand, below the threshold) stay one CUDA graph, replayed each call."""
    monkeypatch.setattr(binding, "GPU_IN_PLACE_BYTES", SMALL, raising=False)

    def fn(x, w):
        return gg.exp(x) * 2.0, gg.tanh(w * 2.0 + 1.0) * 3.0

    rng = np.random.default_rng(2)
    w1, w2 = (_cuda(rng.uniform(-1.0, 1.0, 64).astype(np.float32)) for _ in range(2))
    (x1,), (x2,) = _workload("chain", 0)[1], _workload("chain", 1)[1]
    f = gg.function(fn)
    f(x1, w1)
    got = [f(x1, w1), f(x2, w2)]
    st = _plan(f).stats
    assert (st["inputs_in_place"], st["results_in_place"]) == (1, 1)
    assert (st["graph_segments"], st["graphed_steps"]) == (1, 4), st["graph"]
    assert "2 bound to each call's arrays" in st["graph"]
    _same_bits(got, [fn(x1, w1), fn(x2, w2)])


def test_the_threshold_binds_from_a_mebibyte_a_step():
    f = gg.function(lambda x: gg.exp(x) * 2.0)
    rng = np.random.default_rng(3)
    large = _cuda(rng.uniform(-1.0, 1.0, binding.GPU_IN_PLACE_BYTES).astype(np.float32))  # 4 bytes an element
    small = _cuda(rng.uniform(-1.0, 1.0, binding.GPU_IN_PLACE_BYTES // 16).astype(np.float32))
    f(large)
    f(small)
    stats = [t.plan.stats for t in f._traces.values()]
    assert [(s["inputs_in_place"], s["results_in_place"]) for s in stats] == [(1, 1), (0, 0)]
