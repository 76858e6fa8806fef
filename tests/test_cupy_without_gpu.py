"""CuPy installed, no GPU or driver: gpugrad checks once, cheaply, stays on the CPU and warns about nothing.

CI installs CuPy (the ``kernelcheck`` extra) on machines without a GPU, so this
is the set-up every CI run has. Each test runs a fresh interpreter with
``-W error`` (any warning fails it) that uses gpugrad the way a program does:
tensors on the default device, ``gg.devices()``, ``gg.cuda_available()``,
asking for ``"cuda"`` (a clear error, several times), a training step. A spy
counts how often gpugrad asks CuPy whether a GPU is usable: once per process.

One test uses the CuPy installed here (skipped, with the reason, where there is
none or where a GPU is usable); the other puts a stand-in ``cupy`` package
first on the path, so it runs everywhere.
"""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What a program does with gpugrad, over and over; prints what the spies counted as one JSON line.
PROGRAM = textwrap.dedent("""
    import json, sys, time
    {setup}
    start = time.perf_counter()
    import gpugrad as gg
    errors = set()
    for _ in range(5):
        x = gg.tensor([1.0, 2.0])
        w = gg.Variable([0.5, -0.5])
        with gg.GradientTape() as tape:
            loss = gg.sum(gg.tanh(x * w))
        gg.optimizers.SGD(0.1).apply_gradients([(tape.gradient(loss, w), w)])
        devices, available, default = gg.devices(), gg.cuda_available(), gg.default_device()
        for spec in ("cuda", "cuda:0", "gpu"):
            try:
                gg.tensor([1.0], device=spec)
            except gg.DeviceUnavailableError as e:
                errors.add(str(e))
    with gg.device("cpu"):
        gg.ones((2,))
    print(json.dumps({{"calls": calls(), "devices": devices, "available": available, "default": default,
                      "errors": sorted(errors), "seconds": time.perf_counter() - start}}))
""")

SPY_REAL_CUPY = textwrap.dedent("""
    import cupy
    counts = {"is_available": 0, "getDeviceCount": 0}
    _is_available, _count = cupy.is_available, cupy.cuda.runtime.getDeviceCount
    def is_available():
        counts["is_available"] += 1
        return _is_available()
    def getDeviceCount():
        counts["getDeviceCount"] += 1
        return _count()
    cupy.is_available, cupy.cuda.runtime.getDeviceCount = is_available, getDeviceCount
    calls = lambda: counts
""")

FAKE_CUPY = textwrap.dedent('''
    """A stand-in for CuPy on a machine without a driver: importable, never usable."""
    import types

    counts = {"is_available": 0, "getDeviceCount": 0}


    def is_available():
        counts["is_available"] += 1
        return False


    def _device_count():
        counts["getDeviceCount"] += 1
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version")


    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=_device_count))
''')


def run_program(setup, extra_path=()):
    """Run PROGRAM after ``setup`` (which defines ``calls()``) in a fresh ``python -W error``; its JSON result."""
    env = dict(os.environ)
    env.pop("GPUGRAD_DEVICE", None)
    env["PYTHONPATH"] = os.pathsep.join([*extra_path, ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    code = PROGRAM.format(setup=setup.strip())
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", f"gpugrad wrote to stderr (a warning?):\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def real_cupy_without_gpu():
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed here (CI installs it with the kernelcheck extra)"
    import gpugrad as gg
    if gg.cuda_available():
        return "this machine has a usable GPU"
    return None


@pytest.mark.skipif(real_cupy_without_gpu() is not None, reason=str(real_cupy_without_gpu()))
def test_the_installed_cupy_is_asked_once_and_nothing_warns():
    result = run_program(SPY_REAL_CUPY)
    assert result["calls"]["is_available"] == 1, result
    # CuPy's is_available asks the driver once, gpugrad once more for the reason it reports: never again
    assert result["calls"]["getDeviceCount"] <= 2, result
    assert result["devices"] == ["cpu"] and result["available"] is False and result["default"] == "cpu"
    assert len(result["errors"]) == 1 and result["errors"][0].startswith("no CUDA device can be used: "), result


def test_a_stand_in_cupy_without_a_driver_is_asked_once_and_nothing_warns(tmp_path):
    package = tmp_path / "cupy"
    package.mkdir()
    (package / "__init__.py").write_text(FAKE_CUPY)
    result = run_program("import cupy\ncalls = lambda: cupy.counts", extra_path=[str(tmp_path)])
    assert result["calls"] == {"is_available": 1, "getDeviceCount": 1}, result
    assert result["devices"] == ["cpu"] and result["available"] is False and result["default"] == "cpu"
    (message,) = result["errors"]
    assert "no CUDA device can be used" in message and "cudaErrorInsufficientDriver" in message


def test_importing_gpugrad_does_not_import_cupy():
    done = subprocess.run([sys.executable, "-W", "error", "-c",
                           "import sys, gpugrad; print('cupy' in sys.modules)"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == "False", "CuPy is imported only when a device is first resolved"
