"""``gg.function(jit_compile=True)``: a trace's elementwise chains and their reductions fused into generated kernels.

:func:`fuse` replaces each region a trace's steps hold (:mod:`.regions`) by one :class:`FusedStep`: on
the CPU a numba loop (:mod:`.cpu`, the ``gpugrad[jit]`` extra), on a GPU one generated
``ElementwiseKernel`` and, for a region ending in a reduction, one ``ReductionKernel`` (:mod:`.gpu`).
The plan then shares buffers and builds its CUDA graph segments over
the fused steps as over any kernel step. What a fused region computes is held to :mod:`.bound`.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> from gpugrad._tracing.capture import Capture
    >>> capture = Capture()
    >>> x = capture.input(gg.tensor(np.ones(4, np.float32)))
    >>> with capture:
    ...     y = gg.square(x * 2.0) + 1.0
    >>> [r.op_types for r in regions.find(capture, capture.steps, {id(y._data)}, "cpu")]
    [['Mul', 'Square', 'Add']]
    >>> if available():  # numba installed: the three steps are one
    ...     steps, report = fuse(capture, capture.steps, {id(y._data)})
    ...     assert [s.op_type for s in steps] == ["FusedRegion"] and report["regions"][0]["ops"] == 3
"""
import time
import warnings

import numpy as np

from ...backend import CPU
from ...ops import replay
from ..capture import CallStep, KernelStep
from . import cpu, cpu_cross_entropy, cpu_dense, cpu_optimizers, gpu, regions

__all__ = ["fuse", "FusedStep", "available", "compile_optimizer_steps", "precompile"]

_warned: list = []  # one warning per process: numba is not installed
_failed: list = []  # one warning per process: a region's kernel did not compile (its steps run unfused)


def available(device=CPU):
    """Whether regions on ``device`` can be compiled: numba on the CPU (the ``gpugrad[jit]`` extra); CuPy's
    ``ElementwiseKernel`` on a GPU.

    Example:
        >>> isinstance(available(), bool)
        True
    """
    return cpu.available() if device is CPU else True


class FusedStep(KernelStep):
    """A fused region as one kernel step: ``inputs`` (what it reads), ``outputs`` (the values it writes: later
    steps read them, the function returns them, or its reductions' results); ``unfused``: the region's own
    steps, which run in its place (one warning) where its kernel does not compile; ``report``: its entry in
    the diagnostics (``"unfused"``: why, then)."""

    __slots__ = ("region", "compile_seconds", "_rebind", "unfused", "report")

    def __init__(self, region, unfused=(), report=None):
        outputs = list(region.outputs) + [a for a, _, _, _ in region.reductions]
        super().__init__("FusedRegion", list(region.inputs), None, outputs, region.device)
        self.region = region
        self.compile_seconds = 0.0
        self._rebind = None  # once built: the kernel bound to other arrays (cpu.build, gpu.build)
        self.unfused = list(unfused)
        self.report = report if report is not None else {}

    def build(self, moved=None):
        moved = moved or {}
        inputs = [moved.get(id(a), a) for a in self.inputs]
        outs = [moved.get(id(a), a) for a in self.region.outputs]
        reduced = [moved.get(id(a), a) for a, _, _, _ in self.region.reductions]
        start = time.perf_counter()
        try:
            if self.device is CPU:
                fn = cpu.build(self.region, inputs, outs, reduced)
            else:
                fn = gpu.build(self.region, inputs, outs, reduced)
        except Exception as e:  # the compiler's failure (numba, NVRTC): the region's steps, as without fusion
            if not self.unfused:
                raise
            fn = self._unfused(moved, f"{type(e).__name__}: {e}".splitlines()[0][:200])
        self.compile_seconds = time.perf_counter() - start
        self._rebind = getattr(fn, "rebind", None)
        return fn

    def rebinder(self, moved=None):
        """``rebind(sub)``: the built loop bound to the arrays of ``sub`` (id(array) -> this call's array) in
        place of those, with no compilation (:meth:`KernelStep.rebinder`): on the CPU the compiled loop, on a GPU
        the generated kernels' launches (the plan then runs the step outside its CUDA graphs); None before
        :meth:`build`."""
        bind = self._rebind
        if bind is None:
            return None
        moved = moved or {}
        inputs = [moved.get(id(a), a) for a in self.inputs]
        outs = [moved.get(id(a), a) for a in self.region.outputs]
        reduced = [moved.get(id(a), a) for a, _, _, _ in self.region.reductions]

        def rebind(sub):
            return bind([sub.get(id(a), a) for a in inputs], [sub.get(id(a), a) for a in outs],
                        [sub.get(id(a), a) for a in reduced])
        return rebind

    def _unfused(self, moved, why):
        self.report["unfused"] = why
        if not _failed:
            _failed.append(True)
            warnings.warn(f"gg.function(jit_compile=True): a fused region did not compile ({why}); its ops replay "
                          f"unfused", RuntimeWarning, stacklevel=6)
        calls = [s.build(moved) for s in self.unfused]

        def run():
            for call in calls:
                call()
        return run


