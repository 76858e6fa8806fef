"""A trace compiled into a plan: prebound calls over buffers, replayed with new inputs.

:func:`compile_plan` turns a finished :class:`~.capture.Capture` into a :class:`Plan`:

- each kernel step is its prebound call; each call step a closure that calls the root
  again under a collecting recording and copies what it made into the buffers;
- buffers are shared by liveness: a kernel step's output takes the array of an earlier
  output of the same shape, dtype and strides once every reader of that one has run (never
  an array a view looks into, an input, an output returned, or one a call step reads; and only
  where :func:`gpugrad._ownership.may_write_in_place` allows, as for the other speed mechanisms);
- the plan holds its buffers (:func:`gpugrad._ownership.hold`) while it lives, so that no other
  mechanism writes into them;
- a call's arrays are copied into the input buffers and the result's tensors copied out on every call, so
  what a call reads is fixed for the call and what it returns is the caller's; except where :mod:`.binding`
  lets the kernel steps read a large input where the caller holds it and write a large result into a fresh
  array that is then returned, where that is proven to give the same bits (stats ``inputs_in_place``,
  ``results_in_place``). On a GPU the steps so bound run between the CUDA graph segments (a graph holds its
  buffers' addresses); the others stay graphed.

Example:
    >>> import gpugrad as gg
    >>> from gpugrad._tracing.capture import Capture
    >>> capture = Capture()
    >>> x = capture.input(gg.tensor([1.0, 2.0]))
    >>> with capture:
    ...     y = x * 3.0 + 1.0
    >>> plan = compile_plan(capture, y)
    >>> plan.run([np.array([0.0, 1.0], np.float32)]).numpy().tolist()
    [1.0, 4.0]
"""
import weakref
from collections import Counter

import numpy as np

from .. import _nest as nest
from .. import _ownership
from .._ownership import MIN_SIZE, may_write_in_place
from .._recorder import collecting_recording, pop_tape, push_tape
from ..backend import CPU
from ..errors import TraceError
from ..optimizers import graph_step
from ..optimizers.optimizer import Optimizer
from ..tensor import Tensor
from . import declare, graphs, kernels
from .binding import plan_binding
from .capture import CallStep, KernelStep, _root_array, same_layout


class Plan:
    """What a replay runs: ``inputs`` (buffer, device) bound from the call's tensors, ``steps``
    (functions of no arguments), ``outputs`` (how each result leaf is returned), ``structure``
    (the result's nesting), ``guards`` (variables whose live array the steps are bound to), ``labels`` (per
    step: its op type or root's name, and the bytes it writes; what :mod:`gpugrad.profiler` shows of it)."""

    def __init__(self, inputs, steps, outputs, structure, guards, stats, gpu=None, checks=(), labels=None):
        self.inputs = inputs
        self.steps = steps
        self.outputs = outputs
        self.structure = structure
        self.guards = guards
        self.stats = stats
        self.gpu = gpu  # a graphs.GpuReplay for a plan on a GPU
        self.checks = list(checks)  # more of what must hold: an optimizer's slots for its launches
        self.labels = labels
        self.binding = None  # a binding.Binding, where inputs are read or results written in place

    def bound_to_variables(self):
        """Whether every variable a kernel step reads still lives in the array it was traced with (and every
        optimizer slot an update launch writes, in its own)."""
        for v, a in self.guards:
            if v._data is not a:
                return False
        for check in self.checks:
            if not check():
                return False
        return True

    def run(self, arrays):
        """Replay with ``arrays`` (the arrays of the call's tensor and NumPy arguments, flattened); returns
        the result."""
        if self.gpu is not None:
            return self.gpu.run(self, arrays)
        if self.binding is not None:
            return self.binding.run(self, arrays)
        self.bind(arrays)
        for step in self.steps:
            step()
        return self.result()

    def bind(self, arrays):
        """Copy the call's arrays into the input buffers."""
        for (buffer, _), a in zip(self.inputs, arrays):
            buffer[...] = a

    def result(self, fresh=None):
        """The call's result: each buffer leaf copied out, but those of ``fresh`` (output index -> the array
        this call wrote it into, :mod:`.binding`), handed over as they are."""
        leaves = []
        for j, how in enumerate(self.outputs):
            if fresh and j in fresh:
                leaves.append(Tensor._wrap(fresh[j], how[2]))
            elif how[0] == "buffer":  # a copy laid out as the eager result is, strides and all
                copy = same_layout(how[1], how[2].xp)
                copy[...] = how[1]
                leaves.append(Tensor._wrap(copy, how[2]))
            else:
                leaves.append(how[1])
        if self.structure is None:
            return leaves[0]
        return nest.pack_like(self.structure, leaves)


