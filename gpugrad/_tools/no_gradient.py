"""Where gpugrad gives no gradient (``None``) and where a zero one: each case, decided once, with its reason.

The rule (DESIGN, "a real zero where TensorFlow or PyTorch give a zero"): a source connected only
through an op whose derivative is zero gets zeros of its shape and dtype, not ``None``, wherever
TensorFlow or PyTorch differentiate the op as zero (``sign``; the fused gradients of the piecewise
linear ``abs``, ``relu`` and ``leaky_relu``, whose second derivative is zero). ``None`` stays where
both peers give no gradient, and the reason is one of:

- ``integer``: the op's output (or that input) is an integer or boolean tensor, which carries no
  gradient in either peer (TensorFlow declares ``ArgMax``, ``All``, ... not differentiable; PyTorch
  refuses ``requires_grad`` on integer tensors). The same holds for the boolean and integer ops gpugrad
  does not record at all: comparisons (``<``, ``gg.equal``, ...), ``isnan``/``isfinite``/``isinf``, the
  logical ops, ``argsort``, ``searchsorted``, ``nonzero`` and ``where(cond)`` alone.
- ``none``: the gradient is cut on purpose (``stop_gradient``), or it flows only through a
  comparison mask, which neither peer differentiates (TensorFlow's ``Maximum`` and ``ClipByValue``
  gradients select with ``GreaterEqual``/``Less`` masks, not differentiable; PyTorch's ``maximum`` and
  ``clamp`` backward select with boolean masks); pass ``unconnected_gradients="zero"`` for zeros there.
- ``unneeded``: the rule skips an input's gradient only when the sweep does not ask for it
  (``op.needs_grad``); asked, it is computed.

:data:`DECISIONS` maps ``(op type, input index)`` to a :class:`Decision`; index ``None`` stands
for an op declared with ``gg.NotDifferentiable`` (every input). ``tests/test_trust_zero_gradients.py``
checks each decision against what the tape does, and fails when a new ``NotDifferentiable`` op or
a rule returning a literal ``None`` for an input appears here without one.

Example:
    >>> DECISIONS[("Sign", 0)].kind, DECISIONS[("ArgMax", None)].kind
    ('zero', 'integer')
"""
import dataclasses
from typing import Callable, Optional

import gpugrad as gg

KINDS = ("zero", "integer", "none", "unneeded")


@dataclasses.dataclass(frozen=True)
class Decision:
    """One case: ``kind`` (one of :data:`KINDS`), the ``reason`` with the peers' behaviour, and for an
    op declared not differentiable an ``example(x)`` that records it from a float tensor ``x`` of shape (3, 4)."""

    kind: str
    reason: str
    example: Optional[Callable] = None


