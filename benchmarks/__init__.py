"""gpugrad's benchmark suite (pytest-benchmark), parametrised over every usable device.

In a source checkout it is the top-level ``benchmarks/`` folder; the wheel
ships it as ``gpugrad.benchmarks``, so that ``gpugrad bench`` finds it on an
installed gpugrad. Run it with ``pytest benchmarks/`` or ``gpugrad bench``
(see ``conftest.py`` for the options and the tags every result carries).
"""
