"""Why a gradient is None or zero: ``gg.explain_gradient(tape, target, source)``.

The explanation reads what the tape recorded (its records and the tensors it
watches) without consuming it, so it can be asked before ``tape.gradient``
on a non-persistent tape. It checks, in order: a tape already used, an
integer target or source, a source the tape never watched (a constant Tensor,
``watch_accessed_variables=False``, a non-trainable or never-read Variable),
then follows the recorded ops from the source: a path cut by ``stop_gradient``
or another non-differentiable op, a target the tape has no record of (made
inside ``stop_recording()``, through ``.numpy()``, outside the tape), a target
that does not depend on the source. When the source does reach the target it
runs the backward sweep once, on the side, to tell a zero gradient from a
non-zero one and to name the op that sends back zeros.

An unrecorded op leaves no trace, so where the tape cannot tell which of
several causes it was, the text names them all and says so.
"""
from . import _nest as nest, registry
from .ops import zeros_like
from ._recorder import BACKWARD_FN, INPUTS, OUTPUTS, TYPE, Op, paused
from ._sweep import backward, seed_gradients
from .tensor import Tensor, Variable, ensure_tensor
from . import _dtypes as _dt

__all__ = ["explain_gradient", "GradientExplanation"]

REASONS = {  # reason code -> what it means, one line each
    "connected": "the gradient is neither None nor all zeros",
    "zero": "the source reaches the target, but an op sends back an all-zero gradient (or paths cancel)",
    "rule_returns_none": "the source reaches the target, but an op's gradient rule returns None for it",
    "gradient_error": "tape.gradient raises an error instead of returning a gradient",
    "tape_used": "a non-persistent tape already computed a gradient and released its records",
    "integer_target": "the target has an integer dtype (tape.gradient raises DTypeError)",
    "integer_dtype": "the source has an integer dtype; only floating-point tensors have gradients",
    "tensor_not_watched": "the source is a constant Tensor that the tape never watched",
    "watch_accessed_variables_false": "the tape does not watch variables it reads, and the source was not watched",
    "variable_not_trainable": "the source is a non-trainable Variable that was not watched explicitly",
    "variable_not_read": "the source is a Variable that no op read while the tape recorded",
    "stop_gradient": "the path from the source to the target is cut by stop_gradient",
    "not_differentiable": "the path from the source to the target is cut by a non-differentiable op",
    "not_recorded": "the tape has no record of the op that made the target",
    "unconnected": "the target does not depend on the source in anything the tape recorded",
}


class GradientExplanation:
    """Why ``tape.gradient(target, source)`` is None, zero, or neither; ``str()`` gives the text.

    Attributes: ``reason`` (a key of :data:`REASONS`), ``gradient`` (what
    ``tape.gradient`` gives: ``"none"``, ``"zero"``, ``"nonzero"`` or
    ``"error"``), ``chain`` (the op types from the source along the path, up
    to where it ends or is cut), ``op`` (the op type where the path ends or
    that zeroes the gradient; ``None`` if no op is to blame), ``text`` and
    ``graph``: what the tape recorded as a :class:`gpugrad.visual.OpGraph`
    from this source to the target, the gradient's path and the op where it
    stops marked (``tape.graph(target, [source])``; None once a non-persistent
    tape has released its records). Where the path is cut, the text names that
    op's node in ``graph``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor(2.0)
        >>> with gg.GradientTape() as tape:
        ...     y = x * x
        >>> e = gg.explain_gradient(tape, y, x)
        >>> e.reason, e.gradient
        ('tensor_not_watched', 'none')
    """

    __slots__ = ("reason", "gradient", "chain", "op", "text", "graph")

    def __init__(self, reason, gradient, text, chain=(), op=None, graph=None):
        self.reason, self.gradient, self.text = reason, gradient, text
        self.chain, self.op, self.graph = tuple(chain), op, graph

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<GradientExplanation reason={self.reason!r}>\n{self.text}"


