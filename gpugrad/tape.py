"""GradientTape: record ops on watched tensors, then sweep them backwards.

Recording happens in :mod:`gpugrad.recorder`; this module holds the tape's
user-facing API and the backward sweep. The sweep

1. marks the recorded ops that lie on a path from a source (one forward pass),
2. walks those ops in reverse order, calling each op's gradient rule,
3. sums a broadcast gradient back to its input's shape (here, for every rule),
4. accumulates gradients of inputs used more than once.

Rules run with gpugrad ops, and this tape pauses itself while it sweeps, so an
outer tape records the gradient computation: that is how second and higher
derivatives work.
"""
import contextlib
import sys
from sys import getrefcount

from . import anomaly, nest
from .errors import DeviceError, DTypeError, GradientError, GradientUsageError, NotATensorError, ShapeError
from .ops import add, cast, ones_like, sum_to, zeros_like
from .ops.base import donated
from .recorder import INPUTS, OUTPUTS, FreedOutputs, Op, active_tapes, pop_tape, push_tape
from . import registry
from .registry import gradient_rule
from .tensor import Tensor, Variable, ensure_tensor


# Reusing a dying gradient's buffer needs exact reference counts: CPython before 3.14, with the GIL.
donating = (sys.implementation.name == "cpython" and sys.version_info < (3, 14)
            and getattr(sys, "_is_gil_enabled", lambda: True)())
DONATE_MIN_SIZE = 1 << 15  # elements: below this a fresh allocation costs nothing


class GradientTape:
    """Records ops on watched tensors for reverse-mode differentiation.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor(3.0)
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.gradient(y, x).item()
        6.0
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._reset_records()
        self._recording = False
        self._tapes_joined = None  # the thread's tape list this tape records in, while it does

    def _reset_records(self):
        self._ops = []
        self._watched = {}  # id -> the tensor for explicit watches, None for op outputs (their record holds them)
        self._roots = set()  # ids of the tensors watched by hand or as variables: every record descends from one
        self._variables = {}  # id(variable) -> variable, in watch order

    # --- recording ----------------------------------------------------------
    def __enter__(self):
        if self._recording:
            raise GradientUsageError("this GradientTape is already recording; tapes are entered once")
        if self._ops is None:
            raise GradientError("this non-persistent GradientTape has been used; create a new one")
        self._start()
        return self

    def __exit__(self, *exc):
        self._stop()

    def _stop(self):
        if self._recording:
            pop_tape(self, self._tapes_joined)
            self._tapes_joined = None
            self._recording = False

    def _start(self):
        self._tapes_joined = push_tape(self)
        self._recording = True

    def _watch_one(self, t):
        if t._data.dtype.kind not in "fc":
            return  # integers have no gradient
        self._watched[id(t)] = t
        self._roots.add(id(t))
        if isinstance(t, Variable):
            self._variables.setdefault(id(t), t)

    def watch(self, tensor):
        """Follow ``tensor`` (or every tensor in a nested list/tuple/dict).

        Integer tensors cannot have gradients and are not followed.
        """
        if self._ops is None:
            raise GradientError("this non-persistent GradientTape has been used; create a new one")
        for t in nest.flatten(tensor):
            if not isinstance(t, Tensor):
                raise NotATensorError(f"tape.watch() takes tensors or variables, not {type(t).__name__}")
            self._watch_one(t)

    def watched_variables(self):
        """The variables this tape watches, in the order it first saw them (also after ``gradient()``)."""
        return tuple(self._variables.values()) if self._variables else ()

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops inside this block are not recorded on this tape.

        Example:
            >>> import gpugrad as gg
            >>> x = gg.Variable(1.0)
            >>> with gg.GradientTape() as tape:
            ...     with tape.stop_recording():
            ...         y = x * 2
            >>> tape.gradient(y, x) is None
            True
        """
        if not self._recording:
            raise GradientError("stop_recording() is only valid while the tape is recording")
        self._stop()
        try:
            yield
        finally:
            self._start()

    def reset(self):
        """Forget everything recorded so far; the tape keeps recording if it was."""
        self._reset_records()

    # --- differentiation ---------------------------------------------------
    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        """Gradients of ``target`` with respect to ``sources``.

        ``sources`` may be a tensor or a nested list/tuple/dict of them; the
        result has the same structure. A non-scalar target is differentiated as
        its sum (or weighted by ``output_gradients``). An unconnected source
        gets ``None``, or zeros with ``unconnected_gradients="zero"``;
        ``gg.explain_gradient(tape, target, source)`` says why a gradient is None or zero.

        Example:
            >>> import gpugrad as gg
            >>> w = gg.Variable([1.0, 2.0])
            >>> b = gg.Variable(0.5)
            >>> with gg.GradientTape() as tape:
            ...     loss = ((w * 3.0) + b).sum()
            >>> grads = tape.gradient(loss, {"w": w, "b": b})
            >>> grads["w"].numpy().tolist(), grads["b"].item()
            ([3.0, 3.0], 2.0)
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"unconnected_gradients is 'none' or 'zero', not {unconnected_gradients!r}")
        if self._ops is None:
            raise GradientError(
                "a non-persistent GradientTape can compute gradients only once and has released "
                "what it recorded; use GradientTape(persistent=True) to call gradient() again")
        targets = nest.flatten(target)
        flat_sources = nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, Tensor):
                raise NotATensorError(f"gradient() sources must be tensors or variables, not {type(s).__name__}")
        seeds = self._seed_gradients(targets, output_gradients)
        source_ids = {id(s) for s in flat_sources if id(s) in self._watched}  # unwatched: None
        records = self._ops
        # every record descends from a root; with every root a source, every record and tensor is on a path
        reached = self._watched if self._roots <= source_ids else None
        if self._persistent:
            if self._recording and reached is not None:
                reached = set(reached)  # this tape records the sweep (TensorFlow): a snapshot of what it follows
            grads = _backward(records, seeds, source_ids, release=False, reached=reached)
        else:
            self._stop()  # as in TensorFlow, a used non-persistent tape records no more
            self._ops = self._watched = self._roots = None  # the sweep frees records as it goes
            grads = _backward(records, seeds, source_ids, release=True, reached=reached)
        results = []
        for s in flat_sources:
            g = grads.get(id(s))
            if g is None and unconnected_gradients == "zero":
                g = zeros_like(s)
            results.append(g)
        return nest.pack_like(sources, results)

    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """``d target / d source`` of shape ``target.shape + source.shape``, per source.

        One backward sweep per target element (see :mod:`gpugrad.jacobians`);
        TensorFlow's ``parallel_iterations`` and ``experimental_use_pfor`` change nothing.
        """
        from .jacobians import jacobian
        return jacobian(self, target, sources, unconnected_gradients)

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per batch entry ``b``, ``d target[b] / d source[b]``; one sweep per element of an entry."""
        from .jacobians import batch_jacobian
        return batch_jacobian(self, target, source, unconnected_gradients)

    def _seed_gradients(self, targets, output_gradients):
        """The gradient each target starts with: ones, or the user's ``output_gradients``."""
        given = [None] * len(targets) if output_gradients is None else nest.flatten(output_gradients)
        if len(given) != len(targets):
            raise ValueError(f"output_gradients has {len(given)} entries for {len(targets)} targets")
        seeds = {}
        for t, g in zip(targets, given):
            if not isinstance(t, Tensor):
                raise NotATensorError(f"gradient() target must be a tensor, not {type(t).__name__}")
            if t.dtype.kind not in "fc":
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


