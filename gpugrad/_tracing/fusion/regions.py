"""Fusion regions: maximal runs of a plan's elementwise kernel steps, and the reduction that ends them.

:func:`find` walks a trace's steps in order and groups consecutive kernel steps whose declaration
(:mod:`gpugrad.ops.replay`) gives an elementwise ``expression``, over float arrays of one dtype and one
iteration shape, together with reductions of a region's value over any of its axes (``reduces``: sum,
mean, max; keepdims or not) whose results no step of the region reads. A region never spans a call step (an optimizer's
update, a matmul or convolution without an expression, a host read): those end it. Each operand from
outside a region is read per element as the region's shape broadcasts it: the whole shape (C order),
one element, a trailing part (``i % m``) or a leading part (``i // d``); any other layout ends the
region. A region's values are written only where a later step reads them, the function returns
them, or a view looks into them (its *outputs*); the others live in registers. On a GPU a region holds one
reduction at most (:mod:`.gpu`: one ``ReductionKernel``); elementwise steps after it that do not read its result
continue the region, as on the CPU. A CPU region of :data:`LARGE` elements or
more runs in blocks, each handing its one-call transcendental ops (``exp(x)``, ``log(x)``, ``power(x, y)``:
:func:`.expr.ufunc_call`) to NumPy's vectorized ufunc (:mod:`.cpu`); an op that calls a transcendental
function inside a larger expression (a gradient's ``exp(-abs(x))``) ends such a region, as numba's per-element
libm call is several times slower than NumPy's SIMD loops.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> from gpugrad._tracing.capture import Capture
    >>> capture = Capture()
    >>> x = capture.input(gg.tensor(np.ones(4, np.float32)))
    >>> with capture:
    ...     y = gg.sum(gg.square(gg.exp(x) * 2.0))
    >>> [r.op_types for r in find(capture, capture.steps, {id(y._data)}, "cpu")]
    [['Exp', 'Mul', 'Square', 'Sum']]
"""
import dataclasses

import numpy as np

from ...backend import CPU
from ...ops.base import is_constant
from ...ops.replay import lookup
from ..capture import KernelStep, _root_array
from . import expr

__all__ = ["Region", "find", "LARGE"]

LARGE = 1 << 15  # elements: from here a CPU region's transcendental ops run as NumPy's vectorized loops, per block
MAX_OPS = 64  # ops per region: numba's compile time grows faster than the function's length


@dataclasses.dataclass
class Region:
    """One fused region: ``program`` (``(op_type, expression, operand refs, param values, value ids, reduces)``
    per step; a ref is ``("in", k)``, ``("v", id)`` or ``("const", value)``), ``inputs`` (external arrays, each
    with how it is indexed: ``("full",)``, ``("one",)``, ``("mod", m)``, ``("div", d)``), ``outputs`` (arrays of
    its values written), ``reductions`` (``(output array, kind, value id, count)``; ``axes`` maps each result's id
    to the sorted axes of ``shape`` it reduces), ``shape``, ``dtype``."""

    first: int
    shape: tuple
    dtype: np.dtype
    device: object
    program: list = dataclasses.field(default_factory=list)
    inputs: list = dataclasses.field(default_factory=list)
    indexing: list = dataclasses.field(default_factory=list)
    outputs: list = dataclasses.field(default_factory=list)
    reductions: list = dataclasses.field(default_factory=list)
    op_types: list = dataclasses.field(default_factory=list)
    steps: list = dataclasses.field(default_factory=list)
    values: dict = dataclasses.field(default_factory=dict)  # id(array) -> array made in the region
    reduced: set = dataclasses.field(default_factory=set)  # ids of reduction results
    axes: dict = dataclasses.field(default_factory=dict)  # id(reduction result) -> the axes of shape it reduces

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def input_ref(self, a):
        """The ref of operand ``a`` (added to ``inputs`` once); None where its layout cannot be read per element."""
        if id(a) in self.values:
            return ("v", id(a))
        if a.size == 1 and is_constant(a):
            return ("const", float(a.reshape(-1)[0]))
        for k, b in enumerate(self.inputs):
            if b is a:
                return ("in", k)
        how = _indexing(a, self.shape)
        if how is None:
            return None
        self.inputs.append(a)
        self.indexing.append(how)
        return ("in", len(self.inputs) - 1)


