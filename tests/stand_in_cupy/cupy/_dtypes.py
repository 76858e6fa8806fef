"""CuPy 14.2's type rules for float16 and bfloat16 where they differ from NumPy's (with ml_dtypes).

Each table is copied from CuPy 14.2's source, and ``tests/test_stand_in_dtypes.py``
checks it against the installed wheel (a ufunc's ``.types``, ``cupy.cuda.common._get_dtype_id``,
``cupy._core._dtype.to_cuda_dtype``) or, where the wheel hides it in compiled code, names the
source line it follows:

- ``matmul`` (``cupy/_core/_routines_linalg.pyx``, ``matmul``): with 3 or more dimensions the
  operands are promoted to one dtype; float16 operands are copied to float32, multiplied by the
  float32 batched GEMM and the result copied back into float16 (:data:`UPCASTS` records each such
  call, the copies CuPy makes); bfloat16 is not in ``'efdFD'`` and goes to the integer kernel,
  whose ``numpy.dtype('E')`` raises ``TypeError: data type 'E' not understood``. With 2 or fewer
  dimensions (``dot``, cuBLAS ``GemmEx`` with ``CUDA_R_32F`` compute) float16 and bfloat16 are
  multiplied in float32 and rounded once to their own dtype (NumPy with ml_dtypes returns a
  bfloat16 product in float32);
- sorting (``cupy/cuda/thrust.pyx`` over ``cupy/cuda/common.pyx``'s ``_get_dtype_id``):
  ``sort``, ``argsort`` and ``lexsort`` take only :data:`THRUST_DTYPES`, so bfloat16 raises
  ``NotImplementedError``; ``partition`` sorts rows that are short (:func:`partition_sorts`),
  so it refuses bfloat16 there; ``median`` partitions and ``quantile``/``percentile`` sort;
- ``where`` (``cupy/_sorting/search.py``, ``_where_ufunc``) and ``clip`` (``_routines_math``'s
  ``_clip``) have no bfloat16 loop: bfloat16 takes the first loop it casts to safely, float32;
- ``cupyx.scipy.special``'s ``erf`` and ``erfc``: loops ``e->d``, ``f->f``, ``d->d``, so float16
  gives float64 and bfloat16 float32 (:func:`special_dtype`).

What these rules cannot show: the speed of the copies and of the float32 GEMM, and the last
bits of a float32 special function (the stand-in computes it in float64 and rounds).
"""
import numpy as np

# cupy/cuda/common.pyx, _get_dtype_id: the dtypes Thrust's sort, argsort and lexsort take
THRUST_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
                 "float64", "complex64", "complex128", "bool")

# the loops of the ufuncs without a bfloat16 one, as the wheel's ``.types`` lists them
WHERE_TYPES = ("???->?", "?bb->b", "?BB->B", "?hh->h", "?HH->H", "?ii->i", "?II->I", "?ll->l", "?LL->L", "?qq->q",
               "?QQ->Q", "?ee->e", "?ff->f", "?dd->d", "?FF->F", "?DD->D")
CLIP_TYPES = ("???->?", "bbb->b", "BBB->B", "hhh->h", "HHH->H", "iii->i", "III->I", "lll->l", "LLL->L", "qqq->q",
              "QQQ->Q", "eee->e", "fff->f", "ddd->d")
SPECIAL_TYPES = {"erf": ("e->d", "f->f", "d->d"), "erfc": ("e->d", "f->f", "d->d"),
                 "gammaln": ("l->d", "e->d", "f->f", "d->d"),
                 "digamma": ("l->d", "e->d", "f->f", "d->d", "F->F", "D->D"), "erfinv": ("f->f", "d->d")}

# each matmul of 3+ dims that CuPy computed in float32 for float16 operands: (shape of a, shape of b)
UPCASTS = []

_SORTING = frozenset({"sort", "argsort", "lexsort", "ndarray.sort", "ndarray.argsort", "quantile", "percentile",
                      "nanquantile", "nanpercentile"})
_PARTITIONING = frozenset({"partition", "argpartition", "ndarray.partition", "ndarray.argpartition", "median",
                           "nanmedian"})


