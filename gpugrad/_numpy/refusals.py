"""What a NumPy function or ufunc gpugrad has no op for says: a TypeError naming it and, where one
exists, the nearest gpugrad call. Nothing is converted to an ndarray behind the caller's back (CuPy's
arrays refuse the same way); ``np.asarray(t)`` and ``t.numpy()`` leave the tape explicitly.
"""
from __future__ import annotations

# NumPy's name (without "numpy.") -> the nearest gpugrad call
NEAREST = {
    # ufuncs
    "divmod": "gg.floor_divide(x, y) and gg.remainder(x, y)",
    "heaviside": "gg.where(x > 0, 1.0, gg.where(x < 0, 0.0, h))",
    "signbit": "x < 0", "modf": "gg.trunc(x) and x - gg.trunc(x)", "ldexp": "x * gg.exp2(n)",
    "frexp": "gg.log2", "spacing": "gg.abs", "nextafter": "gg.where",
    # functions
    "nanmax": "gg.max(gg.where(gg.isnan(x), -inf, x))", "nanmin": "gg.min(gg.where(gg.isnan(x), inf, x))",
    "nanprod": "gg.prod(gg.where(gg.isnan(x), 1.0, x))", "nancumsum": "gg.cumsum(gg.nan_to_num(x))",
    "nancumprod": "gg.cumprod(gg.where(gg.isnan(x), 1.0, x))", "nanargmax": "gg.argmax", "nanargmin": "gg.argmin",
    "nanvar": "gg.var", "nanstd": "gg.std", "nanmedian": "gg.median", "nanquantile": "gg.quantile",
    "nanpercentile": "gg.percentile", "argpartition": "gg.argsort", "select": "gg.where", "choose": "gg.where",
    "piecewise": "gg.where", "compress": "gg.take(x, gg.nonzero(condition)[0], axis)",
    "extract": "x[condition]", "rollaxis": "gg.moveaxis", "block": "gg.concat", "resize": "gg.tile or gg.reshape",
    "delete": "gg.take or indexing", "insert": "gg.concat", "trim_zeros": "indexing",
    "cov": "gg.mean and gg.matmul", "corrcoef": "gg.mean, gg.std and gg.matmul",
    "convolve": "gg.nn.functional.conv2d", "correlate": "gg.nn.functional.conv2d",
    "vander": "gg.power", "polyval": "gg.power and gg.sum", "interp": "gg.searchsorted and gg.take",
    "unwrap": "gg.diff and gg.cumsum", "ediff1d": "gg.diff(gg.ravel(x))", "i0": "gg.exp",
    "apply_along_axis": "a gg op with axis=", "angle": "gg.arctan2",
    "einsum_path": "gg.einsum", "put": "gg.where (tensors are immutable)",
    "put_along_axis": "gg.where (tensors are immutable)", "place": "gg.where (tensors are immutable)",
    "putmask": "gg.where (tensors are immutable)", "copyto": "gg.where (tensors are immutable)",
    "fill_diagonal": "gg.where (tensors are immutable)", "linalg.cond": "gg.linalg.svd",
    "linalg.matrix_rank": "gg.linalg.svd", "linalg.tensorinv": "gg.linalg.inv", "linalg.tensorsolve": "gg.linalg.solve",
    "fft.fft": "gg.matmul with a DFT matrix", "isin": "gg.any(x[..., None] == values, axis=-1)",
}


def unsupported(name):
    """The TypeError for NumPy's ``name`` (``numpy.fft.fft``, ``numpy.floor_divide.reduce``) on a tensor."""
    bare = name.removeprefix("numpy.")
    nearest = NEAREST.get(bare) or NEAREST.get(bare.rpartition(".")[2] if "." in bare else "")
    way = f"use {nearest}, or " if nearest else "use "
    return TypeError(f"{name} has no gpugrad op for tensors; {way}np.asarray(t) / t.numpy() to leave the tape "
                     f"explicitly (a NumPy result has no gradient)")
