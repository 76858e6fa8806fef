"""A CPU plan's binding (gpugrad/_tracing/binding.py): large inputs read where the caller holds them, large
results written into the fresh arrays a call returns; and everywhere it must not, copying as before.

The oracle is the eager call (a replay without fusion gives its bits) and, for ``jit_compile=True``, the same
plan with the binding off (``IN_PLACE_BYTES`` out of reach): a speed mechanism that changes no bit.
"""
import functools
import importlib.util
import threading
import types

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tracing import binding
from gpugrad._tracing.fusion import cpu as fused_cpu

N = 1 << 15  # float32 elements: 128 KiB, past binding.IN_PLACE_BYTES
NO_NUMBA = "jit_compile=True fuses with numba (gpugrad[jit]), not installed"
JIT = [False, pytest.param(True, marks=pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason=NO_NUMBA))]


def _x(seed=0, n=N, dtype=np.float32):
    return np.random.default_rng(seed).uniform(0.5, 2.0, n).astype(dtype)


def _w3(x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sum(gg.square(gg.log(x)))
    return tape.gradient(loss, x)


def _stats(f):
    (trace,) = f._traces.values()
    return trace.plan.stats


def _unbound(monkeypatch):
    """Plans traced from now on copy every input and result (the binding's threshold out of reach)."""
    monkeypatch.setattr(binding, "IN_PLACE_BYTES", 1 << 62)


@pytest.mark.parametrize("jit", JIT)
def test_a_large_input_is_read_in_place_and_a_large_result_written_in_place(jit):
    f = gg.function(_w3, jit_compile=jit)
    f(gg.tensor(_x()))
    st = _stats(f)
    assert (st["inputs_in_place"], st["results_in_place"]) == (1, 1)
    assert "1 inputs read in place, 1 results written in place" in f.diagnostics()[0]


def _arrays_of(step):
    """The arrays a prebound call holds (its arguments, in tuples too)."""
    if not isinstance(step, functools.partial):
        return []
    found = []
    for a in list(step.args) + list(step.keywords.values()):
        found.extend(a if isinstance(a, tuple) else [a])
    return [a for a in found if isinstance(a, np.ndarray)]


def test_the_steps_read_the_callers_array_and_write_the_array_returned():
    """The proof that nothing is copied: the steps a call runs hold the caller's input itself, and write the
    array the call then returns (a copy would leave them bound to the plan's buffers, made once at the trace)."""
    f = gg.function(lambda x: gg.exp(x) * 3.0)
    f(gg.tensor(_x(0)))
    (trace,) = f._traces.values()
    plan = trace.plan
    x = gg.tensor(_x(1))
    steps, fresh = plan.binding.bind(plan, [x._data])
    held = [a for step in steps for a in _arrays_of(step)]
    assert any(a is x._data for a in held)
    (out,) = fresh.values()
    assert any(a is out for a in held)
    assert not any(np.shares_memory(a, x._data) for a in plan.binding._keep)
    for step in steps:
        step()
    np.testing.assert_array_equal(out, (gg.exp(x) * 3.0).numpy())
    y = f(x)
    assert y._data.base is None and y._data.flags.owndata  # the array the steps wrote, handed over


def test_a_step_without_a_prebound_call_is_bound_anew_by_its_declaration(monkeypatch):
    """A kernel whose prebound call is no ``functools.partial`` (a declared closure) is made again by its
    declaration on each call, from the caller's array into the array returned."""
    from gpugrad.ops import replay
    from gpugrad._recorder import emit
    built = []

    def build(inputs, attrs, outputs, device):
        built.append((inputs[0], outputs[0]))
        x, out = inputs[0], outputs[0]
        return lambda: np.multiply(x, x, out=out)
    replay.declare("ExampleSquareByClosure", build)
    try:
        f = gg.function(lambda x: emit("ExampleSquareByClosure", x._data * x._data, x._device, (x,)))
        f(gg.tensor(_x(0, 8 * N)))
        x = gg.tensor(_x(1, 8 * N))
        del built[:]
        y = f(x)
    finally:
        replay.undeclare("ExampleSquareByClosure")
    assert _stats(f)["inputs_in_place"] == 1 and _stats(f)["results_in_place"] == 1
    ((read, written),) = built
    assert read is x._data and written is y._data
    np.testing.assert_array_equal(y.numpy(), x.numpy() * x.numpy())


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="the fused loop needs numba (gpugrad[jit])")
def test_a_fused_loop_is_rebound_without_compiling(monkeypatch):
    bound = []

    def spying(real):
        def spy(*args):
            bound.append(args[-3:])  # (inputs, outputs, reductions)
            return real(*args)
        return spy
    # a loop of plain ops, or one of a large region whose transcendental ops NumPy computes block by block
    monkeypatch.setattr(fused_cpu, "_bound", spying(fused_cpu._bound))
    monkeypatch.setattr(fused_cpu, "_bound_staged", spying(fused_cpu._bound_staged))
    compiled = []
    real_compile = fused_cpu.compile_source
    f = gg.function(_w3, jit_compile=True)
    f(gg.tensor(_x(0)))
    monkeypatch.setattr(fused_cpu, "compile_source", lambda text: compiled.append(text) or real_compile(text))
    x = gg.tensor(_x(1))
    del bound[:]
    g = f(x)
    (inputs, outputs, _), = bound
    assert any(a is x._data for a in inputs) and any(np.shares_memory(o, g.numpy()) for o in outputs)
    assert compiled == []


