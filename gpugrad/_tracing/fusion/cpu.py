"""A CPU region compiled by numba: one loop over the region's elements, its values in registers.

:func:`source` writes the region (:class:`.regions.Region`) as a Python module holding one
``@numba.njit`` function: a loop over a range of the flat index (one per thread of gpugrad's CPU pool,
as the CPU fast paths split their work, when the region is large: :data:`PARALLEL` elements or more;
numba's own threading layer is not used, whose OpenMP threads spin after each loop), that reads each operand once per
element, computes every op's declared expression in the region's dtype (numbers as that dtype, so
float32 stays float32; no fast-math, so nothing is contracted or reordered), writes the outputs and
adds up the reductions (sums in float64, each chunk's partial combined in chunk order, so a plan's
result does not depend on thread timing). A region of :data:`.regions.LARGE` elements or more with one-call
transcendental ops (:func:`staged_calls`: ``log(x)``, ``exp(x)``, ``power(x, y)``) runs each chunk in blocks of
:data:`STAGED_BLOCK_BYTES` per buffer (in cache): per block, a numba ``stage`` loop writes the operands
that are not an input's elements into block buffers, NumPy's ufunc (eager's call: eager's bits, its SIMD speed)
computes each such op into its block buffer, and the region's loop reads those; so the region is still one
pass over memory (W3, the gradient of ``sum(square(log(x)))``, reads ``x`` and writes the gradient and the loss).
Each chunk has its own block buffers. :func:`build` compiles it once per source: the module
is written to the cache folder (``$GPUGRAD_CACHE_DIR`` or ``~/.cache/gpugrad``) under its hash and
numba caches its machine code there too (``cache=True``), so a later process loads it.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> from gpugrad._tracing.capture import Capture
    >>> from gpugrad._tracing.fusion import regions
    >>> capture = Capture()
    >>> x = capture.input(gg.tensor(np.ones(4, np.float32)))
    >>> with capture:
    ...     y = gg.square(x * 2.0)
    >>> (region,) = regions.find(capture, capture.steps, {id(y._data)}, "cpu")
    >>> [line.strip() for line in source(region, 1).splitlines() if line.strip().startswith("v")]
    ['v0 = (x0 * _K0)', 'v1 = (v0 * v0)']
"""
import functools
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from . import expr, regions

__all__ = ["available", "source", "build", "PARALLEL"]

PARALLEL = 1 << 16  # elements from which a region's loop is split across gpugrad's CPU threads
BLOCK = 2048  # elements whose reduction terms a chunk keeps before adding them up
# a staged region's block, per buffer: its Python calls (~5 us a block) stay a few percent of its time, and its
# buffers and inputs' part in cache (measured on W3: 256 KiB to 4 MiB alike within noise, 1 MiB the fastest)
STAGED_BLOCK_BYTES = 1 << 20
# a block's terms added in 8 lanes (lane l: terms l, l + 8, ... in order), the lanes then as ((0+1)+(2+3))+((4+5)+(6+7))
# and the tail in order: the lanes as one vector of 8 doubles (llvmlite: lane-wise adds, nothing reassociated)
_SUM8 = """from numba.core import cgutils
from numba.extending import intrinsic
from llvmlite import ir


@intrinsic
def _lanes8(typingctx, b, n8):
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        lanes8 = ir.VectorType(ir.DoubleType(), 8)
        acc = cgutils.alloca_once_value(builder, ir.Constant(lanes8, [0.0] * 8))
        n = args[1]
        with cgutils.for_range_slice(builder, ir.Constant(n.type, 0), n, ir.Constant(n.type, 8)) as (k, _):
            x = builder.load(builder.bitcast(builder.gep(data, [k]), lanes8.as_pointer()), align=8)
            builder.store(builder.fadd(builder.load(acc), x), acc)
        lanes = builder.load(acc)
        e = [builder.extract_element(lanes, ir.Constant(ir.IntType(32), j)) for j in range(8)]
        return builder.fadd(builder.fadd(builder.fadd(e[0], e[1]), builder.fadd(e[2], e[3])),
                            builder.fadd(builder.fadd(e[4], e[5]), builder.fadd(e[6], e[7])))
    return numba.types.float64(b, n8), codegen


@numba.njit(cache=True, error_model='numpy', nogil=True)
def _sum8(b, m):
    n8 = m // 8 * 8
    t = _lanes8(b, n8)
    for k in range(n8, m):
        t += b[k]
    return t

"""
# NumPy's power loop (from NumPy 2.3) given one exponent for every element (a stride-0 operand) takes 0.5 as
# sqrt and -1 as a reciprocal: sqrt(-inf) is nan and sqrt(-0.0) is -0.0, where pow gives inf and 0.0
_POW1 = """@numba.njit(cache=True, error_model='numpy', nogil=True)
def _pow1(x, y):
    if y == _T(0.5):
        return np.sqrt(x)
    if y == _T(-1):
        return _T(1) / x
    return np.power(x, y)

"""
_NUMBER = re.compile(r"_T\((-?[0-9][^()]*|float\('-?[a-z]+'\))\)")
_U = np.uint64
_lock = threading.Lock()
_loaded: dict = {}  # source hash -> the module of its compiled functions
_fallback: list = []  # the temporary cache folder of this process, once the configured one cannot be written


