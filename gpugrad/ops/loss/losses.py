"""The softmax family and the losses: softmax log_softmax softmax_cross_entropy
sigmoid_cross_entropy mse.

Each is computed in its stable form (the max shifted out before ``exp``; the
``log1p(exp(-|x|))`` form for sigmoids). softmax_cross_entropy's gradient is
the fused op ``SoftmaxCrossEntropyGrad``: ``(probs - onehot(labels)) * dy`` in
one pass, from the probabilities the forward pass already computed. Those are
recorded as a ``Softmax`` of the logits, so an outer tape can differentiate the
gradient again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import builtins

import numpy as np

from ... import _device_checks, _dtypes
from ...backend import CPU, cpu_fast
from ...errors import DTypeError, ShapeError
from ... import mixed_precision as _mp
from ...registry import RegisterGradient
from ...tensor import Tensor, ensure_tensor
from .. import _autocast, replay
from ..elementwise.activations import relu_array, sigmoid, softplus
from ..elementwise.arithmetic import multiply, subtract
from ..base import binary, elementwise, emit, public_ops, same_device, unary
from ..elementwise.math import exp, square
from ..reduction.reductions import mean, mean_data, normalize_axis, sum, sum_data
from ..array.shape import reshape

if TYPE_CHECKING:
    from ..._typing import Axis, TensorLike


_REDUCTIONS = ("mean", "sum", "none")


def _row_max(device, a, axes):
    """max of array ``a`` over ``axes``, dims kept."""
    return cpu_fast.max(a, axes, keepdims=True) if device is CPU else a.max(axis=axes, keepdims=True)


def _check_reduction(reduction, op_name):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op_name} reduction is 'mean', 'sum' or 'none', not {reduction!r}")


def _reduce(losses, reduction):
    if reduction == "mean":
        return mean(losses)
    return sum(losses) if reduction == "sum" else losses


# A target that is one number (Python's or a NumPy scalar) applies to every element; any other is a tensor
_NUMBERS = (int, float, np.number)


def _shape_error(op_name, a_name, a, b_name, b):
    """The ShapeError of a loss whose two operands differ in shape (losses never broadcast)."""
    try:
        hint = f"; broadcast, they would make a loss of shape {np.broadcast_shapes(a.shape, b.shape)}"
    except ValueError:
        hint = ""
    return ShapeError(f"op {op_name!r} needs {a_name} and {b_name} of one shape, got {a_name} of shape {a.shape} "
                      f"and {b_name} of shape {b.shape}{hint}; reshape one of them (or pass one number as "
                      f"{b_name})")


# ---------------------------------------------------------------- softmax, log_softmax


def _axes(x, axis, op_type):
    if x.ndim == 0:
        raise ShapeError(f"op {op_type!r} needs a tensor of at least one dimension, got a scalar")
    return normalize_axis(axis, x.ndim)


def softmax(x: TensorLike, axis: Axis = -1) -> Tensor:
    """exp(x) / sum(exp(x)) over ``axis``, computed with the max shifted out.

    Example:
        >>> import gpugrad as gg
        >>> gg.softmax(gg.tensor([1000.0, 1000.0])).numpy().tolist()
        [0.5, 0.5]
    """
    if _mp.active and (out := _autocast.float32_op(softmax, (x,), axis=axis)) is not None:
        return out
    x = unary(x)
    axes = _axes(x, axis, "Softmax")
    return emit("Softmax", softmax_array(x._device, x._data, axes), x._device, (x,), {"axes": axes})


def softmax_array(dev, x, axes):
    """The array ``softmax`` computes from array ``x`` over ``axes`` (a tuple) on ``dev``."""
    try:
        shift = _row_max(dev, x, axes)
    except ValueError:  # an empty axis has no max; the result is empty anyway
        shift = x.dtype.type(0)
    e = elementwise(np.exp, x - shift, dev)
    return e / sum_data(e, dev, axes, keepdims=True)


@replay.replays("Softmax")
def _softmax_replay(inputs, attrs, outputs, device):
    (x,), out = inputs, outputs[0]
    if not x.size or attrs is None or x.dtype != out.dtype:
        return None
    axes = attrs["axes"]
    return lambda: replay.into(out, softmax_array(device, x, axes))


@RegisterGradient("Softmax")
def _softmax_grad(op, dy):
    # dx = y * (dy - sum(dy * y))
    y = op.outputs[0]
    return (multiply(y, dy - sum(dy * y, axis=op.attrs["axes"], keepdims=True)),)


def log_softmax(x: TensorLike, axis: Axis = -1) -> Tensor:
    """x - logsumexp(x) over ``axis``: the log of :func:`softmax`, without underflow.

    Example:
        >>> import gpugrad as gg
        >>> [round(v, 4) for v in gg.log_softmax(gg.tensor([0.0, 0.0])).numpy().tolist()]
        [-0.6931, -0.6931]
    """
    if _mp.active and (out := _autocast.float32_op(log_softmax, (x,), axis=axis)) is not None:
        return out
    x = unary(x)
    axes = _axes(x, axis, "LogSoftmax")
    xp = x._device.xp
    try:
        shifted = x._data - _row_max(x._device, x._data, axes)
    except ValueError:  # an empty axis has no max; the result is empty anyway
        shifted = x._data.copy()
    out = shifted - xp.log(sum_data(elementwise(np.exp, shifted, x._device), x._device, axes, keepdims=True))
    return emit("LogSoftmax", out, x._device, (x,), {"axes": axes})


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, dy):
    # dx = dy - softmax(x) * sum(dy)
    y = op.outputs[0]
    return (dy - multiply(exp(y), sum(dy, axis=op.attrs["axes"], keepdims=True)),)


# ---------------------------------------------------------------- softmax_cross_entropy


def check_labels(data, logits_shape, op_type):
    """IndexOutOfRangeError unless every integer label in array ``data`` is in [0, classes): at once for a
    NumPy array, at the next host read for a GPU array (:mod:`gpugrad._device_checks`: no sync per step)."""
    classes = logits_shape[-1]
    _device_checks.check(data, 0, classes, f"op {op_type!r} got label {{value}}, outside [0, {classes}) for "
                                           f"logits of shape {logits_shape}")


def _label_tensor(labels, logits, op_type, ignore_index=None):
    """``labels`` as an int64 tensor on the logits' device, checked against the logits (a label equal to
    ``ignore_index`` passes)."""
    dev = logits._device
    host = labels if isinstance(labels, (list, tuple, np.ndarray, int)) and dev is not CPU else None
    if isinstance(labels, Tensor):
        if labels._device is not dev:
            same_device((logits, labels), op_type)
    else:
        labels = ensure_tensor(labels, like=logits) if not isinstance(labels, (int, float)) \
            else Tensor(labels, None, dev)
    if labels.dtype.kind not in "iu":
        raise DTypeError(f"op {op_type!r} takes integer class labels, got dtype {labels.dtype}")
    if labels.shape != logits.shape[:-1]:
        raise ShapeError(f"op {op_type!r} needs labels of shape {logits.shape[:-1]} for logits of shape "
                         f"{logits.shape}, got {labels.shape}")
    data = labels._data
    # labels given on the host are checked there, at once, before their copy to the GPU
    checked = data if host is None else np.asarray(host)
    if ignore_index is not None:
        checked = checked * (checked != ignore_index)  # an ignored label counts as class 0 here
    check_labels(checked, logits.shape, op_type)
    if data.dtype != np.int64:
        labels = Tensor._wrap(data.astype(np.int64), dev)
    return labels


def softmax_cross_entropy(logits: TensorLike, labels: TensorLike, reduction: str = "mean", *,
                          weight: TensorLike | None = None, ignore_index: int | None = None,
                          label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of ``softmax(logits)`` against integer class ``labels`` or class probabilities.

    ``logits`` has shape (..., C), classes last (as TensorFlow's
    ``softmax_cross_entropy_with_logits``; PyTorch's ``F.cross_entropy`` takes
    them on axis 1). ``labels`` is either integers in [0, C) of shape (...)
    (a tensor, NumPy array or list), whose per-example loss is
    ``logsumexp(logits) - logits[label]``, or float class probabilities of
    the logits' shape (soft targets; they get a gradient too), whose loss is
    ``-sum(labels * log_softmax(logits))``. ``reduction`` is ``"mean"``,
    ``"sum"`` or ``"none"`` (per-example losses).

    The options are ``torch.nn.functional.cross_entropy``'s: ``weight`` (C,)
    scales each class's term (it gets no gradient, as in PyTorch), and a
    weighted ``"mean"`` of integer labels divides by the sum of the weights
    of the counted labels (of probability targets, by the number of
    examples); a label equal to ``ignore_index`` adds nothing and is not
    counted (PyTorch's default is -100; here None: every label counts);
    ``label_smoothing`` ε mixes the target with the uniform distribution,
    ``(1 - ε) * target + ε / C``. Plain integer labels take one fused pass.

    Example:
        >>> import gpugrad as gg
        >>> logits = gg.tensor([[2.0, 0.0], [0.0, 0.0]])
        >>> losses = gg.softmax_cross_entropy(logits, [0, 1], reduction="none")
        >>> [round(v, 4) for v in losses.numpy().tolist()]
        [0.1269, 0.6931]
        >>> round(gg.softmax_cross_entropy(logits, [0, 1]).item(), 4)
        0.41
        >>> round(gg.softmax_cross_entropy(logits, [0, -100], ignore_index=-100).item(), 4)
        0.1269
        >>> round(gg.softmax_cross_entropy(logits, [[1.0, 0.0], [0.5, 0.5]]).item(), 4)
        0.41
    """
    options = weight is not None or ignore_index is not None or label_smoothing != 0.0
    if _mp.active and (out := _autocast.float32_op(softmax_cross_entropy, (logits, labels), reduction=reduction,
                                                   weight=weight, ignore_index=ignore_index,
                                                   label_smoothing=label_smoothing)) is not None:
        return out
    _check_reduction(reduction, "softmax_cross_entropy")
    logits = unary(logits)
    if logits.ndim == 0:
        raise ShapeError("op 'SoftmaxCrossEntropy' needs logits of shape (..., classes), got a scalar")
    if options or _is_probabilities(labels):
        return _general_cross_entropy(logits, labels, reduction, weight, ignore_index, label_smoothing)
    labels = _label_tensor(labels, logits, "SoftmaxCrossEntropy")
    dev = logits._device
    probs, losses = softmax_cross_entropy_arrays(dev, logits._data, labels._data, reduction)
    probs = emit("Softmax", probs, dev, (logits,), {"axes": (logits.ndim - 1,)})
    return emit("SoftmaxCrossEntropy", losses, dev, (logits, labels, probs), _REDUCED.get(reduction))


