"""Replay kernels: the ops a plan may run as one prebound array call into their output array.

``build(op_type, inputs, attrs, outputs, device)`` returns a function of no arguments that
computes op ``op_type``'s outputs from arrays ``inputs`` into arrays ``outputs`` (the ones
the trace's eager call made) with the very array calls the op's forward makes, so to the
same bits; or None, and the op is replayed by calling it again. A kernel is declared only
where its bits are the forward's: the ufunc the forward calls, with ``out=``, for float
operands of one dtype (the forward's own dtype rules apply to the rest); the reductions'
ufunc ``reduce``; ``matmul``; the hot gradients' own formulas (``cpu=`` of their declaration
on the CPU, their fused kernel on a GPU). ``tests/test_function.py`` replays every op of the
spec table against its eager result, bit for bit.

Example:
    >>> import numpy as np
    >>> from gpugrad.backend import CPU
    >>> x, out = np.array([0.0, 1.0]), np.empty(2)
    >>> _ = build("Exp", [x], None, [out], CPU)()
    >>> out.tolist() == np.exp(x).tolist()
    True
"""
import functools

import numpy as np

from ..backend import CPU, cpu_fast
from ..backend.cpu_fast import CHEAP, COSTLY
from ..ops import base as _base
from ..ops import conv, losses, pool
from ..ops.dense_layer import dense_array
from ..ops.hot import HOT_GRADIENTS
from ..ops.reductions import group_size

# op type -> name of the ufunc its forward applies to float operands of one dtype (NumPy's and CuPy's)
UNARY = {"Neg": "negative", "Exp": "exp", "Log": "log", "Tanh": "tanh", "Sqrt": "sqrt", "Square": "square",
         "Abs": "absolute", "Sin": "sin", "Cos": "cos", "Log1p": "log1p", "Expm1": "expm1"}
BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Div": "true_divide", "Pow": "power"}
# the forwards that go through ops.base.elementwise on the CPU, and their cost class there
_ELEMENTWISE_COST = {"Exp": COSTLY, "Log": COSTLY, "Tanh": COSTLY, "Sqrt": COSTLY, "Square": CHEAP}

_HOT_BY_TYPE: dict = {}


def _hot(op_type):
    if not _HOT_BY_TYPE:
        _HOT_BY_TYPE.update({h.op_type: h for h in HOT_GRADIENTS.values()})
    return _HOT_BY_TYPE.get(op_type)


def is_constant(a):
    """Whether array ``a`` is one of the ops' cached 0-d constants (the same every call)."""
    if getattr(a, "ndim", 1) != 0:
        return False
    return any(t._data is a for t in _base._scalar_tensors.values()) or \
        any(c is a for c in _base._host_scalars.values()) or \
        any(c is a for table in (_base.ONE, _base.ZERO) for c in table.values())


def _floats_of_one_dtype(arrays, outputs):
    dtype = outputs[0].dtype
    return dtype.kind == "f" and all(a.dtype == dtype for a in arrays) and all(o.dtype == dtype for o in outputs)


def build(op_type, inputs, attrs, outputs, device, fills=False):
    """A function of no arguments that runs op ``op_type`` from ``inputs`` into ``outputs``; or None.

    ``fills``: the op made the arrays it saves in ``attrs`` (its keys in :data:`FILLS_ATTRS`), and the
    kernel computes them too."""
    hot = _hot(op_type)
    if hot is not None:
        return _hot_kernel(hot, inputs, attrs, outputs, device)
    if fills:
        filler = _FILLING.get(op_type)
        return None if filler is None else filler(inputs, attrs, outputs, device)
    composite = _COMPOSITE.get(op_type)
    if composite is not None:
        return composite(inputs, attrs, outputs, device)
    if not _floats_of_one_dtype(inputs, outputs) or len(outputs) != 1:
        return None
    out = outputs[0]
    xp = device.xp
    if op_type in UNARY:
        ufunc = getattr(xp, UNARY[op_type])
        cost = _ELEMENTWISE_COST.get(op_type)
        if device is CPU and cost is not None and inputs[0].size >= cost:
            return functools.partial(cpu_fast.run, ufunc, (inputs[0],), cost, out)
        return functools.partial(ufunc, inputs[0], out=out)
    if op_type in BINARY:
        return functools.partial(getattr(xp, BINARY[op_type]), inputs[0], inputs[1], out=out)
    if op_type == "Relu":
        if device is CPU:
            return functools.partial(cpu_fast.run, cpu_fast.relu, (inputs[0],), CHEAP, out)
        return functools.partial(xp.maximum, inputs[0], 0, out=out)
    if op_type == "MatMul":
        a, b = inputs
        attrs = attrs or {}
        if attrs.get("transpose_a"):
            a = a.swapaxes(-1, -2)
        if attrs.get("transpose_b"):
            b = b.swapaxes(-1, -2)
        return functools.partial(xp.matmul, a, b, out=out)
    if op_type in ("Sum", "Mean", "Max") and attrs is not None and "axes" in attrs:
        return _reduction(op_type, inputs[0], attrs["axes"], out, device)
    return None


