"""``gg.function``: trace a Python function once per input signature, replay the trace after.

As ``tf.function``. The first call with a new *signature* runs the function (the trace) while
:mod:`gpugrad._tracing` captures its array work: forward ops, the tape's backward sweep,
optimizer updates, variable assignments, random draws. Later calls with that signature bind
the new argument data into the trace's input buffers and replay the captured calls, each
prebound to its output buffer: no tape, no gradient-rule lookup, no Tensor per op (on the CPU a
large argument is read where the caller holds it and a large result written into the array
returned, with no copy, where that gives the same bits: ``gpugrad._tracing.binding``). On the CPU
a replay computes with the same array calls in the same order as the eager call, so to the
same bits.

The replay rules: a replay runs only while what its trace read still holds, and what cannot be
proven to compute what the eager call computes runs eagerly (``tf.function``'s signature and
``torch.compile``'s guards and graph breaks):

- The signature (a new one traces again): the shape, dtype, memory layout (strides) and device of
  each tensor argument, and which arguments are one tensor; NumPy array arguments by value, as
  ``tf.function`` takes them as tensors: their shape, dtype and strides make the signature and each
  call's data is fed to the replay, so a fresh array every step replays, an array written in place
  gives its new values, and an address is never mistaken for the data; the value of every other
  argument (Python numbers, strings, ``None``, and the items of lists, tuples and dicts, so a new
  value traces again, as in TensorFlow); any other object by identity; the default device; the
  precision policy (``gg.autocast``).
- Guards (a change traces again; :mod:`gpugrad._tracing.guards`): every Module called while
  tracing: its ``training`` flag, which Variables and sub-modules it holds, and its Python settings
  (a dropout rate, an attribute added); the function's closure cells and the globals it names:
  Python numbers and NumPy arrays by value, Variables and other objects by identity (a Variable
  rebound to a new one is read); the ``trainable`` flag of every Variable it read (a module frozen
  with ``trainable = False`` after the trace is no longer updated). Attributes of other objects, and closures of the functions it
  calls, are not guarded (as ``tf.function``): pass what changes as an argument. Variables are captured
  by reference: a replay reads and updates them where they live, so a variable assigned between
  calls is seen by the next one, and one whose array is replaced (another shape) traces again.
- Data-dependent shapes run eagerly: an op whose output shape comes from the values of traced data
  (boolean-mask indexing, ``nonzero`` and one-argument ``where``, ``repeat``, ``tile`` and ``pad``
  by a tensor, ``lstsq``) declares it where it runs; the function then runs eagerly, every call,
  with the op and line in :meth:`Function.diagnostics` and one warning (``torch.compile``'s graph
  break). A constant mask (not traced) replays.
- Random draws (``gg.random``, dropout) run again on every replay, from the generator's state then,
  as the eager call draws; optimizer updates and variable assignments too.

What a trace follows, and what it does not (as ``tf.function``):

- Python code runs once per trace: a ``print`` or a list append inside the function happens
  on the first call only. A tensor the function keeps outside itself holds the values of the
  latest call.
- Reading a traced value on the host inside the function — ``.item()``, ``.numpy()``,
  ``float(t)``, ``bool(t)``, ``if t > 0:`` — raises :class:`gpugrad.TraceError` naming the line:
  the trace would freeze that branch. Compute with ops (``gg.where``) instead. NumPy work on a NumPy
  argument outside gpugrad's ops (``np.mean(a)``, ``a * 2``, ``a[0]``) raises the same way; views
  of it (slices, reshapes, ``.T``) and gpugrad ops on it are traced.
- A variable may be created on the first trace only; creating one on a later trace raises.
- The capture sees the work of the functions gpugrad declares (:mod:`gpugrad._tracing.declare`: every
  op, gradient rule, custom gradient's backward, variable update, optimizer update, random draw and
  clipping) in the tracing thread; it uses no interpreter hook, so a profiler or debugger changes
  nothing. Work it cannot replay exactly (an op that raised and was caught, an op run in another
  thread on traced data, what another thread made from a Variable's values that reaches the trace,
  a Variable read on the host in another thread while tracing, a tensor made outside gpugrad's ops,
  an argument that is another library's array, a generator or coroutine function) makes that
  signature run eagerly, every call, with the reason in :meth:`Function.diagnostics` and one
  warning. A replay that meets an array unlike its trace's raises :class:`gpugrad.TraceError`,
  never copies it in.
- Called while a GradientTape of the thread records, inside another function's trace in the same
  thread, or under ``gg.detect_anomaly()``, the function runs eagerly, so the tape sees every op.
  A trace in one thread leaves the functions other threads call alone.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0])
    >>> opt = gg.optimizers.SGD(0.1)
    >>> @gg.function
    ... def step(x):
    ...     return opt.minimize(lambda: gg.sum(gg.square(w * x)), [w])
    >>> [round(step(gg.tensor([1.0, 1.0])).item(), 4) for _ in range(3)]
    [5.0, 3.2, 2.048]
    >>> step.trace_count
    1
"""
import collections
import functools
import random
import inspect
import threading
import warnings