def available():
    """Whether numba imports (the ``gpugrad[jit]`` extra).

    Example:
        >>> isinstance(available(), bool)
        True
    """
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _read(k, how):
    if how[0] == "full":
        return f"a{k}[i]"
    if how[0] == "mod":
        return f"a{k}[i % {how[1]}]"
    return f"a{k}[i // {how[1]}]"


def layout(region):
    """``(m, bases)``: the region's loop as rows of ``m`` consecutive elements (its innermost axes that every
    reduction reduces, or keeps, alike; axes of length 1 dropped), and per reduction ``(inner_kept, terms)``:
    whether it keeps those ``m`` (its result index then runs along the row) and its result's index at the start
    of row ``q`` as ``sum((q // div % mod) * stride for div, mod, stride in terms)`` (``mod`` None: no ``%``).

    Example:
        >>> import gpugrad as gg
        >>> from gpugrad._tracing.capture import Capture
        >>> capture = Capture()
        >>> x = capture.input(gg.tensor(np.ones((64, 256), np.float32)))
        >>> with capture:
        ...     y = gg.sum(gg.relu(x) * 2.0, axis=0)
        >>> (region,) = regions.find(capture, capture.steps, {id(y._data)}, "cpu")
        >>> layout(region)  # a bias gradient: rows of 256, each added into the result along the row
        (256, [(True, [])])
    """
    keys = [region.axes[id(out)] for out, _, _, _ in region.reductions]
    dims = []  # (length, status per reduction: reduced?) with neighbours of one status merged
    for ax, n in enumerate(region.shape):
        if n == 1:
            continue
        status = tuple(ax in axes for axes in keys)
        if dims and dims[-1][1] == status:
            dims[-1] = (dims[-1][0] * n, status)
        else:
            dims.append((n, status))
    if not keys or not dims:
        return max(region.size, 1), [(False, []) for _ in keys]
    m, last = dims[-1]
    outer = dims[:-1]
    bases = []
    for j in range(len(keys)):
        inner_kept = not last[j]
        stride = m if inner_kept else 1
        terms, div = [], 1
        for k in range(len(outer) - 1, -1, -1):
            n, status = outer[k]
            if not status[j]:
                terms.append((div, n if k else None, stride))
                stride *= n
            div *= n
        bases.append((inner_kept, terms[::-1]))
    return m, bases


