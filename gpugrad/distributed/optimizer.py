"""Data-parallel training: gradients averaged across the ranks before every update.

:class:`DistributedOptimizer` wraps an optimizer (as Horovod's): ``minimize``,
``compute_gradients`` and ``apply_gradients`` average each gradient over the ranks first, so
every rank applies the same update to the same weights. :class:`DistributedGradientTape`
wraps a tape: its ``gradient`` returns the averaged gradients.

Gradients are reduced in *buckets*, as PyTorch's DDP does: filled in reverse order of the
variables (the order the backward sweep finishes them), each up to ``bucket_bytes`` (25 MiB by
default) and of one dtype, one non-blocking allreduce per bucket (``Iallreduce``: a bucket reduces
while the next is packed), every rank posting them in the same order.

Example:
    >>> import gpugrad as gg
    >>> w = gg.Variable([1.0, 2.0])
    >>> opt = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(0.5))
    >>> loss = opt.minimize(lambda: gg.sum(w * w), [w])  # one process: plain SGD
    >>> w.numpy().tolist()
    [0.0, 0.0]
"""
import numpy as np

from ..tensor import Tensor
from .collectives import _checked
from .world import world

BUCKET_BYTES = 25 * 1024 * 1024  # PyTorch DDP's default bucket_cap_mb


def buckets(arrays, bucket_bytes=BUCKET_BYTES):
    """Indices of ``arrays`` grouped into buckets: reverse order, one dtype each, at most ``bucket_bytes``
    (an array larger than that is a bucket of its own).

    Example:
        >>> import numpy as np
        >>> buckets([np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4)], bucket_bytes=32)
        [[2], [1, 0]]
    """
    out, current, size, dtype = [], [], 0, None
    for i in reversed(range(len(arrays))):
        a = arrays[i]
        if current and (a.dtype != dtype or size + a.nbytes > bucket_bytes):
            out.append(current)
            current, size = [], 0
        current.append(i)
        size += a.nbytes
        dtype = a.dtype
    if current:
        out.append(current)
    return out


def average_gradients(grads_and_vars, bucket_bytes=BUCKET_BYTES):
    """``[(averaged grad, var), ...]``: each gradient averaged over the ranks, bucket by bucket (None stays None).

    Every rank must hold a gradient for the same variables (DistributedError naming the one that differs).
    """
    pairs = list(grads_and_vars)
    if world().size == 1:  # new tensors of the same arrays: a result never is the argument it was given
        return [(None if g is None else Tensor._wrap(g._data, g._device) if isinstance(g, Tensor) else g, v)
                for g, v in pairs]
    present = [i for i, (g, _) in enumerate(pairs) if g is not None]
    arrays = []
    for i in present:
        g, v = pairs[i]
        t = _checked(g, "the gradients' allreduce", getattr(v, "name", None) or f"variable {i}")
        arrays.append(np.ascontiguousarray(t._data).copy())
    _reduce_buckets(arrays, buckets(arrays, bucket_bytes))
    averaged = list(pairs)
    for k, i in enumerate(present):
        g, v = pairs[i]
        averaged[i] = (Tensor._wrap(arrays[k], g._device), v)
    return averaged


def _reduce_buckets(arrays, groups):
    """Average ``arrays`` in place over the ranks, one non-blocking allreduce per bucket of ``groups``: a
    bucket reduces while the next one is packed; every rank posts them in the same order."""
    w = world()
    pending = []
    for group in groups:
        flat = np.concatenate([arrays[k].reshape(-1) for k in group]) if len(group) > 1 else \
            arrays[group[0]].reshape(-1)
        pending.append((group, flat, w.comm.Iallreduce(w.MPI.IN_PLACE, flat, op=w.MPI.SUM)))
    for group, flat, request in pending:
        request.Wait()
        flat /= flat.dtype.type(w.size)
        start = 0
        for k in group:
            a = arrays[k]
            if flat.base is not a and flat is not a:
                a.reshape(-1)[...] = flat[start:start + a.size]
            start += a.size


class DistributedOptimizer:
    """``optimizer`` whose updates use gradients averaged across the ranks; everything else is the optimizer's.

    Example:
        >>> import gpugrad as gg
        >>> opt = gg.distributed.DistributedOptimizer(gg.optimizers.Adam(1e-3))
        >>> opt.iterations, opt.optimizer.name
        (0, 'Adam')
    """

    def __init__(self, optimizer, bucket_bytes=BUCKET_BYTES):
        if int(bucket_bytes) < 1:
            raise ValueError(f"bucket_bytes must be >= 1, got {bucket_bytes!r}")
        self.optimizer = optimizer
        self.bucket_bytes = int(bucket_bytes)

    def compute_gradients(self, loss_fn, var_list=None):
        """The optimizer's ``(grad, var)`` pairs of ``loss_fn()``, each gradient averaged across the ranks."""
        return average_gradients(self.optimizer.compute_gradients(loss_fn, var_list), self.bucket_bytes)

    def apply_gradients(self, grads_and_vars):
        """Average the gradients across the ranks, then apply them."""
        self.optimizer.apply_gradients(average_gradients(grads_and_vars, self.bucket_bytes))

    def minimize(self, loss_fn, var_list=None):
        """Compute the gradients of ``loss_fn()``, average them across the ranks, apply them; returns this
        rank's loss."""
        loss, pairs = self.optimizer._loss_and_gradients(loss_fn, var_list)
        self.optimizer.apply_gradients(average_gradients(pairs, self.bucket_bytes))
        return loss

    def __getattr__(self, name):
        return getattr(self.optimizer, name)

    def __repr__(self):
        return f"DistributedOptimizer({self.optimizer!r})"


class DistributedGradientTape:
    """A GradientTape whose ``gradient`` averages each gradient across the ranks (Horovod's wrapper).

    Example:
        >>> import gpugrad as gg
        >>> x = gg.Variable(3.0)
        >>> with gg.distributed.DistributedGradientTape(gg.GradientTape()) as tape:
        ...     y = x * x
        >>> tape.gradient(y, x).item()
        6.0
    """

    def __init__(self, tape, bucket_bytes=BUCKET_BYTES):
        self.tape = tape
        self.bucket_bytes = int(bucket_bytes)

    def __enter__(self):
        self.tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self.tape.__exit__(*exc)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        from .. import _nest as nest
        grads = self.tape.gradient(target, sources, output_gradients, unconnected_gradients)
        flat = nest.flatten(grads) if isinstance(grads, (list, tuple, dict)) else [grads]
        averaged = [g for g, _ in average_gradients([(g, None) for g in flat], self.bucket_bytes)]
        if isinstance(grads, (list, tuple, dict)):
            return nest.pack_like(grads, averaged)
        return averaged[0]

    def __getattr__(self, name):
        return getattr(self.tape, name)
