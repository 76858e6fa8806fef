"""Arithmetic ops: + - * / ** negative abs sign maximum minimum where clip.

Each op is its forward function and, right below it, its registered gradient.
Rules return one gradient per input at the broadcast output's shape; the tape
sums each back to its input's shape.
"""
from ..registry import NotDifferentiable, RegisterGradient
from .base import binary, broadcast_error, emit, fused, same_device, unary

__all__ = ['add', 'subtract', 'negative', 'multiply', 'divide', 'div_grad', 'power', 'abs', 'sign', 'maximum', 'minimum', 'where', 'clip']


# ---------------------------------------------------------------- add, subtract


def add(x, y):
    """x + y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.add(gg.tensor([1.0, 2.0]), 1.0).numpy().tolist()
        [2.0, 3.0]
    """
    x, y = binary(x, y, "Add")
    try:
        return emit("Add", x._data + y._data, x._device, (x, y))
    except ValueError:
        raise broadcast_error("Add", x, y) from None


@RegisterGradient("Add")
def _add_grad(op, dy):
    return dy, dy


def subtract(x, y):
    """x - y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.subtract(3.0, gg.tensor([1.0])).numpy().tolist()
        [2.0]
    """
    x, y = binary(x, y, "Sub")
    try:
        return emit("Sub", x._data - y._data, x._device, (x, y))
    except ValueError:
        raise broadcast_error("Sub", x, y) from None


@RegisterGradient("Sub")
def _sub_grad(op, dy):
    return dy, (negative(dy) if op.needs_grad[1] else None)


def negative(x):
    """-x elementwise.

    Example:
        >>> import gpugrad as gg
        >>> (-gg.tensor([1.0, -2.0])).numpy().tolist()
        [-1.0, 2.0]
    """
    x = unary(x)
    return emit("Neg", -x._data, x._device, (x,))


@RegisterGradient("Neg")
def _neg_grad(op, dy):
    return (negative(dy),)


# ---------------------------------------------------------------- multiply, divide


def multiply(x, y):
    """x * y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.multiply(gg.tensor([1.0, 2.0]), gg.tensor([3.0, 4.0])).numpy().tolist()
        [3.0, 8.0]
    """
    x, y = binary(x, y, "Mul")
    try:
        return emit("Mul", x._data * y._data, x._device, (x, y))
    except ValueError:
        raise broadcast_error("Mul", x, y) from None


@RegisterGradient("Mul")
def _mul_grad(op, dy):
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    return (multiply(dy, y) if need_x else None), (multiply(dy, x) if need_y else None)


def divide(x, y):
    """x / y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.divide(gg.tensor([1.0, 3.0]), 2.0).numpy().tolist()
        [0.5, 1.5]
    """
    x, y = binary(x, y, "Div")
    try:
        return emit("Div", x._data / y._data, x._device, (x, y))
    except ValueError:
        raise broadcast_error("Div", x, y) from None


@RegisterGradient("Div")
def _div_grad(op, dy):
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    if not need_y:
        return divide(dy, y), None
    gx, gy = div_grad(x, y, dy)
    return (gx if need_x else None), gy


def _div_grad_cpu(x, y, dy):
    gx = dy / y
    return gx, -gx * (x / y)  # d(x/y)/dy = -x / y^2


def div_grad(x, y, dy):
    """The fused gradient of x / y: ``(dy / y, -dy * x / y**2)`` in one pass.

    Example:
        >>> import gpugrad as gg
        >>> gx, gy = gg.ops.div_grad(gg.tensor(1.0), gg.tensor(2.0), gg.tensor(1.0))
        >>> gx.item(), gy.item()
        (0.5, -0.25)
    """
    dev = same_device((x, y, dy), "DivGrad")
    gx, gy = fused("div_grad", _div_grad_cpu, dev, x._data, y._data, dy._data)
    from .base import emit_many

    return emit_many("DivGrad", (gx, gy), dev, (x, y, dy))


@RegisterGradient("DivGrad")
def _div_grad_grad(op, ggx, ggy):
    # gx = dy/y, gy = -dy*x/y^2
    x, y, dy = op.inputs
    inv_y = reciprocal(y)
    dgy_dx = -dy * inv_y * inv_y  # also d(gx)/dy
    grad_x = ggy * dgy_dx
    grad_y = ggx * dgy_dx + ggy * (2.0 * dy * x * inv_y * inv_y * inv_y)
    grad_dy = ggx * inv_y - ggy * x * inv_y * inv_y
    return grad_x, grad_y, grad_dy


# ---------------------------------------------------------------- power


def power(x, y):
    """x ** y elementwise, with broadcasting.

    Example:
        >>> import gpugrad as gg
        >>> gg.power(gg.tensor([2.0, 3.0]), 2.0).numpy().tolist()
        [4.0, 9.0]
    """
    x, y = binary(x, y, "Pow")
    try:
        return emit("Pow", x._device.xp.power(x._data, y._data), x._device, (x, y))
    except ValueError:
        raise broadcast_error("Pow", x, y) from None


