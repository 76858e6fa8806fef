"""A GPU region as one generated ``ElementwiseKernel``, and a ``ReductionKernel`` where it holds a reduction.

:func:`source` writes a region's elementwise ops (:class:`.regions.Region`) as a kernel file in
the format of ``kernels/`` (:mod:`gpugrad.backend.kernel_source`): a header (``in_params`` its operands,
``out_params`` the values it writes, ``dtypes`` the region's), then a ``__device__`` function computing every
op's declared expression in the compute type ``A`` (float for 16-bit storage and float32, double for
float64), each value rounded to the storage type as the unfused kernels round it. Nothing is contracted into
an FMA beyond what NVRTC does for the unfused kernels. :func:`build` registers it under a name made of its
hash and launches it through the backend's ``fused`` (CuPy compiles it once per dtype and device and caches
it); it writes into the plan's buffers and allocates nothing, so a CUDA graph holds it. A region ending in a
reduction (sum, mean, max over any axes) is also one ``cupy.ReductionKernel`` (:func:`reduction_kernel`): its
map recomputes the region's program up to the reduced value from the operands in registers, and it writes with
``out=`` into the plan's buffer through CuPy's own reduction kernel (never its CUB path: see there), allocating
nothing. The values such a region writes besides its result (those before the reduction that later steps read,
and those of the elementwise steps after it, such as a loss's gradient) are written by its ``ElementwiseKernel``:
a ReductionKernel's out-params are indexed by the result's index, not the operands', so it cannot write them
(W3, ``sum(square(log(x)))`` and its gradient, is so one ElementwiseKernel reading ``x`` and writing the gradient,
and one ReductionKernel reading ``x`` for the loss). The CuPy stand-in
(``tests/stand_in_cupy``) builds the same sources for the host.

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
import dataclasses
import functools
import hashlib

import numpy as np

from ...backend import kernel_source
from . import expr

__all__ = ["source", "reduction_kernel", "build", "HELPERS"]

# maximum and minimum as np.maximum / np.minimum: a NaN operand gives NaN
HELPERS = """#ifndef GPUGRAD_FUSION_HELPERS
#define GPUGRAD_FUSION_HELPERS
template <typename A> __device__ __forceinline__ A gpugrad_max(A a, A b) { return (a > b || a != a) ? a : b; }
template <typename A> __device__ __forceinline__ A gpugrad_min(A a, A b) { return (a < b || a != a) ? a : b; }
// +infinity as a float (NVRTC's headers in CuPy's kernels define no INFINITY): a max's identity
#define GPUGRAD_INFINITY __int_as_float(0x7f800000)
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
        if reduces is not None:  # a reduction is its own kernel (reduction_kernel)
            continue
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
    ops = [p[0] for p in region.program if p[5] is None]  # its elementwise ops: the name's body holds them all
    header = [f"// gpugrad-kernel: {name}",
              f"// A region fused by gg.function(jit_compile=True): {', '.join(ops[:12])}"
              f"{' ...' if len(ops) > 12 else ''}.",
              f"// in_params:  {', '.join(f'T {a}' for a in inputs)}",
              f"// out_params: {', '.join(f'T {o}' for o in outputs)}",
              f"// operation:  {name}({', '.join(inputs + outputs)})",
              f"// dtypes:     T={dtype}"]
    text = "\n".join(header) + "\n" + kernel_source.PRELUDE + HELPERS + "\n" + text_body.replace("REGION", name)
    return name, text


# reduce_expr per kind: NaN wins a max, as cupy.max and np.maximum.reduce
REDUCE = {"sum": "a + b", "mean": "a + b", "max": "gpugrad_max(a, b)"}
IDENTITY = {"sum": "0", "mean": "0", "max": "-GPUGRAD_INFINITY"}


def _mapped(region):
    """The region's elementwise part that computes the value its reduction reduces (the steps before it), written
    as that value only."""
    (out, kind, value, count), = region.reductions
    at = next(k for k, p in enumerate(region.program) if p[5] is not None)
    mapped = dataclasses.replace(region, program=region.program[:at], outputs=[region.values[value]], reductions=[])
    return mapped