def _bfloat16(dtype):
    return dtype.name == "bfloat16"


def _refuse_sort(dtype):
    if np.dtype(dtype).name not in THRUST_DTYPES:
        raise NotImplementedError(f"Sorting arrays with dtype '{np.dtype(dtype)}' is not supported")


def partition_sorts(length, size, kth, arg=False):
    """Whether CuPy's ``partition`` (``argpartition`` if ``arg``) of rows of ``length`` (``size``
    elements in all) sorts the rows instead of running its bitonic kernel
    (``_routines_sorting.pyx``, ``_ndarray_partition`` and ``_ndarray_argpartition``)."""
    max_k = 0
    for k in (kth,) if isinstance(kth, (int, np.integer)) else kth:
        max_k = max(max_k, k + length if k < 0 else k)
    max_k = max(32, 1 << int(max_k).bit_length())
    t, sz = 4, 512
    while sz > 0 and length // sz < max_k + 32 * t:
        sz //= 2
    sz *= size // length if length else 0
    return length < 32 or (sz < 1 if arg else sz <= 32) or max_k >= 1024


def check(where, function, args, kwargs):
    """Raise as CuPy 14.2 does when function ``where`` (host arguments ``args``) cannot take their dtype."""
    if where not in _SORTING and where not in _PARTITIONING:
        return
    host = getattr(function, "__self__", None) if where.startswith("ndarray.") else (args[0] if args else None)
    if not isinstance(host, np.ndarray) or host.dtype.name in THRUST_DTYPES:
        return
    if where in _SORTING or where in ("median", "nanmedian"):  # median partitions at the middle: short rows sort
        if where in ("median", "nanmedian") and host.size >= 32:
            axis = kwargs.get("axis", args[1] if len(args) > 1 else None)
            length = host.size if axis is None else (
                np.prod([host.shape[a] for a in np.atleast_1d(axis)]) if np.ndim(axis) else host.shape[axis])
            if not partition_sorts(int(length), host.size, int(length) // 2):
                return
        _refuse_sort(host.dtype)
        return
    kth = kwargs.get("kth", args[0] if where.startswith("ndarray.") and args else (args[1] if len(args) > 1 else 0))
    axis = kwargs.get("axis", -1)
    length = host.size if axis is None else host.shape[axis]
    if partition_sorts(length, host.size, kth, arg=where.endswith("argpartition")):
        _refuse_sort(host.dtype)


def matmul(inputs, dtype):
    """The host product of ``inputs`` as CuPy computes it, or ``None`` where NumPy's equals it."""
    a, b = (np.asarray(v) for v in inputs)
    target = np.promote_types(a.dtype, b.dtype)
    if target.char not in "eE" and not _bfloat16(target):
        return None
    if max(a.ndim, b.ndim) > 2:
        if _bfloat16(target):
            np.dtype("E")  # TypeError: data type 'E' not understood, as in CuPy's integer batched kernel
        UPCASTS.append((a.shape, b.shape))
    product = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return product.astype(target)


def resolve(types, dtypes):
    """The output dtype of a ufunc with loops ``types`` for input ``dtypes``: the first loop all cast to safely."""
    for loop in types:
        ins, out = loop.split("->")
        if all(np.can_cast(d, np.dtype(c), "safe") for d, c in zip(dtypes, ins)):
            return np.dtype(out)
    raise TypeError(f"no loop of {types} takes {dtypes}")


def where_dtype(result):
    """The dtype CuPy's ``where`` gives where NumPy gives ``result``: float32 for bfloat16."""
    return np.dtype(np.float32) if _bfloat16(result.dtype) else result.dtype


def clip_dtype(result):
    """The dtype CuPy's ``clip`` gives where NumPy gives ``result``: float32 for bfloat16."""
    return where_dtype(result)


def special_dtype(name, dtype):
    """The dtype ``cupyx.scipy.special.<name>`` returns for an input of ``dtype``."""
    return resolve(SPECIAL_TYPES[name], [np.dtype(dtype)])