def _is_probabilities(labels):
    """Whether ``labels`` are float class probabilities (soft targets) rather than integer labels."""
    if isinstance(labels, (Tensor, np.ndarray)) or hasattr(labels, "__cuda_array_interface__"):
        return _dtypes.inexact(labels.dtype)
    if isinstance(labels, (list, tuple)):
        return np.asarray(labels).dtype.kind in "fc"
    return False


def _general_cross_entropy(logits, labels, reduction, weight, ignore_index, smoothing):
    """softmax_cross_entropy with PyTorch's options (``F.cross_entropy``): a composite of the stable
    ``log_softmax`` and linear ops, so every order of gradient is theirs."""
    op_type = "SoftmaxCrossEntropy"
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"op {op_type!r} takes label_smoothing in [0, 1], got {smoothing!r}")
    logp = log_softmax(logits, axis=-1)
    if not _is_probabilities(labels):
        labels = _label_tensor(labels, logits, op_type, ignore_index)
        return weighted_nll(logp, labels, class_weight(weight, logits, op_type), ignore_index, smoothing,
                            reduction)
    if ignore_index is not None:
        raise ValueError(f"op {op_type!r} takes ignore_index with integer labels only, not with class "
                         f"probabilities (PyTorch ignores it there)")
    targets = unary(labels, logits)
    same_device((logits, targets), op_type)
    if targets.shape == logits.shape[:-1]:
        raise DTypeError(f"op {op_type!r} takes integer class labels, got dtype {targets.dtype} of shape "
                         f"{targets.shape} (class probabilities have the logits' shape {logits.shape})")
    if targets.shape != logits.shape:
        raise _shape_error(op_type, "logits", logits, "probabilities", targets)
    classes = logits.shape[-1]
    if smoothing:
        targets = targets * (1.0 - smoothing) + smoothing / classes
    w = class_weight(weight, logits, op_type)
    if w is not None:
        targets = multiply(targets, Tensor._wrap(w, logits._device))
    # -sum_c w_c t_c log p_c per example; a mean divides by the number of examples (PyTorch)
    return _reduce(-sum(multiply(logp, targets), axis=-1), reduction)