def compact(a):
    """``a`` without its broadcast axes (stride 0, as ``broadcast_to`` makes them): those axes of length 1.

    Example:
        >>> compact(np.broadcast_to(np.float32(2.0), (3, 4))).shape
        (1, 1)
    """
    if a.ndim and any(st == 0 and d > 1 for st, d in zip(a.strides, a.shape)):
        return a[tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)]
    return a


def _indexing(a, shape):
    """How an operand of layout ``a`` is read at flat index i of ``shape`` (C order); None: not per element."""
    a = compact(a)
    if a.size == 1:
        return ("one",)
    if not a.flags.c_contiguous or a.ndim > len(shape):
        return None
    if a.shape == tuple(shape):
        return ("full",)
    padded = (1,) * (len(shape) - a.ndim) + a.shape
    for k in range(len(shape) + 1):
        if all(d == 1 for d in padded[:k]) and tuple(padded[k:]) == tuple(shape[k:]):
            return ("mod", int(np.prod(shape[k:], dtype=np.int64)))
        if all(d == 1 for d in padded[k:]) and tuple(padded[:k]) == tuple(shape[:k]):
            return ("div", int(np.prod(shape[k:], dtype=np.int64)))
    return None


def reduced_axes(axes, ndim):
    """The sorted axes a reduction's ``axes`` attr names over an operand of ``ndim`` axes (None: all; negative
    counted from the end, as NumPy); None where it reduces over no axis of a non-0-d operand (then not fused).

    Example:
        >>> reduced_axes((-1, 0), 3), reduced_axes(None, 2), reduced_axes((), 2), reduced_axes(None, 0)
        ((0, 2), (0, 1), None, ())
    """
    if ndim == 0:
        return ()
    if axes is None:
        return tuple(range(ndim))
    axes = tuple(sorted({int(ax) % ndim for ax in np.atleast_1d(axes)}))
    return axes or None


def _declaration(step, dialect):
    """The replay declaration of ``step`` where it fuses: an expression the dialect writes or a reduction."""
    if not isinstance(step, KernelStep) or step.fills:
        return None
    r = lookup(step.op_type)
    if r is None or r.fills_attrs or r.fills_inputs or (r.expression is None and r.reduces is None):
        return None
    arrays = list(step.inputs) + list(step.outputs)
    dtype = step.outputs[0].dtype if step.outputs else None
    floats = (np.float32, np.float64) if dialect == "cpu" else (np.float16, np.float32, np.float64)
    if dtype is None or dtype not in floats or any(a.dtype != dtype for a in arrays):
        return None
    if r.expression is not None:
        names, params, text = r.expression
        if len(names) != len(step.inputs) or len(expr.outputs(text)) != len(step.outputs):
            return None
        # a param is baked into the kernel: a number only (an array, even 0-d, may hold another value next call)
        if params and (step.attrs is None or not all(
                isinstance(step.attrs.get(p), (int, float, np.integer, np.floating))
                and not isinstance(step.attrs.get(p), bool) for p in params)):
            return None
    elif r.reduces not in ("sum", "mean", "max") or len(step.inputs) != 1 or \
            step.attrs is None or "axes" not in step.attrs:
        return None
    return r


def _transcendental(r):
    """Whether ``r``'s expression calls a transcendental function inside a larger expression (a gradient's
    ``exp(-abs(x))``): one a large CPU region's blocks cannot hand to NumPy's loop (:mod:`.cpu`)."""
    return r.expression is not None and not expr.calls(r.expression[2]) <= expr.ARITHMETIC and \
        expr.ufunc_call(r.expression) is None


