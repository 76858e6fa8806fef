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
from ..backend import CPU
from ..errors import DTypeError
from ..tensor import Tensor
from .arithmetic import multiply, subtract
from .control import cast

_storable: dict = {}  # low dtype name -> whether a gpugrad tensor can hold it


def _can_store(low):
    ok = _storable.get(low)
    if ok is None:
        ok = low == "float16"
        if not ok and mixed_precision._bfloat16() is not None:
            try:
                ok = cast(Tensor(np.zeros(1, np.float32)), mixed_precision._bfloat16()).dtype == mixed_precision._bfloat16()
            except (DTypeError, TypeError, ValueError):
                ok = False
        _storable[low] = ok
    return ok


def _round_bfloat16(t):
    """``t`` (float32) rounded to bfloat16's 8-bit significand, in float32, with recorded ops.

    NOTE: Veltkamp's split (c = t (2^16 + 1), t - (c - t)... as hi = c - (c - t)) rounds to nearest;
    a tie may round away from even, and |t| > 5e33 overflows (no activation is that large).
    """
    c = multiply(t, np.float32(65537.0))
    return subtract(c, subtract(c, t))


def _to_low(t, low, native, storable):
    """Input ``t`` as the op computes it under ``low``: cast once; other dtypes as they are."""
    if not isinstance(t, Tensor):
        return t
    dtype = t._data.dtype
    if dtype.kind != "f" and dtype.name != "bfloat16" or dtype == np.float64:
        return t  # as torch.autocast: float64 and non-floats are not cast
    if not storable:  # bfloat16 emulated in float32
        return _round_bfloat16(t) if dtype == np.float32 else t
    low_t = cast(t, mixed_precision._bfloat16() if low == "bfloat16" else np.float16)
    return low_t if native else cast(low_t, np.float32)


def _from_float32(y, low, storable):
    """The float32 result of an emulated op, rounded to ``low``."""
    if not storable:
        return _round_bfloat16(y)
    return cast(y, mixed_precision._bfloat16() if low == "bfloat16" else np.float16)


def autocast_op(op, tensors, **attrs):
    """``op(*tensors, **attrs)`` under the current low dtype, or None when there is none (the op runs as it is).

    The hook of the ops of :data:`LOW_PRECISION_OPS`; ``tensors`` are the op's tensor operands
    (None where absent), ``attrs`` the rest. Inside, autocast is off, so ``op`` runs plain.
    """
    low = mixed_precision.compute_dtype()
    if low is None:
        return None
    first = next((t for t in tensors if isinstance(t, Tensor)), None)
    storable = _can_store(low)
    native = storable and first is not None and first._device is not CPU
    token = mixed_precision._autocast.set(mixed_precision._OFF)
    try:
        inputs = [None if t is None else _to_low(t, low, native, storable) for t in tensors]
        out = op(*inputs, **attrs)
        if not native and out._data.dtype == np.float32:
            out = _from_float32(out, low, storable)
        return out
    finally:
        mixed_precision._autocast.reset(token)
