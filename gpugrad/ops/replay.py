"""How each op type replays under ``gg.function``: declared by the op's own module, beside its forward.

A replay kernel runs one emitted op again from its input arrays into output arrays made once
(the trace's), with the very array calls the op's forward makes, so to the same bits. An op
module declares it for an op type (the string its forward passes to ``emit``) with
:func:`declare`, or with a helper for a family: :func:`ufunc` (the forward is one ufunc on float
operands of one dtype) and :func:`reduction` (a ufunc's ``reduce`` over ``attrs["axes"]``). The hot
gradients (:func:`gpugrad.ops.hot.declare`) declare theirs from their own declaration. An op type
with no declaration, or whose builder answers None for an instance, is replayed by calling the
op again. ``gpugrad._tracing.kernels`` looks declarations up here; adding an op (or a fused op)
touches its own module and its spec, nothing in ``gpugrad._tracing``.

A declaration holds:

- ``build(inputs, attrs, outputs, device)``: a function of no arguments that computes the op from
  arrays ``inputs`` into arrays ``outputs``, or None where this instance cannot (a dtype the forward
  converts, an attribute it does not know);
- ``graph_safe(inputs, attrs, outputs)``: whether on a GPU that function writes into its outputs and
  allocates nothing, so a CUDA Graph may hold it (asked only of C-contiguous arrays); None: never;
- ``fills_attrs``: the attributes (arrays the forward makes and saves for its gradient, as
  MaxPool2D's ``argmax``) that the kernel computes too; such an op replays only so;
- ``fills_inputs``: the inputs the kernel computes too (made by the op the forward emits just before,
  which the kernel then replaces: SoftmaxCrossEntropy's probabilities);
- ``expression``: for an elementwise op, ``(names, params, text)``: Python ``text`` (a tuple for several
  outputs) of its inputs ``names`` and its attributes ``params``, over ``+ - * /``, comparisons, ``& |``,
  ``where`` and the ufuncs' names (``ufunc`` declares ``"tanh(x)"``; a hot gradient its ``math``), which
  ``gg.function(jit_compile=True)`` fuses (:mod:`gpugrad._tracing.fusion`); None: not fused;
- ``reduces``: ``"sum"``, ``"mean"`` or ``"max"`` for a reduction over ``attrs["axes"]`` that ends a fused
  region.

Example:
    >>> import numpy as np
    >>> from gpugrad.backend import CPU
    >>> x, out = np.array([0.0, 1.0]), np.empty(2)
    >>> _ = lookup("Exp").build([x], None, [out], CPU)()
    >>> out.tolist() == np.exp(x).tolist()
    True
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional

import numpy as np

from ..backend import CPU, cpu_fast

__all__: list = []  # declarations, not ops

Builder = Callable[[list, Any, list, Any], Optional[Callable[[], Any]]]


@dataclasses.dataclass(frozen=True)
class Replay:
    """The replay of one op type (see the module docstring)."""

    op_type: str
    build: Builder
    graph_safe: Optional[Callable[[list, Any, list], bool]] = None
    fills_attrs: tuple = ()
    fills_inputs: tuple = ()
    expression: Optional[tuple] = None
    reduces: Optional[str] = None


_DECLARED: dict[str, Replay] = {}  # op type -> its Replay, as the op modules declared it


def declare(op_type: str, build: Builder, *, graph_safe=None, fills_attrs=(), fills_inputs=(),
            expression=None, reduces=None) -> Replay:
    """Declare how op type ``op_type`` replays (the fields of :class:`Replay`); once per op type.

    Example:
        >>> import numpy as np
        >>> from gpugrad.backend import CPU
        >>> r = lookup("Add")
        >>> a, out = np.ones(2), np.empty(2)
        >>> _ = r.build([a, a], None, [out], CPU)()
        >>> out.tolist(), r.graph_safe([a, a], None, [out])
        ([2.0, 2.0], True)
    """
    if op_type in _DECLARED:
        raise ValueError(f"op type {op_type!r}: its replay is declared twice")
    r = _DECLARED[op_type] = Replay(op_type, build, graph_safe, tuple(fills_attrs), tuple(fills_inputs),
                                    expression, reduces)
    return r


def replays(op_type: str, **fields: Any) -> Callable[[Builder], Builder]:
    """Decorator form of :func:`declare`: ``@replays("Conv2D")`` above the builder.

    Example:
        >>> @replays("ExampleCopy")
        ... def _copy_replay(inputs, attrs, outputs, device):
        ...     return functools.partial(np.copyto, outputs[0], inputs[0])
        >>> lookup("ExampleCopy").fills_attrs
        ()
        >>> undeclare("ExampleCopy")
    """
    def decorate(build):
        declare(op_type, build, **fields)
        return build
    return decorate


def lookup(op_type: str) -> Optional[Replay]:
    """The declared :class:`Replay` of ``op_type``, or None (then the op is replayed by calling it again).

    Example:
        >>> lookup("Exp").op_type, lookup("NoSuchOp")
        ('Exp', None)
    """
    return _DECLARED.get(op_type)


def declared() -> dict:
    """Every declaration: op type -> :class:`Replay`, in the order the op modules declared them.

    Example:
        >>> "MatMul" in declared() and "TanhGrad" in declared()
        True
    """
    return dict(_DECLARED)


def undeclare(op_type: str) -> None:
    """Take ``op_type``'s declaration away (an op defined for a while: a test's toy op).

    Example:
        >>> _ = declare("ExampleNeg", lambda inputs, attrs, outputs, device: None)
        >>> undeclare("ExampleNeg"); lookup("ExampleNeg") is None
        True
    """
    _DECLARED.pop(op_type, None)


# ---------------------------------------------------------------- what the families share


def floats_of_one_dtype(inputs, outputs) -> bool:
    """Whether arrays ``inputs`` and ``outputs`` are floats of one dtype (the outputs' first).

    Example:
        >>> floats_of_one_dtype([np.ones(2)], [np.ones(2)]), floats_of_one_dtype([np.ones(2, int)], [np.ones(2)])
        (True, False)
    """
    dtype = outputs[0].dtype
    return dtype.kind == "f" and all(a.dtype == dtype for a in inputs) and all(o.dtype == dtype for o in outputs)


def float_graph_safe(inputs, attrs, outputs) -> bool:
    """The ``graph_safe`` of a kernel that is one array call with ``out=``: floats of one dtype.

    Example:
        >>> float_graph_safe([np.ones(2)], None, [np.ones(2, np.float32)])
        False
    """
    return floats_of_one_dtype(inputs, outputs)


def into(out, result) -> None:
    """Copy array ``result`` into ``out`` unless it already is ``out`` (a forward that took ``out=``).

    Example:
        >>> out = np.zeros(2)
        >>> into(out, np.ones(2)); out.tolist()
        [1.0, 1.0]
    """
    if result is not out:
        out[...] = result


def ufunc(op_type: str, name: str, cost: Optional[int] = None) -> Replay:
    """Declare op type ``op_type`` whose forward applies the ufunc ``name`` (NumPy's and CuPy's) to float
    operands of one dtype; ``cost``: its class (:mod:`gpugrad.backend.cpu_fast`) where the CPU forward runs
    it through :func:`gpugrad.ops.base.elementwise` (split across threads when large). Other operands
    (integers, mixed dtypes) go through the forward's own dtype rules: replayed by calling the op.

    Example:
        >>> from gpugrad.backend import CPU
        >>> x, out = np.array([1.0, 4.0]), np.empty(2)
        >>> _ = lookup("Sqrt").build([x], None, [out], CPU)()  # ufunc("Sqrt", "sqrt", COSTLY) in math.py
        >>> out.tolist()
        [1.0, 2.0]
    """
    def build(inputs, attrs, outputs, device):
        if len(outputs) != 1 or not floats_of_one_dtype(inputs, outputs):
            return None
        out = outputs[0]
        f = getattr(device.xp, name)
        if len(inputs) == 1 and device is CPU and cost is not None and inputs[0].size >= cost:
            return functools.partial(cpu_fast.run, f, (inputs[0],), cost, out)
        return functools.partial(f, *inputs, out=out)
    names = UFUNC_OPERANDS[:_arity(name)]
    return declare(op_type, build, graph_safe=float_graph_safe,
                   expression=(names, (), f"{name}({', '.join(names)})"))


UFUNC_OPERANDS = ("x", "y")


def _arity(name):
    """How many operands ufunc ``name`` takes."""
    return getattr(np, name).nin


def reduction(op_type: str, name: str, *, nonempty: bool = False,
              count: Optional[Callable[[tuple, tuple], Optional[int]]] = None,
              data: Optional[Callable[..., Any]] = None) -> Replay:
    """Declare op type ``op_type`` whose CPU forward is ``np.<name>.reduce`` over ``attrs["axes"]`` (float
    operands of one dtype; keepdims read from the output's rank); ``nonempty``: only where the input has
    elements (a reduction with no identity); ``count(shape, axes)``: the forward then divides by it (a mean),
    for float32 and float64. On a GPU, and for 16-bit floats (which the forward accumulates in float32),
    ``data(x, device, axes, keepdims)`` (the forward's own array function) is called and its result copied
    into the output: the forward's very call, so its bits; on a GPU never in a CUDA Graph (CuPy's reductions
    take CUB's temporaries from the pool). Without ``data`` those replay by calling the op.

    Example:
        >>> from gpugrad.backend import CPU
        >>> x, out = np.array([[1.0, 2.0], [3.0, 5.0]]), np.empty(2)
        >>> _ = lookup("Sum").build([x], {"axes": (0,)}, [out], CPU)()  # reduction("Sum", "add") in reductions.py
        >>> out.tolist()
        [4.0, 7.0]
    """
    reduce = getattr(np, name).reduce

    def build(inputs, attrs, outputs, device):
        if len(outputs) != 1 or not floats_of_one_dtype(inputs, outputs) or attrs is None or "axes" not in attrs:
            return None
        (x,), out, axes = inputs, outputs[0], attrs["axes"]
        if nonempty and not x.size:
            return None
        keepdims = out.ndim == x.ndim and x.ndim > 0
        if device is not CPU or x.dtype.itemsize < 4:
            if data is None:
                return None
            return lambda: into(out, data(x, device, axes, keepdims))
        if count is None:
            return functools.partial(reduce, x, axis=axes, keepdims=keepdims, out=out)
        n = count(x.shape, axes)
        if n is None or not (x.dtype == np.float32 or x.dtype == np.float64):
            return None

        def reduce_and_divide():
            reduce(x, axis=axes, keepdims=keepdims, out=out)
            np.true_divide(out, n, out=out)
        return reduce_and_divide
    return declare(op_type, build, reduces="mean" if count is not None else {"add": "sum", "maximum": "max"}.get(name))


def elementwise(op_type: str, compute: Callable[..., Any], attrs: tuple = ()) -> Replay:
    """Declare op type ``op_type`` whose forward's output array is ``compute(xp, *input_arrays, *attr_values)``
    (``attr_values``: ``attrs[k]`` for each name ``k`` in ``attrs``), the very function the forward calls, on
    float operands of one dtype; the kernel runs it and copies its result into the output (an allocation: not
    in a CUDA Graph). Other operands (integers the forward converts, mixed dtypes, bfloat16) are replayed by
    calling the op.

    Example:
        >>> from gpugrad.backend import CPU
        >>> _ = elementwise("ExampleClamp01", lambda xp, x: xp.minimum(xp.maximum(x, 0.0), 1.0))
        >>> x, out = np.array([-1.0, 0.5, 2.0]), np.empty(3)
        >>> _ = lookup("ExampleClamp01").build([x], None, [out], CPU)()
        >>> out.tolist()
        [0.0, 0.5, 1.0]
        >>> undeclare("ExampleClamp01")
    """
    def build(inputs, op_attrs, outputs, device):
        if len(outputs) != 1 or not floats_of_one_dtype(inputs, outputs):
            return None
        if attrs and (op_attrs is None or any(k not in op_attrs for k in attrs)):
            return None
        out, xp = outputs[0], device.xp
        args = tuple(inputs) + tuple(op_attrs[k] for k in attrs)
        return lambda: into(out, compute(xp, *args))
    return declare(op_type, build)
