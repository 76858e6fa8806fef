"""``Embedding``: a lookup table of vectors indexed by integer ids (``gg.embedding``)."""
from ._common import child_seed, make_variable, name_of, network_op
from .module import Module

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

    def __init__(self, num_embeddings, embedding_dim, init="normal", dtype=None, device=None, seed=None,
                 name=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.weight = make_variable(init, (self.num_embeddings, self.embedding_dim), dtype, device,
                                    child_seed(seed), name_of(name, "weight"))
        self.name = name

    def forward(self, ids):
        return network_op("embedding")(ids, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"