def _reduction(op_type, x, axes, out, device):
    keepdims = out.ndim == x.ndim and x.ndim > 0
    xp = device.xp
    if op_type == "Max":
        if device is not CPU or not x.size:
            return None
        return functools.partial(np.maximum.reduce, x, axis=axes, keepdims=keepdims, out=out)
    if device is not CPU:
        return None  # CuPy's sum and mean: replayed by calling the op
    if op_type == "Sum":
        return functools.partial(np.add.reduce, x, axis=axes, keepdims=keepdims, out=out)
    count = group_size(x.shape, axes)
    if count is None or not (x.dtype == np.float32 or x.dtype == np.float64):
        return None

    def mean():
        np.add.reduce(x, axis=axes, keepdims=keepdims, out=out)
        np.true_divide(out, count, out=out)
    return mean if xp is np else None


def _hot_kernel(h, inputs, attrs, outputs, device):
    params = None
    if h.params:
        params = {k: attrs[k] for k in h.params} if attrs is not None and all(k in attrs for k in h.params) else None
        if params is None or any(hasattr(v, "shape") and getattr(v, "ndim", 0) for v in params.values()):
            return None
    if device is CPU:
        if len(outputs) == 1 and h.cost is not None:
            if inputs[0].size < h.cost:  # what cpu_fast.run calls for an array this small, without its frame
                return functools.partial(h.cpu, *inputs, out=outputs[0], **(params or {}))
            return functools.partial(cpu_fast.run, h.cpu, tuple(inputs), h.cost, outputs[0], params)

        def several():
            results = h.cpu(*inputs, **(params or {}))
            for o, r in zip(outputs, results if isinstance(results, tuple) else (results,)):
                np.copyto(o, r)
        return several
    return functools.partial(device.backend.fused, h.name, *inputs, *outputs, **(params or {}))


def _into(out, result):
    """Copy ``result`` into ``out`` unless it already is ``out``."""
    if result is not out:
        out[...] = result


def _dense(inputs, attrs, outputs, device):
    x, kernel = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) == 3 else None
    activation = None if attrs is None else attrs["activation"]
    out = outputs[0]
    if x.dtype != kernel.dtype or x.dtype != out.dtype:
        return None
    return lambda: _into(out, dense_array(device, x, kernel, bias, activation, out=out))


def _softmax(inputs, attrs, outputs, device):
    (x,), out = inputs, outputs[0]
    if not x.size or attrs is None or x.dtype != out.dtype:
        return None
    axes = attrs["axes"]
    return lambda: _into(out, losses.softmax_array(device, x, axes))


def _softmax_cross_entropy(inputs, attrs, outputs, device):
    # its third input, the probabilities, is the output of the Softmax op its forward emits just before:
    # this kernel fills it too (FILLS_INPUTS), from the one pass the forward makes
    logits, labels, probs = inputs
    out = outputs[0]
    if not logits.size or labels.dtype != np.int64 or probs.dtype != logits.dtype:
        return None
    reduction = "none" if attrs is None else attrs["reduction"]

    def run():
        losses.check_labels(labels, logits.shape, "SoftmaxCrossEntropy")
        p, loss = losses.softmax_cross_entropy_arrays(device, logits, labels, reduction)
        _into(probs, p)
        _into(out, loss)
    return run


