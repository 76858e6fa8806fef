"""Compile every fused kernel exactly as CuPy would, for sm_90, without a GPU.

CuPy builds an ``ElementwiseKernel`` on its first call: it generates the full
CUDA source from the declared signature and the arguments' dtypes and layouts,
then compiles it with NVRTC for the current device's architecture. This module
drives the same code generation and the same NVRTC path with the architecture
fixed to ``sm_90`` and the module loading replaced by keeping the cubin, so a
machine with CuPy, NVRTC and the CUDA headers but no driver compiles what a
Hopper GPU would run. A compile error fails with NVRTC's own message.

The patches are process-wide and tied to CuPy's internals (pinned: CuPy
14.2.0), so run this in a process of its own::

    python -m gpugrad._tools.kernelcheck.nvrtc [--dir KERNELS_DIR] [--json] [NAME ...]

Example:
    >>> [layout for layout, _ in LAYOUTS]
    ['contiguous', 'strided', 'array-params']
"""
import argparse
import concurrent.futures
import json
import multiprocessing
import os
import subprocess
import sys
import time
import types
from pathlib import Path

from ...backend import kernel_source

PINNED_CUPY = "14.2.0"
ARCH = "90"
EM_CUDA = 190  # ELF machine number of CUDA cubins

# How the arguments of a call look, which changes the generated source:
# contiguous arrays reduce to 1-D; broadcast (strided) ones keep 2 dims; a keyword
# param with a placeholder type (clip's lo, hi) may be an array instead of a scalar.
LAYOUTS = (
    ("contiguous", {"ndim": 1, "c_contiguous": True, "scalars": True}),
    ("strided", {"ndim": 2, "c_contiguous": False, "scalars": True}),
    ("array-params", {"ndim": 1, "c_contiguous": True, "scalars": False}),
)
_patched: dict = {}


def patch_cupy():
    """Make CuPy compile for sm_90 without asking a device; idempotent, process-wide.

    Raises RuntimeError when the installed CuPy is not the pinned version.
    """
    if _patched:
        return _patched["cupy"]
    os.environ["CUPY_CACHE_IN_MEMORY"] = "1"  # compile every time; never read a stale cubin
    import cupy
    from cupy.cuda import compiler

    if cupy.__version__ != PINNED_CUPY:
        raise RuntimeError(f"gpugrad._tools.kernelcheck drives CuPy {PINNED_CUPY} internals; found CuPy "
                           f"{cupy.__version__} (pip install 'gpugrad[kernelcheck]')")
    memoized = compiler._get_arch_for_options_for_nvrtc
    undecorated = getattr(memoized, "__wrapped__", None)
    if undecorated is None:
        raise RuntimeError("CuPy's _get_arch_for_options_for_nvrtc has no __wrapped__ original")
    compiler._get_arch_for_options_for_nvrtc = lambda arch=None: undecorated(arch)
    real_function = compiler.function

    class CubinOnly(real_function.Module):
        """Stands in for CuPy's Module: keeps the cubin, loads nothing on a device."""

        def load(self, cubin):
            self.cubin = bytes(cubin)

    compiler.function = types.SimpleNamespace(Module=CubinOnly, LinkState=real_function.LinkState)
    _patched["cupy"] = cupy
    return cupy


def _arginfos(k, binding, in_types, layout):
    """CuPy's argument descriptions for a call of kernel ``k`` in ``layout``."""
    from cupy._core import _carray, _kernel, _scalar

    cupy = _patched["cupy"]
    ndim, contiguous, scalars = layout["ndim"], layout["c_contiguous"], layout["scalars"]

    def array(dtype, raw):
        return _kernel._ArgInfo(1, cupy.ndarray, dtype, 1 if raw else ndim, True if raw else contiguous, True)

    infos = []
    for p, dtype in zip(k.inputs, in_types):
        keyword = p.name in k.keyword_params
        if keyword and (scalars or not p.placeholder):
            infos.append(_kernel._ArgInfo(3, _scalar.CScalar, dtype, 0, True, True))
        else:
            infos.append(array(dtype, p.raw))
    for p in k.outputs:
        infos.append(array(k.dtype_of(p, binding), p.raw))
    infos.append(_kernel._ArgInfo(2, _carray.Indexer, None, ndim, True, True))
    return tuple(infos)


