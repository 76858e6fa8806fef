"""Network ops beside conv and pooling: dropout, embedding, layer_norm, batch_norm.

- ``Dropout`` multiplies by a mask drawn once (zeros and ``1 / (1 - rate)``);
  its gradient multiplies by the same mask, recorded as ``Dropout`` again.
- embedding is a ``Gather`` of rows (see indexing.py): its gradient is the
  scatter-add ``GetItemGrad``, so repeated ids add up.
- layer_norm and batch_norm share ``Normalize``: ``(x - mean) * rstd`` over
  some axes, with ``rstd = 1 / sqrt(var + eps)`` as a second output. Its rule
  is the fused formula, written with gpugrad ops; it also takes the gradient
  of ``rstd``, which is what a second derivative sends there. The scale and
  shift are ordinary Mul and Add ops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import DTypeError, ShapeError
from ...registry import RegisterGradient
from ...tensor import Tensor, Variable
from ..elementwise.arithmetic import add, multiply
from ..base import constant_arg, emit, emit_many, public_ops, unary
from ..array.indexing import _index_array, _to_device
from ..reduction.reductions import group_size, mean, sum
from ..array.shape import reshape
from ... import random as _random
from ... import _device_checks, _dtypes as _dt
from ..._tracing import declare

if TYPE_CHECKING:
    from ..._typing import Shape, TensorLike



# ---------------------------------------------------------------- dropout


@declare.root(declare.HOST, effects="draws its mask from the generator")
def dropout(x: TensorLike, rate: float, training: bool = True, seed: int | _random.Generator | None = None) -> Tensor:
    """Zero each element of ``x`` with probability ``rate``, scaling the rest by ``1 / (1 - rate)``.

    Inverted dropout: the expected value is unchanged, and in evaluation
    (``training=False``) or at ``rate`` 0 ``x`` is returned as it is.
    ``seed`` is None (draw from the global ``gg.random`` generator), an int
    (a fresh generator with that seed: the same mask on every call) or a
    ``gg.random.Generator``.

    Example:
        >>> import gpugrad as gg
        >>> y = gg.dropout(gg.ones((2, 4)), 0.5, seed=0)
        >>> sorted(set(y.numpy().ravel().tolist())) in ([0.0, 2.0], [0.0], [2.0])
        True
        >>> gg.dropout(gg.ones((2,)), 0.5, training=False).numpy().tolist()
        [1.0, 1.0]
    """
    x = unary(x)
    rate = float(constant_arg(rate, "rate", "Dropout"))
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout rate must be in [0, 1), got {rate}")
    if not training or rate == 0.0:
        return x
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'Dropout' takes a float tensor, got dtype {x.dtype}")
    dev = x._device
    u = _random.as_generator(seed).random_array(x.shape, _dt.compute_dtype(x.dtype), dev)  # low: float32's mask
    xp = dev.xp
    mask = (u >= rate).astype(x.dtype)
    mask *= xp.asarray(1.0 / (1.0 - rate), dtype=x.dtype)
    return emit("Dropout", x._data * mask, dev, (x,), {"mask": mask, "rate": rate})


@RegisterGradient("Dropout", reads_outputs=False)
def _dropout_grad(op, dy):
    # y = x * mask:  dx = dy * mask, the same op on dy
    mask = op.attrs["mask"]
    dy = unary(dy)
    return (emit("Dropout", dy._data * mask, dy._device, (dy,), op.attrs),)


# ---------------------------------------------------------------- embedding


def embedding(ids: TensorLike, weight: TensorLike) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) at integer ``ids`` of any shape: shape ``ids.shape + (dim,)``.

    ``ids`` may be a gpugrad tensor, a NumPy array or a list; each must lie in
    ``[0, num_embeddings)`` (IndexOutOfRangeError otherwise). The gradient of
    ``weight`` adds up over repeated ids. Recorded as ``Gather``.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
        >>> gg.embedding([[2, 0], [1, 1]], w).numpy().tolist()
        [[[4.0, 5.0], [0.0, 1.0]], [[2.0, 3.0], [2.0, 3.0]]]
    """
    weight = unary(weight)
    if weight.ndim != 2:
        raise ShapeError(f"op 'Embedding' takes a weight of shape (num_embeddings, dim), got shape {weight.shape}")
    dev = weight._device
    idx, host = _index_array("Embedding", ids, dev)
    if idx.dtype.kind == "b":
        raise DTypeError("op 'Embedding' takes integer ids, not booleans")
    num = weight.shape[0]
    # at once for ids on the host; at the next host read for ids on the GPU (no sync on the step's path)
    _device_checks.check(idx, 0, num, f"op 'Embedding': id {{value}} is outside [0, {num}) for a weight of "
                                      f"shape {weight.shape}")
    idx = _to_device(idx, host, dev)
    # the Gather op of take/gather at axis 0: its rule scatter-adds dy back to these rows
    return emit("Gather", weight._data[idx], dev, (weight,), {"axis": 0, "indices": idx})


