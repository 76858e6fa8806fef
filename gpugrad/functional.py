"""Functional autodiff, as in JAX: transform a function into its derivative.

``grad``, ``value_and_grad``, ``jacobian`` and ``hessian`` take a function and
return a new one; ``vjp``, ``jvp`` and ``hvp`` evaluate at given points. All
of them run :class:`~gpugrad.GradientTape` underneath, so they nest (a
Hessian is the Jacobian of a Jacobian) and an outer tape records them.

Arguments may be Tensors, Variables, NumPy arrays or Python numbers, or
lists, tuples and dicts of them (see :mod:`gpugrad._nest`); results keep their
structure. Arrays and numbers are converted with :func:`gpugrad.tensor`, so
float64 arrays stay float64 and Python floats become float32. A source the
output does not depend on gets zeros, as in JAX. Variables a function reads
without receiving them as arguments are constants here.

Forward mode (``jvp``) is exact and built from reverse mode by the double-VJP
construction: ``u -> J^T u`` is linear in the cotangent ``u``, so its own VJP
with respect to ``u``, taken at the tangent ``v``, is ``J v``.

Example:
    >>> import gpugrad as gg
    >>> f = lambda x: (x ** 3.0).sum()
    >>> gg.grad(f)(gg.tensor([1.0, 2.0])).numpy().tolist()
    [3.0, 12.0]
    >>> gg.hessian(f)(gg.tensor([1.0, 2.0])).numpy().tolist()
    [[6.0, 0.0], [0.0, 12.0]]
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any, Callable, Sequence

from . import _nest as nest
from .errors import DeviceError, DTypeError, ShapeError
from .ops import identity, zeros_like
from .tape import GradientTape
from .tensor import Tensor
from . import _dtypes as _dt

__all__ = ["grad", "value_and_grad", "jacobian", "hessian", "hvp", "vjp", "jvp"]


# ---------------------------------------------------------------- function transforms


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """A function returning ``(f(*args), gradient of f at args)``.

    ``f`` must return a scalar (a tensor of one element). ``argnums`` (an int
    or a tuple of ints) picks the positional arguments to differentiate; with a
    tuple, the gradient is a tuple of one entry per argument. With
    ``has_aux=True``, ``f`` returns ``(value, aux)`` and the result is
    ``((value, aux), gradient)``.

    Example:
        >>> import gpugrad as gg
        >>> f = lambda w, b: ((w * 2.0) + b).sum()
        >>> value, (dw, db) = gg.value_and_grad(f, argnums=(0, 1))(gg.tensor([1.0, 3.0]), 0.5)
        >>> value.item(), dw.numpy().tolist(), db.item()
        (9.0, [2.0, 2.0], 2.0)
    """
    @functools.wraps(f)
    def value_and_grad_f(*args, **kwargs):
        nums, single = _argnums(argnums, len(args), "value_and_grad")
        args, flat = _prepare(args, nums, "value_and_grad")
        with GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(flat)
            value, aux = _split_aux(f(*args, **kwargs), has_aux, "value_and_grad")
            value = _scalar_output(value, "value_and_grad")
        grads = tape.gradient(value, flat, unconnected_gradients="zero")
        grads = _pack_per_argument(args, nums, single, grads)
        return ((value, aux) if has_aux else value), grads

    return value_and_grad_f


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """A function returning the gradient of scalar-valued ``f`` (with ``aux`` when ``has_aux``).

    See :func:`value_and_grad` for ``argnums`` and ``has_aux``.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> df = gg.grad(lambda x: gg.sum(gg.sin(x)))
        >>> df(np.array([0.0, np.pi])).numpy().tolist()  # float64 stays float64
        [1.0, -1.0]
        >>> loss_and_count = lambda x: ((x * x).sum(), x.size)
        >>> g, count = gg.grad(loss_and_count, has_aux=True)(gg.tensor([1.0, 2.0]))
        >>> g.numpy().tolist(), count
        ([2.0, 4.0], 2)
    """
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def grad_f(*args, **kwargs):
        (value_aux, grads) = vg(*args, **kwargs)
        return (grads, value_aux[1]) if has_aux else grads

    return grad_f


def jacobian(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
             has_aux: bool = False) -> Callable[..., Any]:
    """A function returning the Jacobian of ``f``: shape ``out.shape + arg.shape`` per pair.

    For an output that is a structure of tensors, each output leaf holds the
    Jacobians with respect to the ``argnums`` arguments (one tensor per
    argument leaf, in the argument's structure). Reverse mode: one backward
    sweep per output element.

    Example:
        >>> import gpugrad as gg
        >>> f = lambda x: gg.stack([x.sum(), (x * x).sum()])
        >>> gg.jacobian(f)(gg.tensor([1.0, 2.0])).numpy().tolist()
        [[1.0, 1.0], [2.0, 4.0]]
        >>> jx, jy = gg.jacobian(lambda x, y: x * y, argnums=(0, 1))(gg.tensor([2.0]), gg.tensor([5.0]))
        >>> jx.numpy().tolist(), jy.numpy().tolist()
        ([[5.0]], [[2.0]])
    """
    @functools.wraps(f)
    def jacobian_f(*args, **kwargs):
        nums, single = _argnums(argnums, len(args), "jacobian")
        args, flat = _prepare(args, nums, "jacobian")
        with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
            tape.watch(flat)
            out, aux = _split_aux(f(*args, **kwargs), has_aux, "jacobian")
            out_leaves = [_output(o, "jacobian") for o in nest.flatten(out)]
        jacs = [_pack_per_argument(args, nums, single, tape.jacobian(o, flat, unconnected_gradients="zero"))
                for o in out_leaves]
        result = nest.pack_like(out, jacs)
        return (result, aux) if has_aux else result

    return jacobian_f


def hessian(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
            has_aux: bool = False) -> Callable[..., Any]:
    """A function returning the Hessian of ``f``: the Jacobian of its Jacobian.

    For scalar ``f`` of one array argument the shape is ``x.shape + x.shape``;
    with a tuple ``argnums`` the result is a tuple of tuples (block ``[i][j]``
    has shape ``out.shape + xi.shape + xj.shape``).

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> a = gg.tensor(np.array([[1.0, 2.0], [0.0, 3.0]]))
        >>> quadratic = lambda x: gg.sum(x * gg.matmul(a, x))  # x^T A x
        >>> gg.hessian(quadratic)(np.array([0.5, -1.0])).numpy().tolist()  # A + A^T
        [[2.0, 2.0], [2.0, 6.0]]
    """
    hess = jacobian(jacobian(f, argnums, has_aux), argnums, has_aux)
    return functools.wraps(f)(hess)


# ---------------------------------------------------------------- evaluated at a point


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(f(*primals), vjp_fn)``: ``vjp_fn(cotangent)`` is ``cotangent^T J`` for every primal.

    The cotangent has the structure and shapes of ``f``'s output; ``vjp_fn``
    returns a tuple with one entry per primal (in its structure) and may be
    called many times. With ``has_aux=True`` the result is ``(out, vjp_fn, aux)``.

    Example:
        >>> import numpy as np, gpugrad as gg
        >>> a = np.array([[1.0, 2.0], [3.0, 4.0]])
        >>> out, vjp_fn = gg.vjp(gg.matmul, a, np.eye(2))
        >>> da, db = vjp_fn(np.ones((2, 2)))  # ct @ b.T and a.T @ ct
        >>> da.numpy().tolist(), db.numpy().tolist()
        ([[1.0, 1.0], [1.0, 1.0]], [[4.0, 4.0], [6.0, 6.0]])
    """
    nums = tuple(range(len(primals)))
    args, flat = _prepare(primals, nums, "vjp")
    out, vjp_fn, aux = _vjp(f, args, nums, flat, has_aux)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jvp(f: Callable[..., Any], primals: Any, tangents: Any, has_aux: bool = False) -> Any:
    """``(f(*primals), J @ tangents)``: forward mode, exact, by the double-VJP construction.

    ``primals`` and ``tangents`` are tuples (or lists) with one entry per
    positional argument of ``f``, each tangent of its primal's structure and
    shapes (a single primal that is not a tuple or list is one argument). The
    tangent output has the structure of ``f``'s output. With ``has_aux=True``
    the result is ``(out, tangent_out, aux)``. It costs about three
    evaluations of ``f``: the forward pass, its backward sweep recorded, and
    the sweep of that.

    Example:
        >>> import gpugrad as gg
        >>> x, v = gg.tensor([0.0, 1.0]), gg.tensor([1.0, 2.0])
        >>> y, dy = gg.jvp(gg.tanh, (x,), (v,))  # (1 - tanh(x)^2) v
        >>> [round(d, 4) for d in dy.numpy().tolist()]
        [1.0, 0.8399]
    """
    primals, tangents = _primals_and_tangents(primals, tangents, "jvp")
    nums = tuple(range(len(primals)))
    args, flat = _prepare(primals, nums, "jvp")
    flat_tangents = _matching(flat, tangents, "jvp", "tangent", "primal")
    out, vjp_fn, aux = _vjp(f, args, nums, flat, has_aux)
    out_leaves = [_output(o, "jvp") for o in nest.flatten(out)]
    # one cotangent per float output; vjp_fn is linear in it, so any value does: zeros
    us = [zeros_like(o) if _dt.inexact(o.dtype) else None for o in out_leaves]
    watched = [u for u in us if u is not None]
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(watched)
        cotangent = nest.pack_like(out, [o if u is None else u for o, u in zip(out_leaves, us)])
        transposed = nest.flatten(vjp_fn(cotangent))  # J^T u
    along = iter(tape.gradient(transposed, watched, output_gradients=flat_tangents,
                               unconnected_gradients="zero"))  # d<J^T u, v>/du = J v
    tangent_out = nest.pack_like(out, [zeros_like(o) if u is None else next(along)
                                       for o, u in zip(out_leaves, us)])
    return (out, tangent_out, aux) if has_aux else (out, tangent_out)


def hvp(f: Callable[..., Any], primals: Any, tangents: Any) -> Any:
    """The Hessian of scalar ``f`` at ``primals`` times ``tangents``, without forming the Hessian.

    Reverse over reverse: the gradient recorded on an outer tape, then that
    tape's gradient of ``<gradient, tangents>``; the cost is about three
    evaluations of ``f``. ``primals`` and ``tangents`` are tuples (or lists),
    one entry per positional argument; the result is a tuple of the same
    structure. A single primal that is not a tuple or list gives a single result.

    Example:
        >>> import gpugrad as gg
        >>> f = lambda x: (x ** 3.0).sum()  # Hessian diag(6 x)
        >>> gg.hvp(f, gg.tensor([1.0, 2.0]), gg.tensor([1.0, 1.0])).numpy().tolist()
        [6.0, 12.0]
    """
    single = not isinstance(primals, (tuple, list))
    primals, tangents = _primals_and_tangents(primals, tangents, "hvp")
    nums = tuple(range(len(primals)))
    args, flat = _prepare(primals, nums, "hvp")
    flat_tangents = _matching(flat, tangents, "hvp", "tangent", "primal")
    with GradientTape(watch_accessed_variables=False) as outer:
        outer.watch(flat)
        with GradientTape(watch_accessed_variables=False) as inner:
            inner.watch(flat)
            value = _scalar_output(f(*args), "hvp")
        grads = inner.gradient(value, flat, unconnected_gradients="zero")
    products = outer.gradient(grads, flat, output_gradients=flat_tangents, unconnected_gradients="zero")
    result = _pack_per_argument(args, nums, False, products)
    return result[0] if single else result


# ---------------------------------------------------------------- shared pieces


def _vjp(f, args, nums, flat, has_aux):
    """Record ``f(*args)`` once; return ``(out, vjp_fn, aux)``."""
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(flat)
        out, aux = _split_aux(f(*args), has_aux, "vjp")
        out_leaves = [_output(o, "vjp") for o in nest.flatten(out)]

    def vjp_fn(cotangent):
        cts = _matching(out_leaves, cotangent, "vjp", "cotangent", "output")
        pairs = [(o, c) for o, c in zip(out_leaves, cts) if _dt.inexact(o.dtype)]
        grads = tape.gradient([o for o, _ in pairs], flat, output_gradients=[c for _, c in pairs],
                              unconnected_gradients="zero")
        return _pack_per_argument(args, nums, False, grads)

    return out, vjp_fn, aux


def _argnums(argnums, n_args, what):
    """``argnums`` as a tuple of non-negative ints, and whether it was a single int."""
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums) if isinstance(argnums, (tuple, list)) else None
    if nums is None or not nums or not all(isinstance(i, int) for i in nums):
        raise TypeError(f"{what}: argnums must be an int or a non-empty tuple of ints, not {argnums!r}")
    if any(not -n_args <= i < n_args for i in nums):
        raise ValueError(f"{what}: argnums {argnums!r} out of range for {n_args} positional arguments")
    nums = tuple(i % n_args for i in nums)
    if len(set(nums)) != len(nums):
        raise ValueError(f"{what}: argnums {argnums!r} repeats an argument")
    return nums, single


