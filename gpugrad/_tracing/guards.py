"""What a trace read of Python state, kept and checked before every replay (torch.compile's guards).

A trace runs the Python code once; a replay assumes the Python state it read still holds. What is
kept, at the end of the trace, and compared on each call:

- every Module called while tracing (``Module.__call__`` declares it, :func:`.state.read_module`): each
  attribute in its ``__dict__`` and its ``training`` flag; no attribute added or removed;
- the traced function's closure cells, and the globals its code (and the code of the functions
  defined inside it) names.

Each value is compared by its kind: Python numbers, strings, ``None`` by value (as ``tf.function``
treats Python arguments); NumPy arrays by value (shape, dtype and every element); lists, tuples and
dicts by identity and then item by item (two levels deep); anything else, Variables and Modules
included, by identity (the guard holds it, so an address is never reused while it is compared). A
guard that fails makes the call trace again, as a new signature does.

Example:
    >>> class Box:
    ...     pass
    >>> box = Box()
    >>> box.rate, box.items = 0.5, [1, 2]
    >>> guard = Guards(modules=[box])
    >>> guard.hold()
    True
    >>> box.items.append(3)
    >>> guard.hold()
    False
"""
import types

import numpy as np

_BY_VALUE = (bool, int, float, complex, str, bytes, type(None))
_DEPTH = 2  # containers deeper than this inside a guarded value are compared by identity only
_MISSING = object()
_IDENTITY_SUFFICES = ("value", "object")  # kinds whose value, while the same object, still matches


class Guards:
    """A snapshot of ``modules``' attributes and ``fn``'s closure and globals; :meth:`hold` compares it.

    ``checks``: ``(source, name, kept)``: ``source.__dict__[name]`` (or cell ``source``'s contents,
    ``name`` None) must still match ``kept``; ``sizes``: ``(dict, length)``, so an attribute added shows.
    """

    __slots__ = ("checks", "sizes", "n_modules")

    def __init__(self, modules=(), fn=None):
        checks, sizes, n_modules = [], [], 0
        for m in modules:
            d = getattr(m, "__dict__", None)
            if d is None:
                continue
            for name, value in d.items():
                checks.append((d, name, _keep(value, 0)))
            sizes.append((d, len(d)))
            if "training" not in d:  # the class's default, read through the class
                for cls in type(m).__mro__:
                    if "training" in cls.__dict__:
                        checks.append((cls.__dict__, "training", _keep(cls.__dict__["training"], 0)))
                        break
            n_modules += 1
        if fn is not None:
            fn = getattr(fn, "__func__", fn)
            if isinstance(fn, types.FunctionType):
                for cell in fn.__closure__ or ():
                    try:
                        value = cell.cell_contents
                    except ValueError:  # a cell not yet bound
                        continue
                    checks.append((cell, None, _keep(value, 0)))
                g = fn.__globals__
                for name in sorted(_global_names(fn.__code__)):
                    if name in g:
                        checks.append((g, name, _keep(g[name], 0)))
        self.checks, self.sizes, self.n_modules = checks, sizes, n_modules

    def hold(self):
        """Whether everything kept still matches (well under a microsecond per kept value)."""
        for d, n in self.sizes:
            if len(d) != n:
                return False
        for source, name, kept in self.checks:
            if name is None:
                try:
                    value = source.cell_contents
                except ValueError:
                    return False
            else:
                value = source.get(name, _MISSING)
            if value is kept[1] and kept[0] in _IDENTITY_SUFFICES:
                continue
            if not _still(kept, value):
                return False
        return True

    def __len__(self):
        return len(self.checks)


def _global_names(code):
    """The names ``code`` and the code objects defined in it look up (globals among them)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _keep(value, depth):
    """What a guard keeps of ``value``: ``(kind, value, extra)``."""
    if value.__class__ in _BY_VALUE:
        return ("value", value, None)
    if value.__class__ is np.ndarray:
        return ("array", value, value.copy())
    if depth < _DEPTH:
        if value.__class__ in (list, tuple):
            return ("items", value, [_keep(x, depth + 1) for x in value])
        if value.__class__ is dict:
            return ("dict", value, {k: _keep(x, depth + 1) for k, x in value.items()})
    return ("object", value, None)


def _still(kept, value):
    """Whether ``value`` matches what was kept of the value once there."""
    kind, old, extra = kept
    if kind == "value":
        return value is old or (value.__class__ is old.__class__ and (value == old or (value != value and old != old)))
    if kind == "array":  # by value, as a NumPy argument is
        return value.__class__ is np.ndarray and value.shape == extra.shape and value.dtype == extra.dtype \
            and bool(np.array_equal(value, extra, equal_nan=value.dtype.kind in "fc"))
    if value is not old:
        return False
    if kind == "items":
        return len(value) == len(extra) and all(_still(k, x) for k, x in zip(extra, value))
    if kind == "dict":
        return len(value) == len(extra) and all(_still(k, value.get(key, _MISSING)) for key, k in extra.items())
    return True
