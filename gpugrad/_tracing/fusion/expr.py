"""A declared elementwise expression written as straight-line code of one element, in a dialect.

An op declares its expression (:mod:`gpugrad.ops.replay`, ``expression``) as Python over its
operand names: ``+ - * /``, unary ``-``, comparisons, ``& |``, ``where(c, a, b)``, numbers, and
calls of NumPy's ufunc names (``tanh(x)``, ``add(x, y)``, ``maximum(x, 0)``). :func:`emit` writes
it in one of two dialects: ``"numba"`` (scalar NumPy in a ``@njit`` loop, numbers as the region's
dtype ``_T``) or ``"cuda"`` (C++ in the compute type ``A`` of :mod:`gpugrad.backend.kernel_source`).
A comparison is a bool; where arithmetic takes one it becomes 1 or 0 in the float type.

Example:
    >>> emit("dy * (1 - y * y)", {"y": "v0", "dy": "v1"}, "numba")
    '(v1 * (_T(1) - (v0 * v0)))'
    >>> emit("maximum(x, 0)", {"x": "a"}, "cuda")
    'gpugrad_max(a, A(0.0))'
"""
import ast
import functools
import math

import numpy as np

__all__ = ["emit", "calls", "ufunc_call", "ARITHMETIC", "ExpressionError"]

# calls that are exactly rounded arithmetic or selections: a loop of them vectorizes and gives NumPy's bits
ARITHMETIC = frozenset({"add", "subtract", "multiply", "true_divide", "divide", "negative", "square", "absolute",
                        "abs", "where", "maximum", "minimum", "sqrt", "positive", "copysign"})

_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_COMPARE = {ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}
_OPERATOR_CALLS = {"add": "+", "subtract": "-", "multiply": "*", "true_divide": "/", "divide": "/"}
# ufunc name -> CUDA function of the compute type (where it is not the same name)
_CUDA_NAMES = {"absolute": "fabs", "abs": "fabs", "arctan": "atan", "arcsin": "asin", "arccos": "acos",
               "arctanh": "atanh", "arcsinh": "asinh", "arccosh": "acosh", "power": "pow", "maximum": "gpugrad_max",
               "minimum": "gpugrad_min", "where": "gpugrad_where"}
_CUDA_OK = {"exp", "log", "sqrt", "tanh", "sin", "cos", "tan", "expm1", "log1p", "cosh", "sinh", "exp2", "log2",
            "log10", "cbrt", "erf", "erfc", "copysign"} | set(_CUDA_NAMES)
_NUMBA_OK = _CUDA_OK - {"erf", "erfc"}  # scalar np.erf is not NumPy's


class ExpressionError(ValueError):
    """An expression with a part the dialect cannot write (then the op is not fused)."""


@functools.lru_cache(maxsize=None)
def _parsed(text):
    return ast.parse(text, mode="eval").body


