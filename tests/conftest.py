"""Shared fixtures: the devices present, and a GPU marker that skips with a reason."""
import os

import pytest

os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".pytest_cache", "cupy"))

import gpugrad as gg  # noqa: E402

# The NumPy stand-in for CuPy: imported only by tests/test_gpu_paths_on_host.py's subprocess, never collected.
collect_ignore = ["stand_in_cupy"]

DEVICES = gg.devices()
GPU_PRESENT = any(d.startswith("cuda") for d in DEVICES)


def device_params():
    """Every device, the GPUs marked ``gpu``; a GPU param skips with a reason when none exists."""
    params = [pytest.param("cpu", id="cpu")]
    params.append(pytest.param("cuda", id="cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
        not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")]))
    return params


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
    for item in items:
        if item.get_closest_marker("gpu") is not None and not GPU_PRESENT:
            item.add_marker(skip)
