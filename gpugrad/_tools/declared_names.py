"""The ``__all__`` lists spelled out for type checkers, written from the ones the modules compute at import.

An op module computes ``__all__ = public_ops(globals())``, ``gpugrad.ops`` and ``gpugrad.raw_ops``
assemble theirs from the op modules; a type checker (mypy) reads neither, so each of them also states
its names as a literal list under ``if TYPE_CHECKING:``. This tool keeps those lists true:

    python -m gpugrad._tools.declared_names          # rewrite every stale list in place
    python -m gpugrad._tools.declared_names --check  # list the stale ones, exit 1 (what the test runs)

Two layouts. An op module's list (and ``gpugrad.nn.functional``'s) keeps its computed order.
The two lists every branch that adds an op touches, ``gpugrad.ops``' and ``gpugrad.raw_ops``'
(with raw_ops' ``from .ops import (...)``), hold one name a line in sorted order: two branches that add
different names change different lines and git merges them. A type checker reads the names as a
set, so their order in these two is free. After a merge conflict in either block, keep one side
and run the tool.

Example:
    >>> stale_modules()
    []
"""
import argparse
import ast
import importlib
import os
import sys

COMMAND = "python -m gpugrad._tools.declared_names"
# the aggregates: sorted, one name a line (a merge of two branches' new names does not conflict)
SORTED = ("gpugrad.ops", "gpugrad.raw_ops")
WIDTH = 120


def checked_modules():
    """The names of the modules with a ``TYPE_CHECKING`` ``__all__`` list this tool keeps."""
    from gpugrad import ops

    return [m.__name__ for m in ops._MODULES] + ["gpugrad.ops", "gpugrad.raw_ops", "gpugrad.nn.functional"]


def _checking_blocks(tree):
    return [n for n in tree.body if isinstance(n, ast.If) and isinstance(n.test, ast.Name)
            and n.test.id == "TYPE_CHECKING"]


def declared(source):
    """``(all_names, all_stmt, ops_import)``: the list assigned to ``__all__`` under ``if TYPE_CHECKING:``
    in ``source``, its statement, and the ``from .ops import (...)`` beside it (None where there is none)."""
    all_names = all_stmt = ops_import = None
    for block in _checking_blocks(ast.parse(source)):
        for stmt in block.body:
            if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == ["__all__"]:
                all_names, all_stmt = [ast.literal_eval(e) for e in stmt.value.elts], stmt
            elif isinstance(stmt, ast.ImportFrom) and stmt.module == "ops" and stmt.level == 1:
                ops_import = stmt
    return all_names, all_stmt, ops_import


def expected(name):
    """The names ``name``'s ``TYPE_CHECKING`` list must hold, in the order it must hold them."""
    names = list(importlib.import_module(name).__all__)
    return sorted(names) if name in SORTED else names


def _fill(words, indent):
    """``words`` joined by ", ", greedily wrapped at WIDTH, each line indented by ``indent``."""
    lines, line = [], indent
    for i, word in enumerate(words):
        piece = word + ("," if i < len(words) - 1 else "")
        if line != indent and len(line) + 1 + len(piece) > WIDTH:
            lines.append(line)
            line = indent
        line += ("" if line == indent else " ") + piece
    return lines + [line]


def render_all(names, one_a_line):
    """The ``__all__ = [...]`` statement, indented as in a ``TYPE_CHECKING`` block."""
    quoted = [f'"{n}"' for n in names]
    body = [f"        {q}," for q in quoted] if one_a_line else _fill(quoted, " " * 8)
    return ["    __all__ = ["] + body + ["    ]"]


def render_import(names):
    """raw_ops' ``from .ops import (...)``, one name a line."""
    return ["    from .ops import ("] + [f"        {n}," for n in names] + ["    )"]


def _path(name):
    return importlib.import_module(name).__file__


def rewrite_source(source, want, *, one_a_line=False, ops_import=False):
    """``source`` with its ``TYPE_CHECKING`` ``__all__`` list made ``want`` (and, with ``ops_import``, its
    ``from .ops import (...)`` too); ``source`` itself where they already are."""
    names, all_stmt, import_stmt = declared(source)
    if all_stmt is None:
        raise ValueError("no `__all__ = [...]` under `if TYPE_CHECKING:` to rewrite")
    lines = source.splitlines()
    edits = []  # (first line, last line, new lines), 1-based, applied bottom up
    if names != want:
        edits.append((all_stmt.lineno, all_stmt.end_lineno, render_all(want, one_a_line)))
    if ops_import and (import_stmt is None or [a.name for a in import_stmt.names] != want):
        if import_stmt is None:
            raise ValueError("no `from .ops import (...)` under `if TYPE_CHECKING:` to rewrite")
        edits.append((import_stmt.lineno, import_stmt.end_lineno, render_import(want)))
    for first, last, new in sorted(edits, reverse=True):
        lines[first - 1:last] = new
    return "\n".join(lines) + "\n" if edits else source


def rewritten(name):
    """Module ``name``'s source with its ``TYPE_CHECKING`` lists made true."""
    with open(_path(name)) as f:
        source = f.read()
    try:
        return rewrite_source(source, expected(name), one_a_line=name in SORTED, ops_import=name == "gpugrad.raw_ops")
    except ValueError as e:
        raise SystemExit(f"{_path(name)}: {e}") from None


def stale_modules():
    """The checked modules whose ``TYPE_CHECKING`` lists differ from what this tool would write."""
    stale = []
    for name in checked_modules():
        with open(_path(name)) as f:
            if rewritten(name) != f.read():
                stale.append(name)
    return stale


def main(argv=None):
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list the stale modules and exit 1; write nothing")
    args = parser.parse_args(argv)
    stale = stale_modules()
    if args.check:
        for name in stale:
            print(f"{os.path.relpath(_path(name))}: the TYPE_CHECKING names of {name} are stale; run: {COMMAND}")
        return 1 if stale else 0
    for name in stale:
        text = rewritten(name)
        with open(_path(name), "w") as f:
            f.write(text)
        print(f"rewrote {os.path.relpath(_path(name))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
