"""Run each fused kernel's math on the host: its CUDA source built with g++ over NumPy buffers.

The kernel file's ``__device__`` function and its ``operation`` line are
compiled as C++ inside a loop that binds every argument by reference, the way
CuPy's generated kernel does (``const T &y = _raw_y[i]``, raw params indexed,
``i`` the flat index), and run through ctypes on NumPy arrays. The same file
that the GPU compiles is what runs here; only CUDA's qualifiers and CuPy's
``float16`` and ``bfloat16`` storage classes get host definitions (``half_host.h``:
the 16 bits, widened exactly and rounded to nearest even as CUDA's
``__float2half_rn`` and ``__float2bfloat16_rn``).

Built with ``-ffp-contract=off`` so the host does IEEE arithmetic step by step
as NumPy does; NVRTC contracts multiply-adds and CuPy compiles with
``-ftz=true``, so the GPU may differ from both in the last bits.

Example:
    >>> import numpy as np
    >>> c_type(np.dtype("int64")), c_type(np.dtype("float16"))
    ('long long', 'float16')
    >>> c_type(kernel_source.dtype("bfloat16"))
    'bfloat16'

"""
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ...backend import kernel_source

CXXFLAGS = ("-O2", "-std=c++17", "-shared", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-Wall",
            "-Wno-unused-variable")

_C_TYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float", "float64": "double", "int8": "signed char",
            "int16": "short", "int32": "int", "int64": "long long", "uint8": "unsigned char",
            "uint32": "unsigned int", "uint64": "unsigned long long", "bool": "bool"}

# Host definitions of CuPy's float16 and bfloat16: 16 bits, converted as CUDA rounds.
HALF_HEADER = Path(__file__).with_name("half_host.h")

# Host definitions of what CUDA device code takes for granted (the 16-bit floats follow).
PRELUDE = r"""
#include <cmath>
#include <math.h>   // float overloads in the global namespace, as CUDA's math API has
#include <cstddef>
#include <algorithm>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float rsqrt(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline float max(float a, float b) { return std::fmax(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }

// A raw parameter: indexed by a flat element index, as CuPy's CArray of a contiguous array.
template <typename X> struct HostRaw {
    X* p;
    explicit HostRaw(void* ptr) : p(static_cast<X*>(ptr)) {}
    X& operator[](std::ptrdiff_t i) const { return p[i]; }
};
"""


class HostBuildError(RuntimeError):
    """The host compiler rejected a kernel; the message is the compiler's."""


def c_type(dtype):
    """The C++ type name CuPy uses for a NumPy dtype (``float16``, ``bfloat16``: the host structs)."""
    return _C_TYPES[dtype if isinstance(dtype, str) else np.dtype(dtype).name]


def host_prelude():
    """The C++ every host build starts with: CUDA's qualifiers and math, then ``half_host.h``."""
    return PRELUDE + f'#line 1 "{HALF_HEADER.name}"\n' + HALF_HEADER.read_text()


def compiler():
    """The host C++ compiler: ``$CXX``, else ``g++``, else ``c++``; ``None`` if there is none.

    Example:
        >>> compiler() is None or os.path.basename(compiler()) != ""
        True
    """
    if os.environ.get("CXX"):
        return shutil.which(os.environ["CXX"])
    return shutil.which("g++") or shutil.which("c++")


def _function(k, index, binding):
    """The C++ of one exported function running ``k`` under ``binding``."""
    lines = [f'extern "C" void gk_{index}(std::ptrdiff_t n, void* const* args) {{']
    lines += [f"    typedef {c_type(dt)} {letter};" for letter, dt in binding.items()]
    loop = []
    params = [(p, True) for p in k.inputs] + [(p, False) for p in k.outputs]
    for slot, (p, is_input) in enumerate(params):
        ctype = p.type if p.placeholder else c_type(p.type)
        const = "const " if is_input else ""
        if p.raw:
            lines.append(f"    const HostRaw<{ctype}> {p.name}(args[{slot}]);")
        elif p.name in k.keyword_params:
            lines.append(f"    const {ctype} {p.name} = *static_cast<const {ctype}*>(args[{slot}]);")
        else:
            lines.append(f"    {const}{ctype}* _raw_{p.name} = static_cast<{const}{ctype}*>(args[{slot}]);")
            loop.append(f"        {const}{ctype} &{p.name} = _raw_{p.name}[i];")
    lines.append("    for (std::ptrdiff_t i = 0; i < n; ++i) {")
    lines += loop
    lines.append(f"        {k.operation};")
    lines += ["    }", "}"]
    return "\n".join(lines)


