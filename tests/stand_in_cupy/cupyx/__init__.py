"""``cupyx`` of the CuPy stand-in (tests/stand_in_cupy/cupy): only what gpugrad uses, ``cupyx.scipy.special``."""
