"""Recording ops on the tapes that are active: the per-op hot path.

Every op ends in :func:`emit`. With no tape recording in any thread that
costs one list check; otherwise each tape active in the calling thread that
watches one of the inputs appends one shared record, a plain tuple ``(type,
inputs, outputs, attrs, backward_fn, versions)`` (the cheapest object Python
makes), and starts watching the outputs. The backward sweep shows each record
to a gradient rule as an :class:`Op`.

Recording state is per thread, as TensorFlow's tape stack is: a tape entered
in one thread sees only that thread's ops.
"""
import contextlib
import threading

from .errors import GradientError
from .tensor import Tensor, Variable

_new = object.__new__


class _ThreadRecording(threading.local):
    """One thread's tapes that record now, outermost first."""

    def __init__(self):
        self.tapes = []


_thread = _ThreadRecording()
# One entry per tape recording in any thread: emit's single check when none records anywhere.
recording_anywhere = []


def active_tapes():
    """The calling thread's recording tapes, outermost first (the live list; do not mutate).

    Example:
        >>> import gpugrad as gg
        >>> with gg.GradientTape() as tape:
        ...     active_tapes() == [tape]
        True
        >>> active_tapes()
        []
    """
    return _thread.tapes


def push_tape(tape):
    """Start recording ``tape`` in the calling thread; returns the list it joined (for :func:`pop_tape`)."""
    tapes = _thread.tapes
    tapes.append(tape)
    recording_anywhere.append(None)
    return tapes


def pop_tape(tape, tapes):
    """Stop recording ``tape``, which :func:`push_tape` put in ``tapes``."""
    for i in range(len(tapes) - 1, -1, -1):
        if tapes[i] is tape:
            del tapes[i]
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
    saved = _thread.tapes
    _thread.tapes = []
    try:
        yield
    finally:
        _thread.tapes = saved

# Fields of a record tuple.
TYPE, INPUTS, OUTPUTS, ATTRS, BACKWARD_FN, VERSIONS = range(6)


class Op:
    """What a gradient rule sees of one recorded op.

    ``type``, ``inputs``, ``outputs``, ``attrs``; and ``needs_grad``, one flag
    per input saying whether the gradient being computed needs it, so a rule
    can skip work (as ``Mul`` does for a constant factor).

    Example:
        >>> import gpugrad as gg
        >>> @gg.RegisterGradient("DocScale")
        ... def _scale_grad(op, dy):
        ...     return [dy * op.attrs["factor"]]
    """

    __slots__ = ("type", "inputs", "_outputs", "attrs", "_reached")

    def __init__(self, record=None, reached=()):
        if record is not None:
            self.type, self.inputs, self._outputs, self.attrs = record[:4]
        self._reached = reached

    @property
    def outputs(self):
        outputs = self._outputs
        if outputs is None:
            raise GradientError(
                f"the gradient rule of op {self.type!r} reads op.outputs, but it was registered with "
                f"reads_outputs=False, so the backward sweep freed them; register it without that flag")
        return outputs

    @outputs.setter
    def outputs(self, value):
        self._outputs = value

    @property
    def needs_grad(self):
        inputs, reached = self.inputs, self._reached
        if len(inputs) == 2:  # most ops that ask are binary
            return (id(inputs[0]) in reached, id(inputs[1]) in reached)
        return tuple([id(t) in reached for t in inputs])

    def __repr__(self):
        return f"<Op {self.type} inputs={[i.shape for i in self.inputs]}>"


def emit(op_type, data, device, inputs, attrs=None):
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
        tapes = _thread.tapes
        if not tapes:
            return out
        for t in inputs:
            if t.__class__ is not Tensor:  # a variable: it may need watching, and its version keeping
                record((out,), inputs, op_type, attrs, None)
                return out
        rec = None
        for tape in tapes:
            watched = tape._watched
            for t in inputs:
                if id(t) in watched:
                    if rec is None:
                        rec = (op_type, inputs, (out,), attrs, None, None)
                    tape._ops.append(rec)
                    watched[id(out)] = None  # the record keeps `out` alive; no second reference
                    break
    return out


def emit_many(op_type, datas, device, inputs, attrs=None):
    """Like :func:`emit` for an op with several outputs; returns a list."""
    outs = [Tensor._wrap(d if d.__class__ is device.array_type else device.xp.asarray(d), device)
            for d in datas]
    if recording_anywhere and _thread.tapes:
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
    rec = None
    for tape in _thread.tapes:
        watched = tape._watched
        if variables and tape._watch_accessed:
            for v in variables:
                if v.trainable and id(v) not in watched:
                    tape._watch_one(v)
        for t in inputs:
            if id(t) in watched:
                break
        else:
            continue  # this tape follows none of the inputs
        if rec is None:
            rec = (op_type, inputs, outputs, attrs, backward_fn, versions)
        tape._ops.append(rec)
        if follow_outputs:
            for o in outputs:
                watched[id(o)] = None
    return rec
