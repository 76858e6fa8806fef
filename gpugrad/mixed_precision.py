"""Mixed precision: matrix products and convolutions in float16 or bfloat16, variables in float32.

As ``torch.autocast`` and Keras' ``mixed_float16`` / ``mixed_bfloat16`` policies. Under a low
policy the ops of :data:`LOW_PRECISION_OPS` (``matmul`` and ``@``, ``dense`` and so
``gg.nn.Dense``, ``conv2d`` and so ``gg.nn.Conv2D`` and ``conv1d``, ``conv_transpose2d`` and so the
transposed-convolution layers) cast their float32 inputs to the low dtype
(each input once per op, with :func:`gpugrad.cast`, a recorded op: the gradient flows back
through it in float32 to the float32 variables, the master copy) and return a result in the low
dtype, as ``torch.autocast`` does. The numerically sensitive ops that torch's autocast runs in
float32 (:data:`FLOAT32_OPS`: softmax, log-softmax, the losses, logsumexp) cast float16 and
bfloat16 operands up to float32 under a policy and return float32; every other op runs in the
dtype of its inputs (and the reductions and norms of a low dtype accumulate in float32 anyway).

A product is computed as tensor cores compute it: low-precision inputs, float32 accumulation,
a low-precision output. On a GPU the array module runs it in the low dtype (cuBLAS accumulates
in float32); on the CPU, where NumPy's float16 matrix product is a slow loop, gpugrad casts the
low-precision inputs back to float32 (exactly), runs the float32 op and rounds its result to the
low dtype once: the same numbers, at float32's speed. bfloat16 needs ``ml_dtypes`` (the
``bfloat16`` extra); without it a bfloat16 policy raises DTypeError saying so.

The state: a process-wide policy (:func:`set_policy`, as Keras' global policy) and, above it,
the innermost :func:`autocast` of the current thread or task (a ``ContextVar``). The ops' hook
costs one module attribute test while no policy is on anywhere (``active``); the casting itself
is :mod:`gpugrad.ops._autocast` (this module imports no op).

Inside :func:`gpugrad.function`, enter ``autocast`` around the call (or set the policy): a
trace and its replays then run under the same policy.

Example:
    >>> import gpugrad as gg
    >>> x, w = gg.ones((2, 3)), gg.Variable(gg.ones((3, 4)))
    >>> with gg.autocast("float16"):
    ...     with gg.GradientTape() as tape:
    ...         y = x @ w
    ...         loss = gg.sum(gg.cast(y, "float32"))
    >>> y.dtype, tape.gradient(loss, w).dtype
    (dtype('float16'), dtype('float32'))
"""
import contextvars
import threading

import numpy as np

from .errors import DTypeError

__all__ = ["Policy", "autocast", "set_policy", "global_policy", "compute_dtype", "LOW_PRECISION_OPS",
           "FLOAT32_OPS", "POLICIES"]