def outputs(text):
    """The output expressions of ``text`` (several for a tuple).

    Example:
        >>> [ast.unparse(e) for e in outputs("(dy / y, -dy)")]
        ['dy / y', '-dy']
    """
    node = _parsed(text)
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def calls(text):
    """The names ``text`` calls.

    Example:
        >>> sorted(calls("where(x > 0, exp(x), x)"))
        ['exp', 'where']
    """
    return {n.func.id for n in ast.walk(_parsed(text)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def ufunc_call(declared):
    """The name of the NumPy ufunc where declared expression ``(names, params, text)`` is one call of a
    transcendental ufunc (not :data:`ARITHMETIC`) over its operand names in order, as eager's op makes it
    (``log(x)``, ``power(x, y)``); else None.

    Example:
        >>> ufunc_call((("x",), (), "log(x)")), ufunc_call((("x", "dy"), (), "dy * sinh(x)"))
        ('log', None)
    """
    names, params, text = declared
    node = _parsed(text)
    if params or not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
        return None
    name = node.func.id
    if name in ARITHMETIC or name not in _NUMBA_OK or not isinstance(getattr(np, name, None), np.ufunc):
        return None
    if [a.id if isinstance(a, ast.Name) else None for a in node.args] != list(names):
        return None
    return name


def _number(value, dialect):
    value = float(value)
    if dialect == "cuda":
        if math.isnan(value):
            return "A(NAN)"
        if math.isinf(value):
            return "A(INFINITY)" if value > 0 else "A(-INFINITY)"
        return f"A({value!r})"
    if math.isnan(value) or math.isinf(value):
        return f"_T(float({str(value)!r}))"
    whole = value.is_integer() and abs(value) < 2 ** 53 and math.copysign(1.0, value) > 0  # -0.0 keeps its sign
    return f"_T({int(value)!r})" if whole else f"_T({value!r})"


def bind(declared, operands, values, dialect):
    """``(text, names)`` of a step's declared expression ``(input names, param names, text)``: its input names
    mapped to the code of ``operands`` and its params to ``values`` as literals of ``dialect``.

    Example:
        >>> bind((("x",), ("alpha",), "x * alpha"), ["a0"], [0.5], "numba")[1]["x"]
        'a0'
    """
    in_names, params, text = declared
    names = dict(zip(in_names, operands))
    names.update({p: _number(value, dialect) for p, value in zip(params, values)})
    return text, names


def emit(text, names, dialect, node=None):
    """Expression ``text`` (or its sub-expression ``node``) over ``names`` (operand -> code) in ``dialect``.

    Example:
        >>> emit("where(x > 0, dy, dy * alpha)", {"x": "a", "dy": "b", "alpha": "_T(0.5)"}, "numba")
        '(b if (a > _T(0)) else (b * _T(0.5)))'
    """
    code, _ = _emit(text, _parsed(text) if node is None else node, names, dialect)
    return code


def _float(code_kind, dialect):
    code, kind = code_kind
    if kind == "bool":
        return f"A({code})" if dialect == "cuda" else f"(_T(1) if {code} else _T(0))"
    return code


def _emit(text, node, names, dialect):
    f = functools.partial(_emit, text, names=names, dialect=dialect)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return f"({_float(f(node.left), dialect)} {_BINARY[type(node.op)]} {_float(f(node.right), dialect)})", "float"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        a, b = _float(f(node.left), dialect), _float(f(node.right), dialect)
        return (f"pow({a}, {b})" if dialect == "cuda" else f"np.power({a}, {b})"), "float"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        a, b = f(node.left), f(node.right)
        if a[1] != "bool" or b[1] != "bool":
            raise ExpressionError(f"{text!r}: & and | join comparisons")
        op = ("&&" if isinstance(node.op, ast.BitAnd) else "||") if dialect == "cuda" else \
            ("&" if isinstance(node.op, ast.BitAnd) else "|")
        return f"({a[0]} {op} {b[0]})", "bool"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        if isinstance(node.operand, ast.Constant):
            return _number(-node.operand.value, dialect), "float"
        return f"(-{_float(f(node.operand), dialect)})", "float"
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        a, b = _float(f(node.left), dialect), _float(f(node.comparators[0]), dialect)
        return f"({a} {_COMPARE[type(node.ops[0])]} {b})", "bool"
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id], "float"
    if isinstance(node, ast.Name) and node.id == "pi":
        return _number(math.pi, dialect), "float"
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _number(node.value, dialect), "float"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        return _call(text, node.func.id, node.args, f, dialect)
    raise ExpressionError(f"{text!r}: cannot write {ast.unparse(node)!r} in {dialect}")


def _call(text, name, args, f, dialect):
    if name == "where" and len(args) == 3:
        c = f(args[0])
        cond = c[0] if c[1] == "bool" else f"({c[0]} != 0)"
        a, b = _float(f(args[1]), dialect), _float(f(args[2]), dialect)
        return (f"gpugrad_where({cond}, {a}, {b})" if dialect == "cuda" else f"({a} if {cond} else {b})"), "float"
    values = [_float(f(a), dialect) for a in args]
    if name in _OPERATOR_CALLS and len(values) == 2:
        return f"({values[0]} {_OPERATOR_CALLS[name]} {values[1]})", "float"
    if name == "negative" and len(values) == 1:
        return f"(-{values[0]})", "float"
    if name == "positive" and len(values) == 1:
        return values[0], "float"
    if name == "square" and len(values) == 1:
        return f"({values[0]} * {values[0]})", "float"
    if dialect == "numba" and name in ("maximum", "minimum") and len(values) == 2:
        # as NumPy's float32/float64 loops (and gpugrad_max): a NaN first operand wins, else the second on a tie
        # (maximum(-0.0, 0.0) is 0.0); numba's scalar np.maximum keeps the first on a tie
        a, b = values
        return f"({a} if ({a} {'>' if name == 'maximum' else '<'} {b} or {a} != {a}) else {b})", "float"
    if dialect == "cuda" and name in _CUDA_OK:
        return f"{_CUDA_NAMES.get(name, name)}({', '.join(values)})", "float"
    if dialect == "numba" and name in _NUMBA_OK:
        return f"np.{'abs' if name == 'absolute' else name}({', '.join(values)})", "float"
    raise ExpressionError(f"{text!r}: cannot call {name!r} in {dialect}")
