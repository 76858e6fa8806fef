"""``SoftmaxCrossEntropy`` on the CPU as one compiled loop: how ``gg.function(jit_compile=True)`` replays it.

The eager forward (:func:`gpugrad.ops.loss.losses.softmax_cross_entropy_arrays`, and the label check before
it) makes a dozen NumPy calls on small arrays: the row max, the shift, ``exp``, the row sums, ``log``, the
picked logits, the mean, the division. Under ``jit_compile`` a CPU plan runs them as one numba loop per
row (:func:`kernel`): the labels checked first (a label outside ``[0, classes)`` raises eager's error, nothing
written), then per row the max (NaN propagates, as ``np.max``), ``e = exp(x - max)``, their sum in float64
rounded once to the dtype, ``probs = e / total`` and ``loss = log(total) - (x[label] - max)``, and the
losses' mean or sum in float64. The shift and ``x[label] - max`` are eager's bits; ``exp`` and ``log``
(libm's where eager runs NumPy's) and the float64 sums make the results differ from eager's in their last
bits, within :func:`gpugrad._tracing.fusion.bound.cross_entropy_tolerance`.

Its gradient ``SoftmaxCrossEntropyGrad`` is one loop too (:func:`grad_kernel`): ``probs * dy`` then ``- dy`` at
each row's label, eager's two operations in their order, so eager's bits.

Float32 and float64 arrays of one dtype with int64 labels, C-contiguous and not empty, are compiled; other
steps keep their replay kernel.

Example:
    >>> import numpy as np, gpugrad as gg
    >>> f = gg.function(lambda x, y: gg.softmax_cross_entropy(x, y), jit_compile=True)
    >>> x = gg.tensor(np.array([[2.0, 0.0], [0.0, 0.0]], np.float32))
    >>> round(f(x, gg.tensor([0, 1])).item(), 4), round(f(x, gg.tensor([0, 1])).item(), 4)
    (0.41, 0.41)
"""
from __future__ import annotations

import math

import numpy as np

from ...backend import CPU
from ...ops import replay
from ...ops.loss.losses import _softmax_cross_entropy_grad_cpu, check_labels
from ..capture import KernelStep

__all__ = ["kernel", "grad_kernel", "compiled", "CrossEntropyStep", "CrossEntropyGradStep", "replace"]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def kernel(logits, labels, probs, losses, reduction, total):
    """Softmax cross-entropy of ``logits`` (rows, classes) against int64 ``labels`` (rows,): ``probs`` (rows,
    classes) and ``losses`` ((rows,) for ``reduction`` 0, else (1,): their mean (1) or sum (2)) written;
    ``total`` a one-element scratch array of the dtype. Returns -1, or the first row whose label is out of
    range (then nothing is written). Plain Python: :func:`compiled` is it through numba.

    Example:
        >>> x = np.array([[0.0, 0.0]]); p, l = np.empty((1, 2)), np.empty(1)
        >>> kernel(x, np.array([1]), p, l, 0, np.empty(1)), p.tolist(), round(float(l[0]), 4)
        (-1, [[0.5, 0.5]], 0.6931)
    """
    rows, classes = logits.shape
    for r in range(rows):
        y = labels[r]
        if y < 0 or y >= classes:
            return r
    acc = 0.0
    for r in range(rows):
        top = logits[r, 0]
        for j in range(1, classes):
            x = logits[r, j]
            if x > top or x != x:  # NaN wins, as np.max
                top = x
        s = 0.0  # float64
        for j in range(classes):
            e = math.exp(logits[r, j] - top)
            probs[r, j] = e
            s += e
        total[0] = s  # rounded once to the dtype
        t = total[0]
        for j in range(classes):
            probs[r, j] = probs[r, j] / t
        loss = math.log(t) - (logits[r, labels[r]] - top)
        if reduction == 0:
            losses[r] = loss
        else:
            acc += loss
    if reduction == 1:
        losses[0] = acc / rows
    elif reduction == 2:
        losses[0] = acc
    return -1


def grad_kernel(probs, labels, dy, out):
    """``out = probs * dy`` per row, then ``out[label] -= dy``, as ``_softmax_cross_entropy_grad_cpu`` computes
    it: ``probs``, ``out`` (rows, classes), int64 ``labels`` (rows,), ``dy`` (rows,) or (1,) (one for every
    row). Returns -1, or the first row whose label is out of range (then nothing is written).

    Example:
        >>> out = np.empty((1, 2))
        >>> grad_kernel(np.array([[0.25, 0.75]]), np.array([1]), np.array([2.0]), out), out.tolist()
        (-1, [[0.5, -0.5]])
    """
    rows, classes = probs.shape
    for r in range(rows):
        y = labels[r]
        if y < 0 or y >= classes:
            return r
    shared = dy.size == 1
    for r in range(rows):
        d = dy[0] if shared else dy[r]
        for j in range(classes):
            out[r, j] = probs[r, j] * d
        out[r, labels[r]] = out[r, labels[r]] - d
    return -1


