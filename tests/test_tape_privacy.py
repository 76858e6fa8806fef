"""Only ``gpugrad/tape.py`` reads a tape's private fields.

The private fields are the ``self._name`` attributes that ``GradientTape``
assigns (in ``__init__`` and the methods it calls), read from the source of
``tape.py`` with ``ast``. Any other module that needs something of a tape
goes through one of the tape's internal methods, listed in ``PROTOCOL``:
``gg.explain_gradient`` reads ``_diagnostic_view()``, the Jacobians take the
records as ``gradient()`` does, and gg.distributed's tape calls ``_gradient()`` to hear of each
source's gradient as soon as the sweep finishes it. The recorder appends to a tape's
:class:`gpugrad._recorder.Recording`, which the tape hands it when it starts recording. ``x._name`` on ``self`` or ``cls`` is a class's own field and allowed.
"""
import ast
import os

import gpugrad

PACKAGE_DIR = os.path.dirname(gpugrad.__file__)
TAPE_FILE = os.path.join(PACKAGE_DIR, "tape.py")
PROTOCOL = {"_diagnostic_view", "_check_unused", "_take_records", "_gradient"}


def tape_class():
    tree = ast.parse(open(TAPE_FILE, encoding="utf-8").read())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "GradientTape")


def private_fields():
    """The ``_name`` attributes GradientTape assigns on ``self``."""
    fields = set()
    for node in ast.walk(tape_class()):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            for t in ast.walk(target):
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                        and t.attr.startswith("_") and not t.attr.startswith("__")):
                    fields.add(t.attr)
    for node in tape_class().body:  # class-level private names: the read-only views (_ops = property(...))
        if isinstance(node, ast.Assign):
            fields.update(t.id for t in node.targets if isinstance(t, ast.Name) and t.id.startswith("_"))
    return fields


def private_methods():
    return {n.name for n in tape_class().body if isinstance(n, ast.FunctionDef)
            and n.name.startswith("_") and not n.name.startswith("__")}


def reads(tree, names):
    """``[(line, attribute)]`` of each ``x.<name>`` in ``tree`` with ``name`` in ``names``, ``x`` not self/cls."""
    return [(node.lineno, node.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in names
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def accesses_outside_the_tape(names):
    """``[(file:line, attribute)]`` of those reads in every gpugrad module but tape.py."""
    found = []
    for folder, _, files in os.walk(PACKAGE_DIR):
        for file in sorted(files):
            path = os.path.join(folder, file)
            if file.endswith(".py") and not os.path.samefile(path, TAPE_FILE):
                tree = ast.parse(open(path, encoding="utf-8").read())
                found += [(f"{os.path.relpath(path, PACKAGE_DIR)}:{line}", attr) for line, attr in reads(tree, names)]
    return found


def test_the_private_fields_are_found_in_tape_py():
    fields = private_fields()
    assert {"_ops", "_watched", "_rec", "_persistent", "_recording"} <= fields, fields


def test_no_module_but_tape_py_reads_a_tapes_private_fields():
    found = accesses_outside_the_tape(private_fields())
    assert not found, (f"tape-private fields read outside gpugrad/tape.py: {found}; use the tape's internal "
                       f"methods {sorted(PROTOCOL)} (or give the tape one), or rename a field that is not a tape's")


def test_other_modules_call_only_the_tapes_internal_protocol():
    used = {attr for _, attr in accesses_outside_the_tape(private_methods())}
    assert used <= PROTOCOL, f"private GradientTape methods used outside tape.py beyond {sorted(PROTOCOL)}: {used}"
    assert PROTOCOL <= private_methods(), "a PROTOCOL method is gone from GradientTape: update PROTOCOL"


def test_the_scan_sees_a_private_field_read():
    tree = ast.parse("def f(tape, stack):\n    return tape._ops, self._ops, stack[-1]._watched\n")
    assert sorted(reads(tree, private_fields())) == [(2, "_ops"), (2, "_watched")]