def generated_source(k, binding, layout):
    """The CUDA source CuPy generates for ``k`` under ``binding`` and ``layout``, and its options.

    ``k`` is a :class:`~gpugrad.backend.kernel_source.KernelSource`.
    """
    cupy = patch_cupy()
    from cupy._core import _kernel

    ek = k.elementwise_kernel(cupy)  # as the GPU backend builds it
    in_dtypes = tuple(None if (p.name in k.keyword_params and layout["scalars"]) else k.dtype_of(p, binding)
                      for p in k.inputs)
    in_types, _, type_map = ek._decide_params_type(in_dtypes, ())
    infos = _arginfos(k, binding, [cupy.dtype(t) for t in in_types], layout)
    code = _kernel._get_elementwise_kernel_code(infos, type_map, ek.params, ek.operation, ek.name,
                                                ek.preamble, **ek.kwargs)
    return code, tuple(ek.kwargs.get("options", ()))


def compile_source(code, options=(), arch=ARCH):
    """Compile generated source through CuPy's real NVRTC path; returns the cubin bytes.

    Raises ``cupy.cuda.compiler.CompileException`` with NVRTC's message.
    """
    patch_cupy()
    from cupy._core import core

    module = core.compile_with_cache(code, options, arch)
    cubin = module.cubin
    if cubin[:4] != b"\x7fELF" or int.from_bytes(cubin[18:20], "little") != EM_CUDA:
        raise RuntimeError("NVRTC returned something that is not a CUDA cubin")
    if cubin_sm(cubin) != int(arch):
        raise RuntimeError(f"NVRTC built a cubin for sm_{cubin_sm(cubin)}, not sm_{arch}")
    return cubin


def cubin_sm(cubin):
    """The SM architecture a 64-bit CUDA ELF cubin is built for, from its header flags.

    Example:
        >>> header = bytearray(64); header[8] = 8; header[48:52] = (0x5A << 8).to_bytes(4, "little")
        >>> cubin_sm(bytes(header))
        90
    """
    flags = int.from_bytes(cubin[48:52], "little")
    return (flags >> 8) & 0xFF if cubin[8] >= 8 else flags & 0xFF  # ELF ABI version 8 moved the field


def standalone_source(k):
    """The kernel file alone, plus one ``__global__`` test function per float32/float64 binding
    that runs its operation on locals of the declared types (no CuPy headers: the file must be
    valid CUDA on its own, and instantiating the template checks its body)."""
    parts = [k.source]
    for index, binding in enumerate(k.bindings()):
        if any(dt.name in ("float16", "bfloat16") for dt in binding.values()):
            continue  # float16 and bfloat16 are CuPy's classes; the CuPy-generated variants cover them
        lines = [f"__global__ void gpugrad_standalone_{index}() {{"]
        lines += [f"    typedef {_c_name(dt)} {letter};" for letter, dt in binding.items()]
        lines.append("    const long long i = 0;")
        for p in k.inputs + k.outputs:
            ctype = p.type if p.placeholder else _c_name(p.type)
            lines.append(f"    const {ctype}* {p.name} = 0;" if p.raw else f"    {ctype} {p.name}{{}};")
        lines.append(f"    {k.operation};")
        lines += [f"    (void){p.name};" for p in k.outputs] + ["}"]
        parts.append("\n".join(lines))
    return "\n".join(parts) + "\n"


def _c_name(dtype):
    from .host import c_type

    return c_type(dtype)


