"""Replay kernels: the ops a plan may run as one prebound array call into their output array.

``build(op_type, inputs, attrs, outputs, device)`` returns a function of no arguments that
computes op ``op_type``'s outputs from arrays ``inputs`` into arrays ``outputs`` (the ones
the trace's eager call made) with the very array calls the op's forward makes, so to the
same bits; or None, and the op is replayed by calling it again. Each op module declares its
op types' kernels beside their forwards (:mod:`gpugrad.ops.replay`; the hot gradients from
their own declaration); this module only looks them up. ``tests/test_function.py`` replays
every op of the spec table against its eager result, bit for bit.

Example:
    >>> import numpy as np
    >>> from gpugrad.backend import CPU
    >>> x, out = np.array([0.0, 1.0]), np.empty(2)
    >>> _ = build("Exp", [x], None, [out], CPU)()
    >>> out.tolist() == np.exp(x).tolist()
    True
"""
from ..ops.base import is_constant  # noqa: F401 - the capture asks it here
from ..ops.replay import lookup

_NONE: tuple = ()


def build(op_type, inputs, attrs, outputs, device, fills=False):
    """A function of no arguments that runs op ``op_type`` from ``inputs`` into ``outputs``; or None.

    ``fills``: the op made the arrays it saves in ``attrs`` (its keys in :data:`FILLS_ATTRS`), and the
    kernel computes them too; an op whose kernel fills attributes replays only so."""
    r = lookup(op_type)
    if r is None or fills != bool(r.fills_attrs):
        return None
    return r.build(inputs, attrs, outputs, device)


class _Declared:
    """``FILLS_ATTRS`` / ``FILLS_INPUTS``: op type -> that field of its declaration (read-only, a dict's ``get``
    and ``[]``), so an op declared after this module was imported is seen too."""

    def __init__(self, field):
        self._field = field

    def get(self, op_type, default=None):
        r = lookup(op_type)
        value = getattr(r, self._field) if r is not None else _NONE
        return value if value else default

    def __getitem__(self, op_type):
        value = self.get(op_type)
        if value is None:
            raise KeyError(op_type)
        return value

    def __contains__(self, op_type):
        return self.get(op_type) is not None


FILLS_ATTRS = _Declared("fills_attrs")  # op type -> the attrs its kernel computes too (made by its forward)
FILLS_INPUTS = _Declared("fills_inputs")  # op type -> inputs its kernel computes too (made by the op before it)


def graph_safe(op_type, inputs, attrs, outputs):
    """Whether the kernel of ``op_type`` on a GPU is one launch that writes into its outputs, allocates nothing
    (nor does a CuPy routine inside it), reads nothing to the host and calls no CUDA library, so a CUDA Graph
    may hold it (see :mod:`.graphs`): C-contiguous arrays, and what its declaration says of them (ufuncs with
    ``out=`` and ReLU; hot gradients' fused kernels). Products (cuBLAS) never are.

    Example:
        >>> import numpy as np
        >>> graph_safe("Mul", [np.ones(2), np.ones(2)], None, [np.ones(2)]), graph_safe("Softmax", [], None, [])
        (True, False)
    """
    r = lookup(op_type)
    if r is None or r.graph_safe is None:
        return False
    arrays = list(inputs) + list(outputs)
    if not arrays or not all(a.flags.c_contiguous for a in arrays):
        return False
    return r.graph_safe(inputs, attrs, outputs)
