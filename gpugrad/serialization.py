"""``save`` and ``load``: Variables (and what training needs to resume) to and from a NumPy ``.npz`` file.

A Module's variables are keyed by :meth:`gpugrad.nn.Module.named_variables`
paths (``layers.0.kernel``); a dict of Variables by its keys, a list or tuple
by positions (``0``, ``1``, ...), nested structures by joined paths. The file
is a plain ``.npz`` (one array per key) that NumPy reads without gpugrad;
it is written to exactly the path given (no suffix added), through a
temporary file beside it, so an interrupted save leaves the old file in place.

A checkpoint that resumes training also holds, beside the variables:

- the optimizer's state (``optimizer=``): its step count ``iterations``, which
  is also where its learning-rate schedule stands, and its slots (Adam's
  moments, SGD's velocity, ...), keyed ``__optimizer__/<variable path>/<slot>``;
- the state of every ``gg.random.Generator`` the model holds (a Dropout
  layer's own generator), and with ``random_state=True`` gpugrad's global one
  (``gg.random``, which Dropout without a seed and the initialisers draw from).

These live under the key ``__gpugrad__`` (a JSON text, as bytes) and the
``__optimizer__/`` keys; a file with neither (what gpugrad 0.1 wrote) loads as
before. Run, stop after epoch 5, build fresh objects, ``load`` and run 5
more, and the weights are the bits of a run of 10 straight (on the CPU; a GPU
generator's position cannot be saved, see :meth:`gpugrad.random.Generator.get_state`).

A file ``load`` cannot read (missing, a directory, empty, truncated,
corrupted, or not a checkpoint: a ``.npy``, a pickle, text, another zip)
raises :class:`gpugrad.CheckpointError` naming the path and the problem.

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
import json
import os
import threading
import zipfile
import zlib

import numpy as np

from . import _dtypes
from .errors import CheckpointError, DTypeError, ShapeError
from .tensor import Variable

__all__ = ["save", "load", "CheckpointError", "CheckpointKeyError"]

META_KEY = "__gpugrad__"  # JSON: the format version, the optimizer's and the generators' states
SLOT_PREFIX = "__optimizer__/"  # + "<variable path>/<slot name>": the optimizer's slot arrays
FORMAT = 2  # 1: variables only (no META_KEY), as gpugrad 0.1 wrote


class CheckpointKeyError(CheckpointError, KeyError):
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


def _named_generators(target):
    """``[(path, gg.random.Generator), ...]`` reachable from ``target`` through modules, lists and dicts."""
    from .nn.module import Module
    from .random import Generator

    found, seen = [], set()

    def walk(value, path):
        if isinstance(value, Generator):
            if id(value) not in seen:
                seen.add(id(value))
                found.append((path, value))
        elif isinstance(value, Module):
            if id(value) not in seen:
                seen.add(id(value))
                for name, attr in vars(value).items():
                    walk(attr, f"{path}.{name}" if path else name)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                walk(item, f"{path}.{i}" if path else str(i))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else str(key))

    walk(target, "")
    return found


def save(path, module_or_variables, optimizer=None, random_state=False):
    """Write every Variable of ``module_or_variables`` to the ``.npz`` file ``path``.

    ``optimizer``: also write its step count and slots, keyed by the paths of
    the variables they belong to (each must be among the variables saved).
    ``random_state``: also write gpugrad's global generator (``gg.random``).
    The generators the model holds (a seeded ``Dropout``'s) are always written.

    Example:
        >>> import os, tempfile, numpy as np
        >>> import gpugrad as gg
        >>> path = os.path.join(tempfile.mkdtemp(), "vars.npz")
        >>> gg.save(path, {"w": gg.Variable([1.0, 2.0]), "b": gg.Variable(0.5)})
        >>> sorted(np.load(path).files)
        ['b', 'w']
        >>> model, opt = gg.nn.Dense(2, 1, seed=0), gg.optimizers.Adam(0.1)
        >>> _ = opt.minimize(lambda: gg.sum(model(gg.ones((1, 2)))))
        >>> gg.save(path, model, optimizer=opt, random_state=True)
        >>> sorted(np.load(path).files)[:3]
        ['__gpugrad__', '__optimizer__/bias/m', '__optimizer__/bias/v']
    """
    named = _named(module_or_variables)
    arrays = {name: var.numpy() for name, var in named}
    meta = {}
    generators = {name: gen.get_state() for name, gen in _named_generators(module_or_variables)}
    if generators:
        meta["generators"] = generators
    if random_state:
        from . import random as _random

        meta["random"] = _random.get_state()
    if optimizer is not None:
        meta["optimizer"] = _optimizer_state(path, optimizer, named, arrays)
    bits = sorted(key for key, value in arrays.items() if _dtypes.is_bfloat16(value.dtype))
    if bits:  # .npy has no bfloat16 (it would read back as raw void): its bits go as uint16, named here
        meta["bfloat16"] = bits
        for key in bits:
            arrays[key] = arrays[key].view(np.uint16)
    if meta:
        arrays[META_KEY] = np.frombuffer(json.dumps({"format": FORMAT, **meta}).encode(), np.uint8)
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


def _optimizer_state(path, optimizer, named, arrays):
    """The optimizer's JSON entry; its slot arrays go into ``arrays`` under SLOT_PREFIX keys."""
    from .optimizers import Optimizer

    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"optimizer= takes a gg.optimizers.Optimizer, not {type(optimizer).__name__}")
    paths = {id(var): name for name, var in named}
    slots = {}
    for var, entry in optimizer._export_slots():
        name = paths.get(id(var))
        if name is None:
            raise CheckpointError(f"checkpoint {os.fspath(path)}: {optimizer.name} holds state for "
                                  f"{var._label()}, which is not among the variables saved; save the model "
                                  f"that holds it")
        slots[name] = sorted(entry)
        for slot, value in entry.items():
            arrays[f"{SLOT_PREFIX}{name}/{slot}"] = value
    entry = {"class": type(optimizer).__name__, "iterations": int(optimizer.iterations), "slots": slots}
    if hasattr(optimizer, "_extra_state"):  # state beyond slots and steps (LossScaleOptimizer's scale)
        entry["state"] = optimizer._extra_state()
    return entry


