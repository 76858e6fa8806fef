"""``Embedding``: a lookup table of vectors indexed by integer ids (``gg.embedding``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import child_seed, float_dtype, integer, make_variable, name_of, network_op
from .module import Module

if TYPE_CHECKING:
    from .._typing import DeviceLike, DTypeLike, TensorLike
    from ..tensor import Tensor
    from ._common import Initializer
    from .init import Seed

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by integer ``ids`` of any shape.

    The output has shape ``ids.shape + (embedding_dim,)``; the gradient of
    ``weight`` adds up the rows' gradients (scatter-add). ``init`` defaults to
    a standard normal, as PyTorch's.

    Example:
        >>> import gpugrad as gg
        >>> emb = gg.nn.Embedding(10, 4, seed=0)
        >>> emb(gg.tensor([[1, 2, 3]])).shape
        (1, 3, 4)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, init: Initializer = "normal",
                 dtype: DTypeLike = None, device: DeviceLike = None, seed: Seed = None,
                 name: str | None = None) -> None:
        super().__init__()
        self.num_embeddings = integer(num_embeddings, "num_embeddings", "Embedding", 1)
        self.embedding_dim = integer(embedding_dim, "embedding_dim", "Embedding", 1)
        dtype = float_dtype(dtype, "Embedding")
        self.weight = make_variable(init, (self.num_embeddings, self.embedding_dim), dtype, device,
                                    child_seed(seed), name_of(name, "weight"))
        self.name = name

    def forward(self, ids: TensorLike) -> Tensor:
        return network_op("embedding")(ids, self.weight)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"
