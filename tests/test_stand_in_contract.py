"""The CuPy stand-in (``tests/stand_in_cupy``) held to the real CuPy 14.2.

``tests/test_gpu_paths_on_host.py`` runs gpugrad's GPU tests on the stand-in.
That is worth something only while the stand-in does what the real CuPy does,
so it is tied to the real one three ways:

1. Names. The stand-in forwards to NumPy only the names in
   ``tests/stand_in_cupy/cupy_14.2.0_names.txt``; what it defines itself must
   be in that list too. :func:`test_names_file_is_the_real_cupy_s` checks the
   list against the real CuPy 14.2.0.
2. What gpugrad asks for. The GPU run records every lookup and call that
   gpugrad and its tests make on the stand-in (``GPUGRAD_STAND_IN_RECORD``, see
   ``tests/stand_in_cupy/cupy/_record.py``) and must match
   ``tests/stand_in_cupy/api_used.txt`` exactly, so the list cannot go stale.
   Here each entry is checked against the real CuPy: the attribute exists (or,
   for a ``!`` entry, does not), and each call binds to the real signature
   (``inspect.signature``, or the signature line Cython puts first in a
   docstring; ufuncs by ``nin``/``nargs`` and their three keywords).
3. Behaviour. Where CuPy documents or computes a difference from NumPy
   (``docs/source/user_guide/difference.rst`` and CuPy's sources at v14.2.0)
   that gpugrad could meet, the stand-in computes as CuPy; the tests at the end
   pin each one, or the difference the stand-in cannot show.

The checks against the real CuPy need it importable (the ``kernelcheck``
extra; no GPU: only introspection). Without it they skip saying so, and fail
under ``GPUGRAD_REQUIRE_KERNELCHECK=1`` (CI). The behaviour pins run everywhere.
"""
import importlib
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import API_FILE, api_file_lines, skip_or_fail

ROOT = Path(__file__).resolve().parent.parent
STAND_IN = ROOT / "tests" / "stand_in_cupy"
NAMES_FILE = STAND_IN / "cupy_14.2.0_names.txt"
CUPY_VERSION = "14.2.0"

# The real CuPy's namespaces the stand-in stands in for: a module's public names, a class's names and dunders.
NAMESPACES = ("cupy", "cupy.ndarray", "cupy.ufunc", "cupy.ElementwiseKernel", "cupy.random",
              "cupy.random.RandomState", "cupy.cuda", "cupy.cuda.Device", "cupy.cuda.runtime", "cupy.cuda.memory",
              "cupy.cuda.MemoryPool", "cupy.cuda.MemoryPointer", "cupy.cuda.memory.OutOfMemoryError", "cupy.cuda.nccl",
              "cupy.cuda.nccl.NcclCommunicator", "cupy.lib",
              "cupy.lib.stride_tricks", "cupy.linalg", "cupyx", "cupyx.scipy", "cupyx.scipy.special")

# Keyword arguments a real ``**kwargs`` takes, from CuPy 14.2's sources (``cupy/_core/_kernel.pyx``).
KWARGS_TAKEN = {
    "cupy.ElementwiseKernel.__call__": {"size", "stream", "block_size"},
    "cupy.ElementwiseKernel": {"options", "loop_prep", "after_loop"},
}
UFUNC_KEYWORDS = {"out", "dtype", "casting"}  # cupy.ufunc.__call__ pops these and refuses any other


# --- the real CuPy -----------------------------------------------------------------

def real_cupy():
    """The real CuPy module, or skip (fail in CI) saying why not."""
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - any broken install is a reason to skip
        skip_or_fail(f"the real CuPy is not importable ({exc}): pip install -e '.[kernelcheck]'")
    if "stand-in" in cupy.__version__:
        pytest.fail("this process imported the stand-in as cupy: it must run without tests/stand_in_cupy on the path")
    return cupy


def resolve(qualname):
    """The real CuPy object at ``qualname`` (``cupy.ndarray.astype``) and the object holding it."""
    parts = qualname.split(".")
    obj = importlib.import_module(parts[0])
    parent = None
    for i, part in enumerate(parts[1:], 1):
        parent = obj
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if inspect.isclass(obj) and f"~{obj.__name__}.{part} (" in (obj.__doc__ or ""):
                return _DocumentedAttribute(qualname), parent  # an instance attribute its class documents
            obj = importlib.import_module(".".join(parts[:i + 1]))  # a submodule not yet imported
    return obj, parent


class _DocumentedAttribute:
    """An attribute each instance has, set by its class's ``__init__`` and listed in the class's docstring
    ("Attributes: ~Stream.ptr (intptr_t): Raw stream handle."), so ``getattr`` on the class cannot show it."""

    def __init__(self, qualname):
        self.qualname = qualname


def real_cupy_names():
    """Every name of :data:`NAMESPACES` in the real CuPy, as the lines of the names file."""
    lines = set()
    for namespace in NAMESPACES:
        obj, _ = resolve(namespace)
        for name in dir(obj):
            if isinstance(obj, types.ModuleType):
                if name.startswith("_") or isinstance(getattr(obj, name, None), types.ModuleType):
                    continue  # submodules are namespaces of their own
            elif name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            lines.add(f"{namespace}.{name}")
    return sorted(lines)


def write_names_file():
    """Regenerate the names file from the real CuPy (run by hand after a CuPy upgrade)."""
    NAMES_FILE.write_text("".join(line + "\n" for line in real_cupy_names()))


# --- the recorded API ---------------------------------------------------------------
# API_FILE is read and written by helpers in tests/conftest.py, which test_gpu_paths_on_host.py shares.

_CALL = re.compile(r"^([\w.]+)\((.*)\)$")


def read_api(lines):
    """``(present, absent, calls)`` of recorded entries: names, ``!`` names, ``(qualname, n_positional, keywords)``."""
    present, absent, calls = set(), set(), set()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _CALL.match(line)
        if m:
            args = [a for a in m.group(2).split(", ") if a]
            calls.add((m.group(1), args.count("_"), tuple(a[:-1] for a in args if a != "_")))
        elif line.startswith("!"):
            absent.add(line[1:])
        else:
            present.add(line)
    return present, absent, calls


# --- signatures of the real CuPy's callables ----------------------------------------

