"""meshgrid: coordinate grids from 1-D coordinate vectors, as ``np.meshgrid``.

Each grid is the vector reshaped and broadcast (recorded ``Reshape`` and ``BroadcastTo``), so its
gradient sums ``dy`` back onto the vector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ShapeError
from ...tensor import Tensor
from ..base import public_ops, unary
from .shape import broadcast_to, reshape

if TYPE_CHECKING:
    from ..._typing import TensorLike


def meshgrid(*xi: TensorLike, indexing: str = "xy", sparse: bool = False) -> tuple[Tensor, ...]:
    """Coordinate grids from coordinate vectors, as ``np.meshgrid``: ``indexing="xy"`` (Cartesian: the
    first two axes swapped, NumPy's default) or ``"ij"`` (matrix); ``sparse=True`` leaves each grid
    unbroadcast (length 1 along the other axes). Each input is flattened first, as NumPy does.

    Example:
        >>> import gpugrad as gg
        >>> X, Y = gg.meshgrid(gg.tensor([1.0, 2.0, 3.0]), gg.tensor([4.0, 5.0]))
        >>> X.shape, Y.numpy().tolist()
        ((2, 3), [[4.0, 4.0, 4.0], [5.0, 5.0, 5.0]])
        >>> [g.shape for g in gg.meshgrid(gg.ones(3), gg.ones(2), indexing="ij")]
        [(3, 2), (3, 2)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"op 'Meshgrid' takes indexing 'xy' or 'ij', not {indexing!r}")
    vectors = [reshape(unary(v, *xi), -1) for v in xi]
    n = len(vectors)
    if not n:
        return ()
    if len({v._device for v in vectors}) > 1:
        raise ShapeError("op 'Meshgrid' got vectors on several devices; move them to one with .to(device)")
    sizes = [v.shape[0] for v in vectors]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(vectors):
        axis = (1 - i if i < 2 else i) if indexing == "xy" and n > 1 else i
        shape = [1] * n
        shape[axis] = v.shape[0]
        g = reshape(v, tuple(shape))
        out.append(g if sparse else broadcast_to(g, tuple(sizes)))
    return tuple(out)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "meshgrid"
    ]