def _sqrt_fast_path(dtype):
    """Whether this NumPy's ``power`` loop takes one exponent 0.5 as ``sqrt`` for ``dtype`` (NumPy 2.3 and later:
    ``(-0.0) ** 0.5`` is then -0.0; before, ``pow``'s 0.0).

    Example:
        >>> _sqrt_fast_path(np.float64) == bool(np.signbit(np.power(np.array([-0.0]), 0.5)[0]))
        True
    """
    t = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        return bool(np.signbit(np.power(np.array([-0.0, -0.0], t), t(0.5))[0]))


def _one_exponent(region, r):
    """Whether eager NumPy reads exponent ref ``r`` of a ``power`` with stride 0 (one value for every element, as
    a number or 0-d array, or one element broadcast over a larger result) and this NumPy's loop then takes its
    fast paths."""
    if not _sqrt_fast_path(region.dtype):
        return False
    if r[0] == "const":
        return True
    if r[0] != "in" or region.indexing[r[1]][0] != "one":
        return False
    return region.inputs[r[1]].ndim == 0 or region.size > 1


def staged_calls(region):
    """``{program index: ufunc name}``: the ops of a region of :data:`.regions.LARGE` elements or more that each
    block hands to NumPy's loop (one transcendental ufunc call, :func:`.expr.ufunc_call`); empty below LARGE.

    Example:
        >>> import gpugrad as gg
        >>> from gpugrad._tracing.capture import Capture
        >>> capture = Capture()
        >>> x = capture.input(gg.tensor(np.ones(regions.LARGE, np.float32)))
        >>> with capture:
        ...     y = gg.sum(gg.square(gg.log(x)))
        >>> (region,) = regions.find(capture, capture.steps, {id(y._data)}, "cpu")
        >>> staged_calls(region)
        {0: 'log'}
    """
    if region.size < regions.LARGE:
        return {}
    found = {}
    for k, (_, declared, _, _, _, reduces) in enumerate(region.program):
        name = expr.ufunc_call(declared) if reduces is None else None
        if name is not None:
            found[k] = name
    return found


def _levels(region, calls):
    """The level of each program step: how many staged calls (``calls``) lie on its longest path from the
    region's inputs (a staged call's operands are one level below it)."""
    of_value, levels = {}, []
    for k, (_, _, refs, _, out_ids, _) in enumerate(region.program):
        level = max([of_value.get(r[1], 0) for r in refs if r[0] == "v"], default=0) + (k in calls)
        levels.append(level)
        for oid in out_ids:
            of_value[oid] = level
    return levels


def staging(region):
    """How a region's blocks run (:func:`source`, :func:`build`): ``(calls, levels, operands)``; ``operands``
    per staged call (program index): each operand as ``("slice", k)`` (input k read in place), ``("fixed", k)``
    (input k, one element), ``("const", value)``, ``("t", j)`` (staged call j's block) or ``("g", n)`` (block
    buffer n, which the stage below the call writes)."""
    calls = staged_calls(region)
    levels = _levels(region, calls)
    t_index = {region.program[k][4][0]: j for j, k in enumerate(calls)}
    operands, gathered = {}, 0
    for k in calls:
        per = []
        for r in region.program[k][2]:
            if r[0] == "const":
                per.append(("const", r[1]))
            elif r[0] == "in" and region.indexing[r[1]][0] in ("full", "one"):
                per.append(("slice" if region.indexing[r[1]][0] == "full" else "fixed", r[1]))
            elif r[0] == "v" and r[1] in t_index:
                per.append(("t", t_index[r[1]]))
            else:
                per.append(("g", gathered, r))
                gathered += 1
        operands[k] = per
    return calls, levels, operands


def _ref_code(region, r, names, loaded, body, scalars=True):
    """The code of ref ``r`` in a loop over ``i`` (an input's element loaded once into ``x<k>``)."""
    if r[0] == "v":
        return names[r[1]]
    if r[0] == "const":
        return expr._number(r[1], "numba")
    k = r[1]
    if region.indexing[k][0] == "one":
        return f"s{k}" if scalars else f"a{k}[0]"
    if k not in loaded:
        loaded[k] = f"x{k}"
        body.append(f"x{k} = {_read(k, region.indexing[k])}")
    return loaded[k]