class ReplayDiverged(TraceError):
    """A call step ran other ops on replay than at the trace (a gradient rule that picks its formula by the data:
    a zero in ``cumprod``'s input, a singular matrix), before any step with effects ran: the replay stops and
    ``gg.function`` traces this call again."""


def _call_closure(step, may_retrace=False):
    """The function of no arguments that replays call step ``step``; ``may_retrace``: no step with effects runs
    before it, so a replay that meets other ops raises :class:`ReplayDiverged` (the call traces again)."""
    fn, args, kwargs, outputs, saved = step.fn, step.args, step.kwargs, step.outputs, step.saved
    n_records = len(step.op_types)
    op_types = step.op_types
    collector = collecting_recording()
    xp_of = _xp_of

    def call():
        stack = push_tape(collector)
        try:
            result = fn(*args, **kwargs)
        finally:
            pop_tape(collector, stack)
        records = collector.ops
        collector.ops = []
        if outputs:
            leaves = nest.flatten(result)
            for i, buffer, through_base in outputs:
                a = leaves[i]._data
                if through_base:
                    a = _root_array(a)
                if a is not buffer:
                    if a.shape != buffer.shape or a.dtype != buffer.dtype:
                        raise _changed(fn, a, buffer)
                    xp_of(buffer).copyto(buffer, a)
        if saved:
            if len(records) != n_records or tuple(r[0] for r in records) != op_types:
                raise (ReplayDiverged if may_retrace else TraceError)(
                    f"{getattr(fn, '__qualname__', fn)} ran ops {[r[0] for r in records]} on replay where the "
                    f"trace ran {list(op_types)}; the plan cannot follow work that changes with the data")
            for r, path, buffer, through_base in saved:
                value = records[r]
                for key in path:
                    value = value[key]
                a = value._data if isinstance(value, Tensor) else value
                if through_base:
                    a = _root_array(a)
                if a is not buffer:
                    if a.shape != buffer.shape or a.dtype != buffer.dtype:
                        raise _changed(fn, a, buffer)
                    xp_of(buffer).copyto(buffer, a)
    return call


def _changed(fn, a, buffer):
    """The error of a call step whose replay made an array unlike the trace's (an op that did not declare
    its output shape as data-dependent, :func:`gpugrad._tracing.state.dynamic_output_shape`)."""
    return TraceError(
        f"{getattr(fn, '__qualname__', fn)} made an array of shape {a.shape} ({a.dtype}) on replay where the "
        f"trace made {buffer.shape} ({buffer.dtype}): its output depends on the data in a way the trace cannot "
        f"replay; run this function eagerly")


