"""What a trace read of Python state, kept and checked before every replay (torch.compile's guards).

A trace runs the Python code once; a replay assumes the Python state it read still holds. What is
kept, at the end of the trace, and compared on each call:

- every Module called while tracing (``Module.__call__`` declares it, :func:`.state.read_module`): each
  attribute in its ``__dict__`` (its ``training`` flag, Variables, sub-modules, Python settings), and
  no attribute added or removed;
- the traced function's closure cells, and the globals its code (and the code of the functions
  defined inside it) names;
- the ``trainable`` flag of every Variable the trace read or wrote (a tape watches a trainable one
  on its own, and ``minimize`` updates the trainable ones: ``Module.trainable = False`` freezes them).

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
import operator
import types

import numpy as np

_BY_VALUE = (bool, int, float, complex, str, bytes, type(None))
_DEPTH = 2  # containers deeper than this inside a kept value are compared by identity only
_MISSING = object()
_contents = operator.attrgetter("cell_contents")
_trainable = operator.attrgetter("trainable")
_is = operator.is_


class Guards:
    """A snapshot of ``modules``' attributes and ``fn``'s closure and globals; :meth:`hold` compares it.

    ``kept``: ``(source, key, kept value, label)``, where ``source[key]`` (cell ``source``'s contents,
    ``key`` None) is read, for the comparison by value; ``sources[i][keys[i]] is values[i]`` and
    ``cells[i].cell_contents is contents[i]`` for the identity check, ``sized`` of lengths ``sizes``;
    ``arrays``: ``(array, copy, label)`` for the arrays kept by value.
    """

    __slots__ = ("modules", "fn", "kept", "arrays", "n_modules", "changed", "sized", "sizes", "sources", "keys",
                 "values", "cells", "contents", "variables", "trainable")

    def __init__(self, modules=(), fn=None, variables=()):
        self.modules = [m for m in modules if hasattr(m, "__dict__")]
        self.fn = getattr(fn, "__func__", fn)
        self.variables = tuple(variables)
        self.trainable = [v.trainable for v in self.variables]
        self.changed = None  # what differed when :meth:`hold` last said False (a name, for a message)
        self._snapshot()

    def _snapshot(self):
        kept, arrays = [], []
        sized, sizes = [], []  # containers whose length is kept
        sources, keys, values = [], [], []  # source[key] is values[i], checked by identity
        cells, contents = [], []  # closure cells and their contents, checked by identity

        def watch(source, key, value):
            sources.append(source)
            keys.append(key)
            values.append(value)

        def watch_items(k):  # a kept list, tuple or dict: its length and items
            kind, value, extra = k
            if kind == "items":
                sized.append(value)
                sizes.append(len(value))
                for i, (x, item) in enumerate(zip(value, extra)):
                    watch(value, i, x)
                    watch_items(item)
            elif kind == "dict":
                sized.append(value)
                sizes.append(len(value))
                for key, item in extra.items():
                    watch(value, key, value[key])
                    watch_items(item)

        for m in self.modules:
            d = m.__dict__
            sized.append(d)
            sizes.append(len(d))
            for name, value in d.items():
                kept.append((d, name, _keep(value, 0), f"{type(m).__name__}.{name}"))
                watch(d, name, value)
            if "training" not in d:  # the class's default, read through the class
                for cls in type(m).__mro__:
                    if "training" in cls.__dict__:
                        kept.append((cls.__dict__, "training", _keep(cls.__dict__["training"], 0),
                                     f"{cls.__name__}.training"))
                        watch(cls.__dict__, "training", cls.__dict__["training"])
                        break
        fn = self.fn
        if isinstance(fn, types.FunctionType):
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:  # a cell not yet bound
                    continue
                kept.append((cell, None, _keep(value, 0), f"{name} (closure)"))
                cells.append(cell)
                contents.append(value)
            g = fn.__globals__
            for name in sorted(n for n in _global_names(fn.__code__) if n in g):
                kept.append((g, name, _keep(g[name], 0), f"{name} (global)"))
                watch(g, name, g[name])
        for _, _, k, label in kept:
            watch_items(k)
            _arrays(k, arrays, label)
        self.kept, self.arrays, self.n_modules = kept, arrays, len(self.modules)
        self.sized, self.sizes = tuple(sized), sizes
        self.sources, self.keys, self.values = tuple(sources), tuple(keys), tuple(values)
        self.cells, self.contents = tuple(cells), tuple(contents)

    def hold(self):
        """Whether everything kept still matches: lengths, then identities (each a map in C), then arrays."""
        try:
            if list(map(len, self.sized)) != self.sizes \
                    or not all(map(_is, map(operator.getitem, self.sources, self.keys), self.values)) \
                    or not all(map(_is, map(_contents, self.cells), self.contents)):
                return self._recheck()
        except (KeyError, IndexError, ValueError):  # an attribute deleted, a list shortened, a cell emptied
            return self._recheck()
        for a, copy, label in self.arrays:
            if not _same_array(a, copy):
                self.changed = label
                return False
        if list(map(_trainable, self.variables)) != self.trainable:
            v = next(v for v, t in zip(self.variables, self.trainable) if v.trainable != t)
            self.changed = f"Variable {v.name or ''} trainable".replace("  ", " ")
            return False
        return True

    def _recheck(self):
        """An identity differs: compare by value, and keep the new objects when everything matches."""
        for source, key, k, label in self.kept:
            if key is None:
                try:
                    value = source.cell_contents
                except ValueError:
                    value = _MISSING
            else:
                value = source.get(key, _MISSING)
            if not _still(k, value):
                self.changed = label
                return False
        for m in self.modules:  # an attribute added: the size check above, here by name
            names = {key for source, key, _, _ in self.kept if source is m.__dict__}
            added = [name for name in m.__dict__ if name not in names]
            if added:
                self.changed = f"{type(m).__name__}.{added[0]} (added)"
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


def _arrays(kept, arrays, label):
    """Add ``(array, copy, label)`` for each array kept by value in kept value ``kept``."""
    kind, value, extra = kept
    if kind == "array":
        arrays.append((value, extra, label))
    elif kind == "items":
        for k in extra:
            _arrays(k, arrays, label)
    elif kind == "dict":
        for k in extra.values():
            _arrays(k, arrays, label)


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