def _split_params(text):
    """``text`` split at its top-level commas (defaults may hold brackets and strings)."""
    parts, depth, quote, current = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def signature_from_text(params):
    """An ``inspect.Signature`` from a Cython signature line's parameters (``MemoryPointer src, size_t size``)."""
    kind, out = inspect.Parameter.POSITIONAL_OR_KEYWORD, []
    for part in _split_params(params.replace("\\*", "*")):  # reST escapes stars: \*\*kwargs
        if part == "/":
            out = [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY) for p in out]
            continue
        if part == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        head, has_default, _ = part.partition("=")
        name = head.split()[-1].split(":")[0]  # drop a Cython type in front, an annotation behind
        if name.startswith("**"):
            out.append(inspect.Parameter(name[2:], inspect.Parameter.VAR_KEYWORD))
        elif name.startswith("*"):
            out.append(inspect.Parameter(name[1:], inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
        else:
            default = None if has_default else inspect.Parameter.empty
            out.append(inspect.Parameter(name, kind, default=default))
    return inspect.Signature(out)


def real_signature(obj):
    """The signature of a real CuPy callable: Cython's docstring line (``name(params) -> type``), else inspect's."""
    first = (getattr(obj, "__doc__", None) or "").lstrip().split("\n", 1)[0]
    m = re.match(r"^[\w.]+\((.*)\)\s*(->.*)?$", first)
    if m:
        return signature_from_text(m.group(1))
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def call_problem(qualname, n_positional, keywords):
    """Why a recorded call cannot be made on the real CuPy, or ``None`` when it can."""
    cupy = sys.modules["cupy"]
    obj, parent = resolve(qualname)
    if isinstance(obj, cupy.ufunc):
        if not obj.nin <= n_positional <= obj.nargs:
            return f"ufunc with nin={obj.nin}, nargs={obj.nargs} called with {n_positional} positional arguments"
        extra = set(keywords) - UFUNC_KEYWORDS
        return f"ufunc keywords {sorted(extra)} (CuPy's ufuncs take {sorted(UFUNC_KEYWORDS)})" if extra else None
    sig = real_signature(obj)
    if sig is None:
        return "no signature to check it against"
    params = list(sig.parameters.values())
    method_of_class = inspect.isclass(parent) and not inspect.isclass(obj) and not isinstance(
        inspect.getattr_static(parent, qualname.rsplit(".", 1)[1], None), (staticmethod, classmethod))
    if params and params[0].name == "self" and not method_of_class:
        sig = sig.replace(parameters=params[1:])  # bound: Cython's line still names self
    n = n_positional + (1 if method_of_class else 0)
    try:
        sig.bind(*[None] * n, **{k: None for k in keywords})
    except TypeError as exc:
        return f"{exc} (real signature {sig})"
    var_keyword = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    named = {p.name for p in sig.parameters.values()}
    taken = KWARGS_TAKEN.get(qualname)
    if var_keyword and taken is not None and set(keywords) - named - taken:
        return f"keywords {sorted(set(keywords) - named - taken)}: its **kwargs takes only {sorted(taken)}"
    return None


# --- 1. names -------------------------------------------------------------------------

def test_names_file_is_the_real_cupy_s():
    cupy = real_cupy()
    if cupy.__version__ != CUPY_VERSION:
        skip_or_fail(f"the names file lists CuPy {CUPY_VERSION}'s names; CuPy {cupy.__version__} is installed")
    listed = set(NAMES_FILE.read_text().split())
    real = set(real_cupy_names())
    assert listed == real, (
        f"{NAMES_FILE.name} differs from the real CuPy: missing {sorted(real - listed)[:20]}, "
        f"not in CuPy {sorted(listed - real)[:20]}; regenerate with "
        "python -c 'from tests.test_stand_in_contract import write_names_file; write_names_file()'")


def stand_in_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("GPUGRAD_DEVICE", "GPUGRAD_STAND_IN_RECORD")}
    env.update(PYTHONPATH=os.pathsep.join([str(STAND_IN), str(ROOT)]), CUPY_CACHE_DIR=str(tmp_path / "cupy"),
               GPUGRAD_STAND_IN_CUPY="1")
    return env


def in_stand_in(code, tmp_path):
    """Run ``code`` in a process whose ``cupy`` is the stand-in; returns its stdout."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=stand_in_env(tmp_path), cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


STAND_IN_DEFINES = """
    import json, sys, types
    import cupy, cupy.random, cupy.cuda, cupy.cuda.nccl, cupy.lib.stride_tricks, cupyx.scipy.special
    namespaces = {NAMESPACES!r}
    found = {{}}
    for namespace in namespaces:
        parts = namespace.split(".")
        obj = sys.modules[parts[0]]
        for part in parts[1:]:
            obj = getattr(obj, part)
        if isinstance(obj, types.ModuleType):
            names = [n for n, v in vars(obj).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)]
        else:  # a class: the names it defines itself
            names = [n for n in vars(obj) if not n.startswith("_") or (n.startswith("__") and n.endswith("__"))]
        found[namespace] = sorted(names)
    print(json.dumps(found))
"""
# Python's and the stand-in's own machinery in a class's dict, not CuPy's API
NOT_API = {"__module__", "__qualname__", "__dict__", "__weakref__", "__doc__", "__getattribute__", "__getattr__",
           "__init__", "__annotations__", "__static_attributes__", "__firstlineno__"}


def test_stand_in_defines_only_what_real_cupy_has(tmp_path):
    """Every public name the stand-in defines itself (not forwarded) is one the real CuPy 14.2 has."""
    found = json.loads(in_stand_in(STAND_IN_DEFINES.format(NAMESPACES=NAMESPACES), tmp_path))
    listed = set(NAMES_FILE.read_text().split())
    extra = sorted(f"{ns}.{n}" for ns, names in found.items() for n in names
                   if n not in NOT_API and f"{ns}.{n}" not in listed)
    assert extra == [], f"the stand-in defines names the real CuPy {CUPY_VERSION} lacks: {extra}"


def test_stand_in_forwards_only_real_cupy_names(tmp_path):
    """NumPy names the real CuPy lacks are an AttributeError on the stand-in's module, arrays and ufuncs."""
    in_stand_in("""
        import operator, numpy as np, pytest, cupy
        a = cupy.arange(3.0)
        for name in ("fft", "busday_count", "nanpercentile", "ndenumerate", "asmatrix", "einsum_path", "errstate"):
            assert hasattr(np, name)
            with pytest.raises(AttributeError):
                getattr(cupy, name)
        for name in ("ctypes", "setflags", "getfield", "resize", "to_device", "__array_interface__"):
            assert hasattr(a._host, name)  # NumPy has it ...
            with pytest.raises(AttributeError):
                getattr(a, name)  # ... the real CuPy's ndarray does not
        with pytest.raises(AttributeError):
            cupy.add.signature
        with pytest.raises(TypeError):
            operator.index(cupy.asarray(1))  # CuPy arrays have no __index__
        assert isinstance(cupy.exp, cupy.ufunc) and cupy.exp is cupy.exp
        assert cupy.float32 is np.float32 and cupy.dtype is np.dtype  # CuPy re-exports NumPy's scalar types
    """, tmp_path)


