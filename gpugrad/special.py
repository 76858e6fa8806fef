"""gg.special: the special functions of ``scipy.special`` and ``torch.special`` on tensors, differentiable.

The ops live in :mod:`gpugrad.ops.elementwise.special_functions` (lgamma, digamma, polygamma, erfc, erfinv, xlogy,
xlog1py, i0e, i1e), :mod:`gpugrad.ops.elementwise.special` (erf) and the activations (expit = sigmoid, logit); this
module is their public namespace under SciPy's names, as ``gg.linalg`` is ``numpy.linalg``'s.

Example:
    >>> import gpugrad as gg
    >>> round(gg.special.gammaln(gg.tensor(5.0, dtype="float64")).item(), 12)  # log 4!
    3.178053830348
"""
from .ops.elementwise import special_functions as _special_functions
from .ops.elementwise.activation_variants import logit
from .ops.elementwise.activations import log_sigmoid, sigmoid
from .ops.reduction.reductions import logsumexp
from .ops.loss.losses import log_softmax, softmax
from .ops.elementwise.special import erf
from .ops.elementwise.special_functions import *  # noqa: F401,F403

expit = sigmoid  # scipy.special.expit
log_expit = log_sigmoid  # scipy.special.log_expit

__all__ = list(_special_functions.__all__) + ["erf", "expit", "log_expit", "logit", "logsumexp", "softmax",
                                              "log_softmax"]
