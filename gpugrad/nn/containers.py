"""``Sequential``: layers applied one after another."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

from .module import Module

if TYPE_CHECKING:
    from typing import TypeAlias

    from typing_extensions import Self

    from ..tensor import Tensor

    # A layer: a Module or any callable of one argument.
    Layer: TypeAlias = Callable[..., Any]

__all__ = ["Sequential"]


class Sequential(Module):
    """Calls each layer on the previous one's output; variables are found under ``layers.<i>.``.

    Takes layers as arguments or as one list; a layer may be a Module or any
    callable of one argument (such as ``gg.relu``).

    Example:
        >>> import gpugrad as gg
        >>> model = gg.nn.Sequential(gg.nn.Dense(4, 8, seed=0), gg.relu, gg.nn.Dense(8, 2, seed=1))
        >>> model(gg.ones((3, 4))).shape
        (3, 2)
        >>> [name for name, _ in model.named_variables()]
        ['layers.0.kernel', 'layers.0.bias', 'layers.2.kernel', 'layers.2.bias']
    """

    def __init__(self, *layers: Layer | list[Layer] | tuple[Layer, ...]) -> None:
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (list, tuple)):
            layers = layers[0]  # type: ignore[assignment]  # the one list's layers in place of the tuple
        for layer in layers:
            if not callable(layer):
                raise TypeError(f"Sequential takes callables (layers), not {type(layer).__name__}")
        self.layers: list[Layer] = list(layers)  # type: ignore[arg-type]  # layers, not lists, by now

    def add(self, layer: Layer) -> Self:
        """Append ``layer``; returns self."""
        if not callable(layer):
            raise TypeError(f"Sequential takes callables (layers), not {type(layer).__name__}")
        self.layers.append(layer)
        return self

    def forward(self, x: Any) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    if TYPE_CHECKING:
        __call__ = forward

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return Sequential(self.layers[index])
        return self.layers[index]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.layers)

    def __repr__(self) -> str:
        lines = [f"  ({i}): " + repr(layer).replace("\n", "\n  ") for i, layer in enumerate(self.layers)]
        return "Sequential(\n" + "\n".join(lines) + "\n)" if lines else "Sequential()"
