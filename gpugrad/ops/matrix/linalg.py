"""Linear algebra: matmul (batched, ``@``), tensordot, einsum.

matmul's gradient is two matmuls with one operand transposed in place (the
``transpose_a`` / ``transpose_b`` flags TensorFlow uses), so no transpose op is
recorded. einsum's gradient with respect to each operand is another einsum of
the upstream gradient with the other operands; tensordot runs the array
module's tensordot and differentiates as the einsum it equals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import functools
import string
from collections import Counter

from ... import _dtypes as _dt
from ...errors import ShapeError
from ... import mixed_precision as _mp
from ...registry import RegisterGradient
from ...tensor import Tensor
from .. import _autocast
from .. import replay
from ..base import binary, emit, public_ops, same_device, unary
from ..array.shape import broadcast_to, reshape

if TYPE_CHECKING:
    from ..._typing import TensorLike


# ---------------------------------------------------------------- matmul

_NO_TRANSPOSE = {"transpose_a": False, "transpose_b": False}
_TRANSPOSE_FLAGS = {(ta, tb): {"transpose_a": ta, "transpose_b": tb}  # shared: records never change attrs
                    for ta in (False, True) for tb in (False, True)}


def _matmul_error(a, b, transpose_a, transpose_b, why):
    flags = "".join([", transpose_a=True" if transpose_a else "", ", transpose_b=True" if transpose_b else ""])
    return ShapeError(f"op 'MatMul' cannot multiply shapes {a.shape} and {b.shape}{flags}: {why}")


def matmul(a: TensorLike, b: TensorLike, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """Matrix product with NumPy's rules: batched over leading axes, which broadcast.

    A 1-D first operand acts as a row vector and a 1-D second operand as a
    column vector; that axis is dropped from the result. ``transpose_a`` /
    ``transpose_b`` swap the last two axes of an operand (of 2 or more
    dimensions) without copying it. ``a @ b`` is the same op.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> (a @ gg.tensor([1.0, 1.0])).numpy().tolist()
        [3.0, 7.0]
        >>> gg.matmul(a, a, transpose_a=True).numpy().tolist()
        [[10.0, 14.0], [14.0, 20.0]]
        >>> gg.ones((5, 1, 2, 3)).matmul(gg.ones((4, 3, 2))).shape
        (5, 4, 2, 2)
    """
    if _mp.active and (out := _autocast.autocast_op(matmul, (a, b), transpose_a=transpose_a, transpose_b=transpose_b)) is not None:
        return out
    if a.__class__ is not Tensor or b.__class__ is not Tensor:
        a, b = binary(a, b, "MatMul")
    elif a._device is not b._device:
        same_device((a, b), "MatMul")
    xp = a._device.xp
    ad, bd = a._data, b._data
    if transpose_a or transpose_b or not ad.ndim or not bd.ndim:
        if not ad.ndim or not bd.ndim:
            raise _matmul_error(a, b, transpose_a, transpose_b, "an operand is a scalar; use multiply")
        if (transpose_a and ad.ndim < 2) or (transpose_b and bd.ndim < 2):
            raise _matmul_error(a, b, transpose_a, transpose_b, "only operands of 2 or more dimensions transpose")
        ad = ad.swapaxes(-1, -2) if transpose_a else ad  # the method: np.swapaxes adds a Python wrapper
        bd = bd.swapaxes(-1, -2) if transpose_b else bd
    try:
        out = _dt.narrow(xp.matmul(ad, bd), ad, bd)  # ml_dtypes' bfloat16 product is float32
    except ValueError:
        k_a, k_b = ad.shape[-1], bd.shape[-2 if bd.ndim > 1 else 0]
        why = f"contracted dimensions {k_a} and {k_b} differ" if k_a != k_b \
            else f"batch dimensions {ad.shape[:-2]} and {bd.shape[:-2]} do not broadcast"
        raise _matmul_error(a, b, transpose_a, transpose_b, why) from None
    attrs = _TRANSPOSE_FLAGS[bool(transpose_a), bool(transpose_b)] if transpose_a or transpose_b else None
    return emit("MatMul", out, a._device, (a, b), attrs)


def _rmatmul(self, other):
    return matmul(other, self)


# Never in a CUDA Graph (graph_safe None): CuPy 14.2 multiplies floats through cuBLAS, whose every call
# raises NotImplementedError while a stream captures (cupy_backends/cuda/libs/cublas.pyx setStream); a product
# of one element (vector . vector) goes through CUB with temporaries from the pool, integers through CuPy's own
# kernels on contiguous copies (cupy/_core/_routines_linalg.pyx tensordot_core). A product runs between the
# graphs as one cuBLAS launch: a graph would save that one launch's host cost, no more.
@replay.replays("MatMul")
def _matmul_replay(inputs, attrs, outputs, device):
    # matmul's xp.matmul of the swapped views, into the output (float operands of one dtype: no narrowing)
    if len(outputs) != 1 or not replay.floats_of_one_dtype(inputs, outputs):
        return None
    a, b = inputs
    attrs = attrs or {}
    if attrs.get("transpose_a"):
        a = a.swapaxes(-1, -2)
    if attrs.get("transpose_b"):
        b = b.swapaxes(-1, -2)
    return functools.partial(device.xp.matmul, a, b, out=outputs[0])


@RegisterGradient("MatMul", reads_outputs=False)
def _matmul_grad(op, dy):
    # C = A B:  dA = dC B^T,  dB = A^T dC  (with transposed operands, the rows of the table below)
    a, b = op.inputs
    flags = op.attrs or _NO_TRANSPOSE
    ta, tb = flags["transpose_a"], flags["transpose_b"]
    need_a, need_b = op.needs_grad
    vec_a, vec_b = a.ndim == 1, b.ndim == 1
    if vec_a or vec_b:  # NumPy promotes a vector to a matrix, then drops the added axis
        shape = dy.shape + (1,) if vec_b else dy.shape
        if vec_a:
            shape = shape[:-1] + (1,) + shape[-1:]
        dy = reshape(dy, shape)
        a = reshape(a, (1, a.shape[0])) if vec_a else a
        b = reshape(b, (b.shape[0], 1)) if vec_b else b
    ga = gb = None
    if need_a:
        if not ta:
            ga = matmul(dy, b, transpose_b=not tb)  # dC B^T, or dC B for C = A B^T
        else:
            ga = matmul(b, dy, transpose_a=tb, transpose_b=True)  # B dC^T, or B^T dC^T
        if vec_a:
            ga = reshape(ga, ga.shape[:-2] + ga.shape[-1:])
    if need_b:
        if b.ndim == 2 and a.ndim > 2 and not ta:  # x @ W over a batch: one matmul, not one per item
            a = reshape(a, (-1, a.shape[-1]))
            dy = reshape(dy, (-1, dy.shape[-1]))
        if not tb:
            gb = matmul(a, dy, transpose_a=not ta)  # A^T dC, or A dC for C = A^T B
        else:
            gb = matmul(dy, a, transpose_a=True, transpose_b=ta)  # dC^T A, or dC^T A^T
        if vec_b:
            gb = reshape(gb, gb.shape[:-1])
    return ga, gb


# ---------------------------------------------------------------- einsum

_LETTERS = string.ascii_letters
_parsed: dict = {}  # (subscripts, operand ndims) -> (input letters, output letters, explicit spec)


def _einsum_error(subscripts, tensors, why):
    shapes = ", ".join(str(t.shape) for t in tensors)
    return ShapeError(f"op 'Einsum' cannot apply {subscripts!r} to shapes {shapes}: {why}")


def _explicit_subscripts(subscripts, tensors):
    """``(input letter strings, output letter string)`` with '...' spelled out and the output explicit.

    An implicit output is NumPy's: the broadcast dimensions, then every letter
    used once, sorted.
    """
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    subs = inputs.split(",")
    if len(subs) != len(tensors):
        raise _einsum_error(subscripts, tensors, f"{len(subs)} operand subscripts for {len(tensors)} operands")
    for s in subs + [output]:
        if any(c not in _LETTERS for c in s.replace("...", "")):
            raise _einsum_error(subscripts, tensors, "subscripts are letters, ',', '->' and '...'")
    spare = [c for c in _LETTERS if c not in text]
    widths = []
    for s, t in zip(subs, tensors):
        width = t.ndim - (len(s) - 3) if "..." in s else 0
        if width < 0 or ("..." not in s and len(s) != t.ndim):
            raise _einsum_error(subscripts, tensors, f"{s!r} does not name the {t.ndim} axes of its operand")
        widths.append(width)
    broadcast = "".join(spare[:max(widths, default=0)])
    subs = [s.replace("...", broadcast[len(broadcast) - w:]) for s, w in zip(subs, widths)]
    if arrow:
        output = output.replace("...", broadcast)
    else:
        counts = Counter("".join(subs))
        output = broadcast + "".join(sorted(c for c in counts if counts[c] == 1 and c not in broadcast))
    return subs, output


def _einsum_arrays(xp, spec, arrays):
    # the pairwise order with BLAS pays off on larger operands; its planning costs tens of µs
    optimize = len(arrays) > 2 or any(a.size > 4096 for a in arrays)
    # float16 and bfloat16 contract in float32 (NumPy's einsum refuses bfloat16), returned in their dtype
    return _dt.narrow(xp.einsum(spec, *[_dt.wide(a) for a in arrays], optimize=optimize), *arrays)


def einsum(subscripts: str, *operands: TensorLike) -> Tensor:
    """Einstein summation as ``numpy.einsum``: explicit ('->') or implicit output, '...', repeated letters.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> gg.einsum("ij,jk->ik", a, a).numpy().tolist()
        [[7.0, 10.0], [15.0, 22.0]]
        >>> gg.einsum("ii->i", a).numpy().tolist(), gg.einsum("ii", a).item()
        ([1.0, 4.0], 5.0)
    """
    tensors = [t if t.__class__ is Tensor else unary(t, *operands) for t in operands]
    if not tensors:
        raise ValueError("einsum needs at least one operand")
    dev = same_device(tensors, "Einsum")
    key = (subscripts, tuple([t.ndim for t in tensors]))
    parsed = _parsed.get(key)
    if parsed is None:
        if len(_parsed) > 1024:
            _parsed.clear()
        subs, output = _explicit_subscripts(subscripts, tensors)
        parsed = _parsed[key] = (subs, output, ",".join(subs) + "->" + output)
    subs, output, spec = parsed
    try:
        out = _einsum_arrays(dev.xp, spec, [t._data for t in tensors])
    except ValueError as e:
        raise _einsum_error(subscripts, tensors, str(e)) from None
    return emit("Einsum", out, dev, tuple(tensors), {"subs": subs, "output": output})


def _einsum_operand_grad(k, subs, output, inputs, dy):
    """The gradient of one einsum operand: the einsum of dy with the other operands.

    A letter repeated in the operand (a diagonal) gets a fresh letter per extra
    use and an identity matrix tying it to the first; a letter summed within
    this operand alone is broadcast back afterwards.
    """
    sub, x = subs[k], inputs[k]
    xp = x._device.xp
    used = set("".join(subs) + output)
    fresh = (c for c in _LETTERS if c not in used)
    target, eyes, seen = [], [], set()
    for c, n in zip(sub, x.shape):
        if c in seen:
            d = next(fresh)
            eyes.append((c + d, Tensor._wrap(xp.eye(n, dtype=dy.dtype), x._device)))
            target.append(d)
        else:
            seen.add(c)
            target.append(c)
    others = [i for i in range(len(subs)) if i != k]
    reachable = set(output).union(*[subs[i] for i in others], *[e for e, _ in eyes])
    kept = "".join(c for c in target if c in reachable)
    in_subs = [output] + [subs[i] for i in others] + [e for e, _ in eyes]
    g = einsum(",".join(in_subs) + "->" + kept, dy, *[inputs[i] for i in others], *[e for _, e in eyes])
    if len(kept) < len(target):  # summed only here: every element got the same gradient
        g = reshape(g, tuple(g.shape[kept.index(c)] if c in kept else 1 for c in target))
    if g.shape != x.shape:  # size-1 axes broadcast in either direction; the tape sums the rest
        full = tuple(max(m, n) for m, n in zip(g.shape, x.shape))
        if full != g.shape:
            g = broadcast_to(g, full)
    return g


@RegisterGradient("Einsum", reads_outputs=False)
def _einsum_grad(op, dy):
    subs, output = op.attrs["subs"], op.attrs["output"]
    inputs = op.inputs
    return tuple(_einsum_operand_grad(k, subs, output, inputs, dy) if need else None
                 for k, need in enumerate(op.needs_grad))


# ---------------------------------------------------------------- tensordot


def _tensordot_axes(axes, a, b):
    """``(axes of a, axes of b)`` contracted, as non-negative ints in matching order."""
    if isinstance(axes, int):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ShapeError(f"op 'TensorDot' cannot contract {axes} axes of shapes {a.shape} and {b.shape}")
        axes_a, axes_b = range(a.ndim - axes, a.ndim), range(axes)
    else:
        try:
            axes_a, axes_b = axes
        except (TypeError, ValueError):
            raise ValueError(f"tensordot axes is an int or a pair of axis sequences, not {axes!r}") from None
    axes_a = (axes_a,) if isinstance(axes_a, int) else tuple(axes_a)
    axes_b = (axes_b,) if isinstance(axes_b, int) else tuple(axes_b)
    if len(axes_a) != len(axes_b):
        raise ShapeError(f"op 'TensorDot' got {len(axes_a)} axes of {a.shape} to contract with "
                         f"{len(axes_b)} axes of {b.shape}")
    if not all(-a.ndim <= i < a.ndim for i in axes_a) or not all(-b.ndim <= j < b.ndim for j in axes_b):
        raise ShapeError(f"op 'TensorDot' axes {axes} are out of range for shapes {a.shape} and {b.shape}")
    axes_a = tuple(i % a.ndim for i in axes_a)
    axes_b = tuple(j % b.ndim for j in axes_b)
    for i, j in zip(axes_a, axes_b):
        if a.shape[i] != b.shape[j]:
            raise ShapeError(f"op 'TensorDot' cannot contract axis {i} of shape {a.shape} with "
                             f"axis {j} of shape {b.shape}: sizes {a.shape[i]} and {b.shape[j]} differ")
    return axes_a, axes_b


def tensordot(a: TensorLike, b: TensorLike, axes: Any = 2) -> Tensor:
    """Sum of products over axes of ``a`` and ``b`` as ``numpy.tensordot``.

    ``axes`` is N (the last N axes of ``a`` with the first N of ``b``) or a
    pair ``(axes_of_a, axes_of_b)``. The result has the free axes of ``a``,
    then those of ``b``.

    Example:
        >>> import gpugrad as gg
        >>> a = gg.ones((2, 3, 4))
        >>> gg.tensordot(a, gg.ones((3, 4, 5))).shape
        (2, 5)
        >>> gg.tensordot(a, gg.ones((4, 2)), axes=([0, 2], [1, 0])).numpy().tolist()
        [8.0, 8.0, 8.0]
    """
    if a.__class__ is not Tensor or b.__class__ is not Tensor:
        a, b = binary(a, b, "TensorDot")
    elif a._device is not b._device:
        same_device((a, b), "TensorDot")
    axes_a, axes_b = _tensordot_axes(axes, a, b)
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ShapeError(f"op 'TensorDot' got a repeated axis in {axes}")
    out = _dt.narrow(a._device.xp.tensordot(a._data, b._data, axes=(axes_a, axes_b)), a._data, b._data)
    # the same contraction as einsum subscripts, for the gradient
    sub_a = list(_LETTERS[:a.ndim])
    sub_b = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for i, j in zip(axes_a, axes_b):
        sub_b[j] = sub_a[i]
    free_a = "".join(c for i, c in enumerate(sub_a) if i not in axes_a)
    free_b = "".join(c for j, c in enumerate(sub_b) if j not in axes_b)
    return emit("TensorDot", out, a._device, (a, b),
                {"subs": ["".join(sub_a), "".join(sub_b)], "output": free_a + free_b})


@RegisterGradient("TensorDot", reads_outputs=False)
def _tensordot_grad(op, dy):
    subs, output = op.attrs["subs"], op.attrs["output"]
    return tuple(_einsum_operand_grad(k, subs, output, op.inputs, dy) if need else None
                 for k, need in enumerate(op.needs_grad))


TENSOR_METHODS = {"matmul": matmul, "__matmul__": matmul, "__rmatmul__": _rmatmul}

__all__ = public_ops(globals())

if TYPE_CHECKING:  # the same names, spelled out for type checkers (tests/test_typing.py checks them)
    __all__ = [
        "matmul", "einsum", "tensordot"
    ]
