"""Shared pieces of the benchmark suite (pytest-benchmark).

Not collected by the default ``pytest`` run (the project's testpaths are
``tests`` and ``gpugrad``); run it with ``pytest benchmarks/``, and read the
ratios off one run with::

    pytest benchmarks/ --benchmark-json=out.json
    python benchmarks/ratios.py out.json

Every benchmark stores in ``benchmark.extra_info`` what ``ratios.py`` needs:
``workload`` (``"W1"``, ``"W3"``), ``impl`` (``"gpugrad"``, ``"numpy"``,
``"torch"``) and ``device``. gpugrad runs on every usable device; the
hand-written NumPy and the PyTorch versions run on the CPU.
"""
import os
import tempfile

os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(tempfile.gettempdir(), "gpugrad-bench-cupy-cache"))

import pytest  # noqa: E402

import gpugrad as gg  # noqa: E402

DEVICES = gg.devices()


def device_params():
    """One ``pytest.param`` per usable device, id ``gpugrad-<device>``."""
    return [pytest.param(d, id=f"gpugrad-{d}") for d in DEVICES]


def synchronize(device):
    """Wait for the device to finish its queued work (a no-op on the CPU)."""
    if device.startswith("cuda"):
        import cupy

        cupy.cuda.Device(gg.get_device(device).index).synchronize()


def run(benchmark, fn, *args, workload, impl, device="cpu", rounds, warmup_rounds, ops=None):
    """Time ``fn(*args)`` with pedantic rounds (one call each) and tag the result.

    With ``ops`` (the number of ops the work records), ``extra_info["us_per_op"]``
    is the median time of one call divided by ``ops``, in microseconds.
    Returns what ``fn`` returned on its last call.
    """
    benchmark.extra_info.update(workload=workload, impl=impl, device=device)
    result = benchmark.pedantic(fn, args=args, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1)
    stats = getattr(benchmark, "stats", None)  # None under --benchmark-disable
    if ops is not None:
        benchmark.extra_info["ops"] = ops
        if stats is not None:
            benchmark.extra_info["us_per_op"] = stats.stats.median / ops * 1e6
    return result


@pytest.fixture(scope="session")
def torch():
    """PyTorch, or skip: it is not a dependency of gpugrad, only a point of comparison."""
    torch = pytest.importorskip(
        "torch", reason="PyTorch is not installed (pip install torch); the comparison with it is skipped")
    return torch
