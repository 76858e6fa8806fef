"""Stochastic gradient descent, with optional (Nesterov) momentum and L2 weight decay."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import updates
from .optimizer import Optimizer, check_hyper

if TYPE_CHECKING:
    from .optimizer import LearningRate

__all__ = ["SGD"]


class SGD(Optimizer):
    """Gradient descent: ``param -= lr * (grad + weight_decay * param)``, optionally with momentum.

    With ``momentum`` (the Keras form, the fused kernel ``sgd_momentum_update``)::

        g = grad + weight_decay * param
        velocity = momentum * velocity - lr * g
        param += velocity                          # or, nesterov: param += momentum * velocity - lr * g

    At a constant rate this is PyTorch's ``SGD(lr, momentum, nesterov,
    weight_decay)`` step for step (PyTorch's buffer is ``-velocity / lr``);
    when a schedule changes the rate, past steps keep the rate they were taken
    with here, while PyTorch rescales them by the new rate. ``weight_decay`` is
    L2 folded into the gradient, as PyTorch's SGD does.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0])
        >>> opt = gg.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        >>> for _ in range(2):
        ...     opt.apply_gradients([(gg.tensor([1.0]), w)])
        >>> [round(x, 6) for x in w.numpy().tolist()]  # 1 - 0.1 - (0.9 * 0.1 + 0.1)
        [0.71]
    """

    def __init__(self, learning_rate: LearningRate = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 weight_decay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.momentum = check_hyper("momentum", momentum, 0.0, 1.0, high_open=False)
        self.nesterov = bool(nesterov)
        if self.nesterov and self.momentum == 0.0:
            raise ValueError("nesterov=True needs a momentum > 0")

    def _update(self, var, param, grad, lr, state):
        if self.momentum:
            velocity = state.get("velocity")
            if velocity is None:
                velocity = state["velocity"] = self._zeros(var)
            updates.sgd_momentum(var._device, param, velocity, grad, lr, self.momentum, self.weight_decay,
                                 self.nesterov)
        else:
            updates.sgd(var._device, param, grad, lr, self.weight_decay)

    def _kernel_scalars(self, lr):
        return {"lr": float(lr), "momentum": float(self.momentum), "weight_decay": float(self.weight_decay),
                "nesterov": bool(self.nesterov)}

    def _kernel_form(self):
        return (bool(self.momentum),)

    def _kernel_launch(self, var, grad, state, scalars):
        if not self.momentum:  # plain SGD makes a temporary (lr * grad) on a GPU: a host step
            return None
        return updates.sgd_momentum_launch(var._device, var._data, state["velocity"], grad, scalars)

    def _update_scratch(self, var, param, grad, lr, state):
        if self.momentum:
            self._update(var, param, grad, lr, state)
        else:
            updates.sgd(var._device, param, grad, lr, self.weight_decay, grad_is_scratch=True)