def class_weight(weight, logits, op_type):
    """The array of class weights ``weight`` (C,) in the logits' dtype on their device, or None."""
    if weight is None:
        return None
    w = weight._data if isinstance(weight, Tensor) else Tensor(weight, None, logits._device)._data
    if isinstance(weight, Tensor):
        same_device((logits, weight), op_type)
    if w.shape != logits.shape[-1:]:
        raise ShapeError(f"op {op_type!r} needs a weight of shape ({logits.shape[-1]},), one per class, got "
                         f"{w.shape}")
    return w.astype(logits.dtype, copy=False)


def weighted_nll(logp, labels, weight, ignore_index, smoothing, reduction):
    """``-sum_c coef[..., c] * logp[..., c]`` per example, PyTorch's ``nll_loss`` with ``label_smoothing``.

    ``logp`` (..., C) is a tensor of log-probabilities, ``labels`` int64 (...) (checked), ``weight`` an
    array (C,) or None. coef = keep * ((1 - ε) * w[label] * onehot(label) + ε / C * w), keep = label !=
    ignore_index; "mean" divides the sum by sum(keep * w[label]) (0/0 = nan when nothing counts, as PyTorch).
    Linear in ``logp`` through Mul and Sum, so its gradients are theirs.
    """
    dev, dtype = logp._device, logp.dtype
    xp = dev.xp
    classes = logp.shape[-1]
    y = labels._data
    keep = None if ignore_index is None else (y != ignore_index)
    safe = y if keep is None else xp.where(keep, y, 0)
    w_y = xp.ones(y.shape, dtype) if weight is None else weight[safe]
    if keep is not None:
        w_y = w_y * keep.astype(dtype)
    coef = (xp.arange(classes) == safe[..., None]).astype(dtype) * ((1.0 - smoothing) * w_y)[..., None]
    if smoothing:
        spread = (xp.ones(classes, dtype) if weight is None else weight) * dtype.type(smoothing / classes)
        coef = coef + (spread if keep is None else spread * keep[..., None].astype(dtype))
    losses = -sum(multiply(logp, Tensor._wrap(coef, dev)), axis=-1)
    if reduction == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):  # nothing counted: nan, as PyTorch
            return sum(losses) / Tensor._wrap(sum_data(w_y, dev, tuple(range(w_y.ndim))), dev)
    return sum(losses) if reduction == "sum" else losses


