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

from . import (activation_variants, activations, adaptive_pool, arithmetic, attention, control, conv, convolution, counting,
               creation, cumulative, decompositions, dense_layer, distance_losses, grids, group_normalization, indexing,
               likelihood_losses, linalg, log_densities, losses, math, nn_ops, numpy_names, ordering, pool, reductions,
               resize, scans, scattering, segment, selection, shape, special, special_functions, statistics, structure,
               ufuncs)
from .activation_variants import *  # noqa: F401,F403
from .activations import *  # noqa: F401,F403
from .adaptive_pool import *  # noqa: F401,F403
from .arithmetic import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .control import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .cumulative import *  # noqa: F401,F403
from .decompositions import *  # noqa: F401,F403
from .distance_losses import *  # noqa: F401,F403
from .dense_layer import *  # noqa: F401,F403
from .group_normalization import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .likelihood_losses import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .log_densities import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .nn_ops import *  # noqa: F401,F403
from .numpy_names import *  # noqa: F401,F403
from .ordering import *  # noqa: F401,F403
from .pool import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .scans import *  # noqa: F401,F403
from .scattering import *  # noqa: F401,F403
from .segment import *  # noqa: F401,F403
from .selection import *  # noqa: F401,F403
from .counting import *  # noqa: F401,F403
from .grids import *  # noqa: F401,F403
from .resize import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .special_functions import *  # noqa: F401,F403
from .statistics import *  # noqa: F401,F403
from .structure import *  # noqa: F401,F403
from .ufuncs import *  # noqa: F401,F403
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

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "arange", "linspace", "eye", "tri", "add",
        "subtract", "negative", "multiply", "divide", "power", "abs", "sign", "maximum", "minimum", "where", "clip",
        "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "expm1", "log1p", "sin", "cos", "cbrt", "tan",
        "arcsin", "arccos", "arctan", "arctan2", "hypot", "sinc", "deg2rad", "rad2deg", "radians", "degrees",
        "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "exp2", "log2", "log10", "logaddexp", "logaddexp2", "fmax",
        "fmin", "remainder", "mod", "fmod", "floor", "ceil", "trunc", "rint", "round", "nan_to_num", "isfinite",
        "isnan", "isinf", "logical_not", "logical_and", "logical_or", "logical_xor", "floor_divide", "copysign",
        "isclose", "allclose", "concatenate", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
        "right_shift", "bitwise_not", "invert", "tanh", "sigmoid", "relu", "leaky_relu", "elu", "softplus",
        "softsign", "silu", "swish", "mish", "hard_tanh", "hard_sigmoid", "log_sigmoid", "relu6", "selu", "celu",
        "hardswish", "logit", "erf", "gelu", "lgamma", "gammaln", "digamma", "psi", "polygamma", "erfc", "erfinv",
        "xlogy", "xlog1py", "i0e", "i1e", "reshape", "broadcast_to", "transpose", "expand_dims", "squeeze",
        "concat", "stack", "split", "copy", "ravel", "moveaxis", "swapaxes", "repeat", "tile", "roll", "flip",
        "fliplr", "flipud", "rot90", "atleast_1d", "atleast_2d", "atleast_3d", "vstack", "hstack", "dstack",
        "column_stack", "append", "take_along_axis", "sort", "argsort", "partition", "searchsorted", "nonzero",
        "sum", "mean", "max", "min", "prod", "logsumexp", "var", "std", "argmax", "argmin", "cumsum", "cumprod",
        "diff", "gradient", "trapezoid", "nansum", "nanmean", "median", "quantile", "percentile", "ptp", "average",
        "all", "any", "count_nonzero", "getitem", "take", "gather", "pad", "matmul", "einsum", "tensordot",
        "diagonal", "trace", "diag", "tril", "triu", "outer", "inner", "dot", "vdot", "kron", "cross", "softmax",
        "log_softmax", "softmax_cross_entropy", "sigmoid_cross_entropy", "mse", "identity", "stop_gradient", "cast",
        "dense", "conv2d", "max_pool2d", "avg_pool2d", "max_unpool2d", "max_pool1d", "avg_pool1d", "max_unpool1d",
        "dropout",
        "embedding", "layer_norm", "batch_norm", "nll_loss", "binary_cross_entropy", "huber", "smooth_l1", "kl_div",
        "cosine_similarity", "scatter", "scatter_add", "index_add", "scatter_reduce", "one_hot", "masked_fill",
        "segment_sum", "segment_mean", "segment_max", "segment_min", "topk", "cummax", "cummin", "logcumsumexp",
        "unique", "bincount", "meshgrid", "masked_softmax", "conv1d", "conv_transpose2d", "conv_transpose1d",
        "adaptive_avg_pool2d", "adaptive_avg_pool1d", "interpolate", "group_norm", "adaptive_max_pool2d",
        "adaptive_max_pool1d"
    ]