def explain_gradient(tape, target, source):
    """Explain why ``tape.gradient(target, source)`` is None or zero.

    Returns a :class:`GradientExplanation` (``str()`` gives the text; a nested
    ``source`` gives the same structure of them). It reads the tape without
    consuming it: a non-persistent tape can still compute its gradient after.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0, 2.0])
        >>> with gg.GradientTape() as tape:
        ...     y = gg.sum(gg.stop_gradient(w * 3.0))
        >>> print(gg.explain_gradient(tape, y, w))  # doctest: +ELLIPSIS
        tape.gradient(target, source) is None: the path ... is cut by op 'StopGradient' ...
        path: source -> Mul -> StopGradient (cut) -> (end)
    """
    targets = nest.flatten(target)
    for t in targets:
        if not isinstance(t, Tensor):
            raise TypeError(f"explain_gradient() target must be a tensor, not {type(t).__name__}")
    sources = nest.flatten(source)
    for s in sources:
        if not isinstance(s, Tensor):
            raise TypeError(f"explain_gradient() sources must be tensors or variables, not {type(s).__name__}")
    view = tape._diagnostic_view()  # the records and what the tape follows, read-only
    return nest.pack_like(source, [_with_graph(_explain(view, targets, s), view, targets, s) for s in sources])


# --------------------------------------------------------------------------- the picture

def _with_graph(e, view, targets, source):
    """``e`` with its ``graph`` (the tape's records from ``source`` to ``targets``), and, where the path is
    cut (a None gradient, and an op the graph marks cut), a line naming that op's node (before the text's
    ``path:`` line)."""
    if view.records is None:
        return e
    from .visual.from_tape import tape_graph
    e.graph = tape_graph(view.records, view.watched, [source], targets)
    if e.gradient == "none" and e.graph.cut:
        node = next((n for n in e.graph.cut if n.op_type == e.op), e.graph.cut[0])
        if node is not None:
            line = (f"The gradient stops at op {node.op_type!r}: node {node.id} of .graph, marked cut"
                    f" ({node.note}); .graph.render('why.svg') draws it.")
            at = e.text.rfind("\npath: ")
            e.text = e.text + "\n" + line if at < 0 else e.text[:at] + "\n" + line + e.text[at:]
    return e


# --------------------------------------------------------------------------- the checks, in order


def _explain(view, targets, source):
    if view.records is None:
        return GradientExplanation("tape_used", "error", _HEAD_ERROR + "GradientError: this non-persistent tape "
                                   "already computed a gradient and released what it recorded, so there is "
                                   "nothing left to explain either. Call gg.explain_gradient before "
                                   "tape.gradient, or use GradientTape(persistent=True).")
    for t in targets:
        if not _dt.inexact(t.dtype):
            return GradientExplanation("integer_target", "error", _HEAD_ERROR + f"DTypeError: the target is "
                                       f"{_describe(t)}; an integer result (an argmax, a label, a count) has "
                                       f"no gradient. Differentiate a floating-point value.")
    if not _dt.inexact(source.dtype):
        return _none("integer_dtype", f"the source is {_describe(source)}. Only floating-point tensors have "
                     f"gradients, and tapes never watch integer ones. Make the source a float tensor "
                     f"(e.g. gg.tensor(values, dtype=gg.float32)).")
    if id(source) not in view.watched:
        return _not_watched(view, source)
    return _follow(view, targets, source)


_HEAD_NONE = "tape.gradient(target, source) is None: "
_HEAD_ERROR = "tape.gradient(target, source) raises "


def _none(reason, text, chain=(), op=None):
    return GradientExplanation(reason, "none", _HEAD_NONE + text, chain, op)


