"""A tape's records as an :class:`~.model.OpGraph`, the path of the gradient marked.

Read from the records the recorder keeps (``(type, inputs, outputs, attrs, backward_fn, versions)``),
only when asked: recording stays as it is. What is marked follows the backward sweep's own rules
(:mod:`gpugrad._sweep`, TensorFlow's tape):

- a tensor is *reached* from the sources through ops that send a gradient back: not an op declared
  not differentiable (``StopGradient``, ``ArgMax``, ...: :func:`gpugrad.registry.not_differentiable_ops`)
  unless it carries its own backward function, and not an integer output (no gradient is integer);
- an op is on the **path** when it reads a reached tensor and one of its reached outputs leads to a
  target through recorded ops (with no target given: when it has a reached output);
- an op is **cut** when a source reaches it and the gradient stops there: it is declared not
  differentiable, its outputs are integers, or (with targets given) no recorded op reads its output
  and it is not a target: the value left the tape (``.numpy()``, ``np.asarray``, an op inside
  ``stop_recording()``), or it is a result the targets do not use (a metric): an unrecorded op leaves
  no trace, so the two look the same; ``note`` says which of these it is;
- the other ops are **off**: not reached from a source, or leading elsewhere.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0], name="w")
    >>> with gg.GradientTape() as tape:
    ...     loss = gg.sum(gg.stop_gradient(w * 3.0)) + gg.sum(w)
    >>> g = tape.graph(target=loss)
    >>> [(n.op_type, n.status) for n in g.ops]
    [('Mul', 'off'), ('StopGradient', 'cut'), ('Sum', 'path'), ('Add', 'path')]
"""
from .. import _dtypes as _dt
from .. import registry
from .._recorder import ATTRS, BACKWARD_FN, INPUTS, OUTPUTS, TYPE
from ..tensor import Variable
from .model import Edge, Node, OpGraph, short_attrs

LEAVES_TAPE = "no recorded op reads it: taken out of the tape (.numpy(), np.asarray) or unused by the target"
INTEGER_OUTPUT = "integer output: no gradient"


