"""Large elementwise NumPy work split across CPU threads.

NumPy runs one ufunc loop on one core; it releases the GIL inside the loop,
so a large elementwise op split into chunks (one per thread, each written
into its slice of one output array) runs on every core, as PyTorch's CPU
kernels do. The result is the same to the last bit: every element is computed
by the same loop, chunk boundaries fall on multiples of 4096 elements, and
NumPy's floating-point error state (``np.errstate``) is carried into each
thread. Small arrays never pay for a thread hand-off: an op is split only
from ``SPLIT_MIN_COSTLY`` elements for transcendental functions (log, exp,
tanh) and ``SPLIT_MIN_CHEAP`` for arithmetic, which memory bandwidth bounds.

The thread count defaults to the cores this process may use (at most 8);
``GPUGRAD_NUM_THREADS`` or :func:`set_num_threads` change it, and 1 turns
splitting off.

Example:
    >>> import numpy as np
    >>> from gpugrad.backend import cpu_threads
    >>> x = np.linspace(1.0, 2.0, 1 << 17)
    >>> bool((cpu_threads.split_formula(np.log, (x,)) == np.log(x)).all())
    True
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["get_num_threads", "set_num_threads", "threads_from_environment", "split_apply", "split_formula"]

SPLIT_MIN_COSTLY = 1 << 16  # elements: log, exp, tanh of 64 Ki float32 take ~100 us, a hand-off ~20-50
SPLIT_MIN_CHEAP = 1 << 20  # elements: below this, arithmetic is faster on one core than split
MAX_DEFAULT_THREADS = 8
_BLOCK = 1 << 12  # chunk boundaries fall on multiples of this many elements

_lock = threading.Lock()
_state = {"threads": None, "pool": None}


def threads_from_environment(environ=None):
    """The thread count ``GPUGRAD_NUM_THREADS`` sets: ``None`` when unset or blank, else a whole number >= 1.

    Raises ``ValueError`` naming the variable and its value for anything else
    (``"0"``, ``"-2"``, ``"2.5"``, ``"four"``).

    Example:
        >>> threads_from_environment({"GPUGRAD_NUM_THREADS": " 4 "}), threads_from_environment({})
        (4, None)
        >>> threads_from_environment({"GPUGRAD_NUM_THREADS": "2.5"})
        Traceback (most recent call last):
        ...
        ValueError: GPUGRAD_NUM_THREADS must be a whole number >= 1, not '2.5'
    """
    environ = os.environ if environ is None else environ
    text = environ.get("GPUGRAD_NUM_THREADS", "").strip()
    if not text:
        return None
    n = int(text) if text.isascii() and text.isdigit() else 0  # digits only: no sign, no point, no exponent
    if n < 1:
        raise ValueError(f"GPUGRAD_NUM_THREADS must be a whole number >= 1, not {text!r}")
    return n


def _default_threads():
    n = threads_from_environment()
    if n is not None:
        return n
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_THREADS))


def get_num_threads():
    """How many threads large elementwise CPU ops are split across.

    Example:
        >>> import gpugrad as gg
        >>> gg.get_num_threads() >= 1
        True
    """
    n = _state["threads"]
    if n is None:
        n = _state["threads"] = _default_threads()
    return n


def set_num_threads(n):
    """Split large elementwise CPU ops across ``n`` threads (1: never split); returns the previous count.

    Example:
        >>> import gpugrad as gg
        >>> previous = gg.set_num_threads(1)
        >>> gg.get_num_threads()
        1
        >>> _ = gg.set_num_threads(previous)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"the number of threads is a whole number >= 1, not {n!r}")
    with _lock:
        previous = get_num_threads()
        if int(n) != previous and _state["pool"] is not None:
            _state["pool"].shutdown(wait=True)
            _state["pool"] = None
        _state["threads"] = int(n)
    return previous