# --- 2. what gpugrad asks for ---------------------------------------------------------

def test_api_file_reads():
    present, absent, calls = read_api(api_file_lines())
    assert present and calls, f"{API_FILE.name} holds no entries"
    assert read_api(["cupy.asarray", "!cupy.ndarray._data", "cupy.asarray(_, dtype=)", "cupy.where(_, _, _)"]) == (
        {"cupy.asarray"}, {"cupy.ndarray._data"}, {("cupy.asarray", 1, ("dtype",)), ("cupy.where", 3, ())})


def test_recorded_names_exist_in_real_cupy():
    """Each name gpugrad looked up exists in the real CuPy; each it probed and missed is missing there too."""
    real_cupy()
    present, absent, calls = read_api(api_file_lines())
    missing, found = [], []
    for qualname in sorted(present | {c[0] for c in calls}):
        try:
            resolve(qualname)
        except (AttributeError, ImportError):
            missing.append(qualname)
    for qualname in sorted(absent):
        try:
            resolve(qualname)
            found.append(qualname)
        except (AttributeError, ImportError):
            pass
    assert missing == [], f"gpugrad uses names the real CuPy lacks: {missing}"
    assert found == [], f"gpugrad probes names that the stand-in lacks but the real CuPy has: {found}"


def test_recorded_calls_bind_to_real_cupy_signatures():
    """Each call gpugrad made (positional count, keyword names) binds to the real CuPy callable's signature."""
    real_cupy()
    _, _, calls = read_api(api_file_lines())
    problems = []
    for qualname, n_positional, keywords in sorted(calls):
        try:
            problem = call_problem(qualname, n_positional, keywords)
        except (AttributeError, ImportError) as exc:
            problem = f"not in the real CuPy ({exc})"
        if problem:
            problems.append(f"{qualname}({n_positional} positional, {list(keywords)}): {problem}")
    assert problems == [], "calls the real CuPy would refuse:\n" + "\n".join(problems)


def test_call_problem_catches_what_real_cupy_refuses():
    """The signature check itself: it refuses what CuPy 14.2 refuses, and keeps what it takes."""
    real_cupy()
    assert call_problem("cupy.asarray", 1, ("dtype",)) is None
    assert call_problem("cupy.asarray", 1, ("like",)) is not None  # NumPy's keyword, not CuPy's
    assert call_problem("cupy.ndarray.astype", 1, ("copy",)) is None  # a Cython method: its docstring line
    assert call_problem("cupy.ndarray.max", 0, ("initial",)) is not None  # NumPy's max takes initial=
    assert call_problem("cupy.ndarray.item", 1, ()) is not None  # CuPy's item takes no index
    assert call_problem("cupy.exp", 1, ("out",)) is None
    assert call_problem("cupy.exp", 1, ("where",)) is not None  # CuPy's ufuncs have no where=
    assert call_problem("cupy.add", 1, ()) is not None
    assert call_problem("cupy.add.at", 3, ()) is None
    assert call_problem("cupy.ElementwiseKernel", 3, ("name", "preamble")) is None
    assert call_problem("cupy.ElementwiseKernel", 3, ("name", "shared_mem")) is not None
    assert call_problem("cupy.ElementwiseKernel.__call__", 4, ("stream",)) is None
    assert call_problem("cupy.ElementwiseKernel.__call__", 4, ("out",)) is not None
    assert call_problem("cupy.cuda.Device", 1, ()) is None
    assert call_problem("cupy.cuda.MemoryPointer.copy_from_device", 2, ()) is None
    assert call_problem("cupy.random.RandomState.standard_normal", 1, ("dtype",)) is None
    assert call_problem("cupy.clip", 1, ("min", "max")) is not None  # NumPy 2's min=/max= are not CuPy's


def test_real_cupy_facts_the_stand_in_relies_on():
    """What the stand-in copies from CuPy 14.2, checked on the real module where introspection can show it."""
    cupy = real_cupy()
    assert str(real_signature(cupy.clip)) == "(a, a_min, a_max, out=None)"
    assert str(real_signature(cupy.where)) == "(condition, x=None, y=None)"
    assert str(real_signature(cupy.ndarray.item)) == "(self)"
    assert "blocking" in real_signature(cupy.ndarray.get).parameters
    assert {n for n in dir(cupy.ndarray.flags) if not n.startswith("_")} == set()  # a getset: flags come per array
    assert not hasattr(cupy.ndarray, "__index__") and not hasattr(cupy.ndarray, "__imatmul__")
    assert hasattr(cupy.ndarray, "__copy__") and hasattr(cupy.ndarray, "__deepcopy__")
    for name in ("add", "subtract", "maximum", "minimum", "bitwise_and"):
        assert getattr(cupy, name)._scatter_op is not None  # ufunc.at exists for these ...
    assert cupy.multiply._scatter_op is None  # ... and not for the others
    assert isinstance(cupy.cuda.memory.OutOfMemoryError(10, 0), MemoryError)
    assert cupy.cuda.memory.OutOfMemoryError(10, 0)._size == 10  # gpugrad reads the request from _size
    assert isinstance(importlib.import_module("cupyx.scipy.special").erf, cupy.ufunc)
    nccl = importlib.import_module("cupy.cuda.nccl")  # the stand-in's NCCL copies these constants and types
    assert nccl.available, "cupy.cuda.nccl needs NCCL's wheel (nvidia-nccl-cu13, in the kernelcheck extra)"
    assert (nccl.NCCL_SUM, nccl.NCCL_MAX, nccl.NCCL_MIN, nccl.NCCL_AVG) == (0, 2, 3, 4)
    assert (nccl.NCCL_UINT8, nccl.NCCL_INT64, nccl.NCCL_FLOAT16, nccl.NCCL_FLOAT32, nccl.NCCL_BFLOAT16) == (1, 4, 6, 7, 9)
    assert "bytes object" in nccl.get_unique_id.__doc__  # CuPy 14: bytes, no longer a tuple of ints
    assert "bytes commId" in nccl.NcclCommunicator.__doc__.split("\n", 1)[0]


