"""Collectives on tensors across the world's ranks: allreduce, allgather, broadcast, barrier.

CPU tensors go through MPI, GPU tensors through NCCL (:mod:`.communicators`: in place, no
pickling); a one-process world returns its input's values. Every collective first checks, in one
small exchange, that each rank passed tensors of the same dtypes, shapes and kinds of device (the
leading axis may differ in ``allgather``), and raises DistributedError naming the tensor and the
ranks that differ, instead of exchanging mismatched bytes.

Example:
    >>> import gpugrad as gg
    >>> gg.distributed.allreduce(gg.tensor([1.0, 2.0]), op="sum").numpy().tolist()  # one process
    [1.0, 2.0]
"""
import hashlib

import numpy as np

from ..tensor import Tensor, Variable, ensure_tensor
from .communicators import communicator_for, wait
from .world import DistributedError, world
from .. import _dtypes as _dt

OPS = ("mean", "sum", "min", "max")


def describe(t, leading_may_differ=False):
    """What every rank must agree on for tensor ``t``: ``(dtype, shape, cpu or gpu)``."""
    shape = t.shape[1:] if leading_may_differ else t.shape
    return (t.dtype.str, tuple(shape), "cpu" if t._device.name == "cpu" else "gpu")


def agree(w, labels, descriptions, what, extra=()):
    """Check that every rank passed the same ``descriptions`` (one per tensor, named by ``labels``), with
    one non-blocking allgather under the world's timeout; returns every rank's ``extra`` integers as a
    ``(size, len(extra))`` array. DistributedError names the first tensor that differs and each rank's."""
    digest = hashlib.blake2b(repr(descriptions).encode(), digest_size=16).digest()
    mine = np.concatenate([np.frombuffer(digest, np.int64), np.asarray(extra, np.int64)])
    everyone = np.empty((w.size, mine.size), np.int64)
    wait(w.comm.Iallgather(mine, everyone), what, w)
    if (everyone[:, :2] != everyone[0, :2]).any():
        seen = w.comm.allgather(descriptions)  # every rank got here: the details, pickled, for the message
        _raise_difference(labels, seen, what)
    return everyone[:, 2:]


def _raise_difference(labels, seen, what):
    lengths = [len(s) for s in seen]
    if len(set(lengths)) > 1:
        detail = ", ".join(f"rank {r}: {n}" for r, n in enumerate(lengths))
        raise DistributedError(f"{what}: the ranks passed different numbers of tensors ({detail})")
    for i, label in enumerate(labels):
        column = [s[i] for s in seen]
        if any(c != column[0] for c in column):
            detail = ", ".join(f"rank {r}: {np.dtype(d)} {shape} on {kind}" for r, (d, shape, kind) in
                               enumerate(column))
            raise DistributedError(f"{what}: the tensor {label} differs across ranks ({detail}); every rank must "
                                   f"pass one dtype and shape, on the same kind of device")
    raise DistributedError(f"{what}: the ranks' tensors differ")  # unreachable while digests are exact


def _label(name, index=None):
    if name:
        return repr(name)
    return "" if index is None else f"#{index}"


def _checked(tensor, what, name=None, leading_may_differ=False, extra=()):
    """``tensor`` as a Tensor whose dtype, shape and kind of device agree on every rank, and every rank's
    ``extra`` integers (None alone)."""
    t = tensor if isinstance(tensor, Tensor) else ensure_tensor(tensor)
    w = world()
    if w.size == 1:
        return t, None
    everyone = agree(w, [_label(name) or "passed"], [describe(t, leading_may_differ)], what, extra)
    return t, everyone


def _contiguous_copy(t):
    """A C-ordered copy of ``t``'s array that keeps its shape (``ascontiguousarray`` makes a 0-d array 1-d)."""
    return t._data.copy(order="C")


