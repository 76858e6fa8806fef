"""Recording ops on the tapes that are active: the per-op hot path.

Every op ends in :func:`emit`. With no tape recording, trace capturing or profile
open in any thread that costs one list check; while something records, one more
(``observing``) says whether a trace or a profile (:mod:`gpugrad.profiler`) is
told of the op, and each :class:`Recording` active in the calling
thread (a tape's: what it follows and what it recorded) that follows one of the
inputs appends one shared record, a plain tuple ``(type, inputs, outputs,
attrs, backward_fn, versions)`` (the cheapest object Python makes), and follows
the outputs. A recording made with ``follows_all`` (a trace's collector,
:func:`collecting_recording`; anomaly mode's checker) takes every record
instead, whatever its inputs, into its list or its ``on_record`` callback:
the recorder tests that flag once per recording per op, and only while
something records. The backward sweep shows each record to a gradient rule as an :class:`Op`.

Recording state is per thread, as TensorFlow's tape stack is: a tape entered
in one thread sees only that thread's ops. Each thread's stack of tapes is
found through a context variable (a third of the cost of a ``threading.local``
lookup, and paid only while some thread records): a new thread starts with
none, and tasks of one thread share its stack, as they would a thread-local.
Where threads inherit their parent's context (``sys.flags.thread_inherit_context``,
free-threaded Python 3.14), the lookup also checks the stack's owner thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
from threading import get_ident
from typing import TYPE_CHECKING, Any, Sequence

from .errors import GradientError
from .tensor import Tensor, Variable
from ._tracing import state as _trace
from . import _dtypes as _dt

if TYPE_CHECKING:
    from .backend import Device

_new = object.__new__


class Recording:
    """What one tape records into; the recorder appends to it, the tape reads it.

    ``tape``: the tape, while it records (what :func:`active_tapes` lists).

    ``ops``: the records, in order; ``watched``: id -> tensor for the tensors
    followed (None for op outputs, which their record holds); ``roots``: ids of
    the tensors watched by hand or as variables; ``variables``: id -> the
    variables watched, in order; ``watch_accessed``: whether trainable variables
    an op reads are watched. ``ops`` is None once a non-persistent tape is used.

    ``follows_all`` (False for a tape's): it takes every op emitted while it is
    on the thread's stack, not only those that read a tensor it follows; it
    follows no tensor (``watched`` stays empty, so no op takes it for a tape
    that follows a given tensor) and watches no variable. ``on_record`` (only
    with ``follows_all``): None, or a callable that gets each record in place
    of ``ops.append`` (anomaly mode checks each and keeps none).

    Example:
        >>> import gpugrad as gg
        >>> r = Recording(None, watch_accessed=True)
        >>> r.watch(gg.tensor(1.0)); len(r.roots)
        1
    """

    __slots__ = ("tape", "ops", "watched", "roots", "variables", "watch_accessed", "follows_all", "on_record")

    def __init__(self, tape, watch_accessed, follows_all=False, on_record=None):
        if on_record is not None and not follows_all:
            raise ValueError("on_record is for a recording that follows every op (follows_all=True)")
        self.tape = tape
        self.watch_accessed = watch_accessed and not follows_all
        self.follows_all = follows_all
        self.on_record = on_record
        self.reset()

    def reset(self):
        """Forget the records and what is followed."""
        self.ops, self.watched, self.roots, self.variables = [], {}, set(), {}

    def watch(self, t):
        """Follow tensor ``t`` as a root (a float one: integers have no gradient)."""
        if self.follows_all or not _dt.inexact(t._data.dtype):
            return
        self.watched[id(t)] = t
        self.roots.add(id(t))
        if isinstance(t, Variable):
            self.variables.setdefault(id(t), t)


def collecting_recording(on_record=None):
    """A :class:`Recording` that takes every op emitted while it is on the thread's stack
    (``follows_all``): into its ``ops`` list, or, with ``on_record``, into that callable.

    Example:
        >>> import gpugrad as gg
        >>> r = collecting_recording()
        >>> stack = push_tape(r)
        >>> y = gg.tensor(2.0) * 3.0  # no tape follows its input; this recording takes it all the same
        >>> pop_tape(r, stack)
        >>> [rec[TYPE] for rec in r.ops]
        ['Mul']
    """
    return Recording(None, watch_accessed=False, follows_all=True, on_record=on_record)


def _take_all(r, rec):
    """Hand record ``rec`` to recording ``r``, which follows every op."""
    if r.on_record is None:
        r.ops.append(rec)
    else:
        r.on_record(rec)


class _TapeStack(list):
    """One thread's recordings now active, outermost first; ``owner`` is the thread's ident."""

    __slots__ = ("owner",)

    def __init__(self):
        super().__init__()
        self.owner = get_ident()


_stack_var = contextvars.ContextVar("gpugrad_tape_stack", default=None)


def _owned_stack():
    """The calling thread's stack where contexts cross threads: an inherited one does not count."""
    stack = _stack_var.get()
    return stack if stack is not None and stack.owner == get_ident() else None


# The hot path's lookup of the calling thread's stack (None before its first tape).
_thread_stack = _owned_stack if getattr(sys.flags, "thread_inherit_context", 0) else _stack_var.get
# One entry per tape recording, trace capturing or profile open in any thread: emit's single check when
# none records anywhere.
recording_anywhere: list = []
# One entry per trace capturing or profile open in any thread (each also has one in recording_anywhere):
# emit's check, while something records, of whether it tells anything but the tapes.
observing: list = []
# While a profile is open in some thread, :mod:`gpugrad.profiler`'s hook, ``on_op(op_type, outputs)``,
# told of every op emitted in any thread after its work (it keeps those of the threads it profiles).
on_op = None
# Likewise, ``on_rule(op_type, call, rule, args)``: the backward sweep's call ``call(rule, args)`` of each
# gradient rule, made through the hook while a profile is open somewhere.
on_rule = None


def active_tapes():
    """The calling thread's recording tapes, outermost first (a new list); None stands for a
    recording that has no tape (a :func:`collecting_recording`, anomaly mode's), so the list is
    empty exactly when nothing records in this thread.

    Example:
        >>> import gpugrad as gg
        >>> with gg.GradientTape() as tape:
        ...     active_tapes() == [tape]
        True
        >>> active_tapes()
        []
    """
    return [r.tape for r in _thread_stack() or ()]


def push_tape(recording):
    """Start appending to :class:`Recording` ``recording`` in the calling thread; returns the stack it
    joined (for :func:`pop_tape`)."""
    stack = _stack_var.get()
    if stack is None or stack.owner != get_ident():  # a thread's first tape, or a context from another thread
        stack = _TapeStack()
        _stack_var.set(stack)
    stack.append(recording)
    recording_anywhere.append(None)
    return stack


def pop_tape(recording, stack):
    """Stop appending to ``recording``, which :func:`push_tape` put in ``stack``."""
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is recording:
            del stack[i]
            recording_anywhere.pop()
            return
    raise GradientError("this GradientTape is not recording")


@contextlib.contextmanager
def paused():
    """No tape of the calling thread records inside the block (other threads are unaffected).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.Variable(1.0)
        >>> with gg.GradientTape() as tape:
        ...     with paused():
        ...         y = x * 2
        >>> tape.gradient(y, x) is None
        True
    """
    token = _stack_var.set(_TapeStack())
    try:
        yield
    finally:
        _stack_var.reset(token)

# Fields of a record tuple.
TYPE, INPUTS, OUTPUTS, ATTRS, BACKWARD_FN, VERSIONS = range(6)


class Op:
    """What a gradient rule sees of one recorded op.

    ``type``, ``inputs``, ``outputs``, ``attrs``; and ``needs_grad``, one flag
    per input saying whether the gradient being computed needs it, so a rule
    can skip work (as ``Mul`` does for a constant factor); and ``filled``, for an
    op of several outputs, the indices of the outputs no gradient reached (the
    sweep passes zeros for them), so a rule can leave out their terms by
    structure, as PyTorch's rules do for an undefined gradient, never by
    testing a gradient's value.

    The sweep makes one for each rule call, so a rule may keep ``op`` (in a
    closure, a list) and it stays that record's.

    Example:
        >>> import gpugrad as gg
        >>> @gg.RegisterGradient("DocScale")
        ... def _scale_grad(op, dy):
        ...     return [dy * op.attrs["factor"]]
    """

    __slots__ = ("type", "inputs", "outputs", "attrs", "filled", "_reached")

    def __init__(self, record=None, reached=()):
        self.filled = ()
        if record is not None:
            self.type, self.inputs, self.outputs, self.attrs = record[:4]
        self._reached = reached

    @property
    def needs_grad(self):
        inputs, reached = self.inputs, self._reached
        if len(inputs) == 2:  # most ops that ask are binary
            return (id(inputs[0]) in reached, id(inputs[1]) in reached)
        return tuple([id(t) in reached for t in inputs])

    def __repr__(self):
        return f"<Op {self.type} inputs={[i.shape for i in self.inputs]}>"


class FreedOutputs:
    """``op.outputs`` of a rule registered ``reads_outputs=False``: the sweep freed them, and any use
    raises a GradientError naming op ``op_type`` (one per op type: :func:`freed_outputs`)."""

    __slots__ = ("op_type",)

    def __init__(self, op_type):
        self.op_type = op_type

    def _refuse(self, *args):
        raise GradientError(
            f"the gradient rule of op {self.op_type!r} reads op.outputs, but it was registered with "
            f"reads_outputs=False, so the backward sweep freed them; register it without that flag")

    __getitem__ = __iter__ = __len__ = __bool__ = _refuse


_freed_by_type: dict = {}


def freed_outputs(op_type):
    """The :class:`FreedOutputs` of op type ``op_type`` (made once per type).

    Example:
        >>> freed_outputs("Exp") is freed_outputs("Exp"), freed_outputs("Exp").op_type
        (True, 'Exp')
    """
    freed = _freed_by_type.get(op_type)
    if freed is None:
        freed = _freed_by_type.setdefault(op_type, FreedOutputs(op_type))
    return freed


def emit(op_type: str, data: Any, device: Device, inputs: Sequence[Tensor], attrs: Any = None) -> Tensor:
    """Wrap ``data`` as the output tensor of ``op_type`` and record it.

    For inputs that are all plain tensors (no variable to watch or version),
    the body of :func:`record` is repeated here for one output: every op
    passes through this function, and a call less is a tenth of an op's cost.
    """
    if data.__class__ is not device.array_type:
        data = device.xp.asarray(data)  # NumPy reductions return scalars
    out = _new(Tensor)
    out._data = data
    out._device = device
    if recording_anywhere:
        if observing:  # a trace or a profile is open in some thread
            if _trace.active:
                _trace.emitted(op_type, inputs, (out,), attrs)
            if on_op is not None:
                on_op(op_type, (out,))
        tapes = _thread_stack()
        if not tapes:
            return out
        for t in inputs:
            if t.__class__ is not Tensor:  # a variable: it may need watching, and its version keeping
                record((out,), inputs, op_type, attrs, None)
                return out
        rec = None
        for r in tapes:
            if r.follows_all:
                if rec is None:
                    rec = (op_type, inputs, (out,), attrs, None, None)
                _take_all(r, rec)
                continue
            watched = r.watched
            for t in inputs:
                if id(t) in watched:
                    if rec is None:
                        rec = (op_type, inputs, (out,), attrs, None, None)
                    r.ops.append(rec)
                    watched[id(out)] = None  # the record keeps `out` alive; no second reference
                    break
    return out


def emit_many(op_type: str, datas: Any, device: Device, inputs: Sequence[Tensor], attrs: Any = None) -> list[Tensor]:
    """Like :func:`emit` for an op with several outputs; returns a list."""
    outs = [Tensor._wrap(d if d.__class__ is device.array_type else device.xp.asarray(d), device)
            for d in datas]
    if recording_anywhere:
        if observing:
            if _trace.active:
                _trace.emitted(op_type, inputs, tuple(outs), attrs)
            if on_op is not None:
                on_op(op_type, outs)
        if _thread_stack():
            record(tuple(outs), inputs, op_type, attrs, None)
    return outs


def record(outputs, inputs, op_type, attrs, backward_fn, follow_outputs=True):
    """Record one op on every tape of this thread that watches one of ``inputs``.

    A tape that watches accessed variables starts watching the trainable ones
    among ``inputs``; the record keeps each variable's version (None for other
    tensors), so the sweep can tell when one was assigned since. With
    ``follow_outputs=False`` (``stop_gradient``) the tapes keep the record but
    do not follow its outputs, so ops that read only them are not recorded.
    """
    variables = [t for t in inputs if t.__class__ is not Tensor and isinstance(t, Variable)]
    versions = tuple([getattr(t, "_version", None) for t in inputs]) if variables else None
    rec = (op_type, inputs, outputs, attrs, backward_fn, versions)
    for r in _thread_stack() or ():
        if r.follows_all:
            _take_all(r, rec)
            continue
        watched = r.watched
        if variables and r.watch_accessed:
            for v in variables:
                if v.trainable and id(v) not in watched:
                    r.watch(v)
        for t in inputs:
            if id(t) in watched:
                r.ops.append(rec)
                if follow_outputs:
                    for o in outputs:
                        watched[id(o)] = None  # the record keeps `o` alive; no second reference
                break
    return rec
