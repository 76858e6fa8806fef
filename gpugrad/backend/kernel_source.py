"""The CUDA source of the fused kernels and the signatures declared in it.

Each file ``kernels/<name>.cu`` is valid CUDA on its own: a ``__device__``
function plus a header of ``//`` lines that declares the ``ElementwiseKernel``
built around it::

    // gpugrad-kernel: tanh_grad
    // Gradient of tanh from its output y: dx = dy (1 - y^2).
    // in_params:  T y, T dy
    // out_params: T dx
    // operation:  dx = tanh_grad(y, dy)
    // params:     (optional) in_params passed by keyword, e.g. alpha
    // dtypes:     T=float16,float32,float64

The files ship inside the wheel as ``gpugrad/kernels/``; in a source checkout
they are read from the top-level ``kernels/``. Pure Python: no CuPy needed.

Example:
    >>> k = load("tanh_grad")
    >>> k.in_params, k.out_params, k.operation
    ('T y, T dy', 'T dx', 'dx = tanh_grad(y, dy)')
"""
import dataclasses
import functools
import itertools
import re
from pathlib import Path

import numpy as np

from ..errors import GpugradError

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../gpugrad
_KEYS = ("in_params", "out_params", "operation", "params", "dtypes")
_PARAM = re.compile(r"^(raw\s+)?([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z_][A-Za-z0-9_]*)$")