@RegisterGradient("Pow")
def _pow_grad(op, dy):
    # d(x^y)/dx = y x^(y-1);  d(x^y)/dy = x^y log(x), taken as 0 where x == 0
    x, y = op.inputs
    need_x, need_y = op.needs_grad
    gx = multiply(dy, y * power(x, y - 1.0)) if need_x else None
    gy = None
    if need_y:
        safe_x = where(x._data > 0, x, 1.0)
        gy = multiply(dy, where(x._data > 0, op.outputs[0] * log(safe_x), 0.0))
    return gx, gy


# ---------------------------------------------------------------- abs, sign


def abs(x):  # noqa: A001 - NumPy's name
    """|x| elementwise; its gradient at 0 is 0.

    Example:
        >>> import gpugrad as gg
        >>> gg.abs(gg.tensor([-2.0, 3.0])).numpy().tolist()
        [2.0, 3.0]
    """
    x = unary(x)
    return emit("Abs", x._device.xp.abs(x._data), x._device, (x,))


@RegisterGradient("Abs")
def _abs_grad(op, dy):
    return (multiply(dy, sign(op.inputs[0])),)


def sign(x):
    """-1, 0 or 1 by the sign of x; not differentiable (gradient None).

    Example:
        >>> import gpugrad as gg
        >>> gg.sign(gg.tensor([-2.0, 0.0, 3.0])).numpy().tolist()
        [-1.0, 0.0, 1.0]
    """
    x = unary(x)
    return emit("Sign", x._device.xp.sign(x._data), x._device, (x,))


NotDifferentiable("Sign")


# ---------------------------------------------------------------- maximum, minimum, where, clip


def maximum(x, y):
    """The larger of x and y elementwise; at a tie the gradient goes to x.

    Example:
        >>> import gpugrad as gg
        >>> gg.maximum(gg.tensor([1.0, 5.0]), 3.0).numpy().tolist()
        [3.0, 5.0]
    """
    x, y = binary(x, y, "Maximum")
    try:
        return emit("Maximum", x._device.xp.maximum(x._data, y._data), x._device, (x, y))
    except ValueError:
        raise broadcast_error("Maximum", x, y) from None


@RegisterGradient("Maximum")
def _maximum_grad(op, dy):
    x, y = op.inputs
    x_wins = x._data >= y._data
    return where(x_wins, dy, 0.0), where(x_wins, 0.0, dy)


def minimum(x, y):
    """The smaller of x and y elementwise; at a tie the gradient goes to x.

    Example:
        >>> import gpugrad as gg
        >>> gg.minimum(gg.tensor([1.0, 5.0]), 3.0).numpy().tolist()
        [1.0, 3.0]
    """
    x, y = binary(x, y, "Minimum")
    try:
        return emit("Minimum", x._device.xp.minimum(x._data, y._data), x._device, (x, y))
    except ValueError:
        raise broadcast_error("Minimum", x, y) from None


@RegisterGradient("Minimum")
def _minimum_grad(op, dy):
    x, y = op.inputs
    x_wins = x._data <= y._data
    return where(x_wins, dy, 0.0), where(x_wins, 0.0, dy)


def where(cond, x, y):
    """x where ``cond`` is true, else y; ``cond`` is a boolean tensor or array.

    Example:
        >>> import gpugrad as gg
        >>> gg.where(gg.tensor([True, False]), 1.0, gg.tensor([5.0, 6.0])).numpy().tolist()
        [1.0, 6.0]
    """
    x, y = binary(x, y, "Where")
    dev = x._device
    mask = cond._data if hasattr(cond, "_data") else dev.xp.asarray(cond)
    try:
        out = dev.xp.where(mask, x._data, y._data)
    except ValueError:
        raise broadcast_error("Where", x, y) from None
    return emit("Where", out, dev, (x, y), {"cond": mask})


@RegisterGradient("Where")
def _where_grad(op, dy):
    mask = op.attrs["cond"]
    need_x, need_y = op.needs_grad
    return (where(mask, dy, 0.0) if need_x else None), (where(mask, 0.0, dy) if need_y else None)


def clip(x, lo, hi):
    """x limited to [lo, hi]; the gradient passes where lo <= x <= hi.

    Example:
        >>> import gpugrad as gg
        >>> gg.clip(gg.tensor([-1.0, 0.5, 2.0]), 0.0, 1.0).numpy().tolist()
        [0.0, 0.5, 1.0]
    """
    x = unary(x)
    xp = x._device.xp
    lo_data = lo._data if hasattr(lo, "_data") else lo
    hi_data = hi._data if hasattr(hi, "_data") else hi
    out = xp.clip(x._data, lo_data, hi_data)
    return emit("Clip", out.astype(x.dtype, copy=False), x._device, (x,), {"lo": lo_data, "hi": hi_data})


@RegisterGradient("Clip")
def _clip_grad(op, dy):
    x = op.inputs[0]._data
    inside = (x >= op.attrs["lo"]) & (x <= op.attrs["hi"])
    return (where(inside, dy, 0.0),)


TENSOR_METHODS = {"abs": abs, "clip": clip}

from .math import log, reciprocal  # noqa: E402 - rules above use them; math imports this module
