"""The bound a fused region holds against eager execution (``gg.function(jit_compile=True)``).

Per element of each result, in float32 and float64, given the same operands:

- ``+ - * /``, ``sqrt``, comparisons, ``where``, ``maximum``/``minimum``, ``abs`` and negation give eager's
  bits (IEEE rounding, nothing contracted into an FMA or reordered);
- a transcendental call (``exp``, ``log``, ``tanh``, ``sin``, ...; libm's on the CPU, CUDA's on a GPU, where
  eager runs NumPy's or CuPy's loops) is within :data:`TRANSCENDENTAL_ULPS` ulp of eager's result; in a CPU
  region of ``regions.LARGE`` elements or more an op that is one such call (``exp(x)``, ``log(x)``,
  ``power(x, y)``) is NumPy's ufunc on the region's blocks, so eager's bits;
- a hot gradient's ``math`` may order its arithmetic unlike its eager formula: one ulp per operation of it;
- each element of a sum or mean (over any axes) of ``n`` terms is within ``(log2(n) + 2) * eps * sum(|terms|)``
  of eager's (on the CPU the fused sum adds in float64, so the difference is NumPy's own rounding; on a GPU
  CuPy's reduction adds in float for 16-bit and float32, double for float64, as eager's ``cupy.sum``); the
  chunks a CPU region is split into are combined in chunk order, so a result does not depend on thread
  timing; a max gives eager's bits, but for the sign of a zero maximum that zeros of both signs tie for (the
  fused loop keeps the later one, as ``np.maximum.reduce`` in order; NumPy's SIMD lanes may keep another from
  9 float64 or 17 float32 terms);
- NaN and infinities propagate as in eager (a NaN term makes a sum, mean and max NaN); a float32 sum whose
  terms' magnitudes add up past float32's largest finite value (:func:`may_overflow`) is the float64 total
  rounded, where NumPy's float32 partial sums may overflow to inf or NaN (as XLA's reductions, in their order).

Compiled steps beside the regions (:mod:`.cpu_optimizers`, :mod:`.cpu_dense`, the gradient of
:mod:`.cpu_cross_entropy`) give eager's bits. ``SoftmaxCrossEntropy``'s compiled forward
(:mod:`.cpu_cross_entropy`: libm's ``exp`` and ``log``, row sums in float64) is within
:func:`cross_entropy_tolerance`: with ``U`` = :data:`TRANSCENDENTAL_ULPS` and ``C`` classes, each probability
within ``(2U + log2(C) + 4) * eps`` of eager's, relatively (``exp`` U ulp, the row sum ``U + log2(C) + 3``
as :func:`sum_tolerance` allows, the division one); each example's loss ``log(total) - shifted[label]``
within ``(2U + log2(C) + 7) * eps * (1 + |loss|)``; their mean or sum within those averaged or added, plus
:func:`sum_tolerance` of the losses (over the number of examples, for a mean) and one rounding.

A chain passes each op's difference on as the math does (its condition number): :func:`ulps` gives one op's
allowance, and ``tests/test_jit_fusion.py`` holds every fusable op to it in a chain of three or more.

Example:
    >>> ulps("Add"), ulps("Tanh"), ulps("TanhGrad")
    (0, 4, 3)
"""
import numpy as np

from ...ops.replay import lookup
from . import expr

__all__ = ["TRANSCENDENTAL_ULPS", "ulps", "sum_tolerance", "may_overflow", "cross_entropy_tolerance"]

TRANSCENDENTAL_ULPS = 4  # libm and NumPy's SIMD loops: each within 1-4 ulp of the true value


def _operations(text):
    import ast
    nodes = ast.walk(ast.parse(text, mode="eval"))
    return sum(isinstance(n, (ast.BinOp, ast.UnaryOp)) for n in nodes)


def ulps(op_type):
    """The ulps of its result that op ``op_type`` fused may differ from eager by (operands equal).

    Example:
        >>> ulps("LogGrad")
        1
    """
    r = lookup(op_type)
    names, _, text = r.expression
    called = expr.calls(text)
    transcendental = len(called - expr.ARITHMETIC)
    if text.startswith(tuple(sorted(called))) and text.count("(") == 1:  # one ufunc call: the op itself
        return TRANSCENDENTAL_ULPS * transcendental
    return TRANSCENDENTAL_ULPS * transcendental + _operations(text)


def sum_tolerance(terms):
    """How far a fused sum of float array ``terms`` may be from ``np.sum(terms)``.

    Example:
        >>> float(sum_tolerance(np.ones(1024, np.float32))) == (10 + 2) * 2.0 ** -23 * 1024
        True
    """
    terms = np.asarray(terms)
    eps = np.finfo(terms.dtype).eps
    n = max(terms.size, 2)
    return (np.log2(n) + 2) * eps * np.sum(np.abs(terms.astype(np.float64)))


def may_overflow(terms):
    """Whether a sum of float array ``terms`` may overflow in its dtype's partial sums: the sum of their magnitudes
    passes its largest finite value (then eager may give inf or NaN where the fused sum, in float64, is finite).

    Example:
        >>> may_overflow(np.full(2, 3e38, np.float32)), may_overflow(np.full(2, 1e38, np.float32))
        (True, False)
    """
    terms = np.asarray(terms)
    return bool(np.sum(np.abs(terms.astype(np.float64))) > np.finfo(terms.dtype).max)


def cross_entropy_tolerance(logits, labels, reduction="mean"):
    """``(probs_rtol, loss_atol)``: how far the compiled ``SoftmaxCrossEntropy`` may be from eager's, for float
    ``logits`` (..., C) and int ``labels`` (...): each probability relatively, the loss (per example for
    ``reduction="none"``, an array; else a number) absolutely (see the module docstring).

    Example:
        >>> rtol, atol = cross_entropy_tolerance(np.zeros((4, 2), np.float32), np.zeros(4, int))
        >>> float(rtol) == (2 * TRANSCENDENTAL_ULPS + 1 + 4) * 2.0 ** -23, bool(0 < atol < 1e-5)
        (True, True)
    """
    logits = np.asarray(logits)
    eps = float(np.finfo(logits.dtype).eps)
    classes = max(logits.shape[-1], 2)
    u = TRANSCENDENTAL_ULPS
    x = logits.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    picked = np.take_along_axis(shifted, np.asarray(labels)[..., None], axis=-1)[..., 0]
    losses = np.log(np.exp(shifted).sum(axis=-1)) - picked
    per_example = (2 * u + np.log2(classes) + 7) * eps * (1 + np.abs(losses))
    probs_rtol = (2 * u + np.log2(classes) + 4) * eps
    if reduction == "none":
        return probs_rtol, per_example
    n = max(losses.size, 1)
    total = float(per_example.sum()) + float(sum_tolerance(losses.astype(logits.dtype))) + eps * abs(losses.sum())
    return probs_rtol, total / n if reduction == "mean" else total
