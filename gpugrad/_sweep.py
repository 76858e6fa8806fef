"""The backward sweep: records in reverse order, each op's gradient rule, gradients summed per tensor.

:func:`backward` is the one interface: the tape's ``gradient`` and
``jacobian``, and the diagnostics' side sweep call it with a list of records
(tuples made by :mod:`gpugrad._recorder`), the seed gradients (from
:func:`seed_gradients`) and the ids of the sources. It

1. keeps the records that lie on a path from a source (one forward pass,
   :func:`records_on_paths`, unless the caller knows they all do),
2. walks them in reverse order, calling each op's gradient rule (or the
   record's ``backward_fn``) with the gradients of its outputs,
3. sums a broadcast gradient back to its input's shape and casts it to its
   input's dtype (here, for every rule),
4. accumulates gradients of inputs used more than once.

Its two speed mechanisms each sit in one place: early release (each record
and gradient is dropped once its op is done, and with ``release`` the
records themselves, so memory falls during the sweep) and declared buffer
reuse (a rule registered ``donates_dy`` may write into its upstream gradient
when exact reference counts show nothing else holds it and
``gpugrad._ownership.may_write_in_place`` allows its array; see ``gpugrad._donation``). Rules run with gpugrad ops, so a tape that
records while the sweep runs records the gradient computation: that is how
second and higher derivatives work.
"""
from sys import getrefcount

from . import _donation, _recorder, anomaly
from . import _nest as nest
from . import registry
from .errors import DeviceError, DTypeError, GradientError, GradientUsageError, NotATensorError, ShapeError
from .ops import add, cast, ones_like, sum_to, zeros_like
from ._recorder import INPUTS, OUTPUTS, Op, active_tapes, freed_outputs
from .registry import gradient_rule
from .tensor import Tensor, ensure_tensor
from ._tracing import declare
from ._tracing import state as _trace_state

from ._donation import DONATE_MIN_SIZE
from ._ownership import may_write_in_place
from . import _dtypes as _dt


def records_on_paths(records, source_ids):
    """The records that some source reaches, and the ids of every tensor reached."""
    reached = set(source_ids)
    on_path = []
    for rec in records:
        for t in rec[INPUTS]:
            if id(t) in reached:
                on_path.append(rec)
                for o in rec[OUTPUTS]:
                    reached.add(id(o))
                break
    return on_path, reached


def seed_gradients(targets, output_gradients=None):
    """The gradient each target starts with (id -> gradient): ones, or the user's ``output_gradients``.

    Example:
        >>> import gpugrad as gg
        >>> y = gg.tensor([1.0, 2.0])
        >>> seed_gradients([y], None)[id(y)].numpy().tolist()
        [1.0, 1.0]
    """
    given = [None] * len(targets) if output_gradients is None else nest.flatten(output_gradients)
    if len(given) != len(targets):
        raise ValueError(f"output_gradients has {len(given)} entries for {len(targets)} targets")
    seeds = {}
    for t, g in zip(targets, given):
        if not isinstance(t, Tensor):
            raise NotATensorError(f"gradient() target must be a tensor, not {type(t).__name__}")
        if not _dt.inexact(t.dtype):
            raise DTypeError(f"cannot differentiate a target of integer dtype {t.dtype}")
        if g is None:
            g = ones_like(t)
        else:
            g = ensure_tensor(g, like=t)
            if g._device is not t._device:
                raise DeviceError(
                    f"output_gradients is on {g.device!r} but its target is on {t.device!r}")
            if g.shape != t.shape:
                raise ShapeError(
                    f"output_gradients has shape {g.shape} but its target has shape {t.shape}")
            if g.dtype != t.dtype:  # the sweep starts in the target's dtype, as every gradient keeps its tensor's
                g = cast(g, t.dtype)
        key = id(t)
        seeds[key] = g if key not in seeds else add(seeds[key], g)
    return seeds


