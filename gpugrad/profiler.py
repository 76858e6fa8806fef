"""``gg.profile()``: where a program's time goes, per op type, per gradient rule and per ``gg.function``.

As PyTorch's ``torch.profiler.profile`` with ``key_averages().table()`` and Chainer's ``TimerHook``:
inside ``with gg.profile() as prof:`` every op the opening thread runs, every gradient rule the
backward sweep calls and every call of a :func:`gpugrad.function` is counted and timed, and
:meth:`Profile.table` prints the totals sorted.

What each entry measures:

- ``op`` (one entry per op type, as the tape records it: ``MatMul``, ``Relu``): the calls, and the host
  time from the end of the previous event the profile saw in that thread (the previous op, the start or
  end of a rule or function call, the profile's start) to the op's emission: the op's own work plus the
  Python that ran between (a user's loop, a layer's ``__call__``). Every op passes one place, its
  emission, after its work; there is no hook at its start (see "Cost" below), so Python run between two
  ops, a host read such as ``loss.item()`` included, is counted in the second. The entries' host times
  and the gaps the profile does not attribute (the sweep's own work) add up to the profile's wall time.
- ``grad`` (one entry per op type whose rule ran): the host time of each rule call, start to end, the
  ops it runs included (they are also counted as ops: rules compute with gpugrad ops), the profiler's
  own bookkeeping of them left out (as for function calls and steps).
- ``update`` (one entry per optimizer class): each update of the variables (``Optimizer._apply_pairs``:
  clipping, the update rule, the slots), start to end; it runs array work, not ops, so without this
  entry its time would fall to the next op.
- ``function`` (one entry per ``gg.function``): the host time of each call, start to end.
- ``step`` (one entry per op type or root a replay runs, on the CPU): each step of a replay, start to end:
  a kernel step (the op's prebound array call), or a call step (an optimizer's update, a random draw,
  called again; the ops it runs are also counted as ops). A replay on a GPU runs its steps as CUDA graphs
  where it can, and is timed as one function call.
- ``device ms`` (on a GPU): the time on the current CUDA stream between an event recorded at the entry's
  start and one at its end (``cupy.cuda.Event``, ``cupy.cuda.get_elapsed_time``), as Chainer's
  ``TimerHook`` measures on a GPU: the kernels the entry launched, and the time the stream waited for
  the host in between. Blank for work on the CPU. The profile waits for the stream when it closes.
- ``bytes``: the ``nbytes`` of the arrays the entry made (an op's outputs, a rule's gradients, a
  function call's results), not the memory pool's traffic (a temporary freed inside an op is not seen).

Threads: a profile records the thread that opened it only (the tapes' rule, and TensorFlow's); another
thread's ops, rules and function calls are not counted. Profiles opened in one thread nest: each
records everything run while it is open, so an outer one counts what an inner one does too.

Cost: with no profile open in any thread, nothing: an op's emission makes the check it already makes of
whether anything records, the sweep checks one flag per rule as before, and ``gg.function``'s call is
its own (the profile swaps ``Function.__call__``, the replay's ``Plan.run`` and ``Optimizer._apply_pairs``
for timed ones while open). While a profile is open,
a few microseconds an op or rule call on the host (W1, 1001 tiny ops and their rules, takes about twice
as long), and one CUDA event per entry boundary on a GPU; the times it reports leave its own bookkeeping out.

Example:
    >>> import gpugrad as gg
    >>> x = gg.Variable([1.0, 2.0])
    >>> with gg.profile() as prof:
    ...     with gg.GradientTape() as tape:
    ...         y = gg.sum(gg.tanh(x) * 2.0)
    ...     _ = tape.gradient(y, x)
    >>> sorted((e["kind"], e["name"], e["calls"]) for e in prof.entries() if e["name"] == "Tanh")
    [('grad', 'Tanh', 1), ('op', 'Tanh', 1)]
    >>> prof.table().splitlines()[0].split()[:4]
    ['name', 'kind', 'calls', 'host']
"""
from __future__ import annotations