import numpy as np

from . import _nest as nest
from . import anomaly
from ._recorder import _thread_stack
from ._tracing import state
from ._tracing.capture import Capture, TracedArray, Untraceable
from .errors import TraceError
from ._tracing.guards import Guards
from ._tracing.plan import ReplayDiverged, compile_plan
from . import mixed_precision as _mp
from .backend import CPU, _current_default
from .tensor import Tensor, Variable

__all__ = ["function", "Function"]


def function(fn=None, *, max_traces=32, jit_compile=False):
    """Trace ``fn`` once per input signature and replay the trace on later calls (``tf.function``).

    Use as ``@gg.function``, ``@gg.function(max_traces=8)`` or ``gg.function(fn)``. A replay runs
    only while what the trace read still holds: the signature (tensor arguments' shapes, dtypes and
    devices; NumPy arguments by shape and dtype, their data fed by value; other Python arguments by
    value), and guards on the Modules called (``training``, their Variables and settings) and on the
    function's closure and globals (numbers and NumPy arrays by value, Variables by identity); a
    change traces again. An op whose output shape depends on traced values (boolean-mask indexing,
    ``nonzero``) makes the function run eagerly, with the reason in :meth:`Function.diagnostics`.
    See :mod:`gpugrad.traced` for the full rules.

    ``jit_compile=True`` (``tf.function``'s name; ``jax.jit`` and XLA fuse so too) also fuses each run of
    elementwise ops of one shape, with a sum, mean or max over any of its axes that ends the run, into one
    generated kernel (``gpugrad._tracing.fusion``): a numba loop on the CPU (the ``gpugrad[jit]``
    extra; without it one warning and the replay is unfused), a generated ``ElementwiseKernel`` (and
    ``ReductionKernel`` for a run's reduction) on a GPU;
    ``False`` or ``None`` (``tf.function``'s default, which compiles only on a TPU) replays unfused.
    A region never spans a matmul, convolution, host read or optimizer update. Without it a replay gives
    eager's bits; with it, per element and per dtype (float32, float64), the bound of
    ``gpugrad._tracing.fusion.bound``: ``+ - * /``, ``sqrt``, comparisons and selections give eager's
    bits; each transcendental op in a region (exp, log, tanh, ...) adds at most 4 ulp of its result (libm's
    against NumPy's); a fused sum or mean differs from NumPy's pairwise sum by at most
    ``(log2(n) + 2) * eps * sum(|terms|)``; max is exact. NaN and infinities propagate as in eager.
    On the CPU it also compiles (numba) the optimizer's step (SGD, momentum, Adam, AdamW), ``Dense``'s bias
    and ReLU and ``SoftmaxCrossEntropy``'s gradient, each to eager's bits, and ``SoftmaxCrossEntropy``'s
    forward as one loop within ``bound.cross_entropy_tolerance`` (libm's exp and log, row sums in float64).
    :meth:`Function.diagnostics` lists the regions (ops, bytes in and out), the compiled steps and the
    compile time. The call that traces returns what the trace computed (eager's values); the replays
    after it, the fused kernels' values.

    Example:
        >>> import gpugrad as gg
        >>> f = gg.function(lambda x: gg.exp(x) * 2.0)
        >>> f(gg.tensor([0.0])).numpy().tolist(), f(gg.tensor([1.0])).numpy().tolist()
        ([2.0], [5.436563968658447])
        >>> f.trace_count
        1
        >>> g = gg.function(lambda x: gg.sum(x[x > 0.0]))  # a mask from the data: runs eagerly
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", RuntimeWarning)  # the one "runs eagerly" warning
        ...     print(g(gg.tensor([1.0, -2.0, 3.0])).item(), g(gg.tensor([1.0, 2.0, 3.0])).item())
        4.0 6.0
        >>> "boolean-mask indexing" in g.diagnostics()[0]
        True
    """
    if fn is None:
        return functools.partial(function, max_traces=max_traces, jit_compile=jit_compile)
    if not callable(fn):
        raise TypeError(f"gg.function takes a function, not {type(fn).__name__}")
    return Function(fn, max_traces, jit_compile)


