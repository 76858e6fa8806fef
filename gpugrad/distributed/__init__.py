"""Data-parallel training across processes started by MPI: ``mpiexec -n N python train.py``.

As Horovod's API, on MPI (mpi4py and MPICH's wheel: ``pip install 'gpugrad[distributed]'``):

- the world: :func:`init`, :func:`rank`, :func:`size`, :func:`local_rank`, :func:`shutdown`;
- collectives (MPI for CPU tensors, NCCL for GPU tensors): :func:`allreduce`, :func:`allgather`, :func:`broadcast`,
  :func:`broadcast_variables`, :func:`barrier`;
- training: :class:`DistributedOptimizer`, :class:`DistributedGradientTape`, :func:`shard`.

Without a launcher the world is one process and every call is what it would be alone, so a
script runs unchanged on a laptop. GPU tensors go through NCCL (CuPy's bindings).

Example:
    >>> import gpugrad as gg
    >>> gg.distributed.init().size, gg.distributed.rank()
    (1, 0)
"""
from .collectives import allgather, allreduce, barrier, broadcast, broadcast_variables
from .data import shard
from .optimizer import DistributedGradientTape, DistributedOptimizer
from .world import DistributedError, init, local_rank, rank, shutdown, size

__all__ = ["init", "rank", "size", "local_rank", "shutdown", "allreduce", "allgather", "broadcast",
           "broadcast_variables", "barrier", "DistributedOptimizer", "DistributedGradientTape", "shard",
           "DistributedError"]
