"""``save`` and ``load``: Variables to and from a NumPy ``.npz`` file, keyed by their paths.

A Module's variables are keyed by :meth:`gpugrad.nn.Module.named_variables`
paths (``layers.0.kernel``); a dict of Variables by its keys, a list or tuple
by positions (``0``, ``1``, ...), nested structures by joined paths. The file
is a plain ``.npz`` (one array per key) that NumPy reads without gpugrad;
it is written to exactly the path given (no suffix added), through a
temporary file beside it, so an interrupted save leaves the old file in place.

Example:
    >>> import os, tempfile
    >>> import gpugrad as gg
    >>> model = gg.nn.Dense(3, 2, seed=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> gg.save(path, model)
    >>> sorted(gg.load(path))
    ['bias', 'kernel']
    >>> copy = gg.load(path, gg.nn.Dense(3, 2, seed=1))
    >>> bool((copy.kernel.numpy() == model.kernel.numpy()).all())
    True
"""
import os
import threading

import numpy as np

from .errors import DTypeError, GpugradError, ShapeError
from .tensor import Variable

__all__ = ["save", "load", "CheckpointKeyError"]


class CheckpointKeyError(GpugradError, KeyError):
    """A checkpoint that lacks a variable's key, or holds keys no variable has (with ``strict``)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _named(target):
    from .nn.module import named_variables_of

    if isinstance(target, Variable):
        target = [target]
    named = named_variables_of(target)
    if not named:
        raise TypeError(f"expected a Module, a Variable, or a list/tuple/dict of Variables; "
                        f"found no Variable in {type(target).__name__}")
    return named


def save(path, module_or_variables):
    """Write every Variable of ``module_or_variables`` to the ``.npz`` file ``path``.

    Example:
        >>> import os, tempfile, numpy as np
        >>> import gpugrad as gg
        >>> path = os.path.join(tempfile.mkdtemp(), "vars.npz")
        >>> gg.save(path, {"w": gg.Variable([1.0, 2.0]), "b": gg.Variable(0.5)})
        >>> sorted(np.load(path).files)
        ['b', 'w']
    """
    arrays = {name: var.numpy() for name, var in _named(module_or_variables)}
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}.tmp"  # beside the target, so the rename is atomic
    try:
        with open(tmp, "wb") as f:  # open() honours the umask, as the final file should
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path, module_or_variables=None, strict=True):
    """Read ``path`` into the Variables of ``module_or_variables`` in place; returns it.

    Every value is checked before any is assigned. With ``strict`` (the
    default) a key the file lacks, or a key in the file that no variable has,
    raises :class:`CheckpointKeyError` (a ``KeyError``) naming it; with
    ``strict=False`` both are skipped (a variable with no value is left as
    it is). A stored array whose shape differs from its variable's raises
    ``ShapeError`` naming both shapes. Values are cast to each variable's
    dtype and copied to its device. With no target, returns the file's arrays
    as a dict of NumPy arrays.

    Example:
        >>> import os, tempfile
        >>> import gpugrad as gg
        >>> path = os.path.join(tempfile.mkdtemp(), "w.npz")
        >>> gg.save(path, [gg.Variable([1.0, 2.0])])
        >>> w = gg.Variable([0.0, 0.0])
        >>> gg.load(path, [w])[0].numpy().tolist()
        [1.0, 2.0]
        >>> gg.load(path, [gg.Variable([0.0])])
        Traceback (most recent call last):
        ...
        gpugrad.errors.ShapeError: checkpoint ...w.npz: '0' has shape (2,) in the file but the variable has shape (1,)
    """
    with np.load(os.fspath(path), allow_pickle=False) as stored:
        if module_or_variables is None:
            return {key: stored[key] for key in stored.files}
        named = _named(module_or_variables)
        keys = set(stored.files)
        missing = [name for name, _ in named if name not in keys]
        if missing and strict:
            raise CheckpointKeyError(
                f"checkpoint {path}: no value for {_listing(missing)}; it holds {_listing(sorted(keys))}")
        if strict:
            unexpected = sorted(keys - {name for name, _ in named})
            if unexpected:
                raise CheckpointKeyError(
                    f"checkpoint {path}: {_listing(unexpected)} match no variable (pass strict=False to ignore)")
        named = [(name, var) for name, var in named if name in keys]
        values = []
        for name, var in named:
            value = stored[name]
            if value.shape != var.shape:
                raise ShapeError(f"checkpoint {path}: {name!r} has shape {value.shape} in the file "
                                 f"but the variable has shape {var.shape}")
            if not np.can_cast(value.dtype, var.dtype, "same_kind"):  # float values into an int variable
                raise DTypeError(f"checkpoint {path}: {name!r} holds {value.dtype} values but the variable "
                                 f"is {var.dtype}; NumPy's same_kind casting refuses it")
            values.append(value)
    for (_, var), value in zip(named, values):
        var.assign(value)  # cast to the variable's dtype, copied once onto its device
    return module_or_variables


def _listing(names, limit=8):
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
