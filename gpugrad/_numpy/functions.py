"""NumPy's functions on tensors (NEP 18): each NumPy function gpugrad has an op of the same meaning
for, and that op's call (see :mod:`.binding` for how the arguments travel).

``FUNCTIONS`` maps the NumPy function object to a :class:`~.binding.Call` (the op takes NumPy's
arguments after renaming) or to a handler ``fn(np_func, args, kwargs)`` written out below where the
meaning needs a few ops or the arguments differ in kind (``np.split``'s indices are gpugrad's sizes).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import linalg as gl, ops as g
from ..tensor import Tensor, ensure_tensor
from .binding import DROP, Call, cast_arrays, no_out, only, qualname, refuse_out

_ORDER = only("C", "K", "A", None)  # the layout of a result: a tensor has one
_REDUCE = dict(where=only(True))    # NumPy's where= of a reduction: every element only


def _first_tensor(values):
    for v in values:
        if isinstance(v, Tensor):
            return v
        if isinstance(v, (list, tuple)):
            found = _first_tensor(v)
            if found is not None:
                return found
    return None


def handler(signature):
    """A handler with NumPy's ``signature`` (a function of the same parameters): binds the arguments
    as NumPy would, refuses ``out``, and calls the body with them."""
    def wrap(body):
        @functools.wraps(body)
        def run(np_func, args, kwargs):
            name = qualname(np_func)
            try:
                bound = _bind(signature, args, kwargs)
            except TypeError as exc:
                raise TypeError(f"{name}(): {exc}") from None
            if not no_out(bound.pop("out", None)):
                refuse_out(name)
            return body(**bound)
        return run
    return wrap


def _bind(signature, args, kwargs):
    import inspect

    bound = inspect.signature(signature).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


# ---------------------------------------------------------------- handlers: a few ops, or other arguments


def _sizes(indices, length):
    """NumPy's split indices ``[2, 5]`` of an axis of ``length`` as gpugrad's part sizes ``[2, 3, rest]``."""
    edges = [min(max(int(i) if i >= 0 else int(i) + length, 0), length) for i in indices]
    bounds = [0, *edges, length]
    return [max(b - a, 0) for a, b in zip(bounds, bounds[1:])]


def _split_along(ary, indices_or_sections, axis, equal):
    x = ensure_tensor(ary)
    axis = axis + x.ndim if axis < 0 else axis
    length = x.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if equal or n <= 0:
            return list(g.split(x, n, axis))
        base, extra = divmod(length, n)  # np.array_split: the first `extra` parts one longer
        return list(g.split(x, [base + 1] * extra + [base] * (n - extra), axis))
    return list(g.split(x, _sizes(indices_or_sections, length), axis))


@handler(lambda ary, indices_or_sections, axis=0: None)
def _split(ary, indices_or_sections, axis):
    return _split_along(ary, indices_or_sections, axis, equal=True)


@handler(lambda ary, indices_or_sections, axis=0: None)
def _array_split(ary, indices_or_sections, axis):
    return _split_along(ary, indices_or_sections, axis, equal=False)


def _split_on(axis_of):
    @handler(lambda ary, indices_or_sections: None)
    def split(ary, indices_or_sections):
        x = ensure_tensor(ary)
        return _split_along(x, indices_or_sections, axis_of(x), equal=True)
    return split


@handler(lambda x, axis=0: None)
def _unstack(x, axis):
    x = ensure_tensor(x)
    return tuple(g.squeeze(part, axis) for part in g.split(x, x.shape[axis], axis))


def _cumulative(op, identity):
    """``np.cumulative_sum`` / ``cumulative_prod`` (the array API's): ``op`` with ``include_initial``'s leading
    ``identity`` (0 or 1) along ``axis``."""
    @handler(lambda x, /, *, axis=None, dtype=None, out=None, include_initial=False: None)
    def cumulative(x, axis, dtype, include_initial):
        x = ensure_tensor(x)
        if axis is None:
            if x.ndim > 1:
                raise TypeError(f"numpy.cumulative_{op.__name__[3:]}: axis= is needed for a tensor of more than "
                                f"one axis")
            axis = 0
        result = op(x, axis, dtype)
        if include_initial:
            shape = list(result.shape)
            shape[axis] = 1
            result = g.concat([g.full_like(result, identity, shape=tuple(shape)), result], axis)
        return result
    return cumulative


@handler(lambda x, dtype, copy=True, device=None: None)
def _astype(x, dtype, copy, device):
    result = g.cast(ensure_tensor(x), dtype)
    return result if device is None else result.to(device)


@handler(lambda *args, subok=False: None)
def _broadcast_arrays(args, subok):
    tensors = [ensure_tensor(a, _first_tensor(args)) for a in args]
    shape = np.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(g.broadcast_to(t, shape) for t in tensors)


@handler(lambda v, k=0: None)
def _diagflat(v, k):
    return g.diag(g.ravel(ensure_tensor(v)), k)


_UNSET = np._NoValue


@handler(lambda a, a_min=_UNSET, a_max=_UNSET, out=None, *, min=_UNSET, max=_UNSET, casting="same_kind": None)
def _clip(a, a_min, a_max, min, max, casting):  # noqa: A002 - NumPy's names
    lo, hi = (None if v is _UNSET else v for v in (a_min if min is _UNSET else min, a_max if max is _UNSET else max))
    return g.clip(a, lo, hi)


@handler(lambda x, out=None: None)
def _fix(x):
    return g.trunc(x)


@handler(lambda val: None)
def _real(val):
    return ensure_tensor(val)


@handler(lambda val: None)
def _imag(val):
    return g.full_like(ensure_tensor(val), 0)


def _like(fill):
    @handler(lambda prototype, dtype=None, order="K", subok=True, shape=None, *, device=None: None)
    def like(prototype, dtype, order, subok, shape, device):
        result = g.full_like(ensure_tensor(prototype), fill, dtype, shape)
        return result if device is None else result.to(device)
    return like


@handler(lambda a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None: None)
def _full_like(a, fill_value, dtype, order, subok, shape, device):
    result = g.full_like(ensure_tensor(a), fill_value, dtype, shape)
    return result if device is None else result.to(device)


@handler(lambda x, /: None)
def _matrix_transpose(x):
    return g.swapaxes(x, -1, -2)


@handler(lambda arrays, *, out=None: None)
def _multi_dot(arrays):
    return functools.reduce(g.dot, arrays)


@handler(lambda x1, x2, /, *, axis=-1: None)
def _vecdot(x1, x2, axis):
    return g.sum(g.multiply(x1, x2), axis)


@handler(lambda x, /, *, offset=0, dtype=None: None)
def _linalg_trace(x, offset, dtype):
    x = ensure_tensor(x) if dtype is None else cast_arrays(x, dtype)
    return g.trace(x, offset, -2, -1)


@handler(lambda x, /, *, offset=0: None)
def _linalg_diagonal(x, offset):
    return g.diagonal(x, offset, -2, -1)


@handler(lambda x, /, *, axis=None, keepdims=False, ord=2: None)
def _vector_norm(x, axis, keepdims, ord):
    x = ensure_tensor(x)
    if axis is None:  # every element as one vector
        flat = gl.norm(g.reshape(x, -1), ord)
        return g.reshape(flat, (1,) * x.ndim) if keepdims else flat
    if isinstance(axis, tuple) and len(axis) > 1:
        moved = g.moveaxis(x, axis, tuple(range(-len(axis), 0)))
        flat = g.reshape(moved, moved.shape[:-len(axis)] + (-1,))
        result = gl.norm(flat, ord, -1)
        if keepdims:
            result = g.expand_dims(result, tuple(sorted(a % x.ndim for a in axis)))
        return result
    return gl.norm(x, ord, axis, keepdims)


@handler(lambda x, /, *, keepdims=False, ord="fro": None)
def _matrix_norm(x, keepdims, ord):
    return gl.norm(x, ord, (-2, -1), keepdims)


@handler(lambda x, /: None)
def _svdvals(x):
    return gl.svd(x, compute_uv=False)


@handler(lambda a: None)
def _eigvals(a):
    return gl.eig(a).eigenvalues


@handler(lambda a, UPLO="L": None)
def _eigvalsh(a, UPLO):  # noqa: N803 - NumPy's name
    return gl.eigh(a, UPLO).eigenvalues


@handler(lambda a: None)
def _argwhere(a):
    return g.stack(g.nonzero(a), axis=-1) if ensure_tensor(a).ndim else g.zeros((int(bool(a)), 0), "int64")


@handler(lambda a: None)
def _flatnonzero(a):
    return g.nonzero(g.ravel(a))[0]


def _sign_inf(positive):
    @handler(lambda x, out=None: None)
    def check(x):
        x = ensure_tensor(x)
        return g.logical_and(g.isinf(x), (x > 0) if positive else (x < 0))
    return check


# ---------------------------------------------------------------- comparisons of values (no gradient)


def _values(*arrays):
    like = _first_tensor(arrays)
    return like, [ensure_tensor(a, like)._data for a in arrays]


@handler(lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: None)
def _isclose(a, b, rtol, atol, equal_nan):
    like, (x, y) = _values(a, b)
    return Tensor._wrap(like._device.xp.isclose(x, y, rtol, atol, equal_nan), like._device)


@handler(lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: None)
def _allclose(a, b, rtol, atol, equal_nan):
    like, (x, y) = _values(a, b)
    return bool(Tensor._wrap(like._device.xp.all(like._device.xp.isclose(x, y, rtol, atol, equal_nan)), like._device))


@handler(lambda a1, a2, equal_nan=False: None)
def _array_equal(a1, a2, equal_nan):
    like, (x, y) = _values(a1, a2)
    if x.shape != y.shape:
        return False
    return bool(Tensor._wrap(like._device.xp.array_equal(x, y, equal_nan=equal_nan), like._device))


@handler(lambda a1, a2: None)
def _array_equiv(a1, a2):
    like, (x, y) = _values(a1, a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return bool(Tensor._wrap(like._device.xp.all(x == y), like._device))


# ---------------------------------------------------------------- what a tensor is (no values read)


def _shape_of(a):
    return a.shape if isinstance(a, Tensor) else np.shape(a)


@handler(lambda a: None)
def _shape(a):
    return _shape_of(a)


@handler(lambda a: None)
def _ndim(a):
    return len(_shape_of(a))


@handler(lambda a, axis=None: None)
def _size(a, axis):
    shape = _shape_of(a)
    return int(np.prod(shape)) if axis is None else shape[axis]


def _dtype_of(x):
    return x.dtype if isinstance(x, Tensor) else x


@handler(lambda *arrays_and_dtypes: None)
def _result_type(arrays_and_dtypes):
    return np.result_type(*(_dtype_of(x) for x in arrays_and_dtypes))


def _complex(x):
    return np.iscomplexobj(np.empty(0, _dtype_of(x))) if isinstance(x, Tensor) else np.iscomplexobj(x)


@handler(lambda x: None)
def _iscomplexobj(x):
    return _complex(x)


@handler(lambda x: None)
def _isrealobj(x):
    return not _complex(x)


def _printed(np_func):
    """``np.array2string(t)`` and the like: the text of the tensor's values (read on the host)."""
    def show(func, args, kwargs):
        return np_func(*(a.numpy() if isinstance(a, Tensor) else a for a in args), **kwargs)
    return show


# ---------------------------------------------------------------- the table


def _np(path):
    """NumPy's function at ``path`` ("linalg.norm"), or None where this NumPy (1.26 or later) lacks it."""
    obj = np
    for part in path.split("."):
        obj = getattr(obj, part, None)
    return obj



_SUM = dict(_REDUCE, initial=only(np._NoValue))
FUNCTIONS = {
    # reductions
    _np("sum"): Call(g.sum, **_SUM), _np("mean"): Call(g.mean, **_REDUCE), _np("prod"): Call(g.prod, **_SUM),
    _np("max"): Call(g.max, **_SUM), _np("min"): Call(g.min, **_SUM), _np("amax"): Call(g.max, **_SUM),
    _np("amin"): Call(g.min, **_SUM), _np("var"): Call(g.var, **_REDUCE), _np("std"): Call(g.std, **_REDUCE),
    _np("argmax"): Call(g.argmax), _np("argmin"): Call(g.argmin), _np("all"): Call(g.all, **_REDUCE),
    _np("any"): Call(g.any, **_REDUCE), _np("ptp"): Call(g.ptp), _np("count_nonzero"): Call(g.count_nonzero),
    _np("average"): Call(g.average), _np("median"): Call(g.median, overwrite_input=DROP),
    _np("quantile"): Call(g.quantile, overwrite_input=DROP), _np("percentile"): Call(g.percentile, overwrite_input=DROP),
    _np("nansum"): Call(g.nansum, **_SUM), _np("nanmean"): Call(g.nanmean, **_REDUCE),
    # cumulative
    _np("cumsum"): Call(g.cumsum), _np("cumprod"): Call(g.cumprod), _np("diff"): Call(g.diff), _np("gradient"): Call(g.gradient),
    _np("trapezoid"): Call(g.trapezoid), _np("trapz"): Call(g.trapezoid), _np("cumulative_sum"): _cumulative(g.cumsum, 0), _np("cumulative_prod"): _cumulative(g.cumprod, 1),
    # products
    _np("dot"): Call(g.dot), _np("vdot"): Call(g.vdot), _np("inner"): Call(g.inner), _np("outer"): Call(g.outer),
    _np("tensordot"): Call(g.tensordot), _np("einsum"): Call(g.einsum, optimize=DROP, dtype=only(None),
                                                     order=_ORDER, casting=only("safe")),
    _np("kron"): Call(g.kron), _np("cross"): Call(g.cross), _np("trace"): Call(g.trace),
    _np("diagonal"): Call(g.diagonal), _np("diag"): Call(g.diag), _np("diagflat"): _diagflat,
    _np("tril"): Call(g.tril), _np("triu"): Call(g.triu),
    # shape
    _np("reshape"): Call(g.reshape, newshape="shape", order=only("C"), copy=DROP), _np("ravel"): Call(g.ravel),
    _np("transpose"): Call(g.transpose), _np("matrix_transpose"): _matrix_transpose,
    _np("swapaxes"): Call(g.swapaxes), _np("moveaxis"): Call(g.moveaxis), _np("squeeze"): Call(g.squeeze),
    _np("expand_dims"): Call(g.expand_dims), _np("broadcast_to"): Call(g.broadcast_to, subok=DROP),
    _np("broadcast_arrays"): _broadcast_arrays, _np("atleast_1d"): Call(g.atleast_1d), _np("atleast_2d"): Call(g.atleast_2d),
    _np("atleast_3d"): Call(g.atleast_3d), _np("copy"): Call(g.copy, order=_ORDER, subok=DROP),
    _np("astype"): _astype,
    # joining and splitting
    _np("concatenate"): Call(g.concat, casting=only("same_kind")), _np("concat"): Call(g.concat, casting=only("same_kind")),
    _np("stack"): Call(g.stack, casting=only("same_kind")), _np("vstack"): Call(g.vstack, casting=only("same_kind")),
    _np("hstack"): Call(g.hstack, casting=only("same_kind")), _np("dstack"): Call(g.dstack),
    _np("column_stack"): Call(g.column_stack), _np("append"): Call(g.append),
    _np("split"): _split, _np("array_split"): _array_split, _np("unstack"): _unstack,
    _np("hsplit"): _split_on(lambda x: 1 if x.ndim > 1 else 0), _np("vsplit"): _split_on(lambda x: 0),
    _np("dsplit"): _split_on(lambda x: 2),
    # order and rearrangement
    _np("roll"): Call(g.roll), _np("flip"): Call(g.flip), _np("fliplr"): Call(g.fliplr), _np("flipud"): Call(g.flipud),
    _np("rot90"): Call(g.rot90), _np("tile"): Call(g.tile), _np("repeat"): Call(g.repeat),
    _np("sort"): Call(g.sort, stable=DROP), _np("argsort"): Call(g.argsort, stable=DROP), _np("partition"): Call(g.partition),
    _np("searchsorted"): Call(g.searchsorted), _np("nonzero"): Call(g.nonzero), _np("argwhere"): _argwhere,
    _np("flatnonzero"): _flatnonzero,
    # indexing
    _np("take"): Call(g.take, mode=only("raise")), _np("take_along_axis"): Call(g.take_along_axis),
    _np("pad"): Call(g.pad),  # mode and constant_values pass through; the modes gg.pad lacks raise there
    _np("meshgrid"): Call(g.meshgrid, copy=DROP), _np("bincount"): Call(g.bincount),
    _np("unique"): Call(g.unique, ar="x", return_index=only(False), axis=only(None), equal_nan=only(True),
                        sorted=only(True)),
    # elementwise functions that are not ufuncs
    _np("where"): Call(g.where, condition="cond"), _np("clip"): _clip,
    _np("round"): Call(g.round), _np("around"): Call(g.round), _np("nan_to_num"): Call(g.nan_to_num, copy=DROP),
    _np("sinc"): Call(g.sinc), _np("fix"): _fix, _np("real"): _real, _np("imag"): _imag,
    _np("isposinf"): _sign_inf(True), _np("isneginf"): _sign_inf(False),
    # made like a tensor
    _np("zeros_like"): _like(0), _np("ones_like"): _like(1), _np("empty_like"): _like(0), _np("full_like"): _full_like,
    # comparisons of values (no gradient)
    _np("isclose"): _isclose, _np("allclose"): _allclose, _np("array_equal"): _array_equal, _np("array_equiv"): _array_equiv,
    # what a tensor is
    _np("shape"): _shape, _np("ndim"): _ndim, _np("size"): _size, _np("result_type"): _result_type,
    _np("iscomplexobj"): _iscomplexobj, _np("isrealobj"): _isrealobj,
    _np("array2string"): _printed(np.array2string), _np("array_repr"): _printed(np.array_repr),
    _np("array_str"): _printed(np.array_str),
    # numpy.linalg
    _np("linalg.norm"): Call(gl.norm), _np("linalg.det"): Call(gl.det), _np("linalg.inv"): Call(gl.inv),
    _np("linalg.solve"): Call(gl.solve), _np("linalg.slogdet"): Call(gl.slogdet), _np("linalg.cholesky"): Call(gl.cholesky),
    _np("linalg.qr"): Call(gl.qr), _np("linalg.svd"): Call(gl.svd), _np("linalg.eigh"): Call(gl.eigh), _np("linalg.eig"): Call(gl.eig),
    _np("linalg.pinv"): Call(gl.pinv), _np("linalg.lstsq"): Call(gl.lstsq), _np("linalg.matrix_power"): Call(gl.matrix_power),
    _np("linalg.svdvals"): _svdvals, _np("linalg.eigvals"): _eigvals, _np("linalg.eigvalsh"): _eigvalsh,
    _np("linalg.multi_dot"): _multi_dot, _np("linalg.vector_norm"): _vector_norm, _np("linalg.matrix_norm"): _matrix_norm,
    _np("linalg.matmul"): Call(g.matmul), _np("linalg.outer"): Call(g.outer), _np("linalg.tensordot"): Call(g.tensordot),
    _np("linalg.vecdot"): _vecdot, _np("linalg.trace"): _linalg_trace, _np("linalg.diagonal"): _linalg_diagonal,
    _np("linalg.cross"): Call(g.cross), _np("linalg.matrix_transpose"): _matrix_transpose,
}
FUNCTIONS.pop(None, None)  # the entries of functions this NumPy does not have
