"""The machinery behind ``gg.function``: capture a Python call's array work once, replay it.

- :mod:`.roots`: which gpugrad functions a trace captures as one step (the ops, the variable
  updates, the optimizers' update, the random draws), and how each is replayed.
- :mod:`.capture`: runs the traced function once, with a profile hook that sees each call of a
  root from outside any other, and turns each into a step over buffers.
- :mod:`.kernels`: looks up the replay kernels the op modules declare (:mod:`gpugrad.ops.replay`).
- :mod:`.plan`: the steps compiled into a list of prebound calls; buffers shared by liveness.
- :mod:`.graphs`: on a GPU, runs of kernel steps captured as CUDA Graphs.

The public face is :func:`gpugrad.function` (:mod:`gpugrad.traced`).
"""
