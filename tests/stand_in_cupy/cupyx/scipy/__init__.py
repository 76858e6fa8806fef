"""``cupyx.scipy`` of the CuPy stand-in: ``special`` only."""
import sys as _sys

from cupy import _record

_record.watch_module(_sys.modules[__name__])
