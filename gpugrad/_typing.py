"""The type aliases of gpugrad's annotations, for type checkers (mypy reads them; nothing at run time does).

Every annotated module imports them under ``if TYPE_CHECKING:`` and writes its annotations as strings
(``from __future__ import annotations``), so importing gpugrad never loads this module.

Example:
    >>> from gpugrad import _typing
    >>> _typing.TensorLike
    'Tensor | np.ndarray | np.generic | float | int | bool | list[Any] | tuple[Any, ...]'
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, TypeAlias  # noqa: F401 - Any, Sequence: named inside the aliases

if TYPE_CHECKING:
    import numpy as np  # noqa: F401
    from numpy.typing import DTypeLike as _NumpyDTypeLike  # noqa: F401

    from .backend import Device  # noqa: F401
    from .tensor import Tensor  # noqa: F401

# What an op takes as an operand: a Tensor, or what gg.tensor converts (an array, a number, nested lists or
# tuples; not a str, which is a Sequence too).
TensorLike: TypeAlias = "Tensor | np.ndarray | np.generic | float | int | bool | list[Any] | tuple[Any, ...]"
# An axis argument: one axis, several, or None for all.
Axis: TypeAlias = "int | Sequence[int] | None"
# A shape argument: one length or several.
Shape: TypeAlias = "int | Sequence[int]"
# A dtype argument: what numpy.dtype() takes (None for the default).
DTypeLike: TypeAlias = "_NumpyDTypeLike | None"
# A device argument: "cpu", "cuda", "cuda:1", a Device, or None for the default device.
DeviceLike: TypeAlias = "str | Device | None"