_compiled: dict = {}


def compiled(name="kernel"):
    """:func:`kernel` (or ``name``: ``"grad_kernel"``) through numba (compiled on first call, cached on disk), or
    None without numba.

    Example:
        >>> compiled() is None or callable(compiled())
        True
    """
    if name not in _compiled:
        try:
            import numba
        except ImportError:
            return None
        _compiled[name] = numba.njit(cache=True, error_model="numpy", nogil=True)(globals()[name])
    return _compiled[name]


class CrossEntropyStep(KernelStep):
    """A ``SoftmaxCrossEntropy`` kernel step whose build is :func:`kernel` compiled (same inputs and outputs:
    ``logits, labels, probs`` (probs filled), the loss); ``compile_seconds`` once built."""

    __slots__ = ("compile_seconds",)

    def build(self, moved=None):
        moved = moved or {}
        logits, labels, probs = [moved.get(id(a), a) for a in self.inputs]
        out = moved.get(id(self.outputs[0]), self.outputs[0])
        reduction = _REDUCTIONS["none" if self.attrs is None else self.attrs["reduction"]]
        classes = logits.shape[-1]
        x2, p2, y1 = logits.reshape(-1, classes), probs.reshape(-1, classes), labels.reshape(-1)
        losses = out.reshape(-1)
        total = np.empty(1, logits.dtype)
        fn = compiled()
        shape = logits.shape
        from . import precompile
        self.compile_seconds = precompile(fn, (x2, y1, p2, losses, reduction, total))

        def run():
            if fn(x2, y1, p2, losses, reduction, total) >= 0:
                check_labels(labels, shape, "SoftmaxCrossEntropy")  # raises eager's error
        return run


class CrossEntropyGradStep(KernelStep):
    """A ``SoftmaxCrossEntropyGrad`` kernel step whose build is :func:`grad_kernel` compiled; ``compile_seconds``
    once built."""

    __slots__ = ("compile_seconds",)

    def build(self, moved=None):
        moved = moved or {}
        probs, labels, dy = [moved.get(id(a), a) for a in self.inputs]
        out = moved.get(id(self.outputs[0]), self.outputs[0])
        classes = probs.shape[-1]
        p2, y1, d1, o2 = probs.reshape(-1, classes), labels.reshape(-1), dy.reshape(-1), out.reshape(-1, classes)
        fn = compiled("grad_kernel")
        from . import precompile
        self.compile_seconds = precompile(fn, (p2, y1, d1, o2))

        def run():
            if fn(p2, y1, d1, o2) >= 0:  # eager's formula, and its IndexError
                replay.into(out, _softmax_cross_entropy_grad_cpu(probs, labels, dy))
        return run


def _fits_grad(step):
    if step.op_type != "SoftmaxCrossEntropyGrad" or step.device is not CPU or len(step.inputs) != 3 \
            or len(step.outputs) != 1:
        return False
    probs, labels, dy = step.inputs
    out = step.outputs[0]
    return (probs.size > 0 and probs.ndim >= 1 and probs.dtype.char in "fd" and labels.dtype == np.int64
            and dy.dtype == probs.dtype and out.dtype == probs.dtype and out.shape == probs.shape
            and labels.shape == probs.shape[:-1] and dy.shape in (labels.shape, ())
            and all(type(a) is np.ndarray and a.flags.c_contiguous for a in (probs, labels, dy, out)))


def _fits(step):
    if step.op_type != "SoftmaxCrossEntropy" or step.device is not CPU or len(step.inputs) != 3 \
            or len(step.outputs) != 1:
        return False
    logits, labels, probs = step.inputs
    out = step.outputs[0]
    return (logits.size > 0 and logits.ndim >= 1 and logits.dtype.char in "fd" and labels.dtype == np.int64
            and probs.dtype == logits.dtype and out.dtype == logits.dtype and probs.shape == logits.shape
            and labels.shape == logits.shape[:-1] and all(type(a) is np.ndarray and a.flags.c_contiguous
                                                         for a in (logits, labels, probs, out)))


def replace(steps):
    """``steps`` with each CPU ``SoftmaxCrossEntropy`` (and ``SoftmaxCrossEntropyGrad``) kernel step that fits (see
    the module docstring) as a :class:`CrossEntropyStep` (:class:`CrossEntropyGradStep`); how many (nothing without
    numba).

    Example:
        >>> replace([])
        ([], 0)
    """
    if compiled() is None:
        return steps, 0
    out, n = [], 0
    for s in steps:
        if type(s) is KernelStep and _fits(s):
            s = CrossEntropyStep(s.op_type, s.inputs, s.attrs, s.outputs, s.device, s.fills)
            n += 1
        elif type(s) is KernelStep and _fits_grad(s) and compiled("grad_kernel") is not None:
            s = CrossEntropyGradStep(s.op_type, s.inputs, s.attrs, s.outputs, s.device, s.fills)
            n += 1
        out.append(s)
    return out, n