FILLS_INPUTS = {"SoftmaxCrossEntropy": (2,)}  # op type -> inputs its kernel computes too (made by its forward)


def _softmax_cross_entropy_grad(inputs, attrs, outputs, device):
    probs, labels, dy = inputs
    out = outputs[0]
    if device is not CPU:
        return None
    return lambda: _into(out, losses._softmax_cross_entropy_grad_cpu(probs, labels, dy))


def _conv2d(inputs, attrs, outputs, device):
    x, w = inputs[0], inputs[1]
    b = inputs[2].reshape(-1, 1, 1) if len(inputs) == 3 else None
    geom, out, xp = attrs["geom"], outputs[0], device.xp

    if not out.flags.c_contiguous:
        return None

    def run():
        conv._conv_forward(xp, x, w, geom, out=out)
        if b is not None:
            xp.add(out, b, out=out)  # as conv2d adds it to its fresh array
    return run


def _conv2d_backprop_input(inputs, attrs, outputs, device):
    (dy, w), out, xp = inputs, outputs[0], device.xp
    geom, x_shape = attrs["geom"], attrs["x_shape"]
    return lambda: _into(out, conv._backprop_input(xp, dy, w, x_shape, geom, out=out))


def _conv2d_backprop_filter(inputs, attrs, outputs, device):
    (x, dy), out, xp = inputs, outputs[0], device.xp
    geom, w_shape = attrs["geom"], attrs["w_shape"]
    return lambda: _into(out, conv._backprop_filter(xp, x, dy, w_shape, geom, out=out))


def _max_pool2d(inputs, attrs, outputs, device):
    # the forward's window maxima and their positions (attrs["argmax"], which the gradient reads)
    (x,), out, xp = inputs, outputs[0], device.xp
    argmax, kernel, geom = attrs["argmax"], attrs["kernel"], attrs["geom"]
    out_hw = out.shape[2:]

    def run():
        best, arg = pool._max_and_argmax(xp, x, kernel, geom, out_hw)
        _into(out, best)
        _into(argmax, arg)
    return run


def _max_pool2d_grad(inputs, attrs, outputs, device):
    (dy,), out, xp = inputs, outputs[0], device.xp
    return lambda: _into(out, pool.max_pool_route_array(xp, dy, attrs))


FILLS_ATTRS = {"MaxPool2D": ("argmax",)}  # op type -> the attrs its filling kernel computes
_FILLING = {"MaxPool2D": _max_pool2d}

_COMPOSITE = {"MaxPool2DGrad": _max_pool2d_grad, "Conv2D": _conv2d, "Conv2DBackpropInput": _conv2d_backprop_input,
              "Conv2DBackpropFilter": _conv2d_backprop_filter, "Dense": _dense, "Softmax": _softmax, "SoftmaxCrossEntropy": _softmax_cross_entropy,
              "SoftmaxCrossEntropyGrad": _softmax_cross_entropy_grad}


def graph_safe(op_type, inputs, attrs, outputs):
    """Whether the kernel of ``op_type`` on a GPU writes into its outputs and allocates nothing, so a CUDA
    Graph may hold it (see :mod:`.graphs`): ufuncs with ``out=`` and ReLU; ``matmul`` of C-contiguous operands;
    hot gradients' fused kernels given their outputs (arrays of one dtype, contiguous); ``dense`` of those.

    Example:
        >>> import numpy as np
        >>> graph_safe("Mul", [np.ones(2), np.ones(2)], None, [np.ones(2)]), graph_safe("Softmax", [], None, [])
        (True, False)
    """
    arrays = list(inputs) + list(outputs)
    if not arrays or not all(a.flags.c_contiguous for a in arrays):
        return False
    if op_type in UNARY or op_type in BINARY or op_type == "Relu":
        return _floats_of_one_dtype(inputs, outputs)
    if op_type == "MatMul":
        return not (attrs or {}).get("transpose_a") and not (attrs or {}).get("transpose_b") \
            and _floats_of_one_dtype(inputs, outputs)
    if op_type == "Dense":
        return (attrs is None or attrs["activation"] in ("relu", "tanh")) and _floats_of_one_dtype(inputs, outputs)
    hot = _hot(op_type)
    return hot is not None and _floats_of_one_dtype(inputs, outputs)
