"""gpugrad's CuPy code paths, run on every machine: the GPU tests against a NumPy stand-in for CuPy.

The ``gpu``-marked tests (``tests/test_gpu.py`` and the ``cuda`` parametrisations
elsewhere) skip where no GPU is usable, which is every CI machine. Here they run
anyway, in a subprocess whose ``cupy`` is ``tests/stand_in_cupy`` (first on
``PYTHONPATH``, ahead of any real CuPy; ``GPUGRAD_STAND_IN_CUPY=1`` lets it load):
``gg.devices()`` lists ``cuda:0``, CuPy arrays are NumPy arrays behind CuPy's
rules, and each fused kernel (``kernels/*.cu``) runs its CUDA source built for
the host with g++. So every CuPy branch of gpugrad (the backend, device
placement and transfers, the fused-kernel dispatch, ``cupyx`` calls, DLPack)
runs, and a NumPy array slipping into a CuPy call, or a CuPy array into NumPy,
fails as it would on a GPU. The stand-in's docstring lists what it refuses and
what it cannot show (speed, memory, several GPUs, NVRTC's last bits).

The run must pass and pass most of the GPU tests (a stand-in that made them
skip would fail here). It also records what gpugrad and the tests ask of
``cupy`` (``GPUGRAD_STAND_IN_RECORD``), which must be exactly
``tests/stand_in_cupy/api_used.txt``, the list that
``tests/test_stand_in_contract.py`` checks against the real CuPy
(``GPUGRAD_STAND_IN_API_UPDATE=1`` rewrites it); without the ``bfloat16`` or ``distributed`` extra,
their GPU tests are left out and what the rest asks for must be in the list. The kernels are built once
per run, in the run's ``CUPY_CACHE_DIR``; the 10,000-step GPU memory soak is skipped there (the
stand-in's memory pool holds nothing). Needs g++ (or ``$CXX``); without one
these tests skip, or fail under ``GPUGRAD_REQUIRE_KERNELCHECK=1`` (CI).
"""
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

from gpugrad._tools.kernelcheck import host
from tests.conftest import (API_FILE, NO_CXX, REQUIRED_HERE, api_file_lines, recorded_api, skip_or_fail,
                            write_api_file)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAND_IN = os.path.join(ROOT, "tests", "stand_in_cupy")
MIN_PASSED = 500  # about twice this many pass; a stand-in that silently skipped them would fall far below
MAX_SKIPPED = 10  # each skip gives its reason: random draws, PyTorch's CUDA, two GPUs, the memory soak


