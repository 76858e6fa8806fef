"""What the tensor's host reads ask while a trace runs (this module imports nothing of gpugrad).

``active`` holds the captures now tracing, in any thread; it is empty outside ``gg.function``'s
first call, so a host read costs one list check.
"""
active: list = []


def check_host_read(tensor, what):
    """TraceError when ``tensor`` is traced by the calling thread's capture and read on the host from
    the traced function itself (not from inside an op, which runs again on every replay)."""
    for capture in active:
        capture.check_host_read(tensor, what)


def check_new_variable():
    """TraceError when the calling thread traces a function that has been traced before (TF's rule)."""
    for capture in active:
        capture.check_new_variable()
