"""``cupyx.scipy`` of the CuPy stand-in: ``special`` only."""
