"""Flattening and rebuilding nested lists, tuples and dicts of tensors.

Example:
    >>> flat = flatten({"b": [1, 2], "a": 3})
    >>> flat
    [3, 1, 2]
    >>> pack_like({"b": [1, 2], "a": 3}, [30, 10, 20])
    {'b': [10, 20], 'a': 30}
"""


_CONTAINERS = (list, tuple, dict)


def flatten(structure):
    """The leaves of ``structure`` in a fixed order (dicts by sorted key)."""
    if isinstance(structure, (list, tuple)):
        if _flat(structure):  # the usual var_list: its items are the leaves
            return list(structure)
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    return [structure]


def _flat(items):
    """Whether no item of list or tuple ``items`` is itself a list, tuple or dict."""
    for item in items:
        if isinstance(item, _CONTAINERS):
            return False
    return True


def pack_like(structure, leaves):
    """``structure`` with its leaves replaced, in :func:`flatten` order, by ``leaves``."""
    if structure.__class__ is list and _flat(structure):
        return list(leaves)  # a flat list: the leaves in its order
    return _build(structure, iter(leaves))


def _build(structure, leaves):
    # A module-level function, not a closure over itself: a self-referencing closure is a
    # reference cycle that would keep ``leaves`` (say, gradients) alive until the cyclic GC runs.
    if isinstance(structure, dict):
        rebuilt = {key: _build(structure[key], leaves) for key in sorted(structure)}
        return {key: rebuilt[key] for key in structure}
    if isinstance(structure, (list, tuple)):
        items = [_build(item, leaves) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else type(structure)(items)
    return next(leaves)