def harness_source(k):
    """The whole C++ translation unit for kernel ``k``: prelude, the .cu file, one function per binding."""
    where = str(k.path) if k.path else f"{k.name}.cu"
    parts = [host_prelude(), f'#line 1 "{where}"', k.source, '#line 1 "gpugrad-host-harness"']
    parts += [_function(k, i, b) for i, b in enumerate(k.bindings())]
    return "\n".join(parts) + "\n"


class HostKernel:
    """Kernel ``k`` built for the host: call it like the GPU backend's ``fused``.

    ``kernel(*arrays, **params)`` takes the array inputs in declared order, then
    optionally the outputs (updated in place), and the keyword params; it
    returns the outputs as a tuple of NumPy arrays.
    """

    def __init__(self, k, library):
        self.source = k
        self._lib = ctypes.CDLL(str(library))
        self._index = {tuple(sorted((l, d.name) for l, d in b.items())): i for i, b in enumerate(k.bindings())}

    def _binding(self, arrays):
        found = {}
        for p, a in zip(self.source.array_inputs + self.source.outputs, arrays):
            if p.placeholder:
                found.setdefault(p.type, a.dtype)
        key = tuple(sorted((letter, dt.name) for letter, dt in found.items()))
        if key not in self._index:
            raise TypeError(f"kernel {self.source.name!r} is not declared for dtypes {dict(key)}")
        return found, self._index[key]

    def __call__(self, *arrays, **params):
        k = self.source
        n_in = len(k.array_inputs)
        if len(arrays) not in (n_in, n_in + len(k.outputs)):
            raise TypeError(f"kernel {k.name!r} takes {n_in} arrays (or {n_in + len(k.outputs)} with outputs)")
        missing = set(k.keyword_params) - set(params)
        if missing:
            raise TypeError(f"kernel {k.name!r} needs params {sorted(missing)}")
        arrays = [np.asarray(a) for a in arrays]
        binding, index = self._binding(arrays)
        inputs = dict(zip([p.name for p in k.array_inputs], arrays[:n_in]))
        elementwise = [inputs[p.name] for p in k.array_inputs if not p.raw]
        shape = np.broadcast_shapes(*[a.shape for a in elementwise])
        if len(arrays) > n_in:
            outputs = list(arrays[n_in:])
            for out in outputs:
                if out.shape != shape or not out.flags.c_contiguous or not out.flags.writeable:
                    raise ValueError(f"kernel {k.name!r}: outputs must be writable, C-contiguous, shape {shape}")
        else:
            outputs = [np.empty(shape, k.dtype_of(p, binding)) for p in k.outputs]
        keep = []  # buffers that must outlive the call
        for p in k.inputs:
            if p.name in k.keyword_params:
                keep.append(np.asarray(params[p.name], dtype=k.dtype_of(p, binding)))
            elif p.raw:
                keep.append(np.ascontiguousarray(inputs[p.name], dtype=k.dtype_of(p, binding)).reshape(-1))
            else:
                a = inputs[p.name]
                if a.dtype != k.dtype_of(p, binding):
                    raise TypeError(f"kernel {k.name!r}: {p.name} is {a.dtype}, expected {k.dtype_of(p, binding)}")
                keep.append(np.ascontiguousarray(np.broadcast_to(a, shape)))
        keep += outputs
        pointers = (ctypes.c_void_p * len(keep))(*[a.ctypes.data for a in keep])
        getattr(self._lib, f"gk_{index}")(ctypes.c_ssize_t(int(np.prod(shape, dtype=np.int64))), pointers)
        return tuple(outputs)


def build(k, workdir=None):
    """Compile kernel ``k`` (a KernelSource) for the host; returns a :class:`HostKernel`.

    The shared library is cached in ``workdir`` by a hash of the generated source.
    Raises :class:`HostBuildError` with the compiler's message.
    """
    return HostKernel(k, _compile(k.name, harness_source(k), workdir, f"kernel {k.name!r}"))


def _compile(name, source, workdir, what):
    """The shared library of C++ ``source``, built once into ``workdir`` (cached by a hash of it)."""
    cxx = compiler()
    if cxx is None:
        raise HostBuildError("no host C++ compiler: install g++ or set $CXX")
    digest = hashlib.sha1((source + " ".join(CXXFLAGS) + cxx).encode()).hexdigest()[:16]
    folder = Path(workdir or os.path.join(tempfile.gettempdir(), "gpugrad-kernelcheck"))
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"{name}-{digest}.so"
    if not library.exists():
        cpp = folder / f"{name}-{digest}.cpp"
        cpp.write_text(source)
        partial = folder / f"{name}-{digest}.{os.getpid()}.so"
        try:
            proc = subprocess.run([cxx, *CXXFLAGS, "-o", str(partial), str(cpp)], capture_output=True, text=True)
        except OSError as exc:
            raise HostBuildError(f"cannot run the host compiler {cxx}: {exc}") from None
        if proc.returncode != 0:
            raise HostBuildError(f"{cxx} could not build {what} for the host:\n{proc.stderr}")
        os.replace(partial, library)
    return library


