"""Optimizers that update Variables in place: SGD, Adam, AdamW, RMSProp, AdaGrad.

Each has ``minimize(loss_fn, var_list=None)`` (returns the loss),
``compute_gradients(loss_fn, var_list=None)`` and
``apply_gradients(grads_and_vars)``; a learning rate that is a float or a
schedule from :mod:`gpugrad.optimizers.schedules`; gradient clipping by norm
(``clipnorm``) or global norm (``global_clipnorm``). On a GPU, SGD with
momentum and Adam run the fused kernels of ``kernels/``.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([3.0, -1.0])
    >>> opt = gg.optimizers.Adam(learning_rate=0.1)
    >>> for _ in range(300):
    ...     loss = opt.minimize(lambda: gg.sum(gg.square(w - 1.0)))
    >>> [round(x, 2) for x in w.numpy().tolist()]
    [1.0, 1.0]
"""
from . import schedules
from .adagrad import AdaGrad
from .adam import Adam, AdamW
from .clipping import clip_by_global_norm, clip_by_norm, global_norm
from .loss_scale import LossScaleOptimizer
from .optimizer import Optimizer
from .rmsprop import RMSProp
from .schedules import CosineDecay, ExponentialDecay, LearningRateSchedule, LinearDecay, OneCycle, StepDecay, Warmup
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSProp", "AdaGrad", "schedules", "LearningRateSchedule",
           "StepDecay", "ExponentialDecay", "CosineDecay", "clip_by_global_norm", "clip_by_norm", "global_norm",
           "LossScaleOptimizer", "LinearDecay", "Warmup", "OneCycle"]