def backward(records, seeds, source_ids, release=False, reached=None, on_final=None):
    """Sweep ``records`` backwards from ``seeds`` (id -> gradient); id -> gradient.

    A gradient is dropped once the op that consumes it is done (unless it is a
    source's), and with ``release`` so is each record with the arrays it saved:
    memory falls during the sweep instead of peaking at its end. ``reached``,
    when the caller knows every record lies on a path from a source, holds
    the ids of every tensor they reach (and spares the forward pass over them).
    ``on_final(source_id, gradient or None)``, when given, is called for each source as soon as
    its gradient is final (the last op that reads it is done), before the sweep goes on.
    """
    if reached is None:
        on_path, reached = records_on_paths(records, source_ids)
        if release:
            records.clear()
    else:
        on_path = records if release else list(records)  # popped below
    grads = dict(seeds)
    finals = None if on_final is None else _FinalReports(on_path, source_ids, grads, on_final)
    anomaly_cell = anomaly.begin_sweep()  # None unless gg.detect_anomaly() is on in this thread
    try:
        _sweep(on_path, grads, source_ids, reached, anomaly_cell, finals)
    finally:
        if anomaly_cell is not None:
            anomaly.end_sweep(anomaly_cell)
    if finals is not None:
        finals.report_rest()  # the sweep is over: every source not yet reported is final
    return grads


class _FinalReports:
    """Tells ``on_final`` of each source of a sweep once no record left to do reads it.

    The sweep pops its records from the end; while ``i`` records remain, every record from
    index ``i`` on is done, so a source whose first reader is record ``i`` has its final
    gradient: the sweep calls :meth:`done_from` with ``i`` before each pop, and
    :meth:`report_rest` after its loop.
    """

    __slots__ = ("_by_index", "_grads", "_on_final")

    def __init__(self, records, source_ids, grads, on_final):
        first_reader = {}
        for i in range(len(records) - 1, -1, -1):
            for t in records[i][INPUTS]:
                if id(t) in source_ids:
                    first_reader[id(t)] = i
        by_index = {}
        for key in source_ids:
            by_index.setdefault(first_reader.get(key, len(records)), []).append(key)
        self._by_index, self._grads, self._on_final = by_index, grads, on_final

    def done_from(self, index):
        """Records from ``index`` on are done: report the sources whose first reader is record ``index``."""
        keys = self._by_index.pop(index, None)
        if keys:
            self._report(keys)

    def report_rest(self):
        """Report every source not reported yet, last readers first."""
        for i in sorted(self._by_index, reverse=True):
            self._report(self._by_index.pop(i))

    def _report(self, keys):
        for key in keys:
            self._on_final(key, self._grads.get(key))


