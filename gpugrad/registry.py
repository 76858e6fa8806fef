"""The gradient table: one rule per op type, looked up by name.

A rule is ``fn(op, *output_grads) -> input_grads``: it sees the upstream
gradients and ``op.type``, ``op.inputs``, ``op.outputs``, ``op.attrs`` and
returns one gradient per input (``None`` for none). Rules are written with
gpugrad ops, so an outer tape records them and higher orders come for free.
"""
from .errors import GradientError, LookupGradientError

rules: dict = {}  # op type -> gradient rule
rules_reading_outputs: set[str] = set()  # op types whose rule reads `op.outputs` (declared): the sweep keeps them for it
rules_donating_dy: set[str] = set()  # op types whose rule lets a fused gradient op write into dy's buffer (declared)
_not_differentiable: set[str] = set()


def RegisterGradient(op_type, *, reads_outputs=True, donates_dy=False):  # noqa: N802 - TensorFlow's spelling
    """Register the decorated function as the gradient of ``op_type``.

    Two declarations let the backward sweep save memory; both are promises about
    the rule's own code, never inferred from it:

    - ``reads_outputs=False``: the rule never reads ``op.outputs``, so the sweep
      frees them before it runs (reading ``op.outputs`` then raises GradientError).
    - ``donates_dy=True``: the rule passes its upstream gradient ``dy`` to one fused
      gradient op (``gg.raw_ops``-style ``*_grad``) and never reads ``dy`` again, so
      that op may write its result into ``dy``'s buffer when nothing else holds it.

    The defaults keep everything and write into nothing: right for any rule.

    Example:
        >>> import gpugrad as gg
        >>> @gg.RegisterGradient("DocCube")
        ... def _cube_grad(op, dy):
        ...     (x,) = op.inputs
        ...     return [dy * 3 * x * x]
        >>> x = gg.tensor(2.0)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.tensor(x.numpy() ** 3)
        ...     gg.record_operation("DocCube", [y], [x])
        >>> tape.gradient(y, x).item()
        12.0
    """
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"an op type is a non-empty string, not {op_type!r}")

    def register(fn):
        if not callable(fn):
            raise TypeError(f"a gradient rule is a function fn(op, *output_grads), not {type(fn).__name__}")
        if op_type in rules or op_type in _not_differentiable:
            raise GradientError(f"a gradient for op type {op_type!r} is already registered")
        rules[op_type] = fn
        if reads_outputs:
            rules_reading_outputs.add(op_type)
        if donates_dy:
            rules_donating_dy.add(op_type)
        return fn

    return register


def NotDifferentiable(op_type):  # noqa: N802
    """Declare that ``op_type`` has no gradient: its inputs get ``None``.

    gpugrad declares only ops with integer or boolean outputs and ``StopGradient``; an op whose
    derivative is zero (``Sign``) has a rule returning zeros instead, as in TensorFlow and PyTorch.
    Each case and its reason: ``gpugrad/_tools/no_gradient.py``.

    Example:
        >>> import gpugrad as gg
        >>> gg.NotDifferentiable("DocRound")
    """
    if op_type in rules or op_type in _not_differentiable:
        raise GradientError(f"a gradient for op type {op_type!r} is already registered")
    _not_differentiable.add(op_type)


def gradient_rule(op_type):
    """The rule of ``op_type``; ``None`` for a non-differentiable op."""
    rule = rules.get(op_type)
    if rule is None and op_type not in _not_differentiable:
        raise LookupGradientError(
            f"no gradient is registered for op type {op_type!r}; register one with "
            f"@gg.RegisterGradient({op_type!r}) or mark it with gg.NotDifferentiable({op_type!r})")
    return rule


def registered_ops():
    """Sorted names of every op type with a registered gradient.

    Example:
        >>> "Log" in registered_ops()
        True
    """
    return sorted(rules)


def not_differentiable_ops():
    """Sorted names of every op type declared non-differentiable."""
    return sorted(_not_differentiable)
