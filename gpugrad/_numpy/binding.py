"""How one NumPy call becomes one gpugrad call: NumPy's arguments bound to NumPy's signature, renamed
to the gpugrad op's, and refused where the op has no equivalent.

A :class:`Call` entry names the gpugrad function and how NumPy's parameter names map onto it. The
rules, in order, for each argument the caller gave (an argument left at NumPy's default is never seen):

- ``out``: None only (a tensor is immutable, there is no array to write into), else TypeError;
- a NumPy name mapped to ``DROP``: a parameter that changes nothing a tensor holds (``order`` of a
  result, ``subok``, ``optimize``, ``overwrite_input``), accepted and left out;
- a NumPy name mapped to ``only(v, ...)``: accepted when the value is one of those (NumPy's default and
  its equivalents), else TypeError naming it;
- ``dtype`` where the gpugrad op takes none: the array arguments are cast to it first, as NumPy
  accumulates in that dtype;
- otherwise the argument goes to the gpugrad parameter of the same (or the renamed) name; one the
  gpugrad op lacks is a TypeError naming it unless the value is NumPy's default.
"""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from ..tensor import Tensor

DROP = object()


class only:  # noqa: N801 - reads as a rule in the tables: only("constant")
    """A NumPy parameter accepted only with one of ``values`` (compared with ``==``), then left out."""

    __slots__ = ("values",)

    def __init__(self, *values):
        self.values = values

    def allows(self, value):
        return any(value is v or (type(value) is type(v) and value == v) or (isinstance(v, str) and value == v)
                   for v in self.values)


def qualname(func):
    """``numpy.linalg.norm`` for ``np.linalg.norm``: the name a message gives a NumPy function or ufunc."""
    if isinstance(func, np.ufunc):
        return f"numpy.{func.__name__}"
    module = getattr(func, "__module__", None) or "numpy"
    module = "numpy" if module.startswith("numpy._core") or module.startswith("numpy.lib") else module
    return f"{module}.{func.__name__}"


def refuse_out(name):
    raise TypeError(f"{name}(out=...): a gpugrad tensor is immutable, so there is no output array to write "
                    f"into; use the tensor {name} returns")


def no_out(out):
    """Whether ``out`` asks for nothing: None, or a tuple of Nones (how NumPy passes ufunc outputs)."""
    return out is None or (isinstance(out, tuple) and all(o is None for o in out))


_SIGNATURES: dict = {}

# NumPy's functions written in C, whose signature NumPy 1.26 does not expose (NumPy 2 does for most)
_C_SIGNATURES: dict[str, Callable[..., None]] = {
    "concatenate": lambda arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind": None,
    "where": lambda condition, x=None, y=None, /: None,
    "dot": lambda a, b, out=None: None,
    "vdot": lambda a, b, /: None,
    "inner": lambda a, b, /: None,
    "bincount": lambda x, /, weights=None, minlength=0: None,  # NumPy 2.2's is a builtin without one
}


def _signature(fn):
    sig = _SIGNATURES.get(fn)
    if sig is None:
        try:
            sig = inspect.signature(fn)
        except ValueError:
            sig = inspect.signature(_C_SIGNATURES[fn.__name__])
        _SIGNATURES[fn] = sig
    return sig


def cast_arrays(value, dtype):
    """``value`` (a tensor, an array, or a sequence of them) cast to ``dtype`` with gg.cast."""
    from ..ops.elementwise.control import cast
    from ..tensor import ensure_tensor

    if isinstance(value, (list, tuple)) and not _is_number_sequence(value):
        return type(value)(cast_arrays(v, dtype) for v in value)
    return cast(ensure_tensor(value), dtype)


def _is_number_sequence(value):
    return all(isinstance(v, (int, float, bool, np.generic)) for v in value)


