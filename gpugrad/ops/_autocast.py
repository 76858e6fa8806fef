"""The hook of matmul, dense and conv2d under a low-precision policy (:mod:`gpugrad.mixed_precision`).

Each hooked op's first line: ``if _mp.active and (out := autocast_op(op, tensors, **attrs)) is not None:
return out``. Here the inputs are cast (recorded ``Cast`` ops), the op runs with autocast off, and
on the CPU its float32 result is rounded to the low dtype.

Example:
    >>> import gpugrad as gg
    >>> with gg.autocast("float16"):
    ...     autocast_op(gg.matmul, (gg.ones((1, 2)), gg.ones((2, 1)))).dtype
    dtype('float16')
"""
import numpy as np

from .. import mixed_precision
from .. import _dtypes as _dt
from ..backend import CPU
from ..tensor import Tensor
from .elementwise.control import cast

def _low(low):
    return mixed_precision._bfloat16() if low == "bfloat16" else np.dtype(np.float16)


def _to_low(t, low, native):
    """Input ``t`` as the op computes it under ``low``: cast once (and back to float32 on the CPU, where the
    op computes in float32 as a tensor core accumulates); other dtypes as they are."""
    if not isinstance(t, Tensor):
        return t
    dtype = t._data.dtype
    if dtype.kind != "f" and not _dt.is_bfloat16(dtype) or dtype == np.float64:
        return t  # as torch.autocast: float64 and non-floats are not cast
    low_t = cast(t, _low(low))
    return low_t if native else cast(low_t, np.float32)


def autocast_op(op, tensors, **attrs):
    """``op(*tensors, **attrs)`` under the current low dtype, or None when there is none (the op runs as it is).

    The hook of the ops of :data:`LOW_PRECISION_OPS`; ``tensors`` are the op's tensor operands
    (None where absent), ``attrs`` the rest. Inside, autocast is off, so ``op`` runs plain.
    """
    low = mixed_precision.compute_dtype()
    if low is None:
        return None
    first = next((t for t in tensors if isinstance(t, Tensor)), None)
    native = first is not None and first._device is not CPU
    token = mixed_precision._autocast.set(mixed_precision._OFF)
    try:
        inputs = [None if t is None else _to_low(t, low, native) for t in tensors]
        out = op(*inputs, **attrs)
        if not native and out._data.dtype == np.float32:
            out = cast(out, _low(low))  # the float32 result rounded once, as a tensor core stores it
        return out
    finally:
        mixed_precision._autocast.reset(token)


def _is_low(t):
    return isinstance(t, Tensor) and _dt.is_low(t._data.dtype)


def float32_op(op, tensors, **attrs):
    """``op(*tensors, **attrs)`` with its float16/bfloat16 operands cast to float32 (recorded casts), when a
    policy is on; None when none is, or no operand is low (the op runs as it is).

    The hook of :data:`gpugrad.mixed_precision.FLOAT32_OPS`, the numerically sensitive ops that
    torch.autocast runs in float32: softmax and log-softmax, the losses, layer norm, logsumexp.

    Example:
        >>> import gpugrad as gg
        >>> with gg.autocast("float16"):
        ...     gg.softmax(gg.ones((2,), dtype="float16")).dtype
        dtype('float32')
    """
    if mixed_precision.compute_dtype() is None or not any(_is_low(t) for t in tensors):
        return None
    return op(*[cast(t, np.float32) if _is_low(t) else t for t in tensors], **attrs)

