"""A ``gg.function`` plan's steps as an :class:`~.model.OpGraph`.

A plan (:mod:`gpugrad._tracing.plan`) replays what its trace captured, forward ops, the tape's
backward sweep and the optimizer's update alike, as steps: a **kernel step** (one op replayed by its
prebound kernel into its output buffer) or a **call step** (a declared root called again: an ``OP``
root, pure, or a ``HOST`` root, with effects such as an optimizer's update). Each step is a node, in
the order the replay runs them; its inputs are the plan's input buffers (nodes ``input #k``), the
variables the steps read (nodes named as the variables) and the buffers earlier steps wrote (edges
from those steps); the buffers it returns are ``output #k`` nodes. Constants the trace folded are not
drawn. On a GPU, kernel steps that run as one CUDA graph share a ``segment`` index (drawn as a
cluster). There is no gradient path to mark: the backward pass is among the steps.

The description is made once, when the plan is compiled (from the trace's arrays, before buffers
are shared by liveness, so that an edge is a value, not a reused buffer), and holds no array.

Example:
    >>> import gpugrad as gg
    >>> f = gg.function(lambda x: gg.exp(x) * 2.0)
    >>> _ = f(gg.tensor([1.0, 2.0]))
    >>> g = f.graph()
    >>> [(n.step_kind, n.op_type) for n in g.ops]
    [('kernel', 'Exp'), ('kernel', 'Mul')]
"""
from .._tracing import graphs, kernels
from .._tracing.capture import KernelStep, _arrays_in, _root_array
from ..tensor import Tensor
from .model import Edge, Node, OpGraph, _count, short_attrs


class PlanPicture:
    """What a plan keeps to be drawn, recorded cheaply when it is compiled and made into nodes only when
    asked: ``entries``, in node order, each ``[kind, name, layouts, device, extra]`` (kind ``"input"``,
    ``"variable"``, ``"output"``, or ``"kernel"``/``"op"``/``"host"`` for a step; ``layouts``: the
    ``(shape, dtype)`` of each output; ``extra``: a kernel step's attributes, a call step's op types);
    ``edges``: ``(tail entry, head entry, shape, dtype)``; ``segments``: entry -> CUDA graph segment."""

    __slots__ = ("entries", "edges", "step_entries", "segments")

    def __init__(self, entries, edges, step_entries):
        self.entries, self.edges, self.step_entries, self.segments = entries, edges, step_entries, {}

    def mark_segments(self, safe):
        """Give each step its CUDA graph segment, from ``safe`` (one flag per step: graph-safe)."""
        k = 0
        for kind, group in graphs.segments(list(zip(self.step_entries, safe))):
            if kind == "graph":
                for e in group:
                    self.segments[e] = k
                k += 1


