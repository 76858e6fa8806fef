"""The fused CUDA kernels in kernels/, checked without a GPU.

- every file parses, has a case, ships in the wheel;
- every kernel compiles through CuPy's own code generation and NVRTC for sm_90,
  for every dtype it is used with, in a process of its own (needs the
  ``kernelcheck`` extra; skipped with a reason when CuPy is absent);
- every kernel's math, built with the host C++ compiler, matches the NumPy CPU
  path of the same op;
- the CuPy backend's dispatch runs every fused op correctly on a stand-in GPU
  device whose "kernels" are those host builds.
Each check is shown to fail on a deliberately broken kernel. With
``GPUGRAD_REQUIRE_KERNELCHECK=1`` (CI sets it) a missing CuPy or C++ compiler
fails these tests instead of skipping them.
"""
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.backend import kernel_source
from gpugrad._tools.kernelcheck import cases, host, nvrtc
from gpugrad.ops.hot import HOT_GRADIENTS

from .conftest import HAVE_CUPY, NO_CUPY, HostElementwiseKernel, needs_cupy, skip_or_fail  # noqa: F401 - shared

ROOT = Path(__file__).resolve().parent.parent
KERNELS = kernel_source.names()  # the files in kernels/ and the kernels generated from declarations
FILES = kernel_source.names(kernel_source.kernels_dir())
# The fused kernels that are not hot gradients: losses.py, attention.py and the optimizers call them by name.
NOT_HOT = {"softmax_cross_entropy_grad", "masked_softmax", "masked_softmax_grad", "sgd_momentum_update", "adam_update"}
TANH_LINE = "return T((dy * (A(1) - (y * y))));"  # the CUDA that tanh_grad's declared math becomes


def broken_copy(tmp_path, name, old, new):
    """A kernels folder holding only ``name`` (a file, or the generated source), with ``old`` replaced by ``new``."""
    text = kernel_source.load(name).source
    assert old in text
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / f"{name}.cu").write_text(text.replace(old, new))
    return folder


# ---------------------------------------------------------------- the files


def test_every_hot_gradient_has_a_kernel_and_every_kernel_a_case():
    assert set(KERNELS) == set(HOT_GRADIENTS) | NOT_HOT
    assert sorted(set(KERNELS) - set(cases.CASES)) == [], "kernels with no case in gpugrad/_tools/kernelcheck/cases.py"
    assert sorted(set(cases.CASES) - set(KERNELS)) == [], "cases with no kernel"
    generated = {name for name, h in HOT_GRADIENTS.items() if h.generated}
    assert set(FILES) == set(KERNELS) - generated, "a generated kernel has no file; every other kernel has one"


@pytest.mark.parametrize("name", KERNELS)
def test_kernel_file_declares_its_signature(name):
    k = kernel_source.load(name)
    assert k.path == (kernel_source.kernels_dir() / f"{name}.cu" if name in FILES else None)
    assert k.source.count("#ifndef GPUGRAD_PRELUDE") == 1, "the shared prelude, once, after the header"
    assert re.search(rf"__device__[^;{{]*\b{name}\s*\(", k.source), "no __device__ function named after the file"
    assert f"{name}(" in k.operation, "the operation must call the kernel's __device__ function"
    assert k.bindings() and all("T" in b for b in k.bindings())
    assert {"float32", "float64"} <= {b["T"].name for b in k.bindings()}


def test_the_loader_rejects_a_bad_header(tmp_path):
    (tmp_path / "oops.cu").write_text("// gpugrad-kernel: oops\n// in_params: T x\n__device__ int f();\n")
    with pytest.raises(kernel_source.KernelSourceError, match="out_params, operation, dtypes"):
        kernel_source.load("oops", tmp_path)
    (tmp_path / "named.cu").write_text("// gpugrad-kernel: other\n")
    with pytest.raises(kernel_source.KernelSourceError, match="declares kernel 'other'"):
        kernel_source.load("named", tmp_path)
    (tmp_path / "typo.cu").write_text("// gpugrad-kernel: typo\n// in_params: T x\n// out_params: U y\n"
                                      "// operation: y = x\n// dtypes: T=float32\n")
    with pytest.raises(kernel_source.KernelSourceError, match="'U' of 'y' has no dtypes"):
        kernel_source.load("typo", tmp_path)


