"""Adam, with L2 weight decay folded into the gradient, and AdamW, with decoupled weight decay."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .kernels_ref import adam_step_size
from . import updates
from .optimizer import Optimizer, check_hyper

if TYPE_CHECKING:
    from .optimizer import LearningRate

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), in the Keras form of the fused kernel ``adam_update``; step ``t`` counts from 1::

        g = grad + weight_decay * param
        m += (1 - beta_1) * (g - m)
        v += (1 - beta_2) * (g^2 - v)
        param -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)

    This is PyTorch's ``Adam(lr, betas=(beta_1, beta_2), eps, weight_decay)``
    except where ``epsilon`` sits: PyTorch adds it to the bias-corrected
    ``sqrt(v / (1 - beta_2^t))``, which equals this form with epsilon scaled by
    ``sqrt(1 - beta_2^t)``. ``weight_decay`` is L2 (coupled), as PyTorch's Adam.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0])
        >>> opt = gg.optimizers.Adam(learning_rate=0.1)
        >>> opt.apply_gradients([(gg.tensor([3.0]), w)])  # the first step moves by about lr
        >>> [round(x, 5) for x in w.numpy().tolist()]
        [0.9]
    """

    def __init__(self, learning_rate: LearningRate = 1e-3, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, weight_decay: float = 0.0, **kwargs: Any) -> None:
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.beta_1 = check_hyper("beta_1", beta_1, 0.0, 1.0)
        self.beta_2 = check_hyper("beta_2", beta_2, 0.0, 1.0)
        self.epsilon = check_hyper("epsilon", epsilon)

    def _moments(self, var, state):
        m = state.get("m")
        if m is None:
            m = state["m"] = self._zeros(var)
            state["v"] = self._zeros(var)
        return m, state["v"]

    def _update(self, var, param, grad, lr, state, grad_is_scratch=False):
        m, v = self._moments(var, state)
        step_size = adam_step_size(lr, self.beta_1, self.beta_2, self.iterations + 1)
        updates.adam(var._device, param, m, v, grad, step_size, self.beta_1, self.beta_2, self.epsilon,
                     self.weight_decay, grad_is_scratch)

    def _update_scratch(self, var, param, grad, lr, state):
        self._update(var, param, grad, lr, state, grad_is_scratch=True)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``param *= 1 - lr * weight_decay``, then
    the :class:`Adam` step without decay.

    The default ``weight_decay=1e-2`` is PyTorch's (Keras uses 0.004); the step
    is PyTorch's ``AdamW`` with the epsilon placement :class:`Adam` describes.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([2.0])
        >>> gg.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5).apply_gradients([(gg.tensor([0.0]), w)])
        >>> w.numpy().tolist()  # a zero gradient: only the decay, 2 * (1 - 0.05)
        [1.899999976158142]
    """

    def __init__(self, learning_rate: LearningRate = 1e-3, weight_decay: float = 1e-2, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, **kwargs: Any) -> None:
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay, **kwargs)

    def _update(self, var, param, grad, lr, state, grad_is_scratch=False):
        m, v = self._moments(var, state)
        if self.weight_decay:
            param *= 1.0 - lr * self.weight_decay
        step_size = adam_step_size(lr, self.beta_1, self.beta_2, self.iterations + 1)
        updates.adam(var._device, param, m, v, grad, step_size, self.beta_1, self.beta_2, self.epsilon, 0.0,
                     grad_is_scratch)
