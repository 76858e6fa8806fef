"""Scatter ops with PyTorch's semantics: scatter, scatter_add, index_add, scatter_reduce; and one_hot, masked_fill.

PyTorch's scatter addresses ``out[index[i][j]][j]`` (``axis=0``): for every position ``p`` of ``index``,
the element of the output at ``p`` with ``p[axis]`` replaced by ``index[p]``. Here that address is one
NumPy key (:func:`_scatter_key`: ``index`` at ``axis``, a broadcast ``arange`` at every other axis), so
``x[key]`` is ``gather`` and a scatter-add to ``key`` is ``GetItemGrad`` (``np.add.at``; ``cupy.add.at``
on a GPU). ``scatter_add``, ``index_add`` and ``scatter_reduce``'s sum and mean are compositions of those
recorded ops; ``scatter`` (op ``Scatter``) and ``scatter_reduce``'s max and min (op ``ScatterReduce``) have
rules of their own, written in gpugrad ops so that they differentiate again. Index ranges are checked
as PyTorch checks them (``[0, size)``): at once on the CPU, on the device at the next host read on a GPU
(:mod:`gpugrad._device_checks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ... import _device_checks, _dtypes as _dt
from ..._tracing import state as _trace
from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor
from ..elementwise.arithmetic import add, divide, multiply, where
from ..base import emit, public_ops, unary
from .indexing import _getitem, _index_array, _to_device, getitem, getitem_grad
from .shape import normalize_axis_index

if TYPE_CHECKING:
    from ..._typing import DTypeLike, TensorLike


# ---------------------------------------------------------------- addressing


def _scatter_key(op_type, x, axis, index):
    """PyTorch's scatter address as a NumPy key on ``x``'s device, ``index`` (a device array) and ``axis``.

    ``key`` holds ``index`` at ``axis`` and ``arange(index.shape[d])`` (broadcast) at every other axis ``d``.
    """
    if x.ndim == 0:
        raise ShapeError(f"op {op_type!r} needs a tensor of at least one dimension, not a 0-d one")
    dev = x._device
    idx, host = _index_array(op_type, index, dev)
    if idx.dtype.kind == "b":
        raise DTypeError(f"op {op_type!r} takes integer indices, not booleans")
    axis = normalize_axis_index(axis, x.ndim, op_type, x.shape)
    if idx.ndim != x.ndim:
        raise ShapeError(f"op {op_type!r}: index of shape {idx.shape} must have as many dimensions as the "
                         f"tensor of shape {x.shape} (as in PyTorch)")
    for d, (n, m) in enumerate(zip(idx.shape, x.shape)):
        if d != axis and n > m:
            raise ShapeError(f"op {op_type!r}: index of shape {idx.shape} is larger than the tensor of shape "
                             f"{x.shape} at axis {d} (only axis {axis} may differ)")
    _device_checks.check(idx, 0, x.shape[axis], f"op {op_type!r}: index {{value}} is out of bounds for axis "
                                                f"{axis} with size {x.shape[axis]} (tensor shape {x.shape})")
    idx = _to_device(idx, host, dev)
    xp = dev.xp
    nd = idx.ndim
    key = tuple(idx if d == axis else xp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1))
                for d, n in enumerate(idx.shape))
    return key, idx


def _source(op_type, x, src, shape, name="src"):
    """``src`` (a tensor of ``x``'s dtype, or a number) cut to ``shape`` (the index's), as PyTorch reads it.

    A number is broadcast to ``shape`` in ``x``'s dtype; a tensor needs ``x``'s dtype and ndim and at least
    ``shape`` along every axis (its first ``shape`` elements are the ones read, a recorded slice).
    """
    if isinstance(src, (int, float, bool, np.number)):
        return Tensor._wrap(x._device.xp.full(shape, src, dtype=x._data.dtype), x._device)
    src = unary(src, x)
    if src._device is not x._device:
        from ...errors import DeviceError
        raise DeviceError(f"op {op_type!r} got {name} on {src.device!r} for a tensor on {x.device!r}")
    if src._data.dtype != x._data.dtype:
        raise DTypeError(f"op {op_type!r}: {name} of dtype {src._data.dtype} must have the tensor's dtype "
                         f"{x._data.dtype} (as in PyTorch); cast one")
    if src.ndim != len(shape) or any(s < n for s, n in zip(src.shape, shape)):
        raise ShapeError(f"op {op_type!r}: {name} of shape {src.shape} must have {len(shape)} dimensions and be "
                         f"at least as large as index of shape {tuple(shape)} along each")
    if tuple(src.shape) != tuple(shape):
        src = getitem(src, tuple(slice(0, n) for n in shape))
    return src


def _touched(x, key):
    """A boolean array of ``x``'s shape, True where ``key`` writes."""
    t = x._device.xp.zeros(x.shape, dtype=bool)
    t[key] = True
    return t


