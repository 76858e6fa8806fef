"""W1, tape overhead: 500 times ``y = tanh(y) * 1.01`` on 16 floats, sum, one forward+backward.

The arrays are tiny, so the time is the per-op cost of recording and sweeping
the tape: it is reported as microseconds per recorded op (500 Tanh + 500 Mul +
1 Sum = 1001 ops). Beside it in the same group: the same function through
``gg.function`` (traced once, then replayed: no tape, no Tensor per op), the
same function written by hand in NumPy (forward keeping the tanh outputs,
backward through them; the same code in CuPy on a GPU), and PyTorch on each
device it can use when it is installed.
"""
import functools

import numpy as np
import pytest

import gpugrad as gg

from .conftest import (array_module, baseline_impl, device_params, run, run_interleaved, synchronize, to_host,
                       torch_device, torch_synchronize, with_jit_peer)
from .workload_w1 import OPS, SCALE, STEPS, gpugrad_w1, make_x, numpy_w1  # noqa: F401 - the workload, shared

ROUNDS, WARMUP = 200, 10  # about 2 s a peer: long enough that each sees the same busy and quiet spells
GROUP = "W1 tape overhead (16 floats, 1001 ops)"
LABEL = "W1 tape overhead (1001 ops on 16 floats)"


def traced_w1(x, jit_compile=False):
    """``gpugrad_w1`` through ``gg.function``, called twice on ``x``: traced, then replayed once (untimed)."""
    fn = gg.function(gpugrad_w1, jit_compile=jit_compile)
    fn(x)
    fn(x)
    return fn


def torch_w1(torch, x):
    y = x
    for _ in range(STEPS):
        y = torch.tanh(y) * SCALE
    (dx,) = torch.autograd.grad(y.sum(), x)
    return dx


def reference_gradient(x):
    """The float64 gradient, to check that the three benchmarks compute the same thing."""
    y, dy = x.astype(np.float64), np.ones(x.shape)
    saved = []
    for _ in range(STEPS):
        y = np.tanh(y)
        saved.append(y)
        y = y * SCALE
    for t in reversed(saved):
        dy = dy * SCALE * (1 - t * t)
    return dy


def test_w1_records_1001_ops():
    """The op count that ``us_per_op`` divides by is what the tape really records."""
    x = gg.tensor(make_x(), device="cpu")
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x
        for _ in range(STEPS):
            y = gg.tanh(y) * SCALE
        loss = gg.sum(y)
    assert len(tape._ops) == OPS
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), reference_gradient(make_x()), rtol=1e-3)


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params())
def test_w1_gpugrad(benchmark, device):
    x = gg.tensor(make_x(), device=device)

    def work():
        g = gpugrad_w1(x)
        synchronize(device)
        return g

    g = run(benchmark, work, workload="W1", impl="gpugrad", device=device, rounds=ROUNDS,
            warmup_rounds=WARMUP, ops=OPS, label=LABEL)
    np.testing.assert_allclose(g.numpy(), reference_gradient(make_x()), rtol=1e-3)


def test_w1_function_replays_the_eager_gradient_to_the_bit():
    """On the CPU the replay makes the same NumPy calls in the same order as the tape: the same bits."""
    x = gg.tensor(make_x(), device="cpu")
    fn = traced_w1(x)
    np.testing.assert_array_equal(fn(x).numpy(), gpugrad_w1(x).numpy())
    assert fn.trace_count == 1


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("gpugrad-function"))
def test_w1_gpugrad_function(benchmark, device):
    x = gg.tensor(make_x(), device=device)
    fn = traced_w1(x)  # the trace is not timed

    def work():
        g = fn(x)
        synchronize(device)
        return g

    g = run(benchmark, work, workload="W1", impl="gpugrad-function", device=device, rounds=ROUNDS,
            warmup_rounds=WARMUP, ops=OPS, label=LABEL)
    np.testing.assert_allclose(g.numpy(), reference_gradient(make_x()), rtol=1e-3)
    assert fn.trace_count == 1  # every timed call replayed the one trace


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("hand"))
def test_w1_numpy(benchmark, device):
    xp = array_module(device)

    def work():
        g = numpy_w1(x, xp)
        synchronize(device)
        return g

    x = xp.asarray(make_x())
    g = run(benchmark, work, workload="W1", impl=baseline_impl(device), device=device, rounds=ROUNDS,
            warmup_rounds=WARMUP, ops=OPS, label=LABEL)
    np.testing.assert_allclose(to_host(g), reference_gradient(make_x()), rtol=1e-3)


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_w1_torch(benchmark, torch, device):
    where = torch_device(torch, device)
    x = torch.from_numpy(make_x()).to(where).requires_grad_(True)

    def work():
        g = torch_w1(torch, x)
        torch_synchronize(torch, device)
        return g

    g = run(benchmark, work, workload="W1", impl="torch", device=device, rounds=ROUNDS,
            warmup_rounds=WARMUP, ops=OPS, label=LABEL)
    np.testing.assert_allclose(g.cpu().numpy(), reference_gradient(make_x()), rtol=1e-3)


@pytest.mark.benchmark(group=GROUP)
def test_w1_interleaved(benchmark, optional_torch):
    """gpugrad (eager, through ``gg.function``, and fused with ``jit_compile=True`` where numba is installed),
    NumPy and PyTorch (where installed) on the CPU in alternating blocks of 20 calls (0.05 s for NumPy and
    ``gg.function`` to 0.25 s for PyTorch on 2 cores): the ratios that spells of load on a shared machine
    cannot tilt (see ``run_interleaved``)."""
    x_np = make_x()
    x = gg.tensor(x_np, device="cpu")
    fn = traced_w1(x)
    peers = {"gpugrad": lambda: gpugrad_w1(x), "gpugrad-function": lambda: fn(x), "numpy": lambda: numpy_w1(x_np)}
    if optional_torch is not None:
        x_torch = optional_torch.from_numpy(x_np).requires_grad_(True)
        peers["torch"] = lambda: torch_w1(optional_torch, x_torch)
    peers = with_jit_peer(peers, lambda: functools.partial(traced_w1(x, jit_compile=True), x))
    summary = run_interleaved(benchmark, peers, workload="W1", block=20, cycles=15, ops=OPS)
    assert len({entry["calls"] for entry in summary.values()}) == 1 and summary["gpugrad"]["calls"] > 0
    for name in ("gpugrad", "gpugrad-function"):
        np.testing.assert_allclose(peers[name]().numpy(), reference_gradient(x_np), rtol=1e-3)
    assert fn.trace_count == 1
