"""gg.function's capture by declaration: what it sees, and what it refuses rather than freeze.

Each test compares a traced function's calls with the same Python function run eagerly on the same
inputs (the oracle): a replay either computes what the eager call computes, or the signature runs
eagerly with its reason in ``diagnostics()``, or the call raises TraceError. Never a constant.
"""
import asyncio
import cProfile
import inspect
import pathlib
import sys
import threading
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tracing import declare, state

PACKAGE = pathlib.Path(gg.__file__).parent


def _inputs(n=4, seed=0):
    rng = np.random.default_rng(seed)
    return [gg.tensor(rng.standard_normal(3).astype(np.float32)) for _ in range(n)]


def _quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the one "runs eagerly" warning
        return f(*args)


def _same_as_eager(fn, inputs, **expect):
    """Call gg.function(fn) and fn on each input; every result equal to the bit."""
    traced = gg.function(fn)
    for x in inputs:
        np.testing.assert_array_equal(_quiet(traced, x).numpy(), fn(x).numpy())
    return traced


# --- no interpreter hook, no frame or bytecode reading ------------------------------------------------------------

def test_the_library_sets_no_interpreter_hook():
    hooks = ("setprofile", "settrace", "sys.monitoring", "f_lasti", "f_locals", "co_code")
    found = [(path.relative_to(PACKAGE), hook) for path in PACKAGE.rglob("*.py")
             for hook in hooks if hook in path.read_text()]
    assert found == []


def test_every_public_op_and_method_is_declared():
    from gpugrad import ops
    undeclared = [name for name in ops._EVERY_OP if declare.kind_of(getattr(ops, name)) is None]
    undeclared += [name for name, value in vars(gg.Tensor).items()
                   if getattr(value, "__module__", "").startswith("gpugrad.ops") and declare.kind_of(value) is None]
    assert undeclared == []


def test_declared_functions_keep_their_signature_and_docs():
    assert inspect.signature(gg.clip) == inspect.signature(declare.undeclared(gg.clip))
    assert gg.exp.__doc__ == declare.undeclared(gg.exp).__doc__ and gg.exp.__name__ == "exp"
    assert gg.exp.__globals__ is sys.modules["gpugrad.ops.elementwise.math"].__dict__  # doctest finds its examples
    with pytest.raises(TypeError):
        gg.exp()  # the same TypeError as the undeclared function's


@pytest.mark.parametrize("kind,effects", [("pure", None), ("host", None), (declare.HOST, "")])
def test_a_declaration_refuses_an_unknown_kind_and_a_host_step_without_effects(kind, effects):
    with pytest.raises(ValueError):
        declare.root(kind, effects=effects)


# --- profilers ------------------------------------------------------------------------------------------------------

def test_a_profiler_around_the_call_changes_nothing():
    xs = _inputs()
    f = gg.function(lambda x: gg.exp(x) * 2.0)
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning on any Python
            results = [f(x).numpy() for x in xs]
    finally:
        profiler.disable()
    for x, r in zip(xs, results):
        np.testing.assert_array_equal(r, (gg.exp(x) * 2.0).numpy())
    assert f.trace_count == 1 and "kernel steps" in f.diagnostics()[0]


def test_a_profiler_switched_on_inside_the_function_does_not_freeze_it():
    def fn(x):
        profiler = cProfile.Profile()
        profiler.enable()
        y = gg.tanh(x) + 1.0
        profiler.disable()
        return y
    f = _same_as_eager(fn, _inputs())
    assert f.trace_count == 1


def test_a_trace_function_of_the_user_is_left_as_it_was():
    seen = []

    def tracer(frame, event, arg):
        seen.append(event)
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        f = gg.function(lambda x: x * 3.0)
        out = f(gg.tensor([1.0]))
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(previous)
    assert out.numpy().tolist() == [3.0]


# --- threads --------------------------------------------------------------------------------------------------------

def _in_thread(fn, *args):
    box = []
    thread = threading.Thread(target=lambda: box.append(fn(*args)))
    thread.start()
    thread.join()
    return box[0]


def test_an_op_in_a_helper_thread_is_never_a_constant():
    def fn(x):
        y = _in_thread(gg.exp, x)  # work the tracing thread's capture cannot see
        return y + 1.0
    f = _same_as_eager(fn, _inputs())
    assert "another thread" in f.diagnostics()[0]