# ---------------------------------------------------------------- scatter


def scatter(x: TensorLike, axis: int, index: TensorLike, src: TensorLike | float | None = None,
            value: float | None = None) -> Tensor:
    """``x`` with ``src`` (or the number ``value``) written at ``index`` along ``axis``, as ``torch.scatter``.

    For ``axis=0``: ``out[index[i, j], j] = src[i, j]``. ``index`` has ``x``'s number of dimensions;
    ``src`` is at least as large as ``index``. Where ``index`` repeats a position, which write wins is
    unspecified (as in PyTorch). Gradient as PyTorch's: ``x`` gets ``dy`` with the written positions
    zeroed, ``src`` gets ``dy`` gathered at ``index`` (every duplicate too).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.zeros((2, 3))
        >>> gg.scatter(x, 1, [[2], [0]], gg.tensor([[5.0], [7.0]])).numpy().tolist()
        [[0.0, 0.0, 5.0], [7.0, 0.0, 0.0]]
        >>> gg.scatter(x, 0, [[1, 0, 1]], value=1.0).numpy().tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    """
    x = unary(x, src)
    if (src is None) == (value is None):
        raise TypeError("op 'Scatter' takes one of src (a tensor) or value (a number)")
    key, idx = _scatter_key("Scatter", x, axis, index)
    src = _source("Scatter", x, value if src is None else src, idx.shape)
    data = x._data.copy()
    if idx.size:
        data[key] = src._data
    return emit("Scatter", data, x._device, (x, src), {"key": key})


@RegisterGradient("Scatter", reads_outputs=False)
def _scatter_grad(op, dy):
    # PyTorch: grad_self = grad.scatter(dim, index, 0); grad_src = grad.gather(dim, index)
    key = op.attrs["key"]
    kept = ~_touched(dy, key)
    return where(kept, dy, 0.0), _getitem(dy, key, True)


# ---------------------------------------------------------------- scatter_add, index_add


def scatter_add(x: TensorLike, axis: int, index: TensorLike, src: TensorLike) -> Tensor:
    """``x`` with ``src`` added at ``index`` along ``axis`` (repeats add up), as ``torch.scatter_add``.

    For ``axis=0``: ``out[index[i, j], j] += src[i, j]``. Gradient: ``dy`` to ``x``, ``dy`` gathered at
    ``index`` to ``src``.

    Example:
        >>> import gpugrad as gg
        >>> gg.scatter_add(gg.zeros(3), 0, [0, 2, 0], gg.tensor([1.0, 2.0, 3.0])).numpy().tolist()
        [4.0, 0.0, 2.0]
    """
    x = unary(x, src)
    key, idx = _scatter_key("ScatterAdd", x, axis, index)
    src = _source("ScatterAdd", x, src, idx.shape)
    return add(x, getitem_grad(src, key, x.shape, True))