class _BoundFunction:
    """A ``gg.function`` read from an instance (a decorated method): calling it passes the instance first, and
    every other attribute is the function's (``diagnostics()``, ``graph()``, ``trace_count``), as TensorFlow's
    ``tf.function`` on a method gives a bound function with the same methods.

    Example:
        >>> import gpugrad as gg
        >>> class Scale:
        ...     @gg.function
        ...     def __call__(self, x):
        ...         return x * 2.0
        >>> s = Scale()
        >>> s(gg.tensor([1.0])).numpy().tolist(), s.__call__.trace_count
        ([2.0], 1)
    """

    __slots__ = ("_function", "_instance")

    def __init__(self, function, instance):
        self._function, self._instance = function, instance

    def __call__(self, *args, **kwargs):
        return self._function(self._instance, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._function, name)

    def __repr__(self):
        return f"<bound {self._function!r} of {self._instance!r}>"


class _Trace:
    """One signature's plan, or why it runs eagerly; ``guards``: the Python state the trace read
    (:mod:`gpugrad._tracing.guards`); ``held``: the arguments its signature knows by identity, kept alive
    so that no other object takes their address while the trace is cached."""

    __slots__ = ("plan", "eager_reason", "guards", "held", "why")

    def __init__(self, plan, eager_reason=None, guards=None, held=()):
        self.plan, self.eager_reason, self.guards, self.held = plan, eager_reason, guards, held
        self.why = None  # what changed, when a guard made this trace

    def holds(self):
        """Whether a replay may run: the variables the steps are bound to live where they did, and the
        Python state the trace read is what it was."""
        return self.plan.bound_to_variables() and (self.guards is None or self.guards.hold())


