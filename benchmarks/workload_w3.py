"""W3's workload, shared by its benchmark (test_large_gradient.py) and benchmarks/jit_engines.py: the
gradient of ``sum(square(log(x)))`` for 4 Mi float32 values in [0.5, 2)."""
import numpy as np

import gpugrad as gg

N = 4 * 1024 * 1024


def make_x():
    return np.random.default_rng(0).uniform(0.5, 2.0, N).astype(np.float32)


def gpugrad_w3(x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        loss = gg.sum(gg.square(gg.log(x)))
    return tape.gradient(loss, x)


def numpy_w3(x, xp=np):
    l = xp.log(x)  # noqa: E741
    s = xp.square(l)
    loss = s.sum()  # noqa: F841 - the forward pass computes the loss as the others do
    dl = 2.0 * l  # d(l^2)/dl, times d(sum)/ds = 1
    dx = dl / x  # d(log x)/dx = 1/x
    return dx