def stand_in_env(tmp_path, enabled=True):
    """The environment of a process whose ``cupy`` is the stand-in, with a CuPy cache of its own."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUGRAD_DEVICE", "GPUGRAD_STAND_IN_CUPY", "GPUGRAD_STAND_IN_RECORD")}
    env.update(PYTHONPATH=os.pathsep.join([STAND_IN, ROOT]), CUPY_CACHE_DIR=str(tmp_path / "cupy"))
    if enabled:
        env["GPUGRAD_STAND_IN_CUPY"] = "1"
    return env


def run_python(code, env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def summary_counts(output):
    """``{"passed": n, "skipped": n, ...}`` from the last summary line of a ``pytest -q`` run."""
    counted = r"(\d+) (passed|failed|errors?|skipped|deselected)"
    lines = [line for line in output.splitlines() if re.search(counted, line)]
    assert lines, f"no pytest summary line in:\n{output[-3000:]}"
    found = re.findall(counted, lines[-1])
    return {word.rstrip("s"): int(n) for n, word in found}  # "errors" and "error" count as "error"


def test_summary_counts_reads_pytest_summary_lines():
    assert summary_counts("...\n1002 passed, 5 skipped, 1993 deselected in 28.91s\n") == {
        "passed": 1002, "skipped": 5, "deselected": 1993}
    assert summary_counts("= 1 failed, 3 passed, 2 errors in 1.0s =") == {"failed": 1, "passed": 3, "error": 2}
    assert summary_counts("1007 skipped, 1993 deselected in 7.1s") == {"skipped": 1007, "deselected": 1993}


# The optional extras whose GPU tests ask the stand-in for more of CuPy (bfloat16 arrays, NCCL), and a -k
# expression of those tests' names; without an extra its tests are left out of the stand-in run.
EXTRA_TESTS = {"bfloat16": "bfloat16", "distributed": "nccl"}
EXTRA_MODULES = {"bfloat16": "ml_dtypes", "distributed": "mpi4py"}


def absent_extras():
    """The extras of :data:`EXTRA_TESTS` not installed here (CI installs them all)."""
    return [extra for extra, module in EXTRA_MODULES.items() if importlib.util.find_spec(module) is None]


@pytest.mark.slow
def test_gpu_tests_pass_on_the_stand_in_cupy(tmp_path):
    if host.compiler() is None:
        skip_or_fail(NO_CXX)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "tests"]
    absent = absent_extras()
    if absent and REQUIRED_HERE:
        pytest.fail(f"GPUGRAD_REQUIRE_KERNELCHECK=1 but the extras {absent} are not installed: the stand-in run "
                    f"must ask for all of the API it lists")
    if absent:  # their tests would skip by the hundred: leave them out, and check what the rest asks for
        command += ["-k", " and ".join(f"not {EXTRA_TESTS[extra]}" for extra in absent)]
    env = {**stand_in_env(tmp_path), "GPUGRAD_STAND_IN_RECORD": str(tmp_path / "asked")}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    output = done.stdout + done.stderr
    counts = summary_counts(output)
    assert done.returncode == 0, output[-6000:]
    assert counts.get("passed", 0) >= MIN_PASSED, (counts, output[-3000:])
    assert counts.get("skipped", 0) <= MAX_SKIPPED, (counts, output[-3000:])
    assert os.listdir(tmp_path / "cupy" / "stand-in-host-builds"), "no fused kernel ran on the stand-in"
    asked = recorded_api(tmp_path / "asked")
    if os.environ.get("GPUGRAD_STAND_IN_API_UPDATE") == "1":
        write_api_file(asked)
    listed = api_file_lines()
    if absent:
        unlisted = sorted(set(asked) - set(listed))
        assert not unlisted, (
            f"the GPU tests ask cupy for what {API_FILE.name} does not list: {unlisted}. Install the extras "
            f"{absent} and rerun with GPUGRAD_STAND_IN_API_UPDATE=1 to rewrite it")
        return  # without the extras' tests the list cannot be checked for entries nothing asks for any more
    assert asked == listed, (
        f"what the GPU tests ask of cupy changed: new {sorted(set(asked) - set(listed))}, gone "
        f"{sorted(set(listed) - set(asked))}. Rerun with GPUGRAD_STAND_IN_API_UPDATE=1 to rewrite {API_FILE.name}, "
        "then run tests/test_stand_in_contract.py where the real CuPy is installed")


def test_stand_in_refuses_to_mix_host_and_device_arrays(tmp_path):
    """What makes the run above worth having: CuPy's refusals, kept by the stand-in."""
    run_python("""
        import numpy as np, pytest, cupy
        a, host = cupy.arange(3.0), np.ones(3)
        for convert in (np.asarray, np.array, np.ascontiguousarray, lambda a: np.asarray([a, a])):
            with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
                convert(a)
        for mix in (lambda: a + host, lambda: host * a, lambda: cupy.exp(host), lambda: np.exp(a) - host,
                    lambda: a.dot(host), lambda: cupy.where(a > 1, a, host), lambda: a.__setitem__(slice(None), host)):
            with pytest.raises(TypeError, match="Unsupported type"):
                mix()
        assert type(a.sum()) is cupy.ndarray and a.sum().shape == ()  # 0-d arrays, not NumPy scalars
        assert (a.get() == [0, 1, 2]).all() and cupy.asnumpy(a[host.astype(int)]).tolist() == [1.0] * 3
    """, stand_in_env(tmp_path))


def test_stand_in_does_not_load_without_its_variable(tmp_path):
    out = run_python("""
        import gpugrad as gg
        from gpugrad.backend import cupy_backend
        print(gg.devices(), cupy_backend.unavailable_reason())
    """, stand_in_env(tmp_path, enabled=False))
    assert out.startswith("['cpu'] CuPy failed to import") and "GPUGRAD_STAND_IN_CUPY=1" in out, out
