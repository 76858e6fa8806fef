"""Flattening and rebuilding nested lists, tuples and dicts of tensors.

Example:
    >>> flat = flatten({"b": [1, 2], "a": 3})
    >>> flat
    [3, 1, 2]
    >>> pack_like({"b": [1, 2], "a": 3}, [30, 10, 20])
    {'b': [10, 20], 'a': 30}
"""


def flatten(structure):
    """The leaves of ``structure`` in a fixed order (dicts by sorted key)."""
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    return [structure]


def pack_like(structure, leaves):
    """``structure`` with its leaves replaced, in :func:`flatten` order, by ``leaves``."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            rebuilt = {key: build(s[key]) for key in sorted(s)}
            return {key: rebuilt[key] for key in s}
        if isinstance(s, (list, tuple)):
            items = [build(item) for item in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        return next(it)

    return build(structure)
