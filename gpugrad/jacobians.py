"""Jacobians from one recording: ``GradientTape.jacobian`` and ``.batch_jacobian``.

Both run one backward sweep per row over the same records, seeded with a
one-hot output gradient: ``jacobian`` one sweep per element of the target,
``batch_jacobian`` one per element of a batch entry (the seed is one in that
position of every entry at once). The rows are stacked with gpugrad ops, so
an outer tape records the whole computation and can differentiate a Jacobian
again (a Hessian is the Jacobian of a gradient).

A non-persistent tape gives up its records on the first call, as it does for
``gradient``, and the sweeps here keep them until the last row is done.

Example:
    >>> import gpugrad as gg
    >>> x = gg.tensor([1.0, 2.0])
    >>> with gg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.jacobian(y, x).numpy().tolist()
    [[2.0, 0.0], [0.0, 4.0]]
"""
import math

from . import _nest as nest
from .errors import DTypeError, NotATensorError, ShapeError
from .ops import reshape, stack, zeros_like
from ._sweep import backward, records_on_paths
from .tensor import Tensor
from . import _dtypes as _dt
from ._tracing import declare


def jacobian(tape, target, sources, unconnected_gradients="none"):
    """``d target / d source`` of shape ``target.shape + source.shape`` for each source.

    ``sources`` is a tensor or a nested list/tuple/dict of them; the result has
    its structure. An unconnected source gets ``None``, or zeros with
    ``unconnected_gradients="zero"``.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([1.0, 2.0, 3.0])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = gg.stack([x.sum(), (x * x).sum()])
        >>> tape.jacobian(y, x).numpy().tolist()
        [[1.0, 1.0, 1.0], [2.0, 4.0, 6.0]]
    """
    _check_target(target, "jacobian", unconnected_gradients)
    flat_sources = _check_sources(sources, "jacobian")

    def seed(row):
        return _one_hot(target, row)

    rows, connected = _sweep_rows(tape, target, flat_sources, target.size, seed)
    results = []
    for s, s_rows in zip(flat_sources, rows):
        shape = target.shape + s.shape
        if s_rows is None:
            jac = _zeros(s, shape) if connected[id(s)] or unconnected_gradients == "zero" else None
        elif len(s_rows) == 1:
            jac = reshape(s_rows[0], shape)
        else:
            jac = reshape(stack(s_rows), shape)
        results.append(jac)
    return nest.pack_like(sources, results)


def batch_jacobian(tape, target, source, unconnected_gradients="none"):
    """Per batch entry ``b``, ``d target[b] / d source[b]``.

    The shape is ``(batch,) + target.shape[1:] + source.shape[1:]``, from one
    backward sweep per element of a target entry, seeded in every entry at
    once. So, as in TensorFlow, entry ``b`` of the target must depend on entry
    ``b`` of the source only; otherwise the result mixes the entries.

    Example:
        >>> import gpugrad as gg
        >>> x = gg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> with gg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * x
        >>> tape.batch_jacobian(y, x).numpy().tolist()
        [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]
    """
    _check_target(target, "batch_jacobian", unconnected_gradients)
    (source,) = _check_sources(source, "batch_jacobian", single=True)
    if target.ndim < 1 or source.ndim < 1:
        raise ShapeError(
            f"batch_jacobian needs a target and a source of at least one dimension (the batch), "
            f"got shapes {target.shape} and {source.shape}")
    if target.shape[0] != source.shape[0]:
        raise ShapeError(
            f"batch_jacobian needs the same batch size in the target and the source, got shapes "
            f"{target.shape} and {source.shape}")
    batch, per_entry = target.shape[0], math.prod(target.shape[1:])

    def seed(column):
        return _one_hot_columns(target, column, batch, per_entry)

    (rows,), connected = _sweep_rows(tape, target, [source], per_entry, seed)
    shape = target.shape + source.shape[1:]
    if rows is None:
        return _zeros(source, shape) if connected[id(source)] or unconnected_gradients == "zero" else None
    return reshape(stack(rows, axis=1), shape)


def _check_target(target, what, unconnected_gradients):
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"unconnected_gradients is 'none' or 'zero', not {unconnected_gradients!r}")
    if not isinstance(target, Tensor):
        raise NotATensorError(f"{what}() target must be one tensor, not {type(target).__name__}")
    if not _dt.inexact(target.dtype):
        raise DTypeError(f"cannot differentiate a target of integer dtype {target.dtype}")


def _check_sources(sources, what, single=False):
    flat = nest.flatten(sources)
    if single and (len(flat) != 1 or flat[0] is not sources):
        raise NotATensorError(f"{what}() takes one source tensor, not {type(sources).__name__}")
    for s in flat:
        if not isinstance(s, Tensor):
            raise NotATensorError(f"{what}() sources must be tensors or variables, not {type(s).__name__}")
    return flat


def _sweep_rows(tape, target, flat_sources, n_rows, seed):
    """Per source, the gradient of each seeded row (``None`` if no row reached it); and connectivity.

    ``connected[id(source)]`` is true only for a target of no rows (nothing to
    sweep) that lies on a recorded path from the source: its Jacobian is empty
    zeros, not ``None``. With rows, a source no row's gradient reached is
    unconnected, as in ``gradient()`` (a path cut by ``stop_gradient`` too).
    """
    tape._check_unused("jacobian")
    records, source_ids, _, _ = tape._take_records(flat_sources)  # as gradient() takes them
    on_path, reached = records_on_paths(records, source_ids)
    records = None  # a non-persistent tape's records live only as long as on_path needs them
    connected = {id(s): n_rows == 0 and id(s) in source_ids and id(target) in reached
                 for s in flat_sources}
    rows = [[] for _ in flat_sources]
    if id(target) in reached:
        for row in range(n_rows):
            grads = backward(on_path, {id(target): seed(row)}, source_ids)
            for s_rows, s in zip(rows, flat_sources):
                s_rows.append(grads.get(id(s)))
    return [_fill(s_rows, s) for s_rows, s in zip(rows, flat_sources)], connected


def _fill(s_rows, source):
    """The rows with zeros where a row's gradient did not reach the source; ``None`` if none did."""
    if all(g is None for g in s_rows):
        return None
    zeros = None
    filled = []
    for g in s_rows:
        if g is None:
            zeros = zeros_like(source) if zeros is None else zeros
            g = zeros
        filled.append(g)
    return filled


@declare.root(declare.SHAPE)
def _one_hot(target, row):
    """Zeros of ``target``'s shape and dtype with a 1 at flat index ``row``: one row's seed."""
    one_hot = target._device.xp.zeros(target.size, dtype=target.dtype)
    one_hot[row] = 1
    return Tensor._wrap(one_hot.reshape(target.shape), target._device)


@declare.root(declare.SHAPE)
def _one_hot_columns(target, column, batch, per_entry):
    """Zeros of ``target``'s shape with a 1 at entry ``column`` of every batch row: one column's seed."""
    one_hot = target._device.xp.zeros((batch, per_entry), dtype=target.dtype)
    one_hot[:, column] = 1
    return Tensor._wrap(one_hot.reshape(target.shape), target._device)


@declare.root(declare.SHAPE)
def _zeros(source, shape):
    xp = source._device.xp
    return Tensor._wrap(xp.zeros(shape, dtype=source.dtype), source._device)