def softmax_cross_entropy_arrays(dev, logits, labels, reduction):
    """``(probs, losses)`` that ``softmax_cross_entropy`` computes from arrays ``logits`` and int64 ``labels``
    (checked) on ``dev``."""
    xp = dev.xp
    classes = logits.shape[-1]
    try:
        shifted = logits - _row_max(dev, logits, -1)
    except ValueError:  # no classes (and so no rows: labels were checked): nothing to shift
        shifted = logits.copy()
    e = elementwise(np.exp, shifted, dev)
    total = sum_data(e, dev, (-1,), keepdims=True)
    # loss = log(sum(exp(shifted))) - shifted[label], the label's entry found by flat index
    rows = labels.size
    flat_index = labels.reshape(-1) + xp.arange(0, rows * classes, classes or 1)  # no classes: no rows
    picked = shifted.reshape(-1)[flat_index].reshape(labels.shape)
    losses = xp.log(total[..., 0]) - picked
    # reduced here to the bit as gg.mean and gg.sum reduce: their op would cost a record and two gradient ops
    if reduction != "none":
        reduce_data = mean_data if reduction == "mean" else sum_data
        losses = reduce_data(losses, dev, tuple(range(losses.ndim)))
    return e / total, losses


_REDUCED = {"mean": {"reduction": "mean"}, "sum": {"reduction": "sum"}}  # shared: records never change attrs