import contextvars
import threading
from threading import get_ident
from time import perf_counter_ns

from . import _recorder

KINDS = ("op", "grad", "update", "function", "step")
SORT_KEYS = ("host_time", "device_time", "calls", "bytes", "mean_host_time", "name")

_lock = threading.Lock()
_open_count = [0]  # profiles open in all threads
_threads = contextvars.ContextVar("gpugrad_profiles", default=None)


class _Entry:
    """One (kind, name)'s totals; ``pending``: (start event, end event) pairs not yet read."""

    __slots__ = ("kind", "name", "calls", "host_ns", "device_ms", "nbytes", "on_gpu", "pending")

    def __init__(self, kind, name):
        self.kind, self.name = kind, name
        self.calls = self.host_ns = self.nbytes = 0
        self.device_ms = 0.0
        self.on_gpu = False
        self.pending = []


class _ThreadState:
    """A thread's open profiles (outermost first), the end of its last event, its last CUDA event, and the
    host time the profiler's own bookkeeping has taken in it (left out of the rules and calls that contain it)."""

    __slots__ = ("owner", "profiles", "last", "last_event", "cupy", "overhead")

    def __init__(self):
        self.owner = get_ident()
        self.profiles = []
        self.last = 0
        self.last_event = None
        self.cupy = None
        self.overhead = 0


def _state():
    """The calling thread's state, or None when it has no profile open."""
    st = _threads.get()
    if st is None or st.owner != get_ident() or not st.profiles:
        return None
    return st


