"""Every op of gpugrad: forward functions with their gradient rules beside them.

Modules, in the order data flows through them: ``base`` (shared helpers),
``creation``, ``arithmetic``, ``math``, ``numpy_names`` (floor_divide, copysign, isclose, the bitwise
ops), ``activations``, ``activation_variants`` (relu6, selu, celu, hardswish, logit), ``special`` (erf,
gelu), ``special_functions`` (lgamma, digamma, polygamma, erfinv, ...: gg.special), ``log_densities``
(gg.distributions), ``shape``, ``reductions``, ``indexing``, ``linalg``, ``losses``,
``control`` (stop_gradient), ``dense_layer`` (dense: a fully connected layer as one op), ``conv``,
``pool``, ``nn_ops`` (dropout, embedding, layer_norm, batch_norm). Each ends with
``__all__ = public_ops(globals())`` (its functions without a leading ``_``) and lists its
Tensor methods in ``TENSOR_METHODS``; ``hot`` holds the declarations of the hot
gradients (:data:`~gpugrad.ops.hot.HOT_GRADIENTS`); ``replay`` the registry in which each op module
declares, beside a forward, how its op type replays under ``gg.function`` (a kernel into prebound
buffers, or called again). Importing this package registers every gradient and replay and installs the
operators and methods on :class:`gpugrad.Tensor`.
"""
from typing import TYPE_CHECKING

from .elementwise import (activation_variants, activations, arithmetic, control, math, numpy_names, special,
                          special_functions, ufuncs)
from .reduction import counting, cumulative, reductions, scans, statistics
from .array import creation, grids, indexing, ordering, scattering, segment, selection, shape
from .matrix import decompositions, dense_layer, linalg, structure
from .nn import adaptive_pool, attention, conv, convolution, group_normalization, nn_ops, pool, resize
from .loss import distance_losses, likelihood_losses, log_densities, losses
from .elementwise.activation_variants import *  # noqa: F401,F403
from .elementwise.activations import *  # noqa: F401,F403
from .nn.adaptive_pool import *  # noqa: F401,F403
from .elementwise.arithmetic import *  # noqa: F401,F403
from .nn.attention import *  # noqa: F401,F403
from .elementwise.control import *  # noqa: F401,F403
from .nn.conv import *  # noqa: F401,F403
from .nn.convolution import *  # noqa: F401,F403
from .array.creation import *  # noqa: F401,F403
from .reduction.cumulative import *  # noqa: F401,F403
from .matrix.decompositions import *  # noqa: F401,F403
from .loss.distance_losses import *  # noqa: F401,F403
from .matrix.dense_layer import *  # noqa: F401,F403
from .nn.group_normalization import *  # noqa: F401,F403
from .array.indexing import *  # noqa: F401,F403
from .loss.likelihood_losses import *  # noqa: F401,F403
from .matrix.linalg import *  # noqa: F401,F403
from .loss.log_densities import *  # noqa: F401,F403
from .loss.losses import *  # noqa: F401,F403
from .elementwise.math import *  # noqa: F401,F403
from .nn.nn_ops import *  # noqa: F401,F403
from .elementwise.numpy_names import *  # noqa: F401,F403
from .array.ordering import *  # noqa: F401,F403
from .nn.pool import *  # noqa: F401,F403
from .reduction.reductions import *  # noqa: F401,F403
from .reduction.scans import *  # noqa: F401,F403
from .array.scattering import *  # noqa: F401,F403
from .array.segment import *  # noqa: F401,F403
from .array.selection import *  # noqa: F401,F403
from .reduction.counting import *  # noqa: F401,F403
from .array.grids import *  # noqa: F401,F403
from .nn.resize import *  # noqa: F401,F403
from .array.shape import *  # noqa: F401,F403
from .elementwise.special import *  # noqa: F401,F403
from .elementwise.special_functions import *  # noqa: F401,F403
from .reduction.statistics import *  # noqa: F401,F403
from .matrix.structure import *  # noqa: F401,F403
from .elementwise.ufuncs import *  # noqa: F401,F403
from . import methods as _methods

_MODULES = (creation, arithmetic, math, ufuncs, numpy_names, activations, activation_variants, special,
            special_functions, shape, ordering, reductions, cumulative, statistics, indexing, linalg, structure,
            decompositions, log_densities, losses, control, dense_layer, conv, pool, nn_ops,
            likelihood_losses, distance_losses, scattering, segment, selection, scans, counting, grids,
            attention, convolution, resize, group_normalization, adaptive_pool)
_EVERY_OP = [name for module in _MODULES for name in module.__all__]
# The fused gradient ops and the backward convolutions are op types gradient rules call; they
# are gg.raw_ops (as TensorFlow has tf.raw_ops), not gg. sum_to and prod_others serve the engine.
RAW_OPS = [name for name in _EVERY_OP if name.endswith("_grad") or name.startswith("conv2d_backprop_")]
ENGINE_OPS = ["sum_to", "prod_others"]
# The decompositions and solvers are gg.linalg's (as numpy.linalg's), not gg's; gg.ops has them too.
LINALG_OPS = list(decompositions.__all__)
# The log-densities are gg.distributions' (as torch.distributions' log_prob), not gg's; gg.ops has them too.
DISTRIBUTION_OPS = list(log_densities.__all__)
__all__ = [name for name in _EVERY_OP if name not in RAW_OPS and name not in ENGINE_OPS and name not in LINALG_OPS
           and name not in DISTRIBUTION_OPS]