# --- 3. behaviour: where CuPy differs from NumPy ----------------------------------------
# Each test runs in a process whose cupy is the stand-in, and shows the stand-in computing as CuPy 14.2
# does (NumPy's answer beside it), or pins a difference it cannot show. "difference.rst" is CuPy's
# "Differences between CuPy and NumPy" page; file names are CuPy's sources at v14.2.0.

def test_reductions_return_0d_arrays(tmp_path):
    """difference.rst, "Zero-dimensional array": CuPy's reductions return 0-d arrays, not NumPy scalars."""
    in_stand_in("""
        import numpy as np, cupy
        a = cupy.arange(6, dtype=np.int32).reshape(2, 3)
        for r in (a.sum(), cupy.sum(a), np.sum(a), a.max(), a.mean(), cupy.count_nonzero(a), a[1, 2], a.any()):
            assert type(r) is cupy.ndarray and r.shape == (), type(r)
        assert a.sum().dtype == np.int64 and a.mean().dtype == np.float64  # as NumPy: int32 sums in int64
        z = cupy.asarray(np.float32(2.5))  # 0-d in, 0-d out, dtype kept
        assert z.sum().dtype == np.float32 and z.sum().shape == () and (z * 2).shape == ()
        assert float(a.sum()) == 15.0 and a.sum().item() == 15 and type(a.sum().item()) is int
    """, tmp_path)


def test_out_of_bounds_integer_array_indices_wrap(tmp_path):
    """difference.rst, "Out-of-bounds indices": CuPy wraps integer-array indices around; NumPy raises.

    gpugrad checks index ranges itself off the CPU (``gpugrad/ops/array/indexing.py``, ``_check_range``), so
    the GPU tests exercise that check here rather than NumPy's IndexError.
    """
    in_stand_in("""
        import numpy as np, pytest, cupy
        a = cupy.arange(6.0).reshape(2, 3)
        assert a[:, [3, -4]].tolist() == [[0.0, 2.0], [3.0, 5.0]]  # 3 % 3, -4 % 3
        assert a[cupy.asarray([2])].tolist() == [[0.0, 1.0, 2.0]] and a[np.array([-3])].tolist() == [[3.0, 4.0, 5.0]]
        assert cupy.take(cupy.arange(3), [5, -1]).tolist() == [2, 2] and a.take([7]).tolist() == [1.0]
        assert cupy.take_along_axis(a, cupy.asarray([[4], [0]]), 1).tolist() == [[1.0], [3.0]]
        x = cupy.zeros(3)
        x[[1, 3]] = 10.0  # the example of difference.rst
        assert x.tolist() == [10.0, 10.0, 0.0]
        cupy.add.at(x, cupy.asarray([4]), 1.0)
        assert x.tolist() == [10.0, 11.0, 0.0]
        with pytest.raises(IndexError):
            a[2]  # a plain integer out of range is an error in CuPy too
        with pytest.raises(IndexError):
            np.arange(3)[[3]]  # NumPy
    """, tmp_path)


def test_duplicate_indices_writing_different_values_are_refused(tmp_path):
    """difference.rst, "Duplicate values in indices": CuPy stores an undefined one of the values, NumPy the last.

    The stand-in cannot be undefined, so it refuses (RuntimeError) what would differ; writes of one value,
    and ``add.at`` (a scatter-add: every value counts), are fine.
    """
    in_stand_in("""
        import numpy as np, pytest, cupy
        a = cupy.zeros(2)
        with pytest.raises(RuntimeError, match="undefined"):
            a[cupy.arange(10) % 2] = cupy.arange(10).astype(np.float32)
        a[cupy.asarray([0, 0, 1])] = 7.0
        a[[1, 1]] = cupy.asarray([3.0, 3.0])
        assert a.tolist() == [7.0, 3.0]
        cupy.add.at(a, cupy.asarray([0, 0]), cupy.asarray([1.0, 2.0]))
        assert a.tolist() == [10.0, 3.0]
        host = np.zeros(2); host[np.arange(10) % 2] = np.arange(10.0)
        assert host.tolist() == [8.0, 9.0]  # NumPy: the last
    """, tmp_path)


def test_float_to_integer_casts_saturate(tmp_path):
    """difference.rst, "Cast behavior from float to integer": CUDA saturates and maps NaN to 0; NumPy's result
    depends on the CPU (and warns). The stand-in casts as CUDA in ``astype``, ``asarray(dtype=)`` and ``a[i] = v``."""
    in_stand_in("""
        import warnings, numpy as np, cupy
        warnings.simplefilter("error")
        f = cupy.asarray([-1.0, np.inf, -np.inf, np.nan, 3.9, -3.9], dtype=np.float32)
        assert f.astype(np.uint32).tolist() == [0, 2**32 - 1, 0, 0, 3, 0]
        assert f.astype(np.int32).tolist() == [-1, 2**31 - 1, -2**31, 0, 3, -3]
        assert cupy.asarray(f, dtype=np.int64).tolist() == [-1, 2**63 - 1, -2**63, 0, 3, -3]
        i = cupy.zeros(2, dtype=np.int8)
        i[...] = cupy.asarray([300.0, np.nan])
        assert i.tolist() == [127, 0]
    """, tmp_path)


