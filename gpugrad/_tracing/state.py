"""What the ops, the tensor's host reads and the modules tell a trace (this module imports nothing of gpugrad).

``active`` holds the captures now tracing, in any thread; it is empty outside ``gg.function``'s
first call, so each declaration below costs one list check. A capture belongs to the thread that
traces: :func:`current` finds it through a context variable (set by the capture for its thread,
checked against the thread's ident where contexts cross threads), so a trace in one thread leaves
the other threads' ops and functions alone.
"""
import contextvars
from threading import get_ident

active: list = []
_tracing = contextvars.ContextVar("gpugrad_capture", default=None)


def current():
    """The capture tracing in the calling thread, or None.

    Example:
        >>> current() is None
        True
    """
    capture = _tracing.get()
    return capture if capture is not None and capture.thread == get_ident() else None


def begin(capture):
    """Make ``capture`` the calling thread's trace; returns the token :func:`end` takes."""
    active.append(capture)
    return _tracing.set(capture)


def end(capture, token):
    """End what :func:`begin` started."""
    _tracing.reset(token)
    active.remove(capture)


def call_root(fn, kind, args, kwargs):
    """A declared root (:mod:`.declare`) called while some thread traces: the calling thread's capture takes
    the call as a step; in a thread that does not trace, each tracing thread's capture sees whether the call
    reads data it follows (work it cannot replay) or a Variable's values (then it marks the result, which
    must not reach the trace as a constant), and the call runs as usual."""
    capture = current()
    if capture is not None:
        return capture.call_root(fn, kind, args, kwargs)
    followers = [other for other in tuple(active) if other.note_foreign_call(fn, args, kwargs)]
    result = fn(*args, **kwargs)
    for other in followers:  # the call read a Variable's values: what it made may not reach that trace
        other.note_foreign_result(fn, result)
    return result


def emitted(op_type, inputs, outputs, attrs):
    """Every op's emission (:func:`gpugrad._recorder.emit`) while some thread traces: the calling thread's capture
    takes one made outside any declared function (a user's op) as a step of its own, or refuses it."""
    capture = current()
    if capture is not None:
        capture.note_emitted(op_type, inputs, outputs, attrs)


def made_outside_ops(tensor, source):
    """Declared by a tensor made outside the ops from ``source`` (``gg.Tensor(x)``, a custom gradient's copy
    of a variable): the calling thread's trace follows it when it wraps a buffer, and refuses to replay an op
    that reads it when it copied traced data (its values were taken at the trace)."""
    capture = current()
    if capture is not None:
        capture.note_made(tensor, source)


def check_host_read(tensor, what):
    """TraceError when ``tensor`` is traced by the calling thread's capture and read on the host from
    the traced function itself (not from inside an op, which then replays by being called again). In a
    thread that does not trace, each tracing thread's capture sees whether the values read are ones it
    follows or a Variable's (which may reach it as a constant of the trace's time)."""
    capture = current()
    if capture is not None:
        capture.check_host_read(tensor, what)
        return
    for other in tuple(active):
        other.note_foreign_host_read(tensor, what)


def check_new_variable():
    """TraceError when the calling thread traces a function that has been traced before (TF's rule)."""
    capture = current()
    if capture is not None:
        capture.check_new_variable()


def dynamic_output_shape(what, *deciders):
    """Declared by an op, where it runs, when the shape of its output depends on the values of its input
    (``what`` names it: boolean-mask indexing, ``nonzero``, ``repeat`` by a tensor of counts): a trace
    that runs it on traced data cannot replay it, so the function runs eagerly (torch.compile's graph
    break on a "dynamic output shape" op). ``deciders``: the arguments whose values decide the shape,
    where the op knows them; none of them traced (a constant mask the caller gave), the op replays."""
    capture = current()
    if capture is not None:
        capture.note_dynamic_shape(what, deciders)


def reads_host_values():
    """Declared by an op that reads an array's values on the host to decide its work (a count, a shift):
    a trace replays it by calling it again, never as kernels bound to what it read once. (A tensor's own
    host reads declare it, through :func:`check_host_read`.)"""
    capture = current()
    if capture is not None:
        capture.note_host_read()


def read_module(module):
    """Declared by ``Module.__call__``: the trace depends on ``module``'s attributes (its ``training``
    flag, which Variables and sub-modules it holds, its Python settings), which the replay then guards."""
    capture = current()
    if capture is not None:
        capture.note_module(module)
