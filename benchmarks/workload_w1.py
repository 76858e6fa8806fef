"""W1's workload, shared by its benchmark (test_tape_overhead.py) and benchmarks/jit_engines.py: 500 times
``y = tanh(y) * 1.01`` on 16 floats, sum, one forward+backward (1001 recorded ops)."""
import numpy as np

import gpugrad as gg

STEPS = 500
OPS = 2 * STEPS + 1
SCALE = 1.01


def make_x():
    return np.random.default_rng(0).uniform(-1.0, 1.0, 16).astype(np.float32)


def gpugrad_w1(x):
    """The gradient of ``sum(f(x))`` with a GradientTape, ``f`` = 500 × (tanh, * 1.01)."""
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(STEPS):
            y = gg.tanh(y) * SCALE
        loss = gg.sum(y)
    return tape.gradient(loss, x)


def numpy_w1(x, xp=np):
    """The same gradient by hand: keep each tanh output t, then dy = dy * (1 - t^2) * 1.01 backwards."""
    one, scale = np.float32(1.0), np.float32(SCALE)
    saved = []
    y = x
    for _ in range(STEPS):
        t = xp.tanh(y)
        saved.append(t)
        y = t * scale
    loss = y.sum()  # noqa: F841 - the forward pass computes the loss as the others do
    dy = xp.ones_like(y)
    for t in reversed(saved):
        dy = dy * scale * (one - t * t)
    return dy