# ---------------------------------------------------------------- normalisation


def _normalize(x, axes, eps):
    """``(x - mean) * rstd`` over ``axes`` and ``rstd`` (keepdims), recorded as Normalize; plus the
    raw batch mean and variance arrays."""
    eps = constant_arg(eps, "eps", "Normalize")
    xp = x._device.xp
    data = _dt.wide(x._data)  # float16 and bfloat16 normalise in float32
    mu = data.mean(axis=axes, keepdims=True)
    centered = data - mu
    var = xp.square(centered).mean(axis=axes, keepdims=True)
    rstd = var + xp.asarray(eps, dtype=var.dtype)
    rstd = xp.sqrt(rstd, out=rstd)
    rstd = xp.reciprocal(rstd, out=rstd)
    centered *= rstd
    y, r = emit_many("Normalize", (_dt.narrow(centered, x._data), _dt.narrow(rstd, x._data)), x._device, (x,), {"axes": axes})
    return y, r, mu, var


@RegisterGradient("Normalize")
def _normalize_grad(op, dy, drstd):
    # y = (x - m) r, r = (var + eps)^-1/2, n values per group:
    #   dx = r (dy - mean(dy) - y (sum(dy y) + drstd r) / n)
    # (d r / d x = -r^2 y / n carries drstd, which only second derivatives send)
    y, rstd = op.outputs
    axes = op.attrs["axes"]
    n = group_size(y.shape, axes)
    inner = add(sum(multiply(dy, y), axis=axes, keepdims=True), multiply(drstd, rstd)) * (1.0 / n if n else 0.0)
    return (multiply(rstd, dy - mean(dy, axis=axes, keepdims=True) - multiply(y, inner)),)


def _affine(y, weight, bias, shape):
    """``y * weight + bias`` with the parameters reshaped to ``shape`` (None: left out)."""
    if weight is not None:
        weight = unary(weight)
        y = multiply(y, weight if weight.shape == shape else reshape(weight, shape))
    if bias is not None:
        bias = unary(bias)
        y = add(y, bias if bias.shape == shape else reshape(bias, shape))
    return y


def _check_param(op_type, name, p, shape, x):
    if p is not None and tuple(getattr(p, "shape", np.shape(p))) != shape:
        raise ShapeError(f"op {op_type!r} takes a {name} of shape {shape} for x of shape {x.shape}, "
                         f"got {tuple(getattr(p, 'shape', np.shape(p)))}")


