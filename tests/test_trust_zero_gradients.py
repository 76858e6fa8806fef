"""None where the answer is zero: every op declared not differentiable and every rule that returns None
for an input has a decision in gpugrad/_tools/no_gradient.py ("zero": zeros of the source's shape and
dtype, as TensorFlow or PyTorch give; "integer", "none", "unneeded": None, for the reason written there),
and the tape does what the decision says. Clip's tensor bounds get their gradient where they are picked.
"""
import ast
import inspect
import os
import textwrap

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _dtypes as _dt
from gpugrad import registry
from gpugrad._tools.no_gradient import DECISIONS, KINDS
from gpugrad._tools.op_specs import ALL_SPECS
from gpugrad.gradient_checker import compute_gradient, max_error

PACKAGE = os.path.dirname(gg.__file__)


# ---------------------------------------------------------------- what the library declares


def declared_not_differentiable():
    """Op types gpugrad's own source declares with NotDifferentiable("...") (tests register their own)."""
    found = set()
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                        == "NotDifferentiable" and node.args and isinstance(node.args[0], ast.Constant)):
                    found.add(node.args[0].value)
    return found


def literal_none_inputs(rule):
    """Indices of the inputs for which ``rule`` returns a literal None (``return a, None``); a None chosen by
    ``... if need else None`` is the sweep not asking, and is not listed."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(rule)))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, (ast.Tuple, ast.List)):
            found.update(i for i, e in enumerate(node.value.elts) if isinstance(e, ast.Constant) and e.value is None)
        elif isinstance(node, ast.Return) and (node.value is None or
                                               (isinstance(node.value, ast.Constant) and node.value.value is None)):
            found.add("all")
    return found


def builtin_rules():
    return {op: fn for op, fn in registry.rules.items() if fn.__module__.startswith("gpugrad.")}


def test_every_not_differentiable_op_and_none_returning_rule_has_a_decision():
    cases = {(op, None) for op in declared_not_differentiable()}
    for op, rule in builtin_rules().items():
        nones = literal_none_inputs(rule)
        assert "all" not in nones, f"the rule of {op!r} returns a bare None; return one entry per input"
        cases.update((op, i) for i in nones)
    missing = sorted(cases - DECISIONS.keys(), key=str)
    assert not missing, (f"no decision in gpugrad/_tools/no_gradient.py for {missing}: a zero gradient where "
                         f"TensorFlow or PyTorch give one, else None with the reason")


def test_every_decision_is_about_something_that_exists():
    declared = declared_not_differentiable()
    rules = builtin_rules()
    for (op, index), decision in DECISIONS.items():
        assert decision.kind in KINDS and decision.reason
        if index is None:
            assert op in declared, f"{op!r} is no longer declared not differentiable; update its decision"
            assert decision.example is not None and decision.kind in ("integer", "none")
        else:
            assert op in rules, f"{op!r} has no registered rule"
            if decision.kind != "zero":  # a zero decision made the None go away: nothing literal is left
                assert index in literal_none_inputs(rules[op]), f"the rule of {op!r} no longer returns None for input {index}"
        if decision.kind != "unneeded":  # the reason names what the peers do, or the decision it repeats
            assert "TensorFlow" in decision.reason or decision.reason.startswith("as "), (op, index)


def test_the_checks_below_cover_every_decision():
    covered = {key for key in DECISIONS if key[1] is None} | {key for key, _ in RULE_CASES}
    assert covered == set(DECISIONS), sorted(set(DECISIONS) - covered, key=str)


# ---------------------------------------------------------------- what the tape does, decision by decision


@pytest.mark.parametrize("op", sorted(op for op, index in DECISIONS if index is None))
def test_a_not_differentiable_op_gives_what_its_decision_says(op):
    decision = DECISIONS[(op, None)]
    x = gg.tensor(np.random.default_rng(0).uniform(-2.0, 2.0, (3, 4)))
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out = decision.example(x)
    assert op in [rec[0] for rec in tape._ops], f"the example does not record {op}"
    if decision.kind == "integer":
        assert not _dt.inexact(out.dtype), f"{op} makes {out.dtype}, which is not integer or boolean"
    else:
        assert tape.gradient(gg.sum(out * 1.0), x) is None


def _spec_record(op_type, index):
    """(tape, the op's outputs, its input ``index``) from the first spec of ``op_type``, all inputs watched."""
    spec = next(s for s in ALL_SPECS if s.op_type == op_type)
    xs = [gg.tensor(a) for a in spec.inputs()]
    tape = gg.GradientTape(persistent=True)
    with tape:
        tape.watch(xs)
        spec.fn(*xs)
    rec = next(r for r in tape._ops if r[0] == op_type)
    return tape, list(rec[2]), rec[1][index]


RULE_CASES = [(key, DECISIONS[key]) for key in sorted((k for k in DECISIONS if k[1] is not None), key=str)]


@pytest.mark.parametrize("key, decision", RULE_CASES, ids=[f"{k[0]}-{k[1]}" for k, _ in RULE_CASES])
def test_a_rule_input_gives_what_its_decision_says(key, decision):
    op_type, index = key
    if decision.kind == "integer" and decision.example is not None:  # a spec records no integer case
        x = gg.tensor(np.linspace(-2.0, 2.0, 12).reshape(3, 4))
        with gg.GradientTape() as tape:
            tape.watch(x)
            out = decision.example(x)
        assert not _dt.inexact(out.dtype)
        return
    tape, outputs, source = _spec_record(op_type, index)
    targets = [o for o in outputs if _dt.inexact(o.dtype)]
    if decision.kind == "integer":
        assert not _dt.inexact(source.dtype), f"input {index} of {op_type} is {source.dtype}, not integer"
        return
    g = tape.gradient(targets, source)  # the source reaches the targets only through this op
    if decision.kind == "zero":
        assert g is not None, f"{op_type}'s input {index} gets None, where its decision is zeros"
        assert g.shape == source.shape and g.dtype == source.dtype
        assert not np.any(g.numpy())
    elif decision.kind == "unneeded":
        assert g is not None
    else:
        assert g is None


# ---------------------------------------------------------------- the cases the issue names, end to end


def test_sign_gives_zeros_not_none():
    x = gg.tensor(np.array([-2.0, 0.0, 3.0], np.float32))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.sum(gg.sign(x) * 5.0)
    g = tape.gradient(y, x)
    assert g is not None and g.dtype == np.float32 and g.numpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("fn", [gg.abs, gg.relu, lambda x: gg.leaky_relu(x, alpha=0.1)], ids=["abs", "relu", "leaky_relu"])
def test_second_derivative_of_a_piecewise_linear_activation_is_zeros_not_none(fn):
    x = gg.tensor(np.array([-1.5, 0.5, 2.0]))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(fn(x))
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    assert h is not None and h.numpy().tolist() == [0.0, 0.0, 0.0]


def test_clip_tensor_bounds_get_the_gradient_where_they_are_picked():
    x = gg.tensor(np.array([[-3.0, 0.5, 4.0], [-1.0, 2.0, 2.5]]))
    lo = gg.tensor(np.array([-1.0, 0.0, 0.0]))  # broadcast over the rows
    hi = gg.tensor(np.array([[1.0], [2.0]]))  # broadcast over the columns
    w = gg.tensor(np.arange(1.0, 7.0).reshape(2, 3))
    with gg.GradientTape() as tape:
        tape.watch([x, lo, hi])
        y = gg.sum(gg.clip(x, lo, hi) * w)
    gx, glo, ghi = tape.gradient(y, [x, lo, hi])
    xd, lod, hid, wd = x.numpy(), lo.numpy(), hi.numpy(), w.numpy()
    to_lo, to_hi = xd < lod, xd > hid  # TensorFlow's masks (lo <= hi here)
    np.testing.assert_array_equal(gx.numpy(), np.where(to_lo | to_hi, 0.0, wd))
    np.testing.assert_array_equal(glo.numpy(), np.where(to_lo, wd, 0.0).sum(axis=0))
    np.testing.assert_array_equal(ghi.numpy(), np.where(to_hi, wd, 0.0).sum(axis=1, keepdims=True))
    assert gx.numpy()[1, 0] == wd[1, 0] and gx.numpy()[1, 1] == wd[1, 1]  # ties x == lo, x == hi: x's, as both peers


def test_clip_bounds_against_finite_differences_and_a_variable_bound():
    rng = np.random.default_rng(5)
    x = gg.tensor(rng.choice([-1.5, -0.5, 0.3, 1.7], size=(3, 4)) + rng.uniform(-0.1, 0.1, (3, 4)))
    lo, hi = gg.tensor(rng.uniform(-1.1, -0.9, (4,))), gg.tensor(np.array(1.0))
    theoretical, numerical = compute_gradient(gg.clip, [x, lo, hi], delta=1e-6)
    assert max_error(theoretical, numerical) < 1e-8
    v = gg.Variable(np.array([0.0, 0.5]), name="lo")
    with gg.GradientTape() as tape:
        y = gg.sum(gg.clip(gg.tensor([-1.0, 2.0]), v, 1.0))
    assert tape.watched_variables() == (v,)
    assert tape.gradient(y, v).numpy().tolist() == [1.0, 0.0]


def test_clip_number_bounds_record_no_bound_inputs():
    x = gg.tensor([0.5, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        gg.clip(x, 0.0, 1.0)
        gg.clip(x, np.array([0.0, 0.0]), None)
    assert [len(rec[1]) for rec in tape._ops] == [1, 1]
