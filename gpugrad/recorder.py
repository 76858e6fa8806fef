"""Recording ops on the tapes that are active: the per-op hot path.

Every op ends in :func:`emit`. With no tape recording that costs one list
check; otherwise each active tape that watches one of the inputs appends one
shared record, a plain tuple ``(type, inputs, outputs, attrs, backward_fn,
versions)`` (the cheapest object Python makes), and starts watching the
outputs. The backward sweep shows each record to a gradient rule as an
:class:`Op`.
"""
from .tensor import Tensor, Variable

active_tapes = []  # tapes recording now, outermost first; mutated in place
_new = object.__new__

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

    __slots__ = ("type", "inputs", "outputs", "attrs", "_reached")

    def __init__(self, record=None, reached=()):
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
    if active_tapes:
        for t in inputs:
            if t.__class__ is not Tensor:  # a variable: it may need watching, and its version keeping
                record((out,), inputs, op_type, attrs, None)
                return out
        rec = None
        for tape in active_tapes:
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
    if active_tapes:
        record(tuple(outs), inputs, op_type, attrs, None)
    return outs


def record(outputs, inputs, op_type, attrs, backward_fn):
    """Record one op on every active tape that watches one of ``inputs``.

    A tape that watches accessed variables starts watching the trainable ones
    among ``inputs``; the record keeps each variable's version (None for other
    tensors), so the sweep can tell when one was assigned since.
    """
    variables = [t for t in inputs if t.__class__ is not Tensor and isinstance(t, Variable)]
    versions = tuple([getattr(t, "_version", None) for t in inputs]) if variables else None
    rec = None
    for tape in active_tapes:
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
        for o in outputs:
            watched[id(o)] = None
    return rec