_methods.install(_MODULES)

if TYPE_CHECKING:  # the same names for type checkers, sorted: python -m gpugrad._tools.declared_names writes them
    __all__ = [
        "abs",
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "adaptive_max_pool1d",
        "adaptive_max_pool2d",
        "add",
        "all",
        "allclose",
        "any",
        "append",
        "arange",
        "arccos",
        "arccosh",
        "arcsin",
        "arcsinh",
        "arctan",
        "arctan2",
        "arctanh",
        "argmax",
        "argmin",
        "argsort",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "average",
        "avg_pool1d",
        "avg_pool2d",
        "batch_norm",
        "binary_cross_entropy",
        "bincount",
        "bitwise_and",
        "bitwise_not",
        "bitwise_or",
        "bitwise_xor",
        "broadcast_to",
        "cast",
        "cbrt",
        "ceil",
        "celu",
        "clip",
        "column_stack",
        "concat",
        "concatenate",
        "conv1d",
        "conv2d",
        "conv_transpose1d",
        "conv_transpose2d",
        "copy",
        "copysign",
        "cos",
        "cosh",
        "cosine_similarity",
        "count_nonzero",
        "cross",
        "cummax",
        "cummin",
        "cumprod",
        "cumsum",
        "deg2rad",
        "degrees",
        "dense",
        "diag",
        "diagonal",
        "diff",
        "digamma",
        "divide",
        "dot",
        "dropout",
        "dstack",
        "einsum",
        "elu",
        "embedding",
        "erf",
        "erfc",
        "erfinv",
        "exp",
        "exp2",
        "expand_dims",
        "expm1",
        "eye",
        "flip",
        "fliplr",
        "flipud",
        "floor",
        "floor_divide",
        "fmax",
        "fmin",
        "fmod",
        "full",
        "full_like",
        "gammaln",
        "gather",
        "gelu",
        "getitem",
        "gradient",
        "group_norm",
        "hard_sigmoid",
        "hard_tanh",
        "hardswish",
        "hstack",
        "huber",
        "hypot",
        "i0e",
        "i1e",
        "identity",
        "index_add",
        "inner",
        "interpolate",
        "invert",
        "isclose",
        "isfinite",
        "isinf",
        "isnan",
        "kl_div",
        "kron",
        "layer_norm",
        "leaky_relu",
        "left_shift",
        "lgamma",
        "linspace",
        "log",
        "log10",
        "log1p",
        "log2",
        "log_sigmoid",
        "log_softmax",
        "logaddexp",
        "logaddexp2",
        "logcumsumexp",
        "logical_and",
        "logical_not",
        "logical_or",
        "logical_xor",
        "logit",
        "logsumexp",
        "masked_fill",
        "masked_softmax",
        "matmul",
        "max",
        "max_pool1d",
        "max_pool2d",
        "max_unpool1d",
        "max_unpool2d",
        "maximum",
        "mean",
        "median",
        "meshgrid",
        "min",
        "minimum",
        "mish",
        "mod",
        "moveaxis",
        "mse",
        "multiply",
        "nan_to_num",
        "nanmean",
        "nansum",
        "negative",
        "nll_loss",
        "nonzero",
        "one_hot",
        "ones",
        "ones_like",
        "outer",
        "pad",
        "partition",
        "percentile",
        "polygamma",
        "power",
        "prod",
        "psi",
        "ptp",
        "quantile",
        "rad2deg",
        "radians",
        "ravel",
        "reciprocal",
        "relu",
        "relu6",
        "remainder",
        "repeat",
        "reshape",
        "right_shift",
        "rint",
        "roll",
        "rot90",
        "round",
        "rsqrt",
        "scatter",
        "scatter_add",
        "scatter_reduce",
        "searchsorted",
        "segment_max",
        "segment_mean",
        "segment_min",
        "segment_sum",
        "selu",
        "sigmoid",
        "sigmoid_cross_entropy",
        "sign",
        "silu",
        "sin",
        "sinc",
        "sinh",
        "smooth_l1",
        "softmax",
        "softmax_cross_entropy",
        "softplus",
        "softsign",
        "sort",
        "split",
        "sqrt",
        "square",
        "squeeze",
        "stack",
        "std",
        "stop_gradient",
        "subtract",
        "sum",
        "swapaxes",
        "swish",
        "take",
        "take_along_axis",
        "tan",
        "tanh",
        "tensordot",
        "tile",
        "topk",
        "trace",
        "transpose",
        "trapezoid",
        "tri",
        "tril",
        "triu",
        "trunc",
        "unique",
        "var",
        "vdot",
        "vstack",
        "where",
        "xlog1py",
        "xlogy",
        "zeros",
        "zeros_like",
    ]