def _not_watched(view, source):
    if not isinstance(source, Variable):
        return _none("tensor_not_watched", f"the source is a constant {_describe(source)} that the tape never "
                     f"watched. A tape follows a Tensor only after tape.watch(x), called inside the with block "
                     f"before x is used; or make it a gg.Variable. (If it was computed from watched tensors, "
                     f"it was computed where the tape did not record: inside tape.stop_recording(), or "
                     f"before or outside the with block.)")
    if not source.trainable:
        return _none("variable_not_trainable", f"the source is {_describe(source)} made with trainable=False; "
                     f"tapes watch only trainable variables on their own. Call tape.watch(v) inside the with "
                     f"block before v is used, or make it trainable.")
    if not view.watch_accessed:
        return _none("watch_accessed_variables_false", f"the source is {_describe(source)}, but the tape was "
                     f"made with watch_accessed_variables=False, so it follows only what tape.watch() is "
                     f"given. Call tape.watch(v) inside the with block before v is used.")
    return _none("variable_not_read", f"the source is {_describe(source)} that no op read while the tape "
                 f"recorded (a tape watches a variable when a recorded op reads it). It was used only before "
                 f"or outside the with block, or inside tape.stop_recording(), or not at all; the tape keeps "
                 f"no trace of those uses, so it cannot tell which.")


def _follow(view, targets, source):
    """The source is watched: follow the recorded ops from it."""
    records = view.records
    cut_types = set(registry.not_differentiable_ops())
    live = {id(source): None}  # reached through differentiable ops: id -> (record, input) that reached it
    anyway = {id(source): None}  # reached through any ops, cuts included
    for rec in records:
        ins = [t for t in rec[INPUTS] if id(t) in anyway]
        if not ins:
            continue
        live_in = [t for t in ins if id(t) in live]
        cut = rec[BACKWARD_FN] is None and rec[TYPE] in cut_types
        for o in rec[OUTPUTS]:
            if id(o) not in anyway:
                anyway[id(o)] = (rec, ins[0])
            if live_in and not cut and id(o) not in live:
                live[id(o)] = (rec, live_in[0])
    reached = [t for t in targets if id(t) in live]
    if reached:
        return _connected(targets, source, records, live, anyway, reached[0])
    for t in targets:
        if id(t) in anyway:
            chain = _chain(anyway, t)
            cut_rec = next(r for r in chain if r[BACKWARD_FN] is None and r[TYPE] in cut_types)
            op_type = cut_rec[TYPE]
            path = _path(chain, cut_rec)
            if op_type == "StopGradient":
                return _none("stop_gradient", f"the path from the source to the target is cut by op "
                             f"'StopGradient' (gg.stop_gradient), which sends no gradient back. Every "
                             f"recorded path between them is cut by a non-differentiable op; this is one.\n"
                             f"path: {path}", [r[TYPE] for r in chain], op_type)
            return _none("not_differentiable", f"the path from the source to the target is cut by op "
                         f"{op_type!r}, which is declared not differentiable (its inputs get no gradient; "
                         f"gpugrad.registry.not_differentiable_ops() lists all such ops). Every recorded path "
                         f"between them is cut by such an op; this is one.\npath: {path}",
                         [r[TYPE] for r in chain], op_type)
    return _unreached(view, targets, source, records, anyway)


def _unreached(view, targets, source, records, anyway):
    """No recorded path at all: the target is unrecorded, or does not depend on the source."""
    read = set()
    for rec in records:
        read.update(id(t) for t in rec[INPUTS])
    ends = [(i, o) for i, rec in enumerate(records) for o in rec[OUTPUTS]
            if id(o) in anyway and id(o) not in read]
    if ends:
        last = ends[-1][1]
        chain = _chain(anyway, last)
        dead_end = (f"The source's recorded path ends at {_describe(last)}, which no recorded op reads:\n"
                    f"path: {_path(chain, None, end='(end)')}")
    else:
        chain = ()
        dead_end = "No recorded op reads the source."
    produced = {id(o) for rec in records for o in rec[OUTPUTS]}
    unrecorded = [t for t in targets if id(t) not in produced and id(t) not in view.watched]
    cuts = [o for _, o in ends if anyway[id(o)][0][TYPE] == "StopGradient"]
    if unrecorded and cuts:
        chain = _chain(anyway, cuts[-1])
        return _none("stop_gradient", f"the path from the source is cut by op 'StopGradient' "
                     f"(gg.stop_gradient), which sends no gradient back; as in TensorFlow, the tape does not "
                     f"follow its output, so the ops that made the target from it left no record.\n"
                     f"path: {_path(chain, chain[-1], end='(end)')}", [r[TYPE] for r in chain], "StopGradient")
    if unrecorded:
        return _none("not_recorded", f"the tape has no record of the op that made the target "
                     f"({_describe(unrecorded[0])}), so nothing connects it to the source. It was computed "
                     f"inside tape.stop_recording(), through a host copy (.numpy(), float()), outside the with "
                     f"block, or only from tensors the tape did not watch at the time (e.g. before "
                     f"tape.watch()); an unrecorded op leaves no trace, so the tape cannot tell which.\n"
                     f"{dead_end}", [r[TYPE] for r in chain], chain[-1][TYPE] if chain else None)
    leaves, constants = _ancestry(records, targets, view.watched)
    text = ("the target does not depend on the source in anything the tape recorded. "
            f"The recorded ops that make the target read {leaves or 'no watched tensor'}"
            + (f" and {constants} tensor(s) the tape did not record" if constants else "") + ".\n" + dead_end)
    if constants:
        text += ("\nIf one of the target's unrecorded inputs was computed from the source inside "
                 "tape.stop_recording() or through .numpy(), that is where the path breaks; the tape "
                 "cannot tell.")
    return _none("unconnected", text, [r[TYPE] for r in chain], None)


