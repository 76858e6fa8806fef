"""Custom gradients and low-level recording, through the same path as built-in ops."""
import functools
import inspect

from . import _nest as nest
from .errors import GradientError, GradientUsageError
from ._recorder import active_tapes, record
from .tensor import Tensor, ensure_tensor
from ._tracing import state as tracing_state


def record_operation(op_type, outputs, inputs, backward_fn=None):
    """Record that ``outputs`` were computed from ``inputs`` by op ``op_type``.

    ``backward_fn(*dys)`` returns one gradient per input; ``None`` means "use
    the gradient registered for ``op_type``". Does nothing when no tape records.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor(3.0)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.tensor(x.numpy() * 2)  # computed outside gpugrad
        ...     gg.record_operation("Double", [y], [x], lambda dy: [dy * 2])
        >>> tape.gradient(y, x).item()
        2.0
    """
    if not active_tapes():
        return
    inputs = tuple(ensure_tensor(t) for t in nest.flatten(inputs))
    outputs = tuple(nest.flatten(outputs))
    for t in outputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"record_operation outputs must be tensors, not {type(t).__name__}")
    record(outputs, inputs, op_type, {}, backward_fn)


def custom_gradient(f):
    """Decorate ``f(*xs) -> (y, grad_fn)`` to give ``y`` the gradient ``grad_fn``.

    As in TensorFlow, the arguments may be nested lists, tuples and dicts of
    tensors: their leaves are the inputs (Python numbers and NumPy arrays among
    them become constant tensors; other leaves pass through untouched), and
    ``grad_fn(*dys)`` returns one gradient per input leaf, flat or in the
    arguments' structure (a bare tensor for a single input). ``f`` may return
    Python numbers or NumPy arrays, which become tensors. If ``f`` reads
    trainable variables, ``grad_fn(*dys, variables=None)`` returns
    ``(input_grads, variable_grads)``.

    As TensorFlow does, the ops ``f`` runs are recorded on the tapes that are
    active, but only the custom op connects the inputs to ``y``: the gradient
    of ``y`` is ``grad_fn``'s, while a forward value ``grad_fn`` reads (``e``
    below) stays a function of the inputs, so an outer tape differentiating
    ``grad_fn``'s result gets correct second and higher derivatives.

    Example:
        >>> import gpugrad as gg
        >>> @gg.custom_gradient
        ... def logexp(x):
        ...     e = gg.exp(x)
        ...     def grad(dy):
        ...         return dy * (1 - 1 / (1 + e))
        ...     return gg.log(1 + e), grad
        >>> x = gg.tensor(100.0, dtype=gg.float64)  # exp(100) overflows float32
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = logexp(x)
        >>> y.item(), tape.gradient(y, x).item()
        (100.0, 1.0)
        >>> x = gg.tensor(0.0, dtype=gg.float64)
        >>> with gg.GradientTape() as outer:
        ...     outer.watch(x)
        ...     with gg.GradientTape() as inner:
        ...         inner.watch(x)
        ...         y = logexp(x)
        ...     dy_dx = inner.gradient(y, x)
        >>> dy_dx.item(), outer.gradient(dy_dx, x).item()  # sigmoid(0), sigmoid'(0)
        (0.5, 0.25)
    """
    from .tape import GradientTape

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        leaves = [ensure_tensor(a) if not isinstance(a, Tensor) and _is_array_like(a) else a
                  for a in nest.flatten(list(args))]
        args = nest.pack_like(list(args), leaves)
        # As TensorFlow does, f's own ops are recorded on the active tapes, so a value grad_fn reads (an
        # `e = exp(x)`) stays a function of the inputs for an outer tape: higher derivatives see it. Only the
        # custom op below connects the inputs to the outputs (fresh tensors no recorded op made).
        reads = GradientTape(watch_accessed_variables=True)
        with reads:  # this tape notes which variables f reads
            result = f(*args, **kwargs)
        y, grad_fn = _result_and_grad_fn(f, result)
        flat_y = [t if isinstance(t, Tensor) else ensure_tensor(t) for t in nest.flatten(y)]
        if not active_tapes():
            return nest.pack_like(y, flat_y) if isinstance(y, (list, tuple, dict)) else flat_y[0]
        inputs = tuple(x for x in leaves if isinstance(x, Tensor))
        # variables passed as arguments are inputs; only those f reads by itself need grad_fn's `variables`
        variables = [v for v in reads.watched_variables() if not any(v is x for x in inputs)]
        if variables and "variables" not in inspect.signature(grad_fn).parameters:
            raise GradientError(
                f"custom_gradient function {f.__name__!r} reads variables "
                f"{[v.name or tuple(v.shape) for v in variables]}, so its grad_fn must accept "
                f"a 'variables' keyword and return (input_grads, variable_grads)")
        # fresh ids for the tape; a Variable's live array is copied, so a later assign cannot change y
        outs = tuple(Tensor._wrap(t._data if t.__class__ is Tensor else t._data.copy(), t._device) for t in flat_y)
        if tracing_state.active:
            for out, t in zip(outs, flat_y):
                tracing_state.made_outside_ops(out, t)
        backward = _backward_fn(f.__name__, grad_fn, inputs, variables)
        record(outs, inputs + tuple(variables), f"CustomGradient:{f.__name__}", {}, backward)
        return nest.pack_like(y, outs) if isinstance(y, (list, tuple, dict)) else outs[0]

    return wrapper


def _result_and_grad_fn(f, result):
    """``f``'s ``(y, grad_fn)``, or a GradientUsageError saying what it returned instead."""
    if not isinstance(result, (tuple, list)) or len(result) != 2 or not callable(result[1]):
        raise GradientUsageError(
            f"custom_gradient function {f.__name__!r} must return (y, grad_fn) with grad_fn a function, "
            f"not {type(result).__name__}")
    return result


def _is_array_like(a):
    return isinstance(a, (bool, int, float, complex)) or hasattr(a, "__array__") or hasattr(a, "__dlpack__")


def _backward_fn(name, grad_fn, inputs, variables):
    def backward(*dys):
        if variables:
            input_grads, variable_grads = grad_fn(*dys, variables=variables)
            input_grads = _as_list(input_grads)
            variable_grads = _as_list(variable_grads)
            if len(variable_grads) != len(variables):
                raise GradientUsageError(
                    f"custom gradient of {name!r} returned {len(variable_grads)} variable "
                    f"gradients; expected {len(variables)}")
        else:
            input_grads, variable_grads = _as_list(grad_fn(*dys)), []
        if len(input_grads) != len(inputs):
            raise GradientUsageError(
                f"custom gradient of {name!r} returned {len(input_grads)} input gradients; "
                f"expected {len(inputs)} (one per tensor argument)")
        return input_grads + variable_grads

    return backward


def _as_list(grads):
    """A grad_fn's result as a flat list: a bare tensor or array (one input's gradient) becomes a
    list of one; a nested structure (the arguments' own) is flattened, as TensorFlow does."""
    if grads is None or isinstance(grads, Tensor) or not isinstance(grads, (list, tuple, dict)):
        return [grads]
    return nest.flatten(grads)
