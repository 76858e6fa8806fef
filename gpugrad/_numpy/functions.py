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


_SUM = dict(_REDUCE, initial=only(np._NoValue))
FUNCTIONS = {
    # reductions
    np.sum: Call(g.sum, **_SUM), np.mean: Call(g.mean, **_REDUCE), np.prod: Call(g.prod, **_SUM),
    np.max: Call(g.max, **_SUM), np.min: Call(g.min, **_SUM), np.amax: Call(g.max, **_SUM),
    np.amin: Call(g.min, **_SUM), np.var: Call(g.var, **_REDUCE), np.std: Call(g.std, **_REDUCE),
    np.argmax: Call(g.argmax), np.argmin: Call(g.argmin), np.all: Call(g.all, **_REDUCE),
    np.any: Call(g.any, **_REDUCE), np.ptp: Call(g.ptp), np.count_nonzero: Call(g.count_nonzero),
    np.average: Call(g.average), np.median: Call(g.median, overwrite_input=DROP),
    np.quantile: Call(g.quantile, overwrite_input=DROP), np.percentile: Call(g.percentile, overwrite_input=DROP),
    np.nansum: Call(g.nansum, **_SUM), np.nanmean: Call(g.nanmean, **_REDUCE),
    # cumulative
    np.cumsum: Call(g.cumsum), np.cumprod: Call(g.cumprod), np.diff: Call(g.diff), np.gradient: Call(g.gradient),
    np.trapezoid: Call(g.trapezoid), np.cumulative_sum: _cumulative(g.cumsum, 0), np.cumulative_prod: _cumulative(g.cumprod, 1),
    # products
    np.dot: Call(g.dot), np.vdot: Call(g.vdot), np.inner: Call(g.inner), np.outer: Call(g.outer),
    np.tensordot: Call(g.tensordot), np.einsum: Call(g.einsum, optimize=DROP, dtype=only(None),
                                                     order=_ORDER, casting=only("safe")),
    np.kron: Call(g.kron), np.cross: Call(g.cross), np.trace: Call(g.trace),
    np.diagonal: Call(g.diagonal), np.diag: Call(g.diag), np.diagflat: _diagflat,
    np.tril: Call(g.tril), np.triu: Call(g.triu),
    # shape
    np.reshape: Call(g.reshape, order=only("C"), copy=DROP), np.ravel: Call(g.ravel),
    np.transpose: Call(g.transpose), np.matrix_transpose: _matrix_transpose,
    np.swapaxes: Call(g.swapaxes), np.moveaxis: Call(g.moveaxis), np.squeeze: Call(g.squeeze),
    np.expand_dims: Call(g.expand_dims), np.broadcast_to: Call(g.broadcast_to, subok=DROP),
    np.broadcast_arrays: _broadcast_arrays, np.atleast_1d: Call(g.atleast_1d), np.atleast_2d: Call(g.atleast_2d),
    np.atleast_3d: Call(g.atleast_3d), np.copy: Call(g.copy, order=_ORDER, subok=DROP),
    np.astype: _astype,
    # joining and splitting
    np.concatenate: Call(g.concat, casting=only("same_kind")), np.concat: Call(g.concat, casting=only("same_kind")),
    np.stack: Call(g.stack, casting=only("same_kind")), np.vstack: Call(g.vstack, casting=only("same_kind")),
    np.hstack: Call(g.hstack, casting=only("same_kind")), np.dstack: Call(g.dstack),
    np.column_stack: Call(g.column_stack), np.append: Call(g.append),
    np.split: _split, np.array_split: _array_split, np.unstack: _unstack,
    np.hsplit: _split_on(lambda x: 1 if x.ndim > 1 else 0), np.vsplit: _split_on(lambda x: 0),
    np.dsplit: _split_on(lambda x: 2),
    # order and rearrangement
    np.roll: Call(g.roll), np.flip: Call(g.flip), np.fliplr: Call(g.fliplr), np.flipud: Call(g.flipud),
    np.rot90: Call(g.rot90), np.tile: Call(g.tile), np.repeat: Call(g.repeat),
    np.sort: Call(g.sort, stable=DROP), np.argsort: Call(g.argsort, stable=DROP), np.partition: Call(g.partition),
    np.searchsorted: Call(g.searchsorted), np.nonzero: Call(g.nonzero), np.argwhere: _argwhere,
    np.flatnonzero: _flatnonzero,
    # indexing
    np.take: Call(g.take, mode=only("raise")), np.take_along_axis: Call(g.take_along_axis),
    np.pad: Call(g.pad, mode=only("constant"), constant_values=only(0, 0.0)),
    # elementwise functions that are not ufuncs
    np.where: Call(g.where, condition="cond"), np.clip: _clip,
    np.round: Call(g.round), np.around: Call(g.round), np.nan_to_num: Call(g.nan_to_num, copy=DROP),
    np.sinc: Call(g.sinc), np.fix: _fix, np.real: _real, np.imag: _imag,
    np.isposinf: _sign_inf(True), np.isneginf: _sign_inf(False),
    # made like a tensor
    np.zeros_like: _like(0), np.ones_like: _like(1), np.empty_like: _like(0), np.full_like: _full_like,
    # comparisons of values (no gradient)
    np.isclose: _isclose, np.allclose: _allclose, np.array_equal: _array_equal, np.array_equiv: _array_equiv,
    # what a tensor is
    np.shape: _shape, np.ndim: _ndim, np.size: _size, np.result_type: _result_type,
    np.iscomplexobj: _iscomplexobj, np.isrealobj: _isrealobj,
    np.array2string: _printed(np.array2string), np.array_repr: _printed(np.array_repr),
    np.array_str: _printed(np.array_str),
    # numpy.linalg
    np.linalg.norm: Call(gl.norm), np.linalg.det: Call(gl.det), np.linalg.inv: Call(gl.inv),
    np.linalg.solve: Call(gl.solve), np.linalg.slogdet: Call(gl.slogdet), np.linalg.cholesky: Call(gl.cholesky),
    np.linalg.qr: Call(gl.qr), np.linalg.svd: Call(gl.svd), np.linalg.eigh: Call(gl.eigh), np.linalg.eig: Call(gl.eig),
    np.linalg.pinv: Call(gl.pinv), np.linalg.lstsq: Call(gl.lstsq), np.linalg.matrix_power: Call(gl.matrix_power),
    np.linalg.svdvals: _svdvals, np.linalg.eigvals: _eigvals, np.linalg.eigvalsh: _eigvalsh,
    np.linalg.multi_dot: _multi_dot, np.linalg.vector_norm: _vector_norm, np.linalg.matrix_norm: _matrix_norm,
    np.linalg.matmul: Call(g.matmul), np.linalg.outer: Call(g.outer), np.linalg.tensordot: Call(g.tensordot),
    np.linalg.vecdot: _vecdot, np.linalg.trace: _linalg_trace, np.linalg.diagonal: _linalg_diagonal,
    np.linalg.cross: Call(g.cross), np.linalg.matrix_transpose: _matrix_transpose,
}