def layer_norm(x: TensorLike, normalized_shape: Shape, weight: TensorLike | None = None, bias: TensorLike | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise ``x`` over its last dimensions ``normalized_shape``, then scale and shift.

    ``(x - mean) / sqrt(var + eps) * weight + bias``, the mean and (biased)
    variance taken over the trailing axes that ``normalized_shape`` (an int or
    a tuple) names; ``weight`` and ``bias`` have shape ``normalized_shape``.

    Example:
        >>> import gpugrad as gg
        >>> y = gg.layer_norm(gg.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 5.0]]), 3)
        >>> [[round(v, 3) for v in row] for row in y.numpy().tolist()]
        [[-1.225, 0.0, 1.225], [-0.707, -0.707, 1.414]]
    """
    x = unary(x)
    shape = (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) \
        else tuple(int(s) for s in normalized_shape)
    k = len(shape)
    if not shape or x.shape[x.ndim - k:] != shape or k > x.ndim:
        raise ShapeError(f"op 'LayerNorm': normalized_shape {shape} is not the trailing shape of x of "
                         f"shape {x.shape}")
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'LayerNorm' takes a float tensor, got dtype {x.dtype}")
    _check_param("LayerNorm", "weight", weight, shape, x)
    _check_param("LayerNorm", "bias", bias, shape, x)
    y = _normalize(x, tuple(range(x.ndim - k, x.ndim)), eps)[0]
    return _affine(y, weight, bias, shape)


def _running_array(stat, name, c, x):
    """The array behind running statistic ``stat`` (a Variable or a raw array), checked."""
    if isinstance(stat, Tensor) and not isinstance(stat, Variable):
        raise TypeError(f"batch_norm {name} must be a gg.Variable or an array it can update in place, "
                        f"not an immutable Tensor")
    data = stat._data if isinstance(stat, Variable) else stat
    if not hasattr(data, "shape") or tuple(data.shape) != (c,):
        raise ShapeError(f"op 'BatchNorm' takes a {name} of shape ({c},) for x of shape {x.shape}, "
                         f"got {getattr(data, 'shape', type(data).__name__)}")
    if not isinstance(data, x._device.array_type):
        raise TypeError(f"batch_norm {name} is a {type(data).__name__}; it must live on x's device "
                        f"{x.device!r}")
    return data


def _update(stat, data, new):
    if isinstance(stat, Variable):
        stat.assign(new)
    else:
        data[...] = new


@declare.root(declare.HOST, effects="writes the running statistics in training")
def batch_norm(x: TensorLike, running_mean: TensorLike, running_var: TensorLike, weight: TensorLike | None = None, bias: TensorLike | None = None, training: bool = True, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """Batch normalisation of ``x`` (N, C, ...) per channel C, then scale ``weight`` and shift ``bias`` (C,).

    In training the batch's mean and (biased) variance over every axis but
    the channels normalise ``x``, and the running statistics (Variables or
    arrays of shape (C,), not differentiated) are updated in place:
    ``running = (1 - momentum) * running + momentum * batch``, with the
    unbiased batch variance, as PyTorch does. In evaluation
    (``training=False``) the running statistics normalise ``x``.

    Example:
        >>> import gpugrad as gg
        >>> rm, rv = gg.Variable([0.0, 0.0], trainable=False), gg.Variable([1.0, 1.0], trainable=False)
        >>> x = gg.tensor([[1.0, 10.0], [3.0, 30.0]])
        >>> [[round(v, 3) for v in row] for row in gg.batch_norm(x, rm, rv).numpy().tolist()]
        [[-1.0, -1.0], [1.0, 1.0]]
        >>> [round(v, 3) for v in rm.numpy().tolist()], [round(v, 3) for v in rv.numpy().tolist()]
        ([0.2, 2.0], [1.1, 20.9])
        >>> gg.batch_norm(x, rm, rv, training=False).shape
        (2, 2)
    """
    x = unary(x)
    if x.ndim < 2:
        raise ShapeError(f"op 'BatchNorm' takes x of shape (N, C, ...), got shape {x.shape}")
    if not _dt.inexact(x.dtype):
        raise DTypeError(f"op 'BatchNorm' takes a float tensor, got dtype {x.dtype}")
    c = x.shape[1]
    _check_param("BatchNorm", "weight", weight, (c,), x)
    _check_param("BatchNorm", "bias", bias, (c,), x)
    mean_data = _running_array(running_mean, "running_mean", c, x)
    var_data = _running_array(running_var, "running_var", c, x)
    shape = (1, c) + (1,) * (x.ndim - 2)
    xp = x._device.xp
    if training:
        axes = (0,) + tuple(range(2, x.ndim))
        n = group_size(x.shape, axes)
        if n < 2:
            raise ShapeError(f"op 'BatchNorm' needs more than one value per channel in training, got x of "
                             f"shape {x.shape}")
        y, _, mu, var = _normalize(x, axes, eps)
        m = float(momentum)
        _update(running_mean, mean_data, mean_data * (1.0 - m) + mu.reshape(c).astype(mean_data.dtype) * m)
        unbiased = var.reshape(c).astype(var_data.dtype) * (n / (n - 1))
        _update(running_var, var_data, var_data * (1.0 - m) + unbiased * m)
        return _affine(y, weight, bias, shape)
    # evaluation: y = x * scale + shift, scale = weight / sqrt(var + eps), shift = bias - mean * scale
    rstd = (1.0 / xp.sqrt(var_data + eps)).astype(x.dtype)
    scale = Tensor._wrap(rstd.reshape(shape), x._device)
    if weight is not None:
        w = unary(weight)
        scale = multiply(scale, reshape(w, shape))
    shift = Tensor._wrap(-mean_data.astype(x.dtype).reshape(shape), x._device) * scale
    if bias is not None:
        shift = add(shift, reshape(unary(bias), shape))
    return add(multiply(x, scale), shift)


TENSOR_METHODS: dict = {}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "dropout", "embedding", "layer_norm", "batch_norm"
    ]