def compile_standalone(k, arch=ARCH):
    """NVRTC-compile :func:`standalone_source` for ``k``; returns the cubin bytes."""
    patch_cupy()
    from cupy.cuda import compiler

    cubin, _ = compiler.compile_using_nvrtc(standalone_source(k), arch=arch, filename=f"{k.name}.cu",
                                            cache_in_memory=True)
    return cubin


def variants(k):
    """``(binding, layout name, layout)`` to compile for ``k``: every binding contiguous,
    the first float32 one (else the first) also strided, and with array params where a
    keyword param can be an array (clip's bounds). The layouts change only CuPy's
    indexing code around the operation, so one binding each is enough for them.
    """
    bindings = k.bindings()
    wide = [b for b in bindings if any(d == "float32" for d in b.values())] or bindings
    has_array_param = any(p.placeholder and p.name in k.keyword_params for p in k.inputs)
    out = [(b, "contiguous", dict(LAYOUTS)["contiguous"]) for b in bindings]
    out.append((wide[0], "strided", dict(LAYOUTS)["strided"]))
    if has_array_param:
        out.append((wide[0], "array-params", dict(LAYOUTS)["array-params"]))
    return out


def check_kernel(name, directory=None, arch=ARCH):
    """Compile every variant of kernel ``name``; returns one result dict each."""
    patch_cupy()
    try:
        k = kernel_source.load(name, directory)
    except kernel_source.KernelSourceError as exc:
        return [{"kernel": name, "dtypes": "", "layout": "", "ok": False, "seconds": 0.0, "error": str(exc)}]
    results = []
    start = time.perf_counter()
    result = {"kernel": name, "dtypes": "float32/float64", "layout": "standalone", "ok": True, "error": ""}
    try:
        result["cubin_bytes"] = len(compile_standalone(k, arch))
    except Exception as exc:
        result["ok"] = False
        result["error"] = f"{type(exc).__name__}: {exc}"
    result["seconds"] = round(time.perf_counter() - start, 3)
    results.append(result)
    for binding, layout_name, layout in variants(k):
        label = ",".join(f"{letter}={dt.name}" for letter, dt in binding.items())
        result = {"kernel": name, "dtypes": label, "layout": layout_name, "ok": True, "error": ""}
        start = time.perf_counter()
        try:
            code, options = generated_source(k, binding, layout)
            result["cubin_bytes"] = len(compile_source(code, options, arch))
        except Exception as exc:  # the compiler's message is the result
            result["ok"] = False
            result["error"] = f"{type(exc).__name__}: {exc}"
        result["seconds"] = round(time.perf_counter() - start, 3)
        results.append(result)
    return results


def reduction_source(spec, dtype, in_ndim=2, out_ndim=1, block_size=512):
    """The CUDA source CuPy 14.2 generates for ``cupy.ReductionKernel(**spec)`` called on C-contiguous float
    arrays of ``dtype`` (``in_ndim`` axes after CuPy folds them, a result of ``out_ndim``) with scalar in-params,
    off its CUB path (its own kernel: ``_ReductionKernel_get_cached_function_code``), and its options.

    ``spec`` holds ReductionKernel's arguments, e.g. :func:`gpugrad._tracing.fusion.gpu.reduction_kernel`'s.
    """
    import numpy as np

    cupy = patch_cupy()
    from cupy._core import _carray, _kernel, _reduction, _scalar

    rk = cupy.ReductionKernel(**spec)
    dtype = np.dtype(dtype)

    def info(p, ndim):  # a param of a placeholder type is an array here, one of a named type a scalar
        if p.dtype is None:
            return _kernel._ArgInfo(1, cupy.ndarray, dtype, ndim, True, True)
        return _kernel._ArgInfo(3, _scalar.CScalar, np.dtype(p.dtype), 0, True, True)
    in_types = tuple(dtype.type if p.dtype is None else None for p in rk.in_params)
    _, _, type_map = _kernel._decide_params_type(rk.in_params, rk.out_params, in_types, (dtype.type,))
    type_map = _kernel._TypeMap(type_map._pairs + (("IndexT", np.int32),))
    infos = tuple([info(p, in_ndim) for p in rk.in_params] + [info(p, out_ndim) for p in rk.out_params] +
                  [_kernel._ArgInfo(2, _carray.Indexer, None, in_ndim, True, True),
                   _kernel._ArgInfo(2, _carray.Indexer, None, out_ndim, True, True),
                   _kernel._ArgInfo(3, _scalar.CScalar, np.dtype(np.int32), 0, True, True)])
    code = _reduction._ReductionKernel_get_cached_function_code(
        rk.nin, rk.nout, rk._params, infos, type_map, rk.name, block_size, rk.reduce_type, rk.identity,
        rk.map_expr, rk.reduce_expr, rk.post_map_expr, rk.preamble, rk.options)
    return code, tuple(rk.options)


