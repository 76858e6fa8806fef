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
    """What a plan keeps to be drawn: ``nodes`` and ``edges`` (see the module's notes)."""

    __slots__ = ("nodes", "edges")

    def __init__(self, nodes, edges):
        self.nodes, self.edges = nodes, edges

    def mark_segments(self, safe):
        """Give each step its CUDA graph segment, from ``safe`` (one flag per step: graph-safe)."""
        steps = [n for n in self.nodes if n.kind == "step"]
        k = 0
        for kind, group in graphs.segments(list(zip(range(len(steps)), safe))):
            if kind == "graph":
                for i in group:
                    steps[i].segment = k
                k += 1


def describe_plan(capture, steps, outputs):
    """The :class:`PlanPicture` of a capture's ``steps`` and ``outputs`` (``capture.output``'s, per leaf)."""
    nodes, edges = [], []
    writer = {}  # id(root array) -> node id of what wrote it last
    variables = {}  # id(variable) -> its node id
    tensor_id = iter(f"t{k}" for k in range(1 << 62)).__next__  # t0, t1, ...: tensors in the order met
    for k, (buffer, device) in enumerate(capture.inputs):
        n = Node(tensor_id(), "tensor", f"#{k}", ("input",), **_layout([buffer], device))
        nodes.append(n)
        writer[id(_root_array(buffer))] = n.id
    for i, s in enumerate(steps):
        step_id = f"step{i}"
        kernel = isinstance(s, KernelStep)
        if kernel:  # it reads its inputs and the arrays its attributes hold, but those its kernel fills
            filled = set(kernels.FILLS_ATTRS.get(s.op_type) or ()) if s.fills else set()
            held = [(key, a) for key, value in (s.attrs or {}).items() for _, a in _arrays_in(value, ())]
            made = set(kernels.FILLS_INPUTS.get(s.op_type) or ())  # inputs its kernel computes (the op before's)
            reads = [a for j, a in enumerate(s.inputs) if j not in made] + [a for key, a in held if key not in filled]
        else:
            reads = [x._data if isinstance(x, Tensor) else x for x in s.reads]
        tails = []
        for a in reads:
            key = id(_root_array(a))
            tail = writer.get(key)
            if tail is None:
                v = capture.var_arrays.get(key)
                if v is None:
                    continue  # a constant
                tail = variables.get(id(v))
                if tail is None:
                    n = Node(tensor_id(), "tensor", v.name or "Variable", ("variable",),
                             **_layout([v._data], v._device))
                    nodes.append(n)
                    tail = variables[id(v)] = n.id
            if tail not in tails:
                tails.append(tail)
                edges.append(Edge(tail, step_id, f"{tuple(a.shape)} {a.dtype}"))
        if kernel:
            layout = _layout(s.outputs, s.device)
            written = (list(s.outputs) + [a for key, a in held if key in filled]  # and what it saves for its gradient
                       + [a for j, a in enumerate(s.inputs) if j in made])
            nodes.append(Node(step_id, "step", s.op_type, step_kind="kernel", attrs=short_attrs(s.attrs), **layout))
        else:
            written = [b for _, b, _ in s.outputs] + [b for _, _, b, _ in s.saved]
            device = next((x._device for x in s.reads if isinstance(x, Tensor)), None)
            layout = _layout([b for _, b, _ in s.outputs], device)
            nodes.append(Node(step_id, "step", s.op_type, step_kind="call", call_kind=s.kind,
                              note=", ".join(s.op_types[:6]) + (" ..." if len(s.op_types) > 6 else ""), **layout))
            if s.kind == "host":  # its effects write the variables it is given (an optimizer's update)
                for a in reads:
                    if id(_root_array(a)) in capture.var_arrays:
                        writer[id(_root_array(a))] = step_id
        for a in written:
            writer[id(_root_array(a))] = step_id
    for k, how in enumerate(outputs):
        if how[0] != "buffer":
            continue
        n = Node(tensor_id(), "tensor", f"#{k}", ("output",), **_layout([how[1]], how[2]))
        nodes.append(n)
        tail = writer.get(id(_root_array(how[1])))
        if tail is not None:
            edges.append(Edge(tail, n.id, f"{tuple(how[1].shape)} {how[1].dtype}"))
    return PlanPicture(nodes, edges)


def plan_graph(plan, name="fn"):
    """The :class:`~.model.OpGraph` of ``plan`` (its picture's nodes copied, so the graph is the caller's)."""
    picture = plan.picture
    nodes = [Node(n.id, n.kind, n.label, n.roles, n.status, n.note, n.shapes, n.dtypes, n.devices, n.op_type,
                  n.step_kind, n.call_kind, n.segment, n.attrs) for n in picture.nodes]
    edges = [Edge(e.tail, e.head, e.label, e.on_path) for e in picture.edges]
    stats = plan.stats
    segments = stats.get("graph_segments", 0)
    title = (f"gg.function({name}): {_count(stats['kernel_steps'], 'kernel step')}, "
             f"{_count(stats['call_steps'], 'call step')}; {stats.get('graph', '')}")
    return OpGraph("function", nodes, edges, title, segments=segments)


def _layout(arrays, device):
    name = device.name if device is not None else "?"
    return {"shapes": [tuple(a.shape) for a in arrays], "dtypes": [str(a.dtype) for a in arrays],
            "devices": [name] * len(arrays)}