def _xp_of(a):
    """``a``'s array module: NumPy, or CuPy (imported only for a GPU plan)."""
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def compile_plan(capture, result, jit_compile=False):
    """The :class:`Plan` of finished ``capture`` whose function returned ``result``; ``jit_compile``: its
    elementwise regions fused first (:mod:`.fusion`)."""
    structure = result if isinstance(result, (list, tuple, dict)) else None
    leaves = nest.flatten(result) if structure is not None else [result]
    outputs = [capture.output(leaf) for leaf in leaves]
    returned = {id(how[1]) for how in outputs if how[0] == "buffer"}
    steps = capture.steps
    fused = None
    if jit_compile:  # the fusion hook: regions become FusedSteps, which the rest treats as kernel steps
        from . import fusion
        steps, fused = fusion.fuse(capture, steps, returned)
    moved, last_read = _share_buffers(capture, steps, returned)
    for i, s in enumerate(steps):
        if isinstance(s, CallStep) and s.fn is declare.undeclared(Optimizer._apply_pairs):
            pairs = s.args[1]
            readers = Counter(id(_root_array(g._data)) for g, _, _ in pairs)  # a buffer two pairs read: no scratch
            s.args = (s.args[0], [(g, v, readers[id(_root_array(g._data))] == 1
                                   and _dead_after(g._data, i, last_read, returned, capture)) for g, v, _ in pairs])
    from ..visual.from_plan import describe_plan  # (what fn.graph() draws: made now, before buffers move)
    picture = describe_plan(capture, steps, outputs)
    for t in capture.tensors.values():  # the trace's tensors follow their arrays into shared buffers
        target = moved.get(id(t._data))
        if target is not None:
            t._data = target
    compiled = []
    effects = False  # whether a step with effects (a HOST call: a variable written, a draw) comes before
    for s in steps:
        if isinstance(s, KernelStep):
            compiled.append(s.build(moved))
        else:
            compiled.append(_call_closure(s, may_retrace=not effects))
            effects = effects or s.kind != declare.OP
    checks = []  # functions of no arguments: whether what the steps are bound to still holds
    if jit_compile:  # on the CPU, each optimizer's step as compiled updates (fusion.cpu_optimizers)
        fusion.compile_optimizer_steps(steps, compiled, checks, fused)
    guards = []
    seen = set()
    for s in steps:
        if isinstance(s, KernelStep):
            for a in s.inputs:
                v = capture.var_arrays.get(id(a))
                if v is not None and id(v) not in seen:
                    seen.add(id(v))
                    guards.append((v, a))
    stats = {"kernel_steps": sum(isinstance(s, KernelStep) for s in steps),
             "call_steps": sum(isinstance(s, CallStep) for s in steps),
             "calls": sorted({s.op_type for s in steps if isinstance(s, CallStep)}),
             "buffers": len(capture.buffers), "buffers_shared": len(moved),
             "graph": "on the CPU: prebound calls, no CUDA graph"}
    if fused is not None:
        fused["compile_seconds"] = fusion.compile_seconds(steps)
        stats["fusion"] = fused
    gpu = binding = None
    devices = {s.device for s in steps if isinstance(s, KernelStep)} | {d for _, d in capture.inputs}
    if len(devices) == 1:  # large inputs read and results written in place (.binding)
        binding, counts = plan_binding(capture, steps, compiled, outputs, moved, next(iter(devices)))
        stats["inputs_in_place"], stats["results_in_place"] = counts
    if len(devices) == 1 and next(iter(devices)) is not CPU:
        device = next(iter(devices))
        bound = {i for i, _ in binding.rebinders} if binding is not None else set()  # run between the graphs
        safe = [isinstance(s, KernelStep) and i not in bound and kernels.graph_safe(
                    s.op_type, [moved.get(id(a), a) for a in s.inputs], s.attrs,
                    [moved.get(id(a), a) for a in s.outputs])
                for i, s in enumerate(steps)]
        items, origins = _split_optimizer_steps(steps, compiled, safe, checks)
        gpu = graphs.GpuReplay(items, device, stats, origins, len(bound))
        launches = len(items) - len(steps)  # a split step: its host step in its place, then its launches
        if launches:
            stats["graph"] += (f"; the optimizer's step: a host step and {launches} update launches" if len(checks) == 1
                               else f"; the optimizers' steps: {len(checks)} host steps and {launches} update launches")
            stats["update_launches"] = launches
        picture.mark_segments(safe)  # by step: an optimizer's step shows as one call step
    elif len(devices) > 1:
        stats["graph"] = "no CUDA graph: the plan spans several devices"
    labels = [(s.op_type, sum(a.nbytes for a in s.outputs)) if isinstance(s, KernelStep)
              else (s.op_type, sum(out[1].nbytes for out in s.outputs)) for s in steps]  # (i, buffer, ...)
    plan = Plan(capture.inputs, compiled, outputs, structure, guards, stats, gpu, checks, labels)
    plan.binding = binding
    plan.picture = picture
    _hold(plan, capture, moved, guards)
    return plan


def _split_optimizer_steps(steps, compiled, safe, checks):
    """``(items, origins)``: ``(compiled step, graph_safe)`` for a GPU plan, each optimizer step that has a launch
    form (:func:`gpugrad.optimizers.graph_step.split`) as its host part and one graph-safe launch per variable;
    and per item, the index of the step it is (None for a launch)."""
    out, origins = [], []
    for i, (s, step, is_safe) in enumerate(zip(steps, compiled, safe)):
        form = None
        if isinstance(s, CallStep) and s.fn is declare.undeclared(Optimizer._apply_pairs):
            form = graph_step.split(s.args[0], s.args[1])
        if form is None:
            out.append((step, is_safe))
            origins.append(i)
            continue
        out.append((form.prepare, False))
        origins.append(i)
        out.extend((launch, True) for launch in form.launches)
        origins.extend([None] * len(form.launches))
        checks.append(form.still_bound)
    return out, origins


def _hold(plan, capture, moved, guards):
    """Mark the buffers ``plan`` writes and reads (and the variables' arrays it is bound to) as held while it
    lives. The finalizer keeps them alive as long as their ids are registered."""
    arrays = [a for key, a in capture.buffers.items() if key not in moved] + [a for _, a in guards]
    weakref.finalize(plan, _release, _ownership.hold(arrays), arrays)


