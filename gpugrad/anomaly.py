"""NaN/Inf anomaly mode: ``with gg.detect_anomaly():`` checks every op's outputs.

While the mode is on, a recording that follows every op
(:func:`~gpugrad._recorder.collecting_recording`) sits among the recording tapes of the
thread that turned it on (the mode is per thread, as the tapes are). The recorder hands
each record to its ``on_record`` callback, :meth:`_Checker.check`, and it keeps
none: it checks the op's outputs for NaN and Inf, and notes per output
the op type and the user's source line that made it (in a dict dropped when
the mode ends; memory stays flat). Gradient rules run gpugrad ops, so the
backward sweep is checked the same way: each sweep takes a cell from
:func:`begin_sweep` and keeps in it the forward record it is differentiating,
so an error in a gradient names the forward op and the line that created it
(an op checked while no sweep runs is a forward op).

Off, the mode costs nothing: ``emit`` sees no extra recording, and the sweep tests
one local variable per record. On, each op pays a finiteness check of its
outputs (one pass over them, and on a GPU a wait for the result) and a short
walk up the Python stack.

Ops inside a ``@gg.custom_gradient`` function are checked as any others (they
are recorded, as TensorFlow records them), and so are the custom op's outputs.
What it does not see: values that no op made (data passed in, Variable
assignments) until an op reads them.
"""
import contextlib
import linecache
import os
import sys
import threading


from .errors import AnomalyError
from ._recorder import INPUTS, OUTPUTS, TYPE, collecting_recording, pop_tape, push_tape
from . import _dtypes as _dt

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_EXAMPLES = os.path.join(_PACKAGE, "examples") + os.sep  # user-level scripts shipped in the package

class _ThreadAnomaly(threading.local):
    """One thread's anomaly mode."""

    def __init__(self):
        self.depth = 0  # nested detect_anomaly() blocks
        self.checker = None  # the _Checker of every op's outputs while the mode is on
        self.recording = None  # the recording that hands it every op, among the thread's while the mode is on
        self.joined = None  # the tape list it joined
        self.sweeps = []  # one cell per backward sweep running now, innermost last: [the record it is on]


_state = _ThreadAnomaly()


def begin_sweep():
    """A cell ``[record]`` for a backward sweep to fill while anomaly mode is on in this thread, else None.

    Example:
        >>> import gpugrad as gg
        >>> begin_sweep() is None
        True
        >>> with gg.detect_anomaly():
        ...     cell = begin_sweep()
        ...     end_sweep(cell)
        >>> cell
        [None]
    """
    if _state.depth == 0:
        return None
    cell = [None]
    _state.sweeps.append(cell)
    return cell


def end_sweep(cell):
    """The sweep that :func:`begin_sweep` gave ``cell`` is done (or failed)."""
    sweeps = _state.sweeps
    if cell in sweeps:
        sweeps.remove(cell)


def current_slot():
    """The innermost running sweep's cell while anomaly mode is on in this thread, else None."""
    return _state.sweeps[-1] if _state.sweeps and _state.depth else None


class detect_anomaly(contextlib.ContextDecorator):  # noqa: N801 - used like a function, as in PyTorch
    """Raise :class:`~gpugrad.errors.AnomalyError` at the first op that makes a NaN or Inf.

    Inside the block every op's output is checked in the forward pass and in
    the backward sweep. The error names the op type, whether the forward pass
    or the op's gradient made the value, and the source line (``file:line``)
    where the op was created. Off by default; nesting is allowed; it also
    works as a decorator.

    Example:
        >>> import gpugrad as gg
        >>> import numpy as np
        >>> x = gg.tensor([1.0, 0.0])
        >>> with gg.detect_anomaly(), np.errstate(divide="ignore"):  # NumPy's own warning aside
        ...     with gg.GradientTape() as tape:
        ...         tape.watch(x)
        ...         y = gg.sqrt(x).sum()
        ...     tape.gradient(y, x)
        Traceback (most recent call last):
        ...
        gpugrad.errors.AnomalyError: backward of op 'Sqrt' made Inf: ...
    """

    def __enter__(self):
        state = _state
        if state.depth == 0:
            state.checker = _Checker()
            state.recording = collecting_recording(on_record=state.checker.check)
            state.joined = push_tape(state.recording)
        state.depth += 1
        return self

    def __exit__(self, *exc):
        state = _state
        state.depth -= 1
        if state.depth == 0:
            pop_tape(state.recording, state.joined)
            state.checker = state.recording = state.joined = None
            state.sweeps.clear()
        return False