DECISIONS = {
    # ---------------------------------------------------------------- zeros, as TensorFlow and PyTorch give
    ("Sign", 0): Decision("zero", "piecewise constant: TensorFlow's SignGrad and PyTorch's sign give zeros"),
    ("AbsGrad", 0): Decision("zero", "dy sign(x) is piecewise constant in x: TensorFlow (through Sign) and "
                                     "PyTorch (sgn's backward) give zeros"),
    ("ReluGrad", 0): Decision("zero", "dy (y > 0) is piecewise constant in y: TensorFlow's ReluGradGrad and "
                                      "PyTorch's threshold_backward give zeros"),
    ("LeakyReluGrad", 0): Decision("zero", "piecewise constant in x: TensorFlow's LeakyReluGradGrad and PyTorch's "
                                           "leaky_relu_backward give zeros"),
    # ---------------------------------------------------------------- integer or boolean: no gradient in either
    ("ArgMax", None): Decision("integer", "int64 indices: TensorFlow declares ArgMax not differentiable; PyTorch's "
                                          "argmax output has no grad_fn", lambda x: gg.argmax(x, axis=1)),
    ("ArgMin", None): Decision("integer", "int64 indices: TensorFlow declares ArgMin not differentiable; PyTorch's "
                                          "argmin output has no grad_fn", lambda x: gg.argmin(x, axis=1)),
    ("Unique", None): Decision("integer", "a data-dependent set of values and int64 indices and counts: "
                                          "TensorFlow declares Unique not differentiable; PyTorch's unique "
                                          "has no derivative", lambda x: gg.unique(gg.cast(x, "int64"))),
    ("Bincount", None): Decision("integer", "counts of integers (weights summed per integer bin): TensorFlow "
                                            "declares Bincount not differentiable; PyTorch's bincount has no "
                                            "derivative", lambda x: gg.bincount(gg.cast(gg.abs(x[0]), "int64"))),
    ("MaxPool2DIndices", None): Decision(
        "integer", "int64 positions of the maxima: TensorFlow's MaxPoolWithArgmax gives its argmax no gradient; "
                   "PyTorch's max_pool2d(return_indices=True) indices carry none", lambda x: gg.max_pool2d(gg.reshape(x, (1, 1, 3, 4)), 2, return_indices=True)[1]),
    ("AdaptiveMaxPool2DIndices", None): Decision(
        "integer", "int64 positions of the window maxima: TensorFlow's MaxPoolWithArgmax gives its argmax no "
                   "gradient; PyTorch's adaptive_max_pool2d(return_indices=True) indices carry none",
        lambda x: gg.adaptive_max_pool2d(gg.reshape(x, (1, 1, 3, 4)), (2, 3), return_indices=True)[1]),
    ("All", None): Decision("integer", "boolean output: TensorFlow's All and PyTorch's all have no gradient",
                            lambda x: gg.all(x, axis=1)),
    ("Any", None): Decision("integer", "boolean output: TensorFlow's Any and PyTorch's any have no gradient",
                            lambda x: gg.any(x, axis=1)),
    ("CountNonzero", None): Decision("integer", "int64 count: TensorFlow's count_nonzero and PyTorch's count_nonzero "
                                                "have no gradient", lambda x: gg.count_nonzero(x, axis=1)),
    ("Cast", 0): Decision("integer", "a cast to or from an integer dtype: TensorFlow's CastGrad returns None there; "
                                     "PyTorch's integer tensors carry no gradient",
                          lambda x: gg.cast(x, "int32")),
    ("SoftmaxCrossEntropy", 1): Decision("integer", "integer labels: TensorFlow's sparse softmax cross-entropy and "
                                                    "PyTorch's cross_entropy give class indices no gradient"),
    ("SoftmaxCrossEntropyGrad", 1): Decision("integer", "as SoftmaxCrossEntropy's labels: integer class indices"),
    # ---------------------------------------------------------------- none, on purpose
    ("StopGradient", None): Decision("none", "its purpose: TensorFlow declares StopGradient not differentiable; "
                                             "PyTorch's detach", lambda x: gg.stop_gradient(x)),
    ("SoftmaxCrossEntropy", 2): Decision("none", "the softmax probabilities are an input only so that the rule and "
                                                 "the second derivative read them; the loss's whole derivative, "
                                                 "(probs - onehot) dy, goes to the logits (TensorFlow's and PyTorch's "
                                                 "fused loss have no such input); a gradient here would count it twice"),
    ("MaximumGrad", 0): Decision("none", "x reaches the result only through the mask x >= y: TensorFlow's Maximum "
                                         "gradient selects with GreaterEqual (not differentiable), PyTorch's maximum "
                                         "backward with a boolean mask"),
    ("MaximumGrad", 1): Decision("none", "as MaximumGrad's x: y reaches the result only through the mask"),
    ("MinimumGrad", 0): Decision("none", "x reaches the result only through the mask x <= y: TensorFlow's Minimum "
                                         "gradient selects with LessEqual (not differentiable), PyTorch's minimum "
                                         "backward with a boolean mask"),
    ("MinimumGrad", 1): Decision("none", "as MinimumGrad's x: y reaches the result only through the mask"),
    ("ClipGrad", 0): Decision("none", "x reaches the result only through the mask lo <= x <= hi: TensorFlow's "
                                      "ClipByValue gradient selects with Less/Greater (not differentiable), PyTorch's "
                                      "clamp backward with a boolean mask"),
    # ---------------------------------------------------------------- only when not asked for
    ("Div", 1): Decision("unneeded", "the divisor's gradient is skipped only when op.needs_grad says no one asks"),
}
