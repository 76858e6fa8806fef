"""Shared fixtures and helpers: the devices present, a GPU marker that skips with a reason, the
kernel checks' skip-or-fail rule, and the finite-difference checks several test modules use."""
import importlib.util
import os

import numpy as np
import pytest

os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".pytest_cache", "cupy"))

import gpugrad as gg  # noqa: E402
from gpugrad.gradient_checker import compute_gradient, max_error  # noqa: E402

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


# --------------------------------------------------------------------------- helpers several test modules use

HAVE_CUPY = importlib.util.find_spec("cupy") is not None
NO_CUPY = "CuPy is not installed: pip install -e '.[kernelcheck]' (cupy-cuda13x, NVRTC, CUDA headers; no GPU needed)"
NO_CXX = "no host C++ compiler (g++ or $CXX) to build the kernels' math for the host"
REQUIRED_HERE = os.environ.get("GPUGRAD_REQUIRE_KERNELCHECK") == "1"


def skip_or_fail(reason):
    """Skip with ``reason``, or fail where the kernel checks are required (CI)."""
    if REQUIRED_HERE:
        pytest.fail(f"GPUGRAD_REQUIRE_KERNELCHECK=1 but {reason}")
    pytest.skip(reason)


def needs_cupy():
    if not HAVE_CUPY:
        skip_or_fail(NO_CUPY)


def numerical_jacobian(f, x, delta=1e-6):
    """Central differences of NumPy-valued ``f`` at float64 array ``x``: shape f(x).shape + x.shape."""
    x = np.array(x, dtype=np.float64)
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += delta
        minus[idx] -= delta
        jac[(...,) + idx] = (np.asarray(f(plus)) - np.asarray(f(minus))) / (2 * delta)
    return jac


TOL64 = 1e-6


def recorded_types(fn, xs):
    """The op types ``fn`` records when all its inputs are watched."""
    with gg.GradientTape() as tape:
        tape.watch(xs)
        fn(*xs)
    return {record[0] for record in tape._ops}


def check(fn, xs, delta, tol):
    theoretical, numerical = compute_gradient(fn, xs, delta=delta)
    scale = max(1.0, max(float(np.max(np.abs(n))) if n.size else 0.0 for n in numerical))
    err = max_error(theoretical, numerical)
    assert err <= tol * scale, f"max error {err:.3g} > {tol * scale:.3g}"


def gradient_function(fn, n_inputs, seed=1):
    """x -> sum_i <d(<w, fn(x)>)/dx_i, v_i>, whose gradient is a second derivative."""
    def second(*xs):
        with gg.GradientTape() as tape:
            tape.watch(list(xs))
            y = fn(*xs)
        w = np.random.default_rng(seed).uniform(0.5, 1.5, y.shape)
        grads = tape.gradient(y, list(xs), output_gradients=gg.tensor(w, dtype=y.dtype, device=y.device))
        total = gg.tensor(0.0, dtype=xs[0].dtype, device=xs[0].device)
        for i, (g, x) in enumerate(zip(grads, xs)):
            if g is not None:
                v = np.random.default_rng(100 + i).uniform(0.5, 1.5, x.shape)
                total = total + gg.sum(g * gg.tensor(v, dtype=x.dtype, device=x.device))
        return total

    return second
