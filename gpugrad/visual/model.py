"""The graph of recorded work: :class:`Node`, :class:`Edge`, :class:`OpGraph` and its text listing.

A node is an op (one record of a tape; ``kind == "op"``), a step of a traced plan (``kind == "step"``),
or a tensor the ops read but no listed op made (``kind == "tensor"``: a source, a constant, a plan's
input, a variable) or a target. An edge is data flow: the tensor its tail makes (or is) read by its
head. Each node has a ``status``: ``"path"`` (the gradient from the targets to the sources passes
it), ``"cut"`` (a source reaches it but it sends no gradient back: ``note`` says why) or ``"off"``;
a plan's steps are ``"off"`` (a plan has its backward pass in its steps: there is no path to mark).

Node ids are ``op0, op1, ...`` (ops, in recorded order), ``step0, ...`` (a plan's steps) and
``t0, t1, ...`` (tensors, in the order they are first met), so the same program gives the same
text, as the tests compare.

Example:
    >>> g = OpGraph("tape", [Node("t0", "tensor", "x", roles=("source",), status="path"),
    ...                      Node("op0", "op", "Exp", status="path", shapes=((2,),), dtypes=("float32",),
    ...                           devices=("cpu",))],
    ...             [Edge("t0", "op0", "(2,) float32", on_path=True)])
    >>> print(g.summary())
    tape graph: 1 op, 1 source, 0 targets; 1 op on the gradient path, 0 cut
      t0     source x
      op0    Exp              (2,) float32 cpu  <- t0  [path]
"""
from __future__ import annotations

from typing import Iterable, Optional

STATUSES = ("path", "cut", "off")


class Node:
    """One node: ``id``, ``kind`` (``"op"``, ``"step"`` or ``"tensor"``), ``label`` (an op's type, a
    tensor's name), ``roles`` (a tensor's: ``"source"``, ``"target"``, ``"watched"``, ``"constant"``,
    ``"input"``, ``"variable"``, ``"output"``), ``status`` (``"path"``, ``"cut"``, ``"off"``), ``note``
    (why it is cut, or what a step is), ``shapes``/``dtypes``/``devices`` (of each output, or of the
    tensor), ``op_type`` (an op's or step's), ``step_kind`` (a step's: ``"kernel"`` or ``"call"``),
    ``call_kind`` (a call step's declared kind: ``"op"`` or ``"host"``) and ``segment`` (the index of
    the CUDA graph segment a GPU plan's step runs in, or None) and ``attrs`` (an op's short attributes as
    text, ``"activation=relu"``: ``short_attrs``).

    Example:
        >>> Node("op0", "op", "Mul", shapes=((2, 3),), dtypes=("float32",), devices=("cpu",)).describe()
        '(2, 3) float32 cpu'
    """

    __slots__ = ("id", "kind", "label", "roles", "status", "note", "shapes", "dtypes", "devices", "op_type",
                 "step_kind", "call_kind", "segment", "attrs")

    def __init__(self, id, kind, label, roles=(), status="off", note="", shapes=(), dtypes=(), devices=(),
                 op_type=None, step_kind=None, call_kind=None, segment=None, attrs=""):
        if status not in STATUSES:
            raise ValueError(f"a node's status is one of {STATUSES}, not {status!r}")
        self.id, self.kind, self.label, self.roles, self.status, self.note = id, kind, label, tuple(roles), status, note
        self.shapes, self.dtypes, self.devices = tuple(shapes), tuple(dtypes), tuple(devices)
        self.op_type = op_type if op_type is not None else (label if kind != "tensor" else None)
        self.step_kind, self.call_kind, self.segment = step_kind, call_kind, segment
        self.attrs = attrs  # an op's short attributes, "activation=relu"

    def describe(self):
        """Its outputs (a tensor's: itself) as ``shape dtype device``, separated by semicolons."""
        return "; ".join(f"{shape} {dtype} {device}"
                         for shape, dtype, device in zip(self.shapes, self.dtypes, self.devices))

    def __repr__(self):
        return f"<Node {self.id} {self.kind} {self.label!r} {self.status}>"


class Edge:
    """Data flow from node ``tail`` to node ``head``: ``label`` (the tensor's shape and dtype) and
    ``on_path`` (the gradient flows back along it).

    Example:
        >>> Edge("op0", "op1", "(2,) float32").on_path
        False
    """

    __slots__ = ("tail", "head", "label", "on_path")

    def __init__(self, tail, head, label="", on_path=False):
        self.tail, self.head, self.label, self.on_path = tail, head, label, bool(on_path)

    def __repr__(self):
        return f"<Edge {self.tail} -> {self.head}{' (path)' if self.on_path else ''}>"