class Profile:
    """What one ``with gg.profile():`` block recorded; read it with :meth:`entries` and :meth:`table`.

    Example:
        >>> import gpugrad as gg
        >>> with gg.profile() as prof:
        ...     _ = gg.exp(gg.tensor([0.0, 1.0])) + 1.0
        >>> [(e["name"], e["calls"]) for e in prof.entries(sort_by="name")]
        [('Add', 1), ('Exp', 1)]
    """

    def __init__(self):
        self._entries = {}
        self._state = None
        self._start = self._stop = None
        self._cupy = None

    # --- opening and closing -------------------------------------------------------------------
    def __enter__(self):
        if self._state is not None or self._stop is not None:
            raise RuntimeError("a gg.profile() is opened once; make a new one for another block")
        st = _threads.get()
        if st is None or st.owner != get_ident():
            st = _ThreadState()
            _threads.set(st)
        if not st.profiles:
            st.cupy = _usable_cupy()
            st.last_event = None
        st.profiles.append(self)
        self._state = st
        self._cupy = st.cupy
        _switch_on()
        self._start = st.last = perf_counter_ns()
        if st.cupy is not None and st.last_event is None:
            st.last_event = _record_event(st.cupy)
        return self

    def __exit__(self, exc_type, exc, tb):
        st = self._state
        self._stop = perf_counter_ns()
        st.profiles.remove(self)
        latest = st.last_event
        if not st.profiles:
            st.last_event = None
        _switch_off()
        self._resolve_device_times(latest)
        return False

    def _resolve_device_times(self, latest):
        pending = [e for e in self._entries.values() if e.pending]
        if not pending or self._cupy is None:
            return
        latest.synchronize()  # the thread's latest event: every one before it on the stream is done too
        elapsed = self._cupy.cuda.get_elapsed_time
        for e in pending:
            e.device_ms += sum(elapsed(start, end) for start, end in e.pending)
            e.pending = []

    # --- what the hooks add ----------------------------------------------------------------------
    def _add(self, kind, name, host_ns, nbytes, events):
        key = (kind, name)
        e = self._entries.get(key)
        if e is None:
            e = self._entries[key] = _Entry(kind, name)
        e.calls += 1
        e.host_ns += host_ns
        e.nbytes += nbytes
        if events is not None:
            e.on_gpu = True
            e.pending.append(events)

    # --- reading ---------------------------------------------------------------------------------
    @property
    def wall_ms(self):
        """The profile's wall time in milliseconds, open to close (to now while open).

        Example:
            >>> import gpugrad as gg
            >>> with gg.profile() as prof:
            ...     pass
            >>> prof.wall_ms >= 0.0
            True
        """
        if self._start is None:
            return 0.0
        stop = self._stop if self._stop is not None else perf_counter_ns()
        return (stop - self._start) / 1e6

    def entries(self, sort_by="host_time"):
        """One dict per (kind, name), sorted by ``sort_by`` (largest first; ``"name"``: alphabetical):
        ``name``, ``kind`` (``"op"``, ``"grad"``, ``"update"``, ``"function"``, ``"step"``), ``calls``,
        ``host_ms`` (total), ``mean_host_us``, ``percent`` (of the profile's wall time), ``device_ms`` (None off
        the GPU) and ``bytes``.

        Example:
            >>> import gpugrad as gg
            >>> with gg.profile() as prof:
            ...     _ = gg.tensor([1.0]) * 3.0
            >>> e = prof.entries()[0]
            >>> e["name"], e["kind"], e["calls"], e["bytes"], e["device_ms"]
            ('Mul', 'op', 1, 4, None)
        """
        if sort_by not in SORT_KEYS:
            raise ValueError(f"sort_by must be one of {', '.join(SORT_KEYS)}, not {sort_by!r}")
        if self._stop is None and self._state is not None:
            raise RuntimeError("read a gg.profile() after its block: its GPU times are read when it closes")
        wall = self.wall_ms
        rows = []
        for e in self._entries.values():
            host_ms = e.host_ns / 1e6
            rows.append({"name": e.name, "kind": e.kind, "calls": e.calls, "host_ms": host_ms,
                         "mean_host_us": host_ms * 1e3 / e.calls,
                         "percent": 100.0 * host_ms / wall if wall > 0 else 0.0,
                         "device_ms": e.device_ms if e.on_gpu else None, "bytes": e.nbytes})
        key = {"host_time": lambda r: -r["host_ms"], "device_time": lambda r: -(r["device_ms"] or 0.0),
               "calls": lambda r: -r["calls"], "bytes": lambda r: -r["bytes"],
               "mean_host_time": lambda r: -r["mean_host_us"], "name": lambda r: r["name"]}[sort_by]
        return sorted(rows, key=lambda r: (key(r), r["kind"], r["name"]))

    def table(self, sort_by="host_time", limit=None):
        """The entries as a text table, sorted by ``sort_by`` (see :meth:`entries`), the first ``limit``
        rows (all with None), and a last line with the profile's wall time.

        The columns are PyTorch's ``key_averages().table()``'s and Chainer's ``TimerHook``'s: name, kind,
        calls, total host ms, mean host us, % of the wall time, device ms (on a GPU), bytes.

        Example:
            >>> import gpugrad as gg
            >>> with gg.profile() as prof:
            ...     _ = gg.exp(gg.tensor([1.0]))
            >>> print(prof.table().splitlines()[2].split()[:3])
            ['Exp', 'op', '1']
        """
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
            raise ValueError(f"limit must be None or a whole number >= 0, not {limit!r}")
        rows = self.entries(sort_by)
        shown = rows if limit is None else rows[:limit]
        header = ("name", "kind", "calls", "host ms", "mean us", "% wall", "device ms", "bytes")
        cells = [[r["name"], r["kind"], str(r["calls"]), f"{r['host_ms']:.3f}", f"{r['mean_host_us']:.1f}",
                  f"{r['percent']:.1f}", "-" if r["device_ms"] is None else f"{r['device_ms']:.3f}",
                  _bytes(r["bytes"])] for r in shown]
        widths = [max([len(header[i])] + [len(c[i]) for c in cells]) for i in range(len(header))]

        def line(values):
            return "  ".join(v.ljust(w) if i < 2 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))
        lines = [line(header), "  ".join("-" * w for w in widths)] + [line(c) for c in cells]
        more = len(rows) - len(shown)
        lines.append(f"{len(rows)} entries{f' ({more} not shown)' if more else ''}, sorted by {sort_by}; "
                     f"wall time {self.wall_ms:.3f} ms")
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def profile():
    """A :class:`Profile` to open with ``with``: counts and times, per op type, gradient rule and
    ``gg.function``, what the opening thread runs inside the block (PyTorch's ``torch.profiler.profile``,
    Chainer's ``TimerHook``). See :mod:`gpugrad.profiler` for what each column measures.

    Example:
        >>> import gpugrad as gg
        >>> with gg.profile() as prof:
        ...     y = gg.tanh(gg.tensor([0.5, 1.5]))
        >>> prof.entries()[0]["name"], prof.entries()[0]["calls"]
        ('Tanh', 1)
    """
    return Profile()


