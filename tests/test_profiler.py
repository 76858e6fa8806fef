"""``gg.profile()``: counts per op type, gradient rule and gg.function; host and device time; the table; threads."""
import collections
import threading

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _recorder, profiler
from gpugrad.traced import Function
from gpugrad._tracing import declare
from gpugrad._tracing.plan import Plan
from gpugrad.optimizers.optimizer import Optimizer

from .conftest import device_params


def counted_ops(fn):
    """An oracle for the op counts: every op ``fn`` emits, by type, as a collecting recording (what a trace
    sees) takes them."""
    rec = _recorder.collecting_recording()
    stack = _recorder.push_tape(rec)
    try:
        fn()
    finally:
        _recorder.pop_tape(rec, stack)
    return collections.Counter(r[_recorder.TYPE] for r in rec.ops)


def by_kind(prof, kind):
    return {e["name"]: e for e in prof.entries() if e["kind"] == kind}


def w1_like(x, steps):
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(steps):
            y = gg.tanh(y) * 1.01
        loss = gg.sum(y)
    return tape.gradient(loss, x)


def assert_off():
    """Nothing of the profiler on any path: no hook, no entry in emit's check, gg.function's own __call__."""
    assert _recorder.on_op is None and _recorder.on_rule is None
    assert _recorder.observing == [] and _recorder.recording_anywhere == []
    assert Function.__call__ is not profiler._timed_function_call and Plan.run is not profiler._timed_plan_run
    assert Optimizer._apply_pairs is not profiler._timed_apply_pairs
    assert not profiler.hooks_installed()


@pytest.mark.parametrize("device", device_params())
def test_op_counts_equal_the_ops_run(device):
    x = gg.tensor(np.linspace(-1, 1, 16, dtype=np.float32), device=device)
    want = counted_ops(lambda: w1_like(x, 7))
    with gg.profile() as prof:
        w1_like(x, 7)
    got = {name: e["calls"] for name, e in by_kind(prof, "op").items()}
    assert got == dict(want)
    assert got["Tanh"] == 7 and got["Sum"] == 1


def test_ops_without_a_tape_are_counted():
    a = gg.tensor([1.0, 2.0, 3.0])
    with gg.profile() as prof:
        for _ in range(4):
            b = gg.exp(a)
        c, d = gg.split(b, [1, 2])  # an op of several outputs (emit_many)
    ops = by_kind(prof, "op")
    assert ops["Exp"]["calls"] == 4
    assert sum(e["calls"] for e in ops.values()) == sum(counted_ops(lambda: gg.split(gg.exp(a), [1, 2])).values()) + 3


def test_rules_are_counted_once_per_gradient_rule_call():
    x = gg.tensor(np.ones(4, np.float32))
    with gg.profile() as prof:
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(gg.tanh(gg.tanh(x)) * 3.0)
    assert by_kind(prof, "grad") == {}  # no gradient asked for: no rule ran
    with gg.profile() as prof:
        tape.gradient(y, x)
    grads = by_kind(prof, "grad")
    assert {name: e["calls"] for name, e in grads.items()} == {"Tanh": 2, "Mul": 1, "Sum": 1}
    assert grads["Tanh"]["bytes"] == 2 * 4 * 4  # each call returns one float32 gradient of 4 elements


def test_a_custom_gradient_backward_is_a_rule_entry():
    @gg.custom_gradient
    def clipped(x):
        def grad(dy):
            return dy * 0.5
        return gg.identity(x), grad

    x = gg.Variable([1.0, 2.0])
    with gg.profile() as prof:
        with gg.GradientTape() as tape:
            y = gg.sum(clipped(x))
        g = tape.gradient(y, x)
    assert g.numpy().tolist() == [0.5, 0.5]
    assert by_kind(prof, "grad")["CustomGradient:clipped"]["calls"] == 1


def test_bytes_are_the_outputs_nbytes():
    a = gg.tensor(np.zeros((3, 5), np.float64))
    with gg.profile() as prof:
        gg.exp(a)
        gg.sum(a, axis=0)
    ops = by_kind(prof, "op")
    assert ops["Exp"]["bytes"] == a.numpy().nbytes and ops["Sum"]["bytes"] == 5 * 8