def tape_graph(records, watched, sources, targets=(), title=None, labels=None):
    """The graph of ``records`` (a tape's, in order); ``watched``: the ids the tape follows; ``sources``
    and ``targets``: tensors, marked as such and used for the path; ``labels``: the sources' names (else
    a variable's own name)."""
    cut_types = set(registry.not_differentiable_ops())
    source_ids = {id(s) for s in sources}
    target_ids = {id(t) for t in targets}
    producer = {}  # id(tensor) -> index of the record that made it
    read = set()
    for i, rec in enumerate(records):
        read.update(id(t) for t in rec[INPUTS])
        for o in rec[OUTPUTS]:
            producer.setdefault(id(o), i)
    differentiable = [not (rec[BACKWARD_FN] is None and rec[TYPE] in cut_types) for rec in records]
    reached = set(source_ids)
    for rec, passes in zip(records, differentiable):
        if passes and any(id(t) in reached for t in rec[INPUTS]):
            reached.update(id(o) for o in rec[OUTPUTS] if _dt.inexact(o.dtype))
    leads = None  # ids of what the targets are made from (None: no target given, everything leads)
    if targets:
        leads = set(target_ids)
        for rec, passes in zip(reversed(records), reversed(differentiable)):
            if passes and any(id(o) in leads and id(o) not in source_ids for o in rec[OUTPUTS]):
                # the gradient goes back through it to its float inputs (a source's is not sent on to what made it)
                leads.update(id(t) for t in rec[INPUTS] if _dt.inexact(t.dtype))
        leads |= source_ids
    statuses = [_status(rec, passes, reached, leads, read, target_ids)
                for rec, passes in zip(records, differentiable)]

    nodes, edges, tensor_nodes = [], [], {}

    def tensor_node(t, roles, status="off", note=""):
        n = Node(f"t{len(tensor_nodes)}", "tensor", _name(t), roles, status, note, **_layout((t,)))
        tensor_nodes[id(t)] = n
        nodes.append(n)
        return n

    for k, s in enumerate(sources):
        if id(s) not in tensor_nodes:
            n = tensor_node(s, ("source", "target") if id(s) in target_ids else ("source",))
            if labels is not None:
                n.label = str(labels[k])
    op_ids = []
    for i, rec in enumerate(records):
        status, note = statuses[i]
        op_id = f"op{i}"
        op_ids.append(op_id)
        for t in rec[INPUTS]:
            if id(t) in tensor_nodes or (id(t) in producer and producer[id(t)] < i):
                continue
            tensor_node(t, ("watched",) if id(t) in watched else ("constant",), note=_value(t))
        nodes.append(Node(op_id, "op", rec[TYPE], (), status, note, attrs=short_attrs(rec[ATTRS]),
                          **_layout(rec[OUTPUTS])))
        seen = set()
        for t in rec[INPUTS]:
            if id(t) in seen:
                continue  # x * x: one edge
            seen.add(id(t))
            tail = tensor_nodes[id(t)].id if id(t) in tensor_nodes else op_ids[producer[id(t)]]
            on_path = status == "path" and id(t) in reached and (leads is None or id(t) in leads)
            edges.append(Edge(tail, op_id, _edge_label(t), on_path))
        for o in rec[OUTPUTS]:
            if id(o) in source_ids:  # a source made by an earlier recorded op: its gradient stops there
                edges.append(Edge(op_id, tensor_nodes[id(o)].id, _edge_label(o), False))
    for t in targets:
        if id(t) in tensor_nodes:
            continue
        made = producer.get(id(t))
        note = "" if made is not None else "no recorded op made it"
        n = tensor_node(t, ("target",), "path" if id(t) in reached else "off", note)
        if made is not None:
            edges.append(Edge(op_ids[made], n.id, _edge_label(t), id(t) in reached))
    for n in nodes:
        if n.kind == "tensor" and "source" in n.roles:
            n.status = "path" if any(e.on_path and e.tail == n.id for e in edges) or (
                "target" in n.roles) else "off"
    path = sum(s == "path" for s, _ in statuses)
    cut = sum(s == "cut" for s, _ in statuses)
    title = title or (f"GradientTape: {len(records)} recorded ops, {path} on the gradient path"
                      + (f", {cut} cut" if cut else ""))
    return OpGraph("tape", nodes, edges, title)


def _status(rec, passes, reached, leads, read, target_ids):
    """``(status, note)`` of one record (see the module's notes)."""
    if not any(id(t) in reached for t in rec[INPUTS]):
        return "off", ""
    if not passes:
        return "cut", ("stop_gradient" if rec[TYPE] == "StopGradient" else f"{rec[TYPE]} is not differentiable")
    outs = [o for o in rec[OUTPUTS] if id(o) in reached]
    if not outs:
        return "cut", INTEGER_OUTPUT
    if leads is None or any(id(o) in leads for o in outs):
        return "path", ""
    if not any(id(o) in read or id(o) in target_ids for o in rec[OUTPUTS]):
        return "cut", LEAVES_TAPE
    return "off", ""


def _layout(tensors):
    return {"shapes": [tuple(t.shape) for t in tensors], "dtypes": [str(t.dtype) for t in tensors],
            "devices": [t._device.name for t in tensors]}


def _name(t):
    if isinstance(t, Variable):
        return t.name or "Variable"
    return ""


def _value(t):
    """A one-element host constant's value (the 3.0 of ``x * 3.0``); else nothing."""
    if t.size == 1 and t._device.name == "cpu" and not isinstance(t, Variable):
        return f"= {t._data.item()!r}"
    return ""


def _edge_label(t):
    return f"{tuple(t.shape)} {t.dtype}"
