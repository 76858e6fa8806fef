"""The stand-in's count of device-to-host transfers: every way data leaves the "device" for the host.

On a GPU each is a synchronisation (the host waits for the stream to drain, then copies), so a training
step's path should have none. Counted: ``ndarray.get`` (so ``cupy.asnumpy``), ``item``, ``tolist``,
``bool``, ``float``, ``int``, ``complex``, ``repr``/``str`` and the host-data methods ``tobytes``,
``tofile``, ``dump``, ``dumps``. (``__array__`` and ``__index__`` refuse, as CuPy's do: no transfer.)

Example (in a process whose ``cupy`` is the stand-in)::

    with cupy._transfers.counting() as seen:
        ...
    assert len(seen) == 0, seen   # each entry: (what, the caller outside cupy as "file:line")
"""
import contextlib
import os
import sys

_counters = []  # the lists of the counting() blocks now open


def note(what):
    """Record one device-to-host transfer ``what`` in every open :func:`counting` block."""
    if not _counters:
        return
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in ("cupy", "cupyx", "numpy"):
        frame = frame.f_back
    where = f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else "?"
    for seen in _counters:
        seen.append((what, where))


@contextlib.contextmanager
def counting():
    """A list that collects ``(what, where)`` for each device-to-host transfer made inside the block."""
    seen = []
    _counters.append(seen)
    try:
        yield seen
    finally:
        _counters.remove(seen)