class KernelSourceError(GpugradError, ValueError):
    """A kernel file that is missing or whose header cannot be read."""


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a kernel signature: ``[raw] type name``."""

    name: str
    type: str  # a one-letter placeholder such as T, or a dtype name such as float64
    raw: bool = False

    @property
    def placeholder(self):
        return len(self.type) == 1


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """A parsed kernel file: its CUDA text and the ElementwiseKernel it declares."""

    name: str
    path: Path
    source: str
    description: str
    in_params: str
    out_params: str
    operation: str
    keyword_params: tuple  # names of in_params passed by keyword (scalars, or broadcast arrays)
    dtypes: tuple  # ((placeholder, (dtype name, ...)), ...)

    @property
    def kernel_name(self):
        """The CUDA name of the generated ``__global__`` function."""
        return "gpugrad_" + self.name

    @functools.cached_property
    def inputs(self):
        return parse_params(self.in_params)

    @functools.cached_property
    def outputs(self):
        return parse_params(self.out_params)

    @functools.cached_property
    def array_inputs(self):
        """The in_params given positionally (arrays), in order."""
        return tuple(p for p in self.inputs if p.name not in self.keyword_params)

    def elementwise_kernel(self, cupy):
        """The ``cupy.ElementwiseKernel`` this file declares (construction compiles nothing).

        The GPU backend and the NVRTC check both build kernels here, so the
        check compiles exactly what the backend runs.
        """
        return cupy.ElementwiseKernel(self.in_params, self.out_params, self.operation,
                                      name=self.kernel_name, preamble=self.source)

    def bindings(self):
        """Every dtype assignment the kernel is used with: a list of ``{placeholder: np.dtype}``.

        Example:
            >>> [b["T"].name for b in load("tanh_grad").bindings()]
            ['float16', 'float32', 'float64']
        """
        letters = [letter for letter, _ in self.dtypes]
        choices = [[np.dtype(n) for n in names] for _, names in self.dtypes]
        return [dict(zip(letters, combo)) for combo in itertools.product(*choices)]

    def dtype_of(self, param, binding):
        """The NumPy dtype of ``param`` under ``binding``."""
        return binding[param.type] if param.placeholder else np.dtype(param.type)


def parse_params(text):
    """``"T x, raw L labels"`` as a tuple of :class:`Param`.

    Example:
        >>> parse_params("T x, raw L labels")[1]
        Param(name='labels', type='L', raw=True)
    """
    params = []
    for part in text.split(","):
        m = _PARAM.match(part.strip())
        if m is None:
            raise KernelSourceError(f"cannot read the parameter {part.strip()!r} in {text!r}")
        params.append(Param(m.group(3), m.group(2), bool(m.group(1))))
    return tuple(params)


def parse(text, name, path=None):
    """Read the header of kernel ``name`` from its source ``text``.

    Example:
        >>> src = '''// gpugrad-kernel: twice
        ... // in_params: T x
        ... // out_params: T y
        ... // operation: y = x + x
        ... // dtypes: T=float32
        ... '''
        >>> parse(src, "twice").operation
        'y = x + x'
    """
    where = path or name
    lines = text.splitlines()
    header = []
    for line in lines:
        stripped = line.strip()
        if not stripped.startswith("//"):
            break
        header.append(stripped[2:].strip())
    if not header or not header[0].startswith("gpugrad-kernel:"):
        raise KernelSourceError(f"{where}: the first line must be '// gpugrad-kernel: {name}'")
    declared = header[0].partition(":")[2].strip()
    if declared != name:
        raise KernelSourceError(f"{where}: declares kernel {declared!r} but the file is named {name!r}")
    fields, description = {}, []
    for line in header[1:]:
        key, sep, value = line.partition(":")
        if sep and key.strip() in _KEYS:
            fields[key.strip()] = value.strip()
        else:
            description.append(line)
    missing = [k for k in ("in_params", "out_params", "operation", "dtypes") if not fields.get(k)]
    if missing:
        raise KernelSourceError(f"{where}: the header does not declare {', '.join(missing)}")
    dtypes = []
    for item in fields["dtypes"].split():
        letter, _, names = item.partition("=")
        try:
            dtypes.append((letter, tuple(np.dtype(n).name for n in names.split(","))))
        except TypeError:
            raise KernelSourceError(f"{where}: unknown dtype in {item!r}") from None
    source = KernelSource(
        name=name, path=Path(path) if path else None, source=text, description=" ".join(description),
        in_params=fields["in_params"], out_params=fields["out_params"], operation=fields["operation"],
        keyword_params=tuple(fields.get("params", "").split()), dtypes=tuple(dtypes))
    _validate(source, where)
    return source


def _validate(k, where):
    names = [p.name for p in k.inputs + k.outputs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates or "i" in names:
        raise KernelSourceError(f"{where}: parameter names must be unique and not 'i': {names}")
    unknown = [n for n in k.keyword_params if n not in names[:len(k.inputs)]]
    if unknown:
        raise KernelSourceError(f"{where}: params {unknown} are not in in_params")
    letters = {letter for letter, _ in k.dtypes}
    for p in k.inputs + k.outputs:
        if p.placeholder and p.type not in letters:
            raise KernelSourceError(f"{where}: type {p.type!r} of {p.name!r} has no dtypes line entry")
        if not p.placeholder:
            try:
                np.dtype(p.type)
            except TypeError:
                raise KernelSourceError(f"{where}: unknown type {p.type!r} of {p.name!r}") from None


def kernels_dir():
    """The folder holding the ``.cu`` files: installed, else the source tree's.

    Example:
        >>> (kernels_dir() / "tanh_grad.cu").is_file()
        True
    """
    for candidate in (_PACKAGE_DIR / "kernels", _PACKAGE_DIR.parent / "kernels"):
        if candidate.is_dir() and any(candidate.glob("*.cu")):
            return candidate
    raise KernelSourceError(f"no kernels/ folder with .cu files next to {_PACKAGE_DIR}")


def names(directory=None):
    """The names of every kernel, sorted.

    Example:
        >>> "tanh_grad" in names()
        True
    """
    folder = Path(directory) if directory is not None else kernels_dir()
    return sorted(p.stem for p in folder.glob("*.cu"))


@functools.lru_cache(maxsize=None)
def _load(name, directory):
    path = Path(directory) / f"{name}.cu"
    if not path.is_file():
        raise KernelSourceError(f"no kernel {name!r}: {path} does not exist")
    return parse(path.read_text(), name, path)


def load(name, directory=None):
    """The parsed :class:`KernelSource` of kernel ``name`` (read once, then cached).

    Example:
        >>> load("div_grad").outputs[1].name
        'gy'
    """
    return _load(name, str(directory) if directory is not None else str(kernels_dir()))
