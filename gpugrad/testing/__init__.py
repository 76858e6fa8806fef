"""What gpugrad's tests and ``gpugrad check`` share: the op spec table and the gradient check over it.

- :mod:`gpugrad.testing.op_specs`: one :class:`~gpugrad.testing.op_specs.OpSpec`
  per way of checking an op type; :data:`~gpugrad.testing.op_specs.ALL_SPECS`.
- :mod:`gpugrad.testing.check`: first-order float64 gradient check of every
  spec on every device, the engine of ``gpugrad check``.

Example:
    >>> from gpugrad.testing import ALL_SPECS, OpSpec
    >>> all(isinstance(spec, OpSpec) for spec in ALL_SPECS)
    True
"""
from .op_specs import ALL_SPECS, OpSpec

__all__ = ["ALL_SPECS", "OpSpec"]