# its third input, the probabilities, is the output of the Softmax op its forward emits just before: the
# kernel computes it too (fills_inputs), from the one pass the forward makes
@replay.replays("SoftmaxCrossEntropy", fills_inputs=(2,))
def _softmax_cross_entropy_replay(inputs, attrs, outputs, device):
    logits, labels, probs = inputs
    out = outputs[0]
    if not logits.size or labels.dtype != np.int64 or probs.dtype != logits.dtype:
        return None
    reduction = "none" if attrs is None else attrs["reduction"]

    def run():
        check_labels(labels, logits.shape, "SoftmaxCrossEntropy")
        p, loss = softmax_cross_entropy_arrays(device, logits, labels, reduction)
        replay.into(probs, p)
        replay.into(out, loss)
    return run


@RegisterGradient("SoftmaxCrossEntropy", reads_outputs=False)
def _softmax_cross_entropy_grad(op, dy):
    # per example: (probs - onehot) * dy; a mean spreads dy / rows over the examples, a sum dy itself
    _, labels, probs = op.inputs
    if op.attrs is not None and op.attrs["reduction"] == "mean":
        dy = dy / builtins.max(labels.size, 1)
    return softmax_cross_entropy_grad(probs, labels, dy), None, None


def _softmax_cross_entropy_grad_cpu(probs, labels, dy, xp=np):
    dx = np.multiply(probs, dy[..., None], order="C") if xp is np else xp.ascontiguousarray(probs * dy[..., None])
    rows = dx.reshape(labels.size, probs.shape[-1])  # a view of the fresh C-ordered dx (explicit: C may be 0)
    rows[xp.arange(rows.shape[0]), labels.reshape(-1)] -= dy.reshape(-1)
    return dx


def softmax_cross_entropy_grad(probs: TensorLike, labels: TensorLike, dy: TensorLike) -> Tensor:
    """Fused gradient of softmax_cross_entropy: ``(probs - onehot(labels)) * dy[..., None]``.

    ``probs`` (..., C) are the softmax probabilities, ``labels`` int64 (...),
    ``dy`` (...) the upstream gradient of each example's loss, or one 0-d
    gradient shared by every example (of a mean or sum of the losses). Other
    shapes raise ShapeError (nothing broadcasts).

    Example:
        >>> import gpugrad as gg
        >>> g = gg.ops.softmax_cross_entropy_grad(gg.tensor([[0.25, 0.75]]), gg.tensor([1]), gg.tensor([2.0]))
        >>> g.numpy().tolist()
        [[0.5, -0.5]]
    """
    dev = same_device((probs, labels, dy), "SoftmaxCrossEntropyGrad")
    rows = probs.shape[:-1]
    if labels.shape != rows or (dy.shape != rows and dy.shape != ()):  # the kernel reads both by row, unchecked
        raise ShapeError(f"op 'SoftmaxCrossEntropyGrad' needs labels of shape {rows} and dy of shape {rows} or () "
                         f"for probs of shape {probs.shape}, got labels of shape {labels.shape} and dy of shape "
                         f"{dy.shape}")
    if dev is CPU:
        data = _softmax_cross_entropy_grad_cpu(probs._data, labels._data, dy._data)
    else:
        data = _softmax_cross_entropy_grad_gpu(dev, probs._data, labels._data, dy._data)
    return emit("SoftmaxCrossEntropyGrad", data, dev, (probs, labels, dy))


