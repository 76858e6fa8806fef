"""gg.distributions: log-densities of the normal, Student's t and multivariate normal, differentiable in every
argument, as ``torch.distributions``' ``log_prob``.

The functions live in :mod:`gpugrad.ops.loss.log_densities`; this module is their public namespace.

Example:
    >>> import gpugrad as gg
    >>> sorted(gg.distributions.__all__)
    ['mvn_log_prob', 'normal_log_prob', 'student_t_log_prob']
"""
from .ops.loss import log_densities as _log_densities
from .ops.loss.log_densities import *  # noqa: F401,F403

__all__ = list(_log_densities.__all__)
