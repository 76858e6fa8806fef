"""The project's own tooling, shipped so that ``gpugrad check`` and ``gpugrad bench`` run from a wheel.

Nothing here is imported by the library itself (``import gpugrad`` loads none of it):

- :mod:`gpugrad._tools.op_specs`: the op spec table, one spec per way of checking an op type;
- :mod:`gpugrad._tools.gradcheck`: the float64 gradient check of every spec, the engine of ``gpugrad check``;
- :mod:`gpugrad._tools.kernelcheck`: compiles every fused kernel through CuPy's code generation
  (``nvrtc``) and checks its math on the host (``host``) against the CPU path;
- :mod:`gpugrad._tools.bench`: runs the ``benchmarks/`` suite and prints the device table of ``gpugrad bench``.

Example:
    >>> from gpugrad._tools.op_specs import ALL_SPECS
    >>> sorted({spec.op_type for spec in ALL_SPECS})[:2]
    ['Abs', 'AbsGrad']
"""