# a fused region, like a ufunc with out=, writes into its outputs and allocates nothing: a CUDA graph may hold it
replay.declare("FusedRegion", lambda inputs, attrs, outputs, device: None, graph_safe=replay.float_graph_safe)


def fuse(capture, steps, returned):
    """``(steps, report)``: ``steps`` with each region replaced by a :class:`FusedStep`; ``report``: the regions
    found (``ops``, ``op_types``, ``bytes_in``, ``bytes_out``, ``elements``) for :meth:`Function.diagnostics`.
    Without numba, CPU steps stay as they are (one warning)."""
    devices = {s.device for s in steps if isinstance(s, KernelStep)}
    if len(devices) != 1:
        return steps, {"regions": [], "note": "no fusion: the plan spans several devices" if devices else ""}
    device = next(iter(devices))
    if not available(device):
        if not _warned:
            _warned.append(True)
            warnings.warn("gg.function(jit_compile=True) replays unfused on the CPU: numba is not installed "
                          "(pip install 'gpugrad[jit]')", RuntimeWarning, stacklevel=5)
        return steps, {"regions": [], "note": "unfused: numba is not installed"}
    found = regions.find(capture, steps, returned, "cpu" if device is CPU else "gpu")
    if device is not CPU:  # a kernel's launch shape is its operands' broadcast shape
        found = [r for r in found if r.inputs and np.broadcast_shapes(*[a.shape for a in r.inputs]) == r.shape]
    by_first = {r.first: r for r in found}
    fused, skip, report = [], set(), []
    for i, s in enumerate(steps):
        if i in skip:
            continue
        r = by_first.get(i)
        if r is None:
            fused.append(s)
            continue
        skip.update(r.steps)
        report.append({"ops": len(r.op_types), "op_types": list(r.op_types), "elements": r.size,
                       "bytes_in": sum(regions.compact(a).nbytes for a in r.inputs),  # a broadcast operand: its data
                       "bytes_out": sum(a.nbytes for a in r.outputs) + sum(a.nbytes for a, _, _, _ in r.reductions)})
        fused.append(FusedStep(r, [steps[j] for j in r.steps], report[-1]))
    compiled = {}
    if device is CPU:  # softmax cross-entropy and Dense's bias and ReLU as compiled loops (.cpu_cross_entropy, .cpu_dense)
        fused, compiled["cross_entropy_steps"] = cpu_cross_entropy.replace(fused)
        fused, compiled["dense_steps"] = cpu_dense.replace(fused)
    return fused, {"regions": report, **compiled}


def precompile(kernel, args):
    """Compile numba function ``kernel`` for the types of ``args`` now (at trace time, or load it from numba's
    disk cache) rather than at its first call; returns the seconds it took.

    Example:
        >>> precompile(None, ()) if not available() else 0.0
        0.0
    """
    if kernel is None:
        return 0.0
    import numba
    start = time.perf_counter()
    kernel.compile(tuple(numba.typeof(a) for a in args))
    return time.perf_counter() - start


def compile_seconds(steps):
    """The seconds the fused and compiled kernel steps of ``steps`` took to compile (once built).

    Example:
        >>> compile_seconds([])
        0.0
    """
    return float(sum(getattr(s, "compile_seconds", 0.0) for s in steps if isinstance(s, KernelStep)))


def compile_optimizer_steps(steps, compiled, checks, report):
    """Replace in ``compiled`` (the plan's prebound steps) each CPU optimizer step of ``steps`` that has a compiled
    form (:mod:`.cpu_optimizers`: the eager update's bits) by it, its check added to ``checks``; ``report`` gets
    how many (``optimizer_steps``) and their compile seconds (``optimizer_compile_seconds``).

    Example:
        >>> report = {}
        >>> compile_optimizer_steps([], [], [], report); report["optimizer_steps"]
        0
    """
    from ...optimizers.optimizer import Optimizer
    from .. import declare
    apply_pairs = declare.undeclared(Optimizer._apply_pairs)
    report["optimizer_steps"], report["optimizer_compile_seconds"] = cpu_optimizers.replace_steps(
        steps, compiled, checks, lambda s: isinstance(s, CallStep) and s.fn is apply_pairs)