def test_host_times_add_up_to_at_most_the_wall_time():
    x = gg.tensor(np.ones(16, np.float32))
    with gg.profile() as prof:
        w1_like(x, 20)
    rows = prof.entries()
    ops = sum(r["host_ms"] for r in rows if r["kind"] == "op")
    assert 0 < ops <= prof.wall_ms
    assert all(r["host_ms"] >= 0 and r["device_ms"] is None for r in rows)
    assert all(abs(r["percent"] - 100 * r["host_ms"] / prof.wall_ms) < 1e-9 for r in rows)


def test_function_calls_are_one_entry_per_call():
    @gg.function
    def step(a):
        return gg.exp(a) * 2.0

    a = gg.tensor([1.0, 2.0])
    step(a)  # traced outside the profile: the calls below replay
    with gg.profile() as prof:
        for _ in range(5):
            out = step(a)
    entry = by_kind(prof, "function")["test_function_calls_are_one_entry_per_call.<locals>.step"]
    assert entry["calls"] == 5 and entry["bytes"] == 5 * out.numpy().nbytes
    assert "Exp" not in by_kind(prof, "op")  # a replay runs kernels, not ops
    steps = by_kind(prof, "step")  # each of its steps, timed on the CPU
    assert {name: e["calls"] for name, e in steps.items()} == {"Exp": 5, "Mul": 5}
    assert steps["Exp"]["bytes"] == 5 * 8 and sum(e["host_ms"] for e in steps.values()) <= entry["host_ms"]
    np.testing.assert_array_equal(out.numpy(), np.exp(np.float32([1.0, 2.0])) * np.float32(2.0))


def test_a_trace_made_while_profiling_replays_the_same_values():
    w = gg.Variable([0.5, -1.0])
    opt = gg.optimizers.SGD(0.1)

    def fit(x):
        return opt.minimize(lambda: gg.sum(gg.square(w * x)), [w])

    eager_w, eager_opt = gg.Variable([0.5, -1.0]), gg.optimizers.SGD(0.1)
    want = [float(eager_opt.minimize(lambda: gg.sum(gg.square(eager_w * gg.tensor([1.0, 2.0]))), [eager_w]))
            for _ in range(3)]
    step = gg.function(fit)
    with gg.profile() as prof:
        got = [float(step(gg.tensor([1.0, 2.0]))) for _ in range(3)]
    assert got == want and step.trace_count == 1
    assert by_kind(prof, "function")[fit.__qualname__]["calls"] == 3
    assert by_kind(prof, "grad")["Square"]["calls"] == 1  # the rules ran at the trace only
    steps = by_kind(prof, "step")  # the two replays: kernel steps and the optimizer's call step
    assert steps["Optimizer._apply_pairs"]["calls"] == 2 and steps["Square"]["calls"] == 2
    assert steps["Square"]["bytes"] == 2 * 2 * 4
    assert by_kind(prof, "update")["SGD"]["calls"] == 1  # the update at the trace; the replays' are steps


def test_optimizer_updates_are_entries_and_keep_their_declaration():
    w = gg.Variable(np.ones(3, np.float32))
    opt = gg.optimizers.Adam(0.1)
    with gg.profile() as prof:
        assert declare.undeclared(Optimizer._apply_pairs) is declare.undeclared(profiler._apply_pairs)
        for _ in range(4):
            opt.minimize(lambda: gg.sum(gg.square(w)), [w])
    update = by_kind(prof, "update")["Adam"]
    assert update["calls"] == 4 and update["bytes"] == 4 * 3 * 4  # the variable it updates, each call


def test_table_is_sorted_and_limited():
    a = gg.tensor(np.ones(64, np.float32))
    with gg.profile() as prof:
        for _ in range(30):
            gg.exp(a)
        for _ in range(3):
            gg.tanh(a)
        gg.sum(a)
    lines = prof.table().splitlines()
    assert lines[0].split()[:3] == ["name", "kind", "calls"]
    body = [line.split() for line in lines[2:-1]]
    host = [float(row[3]) for row in body]
    assert host == sorted(host, reverse=True) and len(body) == 3
    by_calls = [line.split() for line in prof.table(sort_by="calls", limit=2).splitlines()[2:-1]]
    assert [row[0] for row in by_calls] == ["Exp", "Tanh"] and [int(row[2]) for row in by_calls] == [30, 3]
    assert "3 entries (1 not shown)" in prof.table(sort_by="calls", limit=2).splitlines()[-1]
    assert [e["name"] for e in prof.entries(sort_by="name")] == ["Exp", "Sum", "Tanh"]