def test_clip_with_nan_bounds_keeps_the_element(tmp_path):
    """CuPy's clip kernel (``_routines_math.pyx``, ``cupy_clip``) compares, so a NaN bound compares false
    and leaves the element; NumPy propagates the NaN. A NaN element stays NaN in both.

    gpugrad's ``gg.clip`` (``gpugrad/ops/elementwise/arithmetic.py``) calls ``xp.clip``, so a NaN bound gives NaN on the
    CPU and the element on a GPU.
    """
    in_stand_in("""
        import numpy as np, cupy
        nan = float("nan")
        x = cupy.asarray([0.5, 2.0, nan], dtype=np.float32)
        assert np.array_equal(cupy.clip(x, nan, 1.0).get(), [0.5, 1.0, nan], equal_nan=True)
        assert np.array_equal(x.clip(0.0, nan).get(), [0.5, 2.0, nan], equal_nan=True)
        assert np.isnan(np.clip(np.array([0.5, 2.0]), nan, 1.0)).all()  # NumPy
        assert cupy.clip(x, 1.0, 0.0).get()[:2].tolist() == [0.0, 0.0]  # lo > hi: hi, as NumPy
        assert cupy.clip(x, None, 1.0).dtype == np.float32
        assert cupy.clip(cupy.arange(5), None, 2).tolist() == [0, 1, 2, 2, 2]
    """, tmp_path)


def test_ufuncs_take_cupy_arrays_and_scalars_only(tmp_path):
    """difference.rst, "Universal Functions only work with CuPy array or scalar"; ``cupy.ufunc.__call__`` takes
    ``out``, ``dtype`` and ``casting`` only (``_kernel.pyx``); NumPy's ``where=`` and ``order=`` are errors."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        a = cupy.arange(5)
        for bad in ([a], [1, 2, 3, 4, 5], (1,) * 5, None, np.arange(5), np.array(2)):
            with pytest.raises(TypeError, match="Unsupported type"):
                cupy.power(a, bad)
        with pytest.raises(TypeError):
            a + [1, 2, 3, 4, 5]
        assert cupy.power(a, 2).tolist() == [0, 1, 4, 9, 16] and cupy.add(a, np.int64(1)).tolist() == [1, 2, 3, 4, 5]
        for keyword in ({"where": a > 1}, {"order": "F"}, {"subok": True}):
            with pytest.raises(TypeError, match="Wrong arguments"):
                cupy.exp(a, **keyword)
        out = cupy.empty(5)
        assert cupy.exp(a, out=out) is out and cupy.exp(a, dtype=np.float32).dtype == np.float32
        with pytest.raises(TypeError, match="Wrong number of arguments"):
            cupy.add(a)
        assert (a < np.array(3)).tolist() == [True, True, True, False, False]  # comparisons take a NumPy 0-d
        assert (a == None).tolist() == [False] * 5  # noqa: E711 - CuPy compares with None elementwise
    """, tmp_path)


def test_ufunc_results_are_c_contiguous(tmp_path):
    """difference.rst, "Contiguity / Strides": CuPy's elementwise results are C-contiguous; NumPy keeps F order.
    Views (``.T``, slices) keep their strides in both. CuPy's ``flags`` has no ``writeable``."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        f = cupy.asarray(np.asfortranarray(np.ones((2, 3))))
        assert f.flags.f_contiguous and not f.flags.c_contiguous
        assert (f + f).flags.c_contiguous and cupy.exp(f).flags.c_contiguous and (f.T * 2).flags.c_contiguous
        assert f.T.flags.c_contiguous and (np.asfortranarray(np.ones((2, 3))) * 2).flags.f_contiguous  # NumPy
        with pytest.raises(AttributeError):
            f.flags.writeable
        assert f.flags["C_CONTIGUOUS"] is False and f.flags.owndata and not f.T.flags.owndata
    """, tmp_path)


def test_where_takes_a_cupy_condition_and_ufunc_operands(tmp_path):
    """``cupy.where`` (``_sorting/search.py``): ``condition.astype`` (a CuPy array only), then a ufunc on x and y:
    scalars are weak (NEP 50) as in NumPy 2, lists and NumPy arrays are errors."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        c = cupy.asarray([True, False])
        f = cupy.ones(2, dtype=np.float32)
        assert cupy.where(c, f, 0.0).dtype == np.float32 and cupy.where(c, 1, 2.5).dtype == np.float64
        assert cupy.where(c, f, np.float64(0)).dtype == np.float64
        assert cupy.where(c, cupy.arange(2, dtype=np.int8), 1).dtype == np.int8
        with pytest.raises(AttributeError):
            cupy.where(True, 1, 2)  # a Python bool has no astype
        with pytest.raises(TypeError):
            cupy.where(np.array([True, False]), f, 0.0)
        with pytest.raises(TypeError):
            cupy.where(c, [1, 2], 0)
        with pytest.raises(ValueError):
            cupy.where(c, f)
        assert [i.tolist() for i in cupy.where(c)] == [[0]]
    """, tmp_path)


def test_scalar_promotion_is_nep_50_in_both(tmp_path):
    """CuPy 14 follows NumPy 2's promotion (NEP 50, ``docs/source/upgrade.rst``): Python scalars are weak,
    NumPy scalars and 0-d arrays are not. The stand-in promotes with NumPy 2, so the two agree."""
    in_stand_in("""
        import numpy as np, cupy
        f = cupy.ones(2, dtype=np.float32)
        assert (f + 1.0).dtype == np.float32 and (f * 2).dtype == np.float32
        assert (f + np.float64(1.0)).dtype == np.float64 and (f + cupy.asarray(1.0)).dtype == np.float64
        i8 = cupy.ones(2, dtype=np.int8)
        assert (i8 + 1).dtype == np.int8 and (i8 + 1.5).dtype == np.float64
        assert cupy.result_type(f, 1.0) == np.float32
    """, tmp_path)


def test_asarray_dtypes_and_copies(tmp_path):
    """``cupy.asarray`` of Python scalars and lists takes NumPy's dtypes (CuPy builds them with NumPy on the
    host, ``_array_default``); object and string dtypes are refused (CuPy 14); a list of CuPy arrays is
    stacked; ``cupy.array`` copies a CuPy array, ``cupy.asarray`` does not."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        assert [cupy.asarray(v).dtype for v in (1.0, 1, True, 1j, 2**63)] == [
            np.float64, np.int64, np.bool_, np.complex128, np.uint64]
        assert cupy.asarray([1, 2.0]).dtype == np.float64 and cupy.asarray(1.0).shape == ()
        for bad in (["a"], [None, 1], np.array(["x"])):
            with pytest.raises(ValueError, match="Unsupported dtype"):
                cupy.asarray(bad)
        a = cupy.arange(2.0)
        assert cupy.asarray([a, a]).shape == (2, 2) and cupy.asarray(a) is a and cupy.array(a) is not a
        b = cupy.array(a); b[0] = 5.0
        assert a[0] == 0.0
    """, tmp_path)


