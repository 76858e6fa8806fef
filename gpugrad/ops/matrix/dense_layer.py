"""dense: ``activation(x @ kernel + bias)`` as one op, ``Dense``.

A fully connected layer written as three ops (MatMul, Add, Relu) makes three
arrays and three records; ``Dense`` makes one of each: the bias and the
activation are applied in place on the fresh matmul output, as PyTorch's
``addmm`` and TensorFlow's fused MatMul do. Only activations whose gradient
reads the output alone are fused (``relu``, ``tanh``, ``sigmoid``); the rule
sends dy through their hot gradient op, then through the matmul and the bias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import DTypeError, ShapeError
from ... import mixed_precision as _mp
from ...registry import RegisterGradient
from ...tensor import Tensor
from .. import _autocast, replay
from ..elementwise.activations import relu_array, sigmoid_array
from ..base import emit, public_ops, same_device, unary
from ..hot import HOT_GRADIENTS
from .linalg import matmul
from ..reduction.reductions import sum
from ..array.shape import reshape
from ... import _dtypes as _dt

if TYPE_CHECKING:
    from ..._typing import TensorLike

FUSED_ACTIVATIONS = ("relu", "tanh", "sigmoid")
_ACTIVATION_GRADS = {h.forward: h.function for h in HOT_GRADIENTS.values() if h.forward in FUSED_ACTIVATIONS}
_ATTRS = {name: {"activation": name} for name in FUSED_ACTIVATIONS}  # shared: records never change attrs


def _check(x, kernel, bias, activation):
    xd, kd = x._data, kernel._data
    if (kd.ndim == 2 and xd.ndim and xd.shape[-1] == kd.shape[0] and _dt.floating(xd.dtype) and _dt.floating(kd.dtype)
            and (bias is None or (bias._data.shape == kd.shape[1:] and _dt.floating(bias._data.dtype)))
            and (activation is None or activation in _ATTRS)):
        return  # the usual case in one test; anything else finds its error below
    if activation is not None and activation not in _ATTRS:
        raise ValueError(f"op 'Dense' fuses the activations {list(FUSED_ACTIVATIONS)} or None, "
                         f"not {activation!r}; apply others after it")
    for name, t in (("x", x), ("kernel", kernel), ("bias", bias)):
        if t is not None and not _dt.floating(t.dtype):
            raise DTypeError(f"op 'Dense' takes floating-point tensors; {name} has dtype {t.dtype}")
    if kernel.ndim != 2:
        raise ShapeError(f"op 'Dense' needs a kernel of shape (in_features, out_features), got {kernel.shape}")
    if x.ndim == 0 or x.shape[-1] != kernel.shape[0]:
        raise ShapeError(f"op 'Dense' needs x of shape (..., {kernel.shape[0]}) for a kernel of shape "
                         f"{kernel.shape}, got {x.shape}")
    if bias is not None and bias.shape != (kernel.shape[1],):
        raise ShapeError(f"op 'Dense' needs a bias of shape ({kernel.shape[1]},) for a kernel of shape "
                         f"{kernel.shape}, got {bias.shape}")


def dense(x: TensorLike, kernel: TensorLike, bias: TensorLike | None = None, activation: Any = None) -> Tensor:
    """``activation(x @ kernel + bias)`` in one op: one output array, one record.

    ``x`` has shape (..., in_features), ``kernel`` (in_features,
    out_features) as Keras lays it out, ``bias`` (out_features,) or None;
    ``activation`` is None, ``"relu"``, ``"tanh"`` or ``"sigmoid"``. The
    result equals ``gg.relu(x @ kernel + bias)`` (and so on) to the last bit,
    with dtypes promoted as NumPy does.

    Example:
        >>> import gpugrad as gg
        >>> x, w, b = gg.tensor([[1.0, -2.0]]), gg.tensor([[1.0, 0.0], [1.0, 1.0]]), gg.tensor([0.5, 0.0])
        >>> gg.dense(x, w, b, activation="relu").numpy().tolist()
        [[0.0, 0.0]]
        >>> gg.dense(x, w, b).numpy().tolist()
        [[-0.5, -2.0]]
    """
    if _mp.active and (out := _autocast.autocast_op(dense, (x, kernel, bias), activation=activation)) is not None:
        return out
    if x.__class__ is not Tensor:
        x = unary(x)
    if kernel.__class__ is not Tensor:
        kernel = unary(kernel)
    tensors = (x, kernel) if bias is None else (x, kernel, unary(bias))
    bias = None if bias is None else tensors[2]
    dev = x._device if kernel._device is x._device and (bias is None or bias._device is x._device) \
        else same_device(tensors, "Dense")
    _check(x, kernel, bias, activation)
    out = dense_array(dev, x._data, kernel._data, None if bias is None else bias._data, activation)
    return emit("Dense", out, dev, tensors, _ATTRS.get(activation))


def dense_array(dev, x, kernel, bias, activation, out=None):
    """The array ``dense`` computes from arrays ``x``, ``kernel``, ``bias`` (or None) on ``dev``; the matrix
    product goes into ``out`` when given (a fresh array of its shape and dtype), and the rest in place."""
    xp = dev.xp
    out = _dt.narrow(xp.matmul(x, kernel, out=out), x, kernel)  # fresh: the steps below may write into it
    if bias is not None:
        if xp.result_type(out, bias) == out.dtype:
            xp.add(out, bias, out=out)
        else:
            out = out + bias
    if activation == "relu":
        relu_array(dev, out, out=out)
    elif activation == "tanh":
        xp.tanh(out, out=out)
    elif activation == "sigmoid":
        out = sigmoid_array(dev, out)
    return out


# Never in a CUDA Graph: its product is cuBLAS's, refused while a stream captures (see MatMul's replay in
# linalg.py); the bias and activation after it are one or two launches, not worth a graph of their own.
@replay.replays("Dense")
def _dense_replay(inputs, attrs, outputs, device):
    # dense_array into the output (operands of its dtype: the product is not narrowed into a fresh array)
    x, kernel = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) == 3 else None
    activation = None if attrs is None else attrs["activation"]
    out = outputs[0]
    if x.dtype != kernel.dtype or x.dtype != out.dtype:
        return None
    return lambda: replay.into(out, dense_array(device, x, kernel, bias, activation, out=out))


@RegisterGradient("Dense")
def _dense_grad(op, dy):
    # y = act(z), z = x W + b:  dz = act'(y) dy;  dx = dz W^T, dW = x^T dz, db = dz summed over rows
    x, kernel = op.inputs[0], op.inputs[1]
    if op.attrs is not None:
        dy = _ACTIVATION_GRADS[op.attrs["activation"]](op.outputs[0], dy)
    needs = op.needs_grad
    gx = matmul(dy, kernel, transpose_b=True) if needs[0] else None
    gk = gb = None
    if needs[1]:
        if x._data.ndim == 1:  # an outer product
            gk = matmul(reshape(x, (x.shape[0], 1)), reshape(dy, (1, dy.shape[0])))
        elif x._data.ndim == 2:
            gk = matmul(x, dy, transpose_a=True)
        else:  # every leading axis is a row
            gk = matmul(reshape(x, (-1, x.shape[-1])), reshape(dy, (-1, dy.shape[-1])), transpose_a=True)
    if len(needs) == 3 and needs[2]:
        gb = dy if dy._data.ndim == 1 else sum(dy, axis=tuple(range(dy._data.ndim - 1)))
    return (gx, gk) if len(needs) == 2 else (gx, gk, gb)


__all__ = public_ops(globals(), not_ops=("dense_array",))

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "dense"
    ]
