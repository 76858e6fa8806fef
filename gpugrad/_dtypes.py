"""The float dtypes gpugrad computes in, bfloat16 (from the optional ``ml_dtypes``) among them.

NumPy files bfloat16 under kind ``"V"`` (a user-defined dtype), not ``"f"``, so a
test ``dtype.kind in "fc"`` misses it: gpugrad asks :func:`floating` and
:func:`inexact` instead. ``ml_dtypes`` is imported only when bfloat16 is asked
for by name (``gg.bfloat16``, ``dtype="bfloat16"``): an array that already holds
bfloat16 was made by a program that imported it.

The low dtypes (float16, bfloat16) compute their reductions, softmax, norms and
losses in float32 and return the input's dtype, as PyTorch's CPU half ops do:
:func:`compute_dtype` names the dtype such an op works in.

Example:
    >>> import numpy as np
    >>> floating(np.dtype(np.float16)), floating(np.dtype(np.int64)), compute_dtype(np.dtype(np.float16))
    (True, False, dtype('float32'))
"""
import importlib.util

import numpy as np

from .errors import DTypeError

# The type characters of float16 ("e") and of ml_dtypes' bfloat16 ("E", which no NumPy dtype has). The
# tests read ``dtype.char`` (a C getter, about 0.1 us) and never ``dtype.name``, which NumPy computes in
# Python on every call (about 5 us) and would cost the hot path of every reduction and product.
LOW_CHARS = "eE"
_FLOAT32 = np.dtype(np.float32)
EXTRA = "pip install 'gpugrad[bfloat16]'"
HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def is_bfloat16(dtype):
    """Whether ``dtype`` is ml_dtypes' bfloat16.

    Example:
        >>> is_bfloat16(np.dtype(np.float16))
        False
    """
    return dtype.char == "E"


def floating(dtype):
    """Whether ``dtype`` is a real float: float16/32/64 or bfloat16."""
    return dtype.kind == "f" or dtype.char == "E"


def inexact(dtype):
    """Whether ``dtype`` is a real or complex float (one a gradient can have)."""
    return dtype.kind in "fc" or dtype.char == "E"


def numeric(dtype):
    """Whether ``dtype`` holds booleans or numbers (bfloat16 included)."""
    return dtype.kind in "biufc" or dtype.char == "E"


def is_low(dtype):
    """Whether ``dtype`` is float16 or bfloat16, the dtypes that compute sensitive ops in float32."""
    return dtype.char in LOW_CHARS


def compute_dtype(dtype):
    """float32 for the low dtypes, else ``dtype`` itself.

    Example:
        >>> compute_dtype(np.dtype(np.float64))
        dtype('float64')
    """
    return _FLOAT32 if dtype.char in LOW_CHARS else dtype


_INT64 = np.dtype(np.int64)


def weak_dtype(value, dtype):
    """The dtype of Python number ``value`` next to an array of ``dtype``: NumPy 2's weak scalars (NEP 50).

    A Python int takes an integer array's dtype (int8 * 2 is int8), a Python float a float
    array's (float16 * 2.5 is float16, bfloat16 likewise); a Python bool takes any array's. Next to
    bool, a Python int is int64 (NumPy's default integer); next to bool or an integer, a Python float
    is float32, gpugrad's default float (NumPy gives float64 there; PyTorch and JAX give their default
    float, float32, as gpugrad does).

    Example:
        >>> weak_dtype(2, np.dtype(np.int32)), weak_dtype(2.5, np.dtype(np.int32)), weak_dtype(2, np.dtype(bool))
        (dtype('int32'), dtype('float32'), dtype('int64'))
    """
    cls = value.__class__
    kind = dtype.kind
    if cls is bool or kind in "fc" or dtype.char == "E":
        return dtype if cls is not complex or kind == "c" else np.result_type(dtype, value)
    if cls is float:
        return _FLOAT32
    if kind == "b":
        return _INT64 if cls is int else np.result_type(dtype, value)
    return dtype if cls is int else np.result_type(dtype, value)


def weak_array(value, dtype):
    """Python number ``value`` as a 0-d NumPy array of :func:`weak_dtype`; an OverflowError where the int
    does not fit an integer array's dtype, as NumPy 2 raises (``np.int8([1]) * 1000``).

    Example:
        >>> weak_array(1000, np.dtype(np.int8))
        Traceback (most recent call last):
        ...
        OverflowError: Python integer 1000 out of bounds for int8
    """
    return np.asarray(value, dtype=weak_dtype(value, dtype))


def bfloat16():
    """NumPy's bfloat16 dtype from ``ml_dtypes``; DTypeError naming the extra when it is not installed.

    Example:
        >>> bfloat16().name
        'bfloat16'
    """
    try:
        import ml_dtypes
    except ImportError:
        raise DTypeError(f"bfloat16 needs the ml_dtypes package, which is not installed: {EXTRA}") from None
    return np.dtype(ml_dtypes.bfloat16)


def resolve(dtype):
    """``np.dtype(dtype)``, where ``"bfloat16"`` (any case) loads ``ml_dtypes`` first.

    Example:
        >>> resolve("bfloat16").name, resolve("float16").name
        ('bfloat16', 'float16')
    """
    if isinstance(dtype, str) and dtype.strip().lower() == "bfloat16":
        return bfloat16()
    return np.dtype(dtype)


def wide(array):
    """``array`` in float32 when it holds float16 or bfloat16 (for an op that accumulates), else itself.

    Example:
        >>> wide(np.ones(2, np.float16)).dtype, wide(np.ones(2)).dtype
        (dtype('float32'), dtype('float64'))
    """
    return array.astype(np.float32) if array.dtype.char in LOW_CHARS else array


def narrow(out, *inputs):
    """``out`` cast back to the low dtype its ``inputs`` promote to (NumPy's rule), where it is not in it.

    A result computed in float32 from float16 or bfloat16 inputs returns in their
    dtype, as PyTorch's half ops do; any other result is returned as it is.

    Example:
        >>> half = np.ones(2, np.float16)
        >>> narrow(wide(half).sum(), half).dtype, narrow(np.ones(2), half, np.ones(2)).dtype
        (dtype('float16'), dtype('float64'))
    """
    for a in inputs:
        if a.dtype.char in LOW_CHARS:
            break
    else:
        return out  # no low input: nothing to narrow (the common case, in a few attribute reads)
    target = np.result_type(*[a.dtype for a in inputs]) if len(inputs) > 1 else inputs[0].dtype
    if target.char in LOW_CHARS and out.dtype != target:
        return out.astype(target)
    return out