def test_integer_division_by_zero_is_zero_and_nothing_warns(tmp_path):
    """CuPy's ``_floor_divide`` returns 0 for an integer divisor of 0 and ``remainder`` 0 (``carray.cuh``); NumPy
    does too, with a RuntimeWarning. A GPU kernel raises and warns nothing, so ``np.errstate`` does not
    reach CuPy: the stand-in computes quietly whatever NumPy's error state."""
    in_stand_in("""
        import warnings, numpy as np, cupy
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            a = cupy.asarray([7, -7, 0])
            assert (a // 0).tolist() == [0, 0, 0] and (a % 0).tolist() == [0, 0, 0]
            assert (cupy.asarray([1.0, -1.0]) / 0).tolist() == [float("inf"), float("-inf")]
            assert bool(cupy.isnan(cupy.log(cupy.asarray(-1.0))))
    """, tmp_path)


def test_float_floor_divide_and_remainder_are_cupy_s(tmp_path):
    """CuPy: ``floor(x / y)`` and ``x - floor(x / y) * y`` for floats (``carray.cuh``, ``_routines_math.pyx``);
    NumPy computes through ``fmod`` (Python's rules), so ``1.0 // 0.1`` is 10 on CuPy and 9 on NumPy."""
    in_stand_in("""
        import numpy as np, cupy
        one = cupy.asarray(1.0)
        assert float(one // 0.1) == 10.0 and float(np.floor_divide(1.0, 0.1)) == 9.0
        assert float(cupy.remainder(one, 0.1)) == 1.0 - 10.0 * 0.1 and abs(float(np.remainder(1.0, 0.1)) - 0.1) < 1e-9
        assert (cupy.asarray([7.0, -7.0], dtype=np.float32) // 2).tolist() == [3.0, -4.0]
        assert (cupy.asarray([7, -7]) // 2).tolist() == [3, -4] and (cupy.asarray([7, -7]) % 3).tolist() == [1, 2]
    """, tmp_path)


def test_integer_powers_take_negative_exponents(tmp_path):
    """CuPy's ``integral_power`` (``_routines_math.pyx``): a negative exponent gives 1 for 1, +-1 for -1 and 0
    otherwise; NumPy raises ValueError ("Integers to negative integer powers are not allowed")."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        assert (cupy.asarray([2, 1, -1, -1, 0]) ** cupy.asarray([-1, -3, -3, -2, 2])).tolist() == [0, 1, -1, 1, 0]
        assert (cupy.asarray([3, 2]) ** 2).tolist() == [9, 4]
        with pytest.raises(ValueError):
            np.array([2]) ** -1
    """, tmp_path)


def test_float_powers_are_pow_per_element(tmp_path):
    """CuPy's float ``power`` is ``pow(in0, in1)`` per element (``_routines_math.pyx``); NumPy's loop, given one
    exponent for every element, takes 0.5 as sqrt and -1 as a reciprocal (``-inf ** 0.5`` is nan, ``-0.0 ** 0.5``
    is -0.0)."""
    in_stand_in("""
        import numpy as np, cupy
        for dtype in (np.float32, np.float64):
            x = np.array([-np.inf, -0.0, 4.0], dtype)
            if np.lib.NumpyVersion(np.__version__) >= "2.3.0":  # NumPy's fast path, which the stand-in must not copy
                assert np.isnan(np.power(x, dtype(0.5))[0]) and np.signbit(np.power(x, dtype(0.5))[1])
            for exponent in (0.5, cupy.asarray(dtype(0.5)), cupy.asarray([0.5, 0.5, 0.5], dtype=dtype)):
                got = (cupy.asarray(x) ** exponent).tolist()
                assert got == [np.inf, 0.0, 2.0] and not np.signbit(got[1]), (dtype, exponent, got)
    """, tmp_path)


def test_ufunc_at_reduce_and_accumulate_as_cupy_has_them(tmp_path):
    """``cupy.ufunc.at`` exists for the scatter ops only, on the dtypes CUDA has atomics for
    (``_scatter_op_single``); ``reduce``/``accumulate`` for add and multiply, ``reduceat`` for add.

    gpugrad scatter-adds gradients with ``xp.add.at`` (``gpugrad/ops/array/indexing.py``, ``getitem_grad``):
    on a GPU that refuses int8, int16, bool and bfloat16 arrays.
    """
    in_stand_in("""
        import numpy as np, pytest, cupy
        for dtype in (np.int8, np.int16, np.bool_):
            with pytest.raises(TypeError, match="only supports"):
                cupy.add.at(cupy.zeros(3, dtype=dtype), cupy.asarray([0]), 1)
        with pytest.raises(TypeError, match="only supports"):
            cupy.subtract.at(cupy.zeros(3, dtype=np.float32), cupy.asarray([0]), 1)
        with pytest.raises(TypeError, match="only supports"):
            cupy.maximum.at(cupy.zeros(3, dtype=np.float16), cupy.asarray([0]), 1)
        with pytest.raises(NotImplementedError):
            cupy.multiply.at(cupy.ones(3), cupy.asarray([0]), 2.0)
        z = cupy.zeros(3, dtype=np.float16)
        cupy.add.at(z, cupy.asarray([0, 0, 2]), 1.0)
        np.add.at(z, np.array([1]), 1.0)  # NumPy's add.at on a CuPy array is CuPy's
        assert z.tolist() == [2.0, 1.0, 1.0]
        assert float(cupy.add.reduce(cupy.arange(4))) == 6
        assert cupy.multiply.accumulate(cupy.arange(1, 4)).tolist() == [1, 2, 6]
        for call in (lambda: cupy.maximum.reduce(cupy.arange(3)), lambda: cupy.subtract.accumulate(cupy.arange(3))):
            with pytest.raises(NotImplementedError):
                call()
    """, tmp_path)


