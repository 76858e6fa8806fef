"""Drawing an :class:`~.model.OpGraph` to SVG, PNG or PDF through the ``graphviz`` package.

The ``graphviz`` Python package (``pip install "gpugrad[graph]"``) runs Graphviz's ``dot`` program,
which is a separate install (``apt-get install graphviz``, ``brew install graphviz``, ``conda install
graphviz``). Without either, :func:`render` raises an ImportError that names what is missing and how
to get it; the DOT text itself (:meth:`~.model.OpGraph.to_dot`) needs neither.

Example:
    >>> format_of("step.svg"), format_of("step.PNG")
    ('svg', 'png')
"""
import os

FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}

PACKAGE_MISSING = ('drawing a graph needs the graphviz Python package: pip install "gpugrad[graph]" '
                   '(or pip install graphviz), and Graphviz\'s dot program (apt-get install graphviz, '
                   'brew install graphviz or conda install graphviz); graph.to_dot() gives the DOT text without them')
DOT_MISSING = ("drawing a graph needs Graphviz's dot program, which the graphviz Python package runs and does "
               "not include: apt-get install graphviz (or brew install graphviz, conda install graphviz), so "
               "that dot is on PATH; graph.to_dot() gives the DOT text without it")


def format_of(path):
    """The output format named by ``path``'s suffix; a ValueError for another suffix."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in FORMATS:
        raise ValueError(f"render() writes {', '.join(sorted(FORMATS))} files, chosen by the path's suffix; "
                         f"got {os.fspath(path)!r}")
    return FORMATS[suffix]


def render(graph, path, dpi=None):
    """Write ``graph`` drawn by ``dot`` to ``path`` (its suffix picks SVG, PNG or PDF); returns ``path``.
    ``dpi``: the resolution of a PNG (Graphviz's default 96 when None)."""
    fmt = format_of(path)
    try:
        import graphviz
    except ImportError as e:
        raise ImportError(PACKAGE_MISSING) from e
    text = graph.to_dot()
    if dpi is not None:
        text = text.replace("graph [", f"graph [dpi={float(dpi):g} ", 1)
    try:
        data = graphviz.Source(text).pipe(format=fmt)
    except graphviz.ExecutableNotFound as e:
        raise ImportError(DOT_MISSING) from e
    with open(path, "wb") as f:
        f.write(data)
    return path