class Function:
    """A function traced per signature (made by :func:`function`); call it as the function.

    ``trace_count``: how many traces it made (a new signature, or a variable rebound, makes one);
    ``diagnostics()``: one line per cached trace (its steps, and why it runs eagerly if it does).

    Example:
        >>> import gpugrad as gg
        >>> f = gg.function(lambda x, n: x * n)
        >>> _ = f(gg.tensor([1.0]), 2), f(gg.tensor([1.0]), 3), f(gg.tensor([5.0]), 2)
        >>> f.trace_count
        2
    """

    def __init__(self, fn, max_traces=32, jit_compile=False):
        if int(max_traces) < 1:
            raise ValueError(f"max_traces must be >= 1, got {max_traces!r}")
        if jit_compile is not None and not isinstance(jit_compile, (bool, np.bool_)):
            raise TypeError(f"jit_compile must be True, False or None, got {jit_compile!r}")
        self._fn = fn
        self.jit_compile = bool(jit_compile)  # None: tf.function's default, XLA on a TPU only; unfused here
        self._max_traces = int(max_traces)
        self._traces = collections.OrderedDict()  # signature -> _Trace
        self._lock = threading.RLock()
        self.trace_count = 0
        self._guard_retraces = 0
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner):
        if instance is None:
            return self
        return _BoundFunction(self, instance)

    def experimental_get_tracing_count(self):
        """TensorFlow's name for ``trace_count``."""
        return self.trace_count

    @property
    def python_function(self):
        """The function this traces (``tf.function``'s attribute)."""
        return self._fn

    def diagnostics(self):
        """One line per cached trace: its steps, buffers and guards, or why it runs eagerly (the op and line).

        Example:
            >>> import gpugrad as gg
            >>> f = gg.function(lambda x: x + 1.0)
            >>> _ = f(gg.tensor([1.0]))
            >>> f.diagnostics()[0].split(":")[0]
            'trace 1 (cpu)'
        """
        lines = []
        for i, (sig, trace) in enumerate(self._traces.items(), 1):
            where = sig[1]
            if trace.plan is None:
                lines.append(f"trace {i} ({where}): runs eagerly: {trace.eager_reason}")
                continue
            st = trace.plan.stats
            calls = ", ".join(st["calls"][:12]) + (" ..." if len(st["calls"]) > 12 else "")
            lines.append(f"trace {i} ({where}): {st['kernel_steps']} kernel steps, {st['call_steps']} call steps"
                         f"{' (' + calls + ')' if calls else ''}, {st['buffers']} buffers "
                         f"({st['buffers_shared']} outputs in shared buffers{_in_place(st)}); "
                         f"{st.get('graph', 'no CUDA graph')}"
                         f"{_guarded(trace.guards)}{'; traced again: ' + trace.why if trace.why else ''}"
                         f"{_fusion_line(st.get('fusion'))}")
        return lines

    def graph(self):
        """The steps of the plan this function replays for the signature it was last called with, as a graph
        (a :class:`gpugrad.visual.OpGraph`): one node per step in the order a replay runs them, a kernel step
        (an op replayed by its kernel) or a call step (a declared root called again, ``OP`` or ``HOST``), its
        outputs' shapes, dtypes and device, and on a GPU the CUDA graph segment it runs in; edges are the
        data flow between steps, the plan's inputs and outputs and the variables read. See
        ``gpugrad.visual.from_plan``. As TensorBoard's graph of a ``tf.function``'s concrete function;
        ``.to_dot()`` and ``.render(path)`` as for ``tape.graph()``. A TraceError before the first call, or
        when that signature runs eagerly (with the reason).

        Example:
            >>> import gpugrad as gg
            >>> f = gg.function(lambda x: gg.sum(x * x))
            >>> _ = f(gg.tensor([1.0, 2.0]))
            >>> print(f.graph())
            function graph: 2 steps (2 kernel, 0 call)
              t0     input #0
              step0  KERNEL Mul              (2,) float32 cpu  <- t0
              step1  KERNEL Sum              () float32 cpu {axes=(0,)}  <- step0
              t1     output #0  <- step1
        """
        from .visual.from_plan import plan_graph
        name = getattr(self._fn, "__name__", "fn")
        with self._lock:
            if not self._traces:
                raise TraceError(f"gg.function({name}) has not been called yet, so it has no plan to draw: "
                                 f"call it once with the arguments whose plan you want")
            trace = next(reversed(self._traces.values()))
        if trace.plan is None:
            raise TraceError(f"gg.function({name}) runs eagerly for the signature it was last called with, so it "
                             f"has no plan to draw: {trace.eager_reason}; draw a step with tape.graph() instead")
        return plan_graph(trace.plan, name)

    def __call__(self, *args, **kwargs):
        # the common call in few Python steps: a replay's arithmetic leaves the interpreter's code cold,
        # and every call made here costs a few microseconds then
        if _thread_stack() or (state.active and state.current() is not None) or anomaly._state.depth:
            return self._fn(*args, **kwargs)  # a tape records, an outer trace captures, or anomaly mode
        flat = args if not kwargs and not any(a.__class__ in _CONTAINERS for a in args) \
            else nest.flatten([list(args), kwargs])
        arrays, first, parts, aliases = [], {}, [], []
        for x in flat:
            if isinstance(x, Tensor):
                if isinstance(x, Variable):
                    parts.append(("V", id(x)))
                    continue
                d = x._data
                parts.append(("T", d.shape, d.dtype.str, d.strides, x._device.name))
            elif x.__class__ is np.ndarray:  # by value, as a tensor: its data is fed to the replay
                d = x
                parts.append(("N", d.shape, d.dtype.str, d.strides))
            else:
                parts.append(_key(x))
                continue
            k = first.get(id(x))
            if k is None:
                k = first[id(x)] = len(arrays)
                arrays.append(d)
            aliases.append(k)
        signature = (tuple(parts), _current_default().name, tuple(aliases),
                     _mp.compute_dtype() if _mp.active else None)  # a policy changes what the ops compute
        with self._lock:
            trace = self._traces.get(signature)
            why = None
            if trace is not None and trace.plan is not None and not trace.holds():
                del self._traces[signature]  # a variable's array replaced, or Python state read changed: trace again
                why = self._guard_failed(trace)
                trace = None
            if trace is None:
                return self._trace(signature, args, kwargs, list(flat), why)
            if len(self._traces) > 1:
                self._traces.move_to_end(signature)
            if trace.plan is None:
                return self._fn(*args, **kwargs)
            try:
                return trace.plan.run(arrays)
            except ReplayDiverged as e:  # nothing with effects ran: trace this call again, as a changed guard does
                del self._traces[signature]
                self._guard_retraces += 1
                return self._trace(signature, args, kwargs, list(flat), f"a step took another branch ({e})")

    def _guard_failed(self, trace):
        """What made ``trace`` stale; warns once when guards have made this function trace again 5 times
        (as ``tf.function`` warns of frequent retracing)."""
        if not trace.plan.bound_to_variables():
            why = "a variable's array was replaced"
        else:
            why = f"{trace.guards.changed} changed"
        self._guard_retraces += 1
        if self._guard_retraces == 5:
            warnings.warn(f"gg.function({getattr(self._fn, '__name__', 'fn')}) has traced again 5 times because "
                          f"Python state it reads changed (last: {why}); pass what changes as an argument, or "
                          f"keep it fixed", RuntimeWarning, stacklevel=4)
        return why

    def _trace(self, signature, args, kwargs, flat, why=None):
        reason = _lazy_body(self._fn)
        foreign = next((x for x in flat if not isinstance(x, Tensor) and x.__class__ is not np.ndarray
                        and _foreign_array(x)), None)
        if foreign is not None:
            reason = (f"an argument is a {type(foreign).__module__}.{type(foreign).__name__}, whose data a replay "
                      f"cannot feed; pass a gpugrad tensor (gg.as_tensor shares its memory) or a NumPy array")
        if reason is not None:
            self.trace_count += 1
            self._store(signature, _Trace(None, reason))
            warnings.warn(f"gg.function({getattr(self._fn, '__name__', 'fn')}) runs eagerly for this signature: "
                          f"{reason}", RuntimeWarning, stacklevel=3)
            return self._fn(*args, **kwargs)
        capture = Capture(allow_new_variables=self.trace_count == 0)
        traced = {}
        for x in flat:
            if id(x) in traced:
                continue
            if isinstance(x, Tensor) and not isinstance(x, Variable):
                traced[id(x)] = capture.input(x)
            elif x.__class__ is np.ndarray:
                traced[id(x)] = capture.input_array(x, CPU)
        structure = [list(args), kwargs]
        leaves = [traced.get(id(x), x) for x in flat]
        held = [x for x in flat if not isinstance(x, Tensor) and x.__class__ is not np.ndarray and _key(x)[0] == "id"]
        t_args, t_kwargs = nest.pack_like(structure, leaves)
        self.trace_count += 1
        result = None
        try:
            before = _host_random_state()
            with capture:
                result = self._fn(*t_args, **t_kwargs)
            if _lazy_result(result):
                raise Untraceable(f"it returned a {type(result).__name__}, whose body runs after the call returns, "
                                  f"outside the trace")
            if _host_random_state() != before:
                raise Untraceable("the function draws from NumPy's or Python's global random generator, whose "
                                  "values a replay would repeat; draw with gg.random (replayed) or pass them in")
            plan = compile_plan(capture, result, self.jit_compile)
        except Untraceable as e:
            # the trace ran the function once with its effects (variables updated, generators drawn from):
            # this call's result is the trace's, and later calls run eagerly
            self._store(signature, _Trace(None, str(e), held=held))
            warnings.warn(f"gg.function({getattr(self._fn, '__name__', 'fn')}) runs eagerly for this signature: {e}",
                          RuntimeWarning, stacklevel=3)
            return _copied(result, {id(t): x for x in flat for t in (traced.get(id(x)),) if t is not None})
        from .nn.module import Module  # (nn imports this module's package)
        modules = list(capture.modules.values()) + [x for x in flat if isinstance(x, Module)]  # self of a method too
        made = _Trace(plan, guards=Guards(modules, self._fn, capture.variables.values()), held=held)
        made.why = why
        self._store(signature, made)
        return plan.result()

    def _store(self, signature, trace):
        self._traces[signature] = trace
        while len(self._traces) > self._max_traces:
            self._traces.popitem(last=False)

    def __repr__(self):
        return f"<gg.function {getattr(self._fn, '__qualname__', self._fn)!r}, {self.trace_count} traces>"


