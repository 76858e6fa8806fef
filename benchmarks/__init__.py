"""gpugrad's benchmark suite (pytest-benchmark), parametrised over every usable device.

In a source checkout it is the top-level ``benchmarks/`` folder; the wheel
ships it as ``gpugrad.benchmarks``, so that ``gpugrad bench`` finds it on an
installed gpugrad. Run it with ``pytest benchmarks/`` or ``gpugrad bench``
(see ``conftest.py`` for the options and the tags every result carries).

Beside the suite:

- ``python -m benchmarks.jit_table``: ``gg.function(jit_compile=True)``'s must-show table (issue 29) from one
  interleaved run of W1, W3, W2, W4 and the CNN step: NumPy by hand, eager gpugrad, ``gg.function`` unfused and
  fused, PyTorch where installed; the ratios jit/numpy and jit/unfused against their targets (``ratios.py
  --jit-table`` prints the same from any benchmark JSON holding the interleaved runs).
- ``python -m benchmarks.gpu_jit`` (on a GPU; ``bash benchmarks/device_run.sh`` runs it): the fused kernels'
  bandwidth as % of the device's copy and the digits-MLP step fused against eager CuPy and PyTorch CUDA.
- ``python benchmarks/g1_fused_kernels.py`` (on a GPU): the hand-declared fused kernels, benchmark G1.
- ``python benchmarks/jit_engines.py``: numba against numexpr as the CPU engine of the fused regions.
"""
