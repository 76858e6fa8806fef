"""What a trace read of Python state, kept and checked before every replay (torch.compile's guards).

A trace runs the Python code once; a replay assumes the Python state it read still holds. What is
kept, at the end of the trace, and compared on each call:

- every Module called while tracing (``Module.__call__`` declares it, :func:`.state.read_module`): each
  attribute in its ``__dict__`` (its ``training`` flag, Variables, sub-modules, Python settings), and
  no attribute added or removed;
- the traced function's closure cells, and the globals its code (and the code of the functions
  defined inside it) names.

Each value is compared by its kind: Python numbers, strings, ``None`` by value (as ``tf.function``
treats Python arguments); NumPy arrays by value (shape, dtype and every element); lists, tuples and
dicts item by item (two levels deep); anything else, Variables and Modules included, by identity (the
guard holds it, so no other object takes its address while it is compared). A guard that fails makes
the call trace again, as a new signature does.

The check is one identity comparison per kept value, in C (``map(operator.is_, ...)``), and the
arrays' elements; only when an identity differs (a number rebound to an equal one) are the values
compared, and the snapshot taken again if they match.

Example:
    >>> class Box:
    ...     pass
    >>> box = Box()
    >>> box.rate, box.items = 0.5, [1, 2]
    >>> guard = Guards(modules=[box])
    >>> guard.hold()
    True
    >>> box.rate = 0.25 * 2
    >>> guard.hold()
    True
    >>> box.items.append(3)
    >>> guard.hold()
    False
"""
import itertools
import operator
import types

import numpy as np

_BY_VALUE = (bool, int, float, complex, str, bytes, type(None))
_DEPTH = 2  # containers deeper than this inside a kept value are compared by identity only
_MISSING = object()
_MISSINGS = itertools.repeat(_MISSING)
_CELLS = object()  # the keys of a group of closure cells
_contents = operator.attrgetter("cell_contents")
_is = operator.is_


class Guards:
    """A snapshot of ``modules``' attributes and ``fn``'s closure and globals; :meth:`hold` compares it.

    ``kept``: ``(source, key, kept value)``, where ``source[key]`` (cell ``source``'s contents, ``key``
    None) is read; ``groups``: ``(source, keys, values, size)`` for the identity check; ``arrays``:
    ``(array, copy)`` for the arrays kept by value.
    """

    __slots__ = ("modules", "fn", "kept", "groups", "arrays", "n_modules")

    def __init__(self, modules=(), fn=None):
        self.modules = [m for m in modules if hasattr(m, "__dict__")]
        self.fn = getattr(fn, "__func__", fn)
        self._snapshot()

    def _snapshot(self):
        kept, groups, arrays = [], [], []
        for m in self.modules:
            d = m.__dict__
            kept.extend((d, name, _keep(value, 0)) for name, value in d.items())
            groups.append((d, tuple(d), list(d.values()), len(d)))
            if "training" not in d:  # the class's default, read through the class
                for cls in type(m).__mro__:
                    if "training" in cls.__dict__:
                        kept.append((cls.__dict__, "training", _keep(cls.__dict__["training"], 0)))
                        groups.append((cls.__dict__, ("training",), [cls.__dict__["training"]], None))
                        break
        fn = self.fn
        if isinstance(fn, types.FunctionType):
            cells = []
            for cell in fn.__closure__ or ():
                try:
                    kept.append((cell, None, _keep(cell.cell_contents, 0)))
                    cells.append(cell)
                except ValueError:  # a cell not yet bound
                    pass
            if cells:
                groups.append((tuple(cells), _CELLS, [c.cell_contents for c in cells], None))
            g = fn.__globals__
            names = tuple(sorted(n for n in _global_names(fn.__code__) if n in g))
            kept.extend((g, name, _keep(g[name], 0)) for name in names)
            groups.append((g, names, [g[n] for n in names], None))
        for _, _, k in kept:
            _containers(k, groups, arrays)
        self.kept, self.groups, self.arrays, self.n_modules = kept, groups, arrays, len(self.modules)

    def hold(self):
        """Whether everything kept still matches."""
        for source, keys, values, size in self.groups:
            if size is not None and len(source) != size:
                return self._recheck()
            if keys is None:
                current = source
            elif keys is _CELLS:
                try:
                    current = list(map(_contents, source))
                except ValueError:
                    return False
            else:
                current = map(source.get, keys, _MISSINGS)
            if not all(map(_is, current, values)):
                return self._recheck()
        for a, copy in self.arrays:
            if not _same_array(a, copy):
                return False
        return True

    def _recheck(self):
        """An identity differs: compare by value, and keep the new objects when everything matches."""
        for source, key, k in self.kept:
            if key is None:
                try:
                    value = source.cell_contents
                except ValueError:
                    return False
            else:
                value = source.get(key, _MISSING)
            if not _still(k, value):
                return False
        for m in self.modules:  # an attribute added: the size check above, here by name
            if any(name not in {k for s, k, _ in self.kept if s is m.__dict__} for name in m.__dict__):
                return False
        self._snapshot()
        return True

    def __len__(self):
        return len(self.kept)


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


def _containers(kept, groups, arrays):
    """Add the identity groups of the containers in kept value ``kept``, and its arrays."""
    kind, value, extra = kept
    if kind == "array":
        arrays.append((value, extra))
    elif kind == "items":
        groups.append((value, None, list(value), len(value)))
        for k in extra:
            _containers(k, groups, arrays)
    elif kind == "dict":
        groups.append((value, tuple(value), list(value.values()), len(value)))
        for k in extra.values():
            _containers(k, groups, arrays)


def _same_array(value, copy):
    return value.__class__ is np.ndarray and value.shape == copy.shape and value.dtype == copy.dtype \
        and bool(np.array_equal(value, copy, equal_nan=value.dtype.kind in "fc"))


def _still(kept, value):
    """Whether ``value`` matches what was kept of the value once there."""
    kind, old, extra = kept
    if kind == "value":
        return value is old or (value.__class__ is old.__class__ and (value == old or (value != value and old != old)))
    if kind == "array":  # by value, as a NumPy argument is
        return _same_array(value, extra)
    if kind == "items":
        return value.__class__ is old.__class__ and len(value) == len(extra) and \
            all(_still(k, x) for k, x in zip(extra, value))
    if kind == "dict":
        return value.__class__ is dict and len(value) == len(extra) and \
            all(_still(k, value.get(key, _MISSING)) for key, k in extra.items())
    return value is old