def can_build_wheels_offline():
    """Whether this interpreter's setuptools meets pyproject's build requirement (>= 77: PEP 639 licences)."""
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0]) >= 77
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.slow  # compiles or builds: seconds
def test_wheel_ships_every_kernel_and_every_subpackage(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "gpugrad", src / "gpugrad", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "kernels", src / "kernels")
    shutil.copytree(ROOT / "benchmarks", src / "benchmarks", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    isolation = ["--no-build-isolation"] if can_build_wheels_offline() else []  # else pip fetches setuptools
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "dist").glob("gpugrad-*.whl")
    listed = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.split("/")[-1] for n in listed if n.startswith("gpugrad/kernels/") and n.endswith(".cu"))
    assert shipped == sorted(f"{n}.cu" for n in FILES)
    assert "gpugrad/_tools/kernelcheck/half_host.h" in listed, "the host check's float16/bfloat16 header"
    packages = sorted(str(p.parent.relative_to(ROOT)) for p in (ROOT / "gpugrad").rglob("__init__.py"))
    missing = [p for p in packages if f"{p}/__init__.py" not in listed]
    assert not missing, f"subpackages missing from the wheel (add them to [tool.setuptools] packages): {missing}"


def test_installed_layout_is_found_first(tmp_path, monkeypatch):
    """In a wheel the kernels sit in gpugrad/kernels/; the loader looks there before ../kernels."""
    fake_package = tmp_path / "gpugrad"
    (fake_package / "kernels").mkdir(parents=True)
    shutil.copy(ROOT / "kernels" / "div_grad.cu", fake_package / "kernels")
    monkeypatch.setattr(kernel_source, "_PACKAGE_DIR", fake_package)
    assert kernel_source.kernels_dir() == fake_package / "kernels"
    assert kernel_source.names(kernel_source.kernels_dir()) == ["div_grad"]


# ---------------------------------------------------------------- NVRTC, for sm_90, as CuPy compiles


@pytest.fixture(scope="session")
def nvrtc_results():
    if not HAVE_CUPY:
        skip_or_fail(NO_CUPY)
    code, results, stderr = nvrtc.run_in_subprocess(timeout=900)
    assert results, f"the NVRTC check produced nothing (exit {code}):\n{stderr}"
    return results


@pytest.mark.slow  # compiles or builds: seconds
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_compiles_with_nvrtc_for_sm90(nvrtc_results, name):
    mine = [r for r in nvrtc_results if r["kernel"] == name]
    failures = [f"[{r['dtypes']} {r['layout']}]\n{r['error']}" for r in mine if not r["ok"]]
    assert not failures, "\n\n".join(failures)
    k = kernel_source.load(name)
    compiled = {r["dtypes"] for r in mine if r["layout"] == "contiguous"}
    declared = {",".join(f"{l}={d.name}" for l, d in b.items()) for b in k.bindings()}
    assert compiled == declared, "every declared dtype must be compiled"
    assert {"standalone", "contiguous", "strided"} <= {r["layout"] for r in mine}


def test_a_broken_kernel_fails_the_nvrtc_check_with_the_compilers_message(tmp_path):
    needs_cupy()
    folder = broken_copy(tmp_path, "tanh_grad", TANH_LINE, "return T(dy * (A(1) - xx));")
    code, results, stderr = nvrtc.run_in_subprocess(folder, ["tanh_grad"], jobs=1)
    assert code == 1, stderr
    assert results and not any(r["ok"] for r in results)
    assert all('identifier "xx" is undefined' in r["error"] for r in results), results[0]["error"]