def test_random_draws_take_float32_or_float64(tmp_path):
    """difference.rst, "Random methods support dtype argument": CuPy's ``RandomState`` draws float32 or float64
    (TypeError for another dtype, ``_check_and_get_dtype``); NumPy's have no ``dtype``. The stand-in draws
    NumPy's numbers, not CuPy's (the GPU tests that compare random draws skip, saying so), and offers
    ``RandomState`` only: CuPy's ``Generator`` is not NumPy's (its methods differ), and gpugrad does not use it."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        rs = cupy.random.RandomState(7)
        assert rs.standard_normal((3,), dtype=np.float32).dtype == np.float32
        assert rs.random_sample((2,), dtype=np.float64).dtype == np.float64 and rs.random_sample().shape == ()
        assert rs.randint(0, 5, size=(4,), dtype=np.int64).dtype == np.int64
        for draw in (rs.standard_normal, rs.random_sample):
            with pytest.raises(TypeError, match="float32 and float64"):
                draw((2,), dtype=np.float16)
        a, b = cupy.random.RandomState(3).random_sample((4,)), cupy.random.RandomState(3).random_sample((4,))
        assert (a == b).all()
        with pytest.raises(TypeError):
            np.random.RandomState(0).standard_normal(3, dtype=np.float32)  # NumPy's has no dtype
        with pytest.raises(AttributeError):
            cupy.random.default_rng
    """, tmp_path)


def test_get_item_and_conversions(tmp_path):
    """``ndarray.get(stream=None, order='C', out=None, blocking=True)`` copies to the host (0-d stays 0-d),
    ``item()`` takes no index (NumPy's does), ``operator.index`` fails (CuPy arrays have no ``__index__``),
    ``copy.copy`` copies the memory (``__copy__``), and ``a @= b`` rebinds (CuPy has no ``__imatmul__``)."""
    in_stand_in("""
        import copy, operator, numpy as np, pytest, cupy
        a = cupy.arange(4.0).reshape(2, 2)
        h = a.get()
        assert type(h) is np.ndarray and h.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        assert type(a.sum().get()) is np.ndarray and a.sum().get().shape == ()
        out = np.empty((2, 2)); assert a.get(out=out) is out and cupy.asnumpy(a, blocking=True).tolist() == h.tolist()
        assert a[1, 1].item() == 3.0 and float(a[0, 1]) == 1.0 and int(a[1, 0]) == 2
        with pytest.raises(TypeError):
            a.item(0)
        with pytest.raises(TypeError):
            operator.index(cupy.asarray(1))
        with pytest.raises(TypeError):
            range(cupy.asarray(3))
        c = copy.copy(a); c[0, 0] = 9.0
        assert float(a[0, 0]) == 0.0 and copy.deepcopy(a).tolist() == a.tolist()
        b, before = a, a
        b @= cupy.eye(2)
        assert b is not before
    """, tmp_path)


def test_numpy_functions_on_cupy_arrays_dispatch_to_cupy(tmp_path):
    """``ndarray.__array_function__`` and ``__array_ufunc__`` (``core.pyx``) run CuPy's function or ufunc of the
    same name; where CuPy (here: the stand-in) has none, NumPy raises TypeError. The stand-in has
    ``cupy.linalg`` (what gg.linalg calls) but no ``cupy.fft``, so ``np.fft.fft`` of a stand-in array fails
    where the real CuPy would run ``cupy.fft.fft``: gpugrad's GPU code must not call it (none does)."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        a = cupy.arange(6.0).reshape(2, 3)
        assert type(np.sum(a)) is cupy.ndarray and type(np.concatenate([a, a])) is cupy.ndarray
        assert np.exp(a).flags.c_contiguous and type(np.maximum(a, 1)) is cupy.ndarray
        assert type(np.linalg.norm(a)) is cupy.ndarray  # cupy.linalg.norm
        with pytest.raises(TypeError):
            np.fft.fft(a)
        with pytest.raises(TypeError):
            np.busday_count(a, a)  # no cupy.busday_count in CuPy 14.2
        with pytest.raises(TypeError, match="Implicit conversion"):
            np.asarray(a)
    """, tmp_path)


def test_broadcast_views_are_read_only_here_and_writable_in_cupy(tmp_path):
    """Pinned, not mimicked: CuPy arrays have no read-only flag, so writing into ``cupy.broadcast_to(...)``
    silently writes the shared memory; NumPy's broadcast views are read-only, and so are the stand-in's
    (a ValueError). A write the stand-in refuses this way would corrupt data on a GPU: gpugrad must not
    write into broadcast views (its GPU tests pass here, so none does on their paths)."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        b = cupy.broadcast_to(cupy.arange(3.0), (2, 3))
        with pytest.raises(ValueError, match="read-only"):
            b[0, 0] = 1.0
    """, tmp_path)


def test_elementwise_kernel_calls_follow_cupy(tmp_path):
    """``ElementwiseKernel.__call__`` (``_kernel.pyx``): in_params then optionally every output; keywords
    ``size``/``stream``/``block_size`` only; outputs must be CuPy arrays; one dtype per type placeholder and a
    named type's own dtype (``Type is mismatched``: nothing is cast). A kernel other than gpugrad's fused ones
    is beyond the stand-in (NotImplementedError)."""
    in_stand_in("""
        import numpy as np, pytest, cupy
        from gpugrad.backend import kernel_source
        k = kernel_source.load("tanh_grad").elementwise_kernel(cupy)  # T y, T dy -> T dx
        y32, y64 = cupy.zeros(3, dtype=np.float32), cupy.zeros(3, dtype=np.float64)
        with pytest.raises(TypeError, match="Type is mismatched"):
            k(y32, y64)
        with pytest.raises(TypeError, match="Type is mismatched"):
            k(y32, y32, cupy.empty(3, dtype=np.float64))  # an output binds T too
        with pytest.raises(TypeError, match="Wrong number of arguments"):
            k(y32)
        with pytest.raises(TypeError, match="Unsupported type"):
            k(y32, np.zeros(3, dtype=np.float32))
        with pytest.raises(TypeError, match="Output arguments must be cupy.ndarray"):
            k(y32, y32, np.empty(3, dtype=np.float32))
        with pytest.raises(TypeError, match="Wrong arguments"):
            k(y32, y32, out=y32)
        with pytest.raises(NotImplementedError):
            cupy.ElementwiseKernel("T x", "T y", "y = x", "my_kernel")
    """, tmp_path)


