"""``Module``: the base of layers and models; finds its Variables and sub-modules by walking its attributes.

A module's state is whatever its attributes hold: Variables, other Modules,
and lists, tuples and dicts of them, to any depth. Each Variable gets a path
from the attribute names, list indices and dict keys that lead to it (for
example ``layers.0.kernel``); :func:`gpugrad.save` keys a checkpoint by those
paths. A Variable or Module reachable twice is listed once, under the first
path found (attributes in assignment order).

Example:
    >>> import gpugrad as gg
    >>> class Affine(gg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = gg.Variable([2.0])
    ...         self.extra = {"shift": gg.Variable([1.0]), "count": gg.Variable([0.0], trainable=False)}
    ...     def forward(self, x):
    ...         return x * self.scale + self.extra["shift"]
    >>> m = Affine()
    >>> [name for name, _ in m.named_variables()]
    ['scale', 'extra.shift', 'extra.count']
    >>> len(m.trainable_variables), m(gg.tensor([3.0])).numpy().tolist()
    (2, [7.0])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._tracing import state as _trace_state
from ..tensor import Variable

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Module"]


# a Module's attributes that are its settings, not its state: never walked for Variables
_SETTINGS = frozenset({"training", "_trainable", "_frozen"})


def _join(prefix, name):
    return f"{prefix}.{name}" if prefix else str(name)


def _walk(value, path, found, seen, modules):
    """Collect (path, Variable) into ``found`` and sub-modules into ``modules``, depth first."""
    if isinstance(value, Variable):
        if id(value) not in seen:
            seen.add(id(value))
            found.append((path, value))
    elif isinstance(value, Module):
        if id(value) in seen:
            return
        seen.add(id(value))
        modules.append((path, value))
        for name, attr in vars(value).items():
            if name not in _SETTINGS:
                _walk(attr, _join(path, name), found, seen, modules)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, _join(path, i), found, seen, modules)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, _join(path, key), found, seen, modules)


def _variables(value, found, seen):
    """Append the Variables reachable from ``value`` to ``found``, in :func:`_walk`'s order, without paths.

    The optimizer asks for ``trainable_variables`` on every step: this walk
    skips building path strings and recursing into plain attributes.
    """
    if isinstance(value, Variable):
        if id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    elif isinstance(value, Module):
        if id(value) not in seen:
            seen.add(id(value))
            for name, attr in vars(value).items():
                if isinstance(attr, _HOLDERS) and name not in _SETTINGS:
                    _variables(attr, found, seen)
    elif isinstance(value, dict):
        for item in value.values():
            if isinstance(item, _HOLDERS):
                _variables(item, found, seen)
    else:  # list or tuple
        for item in value:
            if isinstance(item, _HOLDERS):
                _variables(item, found, seen)


def _own_variables(value, found):
    """Append the Variables ``value`` holds without going through another Module (a module's own)."""
    if isinstance(value, Variable):
        found.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _own_variables(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _own_variables(item, found)


def named_variables_of(structure):
    """``[(path, Variable), ...]`` of a Module, a Variable, or a list/tuple/dict of them (nested).

    Example:
        >>> import gpugrad as gg
        >>> [p for p, _ in named_variables_of({"w": gg.Variable(1.0), "b": [gg.Variable(2.0)]})]
        ['w', 'b.0']
    """
    found, modules = [], []
    _walk(structure, "", found, set(), modules)
    return found


class Module:
    """Base class of layers and models: ``__call__`` runs ``forward``; Variables are found, not registered.

    ``training`` is True after construction; :meth:`train` and :meth:`eval`
    set it on the module and every sub-module (layers such as Dropout and
    BatchNorm read it). ``trainable = False`` freezes the module and every
    sub-module (Keras' ``layer.trainable``).
    """

    training = True  # also the default of subclasses that skip Module.__init__
    _trainable = True
    _frozen: tuple[Variable, ...] = ()  # the Variables `trainable = False` made non-trainable here

    def __init__(self) -> None:
        self.training = True

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _trace_state.active:  # a gg.function's trace reads this module: its replays guard its attributes
            _trace_state.read_module(self)
        return self.forward(*args, **kwargs)

    # --- what the module holds ---------------------------------------------------
    def _collect(self):
        found, modules = [], []
        _walk(self, "", found, set(), modules)
        return found, modules

    def named_variables(self) -> list[tuple[str, Variable]]:
        """``[(path, Variable), ...]`` of every Variable reachable from this module."""
        return self._collect()[0]

    def _variables(self):
        found = []
        _variables(self, found, set())
        return found

    @property
    def variables(self) -> list[Variable]:
        """Every Variable of this module and its sub-modules, trainable or not."""
        return self._variables()

    @property
    def trainable_variables(self) -> list[Variable]:
        """The Variables an optimizer updates (``trainable=True``); none while the module is frozen.

        Example:
            >>> import gpugrad as gg
            >>> layer = gg.nn.Dense(3, 2, seed=0)
            >>> [tuple(v.shape) for v in layer.trainable_variables]
            [(3, 2), (2,)]
        """
        if not self._trainable:
            return []
        return [v for v in self._variables() if v.trainable]

    @property
    def non_trainable_variables(self) -> list[Variable]:
        """Variables that are state, not parameters (e.g. BatchNorm's running statistics); all of them
        while the module is frozen."""
        if not self._trainable:
            return self._variables()
        return [v for v in self._variables() if not v.trainable]

    @property
    def trainable(self) -> bool:
        """Whether the module trains; ``False`` freezes it and every sub-module, as Keras' ``layer.trainable``.

        Freezing sets ``trainable = False`` on each Variable that was trainable, so a
        tape no longer watches it on its own, ``minimize(var_list=None)`` and
        :attr:`trainable_variables` leave it out; ``trainable = True`` gives
        back exactly those (a Variable made non-trainable, such as BatchNorm's
        running statistics, stays so). A Variable passed in ``var_list`` is
        still updated: an explicit list wins, as in Keras.

        Example:
            >>> import gpugrad as gg
            >>> model = gg.nn.Sequential(gg.nn.Dense(2, 2, seed=0), gg.nn.Dense(2, 1, seed=1))
            >>> model.layers[0].trainable = False
            >>> len(model.trainable_variables), model.layers[0].kernel.trainable
            (2, False)
            >>> model.trainable = True  # the model and every layer
            >>> len(model.trainable_variables), model.layers[0].trainable
            (4, True)
        """
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        value = bool(value)
        for m in self.modules():
            if value:
                for v in m._frozen:
                    v.trainable = True
                m._frozen = ()
            else:
                own: list[Variable] = []
                for name, attr in vars(m).items():
                    if name not in _SETTINGS:
                        _own_variables(attr, own)
                frozen = [v for v in own if v.trainable]
                for v in frozen:
                    v.trainable = False
                m._frozen = m._frozen + tuple(frozen)
            m._trainable = value

    def named_modules(self) -> list[tuple[str, Module]]:
        """``[(path, Module), ...]``: this module (path ``''``) and every sub-module, depth first."""
        return self._collect()[1]

    def modules(self) -> list[Module]:
        """This module and every sub-module."""
        return [m for _, m in self._collect()[1]]

    @property
    def submodules(self) -> list[Module]:
        """Every sub-module, not counting this one."""
        return self.modules()[1:]

    # --- training / evaluation ----------------------------------------------------
    def train(self, mode: bool = True) -> Self:
        """Set ``training`` to ``mode`` on this module and every sub-module; returns self.

        Example:
            >>> import gpugrad as gg
            >>> model = gg.nn.Sequential(gg.nn.Dense(2, 2, seed=0), gg.nn.Dropout(0.5))
            >>> model.eval().layers[1].training, model.train().layers[1].training
            (False, True)
        """
        mode = bool(mode)
        for m in self.modules():
            m.training = mode
        return self

    def eval(self) -> Self:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def __repr__(self) -> str:
        children = [(name, m) for name, m in vars(self).items() if isinstance(m, Module)]
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in children]
        return f"{type(self).__name__}(\n" + "\n".join(lines) + "\n)"

    def extra_repr(self) -> str:
        """The text inside this module's ``repr`` parentheses (layers override it)."""
        return ""


_HOLDERS = (Variable, Module, list, tuple, dict)  # what may hold a Variable (read by _variables)