def test_a_helper_thread_on_data_of_its_own_leaves_the_trace_alone():
    def fn(x):
        c = _in_thread(lambda: gg.ones(3) * 2.0)  # no traced input: a constant, as if made before the call
        return x * c
    f = _same_as_eager(fn, _inputs())
    assert "kernel steps" in f.diagnostics()[0]


def _changing_variable_calls(fn, variable, n=4):
    """gg.function(fn) and fn on the same inputs while ``variable`` changes between calls: equal to the bit."""
    traced = gg.function(fn)
    for i, x in enumerate(_inputs(n)):
        variable.assign(np.full(variable.shape, i + 0.5, np.float32))
        got, want = _quiet(traced, x), fn(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,),
                        strict=True):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    return traced


def test_a_helper_threads_value_of_a_variable_the_trace_has_not_seen_is_never_a_constant():
    """The helper reads ``v`` first (the trace has not read it): what it hands back changes with ``v``."""
    v = gg.Variable([1.0, 2.0, 3.0])
    f = _changing_variable_calls(lambda x: x * _in_thread(lambda: v * 2.0), v)
    assert "another thread" in f.diagnostics()[0]


def test_a_helper_threads_chain_from_an_unseen_variable_is_never_a_constant():
    """Two helper ops deep (``exp(v) + 1``), then a view of it, reach the traced function's op."""
    v = gg.Variable([1.0, 2.0, 3.0])
    f = _changing_variable_calls(lambda x: x - _in_thread(lambda: (gg.exp(v) + 1.0)[::-1]), v)
    assert "another thread" in f.diagnostics()[0]


def test_a_helper_threads_value_of_an_unseen_variable_returned_as_it_is_is_never_a_constant():
    v = gg.Variable([1.0, 2.0, 3.0])
    f = _changing_variable_calls(lambda x: (x + 1.0, _in_thread(lambda: v * 3.0)), v)
    assert "another thread" in f.diagnostics()[0]


@pytest.mark.parametrize("read", [lambda v: gg.tensor(v.numpy() * 2.0), lambda v: gg.from_numpy(v.data * 2.0),
                                  lambda v: gg.tensor(v[1].item()), lambda v: gg.tensor(np.asarray(v + 1.0))],
                         ids=["numpy", "data", "item of a view", "asarray of a sum"])
def test_a_helper_threads_host_read_of_an_unseen_variable_is_never_a_constant(read):
    """The values leave the ops through the host (a NumPy copy, the raw buffer, a number) and come back
    in a new tensor: the trace cannot follow where they go, so it runs eagerly."""
    v = gg.Variable([1.0, 2.0, 3.0])
    f = _changing_variable_calls(lambda x: x * _in_thread(lambda: read(v)), v)
    assert "another thread while tracing" in f.diagnostics()[0]


def test_a_helper_thread_reading_a_variable_for_itself_leaves_the_trace_alone():
    """What the helper made from a variable and kept to itself: the trace replays (no refusal for nothing)."""
    v = gg.Variable([1.0, 2.0, 3.0])

    def fn(x):
        _in_thread(lambda: v * 2.0)  # its value stays in the helper
        return gg.exp(x)
    f = _changing_variable_calls(fn, v)
    assert f.trace_count == 1 and "kernel steps" in f.diagnostics()[0]