def load(path, module_or_variables=None, strict=True, optimizer=None, random_state=False):
    """Read ``path`` into the Variables of ``module_or_variables`` in place; returns it.

    Every value is checked before any is assigned. With ``strict`` (the
    default) a key the file lacks, or a key in the file that no variable has,
    raises :class:`~gpugrad.serialization.CheckpointKeyError` (a ``KeyError``) naming it; with
    ``strict=False`` both are skipped (a variable with no value is left as
    it is). A stored array whose shape differs from its variable's raises
    ``ShapeError`` naming both shapes. Values are cast to each variable's
    dtype and copied to its device. With no target, returns the file's
    variables as a dict of NumPy arrays.

    ``optimizer``: restore its step count and slots (it should be of the
    class that saved them); with ``strict``, a file written without an
    optimizer raises :class:`~gpugrad.serialization.CheckpointKeyError`. ``random_state``: restore
    gpugrad's global generator likewise. The generators the model holds are
    restored where the file has them (a file written before they were saved
    leaves them as they are). A training checkpoint loads into the model
    alone too: the optimizer's and the generators' entries are then unused.

    A file that cannot be read, or is not a checkpoint, raises
    :class:`gpugrad.CheckpointError` naming ``path`` and the problem.

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
        >>> gg.load(os.path.dirname(path))
        Traceback (most recent call last):
        ...
        gpugrad.errors.CheckpointError: checkpoint ...: a directory, not a checkpoint file
    """
    stored, meta = _read(path)
    variables = {key: value for key, value in stored.items() if not key.startswith(SLOT_PREFIX)}
    if module_or_variables is None:
        return variables
    named = _named(module_or_variables)
    keys = set(variables)
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
    for name, var in named:
        value = variables[name]
        if value.shape != var.shape:
            raise ShapeError(f"checkpoint {path}: {name!r} has shape {value.shape} in the file "
                             f"but the variable has shape {var.shape}")
        if not np.can_cast(value.dtype, var.dtype, "same_kind"):  # float values into an int variable
            raise DTypeError(f"checkpoint {path}: {name!r} holds {value.dtype} values but the variable "
                             f"is {var.dtype}; NumPy's same_kind casting refuses it")
    slots = None if optimizer is None else _checked_slots(path, optimizer, meta, stored, named, strict)
    generators = [(gen, meta["generators"][name]) for name, gen in _named_generators(module_or_variables)
                  if name in meta.get("generators", {})]
    if random_state and "random" not in meta and strict:
        raise CheckpointKeyError(f"checkpoint {path}: holds no gg.random state (it was saved without "
                                 f"random_state=True); pass strict=False to keep the current one")
    for name, var in named:
        var.assign(variables[name])  # cast to the variable's dtype, copied once onto its device
    if slots is not None:
        optimizer._import_slots(slots)
        optimizer.iterations = meta["optimizer"]["iterations"]
        if hasattr(optimizer, "_set_extra_state"):
            optimizer._set_extra_state(meta["optimizer"]["state"])
    try:
        for gen, state in generators:
            gen.set_state(state)
        if random_state and "random" in meta:
            from . import random as _random

            _random.set_state(meta["random"])
    except ValueError as exc:
        raise CheckpointError(f"checkpoint {path}: a random generator's state is unreadable: {exc}") from None
    return module_or_variables


