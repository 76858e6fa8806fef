"""A GPU region as one generated ``ElementwiseKernel``: its ops' expressions in registers, its outputs written once.

:func:`source` writes a region (:class:`.regions.Region`, elementwise ops only on a GPU) as a kernel file in
the format of ``kernels/`` (:mod:`gpugrad.backend.kernel_source`): a header (``in_params`` its operands,
``out_params`` the values it writes, ``dtypes`` the region's), then a ``__device__`` function computing every
op's declared expression in the compute type ``A`` (float for 16-bit storage and float32, double for
float64), each value rounded to the storage type as the unfused kernels round it. Nothing is contracted into
an FMA beyond what NVRTC does for the unfused kernels. :func:`build` registers it under a name made of its
hash and launches it through the backend's ``fused`` (CuPy compiles it once per dtype and device and caches
it); it writes into the plan's buffers and allocates nothing, so a CUDA graph holds it. The CuPy stand-in
(``tests/stand_in_cupy``) builds the same source for the host.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> from gpugrad._tracing.capture import Capture
    >>> from gpugrad._tracing.fusion import regions
    >>> capture = Capture()
    >>> x = capture.input(gg.tensor(np.ones(4, np.float32)))
    >>> with capture:
    ...     y = gg.tanh(x * 2.0) + 1.0
    >>> (region,) = regions.find(capture, capture.steps, {id(y._data)}, "gpu")
    >>> name, text = source(region)
    >>> print(text.splitlines()[2])
    // in_params:  T a0
"""
import functools
import hashlib

import numpy as np

from ...backend import kernel_source
from . import expr

__all__ = ["source", "build", "HELPERS"]

# maximum and minimum as np.maximum / np.minimum: a NaN operand gives NaN
HELPERS = """#ifndef GPUGRAD_FUSION_HELPERS
#define GPUGRAD_FUSION_HELPERS
template <typename A> __device__ __forceinline__ A gpugrad_max(A a, A b) { return (a > b || a != a) ? a : b; }
template <typename A> __device__ __forceinline__ A gpugrad_min(A a, A b) { return (a < b || a != a) ? a : b; }
#endif
"""


def source(region):
    """``(name, text)``: the kernel file of ``region``, named ``region_<hash of its body>``."""
    names = {}
    inputs = [f"a{k}" for k in range(len(region.inputs))]
    out_index = {id(a): j for j, a in enumerate(region.outputs)}
    body = []
    v = 0

    def ref(r):
        if r[0] == "v":
            return names[r[1]]
        if r[0] == "const":
            return expr._number(r[1], "cuda")
        return f"a{r[1]}"

    for op_type, declared, refs, values, out_ids, reduces in region.program:
        text, env = expr.bind(declared, [ref(r) for r in refs], values, "cuda")
        for node, oid in zip(expr.outputs(text), out_ids):
            name = names[oid] = f"v{v}"
            v += 1
            body.append(f"    const A {name} = A(T({expr.emit(text, env, 'cuda', node)}));  // {op_type}")
            if oid in out_index:
                body.append(f"    o{out_index[oid]} = T({name});")
    outputs = [f"o{j}" for j in range(len(region.outputs))]
    dtype = np.dtype(region.dtype).name
    function = [f"__device__ __forceinline__ void REGION({', '.join([f'T {a}_' for a in inputs] + [f'T& {o}' for o in outputs])}) {{",
                "    typedef typename gpugrad_acc<T>::type A;"]
    if inputs:
        function.append(f"    const A {', '.join(f'{a} = {a}_' for a in inputs)};")
    text_body = "\n".join(["template <typename T>"] + function + body + ["}"]) + "\n"
    name = "region_" + hashlib.sha1((dtype + text_body).encode()).hexdigest()[:16]
    header = [f"// gpugrad-kernel: {name}",
              f"// A region fused by gg.function(jit_compile=True): {', '.join(region.op_types[:12])}"
              f"{' ...' if len(region.op_types) > 12 else ''}.",
              f"// in_params:  {', '.join(f'T {a}' for a in inputs)}",
              f"// out_params: {', '.join(f'T {o}' for o in outputs)}",
              f"// operation:  {name}({', '.join(inputs + outputs)})",
              f"// dtypes:     T={dtype}"]
    text = "\n".join(header) + "\n" + kernel_source.PRELUDE + HELPERS + "\n" + text_body.replace("REGION", name)
    return name, text


def build(region, inputs, outputs):
    """A function of no arguments that launches ``region``'s kernel on ``inputs`` into ``outputs`` (the plan's
    arrays); the kernel is registered (once per source) and compiled now."""
    name, text = source(region)
    kernel_source.register(name, text)
    backend = region.device.backend
    backend.kernel(name, np.dtype(region.dtype), backend._device_index(outputs[0]))
    return functools.partial(backend.fused, name, *inputs, *outputs)


def sample_region(dtype="float32", n=1024):
    """A region holding every op that declares an expression once, each reading the one before (and the
    operands ``a0``, ``a1``, ``a2``), every value written: what the kernel check compiles for sm_90 and runs on
    the host, as a sample of the kernels fusion generates.

    Example:
        >>> r = sample_region()
        >>> len(r.outputs) >= len(r.op_types) > 30
        True
    """
    from ...ops.replay import declared
    from .regions import Region

    dtype = np.dtype(dtype)
    region = Region(0, (n,), dtype, None)
    region.inputs = [np.empty(n, dtype) for _ in range(3)]
    region.indexing = [("full",)] * 3
    previous = ("in", 0)
    for op_type, r in declared().items():
        if r.expression is None:
            continue
        names, params, text = r.expression
        refs = [previous] + [("in", (k % 2) + 1) for k in range(1, len(names))]
        outs = [np.empty(n, dtype) for _ in expr.outputs(text)]
        region.program.append((op_type, r.expression, refs, [0.5] * len(params), [id(o) for o in outs], None))
        for o in outs:
            region.values[id(o)] = o
            region.outputs.append(o)
        region.op_types.append(op_type)
        previous = ("v", id(outs[0]))
    return region