def test_generated_source_is_cupys_elementwise_kernel():
    needs_cupy()
    code = subprocess.run(
        [sys.executable, "-c", "from gpugrad.backend import kernel_source as ks; from gpugrad._tools.kernelcheck import nvrtc;"
         "k = ks.load('leaky_relu_grad'); bs = {b['T'].name: b for b in k.bindings()};"
         "print(nvrtc.generated_source(k, bs['float32'], dict(nvrtc.LAYOUTS)['contiguous'])[0]);"
         "print('=' * 20); 'bfloat16' in bs and print(nvrtc.generated_source(k, bs['bfloat16'], "
         "dict(nvrtc.LAYOUTS)['contiguous'])[0])"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert code.returncode == 0, code.stderr
    text, bfloat16 = code.stdout.split("=" * 20)
    if kernel_source.available("bfloat16"):  # CuPy's bfloat16 class, over cuda_bf16.h's __nv_bfloat16
        assert '#include "cupy/bfloat16.cuh"' in bfloat16 and "typedef bfloat16 T;" in bfloat16
    assert 'extern "C" __global__ void gpugrad_leaky_relu_grad(' in text
    assert "typedef float T;" in text and "const double alpha" in text
    assert "dx = leaky_relu_grad(x, dy, alpha);" in text
    assert "__device__ __forceinline__ T leaky_relu_grad(" in text  # the file is the preamble


def test_cubin_architecture_is_read_from_the_elf_header():
    header = bytearray(64)
    header[8] = 8
    header[48:52] = (0x06005A04).to_bytes(4, "little")  # what NVRTC 13.5 writes for sm_90
    assert nvrtc.cubin_sm(bytes(header)) == 90


# ---------------------------------------------------------------- the math, on the host


@pytest.mark.slow  # compiles or builds: seconds
@pytest.mark.parametrize("name", KERNELS)
def test_kernel_math_matches_the_cpu_path(host_workdir, name):
    results = host.check_kernel(name, n=4096, workdir=host_workdir)
    assert len(results) == len(kernel_source.load(name).bindings()) * len(cases.CASES[name].variants)
    failures = [f"[{r['dtypes']}] {r['error']}" for r in results if not r["ok"]]
    assert not failures, "\n".join(failures)


def test_sgd_nesterov_matches_its_reference(host_workdir):
    kernel = host.build_named("sgd_momentum_update", workdir=host_workdir)
    case = cases.CASES["sgd_momentum_update"]
    for dtype in (np.float32, np.float64):
        arrays, params = case.draw(np, np.random.RandomState(3), 1000, dtype)
        params["nesterov"] = True
        got = kernel(*[a.copy() for a in arrays], **params)
        want = case.reference(arrays, params)
        assert cases.compare(case, got, want, arrays, params, dtype)["ok"]
        assert not np.array_equal(got[0], cases.CASES["sgd_momentum_update"].reference(
            arrays, dict(params, nesterov=False))[0])


def test_a_wrong_formula_fails_the_host_check(host_workdir, tmp_path):
    folder = broken_copy(tmp_path, "tanh_grad", TANH_LINE, "return T(dy * (A(1) + y * y));")
    results = host.check_kernel("tanh_grad", folder, workdir=host_workdir)
    assert results and not any(r["ok"] for r in results)
    assert "ulps" in results[0]["error"]


def test_a_last_bit_difference_fails_an_exact_kernel(host_workdir, tmp_path):
    # dy (1 - y^2) computed as dy - dy y^2 differs in the last bits only: an exact kernel must still fail
    folder = broken_copy(tmp_path, "tanh_grad", TANH_LINE, "return T(dy - dy * y * y);")
    results = {r["dtypes"]: r for r in host.check_kernel("tanh_grad", folder, workdir=host_workdir)}
    assert not results["T=float32"]["ok"] and not results["T=float64"]["ok"]


def test_a_host_compile_error_is_reported(host_workdir, tmp_path):
    folder = broken_copy(tmp_path, "tanh_grad", TANH_LINE, "return T(dy * (A(1) - xx));")
    (result,) = host.check_kernel("tanh_grad", folder, workdir=host_workdir)
    assert not result["ok"] and "xx" in result["error"] and "tanh_grad.cu" in result["error"]


@pytest.mark.parametrize("name", KERNELS)
def test_unfused_expression_is_the_same_math(name):
    """The unfused chains that benchmark G1 times against the kernels compute the same values."""
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(1), 2048, np.float64)
    want = case.reference(arrays, params)
    with np.errstate(all="ignore"):
        got = case.unfused(np, [a.copy() for a in arrays], params)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_ulp_distance():
    one = np.float32(1)
    up = np.nextafter(one, np.float32(2))
    a = np.array([one, -0.0, np.nan], np.float32)
    assert cases.ulp_distance(a, np.array([up, 0.0, np.nan], np.float32)).tolist() == [1, 0, 0]
    assert cases.ulp_distance(np.array([np.nan]), np.array([1.0]))[0] == np.inf
    tiny = np.finfo(np.float64).smallest_subnormal
    assert cases.ulp_distance(np.array([-tiny]), np.array([tiny]))[0] == 2


# ---------------------------------------------------------------- float16 and bfloat16

LOW = ["float16", "bfloat16"]
NO_ML_DTYPES = "ml_dtypes is not installed (pip install 'ml_dtypes>=0.5,<1'): NumPy has no bfloat16 without it"


def low_dtype(name):
    """The NumPy dtype ``name`` (float16 or bfloat16); without ml_dtypes bfloat16 skips, or fails where required."""
    if not kernel_source.available(name):
        skip_or_fail(NO_ML_DTYPES)
    return kernel_source.dtype(name)


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_declares_float16_and_bfloat16(name):
    assert {"float16", "bfloat16"} <= set(dict(kernel_source.load(name).dtypes)["T"])
    assert kernel_source.available("bfloat16") == any(b["T"].name == "bfloat16" for b in kernel_source.load(name).bindings())


@pytest.mark.parametrize("name", KERNELS)
def test_16_bit_tolerances_are_exact_or_one_ulp(name):
    """Float32 math rounded once: the kernel equals the rounded reference, or is within 1 ulp where it calls libm."""
    case = cases.CASES[name]
    assert case.tolerance("float16") <= 1 and case.tolerance(low_dtype("bfloat16")) <= 1
    assert case.tolerance("bfloat16") == case.tolerance("float16")


@pytest.fixture(scope="module")
def conversions(host_workdir):
    return host.conversions(host_workdir)


def float32_near_every_16_bit_value(dtype):
    """Every 16-bit pattern as float32, each tie between neighbours and one float32 ulp either side of it,
    the overflow threshold and ulps around it, and a million random float32 bit patterns (NaNs among them)."""
    values = np.arange(65536, dtype=np.uint16).view(dtype).astype(np.float32)
    finite = np.unique(values[np.isfinite(values)].astype(np.float64))
    top = finite[-1] + (finite[-1] - finite[-2]) / 2  # half an ulp past the largest: ties to infinity
    ties = np.concatenate([(finite[:-1] + finite[1:]) / 2, [top, -top]])
    ties32 = ties.astype(np.float32)
    assert np.array_equal(ties32.astype(np.float64), ties), "every tie is a float32"
    near = [np.nextafter(ties32, np.float32(np.inf)), np.nextafter(ties32, np.float32(-np.inf))]
    random = np.random.RandomState(0).randint(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([values, ties32, *near, random.view(np.float32)])


@pytest.mark.parametrize("name", LOW)
def test_host_16_bit_floats_widen_as_numpy_and_ml_dtypes(conversions, name):
    dtype = low_dtype(name)
    bits = np.arange(65536, dtype=np.uint16)
    got = conversions.to_float(bits, name)
    np.testing.assert_array_equal(got.view(np.uint32), bits.view(dtype).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("name", LOW)
def test_host_16_bit_floats_round_as_numpy_and_ml_dtypes(conversions, name):
    """Round to nearest even, bit for bit (NaNs included) with NumPy's float16 and ml_dtypes' bfloat16."""
    dtype = low_dtype(name)
    values = float32_near_every_16_bit_value(dtype)
    with np.errstate(all="ignore"):
        want = values.astype(dtype).view(np.uint16)
    got = conversions.from_float(values, name)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(values.view(np.uint32)[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    back = conversions.from_float(np.arange(65536, dtype=np.uint16).view(dtype).astype(np.float32), name)
    finite = np.isfinite(np.arange(65536, dtype=np.uint16).view(dtype).astype(np.float32))
    assert np.array_equal(back[finite], np.arange(65536, dtype=np.uint16)[finite]), "a round trip keeps every value"
    # from double: CuPy's float16(double) rounds once (cuda_fp16's __half(double)), its bfloat16(double) via float
    doubles = np.random.RandomState(1).standard_normal(200_000) * np.exp2(np.random.RandomState(2).randint(-40, 20, 200_000))
    with np.errstate(all="ignore"):
        want = (doubles if name == "float16" else doubles.astype(np.float32)).astype(dtype).view(np.uint16)
    np.testing.assert_array_equal(conversions.from_float(doubles, name), want)


@pytest.mark.slow  # compiles or builds: seconds
@pytest.mark.parametrize("name", KERNELS)
def test_16_bit_kernels_are_float32_math_rounded_once(host_workdir, name):
    """Each kernel in float16 and bfloat16 on the host: the float32 CPU path rounded once, within 0 or 1 ulp."""
    low_dtype("bfloat16")
    results = [r for r in host.check_kernel(name, n=4096, seed=5, workdir=host_workdir)
               if re.match(r"T=(b?float16)\b", r["dtypes"])]
    assert {r["dtypes"].split(",")[0] for r in results} == {"T=float16", "T=bfloat16"}
    failures = [f"[{r['dtypes']}] {r['error']}" for r in results if not r["ok"]]
    assert not failures, "\n".join(failures)
    assert all(r["max_ulps"] <= 1 for r in results)


def test_rounding_twice_fails_the_16_bit_check(host_workdir, tmp_path):
    """A kernel that rounds its intermediate results to the storage type passes in float32 but not in 16 bits."""
    low_dtype("bfloat16")
    folder = broken_copy(tmp_path, "tanh_grad", TANH_LINE, "return T(A(T(dy)) * A(T(A(1) - A(T(y * y)))));")
    results = {r["dtypes"]: r for r in host.check_kernel("tanh_grad", folder, workdir=host_workdir)}
    assert results["T=float32"]["ok"] and results["T=float64"]["ok"]
    assert not results["T=float16"]["ok"] and not results["T=bfloat16"]["ok"]


@pytest.mark.slow  # compiles or builds: seconds
@pytest.mark.parametrize("dtype_name", LOW)
@pytest.mark.parametrize("name", KERNELS)
def test_backend_dispatches_16_bit_arrays_to_their_kernel(stand_in_gpu, name, dtype_name):
    """CupyBackend.fused on float16/bfloat16 arrays builds the kernel of that dtype (no promotion) and it
    returns the float32 reference rounded once."""
    dtype = low_dtype(dtype_name)
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(6), 1024, dtype)
    got = stand_in_gpu.backend.fused(name, *[a.copy() for a in arrays], **params)
    got = got if isinstance(got, tuple) else (got,)
    if case.in_place:
        got = got[-len(kernel_source.load(name).outputs):]
    assert (name, dtype, 0) in stand_in_gpu.backend._kernels, "the 16-bit arrays did not reach their own kernel"
    assert all(g.dtype == dtype for g in got), "a 16-bit kernel stores its own dtype"
    want = cases.reference_at(case, arrays, params, dtype)
    report = cases.compare(case, got, want, arrays, params, dtype)
    assert report["ok"], report["worst"]


def test_16_bit_gradients_reach_the_kernel_through_the_op(stand_in_gpu):
    """gpugrad's op on float16 (and, where gg takes it, bfloat16) tensors of the stand-in GPU runs the 16-bit kernel."""
    case = cases.CASES["tanh_grad"]
    for name in LOW:
        dtype = low_dtype(name)
        arrays, params = case.draw(np, np.random.RandomState(7), 256, dtype)
        try:
            got = case.reference.on(stand_in_gpu, arrays, params)
        except gg.DTypeError:
            assert name == "bfloat16", "float16 tensors are gpugrad dtypes"
            continue  # gg.tensor takes bfloat16 once issue 19's dtypes part is in
        assert ("tanh_grad", dtype, 0) in stand_in_gpu.backend._kernels
        np.testing.assert_array_equal(got[0].view(np.uint16),
                                      cases.reference_at(case, arrays, params, dtype)[0].view(np.uint16))


# ---------------------------------------------------------------- the CuPy backend, on a stand-in GPU


OP_CASES = [n for n in KERNELS if isinstance(cases.CASES[n].reference, cases.OpReference)]


@pytest.mark.slow  # compiles or builds: seconds
@pytest.mark.parametrize("name", OP_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_op_dispatches_to_its_kernel(stand_in_gpu, name, dtype):
    """gpugrad's op on the stand-in GPU goes through CupyBackend.fused to the kernel and agrees with the CPU."""
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(2), 1024, dtype)
    got = case.reference.on(stand_in_gpu, arrays, params)
    assert (name, np.dtype(dtype), 0) in stand_in_gpu.backend._kernels, "the op did not run the fused kernel"
    want = case.reference(arrays, params)
    report = cases.compare(case, got, want, arrays, params, dtype)
    assert report["ok"], report["worst"]
    built = list(HostElementwiseKernel.built)
    case.reference.on(stand_in_gpu, arrays, params)
    assert HostElementwiseKernel.built == built, "the kernel must be built once per (kernel, dtype, device)"


@pytest.mark.parametrize("name", ["sgd_momentum_update", "adam_update"])
def test_update_kernels_run_in_place_through_the_backend(stand_in_gpu, name):
    case = cases.CASES[name]
    arrays, params = case.draw(np, np.random.RandomState(4), 512, np.float32)
    want = case.reference(arrays, params)
    inputs = [a.copy() for a in arrays]
    n_in = len(kernel_source.load(name).array_inputs)
    out = stand_in_gpu.backend.fused(name, *inputs, **params)
    for o, target, w in zip(out, inputs[n_in:], want):
        assert o is target  # updated in place, returned
        np.testing.assert_array_equal(o, w)


def test_backend_reports_bad_calls(stand_in_gpu):
    backend = stand_in_gpu.backend
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="takes 2 arrays"):
        backend.fused("tanh_grad", x)
    with pytest.raises(TypeError, match="missing \\['alpha'\\]"):
        backend.fused("leaky_relu_grad", x, x)
    with pytest.raises(TypeError, match="unknown \\['beta'\\]"):
        backend.fused("leaky_relu_grad", x, x, alpha=0.1, beta=2)
    with pytest.raises(gg.DTypeError, match="takes float16, bfloat16, float32, float64, not int64"):
        backend.fused("tanh_grad", np.ones(3, np.int64), np.ones(3, np.int64))


def test_keyword_params_become_scalars_or_arrays_of_the_kernels_dtype(stand_in_gpu):
    backend = stand_in_gpu.backend
    x, dy = np.array([-2.0, 0.0, 2.0], np.float32), np.ones(3, np.float32)
    fused = backend.kernel("clip_grad", x.dtype, 0)
    calls, real = [], fused.kernel
    fused.kernel = lambda *args: calls.append(args)
    try:
        backend.fused("clip_grad", x, dy, lo=np.float64(-1.0), hi=np.array([1.0, 2.0, 3.0]))
        backend.fused("clip_grad", x, dy, lo=gg.tensor(np.array([0.0, 0.0, 0.0])), hi=2)
    finally:
        fused.kernel = real
    (_, _, lo, hi), (_, _, lo2, hi2) = calls
    assert type(lo) is float and lo == -1.0  # a NumPy scalar goes as a Python scalar
    assert hi.dtype == np.float32 and hi.tolist() == [1.0, 2.0, 3.0]  # an array bound broadcasts, in x's dtype
    assert lo2.dtype == np.float32 and hi2 == 2
    assert backend.fused("clip_grad", x, dy, lo=-1.0, hi=1.0).tolist() == [0.0, 1.0, 0.0]


def test_softmax_cross_entropy_grad_derives_the_class_count(stand_in_gpu):
    probs = np.full((2, 4), 0.25, np.float32)
    out = stand_in_gpu.backend.fused("softmax_cross_entropy_grad", probs, np.array([1, 3]), np.ones(2, np.float32))
    assert out.tolist() == [[0.25, -0.75, 0.25, 0.25], [0.25, 0.25, 0.25, -0.75]]


def test_gradient_through_fused_ops_on_the_stand_in_gpu(stand_in_gpu):
    x = gg.tensor(np.array([0.5, -1.5, 2.0]), device=stand_in_gpu)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.tanh(x) * gg.abs(x))
    g = tape.gradient(y, x)
    assert g.device == "cuda:0"
    t = np.tanh(x.numpy())
    np.testing.assert_allclose(g.numpy(), (1 - t * t) * np.abs(x.numpy()) + t * np.sign(x.numpy()), rtol=1e-12)


# ---------------------------------------------------------------- CuPy installed, no GPU


@pytest.mark.skipif(gg.cuda_available(), reason="this machine has a usable GPU; the check is for machines without")
def test_cupy_without_a_gpu_imports_cleanly_and_says_why():
    needs_cupy()
    code = ("import gpugrad as gg\n"
            "assert gg.devices() == ['cpu'], gg.devices()\n"
            "try:\n    gg.tensor([1.0], device='cuda')\nexcept gg.DeviceUnavailableError as e:\n    print(e)\n"
            "else:\n    raise SystemExit('no error for cuda')\n")
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "no CUDA device can be used" in proc.stdout and ("driver" in proc.stdout or "device" in proc.stdout)


def test_from_dlpack_shares_host_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = gg.from_dlpack(a)
    assert t.device == "cpu" and t.shape == (2, 3) and np.shares_memory(t.numpy(), a)
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    assert gg.from_dlpack(gg.tensor([1.0, 2.0])).numpy().tolist() == [1.0, 2.0]


def test_from_dlpack_of_an_unknown_device_is_an_error():
    class Producer:
        def __dlpack_device__(self):
            return (4, 0)  # kDLOpenCL

    with pytest.raises(gg.DeviceError, match="neither the CPU nor a CUDA GPU"):
        gg.from_dlpack(Producer())


def test_mixed_float_inputs_are_promoted_as_numpy_does(stand_in_gpu):
    y, dy = np.array([0.5, -0.25], np.float32), np.array([1.0, 3.0], np.float64)
    out = stand_in_gpu.backend.fused("tanh_grad", y, dy)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, dy * (1 - y.astype(np.float64) ** 2))


# ---------------------------------------------------------------- the GPU check's harness (runs here too)


def _load_benchmark_module(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # compiles or builds: seconds
def test_gpu_check_parts_survive_failures_and_timeouts(tmp_path):
    gpu_check = _load_benchmark_module("gpu_check")
    env = dict(os.environ)
    failed = gpu_check.run_part(gpu_check.Part("fails"), [sys.executable, "-c", "print('x'); raise SystemExit(3)"],
                                30, tmp_path / "a.log", env, echo=False)
    assert failed.status == "failed (exit 3)" and failed.lines == ["x\n"]
    slow = gpu_check.run_part(gpu_check.Part("slow"), [sys.executable, "-c",
                              "import time; print('started', flush=True); time.sleep(60)"],
                              5, tmp_path / "b.log", env, echo=False)
    assert slow.status == "timed out (5 s)" and slow.seconds < 30 and slow.lines == ["started\n"]
    assert "started" in (tmp_path / "b.log").read_text()
    skipped = gpu_check.Part("skipped")
    gpu_check.run_part(skipped, [sys.executable, "-c", "print('===== 3 skipped in 0.1s =====')"], 30,
                       tmp_path / "c.log", env, echo=False)
    assert skipped.status == "nothing passed" and skipped.detail == "3 skipped in 0.1s"
    assert gpu_check.run_part(gpu_check.Part("late"), ["true"], 1, tmp_path / "d.log", env).status == "not run"


def test_g1_table_and_targets():
    g1 = _load_benchmark_module("g1_fused_kernels")
    a = np.zeros(10, np.float32)
    assert g1.bytes_moved([a, a], [a], 2, False) == 120
    assert g1.bytes_moved([a, a, a], [a, a], 1, True) == 40 + 2 * 80  # in-place outputs are read and written
    rows = [{"kernel": "device-to-device copy", "bytes": 8e8, "fused_ms": 0.2, "fused_gbps": 4000.0},
            {"kernel": "tanh_grad", "bytes": 8e8, "fused_ms": 0.22, "fused_gbps": 3636.0, "of_copy": 0.909,
             "unfused_ops": 3, "unfused_ms": 0.9, "speedup": 4.1, "elementwise": True},
            {"kernel": "log_grad", "bytes": 8e8, "fused_ms": 0.3, "fused_gbps": 2667.0, "of_copy": 0.667,
             "unfused_ops": 1, "unfused_ms": 0.3, "speedup": 1.0, "elementwise": True},
            {"kernel": "adam_update", "error": "CUDARuntimeError: out of memory"}]
    text = g1.table(rows)
    assert "reference" in text.splitlines()[1]
    assert re.search(r"tanh_grad .* 91% .* 4\.10x  ok$", text, re.M)
    assert re.search(r"log_grad .*bandwidth 67% < 80%$", text, re.M)
    assert "adam_update                  ERROR CUDARuntimeError" in text
