"""CUDA Graphs for a plan on a GPU: each run of graph-safe kernel steps captured once, then launched.

A kernel step is graph-safe when its call is one kernel launch that writes into arrays that exist
already and makes none, reads nothing back to the host and calls no CUDA library: a ufunc with
``out=``, a fused kernel given its outputs, ``copyto`` (:func:`.kernels.graph_safe` says which).
An array made while a stream captures (by the step, or inside a CuPy routine: CUB's and Thrust's
workspace, a copy of an operand) would come from CuPy's pool and go back to it after the capture,
while the graph kept writing into it; CuPy 14.2 refuses cuBLAS, cuSOLVER and cuRAND calls and host
transfers while a stream captures. So nothing else is captured: the products (matmul, dense,
convolutions: cuBLAS), reductions (CUB), sorts (Thrust), the optimizers' update (a host learning rate
each step), random draws (cuRAND, a host generator state) and any op replayed by calling it run
between the graphs, on the same stream, in the same order.

The first replay captures each segment (``cupy.cuda.Stream.begin_capture`` / ``end_capture``) and
launches it; later replays launch it. A segment whose capture raises runs its steps one by one
from then on, and the plan's diagnostics say why.

Example:
    >>> segments([("a", True), ("b", True), ("c", False), ("d", True)], min_length=2)
    [('graph', ['a', 'b']), ('steps', ['c', 'd'])]
"""


def segments(steps, min_length=2, launches=None):
    """``steps`` ``(step, graph_safe)`` grouped into ``("graph", [...])`` runs of at least ``min_length``
    graph-safe launches (``launches(step)``: how many a step makes; one each without it) and ``("steps", [...])``
    for the rest, in order."""
    out = []
    run = []

    def flush_run():
        if (len(run) if launches is None else sum(launches(step) for step in run)) >= min_length:
            out.append(("graph", list(run)))
        elif run:
            _extend_steps(out, run)
        run.clear()

    for step, safe in steps:
        if safe:
            run.append(step)
        else:
            flush_run()
            _extend_steps(out, [step])
    flush_run()
    return out


def _extend_steps(out, steps):
    if out and out[-1][0] == "steps":
        out[-1][1].extend(steps)
    else:
        out.append(("steps", list(steps)))


class GraphSegment:
    """Steps captured as one CUDA Graph on ``stream`` at their first run, launched after."""

    def __init__(self, steps, stream, report):
        self.steps = steps
        self.stream = stream
        self.graph = None
        self.failed = None
        self.report = report  # called with a reason when the capture fails

    def __call__(self):
        if self.graph is None and self.failed is None:
            self._capture()
        if self.graph is not None:
            self.graph.launch(self.stream)
        else:
            for step in self.steps:
                step()

    def _capture(self):
        stream = self.stream
        try:
            stream.begin_capture()
            try:
                for step in self.steps:
                    step()
            finally:
                graph = stream.end_capture()
        except Exception as e:  # noqa: BLE001 - any failure of the capture: run the steps as they are
            self.failed = f"{type(e).__name__}: {e}"
            self.report(self.failed)
            return
        self.graph = graph


class GpuReplay:
    """A GPU plan's steps as graph segments and plain steps, all run on one stream of the device."""

    def __init__(self, steps, device, stats, origins=None, n_bound=0):
        """``steps``: ``(compiled step, graph_safe)`` in order; ``origins``: per step, the index of the plan's step
        it is (None: a launch of a split one), so that a binding (:mod:`.binding`) can put a step bound to a call's
        arrays in its place; ``n_bound``: how many steps a binding rebinds (kept out of the graphs)."""
        xp = device.xp
        self.stream = xp.cuda.Stream()  # blocking: work on the default stream after a replay waits for it
        self.stats = stats
        self.items = []
        self.position = {}  # a plan's step index -> its place in items, for each step run between the graphs
        origins = list(range(len(steps))) if origins is None else origins
        n_graphs = n_captured = 0
        launches = lambda k: getattr(steps[k][0], "launches", 1)  # noqa: E731 - a fused region's: 2 with a reduction
        for kind, group in segments([(k, safe) for k, (_, safe) in enumerate(steps)], launches=launches):
            if kind == "graph":
                self.items.append(GraphSegment([steps[k][0] for k in group], self.stream, self._failed))
                n_graphs += 1
                n_captured += len(group)
            else:
                for k in group:
                    if origins[k] is not None:
                        self.position[origins[k]] = len(self.items)
                    self.items.append(steps[k][0])
        # a graph-safe step is one launch; each other step is one launch or more, run between the graphs
        plural = "s" if n_graphs != 1 else ""
        bound = f"; {n_bound} bound to each call's arrays, between the graphs" if n_bound else ""
        stats["graph"] = (f"CUDA graphs: {n_graphs} segment{plural}, {n_captured} of {len(steps)} steps graphed "
                          f"(one launch each, the rest run between the graphs{bound})"
                          if n_graphs else f"no CUDA graph: no run of graph-safe kernel steps among {len(steps)} "
                                           f"steps{bound}")
        stats["graphed_steps"], stats["graph_segments"] = n_captured, n_graphs

    def _failed(self, reason):
        self.stats["graph"] = f"a CUDA graph capture failed, its steps run one by one: {reason}"

    def run(self, plan, arrays):
        """Replay ``plan`` with ``arrays`` on this stream (a blocking one: the default stream waits for it, and it
        for work queued there before: a caller's input read in place is read after it was written)."""
        with self.stream:
            binding, items, fresh = plan.binding, self.items, None
            if binding is None:
                plan.bind(arrays)
            else:
                sub, fresh = binding.arrays(arrays)
                if sub:
                    items = list(items)
                    position = self.position
                    for i, rebind in binding.rebinders:
                        items[position[i]] = rebind(sub)
            for item in items:
                item()
            return plan.result(fresh)
