"""CuPy 14.2's float16/bfloat16 gaps, and what gpugrad does instead: one table.

CuPy lacks a kernel for some (function, dtype) pairs and either raises or computes in another
dtype; NumPy with ml_dtypes, gpugrad's CPU path, keeps the dtype. :data:`GAPS` names each gap;
:func:`namespace` wraps the ``cupy`` module so that the ops, which call ``device.xp.matmul``,
``xp.where``, ``xp.argsort`` and so on, get the workaround without knowing of it. Every
workaround computes in a wider dtype that holds the inputs exactly and rounds once, as the CPU
path does, so a GPU result keeps the input's dtype:

- ``matmul`` of 3+ dims: bfloat16 raises ``TypeError`` (CuPy's batched path sends it to its
  integer kernel). float16 is copied to float32, multiplied by the float32 batched GEMM and
  copied back. Both are folded into one 2-D product where the batch allows (a batch of one,
  ``(..., M, K) @ (K, N)`` as more rows, ``(M, K) @ (..., K, N)`` as more columns, which
  costs a copy of ``b``): CuPy's 2-D product is cuBLAS ``GemmEx`` on the 16-bit data with
  float32 accumulation (tensor cores, no copies); other batches are computed in float32 and
  rounded once (bfloat16), or left to CuPy's own float32 path (float16, the same numbers);
- ``sort``/``argsort`` (and ``partition``/``argpartition``, which sort short rows): Thrust has
  no bfloat16; sorted as float32 (exact: bfloat16 widens exactly, and NaNs still sort last);
- ``where``/``clip``: no bfloat16 loop (float32 out); rounded back to bfloat16 (exact);
- ``cupyx.scipy.special.erf``/``erfc``: float16 gives float64, bfloat16 float32; computed in
  float64 and rounded once, as the CPU's erf does.

Which is fastest for a float16 batch CuPy would upcast has not been measured: this machine
has no GPU. The choice above rests on CuPy's source (a 2-D float16 product uses tensor cores,
the batched one does not); on the stand-in a conv2d forward in float16 makes one 2-D product
and no float32 copies.

Example:
    >>> sorted(GAPS)[:3]
    ['argpartition', 'argsort', 'clip']
"""
import types

import numpy as np

_LOW = "eE"
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)

# CuPy function -> (what CuPy 14.2 does with the low dtypes, what gpugrad does instead)
GAPS = {
    "matmul": ("3+ dims: bfloat16 raises TypeError, float16 is copied to float32 and back",
               "one 2-D product where the batch folds; else float32 and rounded once"),
    "sort": ("bfloat16: NotImplementedError (Thrust)", "sorted as float32"),
    "argsort": ("bfloat16: NotImplementedError (Thrust)", "sorted as float32"),
    "partition": ("bfloat16: NotImplementedError where CuPy sorts the rows (short ones)", "as float32"),
    "argpartition": ("bfloat16: NotImplementedError where CuPy sorts the rows (short ones)", "as float32"),
    "where": ("bfloat16: float32 result", "rounded back to bfloat16 (exact)"),
    "clip": ("bfloat16: float32 result", "rounded back to bfloat16 (exact)"),
    "erf": ("float16: float64, bfloat16: float32 result", "float64 and rounded once"),
    "erfc": ("float16: float64, bfloat16: float32 result", "float64 and rounded once"),
}


def _folded(cupy, a, b, out):
    """``a @ b`` (3+ dims) as one 2-D product, or ``None`` where the batch does not fold."""
    if b.ndim == 2 and a.ndim > 2:  # (..., M, K) @ (K, N): the batch is more rows
        product = cupy.matmul(a.reshape(-1, a.shape[-1]), b)
        shape = a.shape[:-1] + b.shape[-1:]
    elif a.ndim == b.ndim and all(n == 1 for n in a.shape[:-2] + b.shape[:-2]):  # a batch of one
        product = cupy.matmul(a.reshape(a.shape[-2:]), b.reshape(b.shape[-2:]))
        shape = a.shape[:-2] + product.shape
    elif a.ndim >= 2 and b.ndim >= 3 and b.size and all(n == 1 for n in a.shape[:-2]):
        # (M, K) @ (..., K, N): the batch is more columns
        (m, k), n = a.shape[-2:], b.shape[-1]
        batch = b.shape[:-2]
        count = b.size // (k * n)
        columns = b.reshape(count, k, n).transpose(1, 0, 2).reshape(k, count * n)
        product = cupy.matmul(a.reshape(m, k), columns).reshape(m, count, n).transpose(1, 0, 2)
        shape = a.shape[:-2][len(batch):] + batch + (m, n) if a.ndim > b.ndim else batch + (m, n)
    else:
        return None
    product = product.reshape(shape)
    if out is None:
        return product
    out[...] = product
    return out


