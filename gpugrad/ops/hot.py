"""Hot gradients, each declared once: :class:`HotGradient` and :func:`declare`.

A hot gradient is the fused op a forward op's rule calls (``TanhGrad`` for
``Tanh``): one pass over its arrays, NumPy on the CPU, one CUDA kernel on a
GPU, with a registered gradient of its own so that second order runs through
it. Its declaration says everything about it in one place:

- ``name`` and ``op_type``: the raw op ``gg.raw_ops.<name>`` and the op type it records;
- ``inputs`` (arrays, ``dy`` last), ``outputs`` and ``params`` (keyword numbers);
- ``math``: the formula as a Python expression of the inputs. It is the docstring's
  formula, the CUDA of the kernel when ``generated`` (else ``kernels/<name>.cu`` is),
  and the unfused chain of array ops that benchmark G1 and the kernel check run;
- ``cpu``: the NumPy formula (taking ``out=`` when it has one output), with ``cost``
  its class for thread splitting (:mod:`gpugrad.backend.cpu_fast`) and ``reuses_dy``
  whether its result may go into a donated ``dy`` buffer;
- ``grad``: its own gradient rule;
- ``check``: the inputs the kernel check draws, and its tolerance.

:func:`declare` makes the public function (in the caller's module, so it is in
that module's ops and in ``gg.raw_ops``), registers the gradient, the
generated kernel and the replay (:mod:`.replay`: ``cpu`` on the CPU, the fused
kernel on a GPU, into ``gg.function``'s buffers), and adds the declaration to
:data:`HOT_GRADIENTS`, from which
the kernel check's cases, the benchmarks, the fuzz and thread tests and the
completeness tests take their lists.

Example:
    >>> import gpugrad as gg
    >>> h = HOT_GRADIENTS["tanh_grad"]
    >>> h.op_type, h.inputs, h.math
    ('TanhGrad', ('y', 'dy'), 'dy * (1 - y * y)')
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import linecache
import types
from typing import Any, Callable, Optional

import numpy as np

from .._donation import lent, take
from ..backend import CPU, cpu_fast, kernel_source
from ..registry import RegisterGradient
from ..tensor import Tensor
from .._tracing import declare as _capture
from . import replay
from .base import broadcast_error, emit, emit_many, same_device, unary

__all__ = ["HotGradient", "Range", "Check", "declare", "HOT_GRADIENTS", "TRANSCENDENTAL", "unfused_ops"]

HOT_GRADIENTS: dict[str, HotGradient] = {}  # name -> HotGradient, in the order they are declared

# exp, log, pow, erfc: libm and NumPy each within a few ulps; float16 rounds float32 results once
TRANSCENDENTAL = {"float16": 1, "float32": 4, "float64": 4}


@dataclasses.dataclass(frozen=True)
class Range:
    """Where the kernel check draws one input: uniform in [low, high], then adjusted.

    ``signed``: random signs on magnitudes in [low, high]; ``zeros``, ``integers``, ``negate``:
    fractions set to 0, rounded down to whole numbers, or negated; ``equal_to``: the name of
    an earlier input that a tenth of the values copy (ties); ``value``: a number
    that a twentieth of the values take exactly (a bound, a kink).
    """

    low: float
    high: float
    signed: bool = False
    zeros: float = 0.0
    integers: float = 0.0
    negate: float = 0.0
    equal_to: Optional[str] = None
    value: Optional[float] = None


DY = Range(-2.0, 2.0)


@dataclasses.dataclass(frozen=True)
class Check:
    """How the kernel check tests a hot gradient's kernel against its CPU formula.

    ``domain`` maps input names to :class:`Range` (``dy`` defaults to
    :data:`DY`); ``params`` are the keyword values it passes; ``ulps`` the
    tolerance per dtype (0: bit for bit); ``scale`` an expression of the inputs
    giving the size of the terms, for formulas that cancel (evaluated in float64);
    ``unfused_ops`` the launches of an unfused chain that is a function, not the math.
    """

    domain: dict = dataclasses.field(default_factory=dict)
    params: dict = dataclasses.field(default_factory=dict)
    ulps: dict = dataclasses.field(default_factory=dict)
    scale: Optional[str] = None
    unfused_ops: Optional[int] = None  # when the unfused chain is a function, not the math


@dataclasses.dataclass(frozen=True)
class HotGradient:
    """The one declaration of a hot gradient (see the module docstring)."""

    name: str
    op_type: str
    inputs: tuple
    math: str
    cpu: Callable
    grad: Callable
    summary: str
    example: str
    outputs: tuple = ("dx",)
    params: tuple = ()
    defaults: dict = dataclasses.field(default_factory=dict)
    generated: bool = False
    cost: Optional[str] = None
    reuses_dy: bool = False
    grad_reads_outputs: bool = False
    forward: Optional[str] = None
    check: Check = Check()
    unfused_chain: Optional[Callable] = None  # (xp, *arrays, **params) -> outputs, where math is not array ops
    function: Optional[Callable] = None  # the public function declare() made

    def input_range(self, name):
        return self.check.domain.get(name, DY)

    def unfused(self, xp, arrays, params):
        """The math as a chain of ``xp`` array ops (one kernel each on a GPU); a tuple of outputs."""
        if self.unfused_chain is not None:
            return self.unfused_chain(xp, *arrays, **params)
        names = dict(zip(self.inputs, arrays), **params)
        names.update({f: getattr(xp, f) for f in kernel_source.expression_names()})
        result = eval(_compiled(self.math), {"__builtins__": {}}, names)  # noqa: S307 - a declared expression
        return result if isinstance(result, tuple) else (result,)


_CODE: dict[str, types.CodeType] = {}


def _compiled(expression):
    code = _CODE.get(expression)
    if code is None:
        code = _CODE[expression] = compile(expression, "<hot gradient math>", "eval")
    return code


def unfused_ops(expression):
    """How many array ops (GPU kernels) the unfused chain of ``expression`` launches.

    Example:
        >>> unfused_ops("dy * (1 - y * y)")
        3
    """
    nodes = ast.walk(ast.parse(expression, mode="eval"))
    return sum(isinstance(n, (ast.BinOp, ast.Compare, ast.Call))
               or (isinstance(n, ast.UnaryOp) and not isinstance(n.operand, ast.Constant)) for n in nodes)


def _run(h, tensors, params):
    """Compute hot gradient ``h`` of ``tensors`` (dy last) and record it."""
    dev = tensors[0]._device
    for t in tensors:
        if t._device is not dev:
            same_device(tensors, h.op_type)
    arrays = [t._data for t in tensors]
    if params is not None:
        params = {k: (v._data if isinstance(v, Tensor) else v) for k, v in params.items()}
    try:
        if dev is CPU:
            if lent[0] is not None and h.reuses_dy and take(arrays[0], arrays[-1]):
                data = cpu_fast.run(h.cpu, arrays, h.cost, arrays[-1], params)  # dy's buffer is free: into it
            else:
                data = cpu_fast.run(h.cpu, arrays, h.cost, None, params)
        else:  # every kernel declares float16 and bfloat16 (the bfloat16 variants where ml_dtypes is installed)
            data = dev.backend.fused(h.name, *arrays, **(params or {}))
    except ValueError:
        raise broadcast_error(h.op_type, *tensors) from None
    if len(h.outputs) == 1:
        return emit(h.op_type, data, dev, tensors, params)
    return emit_many(h.op_type, data, dev, tensors, params)


def _replay_kernel(h, inputs, attrs, outputs, device):
    """Hot gradient ``h``'s replay (:mod:`.replay`): ``cpu`` (through ``cpu_fast.run`` as :func:`_run`) on the
    CPU, the fused kernel on a GPU, into ``outputs``; None where a param is not a number."""
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


def _public_function(h, module_globals):
    """The function ``h.name(*inputs, **params)``, defined as if written in the caller's module."""
    positional = list(h.inputs) + [p for p in h.params if p not in h.defaults]
    keyword = [f"{p}={h.defaults[p]!r}" for p in h.params if p in h.defaults]
    call_params = "{" + ", ".join(f"{p!r}: {p}" for p in h.params) + "}" if h.params else "None"
    tensors = "(" + ", ".join(h.inputs) + ",)"
    lines = ["def _make(_run, _h, _unary, _Tensor, _CPU, _lent, _emit, _small):",
             f"    def {h.name}({', '.join(positional + keyword)}):"]
    lines += [f"        if {n}.__class__ is not _Tensor:\n            {n} = _unary({n})" for n in h.inputs]
    if not h.params and len(h.outputs) == 1:
        # the common call, inline: small CPU arrays, one device, no donated buffer to consider
        first, rest = h.inputs[0], h.inputs[1:]
        same = "".join(f" and {n}._device is dev" for n in rest)
        lines += [f"        dev = {first}._device",
                  f"        if dev is _CPU and _lent[0] is None{same} and {first}._data.size < _small:",
                  "            try:",
                  f"                data = _h.cpu({', '.join(n + '._data' for n in h.inputs)})",
                  "            except ValueError:",
                  f"                return _run(_h, {tensors}, None)  # raises the op's ShapeError",
                  f"            return _emit({h.op_type!r}, data, dev, {tensors})"]
    lines += [f"        return _run(_h, {tensors}, {call_params})", f"    return {h.name}"]
    source = "\n".join(lines) + "\n"
    # a file name inside the package (anomaly mode skips gpugrad's frames), whose lines tracebacks can show
    filename = f"{__file__}<{h.name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - from the declaration
    inner = namespace["_make"](_run, h, unary, Tensor, CPU, lent, emit, h.cost or 0)
    fn = types.FunctionType(inner.__code__, module_globals, h.name, inner.__defaults__, inner.__closure__)
    fn.__module__ = module_globals["__name__"]
    fn.__qualname__ = h.name
    fn.__doc__ = f"{h.summary}: ``{h.math}``.\n\n    Example:\n        >>> import gpugrad as gg\n" + \
        "".join(f"        {line}\n" for line in h.example.strip().splitlines())
    return fn


