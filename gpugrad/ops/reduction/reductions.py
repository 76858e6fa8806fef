"""Reductions over axes: sum mean max min prod logsumexp var std argmax argmin, and sum_to.

Every reduction takes ``axis`` (None for all axes, an int or a tuple, negative
counting from the end) and ``keepdims``. A reduction's gradient spreads ``dy``
back over the reduced axes: :func:`expand_to` broadcasts it (a view that costs
no memory), or :func:`keepdims_grad` reshapes it so a broadcasting multiply
does the spreading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import builtins

import numpy as np

from ...backend import CPU, cpu_fast
from ...errors import ShapeError
from ...registry import NotDifferentiable, RegisterGradient
from .. import _autocast, replay
from ..elementwise.arithmetic import multiply, where
from ..base import emit, float_dtype_of, public_ops, unary
from ..elementwise.math import exp, reciprocal
from ..array.shape import broadcast_to, reshape
from ... import _dtypes as _dt
from ... import mixed_precision as _mp

if TYPE_CHECKING:
    from ..._typing import Axis, Shape, TensorLike
    from ...tensor import Tensor




_ALL_AXES = tuple(tuple(range(n)) for n in range(33))  # axis=None, by ndim


def normalize_axis(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (all axes for ``None``)."""
    if axis is None:
        return _ALL_AXES[ndim] if ndim < len(_ALL_AXES) else tuple(range(ndim))
    if axis.__class__ is int and -ndim <= axis < ndim:
        return (axis % ndim,)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:  # NumPy's rule: a 0-d tensor has no axis 0
            raise ShapeError(f"axis {a} is out of range for a tensor of {ndim} dimensions")
        out.append(a % ndim)
    return tuple(sorted(set(out)))


