"""Shared fixtures and helpers: the devices present, a GPU marker that skips with a reason, the
kernel checks' skip-or-fail rule, the finite-difference checks several test modules use, the host
kernel build and stand-in GPU fixtures, bit-exact float helpers, and the stand-in's recorded API.

Test modules share code only through this file (fixtures here reach every test; helpers are
imported ``from tests.conftest import ...``), never by importing one another."""
import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("CUPY_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".pytest_cache", "cupy"))

import gpugrad as gg  # noqa: E402
from gpugrad.backend import Device  # noqa: E402
from gpugrad.gradient_checker import compute_gradient, max_error  # noqa: E402
from gpugrad.backend.cpu_fast import UINT_OF  # noqa: E402
from gpugrad.ops.hot import HOT_GRADIENTS  # noqa: E402

# The NumPy stand-in for CuPy: imported only by tests/test_gpu_paths_on_host.py's subprocess, never collected;
# typing/: the user script tests/test_typing.py runs mypy on and runs, not a test module.
collect_ignore = ["stand_in_cupy", "typing"]

DEVICES = gg.devices()
GPU_PRESENT = any(d.startswith("cuda") for d in DEVICES)


@contextlib.contextmanager
def swapped_cpu_formula(name, formula):
    """Hot gradient ``name`` computes with ``formula`` on the CPU inside the block (a spy, in tests)."""
    declaration = HOT_GRADIENTS[name]
    original = declaration.cpu
    object.__setattr__(declaration, "cpu", formula)  # declarations are frozen for users
    try:
        yield original
    finally:
        object.__setattr__(declaration, "cpu", original)


def device_params():
    """Every device, the GPUs marked ``gpu``; a GPU param skips with a reason when none exists."""
    params = [pytest.param("cpu", id="cpu")]
    params.append(pytest.param("cuda", id="cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
        not GPU_PRESENT, reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")]))
    return params


# Doctests whose examples show bfloat16, which needs the optional ml_dtypes (the bfloat16 extra)
DOCTESTS_NEEDING_ML_DTYPES = {"gpugrad._dtypes.bfloat16", "gpugrad._dtypes.resolve", "gpugrad._tools.kernelcheck.host",
                              "gpugrad.backend.kernel_source.KernelSource.bindings",
                              "gpugrad.mixed_precision.compute_dtype"}
HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def run_in_stand_in(code, tmp_path):
    """Run Python ``code`` in a process whose ``cupy`` is the stand-in (``tests/stand_in_cupy``); its stdout."""
    import subprocess
    import sys
    import textwrap

    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("GPUGRAD_DEVICE", "GPUGRAD_STAND_IN_RECORD")}
    env.update(PYTHONPATH=os.pathsep.join([str(root / "tests" / "stand_in_cupy"), str(root)]),
               CUPY_CACHE_DIR=str(tmp_path / "cupy"), GPUGRAD_STAND_IN_CUPY="1")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=root, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(autouse=True)
def _nothing_refused_in_a_capture():
    """On the CuPy stand-in: a test during which a stream capture met a refusal (a cuBLAS call, a host read, an
    allocation: see tests/stand_in_cupy/cupy/cuda.py) fails, though gg.function ran the segment's steps one by
    one and got the right numbers: on a GPU that segment would never be a graph."""
    yield
    if os.environ.get("GPUGRAD_STAND_IN_CUPY") != "1":
        return
    import sys

    cuda = getattr(sys.modules.get("cupy"), "cuda", None)
    refused = getattr(cuda, "_refused_in_capture", None)
    if refused:
        met = list(refused)
        refused.clear()
        pytest.fail(f"a stream capture met what CuPy 14.2 refuses or what would corrupt a graph: {met}")


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="no usable CUDA GPU on this machine (gg.devices() lists only the CPU)")
    no_bfloat16 = pytest.mark.skip(reason="its example shows bfloat16, which needs ml_dtypes: pip install -e "
                                          "'.[bfloat16]'")
    for item in items:
        if item.get_closest_marker("gpu") is not None and not GPU_PRESENT:
            item.add_marker(skip)
        if not HAVE_ML_DTYPES and isinstance(item, pytest.DoctestItem) and item.name in DOCTESTS_NEEDING_ML_DTYPES:
            item.add_marker(no_bfloat16)


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


# --------------------------------------------------------------------------- the kernels' math, built for the host


@pytest.fixture(scope="session")
def host_workdir(tmp_path_factory):
    """A folder for the kernels built for the host (skips, or fails where required, without a C++ compiler)."""
    from gpugrad._tools.kernelcheck import host

    if host.compiler() is None:
        skip_or_fail(NO_CXX)
    return tmp_path_factory.mktemp("host-kernels")


class HostElementwiseKernel:
    """Stands in for ``cupy.ElementwiseKernel``: same constructor and call, the host build inside."""

    built = []

    def __init__(self, in_params, out_params, operation, name, preamble):
        from gpugrad._tools.kernelcheck import host
        from gpugrad.backend import kernel_source

        source = kernel_source.parse(preamble, name[len("gpugrad_"):])
        assert (in_params, out_params, operation) == (source.in_params, source.out_params, source.operation)
        self.source = source
        self.host = host.build(source, HostElementwiseKernel.workdir)
        HostElementwiseKernel.built.append(source.name)

    def __call__(self, *args):
        k = self.source
        assert len(args) in (len(k.inputs), len(k.inputs) + len(k.outputs)), "wrong argument count"
        inputs = dict(zip([p.name for p in k.inputs], args))
        for p in k.inputs:
            value = inputs[p.name]
            if p.name in k.keyword_params:
                assert np.ndim(value) == 0 and not isinstance(value, np.ndarray), f"{p.name} must be a scalar"
            else:
                assert isinstance(value, np.ndarray), f"{p.name} must be an array"
                if p.raw:
                    assert value.ndim == 1 and value.flags.c_contiguous, "raw arrays are passed flat"
        arrays = [inputs[p.name] for p in k.array_inputs]
        params = {name: inputs[name] for name in k.keyword_params}
        out = self.host(*arrays, *args[len(k.inputs):], **params)
        return out[0] if len(out) == 1 else out


@pytest.fixture(scope="module")
def stand_in_gpu(host_workdir):
    """A Device named cuda:0 whose backend is the real CupyBackend over NumPy and host-built kernels."""
    from gpugrad.backend import cupy_backend

    fake = types.ModuleType("fake_cupy")
    fake.__getattr__ = lambda name: getattr(np, name)
    fake.ElementwiseKernel = HostElementwiseKernel
    fake.cuda = types.SimpleNamespace(Device=lambda index: contextlib.nullcontext())
    fake.asnumpy = np.asarray
    HostElementwiseKernel.workdir = host_workdir
    backend = object.__new__(cupy_backend.CupyBackend)
    backend.xp, backend.array_type, backend._count = fake, np.ndarray, 1
    backend._get_device = lambda: 0
    backend._device_index = lambda array: 0
    backend._kernels = {}
    return Device("cuda:0", backend, 0)


# --------------------------------------------------------------------------- bit-exact float data

DTYPES = [np.float16, np.float32, np.float64]
NAN_BITS = {  # quiet NaN with a payload, negative quiet NaN, signaling NaN
    np.float16: [0x7E01, 0xFE23, 0x7C01],
    np.float32: [0x7FC00001, 0xFFC12345, 0x7F800001],
    np.float64: [0x7FF8000000000001, 0xFFF8000000012345, 0x7FF0000000000001],
}


def specials(dtype):
    """The values an elementwise formula can get wrong, in ``dtype``."""
    info = np.finfo(dtype)
    tiny_sub = info.smallest_subnormal
    values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.0, np.inf, -np.inf, info.max, -info.max,
                       info.tiny, -info.tiny, tiny_sub, -tiny_sub, info.tiny - tiny_sub, -(info.tiny - tiny_sub)],
                      dtype=dtype)
    nans = np.array(NAN_BITS[dtype], dtype=UINT_OF[np.dtype(dtype)]).view(dtype)
    return np.concatenate([values, nans, np.array([np.nan], dtype)])


