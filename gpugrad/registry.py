"""The gradient table: one rule per op type, looked up by name.

A rule is ``fn(op, *output_grads) -> input_grads``: it sees the upstream
gradients and ``op.type``, ``op.inputs``, ``op.outputs``, ``op.attrs`` and
returns one gradient per input (``None`` for none). Rules are written with
gpugrad ops, so an outer tape records them and higher orders come for free.
"""
from .errors import GradientError, LookupGradientError

rules = {}  # op type -> gradient rule
rules_reading_outputs = set()  # op types whose rule mentions `outputs`: the sweep keeps them for it
_not_differentiable = set()


def RegisterGradient(op_type):  # noqa: N802 - TensorFlow's spelling
    """Register the decorated function as the gradient of ``op_type``.

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
        if op_type in rules or op_type in _not_differentiable:
            raise GradientError(f"a gradient for op type {op_type!r} is already registered")
        rules[op_type] = fn
        if _mentions(getattr(fn, "__code__", None), "outputs"):
            rules_reading_outputs.add(op_type)
        return fn

    return register


def _mentions(code, name):
    """Whether ``code`` (or code nested in it) names attribute or variable ``name``.

    A rule that never mentions ``outputs`` lets the backward sweep free the op's
    outputs before the rule runs, so its result can reuse their memory.
    """
    if code is None:
        return True  # a callable object: assume it reads everything
    if name in code.co_names or name in code.co_varnames:
        return True
    return any(_mentions(c, name) for c in code.co_consts if hasattr(c, "co_names"))


def NotDifferentiable(op_type):  # noqa: N802
    """Declare that ``op_type`` has no gradient: its inputs get ``None``.

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


def is_differentiable(op_type):
    return op_type in rules


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
