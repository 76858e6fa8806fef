"""No import cycle inside ``gpugrad/``, counting imports inside functions.

The graph has an edge from a module to every gpugrad module it imports
anywhere in its source (``from .x import y``, ``from . import x``, ``import
gpugrad.x``), and to the packages above that module (importing
``gpugrad.ops.elementwise.math`` runs ``gpugrad/ops/__init__.py`` first). A package's
edges to its own submodules are left out: ``__init__`` files gather their
submodules by design, and a submodule does not import its package.
"""
import ast
import os

import gpugrad

PACKAGE_DIR = os.path.dirname(gpugrad.__file__)
PACKAGE_ROOT = os.path.dirname(PACKAGE_DIR)


def module_files():
    """``{dotted module name: file}`` of every module in the installed gpugrad package."""
    found = {}
    for folder, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, PACKAGE_ROOT)[:-3].replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _run_time_nodes(tree):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (imports a type checker reads, Python never
    runs), as ``ast.walk`` would yield them."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def imported_modules(module, path, modules):
    """The gpugrad modules ``module`` (at ``path``) imports anywhere in its source."""
    is_package = path.endswith("__init__.py")
    targets = set()
    for node in _run_time_nodes(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)
            targets.add(base)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    edges = set()
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):  # the module and every package above it
            name = ".".join(parts[:i])
            if name in modules and name != module and not module.startswith(name + "."):
                if not name.startswith(module + "."):
                    edges.add(name)
    return edges


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_graph():
    modules = module_files()
    return {m: imported_modules(m, path, modules) for m, path in modules.items()}


def test_gpugrad_has_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_sees_a_cycle_through_an_import_inside_a_function():
    graph = import_graph()
    assert "gpugrad.jacobians" in graph["gpugrad.tape"]  # tape.py imports it inside jacobian()
    graph["gpugrad._sweep"] = graph["gpugrad._sweep"] | {"gpugrad.tape"}
    (component,) = cycles(graph)
    assert {"gpugrad._sweep", "gpugrad.tape", "gpugrad.jacobians"} <= set(component)


def test_imports_a_type_checker_alone_reads_are_no_edge():
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "import c\ndef f():\n    import d\n")
    imported = {alias.name for node in _run_time_nodes(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported == {"b", "c", "d"}


def test_the_ops_reach_the_tracing_machinery_only_through_what_they_declare_to_it():
    # gg.function's machinery looks the ops' replay declarations up (gpugrad/ops/replay.py), never the other
    # way: an op module imports of gpugrad._tracing at most what it declares through (declare: its roots; state: dynamic shapes,
    # host reads), anywhere in its source
    graph = import_graph()
    allowed = {"gpugrad._tracing", "gpugrad._tracing.state", "gpugrad._tracing.declare"}
    found = {m: sorted(t for t in targets if t.startswith("gpugrad._tracing") and t not in allowed)
             for m, targets in graph.items() if m.startswith("gpugrad.ops")}
    assert {m: t for m, t in found.items() if t} == {}
    assert "gpugrad.ops.replay" in graph["gpugrad._tracing.kernels"]


# --------------------------------------------------------------------------- tests share code through conftest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_DIRS = [os.path.join(REPO, "tests"), os.path.join(REPO, "benchmarks")]


def imported_test_modules(source):
    """``[(line, name)]`` of the test modules (``test_*``) that ``source`` imports, anywhere in it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if any(p.startswith("test_") for p in parts):
                found.append((node.lineno, node.module))
            else:  # from tests import test_x, from . import test_x
                found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("test_")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names
                      if any(p.startswith("test_") for p in alias.name.split("."))]
    return found


def test_no_test_module_imports_another():
    # Fixtures in conftest.py reach every test; helpers are imported from tests.conftest.
    assert os.path.isfile(os.path.join(REPO, "tests", "conftest.py"))
    found = []
    for top in SUITE_DIRS:
        for folder, _, files in os.walk(top):
            for name in sorted(files):
                if name.endswith(".py") and name != "conftest.py":
                    path = os.path.join(folder, name)
                    found += [f"{os.path.relpath(path, REPO)}:{line} imports {module}"
                              for line, module in imported_test_modules(open(path, encoding="utf-8").read())]
    assert not found, "move what these share into tests/conftest.py:\n" + "\n".join(found)


def test_the_test_import_check_sees_every_spelling():
    source = ("from tests.test_kernels import stand_in_gpu\nfrom .test_branch_free import data\n"
              "from . import test_cli\nimport tests.test_nn\nfrom tests.conftest import data\n"
              "def f():\n    from tests import test_gpu\n")
    assert sorted(line for line, _ in imported_test_modules(source)) == [1, 2, 3, 4, 7]