def index_add(x: TensorLike, axis: int, index: TensorLike, source: TensorLike, alpha: float = 1) -> Tensor:
    """``x`` with ``alpha * source[..., i, ...]`` added to ``x[..., index[i], ...]`` along ``axis``, as
    ``torch.index_add`` (repeated indices add up).

    ``index`` is 1-D; ``source`` has ``x``'s shape but ``len(index)`` along ``axis``.

    Example:
        >>> import gpugrad as gg
        >>> out = gg.index_add(gg.zeros((3, 2)), 0, [2, 0, 2], gg.ones((3, 2)), alpha=2.0)
        >>> out.numpy().tolist()
        [[2.0, 2.0], [0.0, 0.0], [4.0, 4.0]]
    """
    x = unary(x, source)
    source = unary(source, x)
    if x.ndim == 0:
        raise ShapeError("op 'IndexAdd' needs a tensor of at least one dimension, not a 0-d one")
    axis = normalize_axis_index(axis, x.ndim, "IndexAdd", x.shape)
    dev = x._device
    idx, host = _index_array("IndexAdd", index, dev)
    if idx.dtype.kind == "b" or idx.ndim != 1:
        raise ShapeError(f"op 'IndexAdd' takes a 1-D integer index, not a {idx.dtype} array of shape {idx.shape}")
    want = x.shape[:axis] + (idx.shape[0],) + x.shape[axis + 1:]
    if tuple(source.shape) != want:
        raise ShapeError(f"op 'IndexAdd': source of shape {source.shape} must have shape {want} (x's shape with "
                         f"len(index) along axis {axis})")
    if source._data.dtype != x._data.dtype:
        raise DTypeError(f"op 'IndexAdd': source of dtype {source._data.dtype} must have x's dtype {x._data.dtype}")
    _device_checks.check(idx, 0, x.shape[axis], f"op 'IndexAdd': index {{value}} is out of bounds for axis "
                                                f"{axis} with size {x.shape[axis]} (tensor shape {x.shape})")
    idx = _to_device(idx, host, dev)
    if alpha != 1:
        source = multiply(source, alpha)
    return add(x, getitem_grad(source, (slice(None),) * axis + (idx,), x.shape, True))


# ---------------------------------------------------------------- scatter_reduce

_REDUCES = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min", "max": "max", "min": "min", "prod": "prod"}


def scatter_reduce(x: TensorLike, axis: int, index: TensorLike, src: TensorLike, reduce: str,
                   include_self: bool = True) -> Tensor:
    """``x`` with ``src`` reduced into it at ``index`` along ``axis``, as ``torch.scatter_reduce``.

    ``reduce`` is ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"`` (``"max"``/``"min"`` too). With
    ``include_self`` the elements of ``x`` at the written positions take part; without, those positions
    hold the reduction of ``src`` alone. Positions no index writes keep ``x``. Integer ``"mean"`` rounds
    down, as PyTorch's. Gradients as PyTorch's (derivatives.yaml, ``scatter_reduce_backward``): for
    ``amax``/``amin`` ``dy`` goes to the elements (of ``x`` and ``src``) equal to the result, split
    evenly among ties. One difference: without ``include_self`` an element of ``x`` at a written position is
    not among the ties (it takes no part), where PyTorch 2.x counts it when it equals the result and so gives
    ``src`` less than ``dy`` there; gpugrad's is the derivative of what it computes. For ``prod`` (op
    ``ScatterProd``) an element's gradient is ``dy`` times the product of the other elements reduced at its
    position, zeros included (PyTorch's rule, computed without dividing by a zero); its second derivative is
    exact too where several zeros meet (PyTorch refuses that double backward).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 1.0, 1.0])
        >>> src = gg.tensor([4.0, 2.0, 6.0, 0.0])
        >>> gg.scatter_reduce(x, 0, [0, 0, 2, 2], src, "amax").numpy().tolist()
        [4.0, 1.0, 6.0]
        >>> gg.scatter_reduce(x, 0, [0, 0, 2, 2], src, "mean", include_self=False).numpy().tolist()
        [3.0, 1.0, 3.0]
        >>> gg.scatter_reduce(x + 1.0, 0, [0, 0, 2, 2], src, "prod").numpy().tolist()
        [16.0, 2.0, 0.0]
    """
    kind = _REDUCES.get(reduce) if isinstance(reduce, str) else None
    if kind is None:
        raise ValueError(f"op 'ScatterReduce' takes reduce 'sum', 'prod', 'mean', 'amax' or 'amin', not {reduce!r}")
    x = unary(x, src)
    key, idx = _scatter_key("ScatterReduce", x, axis, index)
    src = _source("ScatterReduce", x, src, idx.shape)
    if kind in ("max", "min"):
        return _scatter_extreme(x, src, key, kind, include_self)
    if kind == "prod":
        return _scatter_prod(x, src, key, bool(include_self))
    added = getitem_grad(src, key, x.shape, True)
    touched = _touched(x, key)
    base = x if include_self else where(touched, 0, x)
    total = add(base, added)
    if kind == "sum":
        return total
    xp = x._device.xp
    count = xp.zeros(x.shape, dtype=np.int64)
    if idx.size:
        xp.add.at(count, key, xp.ones(idx.shape, dtype=np.int64))
    count = count + (1 if include_self else 0)
    if not _dt.inexact(x._data.dtype):  # PyTorch: integer means round down; integers carry no gradient
        data = xp.where(touched, xp.floor_divide(total._data, xp.maximum(count, 1)), x._data)
        return Tensor._wrap(data.astype(x._data.dtype), x._device)
    denom = Tensor._wrap(xp.maximum(count, 1).astype(x._data.dtype), x._device)
    return where(touched, divide(total, denom), x)