@pytest.mark.parametrize("jit", JIT)
def test_bit_equal_to_the_plan_that_copies_and_to_eager(jit, monkeypatch):
    x1, x2 = gg.tensor(_x(1)), gg.tensor(_x(2))
    f = gg.function(_w3, jit_compile=jit)
    got = [f(x1).numpy(), f(x2).numpy(), f(x1).numpy()]
    _unbound(monkeypatch)
    copying = gg.function(_w3, jit_compile=jit)
    want = [copying(x1).numpy(), copying(x2).numpy(), copying(x1).numpy()]
    assert _stats(copying)["inputs_in_place"] == 0 and _stats(f)["inputs_in_place"] == 1
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    if not jit:
        np.testing.assert_array_equal(got[1], _w3(x2).numpy())


@pytest.mark.parametrize("jit", JIT)
def test_a_result_stays_the_callers_after_later_calls(jit):
    f = gg.function(_w3, jit_compile=jit)
    f(gg.tensor(_x(0)))  # the trace: what follows are replays
    x1, x2 = _x(1), _x(2)
    first = f(gg.tensor(x1))
    kept = first.numpy().copy()
    for seed in (2, 3, 4):
        second = f(gg.tensor(_x(seed)))
        assert not np.shares_memory(first.numpy(), second.numpy())
    np.testing.assert_array_equal(first.numpy(), kept)
    np.testing.assert_array_equal(f(gg.tensor(x1)).numpy(), kept)
    assert not np.array_equal(f(gg.tensor(x2)).numpy(), kept)


@pytest.mark.parametrize("jit", JIT)
def test_the_callers_input_is_never_written(jit):
    f = gg.function(lambda x: (gg.exp(x) * 2.0, gg.sum(x * x)), jit_compile=jit)
    x = _x(3)
    before = x.copy()
    for _ in range(3):
        f(gg.tensor(x))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("jit", JIT)
def test_the_same_array_as_two_arguments(jit):
    f = gg.function(lambda a, b: a * b + gg.exp(b), jit_compile=jit)
    x, y = gg.tensor(_x(1)), gg.tensor(_x(2))
    for a, b in ((x, x), (y, y), (x, y), (y, x)):
        np.testing.assert_allclose(f(a, b).numpy(), (a * b + gg.exp(b)).numpy(), rtol=1e-6)
    assert f.trace_count == 2  # aliased and not


