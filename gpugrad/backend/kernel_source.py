"""The CUDA source of the fused kernels and the signatures declared in it.

A kernel is a ``__device__`` function plus a header of ``//`` lines that
declares the ``ElementwiseKernel`` built around it::

    // gpugrad-kernel: div_grad
    // Gradient of x / y, both parts in one pass.
    // in_params:  T x, T y, T dy
    // out_params: T gx, T gy
    // operation:  div_grad(x, y, dy, gx, gy)
    // params:     (optional) in_params passed by keyword, e.g. alpha
    // dtypes:     T=float16,bfloat16,float32,float64

It is either a file ``kernels/<name>.cu`` (shipped inside the wheel as
``gpugrad/kernels/``; in a source checkout read from the top-level
``kernels/``), or generated from the expression of a hot gradient's declaration
(:func:`from_expression`, :func:`register`; see :mod:`gpugrad.ops.hot`). Every
kernel's source starts with :data:`PRELUDE` after its header: the compute type
``gpugrad_acc<T>::type`` and ``gpugrad_where``. Pure Python: no CuPy needed.

Example:
    >>> k = load("div_grad")
    >>> k.in_params, k.out_params, k.operation
    ('T x, T y, T dy', 'T gx, T gy', 'div_grad(x, y, dy, gx, gy)')
"""
import ast
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