def _matmul(cupy):
    matmul = cupy.matmul

    def low_matmul(a, b, out=None, **kwargs):
        """CuPy's matmul, with float16/bfloat16 products of 3+ dims as one 2-D product or in float32."""
        if (a.dtype.char not in _LOW and b.dtype.char not in _LOW) or (a.ndim < 3 and b.ndim < 3) or kwargs:
            return matmul(a, b, out=out, **kwargs)
        target = np.promote_types(a.dtype, b.dtype)
        if target.char not in _LOW:
            return matmul(a, b, out=out)
        a, b = a.astype(target, copy=False), b.astype(target, copy=False)
        folded = _folded(cupy, a, b, out)
        if folded is not None:
            return folded
        if target.char == "e":
            return matmul(a, b, out=out)  # CuPy's float32 batch: the numbers of float32 rounded once
        product = matmul(a.astype(_F32), b.astype(_F32)).astype(target)
        if out is None:
            return product
        out[...] = product
        return out

    return low_matmul


def _sorting(cupy, name):
    function = getattr(cupy, name)
    narrow = name in ("sort", "partition")

    def sort(a, *args, **kwargs):
        """CuPy's sort/argsort/(arg)partition; bfloat16 as float32 (Thrust has no bfloat16)."""
        if a.dtype.char != "E":
            return function(a, *args, **kwargs)
        result = function(a.astype(_F32), *args, **kwargs)
        return result.astype(a.dtype) if narrow else result

    sort.__name__ = name
    return sort


def _where(cupy):
    where = cupy.where

    def low_where(condition, x=None, y=None):
        """CuPy's where; a bfloat16 choice (float32 in CuPy) rounded back to bfloat16, Python scalars
        rounded to bfloat16 first, as NumPy does (not through float32)."""
        if x is None or y is None:
            return where(condition, x, y)
        if getattr(x, "dtype", _F64).char != "E" and getattr(y, "dtype", _F64).char != "E":
            return where(condition, x, y)
        target = np.result_type(*[v.dtype if hasattr(v, "dtype") else v for v in (x, y)])
        if target.char != "E":
            return where(condition, x, y)
        x, y = (v if hasattr(v, "dtype") else np.asarray(v, dtype=target).astype(_F32).item() for v in (x, y))
        return where(condition, x, y).astype(target)

    return low_where


def _clip(cupy):
    clip = cupy.clip

    def low_clip(a, a_min=None, a_max=None, out=None, **kwargs):
        """CuPy's clip; bfloat16 (float32 in CuPy) rounded back to bfloat16."""
        if a.dtype.char != "E" or out is not None:
            return clip(a, a_min, a_max, out=out, **kwargs)
        bounds = [v if v is None or hasattr(v, "dtype") else np.asarray(v, dtype=a.dtype).astype(_F32).item()
                  for v in (a_min, a_max)]
        return clip(a, *bounds, **kwargs).astype(a.dtype)

    return low_clip


def special(function):
    """``cupyx.scipy.special`` ``function`` (erf, erfc) returning float16/bfloat16 for those inputs:
    computed in float64 and rounded once, as gpugrad's CPU erf.

    Example:
        >>> import numpy as np
        >>> special(lambda v: v * 2)(np.ones(2, np.float16)).dtype
        dtype('float16')
    """
    def call(x):
        if x.dtype.char not in _LOW:
            return function(x)
        return function(x.astype(_F64)).astype(x.dtype)

    call.__name__ = getattr(function, "__name__", "special")
    return call


class _Namespace(types.ModuleType):
    """``cupy`` with :data:`GAPS` worked around; every other name is CuPy's own."""

    def __getattr__(self, name):
        value = getattr(self._cupy, name)
        setattr(self, name, value)
        return value


def namespace(cupy):
    """The array module of gpugrad's CUDA devices: ``cupy`` with the workarounds of :data:`GAPS`.

    Example:
        >>> import types
        >>> xp = namespace(types.SimpleNamespace(matmul=None, sort=None, argsort=None, partition=None,
        ...                                              argpartition=None, where=None, clip=None))
        >>> xp.__name__
        'cupy'
    """
    xp = _Namespace(getattr(cupy, "__name__", "cupy"))
    xp._cupy = cupy
    xp.matmul = _matmul(cupy)
    for name in ("sort", "argsort", "partition", "argpartition"):
        setattr(xp, name, _sorting(cupy, name))
    xp.where = _where(cupy)
    xp.clip = _clip(cupy)
    return xp