def _stage_source(region, level, calls, levels, operands, jit):
    """The numba function ``stage<level>(lo, hi, a0.., t0.., g0..)`` that writes, for elements ``lo`` to ``hi``, the
    block buffers of the operands of the staged calls one level above ``level`` (the steps below computed again:
    their inputs are in cache, and the same code gives the same bits)."""
    names, loaded, body, v = {}, {}, [], 0
    t_of = {k: j for j, k in enumerate(calls)}
    for k, (op_type, declared, refs, values, out_ids, reduces) in enumerate(region.program):
        if reduces is not None or levels[k] > level:
            continue
        if k in calls:
            names[out_ids[0]] = f"t{t_of[k]}[i - lo]"
            continue
        text, env = expr.bind(declared, [_ref_code(region, r, names, loaded, body, False) for r in refs], values,
                              "numba")
        for node, oid in zip(expr.outputs(text), out_ids):
            names[oid] = f"w{v}"
            v += 1
            body.append(f"{names[oid]} = {expr.emit(text, env, 'numba', node)}")
    writes = [(op[1], op[2]) for k in calls if levels[k] == level + 1 for op in operands[k] if op[0] == "g"]
    body += [f"g{n}[i - lo] = {_ref_code(region, r, names, loaded, body, False)}" for n, r in writes]
    args = [f"a{k}" for k in range(len(region.inputs))] + [f"t{j}" for j in range(len(calls))] + \
        [f"g{n}" for n in range(sum(op[0] == "g" for per in operands.values() for op in per))]
    return ["", "", jit, f"def stage{level}(lo, hi, {', '.join(args)}):", "    for i in range(lo, hi):"] + \
        ["        " + b for b in body]


