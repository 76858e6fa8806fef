"""Collectives on tensors across the world's ranks: allreduce, allgather, broadcast, barrier.

CPU tensors go through MPI (mpi4py's buffer interface: in place, no pickling); a one-process
world returns its input's values. Every collective first checks that each rank passed a tensor of
the same dtype and shape (the leading axis may differ in ``allgather``), and raises
DistributedError naming the ranks that differ, instead of exchanging mismatched bytes.
GPU tensors need NCCL, which this build does not wire yet: they raise DistributedError.

Example:
    >>> import gpugrad as gg
    >>> gg.distributed.allreduce(gg.tensor([1.0, 2.0]), op="sum").numpy().tolist()  # one process
    [1.0, 2.0]
"""
import numpy as np

from ..backend import CPU
from ..tensor import Tensor, Variable, ensure_tensor
from .world import DistributedError, world

OPS = ("mean", "sum", "min", "max")


def _checked(t, what, name=None, leading_may_differ=False):
    """``t`` as a CPU tensor whose dtype and shape agree on every rank (one small exchange of metadata)."""
    t = t if isinstance(t, Tensor) else ensure_tensor(t)
    if t._device is not CPU:
        raise DistributedError(f"{what} of a tensor on {t.device}: GPU collectives need NCCL (CuPy's bindings), "
                               f"which this build of gg.distributed does not wire yet; move it with .to('cpu')")
    w = world()
    if w.size > 1:
        shape = t.shape[1:] if leading_may_differ else t.shape
        seen = w.comm.allgather((t.dtype.str, shape))
        if any(s != seen[0] for s in seen):
            label = f" {name!r}" if name else ""
            detail = ", ".join(f"rank {r}: {np.dtype(d)} {s}" for r, (d, s) in enumerate(seen))
            raise DistributedError(f"{what}: the tensor{label} differs across ranks ({detail}); every rank must "
                                   f"pass one dtype and shape")
    return t


def _mpi_op(op):
    MPI = world().MPI
    return {"mean": MPI.SUM, "sum": MPI.SUM, "min": MPI.MIN, "max": MPI.MAX}[op]


def allreduce(tensor, op="mean", name=None):
    """The elementwise ``op`` ("mean", "sum", "min", "max") of ``tensor`` over every rank, on every rank.

    The mean is the sum divided by the world's size, in the tensor's dtype (as Horovod's average).

    Example:
        >>> import gpugrad as gg
        >>> gg.distributed.allreduce(gg.tensor([3.0]), op="mean").item()
        3.0
    """
    if op not in OPS:
        raise ValueError(f"allreduce op is one of {OPS}, not {op!r}")
    t = _checked(tensor, "allreduce", name)
    data = np.ascontiguousarray(t._data).copy()
    w = world()
    if w.size > 1:
        w.comm.Allreduce(w.MPI.IN_PLACE, data, op=_mpi_op(op))
        if op == "mean":
            np.true_divide(data, data.dtype.type(w.size) if data.dtype.kind == "f" else w.size, out=data,
                           casting="unsafe")
    return Tensor._wrap(data, CPU)


def allgather(tensor, name=None):
    """Every rank's ``tensor`` concatenated along its first axis in rank order (their first axes may differ).

    Example:
        >>> import gpugrad as gg
        >>> gg.distributed.allgather(gg.tensor([[1.0, 2.0]])).shape
        (1, 2)
    """
    t = _checked(tensor, "allgather", name, leading_may_differ=True)
    data = np.ascontiguousarray(t._data)
    w = world()
    if w.size == 1:
        return Tensor._wrap(data.copy(), CPU)
    if data.ndim == 0:
        data = data.reshape(1)
    counts = w.comm.allgather(data.shape[0])
    per_row = int(np.prod(data.shape[1:], dtype=np.int64))
    out = np.empty((sum(counts),) + data.shape[1:], dtype=data.dtype)
    sizes = [c * per_row for c in counts]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    w.comm.Allgatherv(data, [out, (sizes, offsets)])  # counts in elements; the MPI type from the buffer
    return Tensor._wrap(out, CPU)


def broadcast(tensor, root=0, name=None):
    """Rank ``root``'s ``tensor`` on every rank (each passes one of the same dtype and shape).

    Example:
        >>> import gpugrad as gg
        >>> gg.distributed.broadcast(gg.tensor([5.0])).item()
        5.0
    """
    w = world()
    if not 0 <= root < w.size:
        raise ValueError(f"broadcast root {root} is not a rank of a world of {w.size}")
    t = _checked(tensor, "broadcast", name)
    data = np.ascontiguousarray(t._data).copy()
    if w.size > 1:
        w.comm.Bcast(data, root=root)
    return Tensor._wrap(data, CPU)


def broadcast_variables(variables, root=0):
    """Set every rank's ``variables`` to rank ``root``'s values, in place (before training starts, so every
    rank begins from the same weights); each variable's version moves on, as an assign does.

    Example:
        >>> import gpugrad as gg
        >>> w = gg.Variable([1.0])
        >>> gg.distributed.broadcast_variables([w]); w.numpy().tolist()
        [1.0]
    """
    variables = list(variables)
    w = world()
    for i, v in enumerate(variables):
        if not isinstance(v, Variable):
            raise TypeError(f"broadcast_variables takes Variables, not {type(v).__name__}")
        _checked(v, "broadcast_variables", v.name or f"variables[{i}]")
        if w.size > 1:
            if v._data.flags.c_contiguous:
                w.comm.Bcast(v._data, root=root)
            else:
                data = np.ascontiguousarray(v._data)
                w.comm.Bcast(data, root=root)
                v._data[...] = data
        v._version += 1


def barrier():
    """Wait until every rank reaches this call."""
    w = world()
    if w.size > 1:
        w.comm.Barrier()
