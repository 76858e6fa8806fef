"""``cupyx`` of the CuPy stand-in (tests/stand_in_cupy/cupy): only what gpugrad uses, ``cupyx.scipy.special``."""
import sys as _sys

from cupy import _record

_record.watch_module(_sys.modules[__name__])
