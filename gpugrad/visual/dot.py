r"""An :class:`~.model.OpGraph` as Graphviz DOT text, with no dependency.

Ops are rounded boxes (type, then each output's shape, dtype and device); the gradient's path is
bold red, ops cut from it dashed orange with the reason, the rest grey. Sources are blue ellipses,
targets green octagons, constants small grey notes. A plan's kernel steps are blue boxes, its call
steps yellow (``OP``) or red (``HOST``), and each CUDA graph segment a cluster around its steps.
Every label is a quoted DOT string (``\`` and ``"`` escaped, line breaks as ``\n``); node ids
are plain identifiers and nodes and edges come in the graph's order, so the text is deterministic.

Example:
    >>> print(quote('a "b"\nc\\d'))
    "a \"b\"\nc\\d"
"""
import textwrap

PATH_COLOR = "#c0392b"
CUT_COLOR = "#e67e22"
OFF_COLOR = "#8c8c8c"

_OP_STYLE = {
    "path": 'style="rounded,filled" fillcolor="#fde0dc" color="%s" penwidth=2' % PATH_COLOR,
    "cut": 'style="rounded,filled,dashed" fillcolor="#fff3cd" color="%s" penwidth=2' % CUT_COLOR,
    "off": 'style="rounded,filled" fillcolor="#f4f4f4" color="%s" fontcolor="#444444"' % OFF_COLOR,
}
_STEP_STYLE = {
    "kernel": 'style="filled" fillcolor="#e3edfb" color="#4a78b8"',
    "op": 'style="filled" fillcolor="#fff4d6" color="#b8860b"',
    "host": 'style="filled,bold" fillcolor="#fde2e2" color="#b03030"',
}
_TENSOR_STYLE = {
    "target": 'shape=doubleoctagon style="filled" fillcolor="#d8f5d0" color="#2e7d32"',
    "source": 'shape=ellipse style="filled" fillcolor="#d6eaff" color="#1f5fa8"',
    "variable": 'shape=ellipse style="filled" fillcolor="#d6eaff" color="#1f5fa8"',
    "input": 'shape=ellipse style="filled" fillcolor="#eeeeee" color="#555555"',
    "watched": 'shape=ellipse style="filled,dashed" fillcolor="#eef5ff" color="#1f5fa8"',
    "output": 'shape=ellipse style="filled" fillcolor="#d8f5d0" color="#2e7d32"',
    "constant": 'shape=note style="filled" fillcolor="#fafafa" color="#aaaaaa" fontsize=8 fontcolor="#555555"',
}


def quote(text):
    """``text`` as a quoted DOT string: backslashes and double quotes escaped, each line break a centred ``\\n``.

    Example:
        >>> quote("x") == '"x"'
        True
    """
    text = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r\n", "\n").replace("\r", "\n")
    return '"' + text.replace("\n", "\\n") + '"'


def node_label(n):
    """The lines a node shows."""
    if n.kind == "tensor":
        lines = [f"{' / '.join(n.roles)}: {n.label}" if n.label else " / ".join(n.roles)]
    elif n.kind == "step":
        kind = "kernel" if n.step_kind == "kernel" else f"call [{(n.call_kind or 'op').upper()}]"
        lines = [f"{n.id}  {kind}", n.label]
    else:
        lines = [n.label]
    if n.attrs:
        lines.append(n.attrs)
    lines += [f"{shape} {dtype} {device}" for shape, dtype, device in zip(n.shapes, n.dtypes, n.devices)][:4]
    if len(n.shapes) > 4:
        lines.append(f"... {len(n.shapes) - 4} more outputs")
    if n.kind == "op" and n.status == "cut":
        lines += textwrap.wrap(f"CUT: {n.note}" if n.note else "CUT", 40)  # a long reason on a few lines
    elif n.note and n.kind == "tensor":
        lines.append(n.note)
    return "\n".join(lines)


def node_style(n):
    """A node's DOT attributes other than its label."""
    if n.kind == "op":
        return _OP_STYLE[n.status]
    if n.kind == "step":
        return _STEP_STYLE["kernel" if n.step_kind == "kernel" else (n.call_kind or "op")]
    for role in ("target", "source", "variable", "input", "watched", "output", "constant"):
        if role in n.roles:
            return _TENSOR_STYLE[role]
    return _TENSOR_STYLE["constant"]


def to_dot(graph, name="gpugrad"):
    """The DOT text of ``graph`` (see the module's notes)."""
    out = [f"digraph {quote(name)} {{",
           f'  graph [rankdir=TB labelloc=t fontname="Helvetica" fontsize=12 label={quote(graph.title)}];',
           '  node [shape=box fontname="Helvetica" fontsize=10];',
           '  edge [fontname="Helvetica" fontsize=8 arrowsize=0.7];']
    segments = {}
    for n in graph.nodes:
        line = f"  {n.id} [label={quote(node_label(n))} {node_style(n)}];"
        if n.segment is not None:
            segments.setdefault(n.segment, []).append(line)
        else:
            out.append(line)
    for k in sorted(segments):
        out.append(f"  subgraph cluster_segment{k} {{")
        out.append(f'    graph [label={quote(f"CUDA graph segment {k}")} style="dashed" color="#4a78b8"];')
        out.extend("  " + line for line in segments[k])
        out.append("  }")
    for e in graph.edges:
        style = f'color="{PATH_COLOR}" penwidth=2' if e.on_path else f'color="{OFF_COLOR}"'
        label = f" label={quote(e.label)}" if e.label else ""
        out.append(f"  {e.tail} -> {e.head} [{style}{label}];")
    out.append("}")
    return "\n".join(out) + "\n"
