"""What the ops, the tensor's host reads and the modules tell a trace (this module imports nothing of gpugrad).

``active`` holds the captures now tracing, in any thread; it is empty outside ``gg.function``'s
first call, so each declaration below costs one list check.
"""
active: list = []


def check_host_read(tensor, what):
    """TraceError when ``tensor`` is traced by the calling thread's capture and read on the host from
    the traced function itself (not from inside an op, which then replays by being called again)."""
    for capture in active:
        capture.check_host_read(tensor, what)


def check_new_variable():
    """TraceError when the calling thread traces a function that has been traced before (TF's rule)."""
    for capture in active:
        capture.check_new_variable()


def dynamic_output_shape(what, *deciders):
    """Declared by an op, where it runs, when the shape of its output depends on the values of its input
    (``what`` names it: boolean-mask indexing, ``nonzero``, ``repeat`` by a tensor of counts): a trace
    that runs it on traced data cannot replay it, so the function runs eagerly (torch.compile's graph
    break on a "dynamic output shape" op). ``deciders``: the arguments whose values decide the shape,
    where the op knows them; none of them traced (a constant mask the caller gave), the op replays."""
    for capture in active:
        capture.note_dynamic_shape(what, deciders)


def reads_host_values():
    """Declared by an op that reads an array's values on the host to decide its work (a count, a shift):
    a trace replays it by calling it again, never as kernels bound to what it read once. (A tensor's own
    host reads declare it, through :func:`check_host_read`.)"""
    for capture in active:
        capture.note_host_read()


def read_module(module):
    """Declared by ``Module.__call__``: the trace depends on ``module``'s attributes (its ``training``
    flag, which Variables and sub-modules it holds, its Python settings), which the replay then guards."""
    for capture in active:
        capture.note_module(module)
