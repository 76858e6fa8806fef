"""Recording and differentiating create no reference cycles, so memory is freed at once.

A cycle keeps its arrays alive until Python's cyclic GC happens to run; with
large arrays that is fresh memory (page faults) on every step.
"""
import gc
import weakref

import numpy as np

import gpugrad as gg


def run_step():
    x = gg.tensor(np.linspace(0.5, 2.0, 1000))
    w = gg.Variable(np.ones(1000))
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sum(gg.square(gg.log(x * w)))
    grads = tape.gradient(loss, {"x": x, "w": [w]})
    return weakref.ref(grads["x"]), weakref.ref(grads["w"][0]), grads


def test_gradient_structures_are_freed_without_the_cyclic_gc():
    gc.collect()
    gc.disable()
    try:
        ref_x, ref_w, grads = run_step()
        assert ref_x() is not None and ref_w() is not None
        del grads
        assert ref_x() is None and ref_w() is None
        assert gc.collect() == 0  # nothing was left for the cyclic collector
    finally:
        gc.enable()


@gg.custom_gradient
def double(x):
    return x * 2.0, lambda dy: dy * 2.0


def persistent_custom_step():
    x = gg.tensor(np.ones(10))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = gg.sum(double(gg.exp(x)))
    g1, g2 = tape.gradient(y, x), tape.gradient(y, [x])[0]
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())


def test_persistent_tape_and_custom_gradient_leave_no_cycles():
    persistent_custom_step()  # first use imports what it needs; those modules hold cycles of their own
    gc.collect()
    gc.disable()
    try:
        persistent_custom_step()
        assert gc.collect() == 0
    finally:
        gc.enable()