@pytest.mark.parametrize("jit", JIT)
def test_an_input_also_returned_is_copied(jit):
    f = gg.function(lambda a: (a, gg.exp(a)), jit_compile=jit)
    x1, x2 = gg.tensor(_x(1)), gg.tensor(_x(2))
    r1 = f(x1)
    r2 = f(x2)
    assert _stats(f)["inputs_in_place"] == 0 and _stats(f)["results_in_place"] == 1
    np.testing.assert_array_equal(r2[0].numpy(), x2.numpy())
    assert not np.shares_memory(r2[0].numpy(), x2.numpy())
    np.testing.assert_array_equal(r1[0].numpy(), x1.numpy())


def test_the_identity_function():
    f = gg.function(lambda a: a)
    x1, x2 = gg.tensor(_x(1)), gg.tensor(_x(2))
    r1, r2 = f(x1), f(x2)
    assert (_stats(f)["inputs_in_place"], _stats(f)["results_in_place"]) == (0, 0)
    np.testing.assert_array_equal(r1.numpy(), x1.numpy())
    np.testing.assert_array_equal(r2.numpy(), x2.numpy())


@pytest.mark.parametrize("view", ["strided", "transposed", "sliced", "reversed", "rows"])
@pytest.mark.parametrize("jit", JIT)
def test_inputs_of_other_layouts_are_copied_and_right(view, jit):
    """A view the caller passes: copied in where its layout is not C-contiguous; a slice of whole rows is
    C-contiguous, and read in place where it lies."""
    def make(seed):
        base = _x(seed, 4 * N).reshape(256, -1)
        return {"strided": base[:, ::2], "transposed": base.T, "sliced": base[:, 1:], "reversed": base[::-1],
                "rows": base[1:]}[view]
    f = gg.function(lambda a: gg.exp(a) * 2.0 + 1.0, jit_compile=jit)
    for seed in (1, 2, 3):
        a = make(seed)
        t = gg.as_tensor(a)
        assert t._data.strides == a.strides  # the view itself, as the caller holds it
        got = f(t).numpy()
        np.testing.assert_allclose(got, np.exp(a) * 2.0 + 1.0, rtol=1e-6)
        assert got.shape == a.shape
    assert _stats(f)["inputs_in_place"] == (view == "rows")
    c = _x(4, 4 * N).reshape(256, -1)  # a C-contiguous array of that shape: another signature, read in place
    np.testing.assert_allclose(f(gg.tensor(c)).numpy(), np.exp(c) * 2.0 + 1.0, rtol=1e-6)


def test_an_array_unlike_the_buffer_on_a_later_call_is_copied():
    """The same signature, but an array the steps cannot read as they read the buffer (read-only, unaligned):
    copied in, as without a binding."""
    f = gg.function(lambda a: gg.exp(a) * 2.0)
    x = _x(1)
    np.testing.assert_array_equal(f(gg.tensor(x)).numpy(), np.exp(x) * np.float32(2.0))
    read_only = _x(2)
    read_only.setflags(write=False)
    raw = np.zeros(N * 4 + 1, np.uint8)
    unaligned = np.ndarray(N, np.float32, buffer=raw, offset=1)
    unaligned[...] = _x(3)
    for a in (read_only, unaligned):
        assert not (a.flags.writeable and a.flags.aligned)
        np.testing.assert_array_equal(f(gg.as_tensor(a)).numpy(), np.exp(a) * np.float32(2.0))
    assert f.trace_count == 1


@pytest.mark.parametrize("make", [lambda: np.float32(1.5) * np.ones((), np.float32), lambda: np.zeros(0, np.float32),
                                  lambda: np.full(1, 1.5, np.float32), lambda: _x(1)],
                         ids=["0-d", "empty", "one", "large"])
@pytest.mark.parametrize("jit", JIT)
def test_small_and_odd_shapes(make, jit):
    f = gg.function(lambda a: gg.sum(gg.exp(a)) + gg.exp(a), jit_compile=jit)
    for _ in range(3):
        a = make()
        np.testing.assert_allclose(f(gg.tensor(a)).numpy(), np.sum(np.exp(a)) + np.exp(a), rtol=1e-5)


