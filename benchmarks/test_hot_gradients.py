"""Every declared hot gradient on each device, against its math as an unfused chain of array ops.

The rows come from :data:`gpugrad.ops.hot.HOT_GRADIENTS`: a new declaration is
benchmarked without a line here. ``gpugrad`` is the raw op (``gg.raw_ops.<name>``:
the CPU formula with its thread splitting, or the fused kernel, plus recording);
``numpy`` (``cupy`` on a GPU) is the declaration's math evaluated with the array
module, one array op per step, as hand-written code would compute it. Inputs are
drawn as the kernel check draws them, 256 Ki float32 elements.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tools.kernelcheck import cases
from gpugrad.ops.hot import HOT_GRADIENTS

from .conftest import DEVICES, rounds_for

N = 1 << 18
ROUNDS, WARMUP = 50, 5


def _inputs(name, device):
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(0), N, np.dtype(np.float32))
    xp = gg.get_device(device).xp
    return [xp.asarray(a) for a in arrays], params, xp


@pytest.mark.benchmark(group="hot gradients (256 Ki float32)")
@pytest.mark.parametrize("impl", ["gpugrad", "unfused"])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(HOT_GRADIENTS))
def test_hot_gradient(benchmark, name, device, impl):
    h = HOT_GRADIENTS[name]
    arrays, params, xp = _inputs(name, device)
    if impl == "gpugrad":
        tensors = [gg.from_dlpack(a) if xp is not np else gg.from_numpy(a) for a in arrays]

        def call():
            return h.function(*tensors, **params)
    else:
        def call():
            return h.unfused(xp, arrays, params)

    def timed():
        out = call()
        if xp is not np:
            xp.cuda.get_current_stream().synchronize()
        return out

    peer = "numpy" if xp is np else "cupy"
    benchmark.extra_info.update(workload=f"H/{name}", label=f"{name} (256 Ki)", device=device,
                                impl="gpugrad" if impl == "gpugrad" else peer)
    rounds, warmup = rounds_for(ROUNDS, WARMUP)
    with np.errstate(all="ignore"):
        benchmark.pedantic(timed, rounds=rounds, warmup_rounds=warmup, iterations=1)
