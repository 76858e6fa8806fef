"""Recorded work as a picture: the ops a tape recorded, or the steps a ``gg.function`` plan replays.

``tape.graph()`` and ``fn.graph()`` return an :class:`OpGraph`: its nodes, its edges (the data flow),
``str()`` (the ops in order, one a line), ``to_dot()`` (Graphviz DOT text, no dependency) and
``render(path)`` (SVG or PNG through the ``graphviz`` package, the ``graph`` extra).

- ``gpugrad.visual.model``: the graph (nodes, edges, the plain-text listing);
- ``gpugrad.visual.from_tape``: a tape's records as a graph, the gradient's path marked;
- ``gpugrad.visual.from_plan``: a traced plan's steps as a graph, kernel and call steps, CUDA graph segments;
- ``gpugrad.visual.dot``: the DOT text;
- ``gpugrad.visual.render``: drawing it through Graphviz.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0], name="w")
    >>> with gg.GradientTape() as tape:
    ...     loss = gg.sum(w * 3.0)
    >>> g = tape.graph(target=loss)
    >>> [n.op_type for n in g.ops], [n.status for n in g.ops]
    (['Mul', 'Sum'], ['path', 'path'])
"""
from .model import Edge, Node, OpGraph

__all__ = ["OpGraph", "Node", "Edge"]