PRELUDE = """#ifndef GPUGRAD_PRELUDE
#define GPUGRAD_PRELUDE
// gpugrad_acc<T>::type is the type a kernel computes in: float for float16, bfloat16
// and float32 storage (the 16-bit floats are widened once on load and rounded once,
// to nearest even, on store, as PyTorch's opmath_t), double for float64.
template <typename T> struct gpugrad_acc { typedef float type; };
template <> struct gpugrad_acc<double> { typedef double type; };
// where(c, a, b) of a kernel expression: a where c holds, else b (both are computed).
template <typename A> __device__ __forceinline__ A gpugrad_where(bool c, A a, A b) { return c ? a : b; }
#endif
"""
# The storage dtypes of every fused kernel's T (bfloat16 where ml_dtypes is installed).
FLOATS = "float16,bfloat16,float32,float64"
_generated: dict[str, str] = {}  # name -> source text of kernels generated from expressions


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
            >>> [b["T"].name for b in load("tanh_grad").bindings()]  # with ml_dtypes installed
            ['float16', 'bfloat16', 'float32', 'float64']
        """
        letters = [letter for letter, _ in self.dtypes]
        choices = [[dtype(n) for n in names if available(n)] for _, names in self.dtypes]
        return [dict(zip(letters, combo)) for combo in itertools.product(*choices)]

    def dtype_of(self, param, binding):
        """The NumPy dtype of ``param`` under ``binding``."""
        return binding[param.type] if param.placeholder else np.dtype(param.type)


def _dtype_name(name):
    """The NumPy name of dtype ``name``; ``bfloat16`` is known without ml_dtypes installed."""
    return "bfloat16" if name.strip() == "bfloat16" else np.dtype(name).name


def available(name):
    """Whether dtype ``name`` exists here: bfloat16 needs ``ml_dtypes`` (an optional extra).

    Example:
        >>> available("float16")
        True
    """
    if name != "bfloat16":
        return True
    try:
        import ml_dtypes  # noqa: F401 - registers nothing; its dtype is ml_dtypes.bfloat16
    except ImportError:
        return False
    return True


def dtype(name):
    """The NumPy dtype named ``name``, bfloat16 from ``ml_dtypes`` (ImportError without it).

    Example:
        >>> dtype("float16")
        dtype('float16')
    """
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


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
            dtypes.append((letter, tuple(_dtype_name(n) for n in names.split(","))))
        except TypeError:
            raise KernelSourceError(f"{where}: unknown dtype in {item!r}") from None
    if "GPUGRAD_PRELUDE" not in text:
        body = "\n".join(lines[len(header):])
        text = "\n".join(lines[:len(header)]) + "\n" + PRELUDE + body + ("\n" if not body.endswith("\n") else "")
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
        >>> (kernels_dir() / "div_grad.cu").is_file()
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
    if directory is not None:
        return sorted(p.stem for p in Path(directory).glob("*.cu"))
    return sorted({p.stem for p in kernels_dir().glob("*.cu")} | set(_generated))


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
    if directory is None and name in _generated:
        return _parse_generated(name)
    return _load(name, str(directory) if directory is not None else str(kernels_dir()))


@functools.lru_cache(maxsize=None)
def _parse_generated(name):
    return parse(_generated[name], name)


def register(name, text):
    """Add the generated kernel ``name`` with source ``text`` (see :func:`from_expression`).

    A name may be registered once, and not where ``kernels/<name>.cu`` exists.

    Example:
        >>> "square_grad" in names()  # registered by its declaration in gpugrad.ops.elementwise.math
        True
    """
    if name in _generated and _generated[name] != text or (kernels_dir() / f"{name}.cu").exists():
        raise KernelSourceError(f"kernel {name!r} is declared twice (a generated source and a file, or two sources)")
    parse(text, name)  # a header that does not read fails here, at import, naming the kernel
    _generated[name] = text


# Python names in a kernel expression and the CUDA they become (abs: fabs of the compute type)
_CUDA_CALLS = {"where": "gpugrad_where", "exp": "exp", "log": "log", "sqrt": "sqrt", "abs": "fabs",
               "cosh": "cosh", "sinh": "sinh"}
_CUDA_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.BitAnd: "&&", ast.BitOr: "||",
             ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


def expression_names():
    """The functions a kernel expression may call, beside + - * / and comparisons.

    Example:
        >>> expression_names()
        ['abs', 'cosh', 'exp', 'log', 'sinh', 'sqrt', 'where']
    """
    return sorted(_CUDA_CALLS)


def cuda_expression(expression, names):
    """Python expression ``expression`` over ``names`` as CUDA in the compute type ``A``.

    Numbers become ``A(...)`` so float math stays in float; ``&`` and ``|`` join
    comparisons. Anything else is refused with the part that is not allowed.

    Example:
        >>> cuda_expression("dy * (1 - y * y)", ["y", "dy"])
        '(dy * (A(1) - (y * y)))'
    """
    def emit(node):
        if isinstance(node, ast.BinOp) and type(node.op) in _CUDA_OPS:
            return f"({emit(node.left)} {_CUDA_OPS[type(node.op)]} {emit(node.right)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return f"(-{emit(node.operand)})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CUDA_OPS:
            return f"({emit(node.left)} {_CUDA_OPS[type(node.ops[0])]} {emit(node.comparators[0])})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CUDA_CALLS \
                and not node.keywords:
            return f"{_CUDA_CALLS[node.func.id]}({', '.join(emit(a) for a in node.args)})"
        if isinstance(node, ast.Name) and node.id in names:
            return node.id
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return f"A({node.value!r})"
        raise KernelSourceError(f"kernel expression {expression!r}: cannot write {ast.unparse(node)!r} in CUDA "
                                f"(numbers, {', '.join(names)}, + - * / & |, comparisons, {expression_names()})")

    return emit(ast.parse(expression, mode="eval").body)


def from_expression(name, description, inputs, expression, params=(), dtypes=FLOATS):
    """The source of a one-output kernel ``name`` computing Python ``expression`` of ``inputs``.

    ``inputs`` are the array names, ``params`` the keyword scalars (float64,
    converted to the compute type once). The result is rounded to the storage
    type once.

    Example:
        >>> print(from_expression("twice_grad", "Gradient of 2x.", ["x", "dy"], "2 * dy").splitlines()[2])
        // in_params:  T x, T dy
    """
    in_params = ", ".join([f"T {n}" for n in inputs] + [f"float64 {p}" for p in params])
    args = ", ".join(list(inputs) + list(params))
    header = [f"// gpugrad-kernel: {name}", f"// {description}", f"// in_params:  {in_params}",
              "// out_params: T dx", f"// operation:  dx = {name}({args})"]
    if params:
        header.append(f"// params:     {' '.join(params)}")
    header.append(f"// dtypes:     T={dtypes}")
    arguments = ", ".join([f"T {n}_" for n in inputs] + [f"double {p}_" for p in params])
    loads = ", ".join([f"{n} = {n}_" for n in inputs] + [f"{p} = A({p}_)" for p in params])
    body = [
        "template <typename T>",
        f"__device__ __forceinline__ T {name}({arguments}) {{",
        "    typedef typename gpugrad_acc<T>::type A;",
        f"    const A {loads};",
        f"    return T({cuda_expression(expression, list(inputs) + list(params))});",
        "}",
    ]
    return "\n".join(header) + "\n" + PRELUDE + "\n" + "\n".join(body) + "\n"