def _bytes(n):
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _usable_cupy():
    """CuPy, where gpugrad can use a GPU (a profile records CUDA events then), else None."""
    from .backend import cupy_backend

    if cupy_backend.unavailable_reason() is not None:
        return None
    import cupy

    return cupy


def _record_event(cupy):
    event = cupy.cuda.Event()
    event.record()
    return event


def _nbytes(outputs):
    total = 0
    for o in outputs:
        data = getattr(o, "_data", None)
        if data is not None:
            total += data.nbytes
    return total


def _on_gpu(outputs):
    for o in outputs:
        dev = getattr(o, "_device", None)
        if dev is not None and dev.name != "cpu":
            return True
    return False


def _close(st, kind, name, start, outputs, start_event, inner_overhead=0):
    """Add an entry from ``start`` (ns) to now, less ``inner_overhead`` (the profiler's own time inside it), to
    each profile open in the thread; start the next interval."""
    now = perf_counter_ns()
    events = None
    if st.cupy is not None and start_event is not None and _on_gpu(outputs):
        events = (start_event, _record_event(st.cupy))
        st.last_event = events[1]
    nbytes = _nbytes(outputs)
    for p in st.profiles:
        p._add(kind, name, now - start - inner_overhead, nbytes, events)
    st.last = perf_counter_ns()  # the profile's own work is no op's
    st.overhead += st.last - now


def _op_emitted(op_type, outputs):
    """``_recorder.on_op``: an op of ``op_type`` made ``outputs``."""
    st = _state()
    if st is not None:
        _close(st, "op", op_type, st.last, outputs, st.last_event)


def _rule_called(op_type, call, rule, args):
    """``_recorder.on_rule``: the sweep calls ``call(rule, args)``, the gradient rule of ``op_type``."""
    st = _state()
    if st is None:
        return call(rule, args)
    start_event = _record_event(st.cupy) if st.cupy is not None else None
    overhead = st.overhead
    start = st.last = perf_counter_ns()
    grads = call(rule, args)
    _close(st, "grad", op_type, start, _flat_tensors(grads), start_event, st.overhead - overhead)
    return grads


def _flat_tensors(value):
    from .tensor import Tensor
    from . import _nest as nest

    if isinstance(value, Tensor):
        return (value,)
    try:
        return [t for t in nest.flatten(value) if isinstance(t, Tensor)]
    except Exception:  # not a structure nest reads: nothing to weigh
        return ()


def _timed_function_call(self, *args, **kwargs):
    """``Function.__call__`` while a profile is open: the call, timed for the calling thread's profiles."""
    st = _state()
    if st is None:
        return _function_call(self, *args, **kwargs)
    start_event = _record_event(st.cupy) if st.cupy is not None else None
    overhead = st.overhead
    start = st.last = perf_counter_ns()
    result = _function_call(self, *args, **kwargs)
    name = getattr(self._fn, "__qualname__", None) or getattr(self._fn, "__name__", None) or repr(self._fn)
    _close(st, "function", name, start, _flat_tensors(result), start_event, st.overhead - overhead)
    return result


