"""Adam, with L2 weight decay folded into the gradient, and AdamW, with decoupled weight decay."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .kernels_ref import adam_step_params
from . import updates
from .optimizer import Optimizer, check_hyper

if TYPE_CHECKING:
    from .optimizer import LearningRate

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), the fused kernel ``adam_update``; step ``t`` counts from 1::

        g = grad + weight_decay * param
        m += (1 - beta_1) * (g - m)
        v += (1 - beta_2) * (g^2 - v)
        # epsilon_placement="keras" (the default; Keras and TensorFlow):
        param -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)
        # epsilon_placement="pytorch" (PyTorch, optax, HIPS autograd): epsilon beside sqrt(v_hat)
        param -= lr / (1 - beta_1^t) * m / (sqrt(v) / sqrt(1 - beta_2^t) + epsilon)

    The two differ only in where ``epsilon`` sits: the Keras form is the PyTorch form with epsilon
    scaled by ``sqrt(1 - beta_2^t)`` (about 0.03 at the first step, with beta_2 = 0.999), so a run
    ported from PyTorch (or optax) matches it with ``epsilon_placement="pytorch"``: that is
    ``torch.optim.Adam(lr, betas=(beta_1, beta_2), eps, weight_decay)``. ``weight_decay`` is L2
    (coupled), as PyTorch's Adam.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0])
        >>> opt = gg.optimizers.Adam(learning_rate=0.1)
        >>> opt.apply_gradients([(gg.tensor([3.0]), w)])  # the first step moves by about lr
        >>> [round(x, 5) for x in w.numpy().tolist()]
        [0.9]
        >>> w = gg.Variable([1.0])  # epsilon beside sqrt(v_hat): a gradient of 1e-8 moves by lr / 2
        >>> gg.optimizers.Adam(0.1, epsilon=1e-8, epsilon_placement="pytorch").apply_gradients(
        ...     [(gg.tensor([1e-8]), w)])
        >>> [round(x, 5) for x in w.numpy().tolist()]
        [0.95]
    """

    epsilon_placement = "keras"  # also what an Adam pickled before the option had

    def __init__(self, learning_rate: LearningRate = 1e-3, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, weight_decay: float = 0.0, epsilon_placement: str = "keras",
                 **kwargs: Any) -> None:
        super().__init__(learning_rate, weight_decay, **kwargs)
        self.beta_1 = check_hyper("beta_1", beta_1, 0.0, 1.0)
        self.beta_2 = check_hyper("beta_2", beta_2, 0.0, 1.0)
        self.epsilon = check_hyper("epsilon", epsilon)
        if epsilon_placement not in ("keras", "pytorch"):
            raise ValueError(f"epsilon_placement must be 'keras' (epsilon beside sqrt(v)) or 'pytorch' "
                             f"(beside sqrt(v_hat)), got {epsilon_placement!r}")
        self.epsilon_placement = epsilon_placement

    def _moments(self, var, state):
        m = state.get("m")
        if m is None:
            m = state["m"] = self._zeros(var)
            state["v"] = self._zeros(var)
        return m, state["v"]

    def _update(self, var, param, grad, lr, state, grad_is_scratch=False):
        m, v = self._moments(var, state)
        step_size, bc2_sqrt = adam_step_params(lr, self.beta_1, self.beta_2, self.iterations + 1,
                                               self.epsilon_placement)
        updates.adam(var._device, param, m, v, grad, step_size, self.beta_1, self.beta_2, self.epsilon,
                     self.weight_decay, grad_is_scratch, bc2_sqrt)

    def _update_scratch(self, var, param, grad, lr, state):
        self._update(var, param, grad, lr, state, grad_is_scratch=True)

    def _kernel_scalars(self, lr):
        step_size, bc2_sqrt = adam_step_params(lr, self.beta_1, self.beta_2, self.iterations + 1,
                                               self.epsilon_placement)
        return {"step_size": float(step_size), "beta1": float(self.beta_1), "beta2": float(self.beta_2),
                "eps": float(self.epsilon), "weight_decay": float(self.weight_decay),
                "bias_correction2_sqrt": float(bc2_sqrt)}

    def _kernel_launch(self, var, grad, state, scalars):
        return updates.adam_launch(var._device, var._data, state["m"], state["v"], grad, scalars)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``param *= 1 - lr * weight_decay``, then
    the :class:`Adam` step without decay.

    The default ``weight_decay=1e-2`` is PyTorch's (Keras uses 0.004); with
    ``epsilon_placement="pytorch"`` the step is PyTorch's ``AdamW`` (see :class:`Adam`).

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([2.0])
        >>> gg.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5).apply_gradients([(gg.tensor([0.0]), w)])
        >>> w.numpy().tolist()  # a zero gradient: only the decay, 2 * (1 - 0.05)
        [1.899999976158142]
    """

    def __init__(self, learning_rate: LearningRate = 1e-3, weight_decay: float = 1e-2, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, epsilon_placement: str = "keras",
                 **kwargs: Any) -> None:
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay, epsilon_placement, **kwargs)

    def _update(self, var, param, grad, lr, state, grad_is_scratch=False):
        m, v = self._moments(var, state)
        if self.weight_decay:
            param *= 1.0 - lr * self.weight_decay
        step_size, bc2_sqrt = adam_step_params(lr, self.beta_1, self.beta_2, self.iterations + 1,
                                               self.epsilon_placement)
        updates.adam(var._device, param, m, v, grad, step_size, self.beta_1, self.beta_2, self.epsilon, 0.0,
                     grad_is_scratch, bc2_sqrt)

    def _kernel_scalars(self, lr):
        values = super()._kernel_scalars(lr)
        values["decay"] = 1.0 - lr * self.weight_decay  # the eager `param *= 1 - lr wd`, as a Python float
        values["weight_decay"] = 0.0
        return values

    def _kernel_form(self):
        return (bool(self.weight_decay),)

    def _kernel_launch(self, var, grad, state, scalars):
        adam = super()._kernel_launch(var, grad, state, scalars)
        if not self.weight_decay:
            return adam
        param = var._data
        decay = scalars.array("decay", param.dtype)  # a Python float times param rounds to param's dtype first
        multiply = var._device.xp.multiply

        def decay_then_adam():
            multiply(param, decay, out=param)
            adam()
        return decay_then_adam