def check_sample_reductions(arch=ARCH):
    """Compile the ReductionKernel of a sample fused region ending in a reduction (fusion.gpu.sample_reduction;
    sum, mean and max; float16, float32, float64) as CuPy generates it; one result dict each."""
    from ..._tracing.fusion import gpu

    results = []
    for dtype in ("float16", "float32", "float64"):
        for kind in ("sum", "mean", "max"):
            spec = gpu.sample_reduction(dtype, kind)
            result = {"kernel": spec["name"], "dtypes": f"T={dtype}", "layout": f"reduction-{kind}", "ok": True,
                      "error": ""}
            start = time.perf_counter()
            try:
                code, options = reduction_source(spec, dtype)
                result["cubin_bytes"] = len(compile_source(code, options, arch))
            except Exception as exc:  # the compiler's message is the result
                result["ok"] = False
                result["error"] = f"{type(exc).__name__}: {exc}"
            result["seconds"] = round(time.perf_counter() - start, 3)
            results.append(result)
    return results


def check(directory=None, names=None, arch=ARCH, jobs=1):
    """Compile every kernel variant, in ``jobs`` worker processes; one result dict each."""
    names = list(names or kernel_source.names(directory))
    if jobs <= 1 or len(names) <= 1:
        return [r for name in names for r in check_kernel(name, directory, arch)]
    context = multiprocessing.get_context("spawn")  # fresh workers: each patches its own CuPy
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        futures = [pool.submit(check_kernel, name, directory, arch) for name in names]
        return [r for f in futures for r in f.result()]


def run_in_subprocess(directory=None, names=None, timeout=600, jobs=None):
    """Run :func:`check` in a fresh interpreter (the patches stay there).

    Returns ``(returncode, results, stderr)``.
    """
    cmd = [sys.executable, "-m", "gpugrad._tools.kernelcheck.nvrtc", "--json"]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    if directory is not None:
        cmd += ["--dir", str(directory)]
    cmd += list(names or [])
    env = dict(os.environ, CUPY_CACHE_IN_MEMORY="1")
    package_root = str(Path(__file__).resolve().parents[3])  # the folder holding gpugrad/
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc.returncode, results, proc.stderr


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpugrad._tools.kernelcheck.nvrtc", description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="kernels to compile (default: all)")
    parser.add_argument("--dir", help="folder of .cu files (default: gpugrad's kernels/)")
    parser.add_argument("--arch", default=ARCH, help="compute capability, e.g. 90 (sm_90)")
    parser.add_argument("--json", action="store_true", help="one JSON object per compilation")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8), help="worker processes")
    args = parser.parse_args(argv)
    try:
        results = check(args.dir, args.names, args.arch, args.jobs)
    except RuntimeError as exc:
        print(f"kernelcheck: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if not r["ok"]]
    for r in results:
        if args.json:
            print(json.dumps(r))
        elif not r["ok"]:
            print(f"FAIL {r['kernel']} [{r['dtypes']} {r['layout']}]\n{r['error']}\n")
    total = sum(r["seconds"] for r in results)
    print(f"compiled {len(results) - len(failed)}/{len(results)} kernel variants for sm_{args.arch} "
          f"in {total:.1f} s", file=sys.stderr)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
