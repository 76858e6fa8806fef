"""Exception classes raised by gpugrad.

Each subclasses the built-in exception a Python user would catch for the same
fault, so ``except ValueError`` keeps working.

Example:
    >>> import gpugrad as gg
    >>> try:
    ...     gg.tensor([1.0, 2.0]) + gg.tensor([1.0, 2.0, 3.0])
    ... except ValueError as e:
    ...     print(type(e).__name__)
    ShapeError
"""


class GpugradError(Exception):
    """Base class of every gpugrad error."""


class ShapeError(GpugradError, ValueError):
    """Shapes that cannot be combined (broadcast, matmul, reshape, concat)."""


class DTypeError(GpugradError, TypeError):
    """A dtype an op cannot take, such as an integer source of a gradient."""


class DeviceError(GpugradError, ValueError):
    """An unknown device string, or tensors on two devices in one op."""


class DeviceUnavailableError(GpugradError, RuntimeError):
    """A device that is named correctly but cannot be used on this machine."""


class GradientError(GpugradError, RuntimeError):
    """A gradient that cannot be computed: no rule, a used tape, a bad rule result."""


class LookupGradientError(GradientError, LookupError):
    """An op type with no registered gradient."""


class IndexOutOfRangeError(GpugradError, IndexError):
    """An index past the end of the axis it indexes (getitem, take, gather)."""


class AnomalyError(GpugradError, FloatingPointError):
    """A NaN or Inf that ``gg.detect_anomaly()`` caught in an op's output or gradient."""