def _softmax_cross_entropy_grad_gpu(dev, probs, labels, dy, out=None):
    """The fused kernel's gradient on GPU ``dev`` (into ``out`` when given): it reads probs by flat index
    and labels, dy by row."""
    xp = dev.xp
    rows_dy = xp.broadcast_to(dy, labels.shape) if dy.ndim == 0 else dy
    arrays = (xp.ascontiguousarray(probs), xp.ascontiguousarray(labels), xp.ascontiguousarray(rows_dy))
    if out is not None:
        arrays += (out,)
    return dev.backend.fused("softmax_cross_entropy_grad", *arrays, C=probs.shape[-1])


def _softmax_cross_entropy_grad_graph_safe(inputs, attrs, outputs):
    # one launch into the output: dy by row (a 0-d dy is broadcast into a copy first) and one float dtype
    probs, _, dy = inputs
    return dy.ndim != 0 and replay.floats_of_one_dtype([probs, dy], outputs)


@replay.replays("SoftmaxCrossEntropyGrad", graph_safe=_softmax_cross_entropy_grad_graph_safe)
def _softmax_cross_entropy_grad_replay(inputs, attrs, outputs, device):
    probs, labels, dy = inputs
    out = outputs[0]
    if device is not CPU:  # the forward's kernel, into the output
        return lambda: _softmax_cross_entropy_grad_gpu(device, probs, labels, dy, out)
    return lambda: replay.into(out, _softmax_cross_entropy_grad_cpu(probs, labels, dy))


@RegisterGradient("SoftmaxCrossEntropyGrad", reads_outputs=False)
def _softmax_cross_entropy_grad_grad(op, g):
    # out = (probs - onehot) * dy:  d/dprobs = g * dy,  d/ddy = sum_c g * (probs - onehot)
    probs, labels, dy = op.inputs
    need_probs, _, need_dy = op.needs_grad
    grad_probs = multiply(g, reshape(dy, dy.shape + (1,))) if need_probs else None
    grad_dy = None
    if need_dy:
        xp = probs._device.xp
        onehot = (xp.arange(probs.shape[-1]) == labels._data[..., None]).astype(probs.dtype)
        grad_dy = sum(multiply(g, subtract(probs, onehot)), axis=-1)
    return grad_probs, None, grad_dy


# ---------------------------------------------------------------- sigmoid_cross_entropy, mse


def sigmoid_cross_entropy(logits: TensorLike, targets: TensorLike, reduction: str = "mean", *,
                          pos_weight: TensorLike | None = None, weight: TensorLike | None = None) -> Tensor:
    """Binary cross-entropy of ``sigmoid(logits)`` against ``targets`` in [0, 1], elementwise.

    Computed as ``max(x, 0) - x * z + log1p(exp(-|x|))``, finite for any
    logit. ``targets`` have the shape of ``logits``, or are one number for
    every element; other shapes raise ShapeError rather than broadcast (logits
    of shape (4, 1) against targets of shape (4,) would average a (4, 4)
    matrix). Targets get a gradient too.

    ``pos_weight`` and ``weight`` are PyTorch's (``F.binary_cross_entropy_with_logits``),
    broadcast against the logits (``pos_weight`` of shape (C,) weighs each
    class's positives): the loss is ``weight * (pos_weight * z * softplus(-x)
    + (1 - z) * softplus(x))``, two nonnegative terms of a stable softplus.

    Example:
        >>> import gpugrad as gg
        >>> losses = gg.sigmoid_cross_entropy(gg.tensor([0.0, 100.0]), [1.0, 1.0], reduction="none")
        >>> [round(v, 4) for v in losses.numpy().tolist()]
        [0.6931, 0.0]
        >>> losses = gg.sigmoid_cross_entropy(gg.tensor([0.0, 0.0]), [1.0, 0.0], reduction="none", pos_weight=3.0)
        >>> [round(v, 4) for v in losses.numpy().tolist()]
        [2.0794, 0.6931]
        >>> try:
        ...     gg.sigmoid_cross_entropy(gg.tensor([[0.0], [100.0]]), [1.0, 1.0])
        ... except gg.ShapeError as e:
        ...     print(str(e).split(", got ")[1].split(";")[0])
        logits of shape (2, 1) and targets of shape (2,)
    """
    if _mp.active and (out := _autocast.float32_op(sigmoid_cross_entropy, (logits, targets), reduction=reduction,
                                                   pos_weight=pos_weight, weight=weight)) is not None:
        return out
    _check_reduction(reduction, "sigmoid_cross_entropy")
    x, z = binary(logits, targets, "SigmoidCrossEntropy")
    if x._data.shape != z._data.shape and not isinstance(targets, _NUMBERS):
        raise _shape_error("SigmoidCrossEntropy", "logits", x, "targets", z)
    if pos_weight is not None or weight is not None:
        if pos_weight is None:
            out = emit("SigmoidCrossEntropy", _sigmoid_cross_entropy_array(x, z), x._device, (x, z))
        else:  # pw * z * softplus(-x) + (1 - z) * softplus(x): each term >= 0, no cancellation
            out = multiply(multiply(pos_weight, z), softplus(-x)) + multiply(1.0 - z, softplus(x))
        if weight is not None:
            out = multiply(out, weight)
        if out.shape != x.shape:
            raise ShapeError(f"op 'SigmoidCrossEntropy' needs pos_weight and weight that broadcast to the "
                             f"logits' shape {x.shape}, got a loss of shape {out.shape}")
        return _reduce(out, reduction)
    return _reduce(emit("SigmoidCrossEntropy", _sigmoid_cross_entropy_array(x, z), x._device, (x, z)), reduction)


