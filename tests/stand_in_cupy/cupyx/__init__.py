"""``cupyx`` of the CuPy stand-in (tests/stand_in_cupy/cupy): only what gpugrad uses, ``cupyx.scipy.special``
and ``cupyx.errstate``."""
import contextlib as _contextlib
import sys as _sys

from cupy import _record

_LINALG_MODES = ("ignore", "raise")


@_contextlib.contextmanager
def errstate(*, linalg=None):
    """CuPy's ``cupyx.errstate``: ``linalg="raise"`` makes a failed factorisation raise, as NumPy's always does."""
    if linalg is not None and linalg not in _LINALG_MODES:
        raise ValueError(f"linalg must be one of {_LINALG_MODES}, not {linalg!r}")
    yield


_record.watch_module(_sys.modules[__name__])