def declare(module_globals: dict[str, Any], **fields: Any) -> Callable[..., Any]:
    """Declare a hot gradient (the fields of :class:`HotGradient`); returns its public function.

    Called at the top level of an op module as ``tanh_grad = declare(globals(), name="tanh_grad", ...)``.

    Example:
        >>> import gpugrad as gg
        >>> gg.raw_ops.square_grad(gg.tensor(3.0), gg.tensor(1.0)).item()
        6.0
    """
    h = HotGradient(**fields)
    if h.name in HOT_GRADIENTS:
        raise ValueError(f"hot gradient {h.name!r} is declared twice")
    if h.generated:
        if len(h.outputs) != 1:
            raise ValueError(f"hot gradient {h.name!r}: a generated kernel has one output")
        kernel_source.register(h.name, kernel_source.from_expression(
            h.name, f"{h.summary}: {h.math}.", h.inputs, h.math, h.params))
    if h.reuses_dy and (h.cost is None or len(h.outputs) != 1):
        raise ValueError(f"hot gradient {h.name!r}: reuses_dy needs a one-output formula with out= (a cost class)")
    RegisterGradient(h.op_type, reads_outputs=h.grad_reads_outputs)(h.grad)
    # the fused kernel given its outputs (arrays of one dtype) writes into them and allocates nothing
    replay.declare(h.op_type, functools.partial(_replay_kernel, h), graph_safe=replay.float_graph_safe,
                   expression=None if h.unfused_chain is not None else (h.inputs, h.params, h.math))
    fn = _capture.declared(_public_function(h, module_globals))  # an op for gg.function's capture
    object.__setattr__(h, "function", fn)  # frozen for users; set once here
    HOT_GRADIENTS[h.name] = h
    return fn