def test_int_and_bool_inputs():
    f = gg.function(lambda i, m, x: gg.where(m, gg.cast(i, gg.float32), x * 2.0))
    rng = np.random.default_rng(0)
    for _ in range(3):
        i, m, x = rng.integers(-5, 5, N), rng.random(N) < 0.5, _x(int(rng.integers(9)))
        got = f(gg.tensor(i), gg.tensor(m), gg.tensor(x)).numpy()
        np.testing.assert_array_equal(got, np.where(m, i.astype(np.float32), x * np.float32(2.0)))


@pytest.mark.parametrize("jit", JIT)
def test_a_returned_value_also_read_by_a_later_step(jit):
    def fn(x):
        y = gg.exp(x)
        return y, gg.log(y * 2.0)
    f = gg.function(fn, jit_compile=jit)
    results = []
    for seed in (1, 2, 3):
        x = gg.tensor(_x(seed))
        results.append((x, [r.numpy() for r in f(x)]))
    assert _stats(f)["results_in_place"] >= 1
    for x, (y, z) in results:
        np.testing.assert_allclose(y, np.exp(x.numpy()), rtol=1e-6)
        np.testing.assert_allclose(z, np.log(np.exp(x.numpy()) * 2.0), rtol=1e-6)


def test_a_custom_gradient_reading_the_input_in_its_closure():
    """The custom gradient's backward is a call step that reads the input through its closure, not its
    arguments: the plan copies the input in, so the backward sees this call's values."""
    @gg.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * gg.erf(x) * x  # erf has no replay kernel: the backward is a call step
        return x * x * gg.erf(x), grad

    def fn(x):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(cube(x))
        return tape.gradient(y, x)
    f = gg.function(fn)
    for seed in (1, 2, 3):
        x = gg.tensor(_x(seed))
        np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
    assert _stats(f)["call_steps"] >= 1 and _stats(f)["inputs_in_place"] == 0


def test_a_custom_gradient_reading_another_input_only_in_its_closure():
    """``s`` reaches the backward (a call step: erf has no replay kernel) through its closure, not through its
    arguments: a plan with such a call step binds nothing in place, so the backward reads this call's ``s``."""
    def fn(x, s):
        @gg.custom_gradient
        def scaled(x):
            def grad(dy):
                return dy * gg.erf(s)
            return x * 2.0, grad
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(scaled(x))
        return tape.gradient(y, x), gg.exp(s)
    f = gg.function(fn)
    x = gg.tensor(_x(0))
    for seed in (1, 2, 3):
        s = gg.tensor(_x(seed))
        got, want = f(x, s), fn(x, s)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert _stats(f)["inputs_in_place"] == 0


def test_an_optimizer_step_reading_a_large_input_gives_the_eager_weights():
    def run(traced):
        w = gg.Variable(np.linspace(-1.0, 1.0, N).astype(np.float32))
        opt = gg.optimizers.SGD(0.01)

        def step(x):
            return opt.minimize(lambda: gg.sum(gg.square(w * x - 1.0)), [w])
        step = gg.function(step) if traced else step
        for seed in (1, 2, 3, 4):
            step(gg.tensor(_x(seed)))
        return w.numpy(), step
    eager, _ = run(False)
    traced, f = run(True)
    np.testing.assert_array_equal(traced, eager)
    assert _stats(f)["inputs_in_place"] == 1


