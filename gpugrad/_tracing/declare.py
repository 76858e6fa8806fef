"""How a function tells ``gg.function``'s capture what it is: one declaration, made where it is defined.

A *root* is a function whose call, from outside any other root, a trace takes as one step: an op,
a gradient rule, a custom gradient's backward, a variable update, an optimizer's update, a random
draw, a clipping. Its declaration says its kind, which says how a replay runs it:

- ``OP``: pure: the same inputs give the same bits, an output that is a view of an input is always
  that view. A call with no traced input is folded into a constant; otherwise the ops it emitted
  replay as prebound kernels where each has one (:mod:`gpugrad.ops.replay`), or the call is made again.
- ``SHAPE``: the result depends on the input's shape and dtype only (``ones_like``): folded.
- ``HOST``: it has effects or host-side state (``effects`` says which: it writes a variable, draws
  from a generator, ...): a replay calls it again every time and copies its outputs into buffers
  of their own; it never replays as a pure kernel.
- ``REFUSED``: its result would be frozen by a trace (a random draw returned as host data): calling
  it while tracing raises TraceError.

The op modules declare their public functions through :func:`gpugrad.ops.base.public_ops` (kind
``OP`` unless decorated here otherwise); the backward sweep declares each rule call at the one place
it makes them. No interpreter hook, no table: a root knows itself.

Cost: a declared function is a pass-through with the very signature of the function it declares
(generated once, at import): outside a trace its call costs one extra Python call, about 25 ns on
this machine's Python 3.11, against 180 ns for a ``*args, **kwargs`` wrapper; while a trace runs in
any thread it hands its call to :func:`gpugrad._tracing.state.call_root`.

Example:
    >>> from gpugrad._tracing import declare
    >>> @declare.root(declare.HOST, effects="writes its argument")
    ... def bump(box, by=1):
    ...     box[0] += by
    ...     return box
    >>> bump([1]), declare.kind_of(bump), declare.undeclared(bump).__name__
    ([2], 'host', 'bump')
"""
import functools
import inspect
import types
from typing import Any, Callable, Optional, TypeVar

from . import state

OP, SHAPE, HOST, REFUSED = "op", "shape", "host", "refused"
F = TypeVar("F", bound=Callable[..., Any])  # a declaration keeps the type of what it declares
KINDS = (OP, SHAPE, HOST, REFUSED)


