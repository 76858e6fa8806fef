"""Recording ops on the tapes that are active: the per-op hot path.

Every op ends in :func:`emit`. With no tape recording that costs one list
check; otherwise each active tape that watches one of the inputs gets one
shared :class:`Op` record and starts watching the outputs.
"""
from .tensor import Tensor, Variable

active_tapes = []  # tapes recording now, outermost first; mutated in place
_new = object.__new__


class Op:
    """One recorded op, shared by every tape that recorded it.

    Rules read ``type``, ``inputs``, ``outputs`` and ``attrs``, and may ask
    ``needs_grad``: one flag per input saying whether the gradient being
    computed needs it, so a rule can skip work (as ``Mul`` does for a constant).
    """

    __slots__ = ("type", "inputs", "outputs", "attrs", "backward_fn", "versions", "reached")

    def __init__(self, op_type, inputs, outputs, attrs, backward_fn, versions):
        self.type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.backward_fn = backward_fn
        self.versions = versions

    @property
    def needs_grad(self):
        reached = self.reached
        return tuple([id(t) in reached for t in self.inputs])

    def __repr__(self):
        return f"<Op {self.type} inputs={[i.shape for i in self.inputs]}>"


def emit(op_type, data, device, inputs, attrs=None):
    """Wrap ``data`` as the output tensor of ``op_type`` and record it."""
    if data.__class__ is not device.array_type:
        data = device.xp.asarray(data)  # NumPy reductions return scalars
    out = _new(Tensor)
    out._data = data
    out._device = device
    if active_tapes:
        record((out,), inputs, op_type, attrs, None)
    return out


def emit_many(op_type, datas, device, inputs, attrs=None):
    """Like :func:`emit` for an op with several outputs; returns a list."""
    outs = [Tensor._wrap(d if d.__class__ is device.array_type else device.xp.asarray(d), device)
            for d in datas]
    if active_tapes:
        record(tuple(outs), inputs, op_type, attrs, None)
    return outs


def record(outputs, inputs, op_type, attrs, backward_fn):
    """Record one op on every active tape that watches one of ``inputs``."""
    op = None
    for tape in active_tapes:
        watched = tape._watched
        followed = False
        for t in inputs:
            if t.__class__ is not Tensor and tape._watch_accessed and isinstance(t, Variable) \
                    and t.trainable and id(t) not in watched:
                tape._watch_one(t)
            if id(t) in watched:
                followed = True
        if not followed:
            continue
        if op is None:
            versions = None
            for t in inputs:
                if t.__class__ is not Tensor and isinstance(t, Variable):
                    versions = tuple([getattr(i, "_version", None) for i in inputs])
                    break
            op = Op(op_type, inputs, outputs, attrs, backward_fn, versions)
        tape._ops.append(op)
        for o in outputs:
            watched[id(o)] = o
    return op
