"""Checks of the fused CUDA kernels that need no GPU.

- :mod:`.nvrtc`: compiles every kernel in ``kernels/`` exactly as CuPy would
  (CuPy's own code generation and NVRTC) for sm_90, for every dtype it is used
  with. It patches CuPy process-wide, so run it in a process of its own:
  ``python -m gpugrad._tools.kernelcheck.nvrtc``. Needs the ``kernelcheck`` extra.
- :mod:`.host`: compiles each kernel's ``__device__`` function and operation
  with the host C++ compiler, runs it over NumPy buffers, and compares it with
  the NumPy CPU path of the same op (``python -m gpugrad._tools.kernelcheck.host``).
- :mod:`.cases`: per kernel, how to draw inputs, the CPU reference, the
  unfused array expression of the same math, and the tolerance; shared with
  the GPU tests and benchmark G1.

Example:
    >>> from gpugrad._tools.kernelcheck import cases
    >>> "tanh_grad" in cases.CASES
    True
"""
