"""gpugrad: reverse-mode automatic differentiation on CuPy (NVIDIA GPUs) and NumPy.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0])
    >>> with gg.GradientTape() as tape:
    ...     loss = gg.sum(gg.square(w))
    >>> tape.gradient(loss, w).numpy().tolist()
    [2.0, 4.0]
"""
import numpy as _np

# The one version source: pyproject.toml reads this line (dynamic version), and the wheel
# metadata, `gpugrad info` and `gpugrad --version` all show it.
__version__ = "0.1.0"

from .errors import (AnomalyError, DeviceError, DeviceUnavailableError, DTypeError, GpugradError,  # noqa: E402
                     GradientError, GradientUsageError, IndexOutOfRangeError, LookupGradientError, NotATensorError,
                     LinAlgError, OutOfMemoryError, ShapeError, TraceError, CheckpointError)
from .backend import cuda_available, default_device, device, devices, get_device  # noqa: E402
from .backend.cpu_threads import get_num_threads, set_num_threads  # noqa: E402
from .tensor import Tensor, Variable, as_tensor, from_dlpack, from_numpy, tensor  # noqa: E402
from .registry import NotDifferentiable, RegisterGradient, registered_ops  # noqa: E402
from . import ops  # noqa: E402
from .ops import *  # noqa: E402,F401,F403
from .tape import GradientTape  # noqa: E402
from .anomaly import detect_anomaly  # noqa: E402
from .diagnostics import explain_gradient  # noqa: E402
from .custom_gradient import custom_gradient, record_operation  # noqa: E402
from .functional import grad, hessian, hvp, jacobian, jvp, value_and_grad, vjp  # noqa: E402
from . import gradient_checker  # noqa: E402
from . import optimizers  # noqa: E402
from . import mixed_precision  # noqa: E402
from .mixed_precision import autocast  # noqa: E402
from .optimizers import clip_by_global_norm  # noqa: E402
from . import nn  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import data  # noqa: E402
from . import random  # noqa: E402
from . import distributions, linalg, raw_ops, special  # noqa: E402
from . import _numpy  # noqa: E402 - np.exp(t), np.dot(t, a), ndarray + t: NEP 13/18 dispatch to the ops
_numpy.install()
from .traced import Function, function  # noqa: E402
from . import distributed  # noqa: E402 - imports no MPI until gg.distributed.init() under a launcher
from .profiler import profile  # noqa: E402

no_gradient = NotDifferentiable
float16, float32, float64 = _np.float16, _np.float32, _np.float64
int32, int64, bool_ = _np.int32, _np.int64, _np.bool_
# NumPy's constants, the same Python objects as numpy's (newaxis is None)
pi, e, inf, nan, newaxis = _np.pi, _np.e, _np.inf, _np.nan, _np.newaxis
from . import _dtypes  # noqa: E402


def __getattr__(name):
    """``gg.bfloat16``: NumPy's bfloat16 from ``ml_dtypes``, imported on first use (it takes ~1 s).

    Without ml_dtypes, a DTypeError naming the extra that installs it.
    """
    if name == "bfloat16":
        return _dtypes.bfloat16().type
    raise AttributeError(f"module 'gpugrad' has no attribute {name!r}")


# What gg. offers by decision (tests/test_public_api.py pins it): the ops of gpugrad.ops.__all__
# (fused gradient ops are in gg.raw_ops) and the names below. Other attributes are modules that
# importing the package loads (gg.registry, gg.tape, ...), reachable but not part of the API.
__all__ = [
    # tensors, devices and dtypes
    "Tensor", "Variable", "tensor", "as_tensor", "from_numpy", "from_dlpack",
    "devices", "device", "default_device", "get_device", "cuda_available", "get_num_threads", "set_num_threads",
    "float16", "float32", "float64", "int32", "int64", "bool_", "pi", "e", "inf", "nan", "newaxis",
    *(["bfloat16"] if _dtypes.HAVE_ML_DTYPES else []),  # the optional extra gpugrad[bfloat16]
    # autodiff
    "GradientTape", "RegisterGradient", "NotDifferentiable", "no_gradient", "registered_ops",
    "custom_gradient", "record_operation", "detect_anomaly", "explain_gradient",
    "grad", "value_and_grad", "jacobian", "hessian", "vjp", "jvp", "hvp",
    "function", "Function", "profile",
    # precision
    "autocast", "mixed_precision",
    # training and models
    "clip_by_global_norm", "save", "load",
    # modules
    "ops", "raw_ops", "linalg", "special", "distributions", "nn", "optimizers", "gradient_checker", "data", "random", "distributed",
    # errors
    "GpugradError", "ShapeError", "DTypeError", "DeviceError", "DeviceUnavailableError", "GradientError",
    "GradientUsageError", "LookupGradientError", "NotATensorError", "IndexOutOfRangeError", "OutOfMemoryError",
    "AnomalyError", "LinAlgError", "TraceError", "CheckpointError",
    "__version__",
] + list(ops.__all__)
