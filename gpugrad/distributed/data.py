"""Each rank's share of a batch: the rows of one global batch that this rank trains on."""
from .world import world


def shard(n_or_items, rank=None, size=None):
    """This rank's contiguous share of ``n_or_items`` (a length, or a sequence/array sliced), rank ``r`` of
    ``s`` taking ``[r * n // s, (r + 1) * n // s)``: every item once, the shares differing by one at most.

    Example:
        >>> shard(10, rank=1, size=3)
        range(3, 6)
        >>> shard(list("abcde"), rank=0, size=2)
        ['a', 'b']
    """
    w = world() if rank is None or size is None else None
    rank = w.rank if rank is None else rank
    size = w.size if size is None else size
    n = n_or_items if isinstance(n_or_items, int) else len(n_or_items)
    start, stop = rank * n // size, (rank + 1) * n // size
    return range(start, stop) if isinstance(n_or_items, int) else n_or_items[start:stop]