def test_an_optimizer_step_reading_the_input_itself_copies_it():
    """The input is the gradient the optimizer's call step applies: that step reads the input buffer through
    the trace's tensor, so the buffer is filled on every call (and the scaled copy read in place elsewhere)."""
    def run(traced):
        w = gg.Variable(np.zeros(N, np.float32))
        opt = gg.optimizers.SGD(0.5)

        def step(g):
            opt.apply_gradients([(g, w)])
            return gg.exp(g) * 2.0
        step = gg.function(step) if traced else step
        out = [step(gg.tensor(_x(seed))).numpy() for seed in (1, 2, 3)]
        return w.numpy(), out, step
    eager_w, eager_out, _ = run(False)
    traced_w, traced_out, f = run(True)
    np.testing.assert_array_equal(traced_w, eager_w)
    for a, b in zip(traced_out, eager_out):
        np.testing.assert_array_equal(a, b)
    assert _stats(f)["call_steps"] >= 1 and _stats(f)["inputs_in_place"] == 0


@pytest.mark.parametrize("jit", JIT)
def test_the_user_writes_the_input_between_calls(jit):
    f = gg.function(lambda a: gg.exp(a) * 2.0, jit_compile=jit)
    data = _x(1)
    t = gg.as_tensor(data)
    assert np.shares_memory(t._data, data)
    first = f(t).numpy()
    data *= 0.5
    second = f(t).numpy()
    np.testing.assert_allclose(second, np.exp(data) * 2.0, rtol=1e-6)
    assert not np.array_equal(first, second)


def test_a_result_fed_back_and_a_tensor_kept_from_the_trace():
    """A call's result passed to the next call (read in place: it is the caller's); a tensor the function kept
    from its trace, passed back in (the plan's own buffer, which its steps write during the call: copied in)."""
    box = types.SimpleNamespace()  # an object's attribute: not guarded, so the function does not trace again

    def body(a):
        y = gg.exp(a) * 0.5
        return y, gg.sqrt(y + a)  # a read after y is written: where a is y's own buffer, only a copy holds a

    def fn(a):
        box.kept, out = body(a)
        return out
    f = gg.function(fn)
    y = f(gg.tensor(_x(1)))
    leaked = box.kept
    for _ in range(3):
        want = body(y)[1].numpy()
        y = f(y)
        np.testing.assert_array_equal(y.numpy(), want)
    before = gg.tensor(leaked.numpy().copy())
    want = body(before)[1].numpy()
    np.testing.assert_array_equal(f(leaked).numpy(), want)
    assert f.trace_count == 1 and _stats(f)["inputs_in_place"] == 1


@pytest.mark.parametrize("jit", JIT)
def test_threads_calling_the_same_function(jit):
    f = gg.function(_w3, jit_compile=jit)
    f(gg.tensor(_x(0)))
    inputs = [gg.tensor(_x(seed)) for seed in range(4)]
    want = [f(x).numpy().copy() for x in inputs]
    errors = []

    def work(k):
        try:
            for _ in range(10):
                np.testing.assert_array_equal(f(inputs[k]).numpy(), want[k])
        except AssertionError as e:
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_small_plans_bind_nothing():
    """W1's size (16 floats): every input copied, every result copied out, the steps as built."""
    f = gg.function(lambda a: gg.tanh(a) * 1.01)
    f(gg.tensor(_x(0, 16)))
    (trace,) = f._traces.values()
    assert trace.plan.binding is None
    assert (trace.plan.stats["inputs_in_place"], trace.plan.stats["results_in_place"]) == (0, 0)


def test_a_profiled_replay_binds_as_a_replay_does():
    """Under ``gg.profiler.profile()`` each step is timed as the replay runs it: bound to the caller's arrays,
    the results the caller's own."""
    f = gg.function(lambda a: gg.exp(a) * 2.0)
    f(gg.tensor(_x(0)))
    x1, x2 = gg.tensor(_x(1)), gg.tensor(_x(2))
    with gg.profiler.profile():
        y1 = f(x1)
        kept = y1.numpy().copy()
        y2 = f(x2)
    np.testing.assert_array_equal(y1.numpy(), kept)
    np.testing.assert_array_equal(y2.numpy(), (gg.exp(x2) * 2.0).numpy())
    assert not np.shares_memory(y1.numpy(), y2.numpy())