def reduction_kernel(region):
    """The ``cupy.ReductionKernel`` arguments of ``region``'s reduction (a GPU region holds one at most), as a
    dict: ``in_params`` its operands and ``int64 n`` (the count a mean divides by; a second in-param also keeps
    CuPy 14.2 off its CUB path, which takes a temporary from the memory pool for a reduction over all axes and
    so cannot be captured in a CUDA graph), ``out_params`` ``T r``, ``map_expr`` the region's elementwise
    program up to the reduced value (the preamble's ``<name>_value``), ``reduce_expr``, ``post_map_expr``,
    ``identity``, ``name`` (``gpugrad_<name>``), ``reduce_type`` (float for float16, as cupy.sum; else T),
    ``preamble`` (the kernel file of that program, as :func:`source` writes it, and the ``_value`` function).
    CuPy's own reduction kernel launches one block per ``block_stride`` results (``_reduction.pyx``
    ``_get_block_specs``): a reduction to one value runs on one block of 512 threads, one SM's bandwidth.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> from gpugrad._tracing.capture import Capture
        >>> from gpugrad._tracing.fusion import regions
        >>> capture = Capture()
        >>> x = capture.input(gg.tensor(np.ones((4, 3), np.float32)))
        >>> with capture:
        ...     y = gg.mean(gg.tanh(x * 2.0), axis=0)
        >>> (region,) = regions.find(capture, capture.steps, {id(y._data)}, "gpu")
        >>> k = reduction_kernel(region)
        >>> k["in_params"], k["reduce_expr"], k["post_map_expr"]
        ('T a0, int64 n', 'a + b', 'r = T(a / _type_reduce(n))')
    """
    (_, kind, _, _), = region.reductions
    name, text = source(_mapped(region))
    inputs = [f"a{k}" for k in range(len(region.inputs))]
    value = (f"template <typename T> __device__ __forceinline__ T {name}_value("
             f"{', '.join(f'T {a}' for a in inputs)}) {{ T m; {name}({', '.join(inputs + ['m'])}); return m; }}\n")
    return {"in_params": ", ".join([f"T {a}" for a in inputs] + ["int64 n"]), "out_params": "T r",
            "map_expr": f"{name}_value({', '.join(inputs)})", "reduce_expr": REDUCE[kind],
            "post_map_expr": "r = T(a / _type_reduce(n))" if kind == "mean" else "r = T(a)",
            "identity": IDENTITY[kind], "name": f"gpugrad_{name}",
            "reduce_type": "float" if np.dtype(region.dtype).itemsize < 4 else None, "preamble": text + value}


def build(region, inputs, outputs, reductions=()):
    """A function of no arguments that launches ``region``'s kernels on ``inputs`` into ``outputs`` and
    ``reductions`` (the plan's arrays): one ``ElementwiseKernel`` writing the values read later (none where only
    the reduction is), then one ``ReductionKernel`` with ``out=`` the reduction's result. The elementwise kernel is
    registered (once per source) and compiled now; each launch writes into the plan's buffers and allocates
    nothing. Its ``rebind(inputs, outputs, reductions)``: the same launches on other arrays of the same layouts,
    with nothing compiled (a plan's binding, :mod:`gpugrad._tracing.binding`)."""
    backend = region.device.backend
    name = kernel = None
    index = backend._device_index((list(outputs) + list(reductions))[0])  # the plan's GPU: a rebind's arrays are on it
    if outputs:
        name, text = source(region)
        kernel_source.register(name, text)
        backend.kernel(name, np.dtype(region.dtype), index)
    split = _split(region) if region.reductions else None
    if split is not None:  # to one value: the region's map reduced to partials over many blocks, then those
        (result, kind, value, count), = region.reductions
        first = dataclasses.replace(region, reductions=[(result, "sum" if kind == "mean" else kind, value, count)])
        kernel, then = _reduction(backend, first), _reduction(backend, _partials_region(region, split))
        with backend.xp.cuda.Device(index):
            partials = backend.xp.empty(split, region.dtype)  # the plan's, as its buffers: made before any capture
    elif region.reductions:
        kernel = _reduction(backend, region)
        axes = region.axes[id(region.reductions[0][0])]

    def bind(inputs, outputs, reductions):
        launches = []
        if name is not None:
            launches.append(functools.partial(backend.fused, name, *inputs, *outputs))
        if split is not None:
            (out,) = reductions
            rows = region.size // split
            tiles = [a.reshape(rows, split) if how[0] == "full" else _compact(a).reshape(1, 1)
                     for a, how in zip(inputs, region.indexing)]
            launches.append(functools.partial(_on_device, backend, index, functools.partial(
                kernel, *tiles, rows, out=partials, axis=(0,))))
            launches.append(functools.partial(_on_device, backend, index, functools.partial(
                then, partials, region.size, out=out.reshape(()), axis=(0,))))
        elif kernel is not None:
            (out,) = reductions
            keepdims = out.ndim == len(region.shape) and out.ndim > 0
            reduce = functools.partial(kernel, *inputs, region.size // max(out.size, 1), out=out, axis=axes,
                                       keepdims=keepdims)
            launches.append(functools.partial(_on_device, backend, index, reduce))
        if len(launches) == 1:
            return launches[0]

        def run():
            for launch in launches:
                launch()
        run.launches = len(launches)  # two: a CUDA graph of this one step saves a launch (graphs.segments)
        return run

    fn = bind(list(inputs), list(outputs), list(reductions))
    fn.rebind = bind
    return fn


