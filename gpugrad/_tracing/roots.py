"""The functions a trace captures whole, each a *root*: its call, from outside any other root, is one step.

Kinds:

- ``OP``: an op of :mod:`gpugrad.ops`, a registered gradient rule, a custom gradient's backward
  function, a tensor constructor. Pure: the same inputs give the
  same bits, and an output that is a view of an input is always that view. A call with no traced
  input is folded into a constant.
- ``SHAPE``: an op whose result depends on its input's shape and dtype only (``ones_like``); folded.
- ``HOST``: a function with effects or host-side state: variable updates, the optimizers' update,
  random draws, gradient clipping (which returns its input as it is below the norm). Replayed by
  calling it again every time, its outputs copied into buffers of their own.
- ``REFUSED``: a function whose result a trace would freeze (a random draw returned as host data).

Example:
    >>> import gpugrad as gg
    >>> from gpugrad._tracing import roots
    >>> roots.kind_of(gg.exp.__code__) == roots.OP, roots.kind_of(gg.Variable.assign.__code__) == roots.HOST
    (True, True)
"""
import types

OP, SHAPE, HOST, REFUSED = "op", "shape", "host", "refused"

_by_code: dict = {}  # code object -> (kind, [functions with that code])


def _add(fn, kind):
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        return
    entry = _by_code.get(fn.__code__)
    if entry is None:
        _by_code[fn.__code__] = (kind, [fn])
    elif fn not in entry[1]:
        entry[1].append(fn)


def _build():
    import gpugrad as gg
    import sys
    from .. import ops, raw_ops
    tensor = sys.modules["gpugrad.tensor"]
    from ..ops import creation, methods
    from ..optimizers import clipping, loss_scale, optimizer
    from .. import random as gg_random

    for name in list(ops._EVERY_OP) + list(getattr(ops, "ENGINE_OPS", ())):
        _add(getattr(ops, name, None), OP)
    for module in ops._MODULES:
        for name in module.__all__:
            _add(getattr(module, name), OP)
    for name in dir(raw_ops):
        _add(getattr(raw_ops, name), OP)
    for name in dir(gg.linalg):
        _add(getattr(gg.linalg, name), OP)
    for name in dir(methods):
        value = getattr(methods, name)
        if getattr(value, "__module__", "").startswith("gpugrad.ops"):
            _add(value, OP)
    for name, value in vars(tensor.Tensor).items():
        if getattr(value, "__module__", "").startswith("gpugrad.ops"):
            _add(value, OP)
    for fn in (tensor.tensor, tensor.as_tensor, tensor.ensure_tensor, tensor.from_numpy, tensor.from_dlpack):
        _add(fn, OP)
    from .. import jacobians
    for fn in (creation.ones_like, creation.zeros_like, creation.full_like, jacobians._one_hot,
               jacobians._one_hot_columns, jacobians._zeros):
        _by_code[fn.__code__] = (SHAPE, [fn])
    from ..distributed import optimizer as distributed_optimizer
    host = [optimizer.Optimizer._apply_pairs, loss_scale.LossScaleOptimizer._apply_pairs, distributed_optimizer.average_gradients, ops.dropout, clipping.clip_by_global_norm, clipping.clip_by_norm,
            clipping.global_norm, gg_random.Generator.uniform, gg_random.Generator.normal,
            gg_random.Generator.integers, gg_random.uniform, gg_random.normal, gg_random.integers]
    host += [getattr(tensor.Variable, name) for name in
             ("assign", "assign_add", "assign_sub", "__iadd__", "__isub__", "__imul__", "__itruediv__",
              "__ipow__", "__imatmul__")]
    for fn in host:
        fn = getattr(fn, "__func__", fn)
        _by_code[fn.__code__] = (HOST, [fn])
    for fn in (gg_random.Generator.permutation, gg_random.permutation):
        _by_code[fn.__code__] = (REFUSED, [fn])


_rules_seen: dict = {}  # op type -> the rule whose code is in the table


def _add_rules():
    """Every registered gradient rule is a root: a rule may compute arrays of its own (a mask, a
    share) between the ops it calls, so the whole rule is what replays when its ops cannot."""
    import sys
    from .. import registry
    custom_gradient = sys.modules["gpugrad.custom_gradient"]
    if len(_rules_seen) == len(registry.rules) and all(_rules_seen.get(k) is v for k, v in registry.rules.items()):
        return
    for op_type, rule in registry.rules.items():
        if _rules_seen.get(op_type) is not rule:
            _rules_seen[op_type] = rule
            _add(rule, OP)
    _add(custom_gradient._backward_fn("probe", None, (), []), OP)


def table():
    """code object -> (kind, functions); built on the first trace, when every module is imported; the
    gradient rules registered since are added on each call."""
    if not _by_code:
        _build()
    _add_rules()
    return _by_code


def kind_of(code):
    """The kind of the root whose code is ``code``, or None when it is not one."""
    entry = table().get(code)
    return None if entry is None else entry[0]


def function_of(frame, functions):
    """The function of ``functions`` (all sharing ``frame``'s code) that ``frame`` runs.

    Op factories make several closures of one code; their cells tell them apart.
    """
    if len(functions) == 1:
        return functions[0]
    names = frame.f_code.co_freevars
    values = frame.f_locals
    for fn in functions:
        cells = fn.__closure__ or ()
        if all(name in values and cell.cell_contents is values[name] for name, cell in zip(names, cells)):
            return fn
    return None


def call_arguments(frame, fn):
    """``(args, kwargs)`` that call ``fn`` as ``frame`` (at its first line) was called."""
    code = fn.__code__
    values = frame.f_locals
    n_positional = code.co_argcount
    names = code.co_varnames
    args = [values[name] for name in names[:n_positional]]
    index = n_positional + code.co_kwonlyargcount
    kwargs = {name: values[name] for name in names[n_positional:index]}
    if code.co_flags & 0x04:  # CO_VARARGS
        args.extend(values[names[index]])
        index += 1
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        kwargs.update(values[names[index]])
    return args, kwargs