def _timed_plan_run(plan, arrays):
    """``Plan.run`` while a profile is open: on the CPU, each step timed for the calling thread's profiles."""
    st = _state()
    if st is None or plan.gpu is not None or plan.labels is None:
        return _plan_run(plan, arrays)
    steps, fresh = plan.steps, None
    if plan.binding is not None:  # large inputs read and results written in place, as a replay does
        steps, fresh = plan.binding.bind(plan, arrays)
    else:
        plan.bind(arrays)
    for step, (name, nbytes) in zip(steps, plan.labels):
        overhead = st.overhead
        start = st.last = perf_counter_ns()
        step()  # a call step's ops are profiled inside it
        now = perf_counter_ns()
        for p in st.profiles:
            p._add("step", name, now - start - (st.overhead - overhead), nbytes, None)
        st.last = perf_counter_ns()
        st.overhead += st.last - now
    return plan.result(fresh)


def _timed_apply_pairs(self, pairs):
    """``Optimizer._apply_pairs`` while a profile is open: the update, timed for the calling thread's profiles."""
    st = _state()
    if st is None:
        return _apply_pairs(self, pairs)
    start_event = _record_event(st.cupy) if st.cupy is not None else None
    overhead = st.overhead
    start = st.last = perf_counter_ns()
    result = _apply_pairs(self, pairs)
    _close(st, "update", type(self).__name__, start, [v for _, v, _ in pairs], start_event,
           st.overhead - overhead)
    return result


def _as_declared(wrapper, declared_fn):
    """``wrapper`` carrying ``declared_fn``'s declaration, so that ``gg.function``'s capture and plans see the
    very root they know (:func:`gpugrad._tracing.declare.undeclared` gives the same function)."""
    wrapper.__gpugrad_root__ = declared_fn.__gpugrad_root__
    wrapper.__wrapped__ = declared_fn.__wrapped__
    return wrapper


_function_call = _plan_run = _apply_pairs = None  # the functions the profile swaps, while one is open


def _switch_on():
    """The first profile to open anywhere installs the hooks."""
    global _function_call, _plan_run, _apply_pairs
    from .traced import Function
    from ._tracing.plan import Plan
    from .optimizers.optimizer import Optimizer

    with _lock:
        _open_count[0] += 1
        if _open_count[0] == 1:
            _function_call, _plan_run, _apply_pairs = Function.__call__, Plan.run, Optimizer._apply_pairs
            Function.__call__, Plan.run = _timed_function_call, _timed_plan_run
            Optimizer._apply_pairs = _as_declared(_timed_apply_pairs, _apply_pairs)
            _recorder.on_op, _recorder.on_rule = _op_emitted, _rule_called
            _recorder.observing.append(None)
            _recorder.recording_anywhere.append(None)


def _switch_off():
    """The last profile to close anywhere removes them: with none open, nothing is on any path."""
    global _function_call, _plan_run, _apply_pairs
    from .traced import Function
    from ._tracing.plan import Plan
    from .optimizers.optimizer import Optimizer

    with _lock:
        _open_count[0] -= 1
        if _open_count[0] == 0:
            _recorder.recording_anywhere.pop()
            _recorder.observing.pop()
            _recorder.on_op = _recorder.on_rule = None
            Function.__call__, Plan.run, Optimizer._apply_pairs = _function_call, _plan_run, _apply_pairs
            _function_call = _plan_run = _apply_pairs = None


def hooks_installed():
    """Whether the profiler's hooks are on the ops' path now (only while some profile is open).

    Example:
        >>> import gpugrad as gg
        >>> with gg.profile():
        ...     inside = hooks_installed()
        >>> inside, hooks_installed()
        (True, False)
    """
    from .traced import Function
    from ._tracing.plan import Plan
    from .optimizers.optimizer import Optimizer

    return (_recorder.on_op is not None or Function.__call__ is _timed_function_call or Plan.run is _timed_plan_run
            or Optimizer._apply_pairs is _timed_apply_pairs)