# the ops whose hook casts to the low dtype (Conv2DBackpropInput: conv_transpose2d's, as torch.autocast's)
LOW_PRECISION_OPS = ("MatMul", "Dense", "Conv2D", "Conv2DBackpropInput")
# from torch.autocast's float32 list, the op types whose hook casts low operands up to float32 (and gg.mse,
# made of square and mean, whose hook does the same)
FLOAT32_OPS = ("Softmax", "LogSoftmax", "SoftmaxCrossEntropy", "SigmoidCrossEntropy", "LogSumExp")
POLICIES = {"float32": None, "mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}  # Keras' names

_OFF = "off"  # autocast(enabled=False) above: no low dtype, whatever the global policy
_NOT_SET = None  # no autocast above: the global policy decides
_autocast = contextvars.ContextVar("gpugrad_autocast", default=_NOT_SET)
_lock = threading.Lock()
_entered = 0  # autocast blocks entered and not left, in every thread
_global_low = None  # the global policy's low dtype (np.dtype), or None for float32
active = False  # whether any policy or autocast block is on anywhere: the ops' hook tests this alone


def _refresh():
    global active
    active = _global_low is not None or _entered > 0


def _bfloat16():
    """ml_dtypes' bfloat16 dtype, or None without ml_dtypes."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def _low_dtype(dtype):
    """``dtype`` ("float16", "bfloat16" or a dtype) as the name of a low dtype; DTypeError for another."""
    name = getattr(dtype, "__name__", None) or str(getattr(dtype, "name", dtype))
    if name in ("float16", "half"):
        return "float16"
    if name in ("bfloat16",):
        if _bfloat16() is None:
            raise DTypeError("autocast in bfloat16 needs ml_dtypes, which gives NumPy its bfloat16: "
                             "pip install 'gpugrad[bfloat16]'")
        return "bfloat16"
    raise DTypeError(f"autocast runs ops in 'float16' or 'bfloat16', not {dtype!r}")


class Policy:
    """A precision policy, as Keras' ``DTypePolicy``: variables in ``variable_dtype``, the low-precision
    ops computing in ``compute_dtype``.

    Example:
        >>> p = Policy("mixed_bfloat16")
        >>> p.name, p.compute_dtype, p.variable_dtype
        ('mixed_bfloat16', 'bfloat16', 'float32')
    """

    def __init__(self, name):
        if name not in POLICIES:
            raise ValueError(f"unknown precision policy {name!r}: choose one of {', '.join(POLICIES)}")
        self.name = name
        self.compute_dtype = POLICIES[name] or "float32"
        self.variable_dtype = "float32"

    def __eq__(self, other):
        return isinstance(other, Policy) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f'<Policy "{self.name}">'


_global_policy = Policy("float32")


def set_policy(policy):
    """Set the process-wide policy: ``"float32"`` (the default), ``"mixed_float16"`` or ``"mixed_bfloat16"``.

    As ``tf.keras.mixed_precision.set_global_policy``; an :func:`autocast` block overrides it.

    Example:
        >>> import gpugrad as gg
        >>> gg.mixed_precision.set_policy("mixed_float16")
        >>> (gg.ones((2, 2)) @ gg.ones((2, 2))).dtype
        dtype('float16')
        >>> gg.mixed_precision.set_policy("float32")
        >>> gg.mixed_precision.global_policy()
        <Policy "float32">
    """
    global _global_policy, _global_low
    policy = policy if isinstance(policy, Policy) else Policy(policy)
    with _lock:
        _global_policy = policy
        _global_low = None if POLICIES[policy.name] is None else POLICIES[policy.name]
        _refresh()


def global_policy():
    """The process-wide :class:`Policy` (``tf.keras.mixed_precision.global_policy``).

    Example:
        >>> import gpugrad as gg
        >>> gg.mixed_precision.global_policy().name
        'float32'
    """
    return _global_policy


def compute_dtype():
    """The low dtype ("float16" or "bfloat16") the hooked ops use here and now, or None (float32).

    Example:
        >>> import gpugrad as gg
        >>> with gg.autocast("bfloat16"):
        ...     gg.mixed_precision.compute_dtype()
        'bfloat16'
        >>> gg.mixed_precision.compute_dtype() is None
        True
    """
    state = _autocast.get()
    if state is _NOT_SET:
        return _global_low
    return None if state is _OFF else state


class autocast:
    """``with gg.autocast("float16"):`` runs matmul, dense and conv2d in ``dtype`` (``"bfloat16"`` too).

    As ``torch.autocast``: ``enabled=False`` turns a policy off inside the block. Blocks nest; each
    thread (and asyncio task) has its own.

    Example:
        >>> import gpugrad as gg
        >>> with gg.autocast("float16"):
        ...     a = gg.ones((2, 2)) @ gg.ones((2, 2))
        ...     with gg.autocast(enabled=False):
        ...         b = gg.ones((2, 2)) @ gg.ones((2, 2))
        >>> a.dtype, b.dtype
        (dtype('float16'), dtype('float32'))
    """

    def __init__(self, dtype="float16", enabled=True):
        self.dtype = _low_dtype(dtype)
        self.enabled = bool(enabled)
        self._tokens = []

    def __enter__(self):
        global _entered
        self._tokens.append(_autocast.set(self.dtype if self.enabled else _OFF))
        with _lock:
            _entered += 1
            _refresh()
        return self

    def __exit__(self, *exc):
        global _entered
        _autocast.reset(self._tokens.pop())
        with _lock:
            _entered -= 1
            _refresh()
        return False

    def __repr__(self):
        return f"autocast({self.dtype!r}, enabled={self.enabled})"