def _sweep(on_path, grads, source_ids, reached, anomaly_cell, finals):
    """The loop of :func:`backward` over ``on_path`` (popped from its end), summing into ``grads``;
    ``finals``: None, or the :class:`_FinalReports` told before each record."""
    take, peek = grads.pop, grads.get
    next_record = on_path.pop
    rules, reading_outputs, donating_dy = registry.rules, registry.rules_reading_outputs, registry.rules_donating_dy
    new = object.__new__
    # donation needs exact reference counts and no tape of this thread recording the sweep
    donate = _donation.donating and not active_tapes()
    # non-empty while a gg.function traces or a gg.profile is open: each rule call is declared to them
    observed = _recorder.observing
    while on_path:
        if finals is not None:
            finals.done_from(len(on_path))
        rec = next_record()
        if anomaly_cell is not None:
            anomaly_cell[0] = rec  # an anomaly in this op's gradient names it
        op_type, inputs, outputs, attrs, backward_fn, versions = rec
        if len(outputs) == 1:
            key = id(outputs[0])
            dy = peek(key) if key in source_ids else take(key, None)
            if dy is None:
                continue
            out_grads, filled = None, ()  # one output: its rule is called with dy alone
        else:
            out_grads = tuple([peek(id(o)) if id(o) in source_ids else take(id(o), None) for o in outputs])
            if all(g is None for g in out_grads):
                continue
            filled = tuple([i for i, g in enumerate(out_grads) if g is None])
            out_grads = tuple([zeros_like(o) if g is None else g for o, g in zip(outputs, out_grads)])
        if versions is not None:
            _check_versions(op_type, inputs, versions)
        if backward_fn is None:
            rule = rules.get(op_type)
            if rule is None and gradient_rule(op_type) is None:
                continue  # declared not differentiable
            # each rule call gets an Op of its own (a rule that keeps it keeps this record's fields);
            # outputs a rule declares it does not read are freed now, so its result can take their memory
            op = new(Op)  # about 0.1 us; assignments of at most three names build no tuple
            op.type, op.inputs, op.attrs = op_type, inputs, attrs
            op.filled, op._reached = filled, reached
            op.outputs = outputs if op_type in reading_outputs else freed_outputs(op_type)
            rec = outputs = None
            if out_grads is None:
                # a rule that declares donates_dy may write into dy's buffer when nothing else can see
                # it: this loop holds the only reference (dy; getrefcount adds one), no tape records,
                # and the ownership rule allows the array (not a view, not 0-d, large, not a plan's)
                if (donate and op_type in donating_dy and key not in source_ids
                        and may_write_in_place(dy._data, DONATE_MIN_SIZE)
                        and getrefcount(dy) == 2 and getrefcount(dy._data) == 2):
                    _donation.lent[0] = dy._data
                    try:
                        in_grads = rule(op, dy) if not observed else _observed_call(op_type, rule, (op, dy))
                    finally:
                        _donation.lent[0] = None
                else:
                    in_grads = rule(op, dy) if not observed else _observed_call(op_type, rule, (op, dy))
            else:
                in_grads = rule(op, *out_grads) if not observed else _observed_call(op_type, rule, (op, *out_grads))
        else:
            dys = (dy,) if out_grads is None else out_grads
            in_grads = backward_fn(*dys) if not observed else _observed_call(op_type, backward_fn, dys)
            if in_grads is None or isinstance(in_grads, Tensor):
                in_grads = (in_grads,)
        if len(in_grads) != len(inputs):
            raise GradientUsageError(
                f"the gradient of op {op_type!r} returned {len(in_grads)} gradients for "
                f"{len(inputs)} inputs")
        for t, g in zip(inputs, in_grads):
            if g is None:
                continue
            key = id(t)
            if key not in reached:
                continue
            if g.__class__ is not Tensor and not isinstance(g, Tensor):
                g = ensure_tensor(g, like=t)
            gd, td = g._data, t._data
            if gd.shape != td.shape:
                g = _unbroadcast(g, t, op_type)
            if gd.dtype is not td.dtype and gd.dtype != td.dtype:  # a gradient has its input's dtype (PyTorch)
                if not _dt.inexact(td.dtype):
                    continue  # an integer input has no gradient
                g = cast(g, td.dtype)
            prev = peek(key)
            grads[key] = g if prev is None else add(prev, g)
        t = g = gd = td = prev = dy = out_grads = in_grads = op = None  # hold nothing into the next op


def _declared_call(fn, args):
    """Call gradient rule or custom backward ``fn`` as a root of kind OP (:mod:`gpugrad._tracing.declare`):
    a trace takes the call as one step and replays it by calling the very function again."""
    return _trace_state.call_root(fn, declare.OP, args, {})


def _observed_call(op_type, fn, args):
    """Call the gradient rule (or custom backward) ``fn`` of op ``op_type`` while a trace or a profile is open
    somewhere: declared to the trace (:func:`_declared_call`), timed by the profile (:mod:`gpugrad.profiler`)."""
    call = _declared_call if _trace_state.active else _plain_call
    on_rule = _recorder.on_rule
    if on_rule is not None:
        return on_rule(op_type, call, fn, args)
    return call(fn, args)


def _plain_call(fn, args):
    return fn(*args)


def _unbroadcast(grad, t, op_type):
    """Sum ``grad`` back to the shape of input ``t`` that ``op_type`` broadcast."""
    try:
        return sum_to(grad, t.shape)
    except ShapeError:
        custom = op_type.startswith("CustomGradient:")
        who = (f"the grad_fn of custom_gradient function {op_type[15:]!r}" if custom
               else f"the gradient of op {op_type!r}")
        raise GradientUsageError(
            f"{who} returned a gradient of shape {grad.shape} for an input of shape {t.shape}: expected "
            f"{t.shape} (or a shape broadcasting made from it, which is summed back); make "
            f"{'grad_fn' if custom else 'its gradient function'} return one gradient of each input's shape") from None


def _check_versions(op_type, inputs, versions):
    for t, version in zip(inputs, versions):
        if version is not None and t._version != version:
            label = f"variable {t.name!r}" if t.name else "variable"
            raise GradientError(
                f"{label} of shape {t.shape} was assigned after op {op_type!r} read it (version {version}, "
                f"now {t._version}: assign, assign_add, assign_sub or an optimizer update), so what the tape "
                f"recorded no longer matches it; compute the gradient before changing the variable, or record "
                f"the forward pass again on a new tape")
