"""gg.'s public names are a decision: this test pins them, so an addition or a removal is a change here.

``gg.__all__`` lists the API (what DESIGN.md documents, plus what users asked for);
the fused gradient ops are ``gg.raw_ops``; every other public attribute of ``gg``
is a module that importing the package loads.
"""
import subprocess
import sys
import importlib.util
import types

import gpugrad as gg

PUBLIC = [
    'scatter', 'scatter_add', 'index_add', 'scatter_reduce', 'one_hot', 'masked_fill', 'segment_sum',
    'segment_mean', 'segment_max', 'segment_min', 'topk', 'cummax', 'cummin', 'logcumsumexp', 'unique', 'bincount',
    'meshgrid',
    'AnomalyError', 'CheckpointError', 'DTypeError', 'DeviceError', 'DeviceUnavailableError', 'Function', 'GpugradError',
    'GradientError', 'GradientTape', 'GradientUsageError', 'IndexOutOfRangeError', 'LinAlgError',
    'LookupGradientError', 'NotATensorError', 'NotDifferentiable', 'OutOfMemoryError',
    'RegisterGradient', 'ShapeError', 'Tensor', 'TraceError', 'Variable', '__version__', 'abs',
    'adaptive_avg_pool1d', 'adaptive_avg_pool2d', 'add', 'all', 'any',
    'append', 'arange', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctan2', 'arctanh',
    'argmax', 'argmin', 'argsort', 'as_tensor', 'atleast_1d', 'atleast_2d', 'atleast_3d', 'autocast', 'average',
    'avg_pool1d', 'avg_pool2d', 'batch_norm', 'bool_', 'broadcast_to', 'cast', 'cbrt', 'ceil', 'clip',
    'clip_by_global_norm', 'column_stack', 'concat', 'concatenate', 'copysign', 'floor_divide', 'isclose', 'allclose',
    'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bitwise_not', 'invert', 'left_shift', 'right_shift', 'pi', 'e',
    'inf', 'nan', 'newaxis', 'special', 'distributions', 'relu6', 'selu', 'celu', 'hardswish', 'logit', 'lgamma',
    'gammaln', 'digamma', 'psi', 'polygamma', 'erfc', 'erfinv', 'xlogy', 'xlog1py', 'i0e', 'i1e', 'conv1d', 'conv2d', 'conv_transpose1d',
    'conv_transpose2d', 'copy', 'cos', 'cosh', 'count_nonzero',
    'cross', 'cuda_available', 'cumprod', 'cumsum', 'custom_gradient', 'data', 'default_device',
    'deg2rad', 'degrees', 'dense', 'detect_anomaly', 'device', 'devices', 'diag', 'diagonal', 'diff', 'distributed',
    'divide', 'dot', 'dropout', 'dstack', 'einsum', 'elu', 'embedding', 'erf', 'exp', 'exp2',
    'expand_dims', 'explain_gradient', 'expm1', 'eye', 'flip', 'fliplr', 'flipud', 'float16', 'float32',
    'float64', 'floor', 'fmax', 'fmin', 'fmod', 'from_dlpack', 'from_numpy', 'full', 'full_like', 'function',
    'gather', 'gelu', 'get_device', 'get_num_threads', 'getitem', 'grad', 'gradient', 'group_norm',
    'gradient_checker', 'hard_sigmoid', 'hard_tanh', 'hessian', 'hstack', 'hvp', 'hypot', 'identity',
    'inner', 'int32', 'interpolate', 'int64', 'isfinite', 'isinf', 'isnan', 'jacobian', 'jvp', 'kron', 'layer_norm',
    'leaky_relu', 'linalg', 'linspace', 'load', 'log', 'log10', 'log1p', 'log2', 'log_sigmoid',
    'log_softmax', 'logaddexp', 'logaddexp2', 'logical_and', 'logical_not', 'logical_or', 'logical_xor',
    'logsumexp', 'masked_softmax', 'matmul', 'max', 'max_pool1d', 'max_pool2d', 'max_unpool2d', 'maximum', 'mean', 'median', 'min', 'minimum', 'mish',
    'mixed_precision', 'mod', 'moveaxis', 'mse', 'multiply', 'nan_to_num', 'nanmean', 'nansum', 'negative', 'nn',
    'no_gradient', 'nonzero', 'ones', 'ones_like', 'ops', 'optimizers', 'outer', 'pad', 'partition',
    'percentile', 'power', 'prod', 'profile', 'ptp', 'quantile', 'rad2deg', 'radians', 'random', 'ravel',
    'raw_ops', 'reciprocal', 'record_operation', 'registered_ops', 'relu', 'remainder', 'repeat',
    'reshape', 'rint', 'roll', 'rot90', 'round', 'rsqrt', 'save', 'searchsorted', 'set_num_threads',
    'sigmoid', 'sigmoid_cross_entropy', 'sign', 'silu', 'sin', 'sinc', 'sinh', 'softmax',
    'softmax_cross_entropy', 'softplus', 'softsign', 'sort', 'split', 'sqrt', 'square', 'squeeze',
    'stack', 'std', 'stop_gradient', 'subtract', 'sum', 'swapaxes', 'swish', 'take', 'take_along_axis',
    'tan', 'tanh', 'tensor', 'tensordot', 'tile', 'trace', 'transpose', 'trapezoid', 'tri', 'tril',
    'triu', 'trunc', 'value_and_grad', 'var', 'vdot', 'vjp', 'vstack', 'where', 'zeros', 'zeros_like',
    'binary_cross_entropy', 'cosine_similarity', 'huber', 'kl_div', 'nll_loss', 'smooth_l1',  # losses (issue 28)
    'max_unpool1d', 'adaptive_max_pool1d', 'adaptive_max_pool2d',
]