def _checked_slots(path, optimizer, meta, stored, named, strict):
    """``[(variable, {slot: array}), ...]`` for ``optimizer._import_slots``, or None (nothing to restore)."""
    entry = meta.get("optimizer")
    if entry is None:
        if strict:
            raise CheckpointKeyError(f"checkpoint {path}: holds no optimizer state (it was saved without "
                                     f"optimizer=); pass strict=False to keep {optimizer.name}'s")
        return None
    if entry.get("class") != type(optimizer).__name__:
        raise CheckpointError(f"checkpoint {path}: holds the state of a {entry.get('class')} optimizer, "
                              f"not of a {type(optimizer).__name__}")
    by_path = dict(named)
    slots = []
    for name, slot_names in entry["slots"].items():
        var = by_path.get(name)
        if var is None:
            if strict:
                raise CheckpointKeyError(f"checkpoint {path}: the optimizer's state for {name!r} matches no "
                                         f"variable (pass strict=False to ignore)")
            continue
        values = {}
        for slot in slot_names:
            value = stored.get(f"{SLOT_PREFIX}{name}/{slot}")
            if value is None or value.shape != var.shape:
                raise CheckpointError(f"checkpoint {path}: the optimizer's slot {slot!r} of {name!r} is "
                                      f"{'missing' if value is None else f'of shape {value.shape}'}; "
                                      f"the variable has shape {var.shape}")
            values[slot] = value.astype(var.dtype, copy=False)
        slots.append((var, values))
    if hasattr(optimizer, "_check_extra_state"):
        try:
            optimizer._check_extra_state(entry.get("state"))
        except (ValueError, TypeError) as exc:
            raise CheckpointError(f"checkpoint {path}: {optimizer.name}'s state is unusable: {exc}") from None
    return slots


# --- reading a file, or saying why it is not a checkpoint -------------------------------------------

_KINDS = [(b"\x93NUMPY", "a single NumPy array (.npy), not a checkpoint (.npz, from gg.save)"),
          (b"\x80", "a Python pickle, not a checkpoint (.npz, from gg.save)")]


def _read(path):
    """``({key: NumPy array}, meta dict)`` of checkpoint ``path``; CheckpointError saying what is wrong."""
    shown = os.fspath(path)

    def bad(problem, cause=None):
        error = CheckpointError(f"checkpoint {shown}: {problem}")
        error.__cause__ = cause
        return error

    if os.path.isdir(shown):
        raise bad("a directory, not a checkpoint file")
    try:
        with open(shown, "rb") as f:
            head = f.read(8)
    except FileNotFoundError as exc:
        raise bad("no such file", exc) from exc
    except OSError as exc:
        raise bad(f"cannot be opened ({exc.strerror or exc})", exc) from exc
    if not head:
        raise bad("the file is empty (0 bytes)")
    if not head.startswith(b"PK"):
        kind = next((what for magic, what in _KINDS if head.startswith(magic)), None)
        if kind is None:
            text = all(32 <= b < 127 or b in b"\t\r\n" for b in head)
            kind = "a text file, not a checkpoint" if text else "not a checkpoint (not a .npz zip archive)"
        raise bad(kind)
    try:
        with zipfile.ZipFile(shown) as archive:
            members = archive.namelist()
        others = [m for m in members if not m.endswith(".npy")]
        if others or not members:
            what = f"holds {others[0]!r}, which is not a NumPy array" if others else "holds nothing"
            raise bad(f"a zip archive that is not a checkpoint: it {what}")
        with np.load(shown, allow_pickle=False) as archive:
            stored = {key: archive[key] for key in archive.files}
    except CheckpointError:
        raise
    except ValueError as exc:
        if "allow_pickle" not in str(exc):
            raise bad(f"truncated or corrupted (ValueError: {exc})", exc) from exc
        raise bad("holds Python objects (a pickled array), which gg.load does not unpickle", exc) from exc
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, zlib.error, KeyError) as exc:
        raise bad(f"truncated or corrupted ({type(exc).__name__}: {exc})", exc) from exc
    meta = {}
    if META_KEY in stored:
        try:
            meta = json.loads(stored.pop(META_KEY).tobytes().decode())
            if not isinstance(meta, dict) or not isinstance(meta.get("format"), int):
                raise ValueError("not a dict with a format number")
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad(f"its {META_KEY!r} entry is not gpugrad's ({exc})", exc) from None
        if meta["format"] > FORMAT:
            raise bad(f"written in format {meta['format']} by a newer gpugrad; this one reads up to {FORMAT}")
    for key in meta.get("bfloat16", ()):
        if key not in stored or stored[key].dtype != np.uint16:
            raise bad(f"its {META_KEY!r} entry names {key!r} as bfloat16 bits, but the file holds no such uint16 array")
        stored[key] = stored[key].view(_dtypes.bfloat16())  # DTypeError naming the extra without ml_dtypes
    return stored, meta


def _listing(names, limit=8):
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")
