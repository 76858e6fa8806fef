"""The machinery behind ``gg.function``: capture a Python call's array work once, replay it.

- :mod:`.declare`: how a function says it is a *root* of the capture (an op, a gradient rule, a
  variable update, an optimizer's update, a random draw) and of which kind, so a replay knows
  whether it folds, replays as kernels or is called again.
- :mod:`.state`: what the ops and tensors tell the capture of the calling thread (host reads,
  data-dependent shapes, modules read, ops emitted).
- :mod:`.capture`: runs the traced function once; each root called from outside any other hands
  its call to the capture, which turns it into a step over buffers.
- :mod:`.kernels`: looks up the replay kernel each op type declares beside its forward
  (:mod:`gpugrad.ops.replay`).
- :mod:`.plan`: the steps compiled into a list of prebound calls; buffers shared by liveness.
- :mod:`.graphs`: on a GPU, runs of kernel steps captured as CUDA Graphs.
- :mod:`.guards`: the Python state a trace read, checked before each replay.

The public face is :func:`gpugrad.function` (:mod:`gpugrad.traced`).
"""