def divide_by_size(array, size, xp):
    """``array /= size`` in place, in its own dtype (an integer mean rounds toward zero, as NumPy's cast)."""
    xp.true_divide(array, array.dtype.type(size) if _dt.inexact(array.dtype) else size, out=array, casting="unsafe")


def allreduce(tensor, op="mean", name=None):
    """The elementwise ``op`` ("mean", "sum", "min", "max") of ``tensor`` over every rank, on every rank.

    The mean is the sum divided by the world's size, in the tensor's dtype (as Horovod's average).
    CPU tensors reduce over MPI, GPU tensors over NCCL on their stream.

    Example:
        >>> import gpugrad as gg
        >>> gg.distributed.allreduce(gg.tensor([3.0]), op="mean").item()
        3.0
    """
    if op not in OPS:
        raise ValueError(f"allreduce op is one of {OPS}, not {op!r}")
    t, _ = _checked(tensor, "allreduce", name)
    data = _contiguous_copy(t)
    w = world()
    if w.size > 1:
        communicator = communicator_for(w, t._device)
        if op in ("min", "max") and _dt.floating(data.dtype):
            _min_or_max_with_nan_(communicator, data, op, t._device.xp)
        else:
            communicator.allreduce_(data, "sum" if op == "mean" else op)
        if op == "mean":
            divide_by_size(data, w.size, t._device.xp)
    return Tensor._wrap(data, t._device)


def _min_or_max_with_nan_(communicator, data, op, xp):
    """``op`` over the ranks where a NaN on any rank gives NaN, as NumPy's minimum and maximum (MPI's MIN and
    MAX compare, and keep whichever side a NaN's comparison leaves, so the result would hang on rank order)."""
    nan = xp.isnan(data).view(np.uint8)
    communicator.allreduce_(data, op)
    communicator.allreduce_(nan, "max")
    data[nan.view(np.bool_)] = np.nan


def allgather(tensor, name=None):
    """Every rank's ``tensor`` concatenated along its first axis in rank order (their first axes may differ).

    Example:
        >>> import gpugrad as gg
        >>> gg.distributed.allgather(gg.tensor([[1.0, 2.0]])).shape
        (1, 2)
    """
    t = tensor if isinstance(tensor, Tensor) else ensure_tensor(tensor)
    rows = t.shape[0] if t.ndim else 1
    t, everyone = _checked(t, "allgather", name, leading_may_differ=True, extra=[rows])
    data = _contiguous_copy(t)
    w = world()
    if w.size == 1:
        return Tensor._wrap(data, t._device)
    if data.ndim == 0:
        data = data.reshape(1)
    counts = [int(c) for c in everyone[:, 0]]
    return Tensor._wrap(communicator_for(w, t._device).allgather(data, counts), t._device)


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
    t, _ = _checked(tensor, "broadcast", name)
    data = _contiguous_copy(t)
    if w.size > 1:
        communicator_for(w, t._device).broadcast_(data, root)
    return Tensor._wrap(data, t._device)


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
    if not 0 <= root < w.size:
        raise ValueError(f"broadcast_variables root {root} is not a rank of a world of {w.size}")
    for v in variables:
        if not isinstance(v, Variable):
            raise TypeError(f"broadcast_variables takes Variables, not {type(v).__name__}")
    if w.size > 1:
        agree(w, [_label(v.name, i) for i, v in enumerate(variables)], [describe(v) for v in variables],
              "broadcast_variables")
    for v in variables:
        if w.size > 1:
            communicator = communicator_for(w, v._device)
            if v._data.flags.c_contiguous:
                communicator.broadcast_(v._data, root)
            else:
                data = _contiguous_copy(v)
                communicator.broadcast_(data, root)
                v._data[...] = data
        v._version += 1


def barrier():
    """Wait until every rank reaches this call (at most the world's timeout: DistributedError after it).

    Example:
        >>> import gpugrad as gg
        >>> gg.distributed.barrier()  # one process: returns at once
    """
    w = world()
    if w.size > 1:
        wait(w.comm.Ibarrier(), "barrier", w)