def _extreme_dtype(dtype):
    """The dtype CuPy's ``maximum.at``/``minimum.at`` compute ``dtype`` in (float32 for 16-bit floats)."""
    if _dt.inexact(dtype):
        return np.dtype(np.float32) if dtype.itemsize < 4 else dtype
    if dtype.kind == "b":
        raise DTypeError("op 'ScatterReduce' with amax/amin takes numbers, not booleans")
    return dtype if dtype.itemsize >= 4 else np.dtype(np.int64 if dtype.kind == "i" else np.uint64)


def _lowest(dtype, kind):
    if _dt.inexact(dtype):
        return -np.inf if kind == "max" else np.inf
    info = np.iinfo(dtype)
    return info.min if kind == "max" else info.max


def _scatter_extreme(x, src, key, kind, include_self, fill=None):
    """The op ``ScatterReduce``: ``x`` (its written positions reset to the reduction's identity, or to ``fill``,
    without ``include_self``) with ``src`` reduced in at ``key`` by max or min."""
    xp = x._device.xp
    work = _extreme_dtype(x._data.dtype)
    out = x._data.astype(work, copy=True)
    if src._data.size:
        if not include_self:
            out[key] = _lowest(work, kind)
        (xp.maximum if kind == "max" else xp.minimum).at(out, key, src._data.astype(work, copy=False))
    out = _dt.narrow(out, x._data) if _dt.inexact(x._data.dtype) else out.astype(x._data.dtype)
    return emit("ScatterReduce", out, x._device, (x, src), {"key": key, "reduce": kind, "include_self": include_self})


@RegisterGradient("ScatterReduce")
def _scatter_reduce_grad(op, dy):
    # PyTorch (amax/amin): value = result.gather(index); N = (x == result) + scatter_add((src == value) at index);
    # dx = (x == result) dy / N; dsrc = (src == value) gather(dy / N). Without include_self the written
    # positions of x take no part (not in the result, so not in N either, unlike PyTorch). The masks are
    # constants: the rule is linear in dy.
    x, src = op.inputs
    key, include_self = op.attrs["key"], op.attrs["include_self"]
    xp = dy._device.xp
    result = op.outputs[0]._data
    self_is = x._data == result
    if not include_self:
        self_is &= ~_touched(x, key)
    src_is = src._data == result[key]
    count_dtype = np.float64 if dy._data.dtype == np.float64 else np.float32
    n = self_is.astype(count_dtype)
    if src_is.size:
        xp.add.at(n, key, src_is.astype(count_dtype))
    share = 1.0 / xp.maximum(n, 1.0)
    dt = dy._data.dtype
    dx = multiply(dy, Tensor._wrap((self_is * share).astype(dt), dy._device))
    dsrc = multiply(_getitem(multiply(dy, Tensor._wrap(share.astype(dt), dy._device)), key, True),
                    Tensor._wrap(src_is.astype(dt), dy._device))
    return dx, dsrc


