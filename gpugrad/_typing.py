"""The type aliases of gpugrad's annotations, for type checkers and documentation tools.

Every annotated module imports them under ``if TYPE_CHECKING:`` and writes its annotations as strings
(``from __future__ import annotations``), so importing gpugrad never loads this module; mypy reads it,
and docs/api/types.rst describes them for the API reference.

Example:
    >>> from gpugrad import _typing
    >>> _typing.Shape
    int | collections.abc.Sequence[int]
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import DTypeLike as _NumpyDTypeLike

from .backend import Device
from .tensor import Tensor

# What an op takes as an operand: a Tensor, or what gg.tensor converts (an array, a number, nested lists or
# tuples; not a str, which is a Sequence too).
TensorLike: TypeAlias = Tensor | np.ndarray | np.generic | float | int | bool | list[Any] | tuple[Any, ...]
# An axis argument: one axis, several, or None for all.
Axis: TypeAlias = int | Sequence[int] | None
# A shape argument: one length or several.
Shape: TypeAlias = int | Sequence[int]
# A dtype argument: what numpy.dtype() takes (None for the default).
DTypeLike: TypeAlias = _NumpyDTypeLike | None
# A device argument: "cpu", "cuda", "cuda:1", a Device, or None for the default device.
DeviceLike: TypeAlias = str | Device | None