def source(region, chunks):
    """The Python source of ``region``'s numba function ``kernel(lo, hi, c, a0.., o0.., r0.., p0..)``: elements
    ``lo`` to ``hi`` as chunk ``c`` of ``chunks`` (``p<j>``: reduction j's partial results per chunk, ``chunks``
    times its result's size, float64 for a sum); with one chunk it writes the reductions' results too, else
    ``finish(r0.., p0..)`` does. A region of :data:`.regions.LARGE` elements or more with transcendental ops
    (:func:`staged_calls`) runs in blocks (:func:`build`): for each, ``stage<L>`` writes the block buffers ``g<n>``
    of level L's operands, NumPy's ufunc computes each staged call into its block buffer ``t<j>``, and ``kernel``
    (its partials set by the caller, its results always by ``finish``) reads those; the staged calls then give
    eager's bits. The loop runs over rows (:func:`layout`): a reduction that keeps a row's
    elements adds each into its own partial (a loop over the row that carries nothing from one element to the
    next: it vectorizes); one that reduces them keeps a block's terms and adds them up in 8 lanes (``_sum8``)."""
    dtype = np.dtype(region.dtype).name
    names = {}  # value id -> local name
    scalars = [k for k, how in enumerate(region.indexing) if how[0] == "one"]
    out_index = {id(a): j for j, a in enumerate(region.outputs)}
    reductions = region.reductions
    reduced = [f"r{j}" for j in range(len(reductions))] + [f"p{j}" for j in range(len(reductions))]
    args = [f"a{k}" for k in range(len(region.inputs))] + [f"o{j}" for j in range(len(region.outputs))] + reduced
    calls, levels, operands = staging(region)
    t_of = {k: j for j, k in enumerate(calls)}
    args += [f"t{j}" for j in range(len(calls))]
    m, bases = layout(region)
    unsigned = {}  # an index constant as a module global np.uint64: index arithmetic stays unsigned

    def u(value):
        return unsigned.setdefault(int(value), f"_U{len(unsigned)}")
    jit = "@numba.njit(cache=True, error_model='numpy', nogil=True)"
    lines = ["import numpy as np", "import numba", "", f"_T = np.{dtype}", "", _SUM8, _POW1, jit,
             f"def kernel(lo, hi, c, {', '.join(args)}):"]
    lines += [f"    s{k} = a{k}[0]" for k in scalars]
    lines.append("    c0 = np.uint64(c)")
    for j, (out, kind, _, _) in enumerate(reductions):
        init = "_T(-np.inf)" if kind == "max" else "np.float64(0)"
        if not calls:  # a staged region's blocks add into the partials its caller set once
            lines += [f"    for k in range({u(out.size)}):", f"        p{j}[c0 * {u(out.size)} + k] = {init}"]
        if kind != "max" and not bases[j][0]:
            lines.append(f"    buf{j} = np.empty({BLOCK}, np.float64)")
    lines += [f"    for q in range(lo // {u(m)}, (hi + {u(m - 1)}) // {u(m)}):",
              f"        row = q * {u(m)}", f"        i0 = max(lo, row)", f"        i1 = min(hi, row + {u(m)})"]
    for j, (out, kind, _, _) in enumerate(reductions):
        inner_kept, terms = bases[j]
        index = [f"c0 * {u(out.size)}"]
        for div, mod, stride in terms:
            t = "q" if div == 1 else f"(q // {u(div)})"
            t = t if mod is None else f"({t} % {u(mod)})"
            index.append(t if stride == 1 else f"{t} * {u(stride)}")
        lines.append(f"        base{j} = {' + '.join(index)}")
        if not inner_kept:
            lines.append(f"        acc{j} = {'_T(-np.inf)' if kind == 'max' else 'np.float64(0)'}")
    lines += [f"        for b0 in range(i0, i1, {u(BLOCK)}):", f"            b1 = min(b0 + {u(BLOCK)}, i1)",
              "            for i in range(b0, b1):"]
    body = []
    loaded = {}
    v = 0

    def ref(r):
        return _ref_code(region, r, names, loaded, body)

    for step, (op_type, declared, refs, values, out_ids, reduces) in enumerate(region.program):
        if reduces is not None:
            j = next(j for j, red in enumerate(reductions) if id(red[0]) == out_ids[0])
            x = ref(refs[0])
            if bases[j][0]:  # the result index runs along the row
                at = f"p{j}[base{j} + (i - row)]"
                if reduces == "max":  # NaN wins, and the later of a tie (-0.0, 0.0), as np.maximum.reduce's order
                    body += [f"e{j} = {at}", f"if ({x} >= e{j} or {x} != {x}) and e{j} == e{j}:", f"    {at} = {x}"]
                else:
                    body.append(f"{at} += {x}")
            elif reduces == "max":
                body.append(f"if ({x} >= acc{j} or {x} != {x}) and acc{j} == acc{j}:")
                body.append(f"    acc{j} = {x}")
            else:  # a block's terms, then their sum in 8 lanes: the loop carries no sum from one element to the next
                body.append(f"buf{j}[i - b0] = {x}")
            continue
        if step in calls:  # NumPy's ufunc computed it into the block's buffer
            (oid,) = out_ids
            name = names[oid] = f"v{v}"
            v += 1
            body.append(f"{name} = t{t_of[step]}[i - lo]")
            if oid in out_index:
                body.append(f"o{out_index[oid]}[i] = {name}")
            continue
        text, env = expr.bind(declared, [ref(r) for r in refs], values, "numba")
        for node, oid in zip(expr.outputs(text), out_ids):
            name = names[oid] = f"v{v}"
            v += 1
            code = expr.emit(text, env, 'numba', node)
            if op_type == "Pow" and _one_exponent(region, refs[1]):
                code = f"_pow1({env['x']}, {env['y']})"
            body.append(f"{name} = {code}")
            if oid in out_index:
                body.append(f"o{out_index[oid]}[i] = {name}")
    constants = {}  # a number as the dtype, once, as a module global (numba types a global once, a call per use)

    def constant(match):
        return constants.setdefault(match.group(0), f"_K{len(constants)}")
    body = [_NUMBER.sub(constant, b) for b in body]
    lines += ["                " + b for b in body]
    for j, (_, kind, _, _) in enumerate(reductions):
        if kind != "max" and not bases[j][0]:
            lines.append(f"            acc{j} += _sum8(buf{j}, b1 - b0)")
    for j, (_, kind, _, _) in enumerate(reductions):
        if bases[j][0]:
            continue
        if kind == "max":
            lines += [f"        e{j} = p{j}[base{j}]",
                      f"        if (acc{j} >= e{j} or acc{j} != acc{j}) and e{j} == e{j}:",
                      f"            p{j}[base{j}] = acc{j}"]
        else:
            lines.append(f"        p{j}[base{j}] += acc{j}")
    finish = []
    for j, (out, kind, _, count) in enumerate(reductions):
        size = u(out.size)
        finish += [f"for k in range({size}):", f"    t = p{j}[k]", f"    for c in range(1, {chunks}):",
                   f"        p = p{j}[np.uint64(c) * {size} + k]"]
        if kind == "max":
            finish += ["        if (p >= t or p != p) and t == t:", "            t = p", f"    r{j}[k] = _T(t)"]
        else:
            finish.append("        t += p")
            finish.append(f"    r{j}[k] = _T(t) / _T({count})" if kind == "mean" else f"    r{j}[k] = _T(t)")
    header = [f"{k} = {text}" for text, k in constants.items()] + [f"{k} = np.uint64({n})" for n, k in unsigned.items()]
    lines[5:5] = header
    if chunks == 1 and not calls:
        lines += ["    " + f for f in finish]
    elif finish:
        lines += ["", "", jit, f"def finish({', '.join(reduced)}):"] + ["    " + f for f in finish]
    for level in sorted({levels[k] - 1 for k, per in operands.items() if any(op[0] == "g" for op in per)}):
        lines += _stage_source(region, level, calls, levels, operands, jit)
    return "\n".join(lines) + "\n"