class OpGraph:
    """Recorded work as a graph (made by ``tape.graph()`` or ``fn.graph()``).

    ``kind``: ``"tape"`` or ``"function"``; ``nodes`` and ``edges`` in a fixed order; ``ops``: the op
    or step nodes in the order they ran; ``sources``, ``targets``: their tensor nodes; ``path``, ``cut``:
    the op nodes on the gradient's path and those cut from it; ``title``: a line of what it shows.
    ``str()`` is :meth:`summary`; :meth:`to_dot` is Graphviz DOT text; :meth:`render` draws it.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.sum(gg.exp(x))
        >>> g = tape.graph(target=y, sources=[x])
        >>> [n.op_type for n in g.path], [(e.tail, e.head) for e in g.edges]
        (['Exp', 'Sum'], [('t0', 'op0'), ('op0', 'op1'), ('op1', 't1')])
    """

    def __init__(self, kind, nodes: Iterable[Node], edges: Iterable[Edge], title: Optional[str] = None,
                 segments=0):
        self.kind = kind
        self.nodes = tuple(nodes)
        self.edges = tuple(edges)
        self.title = title or f"{kind} graph"
        self.segments = segments  # a GPU plan's count of CUDA graph segments
        self._by_id = {n.id: n for n in self.nodes}
        if len(self._by_id) != len(self.nodes):
            raise ValueError("node ids must be unique")
        for e in self.edges:
            if e.tail not in self._by_id or e.head not in self._by_id:
                raise ValueError(f"edge {e.tail} -> {e.head} names a node the graph does not have")

    def node(self, node_id):
        """The node of id ``node_id``."""
        return self._by_id[node_id]

    @property
    def ops(self):
        return tuple(n for n in self.nodes if n.kind != "tensor")

    @property
    def sources(self):
        return tuple(n for n in self.nodes if "source" in n.roles)

    @property
    def targets(self):
        return tuple(n for n in self.nodes if "target" in n.roles)

    @property
    def path(self):
        return tuple(n for n in self.ops if n.status == "path")

    @property
    def cut(self):
        return tuple(n for n in self.ops if n.status == "cut")

    def inputs_of(self, node_id):
        """The ids of the nodes with an edge into ``node_id``, in edge order."""
        return [e.tail for e in self.edges if e.head == node_id]

    def summary(self):
        """The nodes in order, one a line: tensors by role, ops with their outputs, inputs and status."""
        ops = self.ops
        if self.kind == "function":
            kernel = sum(n.step_kind == "kernel" for n in ops)
            head = (f"function graph: {len(ops)} steps ({kernel} kernel, {len(ops) - kernel} call)"
                    + (f", {self.segments} CUDA graph segments" if self.segments else ""))
        else:
            head = (f"tape graph: {_count(len(ops), 'op')}, {_count(len(self.sources), 'source')}, "
                    f"{_count(len(self.targets), 'target')}; {_count(len(self.path), 'op')} on the gradient path, "
                    f"{len(self.cut)} cut")
        lines = [head]
        for n in self.nodes:
            if n.kind == "tensor":
                line = f"  {n.id:<6} {'/'.join(n.roles)} {n.label}"
                ins = self.inputs_of(n.id)
                if ins:
                    line += f"  <- {', '.join(ins)}"
                if n.note:
                    line += f"  ({n.note})"
            else:
                kind = "" if n.kind == "op" else ("KERNEL " if n.step_kind == "kernel" else
                                                  f"CALL[{(n.call_kind or 'op').upper()}] ")
                line = f"  {n.id:<6} {kind}{n.label:<16} {n.describe()}" + (f" {{{n.attrs}}}" if n.attrs else "")
                ins = self.inputs_of(n.id)
                if ins:
                    line += f"  <- {', '.join(ins)}"
                if n.segment is not None:
                    line += f"  [graph segment {n.segment}]"
                if self.kind == "tape":
                    line += f"  [{n.status}{': ' + n.note if n.note else ''}]"
            lines.append(line.rstrip())
        return "\n".join(lines)

    __str__ = summary

    def __repr__(self):
        return f"<OpGraph {self.title!r}: {len(self.ops)} ops, {len(self.edges)} edges>"

    def to_dot(self, name="gpugrad"):
        """Graphviz DOT text of the graph (no dependency): the path in bold red, cut ops dashed orange.

        Example:
            >>> import gpugrad as gg
            >>> x = gg.Variable(1.0, name="x")
            >>> with gg.GradientTape() as tape:
            ...     y = x * 2.0
            >>> print(tape.graph(target=y).to_dot().splitlines()[0])
            digraph "gpugrad" {
        """
        from .dot import to_dot
        return to_dot(self, name)

    def render(self, path, dpi=None):
        """Draw the graph to ``path``, SVG or PNG (or PDF) by its suffix, through the ``graphviz`` package
        and Graphviz's ``dot`` program; returns ``path``. Without either it raises an ImportError naming what
        to install: ``pip install "gpugrad[graph]"`` and the ``dot`` binary (``apt-get install graphviz``).

        Example:
            >>> import gpugrad as gg
            >>> x = gg.Variable(1.0)
            >>> with gg.GradientTape() as tape:
            ...     y = x * 2.0
            >>> import os, tempfile
            >>> out = os.path.join(tempfile.mkdtemp(), "step.svg")
            >>> try:
            ...     drawn = tape.graph(target=y).render(out)
            ... except ImportError as e:  # no graphviz package or no dot program: the message says what to get
            ...     drawn = str(e)
            >>> drawn == out or "pip install" in drawn
            True
        """
        from .render import render
        return render(self, path, dpi)


def short_attrs(attrs, limit=3):
    """An op's attributes that read in a few characters (strings, numbers, flags, tuples of numbers), as
    ``key=value`` text; arrays and long values are left out.

    Example:
        >>> short_attrs({"activation": "relu", "saved": object(), "axes": (1,)})
        'activation=relu, axes=(1,)'
    """
    if not isinstance(attrs, dict):
        return ""
    shown = []
    for key, value in attrs.items():
        if isinstance(value, (bool, int, float, str)) or value is None or (
                isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value)):
            text = value if isinstance(value, str) else repr(value)
            if len(text) <= 24:
                shown.append(f"{key}={text}")
    return ", ".join(shown[:limit])


def _count(n, noun):
    return f"{n} {noun}{'' if n == 1 else 's'}"