def _forget_pool():
    _state["pool"] = None  # a forked child has none of the parent's threads: it starts its own


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _pool():
    pool = _state["pool"]
    if pool is None:
        with _lock:
            pool = _state["pool"]
            if pool is None:
                pool = _state["pool"] = ThreadPoolExecutor(get_num_threads() - 1, thread_name_prefix="gpugrad-cpu")
    return pool


def _bounds(length, parts):
    """``parts + 1`` increasing cut points of ``range(length)``, inner ones on multiples of _BLOCK."""
    step = -(-length // parts)
    step = -(-step // _BLOCK) * _BLOCK
    cuts = list(range(0, length, step)) + [length]
    return cuts


def _chunks(arrays):
    """``arrays`` as a list of matching chunks (one list per thread), or None when they cannot be split.

    Every array has the shape of the first or is 0-d (passed whole). C-contiguous
    ones are split flat; otherwise (a broadcast view, a transposed array) along axis 0.
    """
    n = get_num_threads()
    shape = arrays[0].shape
    for a in arrays:
        if a.ndim and a.shape != shape:
            return None
    if all(not a.ndim or a.flags.c_contiguous for a in arrays):
        views = [a.reshape(-1) if a.ndim else a for a in arrays]
        length = arrays[0].size
        cuts = _bounds(length, n)
    elif len(shape) and shape[0] >= n:
        views, length = arrays, shape[0]
        cuts = _bounds(length, n) if len(shape) == 1 else \
            [length * i // n for i in range(n + 1)]  # whole rows: each element keeps its loop
    else:
        return None
    pieces = list(zip(cuts, cuts[1:]))
    if len(pieces) < 2:
        return None
    return [[v[lo:hi] if v.ndim else v for v in views] for lo, hi in pieces]


def _run(fn, chunks, params):
    errors = np.geterr()

    def work(chunk):
        with np.errstate(**errors):
            fn(*chunk, **params)

    futures = [_pool().submit(work, chunk) for chunk in chunks[1:]]
    try:
        fn(*chunks[0], **params)
    finally:
        for f in futures:
            f.result()  # every chunk is done (and its error raised) before the arrays are used


def split_apply(fn, arrays, params=None):
    """Run ``fn(*chunks, **params)`` on matching chunks of ``arrays`` across threads; False if not split.

    ``fn`` works elementwise and in place (it writes into some of its arrays);
    the arrays share one shape (0-d ones are passed whole). When they cannot
    be split, or one thread is set, nothing runs and the caller calls ``fn`` itself.

    Example:
        >>> import numpy as np
        >>> a = np.ones(4)
        >>> split_apply(lambda x: np.multiply(x, 2.0, out=x), [a]), a.tolist()  # too small to split
        (False, [1.0, 1.0, 1.0, 1.0])
    """
    if get_num_threads() < 2 or arrays[0].size < 2 * _BLOCK:
        return False
    chunks = _chunks(arrays)
    if chunks is None:
        return False
    _run(fn, chunks, params or {})
    return True


def _with_out(fn):
    def call(*arrays, **params):
        fn(*arrays[:-1], out=arrays[-1], **params)
    return call


def split_formula(formula, arrays, out=None, params=None):
    """``formula(*arrays, out=out, **params)`` split across threads when it can be; returns the output.

    ``formula`` computes elementwise and takes ``out=`` (a hot gradient's CPU
    formula marked ``writes_out``); ``arrays`` share one float dtype and shape
    (0-d ones are passed whole). A new output is made when ``out`` is None.

    Example:
        >>> import numpy as np
        >>> def double(x, out=None):
        ...     return np.multiply(x, 2.0, out=out)
        >>> split_formula(double, (np.ones(3),)).tolist()
        [2.0, 2.0, 2.0]
    """
    params = params or {}
    first = arrays[0]
    if get_num_threads() > 1 and first.dtype.kind == "f" and all(a.dtype == first.dtype for a in arrays):
        target = np.empty(first.shape, first.dtype) if out is None else out
        if split_apply(_with_out(formula), list(arrays) + [target], params):
            return target
    return formula(*arrays, out=out, **params)