def root(kind: str = OP, effects: Optional[str] = None) -> Callable[[F], F]:
    """Declare the decorated function a root of kind ``kind`` (``effects``: what a ``HOST`` root changes).

    Example:
        >>> from gpugrad._tracing import declare
        >>> twice = declare.root()(lambda x: x * 2)
        >>> twice(3), declare.kind_of(twice)
        (6, 'op')
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    if kind == HOST and not effects:
        raise ValueError("a HOST root declares its effects (what a replay must do again)")

    def decorate(fn: F) -> F:
        return declared(fn, kind, effects)
    return decorate


def declared(fn: F, kind: str = OP, effects: Optional[str] = None) -> F:
    """``fn`` declared a root of ``kind``: a pass-through of its signature; ``fn`` itself when already declared.

    Example:
        >>> from gpugrad._tracing import declare
        >>> def f(x, *, scale=2.0):
        ...     return x * scale
        >>> g = declare.declared(f)
        >>> g(1.0), g(1.0, scale=3.0), declare.declared(g) is g
        (2.0, 3.0, True)
    """
    if getattr(fn, "__gpugrad_root__", None) is not None:
        return fn
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(declared(fn.__func__, kind, effects))
    wrapper = _pass_through(fn, kind)
    functools.update_wrapper(wrapper, fn)
    wrapper.__gpugrad_root__ = (kind, effects)
    return wrapper


def kind_of(fn):
    """The kind ``fn`` was declared with, or None.

    Example:
        >>> import gpugrad as gg
        >>> from gpugrad._tracing import declare
        >>> declare.kind_of(gg.exp), declare.kind_of(gg.Variable.assign), declare.kind_of(print)
        ('op', 'host', None)
    """
    entry = getattr(getattr(fn, "__func__", fn), "__gpugrad_root__", None)
    return None if entry is None else entry[0]


def undeclared(fn):
    """The function a declaration passes its calls to (``fn`` when it is not declared).

    Example:
        >>> import gpugrad as gg
        >>> from gpugrad._tracing import declare
        >>> declare.undeclared(gg.exp) is gg.exp.__wrapped__
        True
    """
    fn = getattr(fn, "__func__", fn)
    return fn.__wrapped__ if getattr(fn, "__gpugrad_root__", None) is not None else fn


def _pass_through(fn, kind):
    """A function with ``fn``'s parameters (names, kinds, defaults) whose body calls ``fn``, or, while a trace
    runs anywhere, :func:`state.call_root`. Its globals are ``fn``'s, so doctest and introspection see it as
    ``fn``'s module's function."""
    try:
        parameters = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable object: the generic form
        parameters = None
    if parameters is None or not isinstance(fn, types.FunctionType):
        def generic(*args, **kwargs):
            if state.active:
                return state.call_root(fn, kind, args, kwargs)
            return fn(*args, **kwargs)
        return generic
    P = inspect.Parameter
    text, positional, keywords, star, double = [], [], [], None, None
    for i, p in enumerate(parameters):
        name = p.name
        default = "=_" if p.default is not P.empty else ""
        if p.kind is P.POSITIONAL_ONLY:
            text.append(name + default)
            if i + 1 == len(parameters) or parameters[i + 1].kind is not P.POSITIONAL_ONLY:
                text.append("/")
            positional.append(name)
        elif p.kind is P.POSITIONAL_OR_KEYWORD:
            text.append(name + default)
            positional.append(name)
        elif p.kind is P.VAR_POSITIONAL:
            text.append("*" + name)
            star = name
        elif p.kind is P.KEYWORD_ONLY:
            if star is None and "*" not in text:
                text.append("*")
            text.append(name + default)
            keywords.append(name)
        else:
            text.append("**" + name)
            double = name
    call = positional + ([f"*{star}"] if star else []) + [f"{k}={k}" for k in keywords] + \
        ([f"**{double}"] if double else [])
    args = "(" + "".join(f"{p}, " for p in positional) + ")" + (f" + {star}" if star else "")
    kwargs = "{" + ", ".join(f"{k!r}: {k}" for k in keywords) + "}"
    if double:
        kwargs = f"dict({kwargs}, **{double})"
    names = {p.name for p in parameters}
    fn_name, active, call_root, placeholder = (_free("fn", names), _free("active", names),
                                               _free("call_root", names), _free("_", names))
    text = [t.replace("=_", "=" + placeholder) for t in text]
    # one line: a traceback through it shows the declared function's file and first line
    source = (f"def make({fn_name}, {active}, {call_root}, {placeholder}):\n"
              f"    def declared({', '.join(text)}): return {call_root}({fn_name}, {kind!r}, {args}, {kwargs}) "
              f"if {active} else {fn_name}({', '.join(call)})\n"
              f"    return declared\n")
    namespace: dict = {}
    exec(compile(source, "<gpugrad declaration>", "exec"), namespace)
    inner = namespace["make"](fn, state.active, state.call_root, None)
    code = inner.__code__.replace(co_filename=fn.__code__.co_filename, co_firstlineno=fn.__code__.co_firstlineno,
                                  co_name=fn.__name__)
    if hasattr(code, "co_qualname"):  # Python 3.11+
        code = code.replace(co_qualname=fn.__qualname__)
    made = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, inner.__closure__)
    made.__kwdefaults__ = fn.__kwdefaults__
    return made


def _free(name, taken):
    """``name``, with underscores added until it is not one of ``taken`` (the declared function's parameters)."""
    while name in taken:
        name = "_" + name
    return name