def find(capture, steps, returned, dialect):
    """The regions of ``steps`` of two ops or more (``dialect``: ``"cpu"`` or ``"gpu"``); ``returned``: ids of the
    arrays the function returns."""
    last_read = {}
    for i, s in enumerate(steps):
        reads = s.inputs if isinstance(s, KernelStep) else s.reads
        for x in reads:
            a = getattr(x, "_data", x)
            last_read[id(_root_array(a))] = i
    regions, current = [], None

    def close(region, stop):
        if region is not None and len(region.op_types) >= 2:
            keep = set(returned) | capture.viewed
            for a in region.values.values():
                if id(a) not in region.reduced and (id(a) in keep or last_read.get(id(a), -1) >= stop):
                    region.outputs.append(a)
            region.reductions = [(a, kind, v, n) for a, kind, v, n in region.reductions]
            if region.outputs or region.reductions:
                regions.append(region)

    for i, s in enumerate(steps):
        r = _declaration(s, dialect)
        if r is not None and current is not None and not _extend(current, s, r, i, dialect):
            close(current, i)
            current = None
        if r is not None and current is None and r.expression is not None:
            current = Region(i, tuple(s.outputs[0].shape), s.outputs[0].dtype, s.device)
            if not _extend(current, s, r, i, dialect):
                current = None
        if r is None:
            close(current, i)
            current = None
    close(current, len(steps))
    return regions


def _extend(region, step, r, i, dialect):
    """Add ``step`` to ``region`` if it fits (then True)."""
    if step.device is not region.device or step.outputs[0].dtype != region.dtype or \
            len(region.op_types) >= MAX_OPS:
        return False
    if dialect == "cpu" and region.size >= LARGE and _transcendental(r):
        return False
    if region.device is not CPU and dialect == "cpu":
        return False
    for a in step.inputs:
        if id(a) in region.reduced:
            return False
        if id(a) not in region.values and id(_root_array(a)) in region.values:
            return False  # a view into a value not yet written
    if r.reduces is not None:
        if dialect != "cpu" and region.reductions:
            return False  # on a GPU one reduction a region: one ReductionKernel
        (x,) = step.inputs
        out, axes = step.outputs[0], reduced_axes(step.attrs["axes"], x.ndim)
        if id(x) not in region.values or x.shape != region.shape or axes is None or region.size == 0 or \
                not out.flags.c_contiguous or out.size * int(np.prod([x.shape[a] for a in axes])) != region.size:
            return False
        count = region.size // out.size if r.reduces == "mean" else None
        region.program.append((step.op_type, None, [("v", id(x))], (), [id(out)], r.reduces))
        region.reductions.append((out, r.reduces, id(x), count))
        region.axes[id(out)] = axes
        region.values[id(out)] = out
        region.reduced.add(id(out))
    else:
        if any(tuple(o.shape) != region.shape or not o.flags.c_contiguous for o in step.outputs):
            return False
        n_inputs, n_indexing = len(region.inputs), len(region.indexing)
        refs = [region.input_ref(a) for a in step.inputs]
        if any(ref is None or (dialect != "cpu" and ref[0] == "const" and not np.isfinite(ref[1])) for ref in refs):
            del region.inputs[n_inputs:], region.indexing[n_indexing:]
            return False
        names, params, text = r.expression
        try:  # every dialect the region may be written in writes it
            for node in expr.outputs(text):
                expr.emit(text, {n: "v" for n in list(names) + list(params)}, "numba" if dialect == "cpu" else "cuda",
                          node)
        except expr.ExpressionError:
            del region.inputs[n_inputs:], region.indexing[n_indexing:]
            return False
        values = [float(step.attrs[p]) for p in params]
        region.program.append((step.op_type, r.expression, refs, values, [id(o) for o in step.outputs], None))
        for o in step.outputs:
            region.values[id(o)] = o
    region.op_types.append(step.op_type)
    region.steps.append(i)
    return True