def describe_plan(capture, steps, outputs):
    """The :class:`PlanPicture` of a capture's ``steps`` and ``outputs`` (``capture.output``'s, per leaf).
    It runs at every trace, so it keeps only identities and layouts; the nodes' text is made by
    :func:`plan_graph`."""
    entries, edges, step_entries = [], [], []
    writer = {}  # id(root array) -> entry of what wrote it last
    variables = {}  # id(variable) -> its entry
    var_arrays = capture.var_arrays
    fills = {}  # op type -> (input indices its kernel computes, attribute keys it fills)
    for k, (buffer, device) in enumerate(capture.inputs):
        writer[id(_root_array(buffer))] = len(entries)
        entries.append(["input", f"#{k}", ((buffer.shape, buffer.dtype),), device, None])
    for s in steps:
        if isinstance(s, KernelStep):  # a fused region (jit_compile) too
            made, filled = fills.get(s.op_type) or fills.setdefault(s.op_type, (
                tuple(kernels.FILLS_INPUTS.get(s.op_type) or ()), tuple(kernels.FILLS_ATTRS.get(s.op_type) or ())))
            attrs = s.attrs
            held = [(key, a) for key, value in attrs.items() for _, a in _arrays_in(value, ())] \
                if attrs.__class__ is dict and attrs else ()
            if made or held:  # it reads its inputs and its attributes' arrays, but those its kernel computes
                reads = [a for j, a in enumerate(s.inputs) if j not in made] + [
                    a for key, a in held if not (s.fills and key in filled)]
                written = list(s.outputs) + [a for j, a in enumerate(s.inputs) if j in made] + [
                    a for key, a in held if s.fills and key in filled]
            else:
                reads, written = s.inputs, s.outputs
            entry = ["kernel", s.op_type, tuple((a.shape, a.dtype) for a in s.outputs), s.device, attrs]
        else:
            reads = [x._data if isinstance(x, Tensor) else x for x in s.reads]
            written = [b for _, b, _ in s.outputs] + [b for _, _, b, _ in s.saved]
            device = next((x._device for x in s.reads if isinstance(x, Tensor)), None)
            entry = [s.kind, s.op_type, tuple((b.shape, b.dtype) for _, b, _ in s.outputs), device, s.op_types]
        tails = set()
        for a in reads:
            key = id(_root_array(a))
            tail = writer.get(key)
            if tail is None:
                v = var_arrays.get(key)
                if v is None:
                    continue  # a constant
                tail = variables.get(id(v))
                if tail is None:
                    tail = variables[id(v)] = len(entries)
                    entries.append(["variable", v.name or "Variable", ((v.shape, v.dtype),), v._device, None])
            if tail not in tails:
                tails.add(tail)
                edges.append((tail, None, a.shape, a.dtype))  # head: this step, once its entry is placed
        here = len(entries)
        entries.append(entry)
        step_entries.append(here)
        for j in range(len(edges) - len(tails), len(edges)):
            edges[j] = (edges[j][0], here) + edges[j][2:]
        if entry[0] == "host":  # its effects write the variables it is given (an optimizer's update)
            for a in reads:
                if id(_root_array(a)) in var_arrays:
                    writer[id(_root_array(a))] = here
        for a in written:
            writer[id(_root_array(a))] = here
    for k, how in enumerate(outputs):
        if how[0] == "buffer":
            tail = writer.get(id(_root_array(how[1])))
            if tail is not None:
                edges.append((tail, len(entries), how[1].shape, how[1].dtype))
            entries.append(["output", f"#{k}", ((how[1].shape, how[1].dtype),), how[2], None])
    return PlanPicture(entries, edges, step_entries)


def plan_graph(plan, name="fn"):
    """The :class:`~.model.OpGraph` of ``plan``: its picture's entries made into nodes."""
    picture = plan.picture
    ids, nodes = [], []
    n_tensors = n_steps = 0
    for i, (kind, label, layouts, device, extra) in enumerate(picture.entries):
        where = getattr(device, "name", "?")
        layout = {"shapes": [tuple(shape) for shape, _ in layouts], "dtypes": [str(dtype) for _, dtype in layouts],
                  "devices": [where] * len(layouts)}
        if kind in ("input", "variable", "output"):
            node = Node(f"t{n_tensors}", "tensor", label, (kind,), **layout)
            n_tensors += 1
        elif kind == "kernel":
            node = Node(f"step{n_steps}", "step", label, step_kind="kernel", attrs=short_attrs(extra),
                        segment=picture.segments.get(i), **layout)
            n_steps += 1
        else:
            note = ", ".join(extra[:6]) + (" ..." if len(extra) > 6 else "")
            node = Node(f"step{n_steps}", "step", label, step_kind="call", call_kind=kind, note=note, **layout)
            n_steps += 1
        ids.append(node.id)
        nodes.append(node)
    edges = [Edge(ids[tail], ids[head], f"{tuple(shape)} {dtype}") for tail, head, shape, dtype in picture.edges]
    stats = plan.stats
    title = (f"gg.function({name}): {_count(stats['kernel_steps'], 'kernel step')}, "
             f"{_count(stats['call_steps'], 'call step')}; {stats.get('graph', '')}")
    return OpGraph("function", nodes, edges, title, segments=stats.get("graph_segments", 0))