def cache_dir():
    """Where generated modules and numba's cache of them live.

    Example:
        >>> cache_dir().name
        'fusion'
    """
    root = os.environ.get("GPUGRAD_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpugrad")
    return Path(root) / "fusion"


def _write(folder, key, text):
    """The path of module ``text`` under ``folder`` (written there once, atomically)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"region_{key}.py"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def compile_source(text):
    """The module of numba functions of source ``text`` (written once under its hash; numba compiles on the first
    call, or loads its cached machine code)."""
    key = hashlib.sha1(text.encode()).hexdigest()[:20]
    with _lock:
        fn = _loaded.get(key)
        if fn is not None:
            return fn
        try:
            path = _write(cache_dir(), key, text)
        except OSError as e:  # a cache folder that cannot be written: this process's own temporary one
            if not _fallback:
                _fallback.append(Path(tempfile.mkdtemp(prefix="gpugrad-fusion-")))
                warnings.warn(f"gg.function(jit_compile=True) cannot write its cache folder {cache_dir()} ({e}); "
                              f"compiling in {_fallback[0]} for this process (set GPUGRAD_CACHE_DIR to a writable "
                              f"folder to keep compiled regions)", RuntimeWarning, stacklevel=2)
            path = _write(_fallback[0], key, text)
        name = f"gpugrad_fusion_region_{key}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        fn = _loaded[key] = module
        return fn


def build(region, inputs, outputs, reductions):
    """A function of no arguments that runs ``region`` on arrays ``inputs`` into ``outputs`` and ``reductions``
    (the region's arrays after buffer sharing), split across gpugrad's CPU threads
    (:func:`gpugrad.get_num_threads`) from :data:`PARALLEL` elements; compiles it now (at trace time). Its
    ``rebind(inputs, outputs, reductions)`` makes the same function on other arrays of the same layouts (a
    plan's call binding the caller's arrays): no compilation, no allocation but the flat views."""
    from ...backend import cpu_threads
    n = region.size
    threads = cpu_threads.get_num_threads()
    cuts = cpu_threads._bounds(n, threads) if n >= PARALLEL and threads > 1 else [0, n]
    pieces = list(zip(cuts, cuts[1:]))
    module = compile_source(source(region, len(pieces)))
    kernel = module.kernel
    partials = tuple(np.zeros(len(pieces) * a.size, region.dtype if kind == "max" else np.float64)
                     for a, kind, _, _ in region.reductions)
    if staged_calls(region):
        return _build_staged(region, module, pieces, partials, cpu_threads, inputs, outputs, reductions)
    args = _flat(inputs, outputs, reductions) + partials
    scratch = [np.zeros_like(a) if a.flags.writeable else a for a in args]
    # the bounds as unsigned: numba then knows each index is not negative, checks no wraparound and vectorizes
    kernel(_U(0), _U(0), 0, *scratch)  # compiled now, on scratch arrays
    finish = getattr(module, "finish", None) if len(pieces) > 1 else None
    if finish is not None:
        finish(*[np.zeros_like(a) for a in tuple(a.reshape(-1) for a in reductions) + partials])
    rebind = functools.partial(_bound, kernel, finish, pieces, partials, cpu_threads)
    fn = rebind(inputs, outputs, reductions)
    fn.rebind = rebind
    return fn


def _flat(inputs, outputs, reductions):
    """The kernel's array arguments: each operand without its broadcast axes, flat."""
    return tuple([regions.compact(a).reshape(-1) for a in inputs] + [a.reshape(-1) for a in outputs]
                 + [a.reshape(-1) for a in reductions])


def _bound(kernel, finish, pieces, partials, cpu_threads, inputs, outputs, reductions):
    """The region's compiled ``kernel`` bound to arrays ``inputs``, ``outputs``, ``reductions``."""
    args = _flat(inputs, outputs, reductions) + partials
    if len(pieces) == 1:
        return functools.partial(kernel, _U(0), _U(pieces[0][1]), 0, *args)
    reduced = tuple(a.reshape(-1) for a in reductions) + partials
    return _split(kernel, finish, pieces, args, reduced, cpu_threads)


def _split(kernel, finish, pieces, args, reduced, cpu_threads):
    (lo0, hi0), rest = pieces[0], [(c, _U(lo), _U(hi)) for c, (lo, hi) in enumerate(pieces) if c]
    lo0, hi0 = _U(lo0), _U(hi0)

    def run():
        if cpu_threads.get_num_threads() == 1:  # set so since the trace (no pool): the same chunks, in turn
            for c, lo, hi in [(0, lo0, hi0)] + rest:
                kernel(lo, hi, c, *args)
        else:
            pool = cpu_threads._pool()
            futures = [pool.submit(kernel, lo, hi, c, *args) for c, lo, hi in rest]
            try:
                kernel(lo0, hi0, 0, *args)
            finally:
                for f in futures:
                    f.result()
        if finish is not None:
            finish(*reduced)
    return run


def _build_staged(region, module, pieces, partials, cpu_threads, inputs, outputs, reductions):
    """:func:`build` for a region with staged calls: each chunk runs its elements in blocks of
    :data:`STAGED_BLOCK_BYTES`, with its own block buffers (``t`` per staged call, ``g`` per gathered operand)."""
    calls, levels, operands = staging(region)
    block = max(BLOCK, STAGED_BLOCK_BYTES // np.dtype(region.dtype).itemsize)
    gathered = sum(op[0] == "g" for per in operands.values() for op in per)
    buffers = [(tuple(np.zeros(block, region.dtype) for _ in calls), tuple(np.zeros(block, region.dtype)
                                                                             for _ in range(gathered)))
               for _ in pieces]
    schedule = []  # per level above 0: (the stage writing its operands' buffers or None, [(ufunc, operands, j)])
    for level in range(1, max(levels) + 1):
        at = [(k, j) for j, k in enumerate(calls) if levels[k] == level]
        stage = getattr(module, f"stage{level - 1}", None)
        schedule.append((stage, [(getattr(np, calls[k]), operands[k], j) for k, j in at]))
    args = _flat(inputs, outputs, reductions) + partials
    scratch = [np.zeros_like(a) if a.flags.writeable else a for a in args]
    ins = tuple(scratch[:len(inputs)])
    t, g = buffers[0]
    for stage, _ in schedule:  # compiled now, on scratch arrays
        if stage is not None:
            stage(_U(0), _U(0), *ins, *t, *g)
    module.kernel(_U(0), _U(0), 0, *scratch, *t)
    finish = getattr(module, "finish", None)
    if finish is not None:
        finish(*[np.zeros_like(a) for a in tuple(a.reshape(-1) for a in reductions) + partials])
    rebind = functools.partial(_bound_staged, region, module.kernel, finish, schedule, pieces, partials, buffers,
                               block, cpu_threads)
    fn = rebind(inputs, outputs, reductions)
    fn.rebind = rebind
    return fn


def _bound_staged(region, kernel, finish, schedule, pieces, partials, buffers, block, cpu_threads, inputs, outputs,
                  reductions):
    """A staged region's compiled steps bound to arrays ``inputs``, ``outputs``, ``reductions``."""
    flat = _flat(inputs, outputs, reductions)
    args = flat + partials
    ins = flat[:len(inputs)]
    dtype = np.dtype(region.dtype)
    sizes = [(p, a.size, -np.inf if kind == "max" else 0.0) for p, (a, kind, _, _) in zip(partials, region.reductions)]
    # each staged call's operands: (0, array) sliced to the block, (1, buffer) its first n, (2, array) as it is
    fixed = {"slice": lambda k: (0, ins[k]), "fixed": lambda k: (2, ins[k][:1]),
             "const": lambda v: (2, np.array(v, dtype))}

    def operand(op, t, g):
        return fixed[op[0]](op[1]) if op[0] in fixed else (1, t[op[1]] if op[0] == "t" else g[op[1]])
    plans = [[(stage, [(ufunc, [operand(op, t, g) for op in ops], t[j]) for ufunc, ops, j in ufuncs])
              for stage, ufuncs in schedule] for t, g in buffers]

    def chunk(c, lo, hi):
        t, g = buffers[c]
        kargs = args + t
        sargs = ins + t + g
        plan = plans[c]
        for p, size, init in sizes:
            p[c * size:(c + 1) * size] = init
        with np.errstate(all="ignore"):  # eager's op warns (or not) at its trace; a replay does not
            for b0 in range(lo, hi, block):
                b1 = min(b0 + block, hi)
                n = b1 - b0
                u0, u1 = _U(b0), _U(b1)
                for stage, ufuncs in plan:
                    if stage is not None:
                        stage(u0, u1, *sargs)
                    for ufunc, ops, out in ufuncs:
                        ufunc(*[a[b0:b1] if how == 0 else (a[:n] if how == 1 else a) for how, a in ops], out=out[:n])
                kernel(u0, u1, c, *kargs)

    def run():
        if len(pieces) == 1 or cpu_threads.get_num_threads() == 1:
            for c, (lo, hi) in enumerate(pieces):
                chunk(c, lo, hi)
        else:
            pool = cpu_threads._pool()
            futures = [pool.submit(chunk, c, lo, hi) for c, (lo, hi) in enumerate(pieces) if c]
            try:
                chunk(0, *pieces[0])
            finally:
                for f in futures:
                    f.result()
        if finish is not None:
            finish(*(tuple(a.reshape(-1) for a in reductions) + partials))
    return run
