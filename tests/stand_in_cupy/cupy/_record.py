"""What the stand-in is asked for, recorded when ``GPUGRAD_STAND_IN_RECORD`` names a folder.

``tests/test_gpu_paths_on_host.py`` sets it for its run of the GPU tests and
compares what was recorded with ``tests/stand_in_cupy/api_used.txt``, which
``tests/test_stand_in_contract.py`` checks against the real CuPy. Each process
writes its own ``<pid>.txt`` at exit, one entry a line:

- ``cupy.asarray``: an attribute looked up and found;
- ``!cupy.ndarray._data``: one looked up and missing (``hasattr`` probes), so
  the real CuPy must lack it too;
- ``cupy.asarray(_, dtype=)``: a call, one ``_`` per positional argument and
  the keywords by name.

Only lookups and calls from outside the stand-in count: gpugrad, the tests,
and NumPy on their behalf (a NumPy function or ufunc given a stand-in array
counts as the CuPy one it dispatches to). Not recorded: Python's operators
(``a + b`` looks ``__add__`` up on the type; the contract test checks the
stand-in's own definitions instead) and a module's ``_`` names. With the variable unset nothing is watched and the
stand-in runs at full speed.
"""
import atexit
import os
import sys
import types

FOLDER = os.environ.get("GPUGRAD_STAND_IN_RECORD")
ON = bool(FOLDER)
_entries = set()
_PLAIN_CALLABLES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.BuiltinMethodType)
_OBJECT_NAMES = frozenset(dir(object)) | {"__dict__", "__wrapped__"}  # Python's own machinery, not CuPy's API


def _outside(depth):
    """True when the frame ``depth`` levels above the caller is not the stand-in's own code."""
    package = sys._getframe(depth + 1).f_globals.get("__name__", "").partition(".")[0]
    return package not in ("cupy", "cupyx", "importlib")  # importlib: the import system reading modules


def seen(entry, depth=1):
    """Record ``entry`` when the frame ``depth`` levels above the caller is outside the stand-in."""
    if ON and _outside(depth + 1):
        _entries.add(entry)


def call_entry(qualname, args, kwargs):
    return f"{qualname}({', '.join(['_'] * len(args) + [k + '=' for k in sorted(kwargs)])})"


def call(qualname, args, kwargs, depth=1):
    """Record a call of ``qualname`` when the frame ``depth`` levels above is outside the stand-in."""
    if ON and _outside(depth + 1):
        _entries.add(call_entry(qualname, args, kwargs))


def calls_recorded(qualname):
    """A decorator for a method (``__init__``, ``__call__``): its calls from outside are recorded as ``qualname``."""
    def decorate(method):
        if not ON:
            return method

        def recorded(self, *args, **kwargs):
            call(qualname, args, kwargs)
            return method(self, *args, **kwargs)
        recorded.__name__ = method.__name__
        return recorded
    return decorate


def _recording_calls(qualname, function):
    def recorded(*args, **kwargs):
        if _outside(1):
            _entries.add(call_entry(qualname, args, kwargs))
        return function(*args, **kwargs)
    recorded.__name__ = getattr(function, "__name__", qualname)
    return recorded


def _seen(qualname, name, value, depth):
    """``value`` of attribute ``name`` looked up ``depth`` frames above: recorded, and its calls too."""
    if name in _OBJECT_NAMES or not _outside(depth + 1):
        return value
    _entries.add(f"{qualname}.{name}")
    if isinstance(value, _PLAIN_CALLABLES):
        return _recording_calls(f"{qualname}.{name}", value)
    return value


def _missing(qualname, name, depth):
    # absent dunders are Python's and NumPy's protocol probes (__array_interface__ ...), not gpugrad's asks
    if not name.startswith("__") and _outside(depth + 1):
        _entries.add(f"!{qualname}.{name}")


def watch_module(module, qualname=None):
    """Record the lookups on ``module`` (its ``__getattr__`` fallback included)."""
    if not ON:
        return
    qualname = qualname or module.__name__

    class Watched(types.ModuleType):
        def __getattribute__(self, name):
            if name.startswith("_"):  # module machinery (__spec__ ...) and private names: not CuPy's API
                return super().__getattribute__(name)
            try:
                value = super().__getattribute__(name)
            except AttributeError:
                _missing(qualname, name, 1)
                raise
            return _seen(qualname, name, value, 1)

    module.__class__ = Watched


def watch_class(cls, qualname):
    """Record the lookups on instances of ``cls``; ``qualname(instance)`` names the instance, e.g. ``cupy.add``."""
    if not ON:
        return
    plain = object.__getattribute__
    fallback = getattr(cls, "__getattr__", None)

    def __getattribute__(self, name):
        try:
            value = plain(self, name)
        except AttributeError:
            if fallback is None:
                _missing(qualname(self), name, 1)
                raise
            try:
                value = fallback(self, name)
            except AttributeError:
                _missing(qualname(self), name, 1)
                raise
        return _seen(qualname(self), name, value, 1)

    cls.__getattribute__ = __getattribute__


def _write():
    if _entries:
        os.makedirs(FOLDER, exist_ok=True)
        with open(os.path.join(FOLDER, f"{os.getpid()}.txt"), "w") as f:
            f.write("".join(entry + "\n" for entry in sorted(_entries)))


if ON:
    atexit.register(_write)
