"""The table of op specs that drives the gradient check of every registered op.

Each family module (``elementwise``, ``linalg``, ...) lists ``SPECS``; the
table :data:`ALL_SPECS` is their concatenation. A spec names the op type it
covers, a function of float tensors that records that op, the input shapes,
and how to draw inputs away from kinks and poles. Adding an op means adding
its spec line here: ``tests/test_gradients.py`` and ``gpugrad check`` both
run this table, and both fail on a registered op with no spec.

Example:
    >>> [spec.id for spec in ALL_SPECS if spec.op_type == "Tanh"]
    ['Tanh']
"""
import dataclasses
import importlib
import pkgutil
from typing import Callable, Optional, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """How to gradient-check one op type.

    ``fn(*tensors)`` must record ``op_type``; ``shapes`` are its inputs'
    shapes; inputs are drawn uniformly from ``[low, high]``, with values of
    magnitude below ``away_from_zero`` pushed out (for kinks at 0), or by
    ``draw(rng)`` when given. ``order`` is the highest order checked.
    ``low_factor`` widens the float16/bfloat16 tolerance of an ill-conditioned op;
    ``low_refuses`` says why an op refuses those dtypes (with a DTypeError).

    Example:
        >>> import gpugrad as gg
        >>> spec = OpSpec("Tanh", gg.tanh, [(2, 3)])
        >>> spec.id, [a.shape for a in spec.inputs()]
        ('Tanh', [(2, 3)])
    """

    op_type: str
    fn: Callable
    shapes: Sequence[tuple]
    low: float = -2.0
    high: float = 2.0
    away_from_zero: float = 0.0
    draw: Optional[Callable] = None
    order: int = 2
    label: str = ""
    cpu_only: str = ""  # why the op runs on the CPU only; on another device it must raise DeviceError
    # float16 / bfloat16 (tests/test_low_precision.py): the error allowed is the dtype's eps times a base
    # times this condition factor (for ops whose result amplifies the inputs' rounding); or, in
    # ``low_refuses``, why the op refuses the low dtypes (it must raise DTypeError naming op and dtype)
    low_factor: float = 1.0
    low_refuses: str = ""
    low_reference: str = "float64"  # the dtype the low-precision result is compared with

    def refused_on(self, device):
        """Whether ``device`` is one this spec's op refuses (with a DeviceError, which the checks assert)."""
        return bool(self.cpu_only) and device != "cpu"

    @property
    def id(self):
        return f"{self.op_type}-{self.label}" if self.label else self.op_type

    def inputs(self, seed=0, dtype=np.float64):
        """Deterministic NumPy inputs for this spec (seeded by ``seed``), in ``dtype``."""
        rng = np.random.default_rng(seed)
        if self.draw is not None:
            return [np.asarray(a, dtype=dtype) for a in self.draw(rng)]
        arrays = []
        for shape in self.shapes:
            a = rng.uniform(self.low, self.high, size=shape)
            if self.away_from_zero:
                a = np.where(np.abs(a) < self.away_from_zero, np.sign(a + 1e-12) * self.away_from_zero + a, a)
            arrays.append(a.astype(dtype))
        return arrays


def _load_specs():
    specs = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        specs.extend(module.SPECS)
    return specs


ALL_SPECS = _load_specs()