def _sigmoid_cross_entropy_array(x, z):
    xp = x._device.xp
    xd = x._data
    return relu_array(x._device, xd) - xd * z._data + xp.log1p(xp.exp(-xp.abs(xd)))


@RegisterGradient("SigmoidCrossEntropy", reads_outputs=False)
def _sigmoid_cross_entropy_grad(op, dy):
    # d/dx = sigmoid(x) - z,  d/dz = -x
    x, z = op.inputs
    need_x, need_z = op.needs_grad
    return (multiply(dy, sigmoid(x) - z) if need_x else None), (-multiply(dy, x) if need_z else None)


def mse(pred: TensorLike, target: TensorLike, reduction: str = "mean") -> Tensor:
    """Mean squared error: ``(pred - target) ** 2``, reduced by ``reduction``.

    ``target`` has the shape of ``pred``, or is one number for every element;
    other shapes raise ShapeError rather than broadcast (predictions of shape
    (4, 1) against targets of shape (4,) would average a (4, 4) matrix; PyTorch
    warns of this). Composed of subtract, square and mean, so it needs no
    gradient of its own.

    Example:
        >>> import gpugrad as gg
        >>> gg.mse(gg.tensor([1.0, 2.0]), gg.tensor([0.0, 0.0])).item()
        2.5
        >>> gg.mse(gg.tensor([1.0, 2.0]), 1.0).item()
        0.5
        >>> try:
        ...     gg.mse(gg.tensor([[1.0], [2.0]]), gg.tensor([0.0, 0.0]))
        ... except gg.ShapeError as e:
        ...     print(str(e).split("; ")[0])
        op 'mse' needs pred and target of one shape, got pred of shape (2, 1) and target of shape (2,)
    """
    if _mp.active and (out := _autocast.float32_op(mse, (pred, target), reduction=reduction)) is not None:
        return out
    _check_reduction(reduction, "mse")
    if not isinstance(target, _NUMBERS):
        if pred.__class__ is not Tensor or target.__class__ is not Tensor:
            pred, target = binary(pred, target, "mse")  # arrays, lists, Variables: as subtract takes them
        if pred._data.shape != target._data.shape:
            raise _shape_error("mse", "pred", pred, "target", target)
    return _reduce(square(subtract(pred, target)), reduction)


TENSOR_METHODS = {"softmax": softmax, "log_softmax": log_softmax}

__all__ = public_ops(globals(), not_ops=("softmax_array", "softmax_cross_entropy_arrays", "check_labels",
                                              "class_weight", "weighted_nll"))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "softmax", "log_softmax", "softmax_cross_entropy", "softmax_cross_entropy_grad", "sigmoid_cross_entropy", "mse"
    ]