# --- float16 and bfloat16: the stand-in's type rules (stand_in_cupy/cupy/_dtypes.py) held to CuPy 14.2 ------------
# Each table the stand-in copies from CuPy's source is compared with the installed wheel, which needs no
# GPU to show it: a ufunc's ``.types``, the dtypes ``cupy.cuda.common._get_dtype_id`` (Thrust's type
# switch) accepts, ``cupy._core._dtype.to_cuda_dtype``. The rules the wheel keeps in compiled code
# (matmul's batched branch, partition's sort threshold) are pinned to CuPy's source lines in the
# stand-in's docstring; the last test checks that the stand-in raises and converts as they say.


def bfloat16_dtype():
    """ml_dtypes' bfloat16, or skip saying why not."""
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes: pip install 'gpugrad[bfloat16]'")
    return np.dtype(ml_dtypes.bfloat16)


def stand_in_tables():
    """The stand-in's ``_dtypes`` module, loaded by path (it needs only NumPy), not as ``cupy``."""
    spec = importlib.util.spec_from_file_location("stand_in_dtypes", STAND_IN / "cupy" / "_dtypes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_thrust_dtypes_are_the_ones_cupy_s_sorts_take():
    real_cupy()
    from cupy.cuda import common

    candidates = [np.dtype(c) for c in "?bBhHiIlLqQefdFD"] + [bfloat16_dtype()]
    taken = set()
    for dtype in candidates:
        try:
            common._get_dtype_id(dtype)
        except ValueError:
            continue
        taken.add(dtype.name)
    assert taken == set(stand_in_tables().THRUST_DTYPES)
    assert "bfloat16" not in taken


def test_where_clip_and_special_loops_are_the_wheel_s():
    real_cupy()
    import cupy._core._routines_math as routines_math
    import cupy._sorting.search as search
    import cupyx.scipy.special as special

    tables = stand_in_tables()
    assert tuple(search._where_ufunc.types) == tables.WHERE_TYPES
    assert tuple(routines_math._clip.types) == tables.CLIP_TYPES
    for name, types in tables.SPECIAL_TYPES.items():
        assert tuple(getattr(special, name).types) == types, name


def test_a_2d_bfloat16_product_is_a_cublas_bfloat16_gemm():
    """The 2-D path (``tensordot_core``) maps bfloat16 to ``CUDA_R_16BF``: CuPy multiplies it (in float32)."""
    real_cupy()
    from cupy._core._dtype import to_cuda_dtype
    from cupy_backends.cuda.api import runtime

    assert to_cuda_dtype(bfloat16_dtype(), True) == runtime.CUDA_R_16BF
    assert to_cuda_dtype(np.dtype(np.float16), True) == runtime.CUDA_R_16F


def test_the_batched_bfloat16_error_is_numpy_s_for_its_type_character():
    """CuPy's batched matmul sends a dtype outside 'efdFD' to its integer kernel, which spells the dtype
    by its character: bfloat16's 'E' is no NumPy type character."""
    char = bfloat16_dtype().char
    assert char == "E" and char not in "efdFD"
    with pytest.raises(TypeError, match="data type 'E' not understood"):
        np.dtype(char)


def test_resolution_takes_the_first_loop_bfloat16_casts_to_safely():
    tables = stand_in_tables()
    bfloat16 = bfloat16_dtype()
    assert tables.resolve(tables.WHERE_TYPES, [np.dtype(bool), bfloat16, bfloat16]) == np.float32
    assert tables.special_dtype("erf", np.float16) == np.float64
    assert tables.special_dtype("erf", bfloat16) == np.float32
    assert tables.special_dtype("erfc", np.float32) == np.float32


def test_partition_sorts_short_rows_as_cupy_s_thresholds():
    tables = stand_in_tables()
    assert tables.partition_sorts(31, 31, 3) and tables.partition_sorts(5000, 5000, 10)
    assert not tables.partition_sorts(100_000, 100_000, 10)
    assert tables.partition_sorts(100_000, 100_000, 2000)  # max_k >= 1024: sorts
    assert not tables.partition_sorts(5000, 5000, 10, arg=True)  # argpartition sorts only when sz < 1


def test_the_stand_in_follows_cupy_s_16_bit_rules(tmp_path):
    bfloat16_dtype()
    out = in_stand_in("""
        import cupy, cupyx.scipy.special as special, numpy as np, ml_dtypes
        bf = np.dtype(ml_dtypes.bfloat16)
        def raises(kind, fn):
            try:
                fn()
            except kind as exc:
                return str(exc)
            return "no error"
        a3, b2 = cupy.ones((2, 3, 4), bf), cupy.ones((4, 5), bf)
        print(raises(TypeError, lambda: cupy.matmul(a3, b2)))
        print(raises(TypeError, lambda: a3 @ b2))
        print((a3[0] @ b2).dtype, cupy.matmul(a3[0], b2).dtype)
        h = cupy.ones((2, 3, 4), np.float16)
        print(cupy.matmul(h, h.transpose(0, 2, 1)).dtype, cupy._dtypes.UPCASTS)
        print(raises(NotImplementedError, lambda: cupy.sort(a3)))
        print(raises(NotImplementedError, lambda: a3.argsort()))
        print(raises(NotImplementedError, lambda: cupy.partition(cupy.ones(100, bf), 3)))
        print(cupy.partition(cupy.ones(100_000, bf), 3).dtype, cupy.sort(h).dtype)
        print(raises(NotImplementedError, lambda: cupy.median(a3)))
        print(cupy.where(a3 > 0, a3, 0).dtype, cupy.clip(a3, 0, 1).dtype, cupy.where(h > 0, h, 0).dtype)
        print(special.erf(h).dtype, special.erfc(a3).dtype, special.erf(h.astype("f")).dtype)
    """, tmp_path).splitlines()
    assert out[0] == out[1] == "data type 'E' not understood"
    assert out[2] == "bfloat16 bfloat16"
    assert out[3] == "float16 [((2, 3, 4), (2, 4, 3))]"
    assert out[4] == out[5] == out[6] == out[8] == "Sorting arrays with dtype 'bfloat16' is not supported"
    assert out[7] == "bfloat16 float16"
    assert out[9] == "float32 float32 float16"
    assert out[10] == "float64 float32 float32"