class Call:
    """``np_func(...)`` as ``gg_func(...)``: ``renames`` maps NumPy's parameter names to gpugrad's (or to
    ``DROP`` / ``only(...)``)."""

    __slots__ = ("gg_func", "renames", "gg_params", "_plans")

    def __init__(self, gg_func, **renames):
        self.gg_func = gg_func
        self.renames = renames
        params = inspect.signature(gg_func).parameters
        self.gg_params = {name for name, p in params.items() if p.kind is not p.VAR_POSITIONAL}
        self._plans: dict = {}

    def _plan(self, np_func):
        """``(k, keywords)``: a call of at most ``k`` positional arguments and only ``keywords`` means the
        same to the gpugrad op as to NumPy (same names in the same places, no rule applies), so it goes
        straight through; ``np.sum(t, axis=0)`` costs no binding."""
        plain = inspect.Parameter.POSITIONAL_OR_KEYWORD
        ours = list(inspect.signature(self.gg_func).parameters.values())
        theirs = list(_signature(np_func).parameters.values())
        if not theirs or theirs[0].kind not in (plain, inspect.Parameter.POSITIONAL_ONLY):
            return 0, frozenset()
        by_name = {p.name: p for p in ours}

        def passes(p):
            q = by_name.get(p.name)
            return (q is not None and q.kind is plain and p.name not in self.renames
                    and p.name not in ("out", "dtype"))
        k = 1
        while k < min(len(theirs), len(ours)) and theirs[k].kind is plain and passes(theirs[k]) \
                and ours[k].name == theirs[k].name:
            k += 1
        return k, frozenset(p.name for p in theirs[1:] if p.kind is not p.POSITIONAL_ONLY and passes(p))

    def __call__(self, np_func, args, kwargs):
        plan = self._plans.get(np_func)
        if plan is None:
            plan = self._plans[np_func] = self._plan(np_func)
        if len(args) <= plan[0] and plan[1].issuperset(kwargs):
            return self.gg_func(*args, **kwargs)
        name = qualname(np_func)
        sig = _signature(np_func)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}(): {exc}") from None
        positional, keywords, dtype = [], {}, None
        first = True
        for pname, value in bound.arguments.items():
            kind = sig.parameters[pname].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                positional.extend(value)
                first = False
                continue
            items = value.items() if kind is inspect.Parameter.VAR_KEYWORD else ((pname, value),)
            for key, val in items:
                if val is np._NoValue:
                    continue
                if first or kind is inspect.Parameter.POSITIONAL_ONLY:
                    positional.append(val)  # the array argument(s): positional, whatever either side calls them
                    first = False
                    continue
                rule = self.renames.get(key, key)
                if key == "out":
                    if not no_out(val):
                        refuse_out(name)
                elif rule is DROP:
                    pass
                elif isinstance(rule, only):
                    if not rule.allows(val):
                        raise TypeError(f"{name}({key}={val!r}): gpugrad's {self.gg_func.__name__} has no "
                                        f"equivalent (it takes {key}={rule.values[0]!r} only)")
                elif key == "dtype" and "dtype" not in self.gg_params:
                    dtype = val
                elif rule in self.gg_params:
                    keywords[rule] = val
                else:
                    default = sig.parameters[key].default if key in sig.parameters else inspect.Parameter.empty
                    if default is inspect.Parameter.empty or not _same(val, default):
                        raise TypeError(f"{name}({key}=...): gpugrad's {self.gg_func.__name__} has no such "
                                        f"parameter; call gg.{self.gg_func.__name__} without it")
        if dtype is not None and positional:
            positional[0] = cast_arrays(positional[0], dtype)
        return self.gg_func(*positional, **keywords)


def _same(value, default):
    try:
        return value is default or bool(value == default)
    except (TypeError, ValueError):
        return False


def any_tensor(value):
    """Whether ``value`` is a tensor or a (nested) list or tuple holding one."""
    if isinstance(value, Tensor):
        return True
    return isinstance(value, (list, tuple)) and any(any_tensor(v) for v in value)