def kept_shape(shape, axes):
    """``shape`` with each reduced axis set to 1 (the keepdims shape)."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def expand_to(dy, x_shape, axes):
    """``dy`` of a reduction over ``axes`` broadcast back to ``x_shape``."""
    if dy._data.ndim:  # a 0-d dy (of a reduction over every axis) broadcasts as it is
        kept = kept_shape(x_shape, axes)
        if dy._data.shape != kept:
            dy = reshape(dy, kept)
    return broadcast_to(dy, x_shape)


def sum(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Sum over ``axis`` (all axes by default).

    Example:
        >>> import gpugrad as gg
        >>> gg.sum(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=0).numpy().tolist()
        [4.0, 6.0]
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    return emit("Sum", sum_data(x._data, x._device, axes, keepdims), x._device, (x,), {"axes": axes})


def sum_data(d, device, axes, keepdims=False):
    """The array ``sum`` computes: array ``d`` on ``device`` summed over ``axes`` (a tuple)."""
    if _dt.is_low(d.dtype):  # accumulated in float32 (ml_dtypes' bfloat16 sum accumulates in bfloat16)
        return _dt.narrow(sum_data(_dt.wide(d), device, axes, keepdims), d)
    if device is CPU:
        return cpu_fast.sum(d, axes, keepdims)
    return d.sum(axis=axes, keepdims=keepdims)


def mean_data(d, device, axes, keepdims=False):
    """The array ``mean`` computes: array ``d`` on ``device`` averaged over ``axes`` (a tuple)."""
    if _dt.is_low(d.dtype):  # in float32, returned in d's dtype
        return _dt.narrow(mean_data(_dt.wide(d), device, axes, keepdims), d)
    if device is CPU:
        return cpu_fast.mean(d, axes, keepdims, group_size(d.shape, axes))
    out = d.mean(axis=axes, keepdims=keepdims)
    if out.dtype != d.dtype and _dt.floating(d.dtype):
        out = out.astype(d.dtype)  # not astype(copy=False) on a NumPy scalar: it leaks ~55 B a call
    return out


replay.reduction("Sum", "add", data=sum_data)  # cpu_fast.sum: np.add.reduce


@RegisterGradient("Sum", reads_outputs=False)
def _sum_grad(op, dy):
    return (expand_to(dy, op.inputs[0].shape, op.attrs["axes"]),)


def sum_to(x: TensorLike, shape: Shape) -> Tensor:
    """Sum ``x`` over the axes broadcasting added, down to ``shape``.

    The inverse of :func:`broadcast_to`; the tape uses it to undo broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.ops.sum_to(gg.ones((3, 2)), (1, 2)).numpy().tolist()
        [[3.0, 3.0]]
    """
    x = unary(x)
    shape = tuple(shape)
    if x.shape == shape:
        return x
    lead = x.ndim - len(shape)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(shape, x.shape[lead:])):
        raise ShapeError(f"op 'SumTo' cannot reduce shape {x.shape} to {shape}")
    kept = tuple(lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    if not kept:  # only leading axes go (a bias's gradient): one Sum, no Reshape
        return sum(x, axis=tuple(range(lead)))
    return reshape(sum(x, axis=tuple(range(lead)) + kept), shape)


def mean(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (all axes by default).

    Example:
        >>> import gpugrad as gg
        >>> gg.mean(gg.tensor([1.0, 2.0, 6.0])).item()
        3.0
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    return emit("Mean", mean_data(x._data, x._device, axes, keepdims), x._device, (x,), {"axes": axes})


replay.reduction("Mean", "add", count=lambda shape, axes: group_size(shape, axes),  # cpu_fast.mean's steps
                 data=mean_data)


@RegisterGradient("Mean", reads_outputs=False)
def _mean_grad(op, dy):
    x = op.inputs[0]
    axes = op.attrs["axes"]
    count = 1
    for a in axes:
        count *= x.shape[a]
    return (expand_to(dy / builtins.max(count, 1), x.shape, axes),)


def keepdims_grad(dy, x_shape, axes):
    """``dy`` of a reduction reshaped to the keepdims shape, ready to broadcast against x."""
    kept = kept_shape(x_shape, axes)
    return dy if dy.shape == kept else reshape(dy, kept)


def group_size(shape, axes):
    """How many elements each reduction over ``axes`` combines."""
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _empty_error(op_type, x, axes):
    return ShapeError(f"op {op_type!r} cannot reduce shape {x.shape} over axes {axes}: "
                      f"a reduction over no elements has no identity")


# ---------------------------------------------------------------- max, min


def max(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Largest element over ``axis``; at ties the gradient is split evenly.

    Example:
        >>> import gpugrad as gg
        >>> gg.max(gg.tensor([[1.0, 5.0], [3.0, 2.0]]), axis=1).numpy().tolist()
        [5.0, 3.0]
        >>> gg.tensor([[1.0, 5.0], [3.0, 2.0]]).max(axis=0, keepdims=True).shape
        (1, 2)
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    try:
        out = x._data.max(axis=axes, keepdims=keepdims)
    except ValueError:
        raise _empty_error("Max", x, axes) from None
    return emit("Max", out, x._device, (x,), {"axes": axes})


def min(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001 - NumPy's name
    """Smallest element over ``axis``; at ties the gradient is split evenly.

    Example:
        >>> import gpugrad as gg
        >>> gg.min(gg.tensor([[1.0, 5.0], [3.0, 2.0]]), axis=1).numpy().tolist()
        [1.0, 2.0]
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    try:
        out = x._data.min(axis=axes, keepdims=keepdims)
    except ValueError:
        raise _empty_error("Min", x, axes) from None
    return emit("Min", out, x._device, (x,), {"axes": axes})


replay.reduction("Max", "maximum", nonempty=True,
                 data=lambda d, device, axes, keepdims: d.max(axis=axes, keepdims=keepdims))  # max's own call


@RegisterGradient("Max")
@RegisterGradient("Min")
def _extremum_grad(op, dy):
    # dy goes to the elements equal to the result, 1/k each for a k-way tie (as TensorFlow); selected,
    # not multiplied by a 0/1 mask, so the others get 0 also where dy is inf (sqrt(max(x)) at 0)
    x = op.inputs[0]
    axes = op.attrs["axes"]
    kept = kept_shape(x.shape, axes)
    xp = x._device.xp
    hit = x._data == op.outputs[0]._data.reshape(kept)
    share = xp.reciprocal(xp.maximum(hit.sum(axis=axes, keepdims=True), 1).astype(float_dtype_of(x._data)))  # 1/k
    return (where(hit, multiply(keepdims_grad(dy, x.shape, axes), share), 0.0),)