def _connected(targets, source, records, live, anyway, target):
    """The source reaches the target: sweep once on the side to see what the gradient is."""
    chain = _chain(live, target)
    path = _path(chain, None)
    try:
        with paused():  # the side sweep is not recorded anywhere (nor checked by anomaly mode)
            seeds = seed_gradients(targets)
            grads = backward(list(records), seeds, set(anyway))
            g = grads.get(id(source))
            blamed = [] if g is not None and _nonzero(g) else _blame(records, grads, live, anyway)
    except Exception as e:  # noqa: BLE001 - reported, not hidden: it is what gradient() would raise
        return GradientExplanation("gradient_error", "error", _HEAD_ERROR + f"{type(e).__name__}: {e}\n"
                                   f"path: {path}", [r[TYPE] for r in chain])
    if g is not None and not blamed and _nonzero(g):
        n = int(g._device.xp.count_nonzero(g._data))
        return GradientExplanation("connected", "nonzero", f"tape.gradient(target, source) is neither None "
                                   f"nor zero: {n} of {g.size} entries are non-zero.\npath: {path}",
                                   [r[TYPE] for r in chain])
    if g is None:  # only a rule returning None leaves a reached source with no gradient
        rec, t, _ = next((b for b in blamed if b[2] is None), blamed[0] if blamed else (chain[0], None, None))
        c = _chain(live, rec[OUTPUTS][0])
        return _none("rule_returns_none", f"the source reaches the target, but the gradient rule of op "
                     f"{rec[TYPE]!r} returns None for its input on the path"
                     + (f" ({_describe(t)})" if t is not None else "") + ".\npath: "
                     + _path(c, rec, mark="(gradient None)", end="... -> target"), [r[TYPE] for r in c],
                     rec[TYPE])
    if not blamed:
        return GradientExplanation("zero", "zero", "tape.gradient(target, source) is all zeros: the source "
                                   "reaches the target and every op on the way sends some gradient back, "
                                   "but the contributions of several paths cancel out (as in x - x).\npath: "
                                   + path, [r[TYPE] for r in chain])
    lines = []
    for rec, t, _ in blamed[:3]:
        c = _chain(live, rec[OUTPUTS][0])
        lines.append(f"op {rec[TYPE]!r} sends back zeros for its input {_describe(t)}{_why_zero(rec)}, "
                     f"although the gradient of its output is not zero.\npath: "
                     f"{_path(c, rec, mark='(zero gradient)', end='... -> target')}")
    more = f"\n(and {len(blamed) - 3} more such ops)" if len(blamed) > 3 else ""
    rec = blamed[0][0]
    return GradientExplanation("zero", "zero", "tape.gradient(target, source) is all zeros: the source "
                               "reaches the target, but " + "\n".join(lines) + more,
                               [r[TYPE] for r in _chain(live, rec[OUTPUTS][0])], rec[TYPE])