def _records_on_paths(records, source_ids):
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


def _backward(records, seeds, source_ids, release=False, reached=None):
    """Sweep ``records`` backwards from ``seeds`` (id -> gradient); id -> gradient.

    A gradient is dropped once the op that consumes it is done (unless it is a
    source's), and with ``release`` so is each record with the arrays it saved:
    memory falls during the sweep instead of peaking at its end. ``reached``,
    when the caller knows every record lies on a path from a source, holds
    the ids of every tensor they reach (and spares the forward pass over them).
    """
    if reached is None:
        on_path, reached = _records_on_paths(records, source_ids)
        if release:
            records.clear()
    else:
        on_path = records if release else list(records)  # popped below
    grads = dict(seeds)
    take, peek = grads.pop, grads.get
    next_record = on_path.pop
    rules, reading_outputs, donating_dy = registry.rules, registry.rules_reading_outputs, registry.rules_donating_dy
    op = Op(None, reached)  # one view, refilled for each record
    freed = FreedOutputs()  # op.outputs of a rule declared not to read them
    anomaly_slot = anomaly.current_slot()  # None unless gg.detect_anomaly() is on in this thread
    # donation needs exact reference counts and no tape of this thread recording the sweep
    donate_min = DONATE_MIN_SIZE if donating and not active_tapes() else sys.maxsize
    while on_path:
        rec = next_record()
        if anomaly_slot is not None:
            anomaly_slot[0] = rec  # an anomaly in this op's gradient names it
        op_type, inputs, outputs, attrs, backward_fn, versions = rec
        if len(outputs) == 1:
            key = id(outputs[0])
            dy = peek(key) if key in source_ids else take(key, None)
            if dy is None:
                continue
            out_grads = None  # one output: its rule is called with dy alone
        else:
            out_grads = tuple([peek(id(o)) if id(o) in source_ids else take(id(o), None) for o in outputs])
            if all(g is None for g in out_grads):
                continue
            out_grads = tuple([zeros_like(o) if g is None else g for o, g in zip(outputs, out_grads)])
        if versions is not None:
            _check_versions(op_type, inputs, versions)
        if backward_fn is None:
            rule = rules.get(op_type)
            if rule is None and gradient_rule(op_type) is None:
                continue  # declared not differentiable
            # outputs a rule declares it does not read are freed now, so its result can take their memory
            op.type, op.inputs, op.attrs = op_type, inputs, attrs
            if op_type in reading_outputs:
                op.outputs = outputs
            else:
                op.outputs, freed.op_type = freed, op_type
            rec = outputs = None
            if out_grads is None:
                # a rule that declares donates_dy may write into dy's buffer when nothing else can see
                # it: this loop holds the only reference (dy; getrefcount adds one), no tape records
                if (op_type in donating_dy and dy._data.size >= donate_min and key not in source_ids
                        and getrefcount(dy) == 2 and getrefcount(dy._data) == 2 and dy._data.base is None):
                    donated[0] = dy._data
                    try:
                        in_grads = rule(op, dy)
                    finally:
                        donated[0] = None
                else:
                    in_grads = rule(op, dy)
            else:
                in_grads = rule(op, *out_grads)
        else:
            in_grads = backward_fn(dy) if out_grads is None else backward_fn(*out_grads)
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
                if td.dtype.kind not in "fc":
                    continue  # an integer input has no gradient
                g = cast(g, td.dtype)
            prev = peek(key)
            grads[key] = g if prev is None else add(prev, g)
        t = g = gd = td = prev = dy = out_grads = in_grads = None  # hold nothing into the next op
    return grads


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