def _lazy_body(fn):
    """Why ``fn`` cannot be traced, when its body runs after the call returns (a generator or coroutine
    function, as ``tf.function`` refuses them); else None."""
    target = getattr(fn, "func", fn)  # a functools.partial's function
    for test, what in ((inspect.isgeneratorfunction, "a generator function"),
                       (inspect.iscoroutinefunction, "a coroutine (async def) function"),
                       (inspect.isasyncgenfunction, "an async generator function")):
        if test(target) or test(getattr(target, "__call__", None)):
            return (f"it is {what}, whose body runs when its result is iterated or awaited, after the call "
                    f"returns and outside any trace")
    return None


def _lazy_result(result):
    """Whether ``result`` is a generator, coroutine or other awaitable: work that runs after the call."""
    return inspect.isgenerator(result) or inspect.isawaitable(result) or inspect.isasyncgen(result)


def _host_random_state():
    """Where NumPy's global generator (``np.random.seed``'s) and Python's ``random`` stand: a trace that moves
    them drew host random numbers, which its replays would repeat."""
    _, keys, pos, has_gauss, gauss = np.random.get_state()
    return keys.tobytes(), pos, has_gauss, gauss, random.getstate()


def _guarded(guards):
    if guards is None:
        return ""
    return f"; guards: {len(guards)} Python values, {guards.n_modules} modules"