def _blame(records, grads, live, anyway):
    """``[(record, input, gradient sent to it)]``: ops on the path that get a non-zero gradient for
    an output but send back zeros (or None) for every input the source reaches."""
    reached = set(anyway)
    blamed = []
    for rec in records:
        ins = [(i, t) for i, t in enumerate(rec[INPUTS]) if id(t) in live]
        if not ins or id(rec[OUTPUTS][0]) not in live:
            continue
        out_grads = [grads.get(id(o)) for o in rec[OUTPUTS]]
        if not any(dy is not None and _nonzero(dy) for dy in out_grads):
            continue  # no gradient arrives here
        sent = _sent_back(rec, out_grads, reached)
        if all(sent[i] is None or not _nonzero(sent[i]) for i, _ in ins):
            i, t = ins[0]
            blamed.append((rec, t, sent[i]))
    return blamed


def _sent_back(rec, out_grads, reached):
    """The gradients that ``rec``'s rule sends to each of its inputs, given its outputs' gradients."""
    filled = tuple([i for i, g in enumerate(out_grads) if g is None])
    out_grads = [zeros_like(o) if g is None else g for o, g in zip(rec[OUTPUTS], out_grads)]
    if rec[BACKWARD_FN] is not None:
        sent = rec[BACKWARD_FN](*out_grads)
        sent = [sent] if sent is None or isinstance(sent, Tensor) else list(sent)
    else:
        op = Op(rec, reached)
        op.filled = filled if len(out_grads) > 1 else ()
        sent = list(registry.gradient_rule(rec[TYPE])(op, *out_grads))
    return [None if g is None else ensure_tensor(g, like=t) for g, t in zip(sent, rec[INPUTS])]


# --------------------------------------------------------------------------- helpers


def _chain(parents, t):
    """The records from the source to tensor ``t``, following ``parents`` (id -> (record, input))."""
    chain = []
    link = parents.get(id(t))
    while link is not None:
        rec, t = link
        chain.append(rec)
        link = parents.get(id(t))
    chain.reverse()
    return chain


def _path(chain, marked, mark="(cut)", end="target"):
    """``source -> Mul -> StopGradient (cut) -> Sum -> target``."""
    steps = ["source"] + [r[TYPE] + (f" {mark}" if r is marked else "") for r in chain] + [end]
    return " -> ".join(steps)


def _describe(t):
    """``Variable 'w' of shape (2,) float32`` or ``Tensor of shape ...``."""
    if isinstance(t, Variable):
        name = f" {t.name!r}" if getattr(t, "name", None) else ""
        return f"Variable{name} of shape {tuple(t.shape)} {t.dtype}"
    return f"Tensor of shape {tuple(t.shape)} {t.dtype}"


def _nonzero(g):
    return bool(g._device.xp.any(g._data != 0))


def _why_zero(rec):
    """A hint for the common ops that zero a gradient."""
    hints = {"Relu": " (every input entry is <= 0)", "Mul": " (the other factor is zero)",
             "Maximum": " (the other operand is larger everywhere)",
             "Minimum": " (the other operand is smaller everywhere)", "Clip": " (every entry is clipped)",
             "Where": " (the condition never selects it)"}
    return hints.get(rec[TYPE], "")


def _ancestry(records, targets, watched):
    """What the target's recorded ops read: watched leaves (described) and a count of unrecorded tensors."""
    producer = {}
    for rec in records:
        for o in rec[OUTPUTS]:
            producer[id(o)] = rec
    leaves, constants, seen = [], 0, set()
    target_ids = {id(t) for t in targets}
    stack = list(targets)
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        rec = producer.get(id(t))
        if rec is not None:
            stack.extend(rec[INPUTS])
        elif id(t) in watched:
            leaves.append(_describe(t))
        elif t.size > 1 and id(t) not in target_ids:
            constants += 1  # 0-d constants (the 2.0 in x * 2.0) are not worth a mention
    return ", ".join(leaves[:4]) + (f" and {len(leaves) - 4} more" if len(leaves) > 4 else ""), constants
