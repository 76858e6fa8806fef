"""The recorder's explicit hook: a recording that follows every op (a trace's collector, anomaly mode).

It takes every record emitted while it is on the thread's stack, through each path of the
recorder (``emit`` for one output, ``emit_many`` for several, ``record`` for an op reading a
variable), and follows no tensor, so nothing mistakes it for a tape that follows one.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad._recorder import TYPE, Recording, collecting_recording, pop_tape, push_tape


def collect(fn, on_record=None):
    """The recording that took the ops of ``fn()``, and ``fn()``."""
    r = collecting_recording(on_record)
    stack = push_tape(r)
    try:
        result = fn()
    finally:
        pop_tape(r, stack)
    return r, result


def test_it_takes_every_op_through_each_path_of_the_recorder():
    x, v = gg.tensor([1.0, 2.0, 3.0, 4.0]), gg.Variable([1.0, 2.0])

    def fn():
        a, b = gg.split(x, 2)  # several outputs: emit_many
        return gg.exp(a) * v  # one output (Exp), then an op reading a variable (record)

    r, _ = collect(fn)
    assert [rec[TYPE] for rec in r.ops] == ["Split", "Exp", "Mul"]
    assert not r.watched and not r.roots and not r.variables  # it follows nothing
    gg.exp(x)
    assert len(r.ops) == 3  # off the stack, it takes nothing


def test_on_record_gets_each_record_in_place_of_the_list():
    seen = []
    r, _ = collect(lambda: gg.tanh(gg.tensor(1.0)) + 1.0, on_record=seen.append)
    assert [rec[TYPE] for rec in seen] == ["Tanh", "Add"] and r.ops == []


def test_a_tensor_it_sees_is_not_one_a_tape_follows():
    """An op that refuses, as a constant, a tensor a tape follows takes an unwatched one under a collecting
    recording as it does eagerly (a look-alike map that held every id made LeakyRelu refuse it)."""
    x, alpha = gg.tensor([1.0, -2.0]), gg.tensor(0.1)
    _, got = collect(lambda: gg.leaky_relu(x, alpha=alpha))
    np.testing.assert_array_equal(got.numpy(), gg.leaky_relu(x, alpha=0.1).numpy())


def test_a_tape_inside_it_records_only_what_it_follows():
    x, c = gg.tensor(2.0), gg.tensor(3.0)

    def fn():
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = x * x
            gg.exp(c)  # not on the tape's path
        return tape, y

    r, (tape, y) = collect(fn)
    assert [rec[TYPE] for rec in tape._ops] == ["Mul"]
    assert [rec[TYPE] for rec in r.ops] == ["Mul", "Exp"]
    assert tape.gradient(y, x).numpy() == pytest.approx(4.0)


def test_on_record_needs_a_recording_that_follows_every_op():
    with pytest.raises(ValueError, match="follows_all"):
        Recording(None, watch_accessed=False, on_record=print)