def data(dtype, n, seed):
    """``n`` values: every special value, then random ones of both signs and many scales."""
    rng = np.random.default_rng(seed)
    s = specials(dtype)
    with np.errstate(over="ignore"):
        rand = (rng.standard_normal(max(n - s.size, 0)) * 10.0 ** rng.integers(-6, 4, max(n - s.size, 0)))
    return np.concatenate([s, rand.astype(dtype)])[:n]


def bits(a):
    a = np.asarray(a)
    return a.view(UINT_OF[a.dtype])


def assert_same(new, old):
    """The same dtype, shape and bits, NaN payloads and zero signs included."""
    new, old = np.asarray(new), np.asarray(old)
    assert new.dtype == old.dtype and new.shape == old.shape
    np.testing.assert_array_equal(bits(new), bits(old))


# --------------------------------------------------------------------------- what the GPU tests ask of the stand-in CuPy

API_FILE = Path(__file__).resolve().parent / "stand_in_cupy" / "api_used.txt"
API_HEADER = ("# What gpugrad and its tests ask of cupy/cupyx in `pytest -m gpu` on the stand-in, recorded by\n"
              "# tests/stand_in_cupy/cupy/_record.py (format there) and checked against the real CuPy by\n"
              "# tests/test_stand_in_contract.py. Regenerate with GPUGRAD_STAND_IN_API_UPDATE=1:\n"
              "#   pytest -q -p no:cacheprovider tests/test_gpu_paths_on_host.py -k pass_on_the_stand_in\n")