def _release(ids, arrays):
    _ownership.release(ids)


def _dead_after(a, i, last_read, returned, capture):
    """Whether buffer ``a`` is scratch once step ``i`` has read it: the plan's own, read last there, not
    returned, not viewed, and one the ownership rule allows at ``minimize``'s size: so the optimizers' update
    may overwrite a gradient (as ``minimize``'s eager scratch does, to the same bits) without a temporary."""
    key = id(a)
    return (may_write_in_place(a, MIN_SIZE) and last_read.get(key) == i and key not in returned
            and key in capture.buffers
            and key not in capture.viewed and key not in capture.var_arrays
            and all(b is not a for b, _ in capture.inputs))


def _share_buffers(capture, steps, returned):
    """``(moved, last_read)``: id(traced array) -> the array a kernel step writes instead (a dead buffer of
    the same layout), and id(array) -> the index of the last step that reads it.

    A call step reads through the trace's tensors, which follow their arrays into the buffers they move
    to; an array a call step holds itself (an op's saved attribute, a buffer it refills) never moves.
    """
    pinned = set(returned) | capture.viewed | {id(b) for b, _ in capture.inputs}
    last_read = {}
    for i, s in enumerate(steps):
        reads = s.inputs if isinstance(s, KernelStep) else s.reads
        for x in reads:
            a = x._data if isinstance(x, Tensor) else x
            last_read[id(_root_array(a))] = i
            if isinstance(s, CallStep) and not isinstance(x, Tensor):
                pinned.add(id(_root_array(a)))
        if isinstance(s, CallStep):
            pinned.update(id(b) for _, b, _ in s.outputs)
            pinned.update(id(b) for _, _, b, _ in s.saved)
    if all(type(b) is np.ndarray for b, _ in capture.inputs) and all(
            d is CPU for s in steps if isinstance(s, KernelStep) for d in (s.device,)):
        return _arena(steps, pinned, last_read), last_read
    dying = {}  # step index -> ids of the arrays last read there
    for a_id, i in last_read.items():
        dying.setdefault(i, []).append(a_id)
    free = {}  # layout -> arrays whose last reader has run
    moved = {}
    for i, s in enumerate(steps):
        if isinstance(s, KernelStep):
            for a in s.outputs:
                if id(a) in pinned or id(a) in moved or not may_write_in_place(a, 1):
                    continue
                pool = free.get(_layout(a))
                if pool:
                    moved[id(a)] = pool.pop()
        for a_id in dying.get(i, ()):
            a = capture.buffers.get(a_id)
            if a is None or a_id in pinned or not may_write_in_place(a, 1):
                continue
            a = moved.get(a_id, a)
            free.setdefault(_layout(a), []).append(a)
    return moved, last_read


ALIGN = 64  # bytes: every buffer in the arena starts on a cache line, as NumPy's large allocations do


def _arena(steps, pinned, last_read):
    """On the CPU: the kernel steps' fresh outputs laid out in one arena by their lifetimes (first fit), so
    arrays of any shape share memory once dead, as an allocator would reuse it; id -> the view each writes."""
    spans = []  # (first step, last step, array)
    for i, s in enumerate(steps):
        if isinstance(s, KernelStep):
            for a in s.outputs:
                if id(a) not in pinned and may_write_in_place(a, 1) and a.flags.c_contiguous:
                    spans.append((i, max(last_read.get(id(a), i), i), a))
    placed = []  # (offset, end offset, last step, array)
    live = []
    size = 0
    for first, last, a in spans:
        live = [p for p in live if p[2] >= first]  # a buffer read last by an earlier step is free
        need = -(-a.nbytes // ALIGN) * ALIGN
        offset = 0
        for start, end, _, _ in sorted(live, key=lambda p: p[0]):
            if offset + need <= start:
                break
            offset = max(offset, end)
        entry = (offset, offset + need, last, a)
        live.append(entry)
        placed.append(entry)
        size = max(size, offset + need)
    if not placed:
        return {}
    raw = np.empty(size + ALIGN, np.uint8)
    base = (-raw.ctypes.data) % ALIGN
    arena = raw[base:base + size]
    return {id(a): np.ndarray(a.shape, a.dtype, buffer=arena, offset=start, strides=a.strides)
            for start, _, _, a in placed}


def _layout(a):
    return (a.shape, a.dtype.str, a.strides, type(a))
