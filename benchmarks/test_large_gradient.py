"""W3, op throughput: the gradient of ``sum(square(log(x)))`` for 4 Mi float32 values in [0.5, 2).

Large arrays, three ops: the time is array work, so gpugrad should cost no
more than the same function written by hand in NumPy (forward ``log``,
``square``, ``sum``; backward by the chain rule, ``dl = 2.0 * l; dx = dl / x``;
the same code in CuPy on a GPU). PyTorch runs beside them on each device it
can use when it is installed.
"""
import functools

import numpy as np
import pytest

import gpugrad as gg

from .conftest import (array_module, baseline_impl, device_params, run, run_interleaved, synchronize, to_host,
                       torch_device, torch_synchronize, with_jit_peer)
from .workload_w3 import N, gpugrad_w3, make_x, numpy_w3  # noqa: F401 - the workload, shared

ROUNDS, WARMUP = 60, 3
GROUP = "W3 large gradient (4 Mi float32)"
LABEL = "W3 sum(square(log x)) grad, 4 Mi"


def torch_w3(torch, x):
    loss = torch.sum(torch.square(torch.log(x)))
    (dx,) = torch.autograd.grad(loss, x)
    return dx


def check(g):
    x = make_x()
    np.testing.assert_allclose(g[:1000], (2 * np.log(x[:1000].astype(np.float64)) / x[:1000]), rtol=1e-5, atol=1e-6)
    assert g.dtype == np.float32


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params())
def test_w3_gpugrad(benchmark, device):
    x = gg.tensor(make_x(), device=device)

    def work():
        g = gpugrad_w3(x)
        synchronize(device)
        return g

    g = run(benchmark, work, workload="W3", impl="gpugrad", device=device, rounds=ROUNDS, warmup_rounds=WARMUP,
            label=LABEL)
    check(g.numpy())


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("hand"))
def test_w3_numpy(benchmark, device):
    xp = array_module(device)
    x = xp.asarray(make_x())

    def work():
        g = numpy_w3(x, xp)
        synchronize(device)
        return g

    g = run(benchmark, work, workload="W3", impl=baseline_impl(device), device=device, rounds=ROUNDS,
            warmup_rounds=WARMUP, label=LABEL)
    check(to_host(g))


@pytest.mark.quick
@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_w3_torch(benchmark, torch, device):
    x = torch.from_numpy(make_x()).to(torch_device(torch, device)).requires_grad_(True)

    def work():
        g = torch_w3(torch, x)
        torch_synchronize(torch, device)
        return g

    g = run(benchmark, work, workload="W3", impl="torch", device=device, rounds=ROUNDS, warmup_rounds=WARMUP,
            label=LABEL)
    check(g.cpu().numpy())


@pytest.mark.benchmark(group=GROUP)
def test_w3_interleaved(benchmark):
    """W3 by gpugrad (eager, through ``gg.function``, and fused with ``jit_compile=True`` where numba is
    installed) and by hand in NumPy on the CPU, in alternating blocks of 3 calls: the ratios that spells of
    load on a shared machine cannot tilt (see ``run_interleaved``)."""
    x_np = make_x()
    x = gg.tensor(x_np, device="cpu")

    def traced(jit_compile=False):
        fn = gg.function(gpugrad_w3, jit_compile=jit_compile)
        fn(x)
        fn(x)
        return functools.partial(fn, x)

    peers = {"gpugrad": lambda: gpugrad_w3(x), "gpugrad-function": traced(), "numpy": lambda: numpy_w3(x_np)}
    peers = with_jit_peer(peers, lambda: traced(jit_compile=True))
    summary = run_interleaved(benchmark, peers, workload="W3", block=3, cycles=15)
    assert summary["gpugrad"]["calls"] == summary["numpy"]["calls"] > 0
    for name, fn in peers.items():
        g = fn()
        check(g if isinstance(g, np.ndarray) else g.numpy())