def _in_place(st):
    """The diagnostics' words on a plan's binding (``gpugrad._tracing.binding``): inputs read where the caller
    holds them, results written into the array the call returns."""
    n_in, n_out = st.get("inputs_in_place", 0), st.get("results_in_place", 0)
    if not (n_in or n_out):
        return ""
    return f", {n_in} inputs read in place, {n_out} results written in place"


def _fusion_line(fusion):
    """The diagnostics' words on a plan's fused regions (``jit_compile=True``)."""
    if fusion is None:
        return ""
    found = fusion["regions"]
    steps = [f"{fusion[key]} {what}" for key, what in (("optimizer_steps", "optimizer step(s)"),
             ("cross_entropy_steps", "cross-entropy step(s)"), ("dense_steps", "Dense step(s)")) if fusion.get(key)]
    seconds = fusion.get("compile_seconds", 0.0) + fusion.get("optimizer_compile_seconds", 0.0)
    compiled = f"; compiled: {', '.join(steps)} in {seconds:.3f} s" if steps else ""  # fusion.cpu_optimizers, ...
    if not found:
        return f"; fused: no regions{' (' + fusion['note'] + ')' if fusion.get('note') else ''}{compiled}"
    parts = [f"{r['ops']} ops over {r['elements']} elements, {r['bytes_in']} B in, {r['bytes_out']} B out"
             f"{' (unfused: ' + r['unfused'] + ')' if r.get('unfused') else ''}" for r in found[:8]]
    return (f"; fused: {len(found)} regions ({'; '.join(parts)}{' ...' if len(found) > 8 else ''}), compiled in "
            f"{fusion.get('compile_seconds', 0.0):.3f} s{compiled}")


def _copied(result, originals=None):
    """The trace's ``result`` as the caller's: tensors copied out of the trace's buffers, a NumPy argument
    (``originals``: id of what the trace was given -> the caller's array) the caller's own, a view of one
    a plain copy."""
    def leaf(x):
        if isinstance(x, Tensor) and not isinstance(x, Variable):
            return Tensor._wrap(x._data.copy(), x._device)
        if isinstance(x, TracedArray):
            own = (originals or {}).get(id(x))
            return own if own is not None else np.array(x.view(np.ndarray))
        return x
    if not isinstance(result, (list, tuple, dict)):
        return leaf(result)
    return nest.pack_like(result, [leaf(x) for x in nest.flatten(result)])


_CONTAINERS = (list, tuple, dict)


def _foreign_array(x):
    """Whether ``x`` is an array a trace cannot feed by value: not a NumPy ndarray or a gpugrad tensor (a
    CuPy or PyTorch array, an ndarray subclass); a NumPy scalar is a value."""
    return not isinstance(x, np.generic) and (
        hasattr(x, "__cuda_array_interface__") or hasattr(x, "__array_interface__") or hasattr(x, "__dlpack__"))


def _key(x):
    """The signature's part for an argument that is neither a tensor nor a NumPy array: its value, or its
    identity if unhashable; another library's array by its shape and dtype (it runs eagerly)."""
    if _foreign_array(x):
        return ("F", type(x), tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", "")))
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return (type(x), x)