@pytest.mark.parametrize("bad", [dict(sort_by="speed"), dict(limit=-1), dict(limit=1.5), dict(limit=True)])
def test_bad_table_arguments_are_refused(bad):
    with gg.profile() as prof:
        gg.exp(gg.tensor([1.0]))
    with pytest.raises(ValueError):
        prof.table(**bad)


def test_a_profile_is_read_after_its_block_and_opened_once():
    prof = gg.profile()
    with prof:
        gg.exp(gg.tensor([1.0]))
        with pytest.raises(RuntimeError, match="after its block"):
            prof.entries()
    with pytest.raises(RuntimeError, match="opened once"):
        with prof:
            pass
    assert_off()


def test_nested_profiles_each_record_what_runs_while_they_are_open():
    a = gg.tensor([1.0, 2.0])
    with gg.profile() as outer:
        gg.exp(a)
        with gg.profile() as inner:
            gg.tanh(a)
            gg.exp(a)
        gg.tanh(a)
        assert profiler.hooks_installed()
    assert {e["name"]: e["calls"] for e in inner.entries()} == {"Tanh": 1, "Exp": 1}
    assert {e["name"]: e["calls"] for e in outer.entries()} == {"Tanh": 2, "Exp": 2}
    assert_off()


def test_only_the_opening_thread_is_recorded():
    a = gg.tensor(np.ones(8))
    started, go, done = threading.Event(), threading.Event(), threading.Event()
    other_profile = []

    def worker():
        with gg.profile() as mine:  # a profile of its own, open at the same time
            started.set()
            go.wait(10)
            for _ in range(7):
                gg.tanh(a)
        other_profile.append(mine)
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    started.wait(10)
    with gg.profile() as prof:
        go.set()
        for _ in range(3):
            gg.exp(a)
        done.wait(10)
        x = gg.tensor(np.ones(3))
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(x * 2.0)
        runner = threading.Thread(target=lambda: tape.gradient(y, x))  # the sweep in another thread
        runner.start()
        runner.join()
    t.join()
    assert {e["name"]: e["calls"] for e in prof.entries()} == {"Exp": 3, "Mul": 1, "Sum": 1}
    assert {e["name"]: e["calls"] for e in other_profile[0].entries()} == {"Tanh": 7}
    assert_off()


def test_with_no_profile_open_the_hooks_are_absent():
    assert_off()
    with gg.profile():
        assert _recorder.on_op is profiler._op_emitted and _recorder.on_rule is profiler._rule_called
        assert Function.__call__ is profiler._timed_function_call
        assert len(_recorder.observing) == 1 and len(_recorder.recording_anywhere) == 1
    assert_off()
    with pytest.raises(ZeroDivisionError):
        with gg.profile():
            1 / 0
    assert_off()


def test_a_tape_and_a_trace_still_work_under_a_profile():
    x = gg.tensor(np.linspace(-1, 1, 16, dtype=np.float32))
    want = w1_like(x, 5).numpy()
    traced = gg.function(lambda v: w1_like(v, 5))
    with gg.profile():
        np.testing.assert_array_equal(w1_like(x, 5).numpy(), want)
        np.testing.assert_array_equal(traced(x).numpy(), want)
        np.testing.assert_array_equal(traced(x).numpy(), want)
    np.testing.assert_array_equal(traced(x).numpy(), want)
    assert traced.trace_count == 1


@pytest.mark.gpu
def test_device_time_through_cuda_events():
    x = gg.tensor(np.linspace(-1, 1, 4096, dtype=np.float32), device="cuda")
    with gg.profile() as prof:
        w1_like(x, 3)
        gg.exp(gg.tensor([1.0], device="cpu"))
    rows = {(e["kind"], e["name"]): e for e in prof.entries()}
    assert rows[("op", "Tanh")]["calls"] == 3 and rows[("grad", "Tanh")]["calls"] == 3
    assert rows[("op", "Exp")]["device_ms"] is None  # work on the CPU has no device time
    on_gpu = [e for k, e in rows.items() if k != ("op", "Exp")]
    assert all(e["device_ms"] is not None and e["device_ms"] >= 0 for e in on_gpu)
    assert "-" not in prof.table().splitlines()[2].split()[6]  # the top row, on the GPU, shows device ms