def recorded_api(folder):
    """The union of what every process of a recorded run wrote, as sorted lines."""
    lines = set()
    for path in Path(folder).glob("*.txt"):
        lines.update(line for line in path.read_text().splitlines() if line)
    return sorted(lines)


def api_file_lines():
    return [line for line in API_FILE.read_text().splitlines() if line and not line.startswith("#")]


def write_api_file(lines):
    API_FILE.write_text(API_HEADER + "".join(line + "\n" for line in lines))


_REPO_ROOT = Path(__file__).resolve().parent.parent


# --- Markdown code blocks (the README's and the docs' pages), run as a reader would paste them ---------------
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
# on the line above a fence: the block is shown, not run, for the reason given (a GPU, mpiexec, ...)
NOT_RUN = re.compile(r"^<!-- not run: (\S.*?) -->\n\Z")


def fenced_blocks(path, language):
    r"""(line number, source, why not run or None) of every fenced block of ``language`` in the Markdown file.

    Example:
        >>> import tempfile
        >>> with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        ...     _ = f.write("```python\n1\n```\n<!-- not run: needs a GPU -->\n```python\n2\n```\n")
        >>> fenced_blocks(f.name, "python")
        [(1, '1\n', None), (5, '2\n', 'needs a GPU')]
        >>> os.unlink(f.name)
    """
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    for m in FENCE.finditer(text):
        if m.group(1) == language:
            line_above = text[text.rfind("\n", 0, max(m.start() - 1, 0)) + 1:m.start()]
            not_run = NOT_RUN.match(line_above)
            found.append((text.count("\n", 0, m.start()) + 1, m.group(2), not_run.group(1) if not_run else None))
    return found


def run_snippet(source, what):
    """Run ``source`` on its own in a fresh interpreter from the repository root, as a reader would paste it."""
    env = dict(os.environ, PYTHONPATH=str(_REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, env=env,
                          cwd=_REPO_ROOT, timeout=300)
    assert proc.returncode == 0, f"{what} failed:\n{source}\n--- stderr ---\n{proc.stderr}"


def gg_has(name):
    """Whether ``gg.<name>`` exists: an attribute, or a name whose extra is missing here (``gg.bfloat16``
    without ml_dtypes raises a DTypeError naming the extra, not an AttributeError).

    Example:
        >>> gg_has("tanh"), gg_has("bfloat16"), gg_has("no_such_op")
        (True, True, False)
    """
    try:
        getattr(gg, name)
    except AttributeError:
        return False
    except gg.errors.GpugradError:
        return True
    return True
