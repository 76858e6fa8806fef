"""``Dropout``: zero a random fraction of the inputs while training (``gg.dropout``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import random as _random
from ._common import network_op, real
from .module import Module

if TYPE_CHECKING:
    from ..tensor import Tensor

__all__ = ["Dropout"]


class Dropout(Module):
    """While ``training``, zero each element with probability ``rate`` and scale the rest by ``1 / (1 - rate)``;
    the identity in evaluation mode (after ``.eval()``).

    ``seed``: None draws the masks from gpugrad's global generator
    (``gg.random.seed``); an int or a ``gg.random.Generator`` gives the layer
    its own generator, so its sequence of masks repeats from run to run (each
    call draws a new mask).

    Example:
        >>> import gpugrad as gg
        >>> drop = gg.nn.Dropout(0.5).eval()
        >>> drop(gg.ones((2, 2))).numpy().tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """

    def __init__(self, rate: float, seed: int | _random.Generator | None = None) -> None:
        super().__init__()
        self.rate = real(rate, "rate", "Dropout", 0.0, 1.0, high_open=True)
        self.seed = seed
        self._generator = None if seed is None else _random.as_generator(seed)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.rate == 0.0:
            return x
        return network_op("dropout")(x, self.rate, training=True, seed=self._generator)

    if TYPE_CHECKING:
        __call__ = forward

    def extra_repr(self) -> str:
        return f"rate={self.rate}"
