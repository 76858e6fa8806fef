"""AdaGrad: per-element rates that shrink with the sum of past squared gradients."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, check_hyper

if TYPE_CHECKING:
    from .optimizer import LearningRate

__all__ = ["AdaGrad"]


class AdaGrad(Optimizer):
    """AdaGrad (Duchi et al.), Keras' arguments and PyTorch's arithmetic::

        g = grad + weight_decay * param
        accumulator += g^2                  # starts at initial_accumulator_value
        param -= lr * g / (sqrt(accumulator) + epsilon)

    This is PyTorch's ``Adagrad(lr, initial_accumulator_value, eps=epsilon,
    weight_decay)`` without ``lr_decay``; Keras puts epsilon inside the square
    root. Defaults are Keras': learning rate 0.001, accumulator 0.1.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0])
        >>> opt = gg.optimizers.AdaGrad(learning_rate=0.1, initial_accumulator_value=0.0, epsilon=0.0)
        >>> opt.apply_gradients([(gg.tensor([3.0]), w)])  # 1 - 0.1 * 3 / sqrt(9)
        >>> [round(x, 6) for x in w.numpy().tolist()]
        [0.9]
    """

    def __init__(self, learning_rate: LearningRate = 1e-3, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, weight_decay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.initial_accumulator_value = check_hyper("initial_accumulator_value", initial_accumulator_value)
        self.epsilon = check_hyper("epsilon", epsilon)

    def _update(self, var, param, grad, lr, state):
        acc = state.get("accumulator")
        if acc is None:
            acc = state["accumulator"] = self._zeros(var, self.initial_accumulator_value)
        g = grad + self.weight_decay * param if self.weight_decay else grad
        acc += g * g
        denom = var._device.xp.sqrt(acc)
        denom += self.epsilon
        param -= lr * (g / denom)