# ---------------------------------------------------------------- scatter_reduce prod


def _flat_positions(key, shape):
    """The positions ``key`` addresses in the flattened array of ``shape``, one per element of the index."""
    strides = np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
    flat = 0
    for k, stride in zip(key, strides):  # the index itself has the full shape, the aranges broadcast
        flat = flat + k.astype(np.int64) * int(stride)
    return flat


def _group_products(xp, dest, values):
    """``(dest sorted, products)``: for each element of ``values`` (1-D), in the order of ``dest`` sorted, the
    product of all the values that share its destination (each group's product in all its elements, so that
    an assignment ``out[dest] = products`` writes one value per destination whatever the order).

    Two segmented scans of log2(n) whole-array steps each (Hillis and Steele): prefix products within each
    group, so that its last element holds the group's product, then that value copied leftwards to every
    element of the group. No ``multiply.at`` (CuPy has none) and no host read.
    """
    order = xp.argsort(dest, kind="stable") if xp is np else xp.argsort(dest)  # CuPy's sort is stable
    d, v = dest[order], values[order]
    n, step = d.size, 1
    while step < n:  # v[i] = product of v[max(start, i - 2 step + 1) .. i]
        same = d[step:] == d[:-step]
        v = xp.concatenate([v[:step], xp.where(same, v[step:] * v[:-step], v[step:])])
        step *= 2
    step = 1
    while step < n:  # v[i] = v[min(i + 2 step - 1, end)]: the group's last element, its product
        same = d[:-step] == d[step:]
        v = xp.concatenate([xp.where(same, v[step:], v[:-step]), v[n - step:]])
        step *= 2
    return d, v


def _scatter_prod(x, src, key, include_self):
    """The op ``ScatterProd``: ``x`` (or, without ``include_self``, 1 at the written positions) times the
    product of the elements of ``src`` each position receives."""
    xp = x._device.xp
    out = x._data.flatten()
    if src._data.size:
        d, products = _group_products(xp, _flat_positions(key, x.shape).reshape(-1), src._data.reshape(-1))
        out[d] = out[d] * products if include_self else products
    return emit("ScatterProd", out.reshape(x.shape), x._device, (x, src), {"key": key, "include_self": include_self})


def _exclusive_factor(e, e_zero, zeros, zero_sum):
    """With ``p`` the product of the nonzero elements at an element's position, the factor ``f`` with
    ``p * f`` = the product of the other elements there: ``e`` the element, ``e_zero`` where it is 0 (a
    constant), ``zeros`` how many zeros its position holds (a constant), ``zero_sum`` the sum of those zeros
    (0, but a function of them, so that the second derivative meets the zero it multiplies)."""
    # nonzero e: 1/e if no zero, (the zero)/e if one, else 0;  e zero: 1 if it is the only zero, (the other zero)
    # if there are two, else 0: the exclusive product near the point, so the op's first and second derivatives
    # are exact everywhere, and every order where at most one zero meets. NOTE: where two or more zeros meet,
    # the 0s above are constants: the op's third and higher derivatives there may read 0.
    nonzero = where(zeros == 0, 1.0, where(zeros == 1, zero_sum, 0.0)) / where(e._data == 0, 1.0, e)
    zero = where(zeros == 1, 1.0, where(zeros == 2, zero_sum - e, 0.0))
    return where(e_zero, zero, nonzero)


