"""RMSProp: divide the gradient by a running root mean square of recent gradients."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .optimizer import Optimizer, check_hyper

if TYPE_CHECKING:
    from .optimizer import LearningRate

__all__ = ["RMSProp"]


class RMSProp(Optimizer):
    """RMSProp (Hinton), Keras' arguments and PyTorch's arithmetic::

        g = grad + weight_decay * param
        ms = rho * ms + (1 - rho) * g^2
        denom = sqrt(ms) + epsilon          # centered: sqrt(ms - mg^2) + epsilon, mg = rho mg + (1 - rho) g
        step = g / denom
        buf = momentum * buf + step         # only with momentum > 0; then step = buf
        param -= lr * step

    This is PyTorch's ``RMSprop(lr, alpha=rho, eps=epsilon, momentum,
    centered, weight_decay)``; Keras puts epsilon inside the square root.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0])
        >>> gg.optimizers.RMSProp(learning_rate=0.01, rho=0.9, epsilon=0.0).apply_gradients([(gg.tensor([2.0]), w)])
        >>> [round(x, 6) for x in w.numpy().tolist()]  # 1 - 0.01 * 2 / sqrt(0.1 * 4)
        [0.968377]
    """

    def __init__(self, learning_rate: LearningRate = 1e-3, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, weight_decay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.rho = check_hyper("rho", rho, 0.0, 1.0)
        self.momentum = check_hyper("momentum", momentum, 0.0, 1.0, high_open=False)
        self.epsilon = check_hyper("epsilon", epsilon)
        self.centered = bool(centered)

    def _update(self, var, param, grad, lr, state):
        xp = var._device.xp
        if not state:
            state["ms"] = self._zeros(var)
            if self.centered:
                state["mg"] = self._zeros(var)
            if self.momentum:
                state["momentum"] = self._zeros(var)
        g = grad + self.weight_decay * param if self.weight_decay else grad
        rho = self.rho
        ms = state["ms"]
        ms *= rho
        ms += (1.0 - rho) * (g * g)
        if self.centered:
            mg = state["mg"]
            mg *= rho
            mg += (1.0 - rho) * g
            denom = xp.sqrt(ms - mg * mg)
        else:
            denom = xp.sqrt(ms)
        denom += self.epsilon
        step = g / denom
        if self.momentum:
            buf = state["momentum"]
            buf *= self.momentum
            buf += step
            step = buf
        param -= lr * step