def test_two_threads_tracing_at_once_each_trace_their_own():
    barrier = threading.Barrier(2)
    v = gg.Variable([1.0, 2.0, 3.0])

    def fn(x):
        barrier.wait(timeout=10)  # both threads are inside their traces now
        y = gg.exp(x) * 2.0
        barrier.wait(timeout=10)
        return y
    f, g = gg.function(fn), gg.function(lambda x: fn(x) + v)
    xs = _inputs(2)
    results = {}
    threads = [threading.Thread(target=lambda: results.setdefault("f", f(xs[0]))),
               threading.Thread(target=lambda: results.setdefault("g", g(xs[1])))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(results["f"].numpy(), (gg.exp(xs[0]) * 2.0).numpy())
    np.testing.assert_array_equal(results["g"].numpy(), (gg.exp(xs[1]) * 2.0 + v).numpy())
    assert f.trace_count == g.trace_count == 1
    barrier = threading.Barrier(1)  # replays: no waiting
    for x in _inputs(3, seed=1):
        np.testing.assert_array_equal(f(x).numpy(), (gg.exp(x) * 2.0).numpy())
        np.testing.assert_array_equal(g(x).numpy(), (gg.exp(x) * 2.0 + v).numpy())
    assert "kernel steps" in f.diagnostics()[0] and "kernel steps" in g.diagnostics()[0]


def test_a_function_traced_while_another_thread_replays():
    w = gg.Variable([0.5, -1.0, 2.0])
    replayed = gg.function(lambda x: gg.sum(gg.square(x * w)))
    xs = _inputs(50, seed=2)
    replayed(xs[0])  # traced here: the thread below replays it
    errors, outs = [], []
    inside = threading.Event()

    def replay_loop():
        try:
            inside.wait(timeout=10)
            outs.extend((x, replayed(x)) for x in xs)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    thread = threading.Thread(target=replay_loop)
    thread.start()

    def traced_slowly(x):
        inside.set()  # the other thread replays while this one traces
        y = x
        for _ in range(200):
            y = gg.tanh(y)
        return y
    t = gg.function(traced_slowly)
    y = t(xs[1])
    thread.join()
    assert errors == []
    np.testing.assert_array_equal(y.numpy(), traced_slowly(xs[1]).numpy())
    for x, out in outs:
        np.testing.assert_array_equal(out.numpy(), gg.sum(gg.square(x * w)).numpy())
    assert replayed.trace_count == 1 and "kernel steps" in replayed.diagnostics()[0]
    assert "kernel steps" in t.diagnostics()[0]


def test_tracing_in_one_thread_leaves_other_threads_functions_traced():
    gate, done = threading.Event(), threading.Event()
    other = gg.function(lambda x: x * 5.0)

    def slow(x):
        gate.set()
        done.wait(timeout=10)
        return x + 1.0
    f = gg.function(slow)
    thread = threading.Thread(target=lambda: f(gg.tensor([1.0])))
    thread.start()
    gate.wait(timeout=10)
    try:
        assert state.active  # the other thread traces now
        assert [other(gg.tensor([float(i)])).numpy().tolist() for i in range(3)] == [[0.0], [5.0], [10.0]]
        assert other.trace_count == 1 and "kernel steps" in other.diagnostics()[0]
    finally:
        done.set()
        thread.join()


# --- lazy bodies: generators and coroutines ----------------------------------------------------------------------

def test_a_generator_function_gives_a_fresh_generator_every_call():
    def gen(x):
        yield gg.exp(x)
        yield x * 2.0
    f = gg.function(gen)
    for x in _inputs(3):
        got = [t.numpy() for t in _quiet(f, x)]
        want = [t.numpy() for t in gen(x)]
        assert len(got) == 2
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
    assert "generator function" in f.diagnostics()[0]


def test_a_coroutine_function_gives_a_fresh_coroutine_every_call():
    async def coro(x):
        await asyncio.sleep(0)
        return gg.exp(x) + 1.0
    f = gg.function(coro)
    for x in _inputs(3):
        np.testing.assert_array_equal(asyncio.run(_quiet(f, x)).numpy(), (gg.exp(x) + 1.0).numpy())
    assert "coroutine" in f.diagnostics()[0]


def test_a_function_returning_a_generator_runs_eagerly():
    def make(x):
        return (t for t in (x * 2.0, x * 3.0))
    f = gg.function(make)
    for x in _inputs(3):
        np.testing.assert_array_equal(np.stack([t.numpy() for t in _quiet(f, x)]),
                                      np.stack([(x * 2.0).numpy(), (x * 3.0).numpy()]))
    assert "generator" in f.diagnostics()[0]


# --- errors caught, tensors made outside the ops ------------------------------------------------------------------

def test_an_op_whose_error_is_caught_runs_eagerly():
    def fn(x):
        try:
            y = gg.matmul(x, x)  # a (3,) @ (3,) is fine: caught error below is the reshape
            y = gg.reshape(x, (2, 2))
        except gg.ShapeError:
            y = x * 2.0
        return y
    f = _same_as_eager(fn, _inputs())
    assert "raised" in f.diagnostics()[0]


def test_a_tensor_copied_outside_the_ops_is_not_frozen():
    f = _same_as_eager(lambda x: gg.Tensor(x) * 2.0, _inputs())
    assert "made outside" in f.diagnostics()[0]


def test_a_constant_made_inside_the_function_from_python_data_replays():
    f = _same_as_eager(lambda x: x * gg.Tensor([1.0, 2.0, 3.0]), _inputs())
    assert "kernel steps" in f.diagnostics()[0]


# --- custom gradients and effects -------------------------------------------------------------------------------

@gg.custom_gradient
def _clipped_identity(x):
    def grad(dy):
        return gg.clip(dy, -0.5, 0.5) * gg.exp(x)  # reads the forward's input: new every call
    return x * 1.0, grad


@gg.custom_gradient
def _host_grad(x):
    def grad(dy):
        return dy * float(np.sum(x.numpy()))  # a host read inside the backward: re-called on every replay
    return gg.square(x), grad


@pytest.mark.parametrize("op", [_clipped_identity, _host_grad])
def test_a_custom_gradient_is_replayed_by_calling_its_backward_again(op):
    def step(x):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(op(x) * 3.0)
        return tape.gradient(y, x)
    f = _same_as_eager(step, _inputs(5))
    assert f.trace_count == 1 and "runs eagerly" not in f.diagnostics()[0]


def test_batch_norm_declares_its_effects_and_replays_them():
    assert declare.kind_of(gg.batch_norm) == declare.HOST and declare.kind_of(gg.dropout) == declare.HOST
    stats = [gg.Variable(np.zeros(2, np.float32)), gg.Variable(np.ones(2, np.float32))]
    twin = [gg.Variable(np.zeros(2, np.float32)), gg.Variable(np.ones(2, np.float32))]

    def step(stats):
        def fn(x):
            return gg.batch_norm(x * 1.0, stats[0], stats[1], training=True, momentum=0.5)
        return fn
    traced, eager = gg.function(step(stats)), step(twin)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = gg.tensor(rng.standard_normal((5, 2)).astype(np.float32))
        np.testing.assert_array_equal(traced(x).numpy(), eager(x).numpy())
        for a, b in zip(stats, twin):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert traced.trace_count == 1
    assert "call steps (batch_norm)" in traced.diagnostics()[0]  # called again on every replay, never a kernel


def test_an_op_emitted_by_an_undeclared_function_is_never_a_constant():
    from gpugrad._recorder import emit

    def cube(x):  # a user's op written on emit, neither declared nor given a replay kernel
        return emit("UserCubeWithoutReplay", x._data ** 3, x._device, (x,))
    f = _same_as_eager(lambda x: cube(x) + 1.0, _inputs())
    assert "does not know" in f.diagnostics()[0]


# A gradient rule that picks its formula by the data (cumprod's rule: a zero in x or not) runs other ops when a
# later call takes the other branch: the replay stops before any effect and the call traces again.
def _cumprod_grad(x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.cumprod(x) * gg.tensor([1.0, 2.0, 3.0]))
    return tape.gradient(y, x)


def test_a_rule_that_takes_another_branch_on_replay_traces_again_to_the_eager_bits():
    f = gg.function(_cumprod_grad)
    for values in ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0], [0.0, 2.0, 0.0], [1.5, 2.0, 3.0]):
        x = gg.tensor(values)
        np.testing.assert_array_equal(f(x).numpy(), _cumprod_grad(x).numpy())
    assert 2 <= f.trace_count <= 4, f.diagnostics()


def test_after_a_step_with_effects_a_changed_branch_is_a_clear_trace_error():
    v = gg.Variable([1.0, 2.0, 3.0])

    def step(x):
        v.assign_add(x)  # a write the replay has made before the rule runs: it cannot start over
        return _cumprod_grad(gg.identity(v))
    f = gg.function(step)
    f(gg.tensor([0.0, 0.0, 0.0]))
    before = v.numpy().copy()
    with pytest.raises(gg.TraceError, match="on replay where the trace ran"):
        f(gg.tensor([0.0, -2.0, 0.0]))  # v gets a zero: the rule's other branch
    np.testing.assert_array_equal(v.numpy(), before + [0.0, -2.0, 0.0])  # the write happened once