def _prepare(args, nums, what):
    """``args`` with the differentiated ones' leaves as float tensors, and those leaves, flat.

    A tensor passed more than once is differentiated once per place: each
    differentiated place gets its own alias (``identity``, recorded for outer
    tapes), as separate arguments are in JAX.
    """
    args = list(args)
    seen = Counter(id(leaf) for a in args for leaf in nest.flatten(a) if isinstance(leaf, Tensor))
    flat = []
    for i in nums:
        leaves = []
        for leaf in nest.flatten(args[i]):
            if isinstance(leaf, Tensor):
                t = identity(leaf) if seen[id(leaf)] > 1 else leaf
            else:
                try:
                    t = Tensor(leaf)
                except (TypeError, ValueError) as e:
                    raise TypeError(f"{what}: argument {i} holds a {type(leaf).__name__}, which is not "
                                    f"a tensor, array or number ({e})") from None
            if not _dt.inexact(t.dtype):
                raise DTypeError(f"{what}: argument {i} has dtype {t.dtype}; only float arguments "
                                 f"can be differentiated (write 2.0, not 2)")
            leaves.append(t)
        args[i] = nest.pack_like(args[i], leaves)
        flat.extend(leaves)
    return args, flat


def _pack_per_argument(args, nums, single, flat_results):
    """Split results for the flat leaves back into one structure per differentiated argument."""
    it = iter(flat_results)
    packed = tuple(nest.pack_like(args[i], [next(it) for _ in nest.flatten(args[i])]) for i in nums)
    return packed[0] if single else packed