# ---------------------------------------------------------------- prod


def prod(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Product of the elements over ``axis``; its gradient is exact at zeros.

    Example:
        >>> import gpugrad as gg
        >>> gg.prod(gg.tensor([[1.0, 2.0], [3.0, 4.0]]), axis=1).numpy().tolist()
        [2.0, 12.0]
        >>> x = gg.tensor([0.0, 2.0, 3.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x.prod()
        >>> tape.gradient(y, x).numpy().tolist()
        [6.0, 0.0, 0.0]
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    out = _dt.narrow(_dt.wide(x._data).prod(axis=axes, keepdims=keepdims), x._data)  # low dtypes: in float32
    return emit("Prod", out, x._device, (x,), {"axes": axes})


@RegisterGradient("Prod", reads_outputs=False)
def _prod_grad(op, dy):
    # d prod / d x_i = the product of the others in x_i's group; no division by x_i
    x = op.inputs[0]
    axes = op.attrs["axes"]
    return (multiply(keepdims_grad(dy, x.shape, axes), prod_others(x, axes)),)


def _prod_others_array(xp, a, axes):
    """Per element, the product of the other elements of its group: exclusive cumprods."""
    if not axes:
        return xp.ones_like(a)  # groups of one: the empty product
    rest = [i for i in range(a.ndim) if i not in axes]
    perm = rest + list(axes)
    moved = a.transpose(perm)
    n = group_size(a.shape, axes)
    if n == 0:
        return xp.empty_like(a)
    flat = moved.reshape(moved.shape[:len(rest)] + (n,))
    ones = xp.ones(flat.shape[:-1] + (1,), dtype=flat.dtype)
    before = xp.concatenate([ones, xp.cumprod(flat[..., :-1], axis=-1)], axis=-1)
    after = xp.concatenate([xp.cumprod(flat[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
    inverse = [0] * a.ndim
    for i, p in enumerate(perm):
        inverse[p] = i
    return (before * after).reshape(moved.shape).transpose(inverse)


def prod_others(x: TensorLike, axis: Axis = None) -> Tensor:
    """For each element, the product of the other elements reduced with it over ``axis``.

    The gradient of :func:`prod`, computed from prefix and suffix products, so
    zeros need no special case.

    Example:
        >>> import gpugrad as gg
        >>> gg.ops.prod_others(gg.tensor([2.0, 0.0, 5.0])).numpy().tolist()
        [0.0, 10.0, 0.0]
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    return emit("ProdOthers", _prod_others_array(x._device.xp, x._data, axes), x._device, (x,),
                {"axes": axes})


@RegisterGradient("ProdOthers")
def _prod_others_grad(op, g):
    # H_j = sum_{i != j} g_i prod_{k not in {i, j}} x_k, by the count Z of zeros in the group
    # (S = sum of g_i / x_i over the non-zero x_i, P = product of the non-zero x_i):
    #   Z = 0: H = others * (S - g / x)
    #   Z = 1: H = P * S at the zero, g_zero * P / x elsewhere
    #   Z = 2: H = g_(other zero) * P at the zeros, 0 elsewhere;  Z > 2: H = 0
    # NOTE: exact values (so second derivatives of prod are exact at zeros); differentiating
    # H once more treats the zero pattern as fixed, exact only where x has no zeros.
    x = op.inputs[0]
    axes = op.attrs["axes"]
    others = op.outputs[0]
    zero = x._data == 0
    if not zero.any():
        inv = reciprocal(x)
        g_over_x = multiply(g, inv)
        return (multiply(others, sum(g_over_x, axis=axes, keepdims=True) - g_over_x),)
    count = zero.sum(axis=axes, keepdims=True)
    inv = reciprocal(where(zero, 1.0, x))
    g_over_x = where(zero, 0.0, g * inv)
    s = sum(g_over_x, axis=axes, keepdims=True)
    p = prod(where(zero, 1.0, x), axis=axes, keepdims=True)
    g_zero = sum(where(zero, g, 0.0), axis=axes, keepdims=True)
    h0 = others * (s - g_over_x)
    h1 = where(zero, p * s, g_zero * p * inv)
    h2 = where(zero, (g_zero - g) * p, 0.0)
    return (where(count == 0, h0, where(count == 1, h1, where(count == 2, h2, 0.0))),)


# ---------------------------------------------------------------- logsumexp


def logsumexp(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``axis``, without overflow (the max is shifted out first).

    Example:
        >>> import gpugrad as gg
        >>> round(gg.logsumexp(gg.tensor([1000.0, 1000.0])).item(), 2)
        1000.69
    """
    if _mp.active and (out := _autocast.float32_op(logsumexp, (x,), axis=axis, keepdims=keepdims)) is not None:
        return out
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    xp = x._device.xp
    a = _dt.wide(x._data)  # float16 and bfloat16 in float32
    try:
        shift = a.max(axis=axes, keepdims=True)
    except ValueError:
        raise _empty_error("LogSumExp", x, axes) from None
    shift = xp.where(xp.isfinite(shift), shift, 0)  # a group of all -inf stays -inf, not NaN
    with np.errstate(divide="ignore"):  # log(0) = -inf is the answer there, not a fault
        out = xp.log(xp.exp(a - shift).sum(axis=axes, keepdims=True)) + shift
    if not keepdims:
        out = out.reshape([n for i, n in enumerate(a.shape) if i not in axes])
    return emit("LogSumExp", _dt.narrow(out, x._data), x._device, (x,), {"axes": axes})


@RegisterGradient("LogSumExp")
def _logsumexp_grad(op, dy):
    # d lse / d x = exp(x - lse) = softmax(x) over the reduced axes
    x = op.inputs[0]
    axes = op.attrs["axes"]
    lse = keepdims_grad(op.outputs[0], x.shape, axes)
    return (multiply(keepdims_grad(dy, x.shape, axes), exp(x - lse)),)


# ---------------------------------------------------------------- var, std


def var(x: TensorLike, axis: Axis = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Variance over ``axis``: mean squared deviation, divided by ``N - ddof`` (NumPy's default 0).

    Example:
        >>> import gpugrad as gg
        >>> gg.var(gg.tensor([1.0, 2.0, 3.0, 4.0])).item()
        1.25
        >>> gg.tensor([1.0, 2.0, 3.0, 4.0]).var(ddof=1).item()
        1.6666666269302368
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    out = _dt.wide(x._data).var(axis=axes, keepdims=keepdims, ddof=ddof)  # float16, bfloat16: in float32
    if out.dtype != x._data.dtype and _dt.floating(x._data.dtype):
        out = out.astype(x._data.dtype)
    return emit("Var", out, x._device, (x,), {"axes": axes, "ddof": ddof})


def _deviation_scale(op, factor):
    """``x - mean(x)`` over the op's axes, and ``factor / (N - ddof)``."""
    x = op.inputs[0]
    axes = op.attrs["axes"]
    n = group_size(x.shape, axes) - op.attrs["ddof"]
    centered = x - mean(x, axis=axes, keepdims=True)
    return centered, (factor / n if n > 0 else float("nan"))


@RegisterGradient("Var", reads_outputs=False)
def _var_grad(op, dy):
    # d var / d x_i = 2 (x_i - mean) / (N - ddof)
    centered, scale = _deviation_scale(op, 2.0)
    return (multiply(keepdims_grad(dy, centered.shape, op.attrs["axes"]), centered * scale),)


def std(x: TensorLike, axis: Axis = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Standard deviation over ``axis``: the square root of :func:`var`.

    Its gradient is 0 where the result is 0: over one element (std is constant
    there, so that is exact) and where all elements are equal (a kink, where 0
    is the subgradient PyTorch picks too), not 0 / 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.std(gg.tensor([[1.0, 3.0], [2.0, 2.0]]), axis=1).numpy().tolist()
        [1.0, 0.0]
        >>> x = gg.tensor([[1.0, 3.0], [2.0, 2.0]])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     s = gg.std(x, axis=1)
        >>> tape.gradient(s, x).numpy().tolist()
        [[-0.5, 0.5], [0.0, 0.0]]
    """
    x = unary(x)
    axes = normalize_axis(axis, x.ndim)
    out = _dt.wide(x._data).std(axis=axes, keepdims=keepdims, ddof=ddof)  # float16, bfloat16: in float32
    if out.dtype != x._data.dtype and _dt.floating(x._data.dtype):
        out = out.astype(x._data.dtype)
    return emit("Std", out, x._device, (x,), {"axes": axes, "ddof": ddof})


@RegisterGradient("Std")
def _std_grad(op, dy):
    # d std / d x_i = (x_i - mean) / ((N - ddof) std), taken as 0 where std is 0 (see std)
    centered, scale = _deviation_scale(op, 1.0)
    return (multiply(keepdims_grad(_over_std(dy, op.outputs[0]), centered.shape, op.attrs["axes"]),
                     centered * scale),)


def _over_std(dy, std):
    """``dy / std``, 0 where std is 0 (0 / 0 there), with no 0 in a denominator for an outer tape."""
    flat = std._data == 0
    return where(flat, 0.0, dy / where(flat, 1.0, std))


# ---------------------------------------------------------------- argmax, argmin


def _arg_reduce(x, method, op_type, axis, keepdims):
    x = unary(x)
    a = x._data
    if a.size == 0 and (axis is None or a.ndim == 0 or not group_size(a.shape, normalize_axis(axis, a.ndim))):
        raise ShapeError(f"op {op_type!r} of an empty tensor of shape {x.shape} has no answer")
    if axis is None or a.ndim == 0:
        out = getattr(a, method)()
        if keepdims:
            out = out.reshape((1,) * a.ndim)
    else:
        axes = normalize_axis(axis, a.ndim)
        if len(axes) == 1:
            out = getattr(a, method)(axis=axes[0], keepdims=keepdims)
        elif not axes:
            out = x._device.xp.zeros(a.shape, dtype="int64")
        else:  # several axes: the flat index within the reduced axes, in C order
            rest = [i for i in range(a.ndim) if i not in axes]
            moved = a.transpose(rest + list(axes))
            out = getattr(moved.reshape(moved.shape[:len(rest)] + (-1,)), method)(axis=-1)
            if keepdims:
                out = out.reshape(kept_shape(a.shape, axes))
    out = x._device.xp.asarray(out).astype("int64", copy=False)
    return emit(op_type, out, x._device, (x,), {"axis": axis})


def argmax(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """int64 index of the largest element over ``axis`` (flat index for ``None``); no gradient.

    With several axes the index is into those axes flattened in C order.

    Example:
        >>> import gpugrad as gg
        >>> gg.argmax(gg.tensor([[1.0, 5.0], [3.0, 2.0]]), axis=1).numpy().tolist()
        [1, 0]
        >>> gg.tensor([[1.0, 5.0], [3.0, 2.0]]).argmax().item()
        1
    """
    return _arg_reduce(x, "argmax", "ArgMax", axis, keepdims)


def argmin(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """int64 index of the smallest element over ``axis`` (flat index for ``None``); no gradient.

    Example:
        >>> import gpugrad as gg
        >>> gg.argmin(gg.tensor([[1.0, 5.0], [3.0, 2.0]]), axis=1).numpy().tolist()
        [0, 1]
    """
    return _arg_reduce(x, "argmin", "ArgMin", axis, keepdims)


NotDifferentiable("ArgMax")
NotDifferentiable("ArgMin")


TENSOR_METHODS = {"sum": sum, "mean": mean, "max": max, "min": min, "prod": prod,
                  "logsumexp": logsumexp, "var": var, "std": std, "argmax": argmax, "argmin": argmin}

__all__ = public_ops(globals(), not_ops=('normalize_axis', 'kept_shape', 'expand_to', 'sum_data', 'mean_data', 'keepdims_grad', 'group_size'))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "sum", "sum_to", "mean", "max", "min", "prod", "prod_others", "logsumexp", "var", "std", "argmax", "argmin"
    ]
