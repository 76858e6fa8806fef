"""G1 under pytest-benchmark: each fused kernel, its unfused CuPy expression, and a device copy, at 64 Mi float32.

The same workloads as ``g1_fused_kernels.py`` (which ``gpu_check.py`` runs and
prints as a table with CUDA-event timings); here pytest-benchmark times each
call with a device synchronisation, and ``extra_info`` carries the bytes moved
and the effective bandwidth. Skipped, with the reason, without a GPU.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.backend import kernel_source
from gpugrad._tools.kernelcheck import cases

from . import g1_fused_kernels as g1
from .conftest import DEVICES, rounds_for

pytestmark = pytest.mark.skipif(not any(d.startswith("cuda") for d in DEVICES),
                                reason="G1 times CUDA kernels: no usable GPU on this machine")
ROUNDS, WARMUP = 10, 2


def timed(benchmark, fn, moved, impl, kernel):
    import cupy

    def call():
        fn()
        cupy.cuda.get_current_stream().synchronize()

    # the fused kernel is gpugrad's; the unfused CuPy expression and the plain device copy are CuPy's
    benchmark.extra_info.update(workload=f"G1/{kernel}", label=f"G1 {kernel} (64 Mi)", variant=impl,
                                impl="gpugrad" if impl == "fused" else "cupy", device="cuda:0", bytes=moved)
    rounds, warmup = rounds_for(ROUNDS, WARMUP)
    benchmark.pedantic(call, rounds=rounds, warmup_rounds=warmup, iterations=1)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:
        benchmark.extra_info["gbps"] = moved / stats.stats.median / 1e9


@pytest.mark.benchmark(group="G1 fused kernels (64 Mi float32)")
@pytest.mark.parametrize("impl", ["fused", "unfused"])
@pytest.mark.parametrize("name", kernel_source.names())
def test_g1_kernel(benchmark, name, impl):
    import cupy

    case = cases.CASES[name]
    backend = gg.get_device("cuda").backend
    arrays, params = case.draw(cupy, cupy.random.RandomState(0), g1.N, np.dtype(np.float32))
    out = backend.fused(name, *arrays, **params)
    outputs = out if isinstance(out, tuple) else (out,)
    moved = g1.bytes_moved(arrays, outputs, len(kernel_source.load(name).array_inputs), case.in_place)
    if impl == "fused":
        timed(benchmark, lambda: backend.fused(name, *arrays, **params), moved, impl, name)
    else:
        with np.errstate(all="ignore"):
            timed(benchmark, lambda: case.unfused(cupy, arrays, params), moved, impl, name)


@pytest.mark.benchmark(group="G1 fused kernels (64 Mi float32)")
def test_g1_device_copy(benchmark):
    import cupy

    src = cupy.ones(g1.N, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    timed(benchmark, lambda: dst.data.copy_from_device(src.data, src.nbytes), 2 * src.nbytes, "copy", "copy")