RAW_OPS = [
    'abs_grad', 'arctan_grad', 'avg_pool2d_grad', 'cbrt_grad', 'clip_grad', 'conv2d_backprop_filter',
    'conv2d_backprop_input', 'cosh_grad', 'div_grad', 'elu_grad', 'exp_grad', 'gelu_grad',
    'getitem_grad', 'leaky_relu_grad', 'log_grad', 'log_sigmoid_grad', 'masked_softmax_grad', 'max_pool2d_grad',
    'maximum_grad', 'minimum_grad', 'pow_grad', 'reciprocal_grad', 'relu_grad', 'rsqrt_grad',
    'selu_grad', 'sigmoid_grad', 'silu_grad', 'sinh_grad', 'softmax_cross_entropy_grad', 'softplus_grad',
    'softsign_grad', 'sqrt_grad', 'square_grad', 'tan_grad', 'tanh_grad',
]

# gg.bfloat16 is public where its optional extra (ml_dtypes, pip install 'gpugrad[bfloat16]') is installed
PUBLIC = sorted(PUBLIC + (["bfloat16"] if importlib.util.find_spec("ml_dtypes") is not None else []))


def test_the_public_names_are_the_pinned_ones():
    assert sorted(gg.__all__) == PUBLIC
    assert len(set(gg.__all__)) == len(gg.__all__)


def test_every_public_name_exists_and_nothing_else_public_is_not_a_module():
    assert [name for name in gg.__all__ if not hasattr(gg, name)] == []
    others = [name for name in dir(gg) if not name.startswith("_") and name not in gg.__all__]
    assert [name for name in others if not isinstance(getattr(gg, name), types.ModuleType)] == []


def test_mixed_precision_names():
    assert gg.autocast is gg.mixed_precision.autocast
    assert sorted(gg.mixed_precision.__all__) == [
        "FLOAT32_OPS", "LOW_PRECISION_OPS", "POLICIES", "Policy", "autocast", "compute_dtype", "global_policy",
        "set_policy"]
    assert "LossScaleOptimizer" in gg.optimizers.__all__


def test_fused_gradient_ops_are_raw_ops_not_gg():
    assert sorted(gg.raw_ops.__all__) == RAW_OPS
    for name in RAW_OPS:
        assert not hasattr(gg, name) and getattr(gg.raw_ops, name) is getattr(gg.ops, name)
    assert not hasattr(gg, "sum_to") and not hasattr(gg, "prod_others")


def test_star_import_gives_the_public_names():
    namespace = {}
    exec("from gpugrad import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(PUBLIC)


def test_importing_gpugrad_loads_no_tooling():
    """The kernel check, the bench runner and the op spec table live in gpugrad._tools, off the import path."""
    code = "import sys, gpugrad; print(sorted(m for m in sys.modules if m.startswith('gpugrad._tools')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert not hasattr(gg, "kernels_ref") and hasattr(gg.optimizers, "kernels_ref")


def test_linalg_is_numpy_linalg_not_gg():
    """The decompositions and solvers are gg.linalg's, as numpy.linalg's: not gg's own names."""
    assert sorted(gg.linalg.__all__) == sorted(["inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "eig",
                                                "svd", "pinv", "matrix_power", "norm", "lstsq"])
    assert [name for name in gg.linalg.__all__ if hasattr(gg, name)] == []