SPLIT = 1 << 20  # elements from which a reduction to one value runs as partials over many blocks, then one
PARTIALS = 1 << 15  # partial results: CuPy runs 32 a block, so 1024 blocks, each column read coalesced


def _split(region):
    """How many partials ``region``'s reduction is split into (None: one ReductionKernel): a reduction of
    :data:`SPLIT` elements or more to one value, over operands read whole or as one element, in float32 or
    float64 (a partial is stored in the region's dtype). CuPy's kernel reduces to one value on one thread block
    (one SM's bandwidth); reduced over its leading axis as ``(size / PARTIALS, PARTIALS)``, it runs one block per
    32 partials, and a second launch reduces the partials."""
    (result, _, _, _), = region.reductions
    if (result.size != 1 or region.size < SPLIT or region.size % PARTIALS or np.dtype(region.dtype).itemsize < 4
            or region.axes[id(result)] != tuple(range(len(region.shape)))
            or any(how[0] not in ("full", "one") for how in region.indexing)):
        return None
    return PARTIALS


def _partials_region(region, n):
    """The region that reduces the ``n`` partials of ``region``'s reduction (:func:`_split`) to its result: the
    partials read as they are, then the reduction (a mean's count: ``region.size``, given at the launch)."""
    from .regions import Region

    (result, kind, _, _), = region.reductions
    partials, value = np.empty(n, region.dtype), np.empty(n, region.dtype)  # (their ids name them)
    part = Region(0, (n,), np.dtype(region.dtype), region.device, inputs=[partials], indexing=[("full",)])
    part.program = [("Partial", (("x",), (), "x"), [("in", 0)], [], [id(value)], None),
                    (kind.capitalize(), None, [("v", id(value))], (), [id(result)], kind)]
    part.values = {id(value): value, id(result): result}
    part.reductions, part.axes, part.reduced = [(result, kind, id(value), region.size)], {id(result): (0,)}, {
        id(result)}
    part.op_types = ["Partial", kind.capitalize()]
    return part


def _reduction(backend, region):
    """The ``cupy.ReductionKernel`` of ``region`` (:func:`reduction_kernel`), made once per spec."""
    spec = reduction_kernel(region)
    key = tuple(sorted((k, str(v)) for k, v in spec.items()))
    kernel = _reduction_kernels.get(key)
    if kernel is None:
        kernel = _reduction_kernels[key] = backend.xp.ReductionKernel(**spec)
    return kernel


def _compact(a):
    from .regions import compact
    return compact(a)


def _on_device(backend, index, launch):
    """``launch()`` with device ``index`` current (a ReductionKernel launches on the current device)."""
    if index != backend._get_device():
        with backend.xp.cuda.Device(index):
            return launch()
    return launch()


_reduction_kernels: dict = {}  # the ReductionKernel of each generated spec (CuPy caches its binaries per kernel)


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


def sample_reduction(dtype="float32", kind="mean", shape=(64, 256), axes=(0,)):
    """The ``cupy.ReductionKernel`` arguments (:func:`reduction_kernel`) of a sample region ending in a reduction:
    a bias gradient's ``ReluGrad`` and its ``Sum``-like reduction over ``axes``; what the kernel check compiles
    for sm_90 (its preamble: the map's kernel file) beside :func:`sample_region`.

    Example:
        >>> sample_reduction("float16", "max")["reduce_type"], sample_reduction()["post_map_expr"]
        ('float', 'r = T(a / _type_reduce(n))')
    """
    from ...ops.replay import lookup
    from .regions import Region

    dtype = np.dtype(dtype)
    region = Region(0, tuple(shape), dtype, None)
    region.inputs = [np.empty(shape, dtype) for _ in range(2)]
    region.indexing = [("full",)] * 2
    value = np.empty(shape, dtype)
    region.program.append(("ReluGrad", lookup("ReluGrad").expression, [("in", 0), ("in", 1)], [], [id(value)], None))
    region.values[id(value)] = value
    result = np.empty([n for k, n in enumerate(shape) if k not in axes], dtype)
    region.program.append((kind.capitalize(), None, [("v", id(value))], (), [id(result)], kind))
    region.reductions.append((result, kind, id(value), value.size // max(result.size, 1)))
    region.axes[id(result)] = tuple(axes)
    region.op_types = ["ReluGrad", kind.capitalize()]
    return reduction_kernel(region)