class HalfConversions:
    """The host float16/bfloat16 conversions of ``half_host.h``, on NumPy arrays (built by :func:`conversions`).

    ``to_float(bits, dtype)``: uint16 patterns widened to float32; ``from_float(values, dtype)``:
    float32 (or float64) values rounded to the uint16 patterns of ``dtype`` ("float16" or "bfloat16").
    """

    def __init__(self, library):
        self._lib = ctypes.CDLL(str(library))

    @staticmethod
    def _bfloat(dtype):
        name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
        if name not in ("float16", "bfloat16"):
            raise TypeError(f"half_host.h converts float16 and bfloat16, not {name}")
        return int(name == "bfloat16")

    def to_float(self, bits, dtype):
        bits = np.ascontiguousarray(bits, dtype=np.uint16)
        out = np.empty(bits.shape, np.float32)
        self._lib.gpugrad_host_to_float(self._bfloat(dtype), ctypes.c_ssize_t(bits.size),
                                        ctypes.c_void_p(bits.ctypes.data), ctypes.c_void_p(out.ctypes.data))
        return out

    def from_float(self, values, dtype):
        values = np.ascontiguousarray(values)
        if values.dtype not in (np.float32, np.float64):
            raise TypeError(f"from_float takes float32 or float64 values, not {values.dtype}")
        out = np.empty(values.shape, np.uint16)
        fn = self._lib.gpugrad_host_from_float if values.dtype == np.float32 else self._lib.gpugrad_host_from_double
        fn(self._bfloat(dtype), ctypes.c_ssize_t(values.size), ctypes.c_void_p(values.ctypes.data),
           ctypes.c_void_p(out.ctypes.data))
        return out


def conversions(workdir=None):
    """Build ``half_host.h`` alone for the host; returns its :class:`HalfConversions`.

    Raises :class:`HostBuildError` with the compiler's message.
    """
    return HalfConversions(_compile("half_host", host_prelude(), workdir, "half_host.h"))


def build_named(name, directory=None, workdir=None):
    """:func:`build` for the kernel file ``name`` in ``directory`` (default: gpugrad's kernels)."""
    return build(kernel_source.load(name, directory), workdir)


def check_kernel(name, directory=None, n=4096, seed=0, workdir=None):
    """Build kernel ``name`` on the host and compare it with its CPU reference for every binding.

    Returns one dict per dtype binding: kernel, dtypes, ok, max_ulps, error.
    """
    from . import cases

    k = kernel_source.load(name, directory)
    case = cases.CASES.get(name)
    if case is None:
        return [{"kernel": name, "dtypes": "", "ok": False, "max_ulps": None,
                 "error": f"no case for {name!r} in gpugrad._tools.kernelcheck.cases"}]
    try:
        kernel = build(k, workdir)
    except HostBuildError as exc:
        return [{"kernel": name, "dtypes": "", "ok": False, "max_ulps": None, "error": str(exc)}]
    results = []
    for binding in k.bindings():
        dtype = binding["T"]
        label = ",".join(f"{letter}={dt.name}" for letter, dt in binding.items())
        arrays, drawn = case.draw(np, np.random.RandomState(seed), n, dtype)
        arrays = [a.astype(k.dtype_of(p, binding), copy=False) if p.placeholder else a
                  for p, a in zip(k.array_inputs + k.outputs, arrays)]
        for variant in case.variants:  # each variant of the kernel's math: its params replace the draw's
            params = dict(drawn, **variant)
            got = kernel(*[a.copy() for a in arrays], **params)
            want = cases.reference_at(case, arrays, params, dtype)
            report = cases.compare(case, got, want, arrays, params, dtype)
            shown = label + "".join(f",{key}={value:g}" for key, value in variant.items())
            results.append({"kernel": name, "dtypes": shown, "ok": report["ok"], "max_ulps": report["max_ulps"],
                            "error": report["worst"]})
    return results


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpugrad._tools.kernelcheck.host",
                                     description="run each kernel's math on the host and compare with the CPU path")
    parser.add_argument("names", nargs="*", help="kernels (default: all)")
    parser.add_argument("--dir", help="folder of .cu files (default: gpugrad's kernels/)")
    parser.add_argument("-n", type=int, default=4096, help="elements per check")
    args = parser.parse_args(argv)
    results = [r for name in (args.names or kernel_source.names(args.dir))
               for r in check_kernel(name, args.dir, args.n)]
    for r in results:
        status = "ok  " if r["ok"] else "FAIL"
        ulps = "-" if r["max_ulps"] is None else f"{r['max_ulps']:g}"
        print(f"{status} {r['kernel']:<28} {r['dtypes']:<24} max ulps {ulps:>6}  {r['error']}")
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