def _split_aux(result, has_aux, what):
    if not has_aux:
        return result, None
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"{what}: with has_aux=True the function must return a pair (output, aux), "
                        f"not {type(result).__name__}")
    return result[0], result[1]


def _output(out, what):
    """An output leaf as a tensor (a number or array is a constant)."""
    if isinstance(out, Tensor):
        return out
    try:
        return Tensor(out)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: the function returned a {type(out).__name__}, not tensors") from None


def _scalar_output(value, what):
    if isinstance(value, (tuple, list, dict)):
        raise TypeError(f"{what}: the function must return one scalar tensor, not a {type(value).__name__} "
                        f"(with has_aux=True it returns (value, aux))")
    value = _output(value, what)
    if value.size != 1:
        raise ShapeError(f"{what}: the function must return a scalar, but its output has shape "
                         f"{value.shape}; use jacobian() or vjp() for a non-scalar output")
    return value


def _primals_and_tangents(primals, tangents, what):
    """Both as tuples, one entry per positional argument; a bare primal is one argument."""
    if not isinstance(primals, (tuple, list)):
        primals, tangents = (primals,), (tangents,)
    if not isinstance(tangents, (tuple, list)) or len(tangents) != len(primals):
        n = len(tangents) if isinstance(tangents, (tuple, list)) else "a non-sequence"
        raise ValueError(f"{what}: primals has {len(primals)} entries but tangents has {n}; "
                         f"give one tangent per primal")
    return tuple(primals), tuple(tangents)


def _matching(leaves, given, what, name, of):
    """``given``'s leaves as tensors like ``leaves`` (dtype, device), one per leaf, of the same shapes."""
    flat = nest.flatten(given)
    if len(flat) != len(leaves):
        raise ValueError(f"{what}: {len(flat)} {name} arrays for {len(leaves)} {of} arrays; "
                         f"give one of the same structure")
    matched = []
    for i, (leaf, g) in enumerate(zip(leaves, flat)):
        if isinstance(g, Tensor) and g._device is not leaf._device:
            raise DeviceError(f"{what}: {name} {i} is on {g.device!r} but its {of} is on {leaf.device!r}")
        if not isinstance(g, Tensor) or g.dtype != leaf.dtype:
            g = Tensor(g, dtype=leaf.dtype, device=leaf._device)
        if g.shape != leaf.shape:
            raise ShapeError(f"{what}: {name} {i} has shape {g.shape} but its {of} has shape {leaf.shape}")
        matched.append(g)
    return matched