@RegisterGradient("ScatterProd", reads_outputs=False)
def _scatter_prod_grad(op, dy):
    # PyTorch's (scatter_reduce_backward, "prod"): d out[p] / d e = the product of the other elements at p,
    # with zeros counted instead of divided by; x takes no part where written without include_self
    x, src = op.inputs
    key, include_self = op.attrs["key"], op.attrs["include_self"]
    xp = dy._device.xp
    member = xp.ones(x.shape, dtype=bool) if include_self else ~_touched(x, key)
    x_zero = xp.logical_and(x._data == 0, member)
    src_zero = src._data == 0
    zeros = x_zero.astype(np.int64)
    if src_zero.size:
        xp.add.at(zeros, key, src_zero.astype(np.int64))
    nonzero_product = _scatter_prod(where(x_zero, 1.0, x), where(src_zero, 1.0, src), key, include_self)
    zero_sum = add(where(x_zero, x, 0.0), getitem_grad(where(src_zero, src, 0.0), key, x.shape, True))
    share = multiply(dy, nonzero_product)
    dx = where(member, multiply(share, _exclusive_factor(x, x_zero, zeros, zero_sum)), 0.0)
    dsrc = multiply(_getitem(share, key, True),
                    _exclusive_factor(src, src_zero, zeros[key], _getitem(zero_sum, key, True)))
    return dx, dsrc


# ---------------------------------------------------------------- one_hot, masked_fill


def one_hot(indices: TensorLike, num_classes: int | None = None, dtype: DTypeLike = np.int64) -> Tensor:
    """One-hot rows: ``out[..., c] = 1`` where ``c == indices[...]``, as ``torch.nn.functional.one_hot``.

    The result has shape ``indices.shape + (num_classes,)`` and dtype int64 (PyTorch's) unless ``dtype``
    says otherwise (``float32`` for a loss). ``num_classes=None`` (PyTorch's -1 too) takes
    ``max(indices) + 1``, read from the data (a data-dependent shape). An index outside
    ``[0, num_classes)`` raises IndexOutOfRangeError (on a GPU at the next host read). No gradient
    (integer input).

    Example:
        >>> import gpugrad as gg
        >>> gg.one_hot(gg.tensor([0, 2]), 3).numpy().tolist()
        [[1, 0, 0], [0, 0, 1]]
        >>> gg.one_hot([1], 2, dtype="float32").numpy().tolist()
        [[0.0, 1.0]]
    """
    indices = unary(indices)
    device = indices._device
    idx, host = _index_array("OneHot", indices, device)
    if idx.dtype.kind == "b":
        raise DTypeError("op 'OneHot' takes integer indices, not booleans")
    if num_classes is None or num_classes == -1:
        _trace.dynamic_output_shape("one_hot without num_classes (op 'OneHot')", indices)
        num_classes = int(idx.max()) + 1 if idx.size else 0
    elif isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 0:
        raise ValueError(f"op 'OneHot' takes num_classes >= 0 (or None), not {num_classes!r}")
    _device_checks.check(idx, 0, num_classes, f"op 'OneHot': class {{value}} is outside [0, {num_classes})")
    idx = _to_device(idx, host, device)
    xp = device.xp
    out = (idx[..., None] == xp.arange(num_classes)).astype(_dt.resolve(dtype))
    return Tensor._wrap(out, device)


def masked_fill(x: TensorLike, mask: TensorLike, value: TensorLike) -> Tensor:
    """``x`` with ``value`` where boolean ``mask`` (broadcast against ``x``) is true, as ``torch.masked_fill``.

    ``value`` is a number or a 0-d tensor (its gradient is the sum of ``dy`` over the filled positions).
    Recorded as ``Where``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> gg.masked_fill(x, gg.tensor([True, False]), -1.0).numpy().tolist()
        [[-1.0, 2.0], [-1.0, 4.0]]
    """
    x = unary(x, mask, value)
    m = mask if isinstance(mask, Tensor) else unary(np.asarray(mask), x)
    if m._data.dtype.kind != "b":
        raise DTypeError(f"op 'MaskedFill' takes a boolean mask, not {m._data.dtype}")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ShapeError(f"op 'MaskedFill' takes a number or a 0-d tensor as value, not shape {value.shape}")
    if np.broadcast_shapes(m.shape, x.shape) != tuple(x.shape):
        raise ShapeError(f"op 'MaskedFill': mask of shape {m.shape} does not broadcast to x's shape {x.shape}")
    return where(m, value, x)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "scatter", "scatter_add", "index_add", "scatter_reduce", "one_hot", "masked_fill"
    ]