def enabled():
    """Whether anomaly mode is on.

    Example:
        >>> import gpugrad as gg
        >>> with gg.detect_anomaly():
        ...     print(enabled())
        True
        >>> enabled()
        False
    """
    return _state.depth > 0


def _is_internal(filename):
    return filename.startswith(_PACKAGE) and not filename.startswith(_EXAMPLES)


class _Checker:
    """What anomaly mode keeps: per output, the op and the line that made it; :meth:`check` checks one record."""

    def __init__(self):
        self.origins = {}  # id(output) -> (op type, file, line) of the op that made it
        self._internal = {}  # file name -> whether it is inside gpugrad

    def check(self, rec):
        """Check record ``rec``'s outputs for NaN and Inf, noting the user's line that made it."""
        f = sys._getframe(1)
        internal = self._internal
        while f is not None:
            filename = f.f_code.co_filename
            inside = internal.get(filename)
            if inside is None:
                inside = internal[filename] = _is_internal(filename)
            if not inside:
                break
            f = f.f_back
        where = (rec[TYPE], filename, f.f_lineno) if f is not None else (rec[TYPE], None, None)
        origins = self.origins
        for out in rec[OUTPUTS]:
            origins[id(out)] = where
            if not _finite(out):
                _fail(rec, out, where, origins)


def _finite(t):
    """Whether tensor ``t`` holds no NaN and no Inf (integers always do)."""
    data = t._data
    if not _dt.inexact(data.dtype):
        return True
    # isfinite, not a BLAS dot product (x . x): OpenBLAS's threads would wake on every op and take the cores
    return bool(t._device.xp.isfinite(data).all())


# --------------------------------------------------------------------------- the error


def _fail(rec, out, where, origins):
    """Raise the AnomalyError for output ``out`` of record ``rec``, made at ``where``."""
    value = _bad_value(out)
    shape, dtype = tuple(out._data.shape), out._data.dtype
    bad_inputs = [i for i, t in enumerate(rec[INPUTS]) if _bad_value(t)]
    sweep = current_slot()  # the innermost running sweep's cell, or None in a forward pass
    if sweep is None:
        op_type, (_, filename, lineno) = rec[TYPE], where
        message = (f"forward of op {op_type!r} made {value} in its output (shape {shape}, {dtype}) "
                   f"at {_place(filename, lineno)}")
        gradient_op = None
    else:
        op_type, filename, lineno = _forward_op(sweep[0], rec, origins)
        message = (f"backward of op {op_type!r} made {value}: gradient op {rec[TYPE]!r} returned it "
                   f"(shape {shape}, {dtype}); op {op_type!r} was created at {_place(filename, lineno)}")
        if where[1] is not None:
            message += f"\n(the gradient op was called from {where[1]}:{where[2]})"
        gradient_op = rec[TYPE]
    if bad_inputs:
        message += (f"\nits input {bad_inputs[0]} already held NaN or Inf, made where anomaly mode "
                    f"cannot see (data passed in, a variable's value, or an op run before the mode began)")
    error = AnomalyError(message)
    error.op_type, error.phase, error.value = op_type, "forward" if sweep is None else "backward", value
    error.filename, error.lineno, error.gradient_op = filename, lineno, gradient_op
    raise error


def _bad_value(t):
    """``"NaN"``, ``"Inf"`` or ``None``: what non-finite value tensor ``t`` holds."""
    data = getattr(t, "_data", None)
    if data is None or not _dt.inexact(data.dtype):
        return None
    xp = t._device.xp
    if bool(xp.isnan(data).any()):
        return "NaN"
    return None if bool(xp.isfinite(data).all()) else "Inf"


def _place(filename, lineno):
    """``file:line`` and the source text under it; a note when the place is unknown."""
    if filename is None:
        return "an unknown place (made before anomaly mode began)"
    text = linecache.getline(filename, lineno).strip()
    return f"{filename}:{lineno}" + (f"\n    {text}" if text else "")


def _forward_op(forward_rec, gradient_rec, origins):
    """``(op type, file, line)`` of the forward op ``forward_rec`` whose gradient the sweep is computing."""
    if forward_rec is None:  # a sweep's seed gradients, before its first record
        return gradient_rec[TYPE], None, None
    op_type = forward_rec[TYPE]
    origin = origins.get(id(forward_rec[OUTPUTS][0]))
    if origin is None or origin[0] != op_type:  # made before the mode began (its id may be reused)
        return op_type, None, None
    return origin
