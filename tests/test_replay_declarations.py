"""Replay kernels are declared by the op's own module (gpugrad/ops/replay.py), nothing in gpugrad/_tracing/.

A toy op defined here (its forward emitting an op type of its own, its gradient a fused op of its own)
declares its replay through the registry and gg.function replays it as kernel steps to the eager bits;
a hot gradient declared after a trace is replayed from its declaration; every op type of the spec table
that the hand-kept table of 6a3b85a replayed as a kernel still is, because of its declaration.
"""
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _nest as nest
from gpugrad import registry
from gpugrad._recorder import emit
from gpugrad._tracing import declare
from gpugrad._tools.op_specs import ALL_SPECS

from .conftest import assert_same, device_params

# ---------------------------------------------------------------- a toy op, declared as an op module would


def _cube_array(xp, x, out=None):
    """x * x * x: the forward's calls, and the replay's into ``out``."""
    y = xp.square(x, out=out)
    return xp.multiply(y, x, out=y)


def _cube_grad_array(xp, x, dy, out=None):
    """3 x^2 dy."""
    g = xp.square(x, out=out)
    xp.multiply(g, dy, out=g)
    return xp.multiply(g, 3, out=g)


def toy_cube(x):
    return emit("ToyCube", _cube_array(x._device.xp, x._data), x._device, (x,))


def toy_cube_grad(x, dy):
    return emit("ToyCubeGrad", _cube_grad_array(x._device.xp, x._data, dy._data), x._device, (x, dy))


def _toy_cube_rule(op, dy):
    return (toy_cube_grad(op.inputs[0], dy),)


def _replay_of(array_fn):
    def build(inputs, attrs, outputs, device):
        out = outputs[0]
        return lambda: array_fn(device.xp, *inputs, out=out)
    return build


@pytest.fixture
def toy_op():
    """ToyCube and ToyCubeGrad: gradients registered and replays declared, taken away after the test."""
    from gpugrad.ops import replay
    registry.RegisterGradient("ToyCube", reads_outputs=False)(_toy_cube_rule)
    registry.RegisterGradient("ToyCubeGrad", reads_outputs=False)(lambda op, g: (None, toy_cube_grad(op.inputs[0], g)))
    replay.declare("ToyCube", _replay_of(_cube_array), graph_safe=replay.float_graph_safe)
    replay.declare("ToyCubeGrad", _replay_of(_cube_grad_array), graph_safe=replay.float_graph_safe)
    yield
    for op_type in ("ToyCube", "ToyCubeGrad"):
        replay.undeclare(op_type)
        registry.rules.pop(op_type)
        registry.rules_reading_outputs.discard(op_type)


def _steps(fn):
    """``(kernel steps, call steps)`` of ``fn``'s one trace, and that it did not run eagerly."""
    (trace,) = fn._traces.values()
    assert trace.plan is not None, trace.eager_reason
    return trace.plan.stats["kernel_steps"], trace.plan.stats["call_steps"]


def _replays_to_the_bit(step, make_args, device):
    fn = gg.function(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a trace that falls back to eager execution warns
        for seed in range(3):
            replayed, eager = fn(*make_args(seed, device)), step(*make_args(seed, device))
            for a, b in zip(nest.flatten(replayed), nest.flatten(eager), strict=True):
                assert a.device == b.device
                assert_same(a.numpy(), b.numpy())
    assert fn.trace_count == 1
    return fn


def _x_and_dy(seed, device):
    rng = np.random.default_rng(seed)
    return [gg.tensor(rng.uniform(-2, 2, (3, 5)).astype(np.float32), device=device) for _ in range(2)]


@pytest.mark.parametrize("device", device_params())
def test_a_fused_op_declared_in_its_own_module_replays_as_a_kernel_step(toy_op, device):
    # the toy op's gradient rule (a root of the capture) emits ToyCubeGrad, whose replay is declared above
    def step(x, dy):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = toy_cube(x)
        return (tape.gradient(y, x, output_gradients=dy),)

    fn = _replays_to_the_bit(step, _x_and_dy, device)
    assert _steps(fn) == (2, 0), fn.diagnostics()  # the forward emitted outside a declared function, and the rule


def test_a_new_op_declared_in_its_own_module_replays_as_kernel_steps(toy_op):
    def step(x, dy):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = toy_cube(x)
        return y, tape.gradient(y, x, output_gradients=dy)

    fn = _replays_to_the_bit(step, _x_and_dy, "cpu")
    assert _steps(fn) == (2, 0), fn.diagnostics()


# ---------------------------------------------------------------- a hot gradient declared after a trace


def test_a_hot_gradient_declared_after_a_trace_replays_from_its_declaration():
    from gpugrad.ops import hot
    traced = gg.function(lambda x: gg.tanh(x) * 2.0)  # a trace first: the replay lookup is in use
    traced(gg.tensor([0.5]))
    name, op_type = "toy_quartic_grad", "ToyQuarticGrad"
    quartic_grad = hot.declare(
        globals(), name=name, op_type=op_type, inputs=("x", "dy"), summary="Toy: gradient of x**4",
        math="4 * x * x * x * dy", cpu=lambda x, dy: 4 * x * x * x * dy,
        grad=lambda op, g: (None, quartic_grad(op.inputs[0], g)), example="")
    registry.RegisterGradient("ToyQuartic", reads_outputs=False)(lambda op, dy: (quartic_grad(op.inputs[0], dy),))
    try:
        @declare.root()  # the forward, declared to the capture (it has no replay kernel: it is called again)
        def quartic(x):
            return emit("ToyQuartic", x._data ** 4, x._device, (x,))

        def step(x, dy):
            with gg.GradientTape() as tape:
                tape.watch(x)
                y = quartic(x)
            return (tape.gradient(y, x, output_gradients=dy),)

        fn = _replays_to_the_bit(step, _x_and_dy, "cpu")
        assert _steps(fn) == (1, 1), fn.diagnostics()  # the gradient a kernel step, the forward called again  # the forward emitted outside a declared function, and the rule
    finally:
        hot.HOT_GRADIENTS.pop(name)
        for t in (op_type, "ToyQuartic"):
            registry.rules.pop(t)
            registry.rules_reading_outputs.discard(t)
        from gpugrad.ops import replay
        replay.undeclare(op_type)


# ---------------------------------------------------------------- the op types replayed as kernels before

# The op types the hand-kept table of gpugrad/_tracing/kernels.py replayed as kernels on 6a3b85a (its ufunc
# tables, ReLU, matmul, the reductions, its composites and the hot gradients'), written out here because
# that table is gone: each is declared by its op module now.
KERNEL_OP_TYPES_AT_6A3B85A = sorted("""
    Neg Exp Log Tanh Sqrt Square Abs Sin Cos Log1p Expm1 Add Sub Mul Div Pow Relu MatMul Sum Mean Max
    MaxPool2D MaxPool2DGrad Conv2D Conv2DBackpropInput Conv2DBackpropFilter Dense Softmax SoftmaxCrossEntropy
    SoftmaxCrossEntropyGrad
    DivGrad PowGrad AbsGrad MaximumGrad MinimumGrad ClipGrad SquareGrad SqrtGrad RsqrtGrad ReciprocalGrad ExpGrad
    LogGrad CbrtGrad TanGrad AtanGrad SinhGrad CoshGrad TanhGrad SigmoidGrad ReluGrad LeakyReluGrad EluGrad
    SoftplusGrad SoftsignGrad SiluGrad LogSigmoidGrad GeluGrad
""".split())


def test_every_op_type_replayed_as_a_kernel_before_is_declared():
    from gpugrad.ops import hot, replay
    assert [t for t in KERNEL_OP_TYPES_AT_6A3B85A if replay.lookup(t) is None] == []
    assert {h.op_type for h in hot.HOT_GRADIENTS.values()} <= set(replay.declared())  # from their declarations


def _kernel_steps(fn, inputs, first_order):
    """Kernel steps of the one trace of ``fn(*inputs)`` (float ones watched, with their gradients if
    ``first_order``); None where it runs eagerly."""
    def step(*xs):
        if not first_order:
            return fn(*xs)
        watched = [x for x in xs if x.dtype.kind == "f"]
        with gg.GradientTape() as tape:
            tape.watch(watched)
            y = fn(*xs)
        return y, tape.gradient(y, watched)
    traced = gg.function(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced(*[gg.tensor(a) for a in inputs])
    (trace,) = traced._traces.values()
    return None if trace.plan is None else trace.plan.stats["kernel_steps"]


def _cases(op_type):
    """``(id, fn, inputs)`` that emit ``op_type``: its specs, and those of the op whose rule emits it (the
    forward of a ``...Grad``); SoftmaxCrossEntropy's also with labels passed in as a tensor (its specs' NumPy
    labels become a tensor inside the op, which a replay calls again)."""
    cases = [(s.id, s.fn, s.inputs(0)) for s in ALL_SPECS if op_type in (s.op_type, s.op_type + "Grad")]
    if op_type == "SoftmaxCrossEntropy":
        cases.append(("labels_in", gg.softmax_cross_entropy,
                      [np.random.default_rng(0).uniform(-3, 3, (4, 5)), np.array([0, 3, 4, 1])]))
    return cases


@pytest.mark.parametrize("op_type", KERNEL_OP_TYPES_AT_6A3B85A)
def test_each_of_those_op_types_replays_by_its_declared_kernel_in_the_spec_table(op_type, monkeypatch):
    """Its declaration is what makes kernel steps of it: taken away, some case has fewer and none has more."""
    from gpugrad.ops import replay
    cases = _cases(op_type)
    with_kernel = {(i, order): _kernel_steps(fn, xs, order) for i, fn, xs in cases for order in (False, True)}
    monkeypatch.delitem(replay._DECLARED, op_type)
    without = {(i, order): _kernel_steps(fn, xs, order) for i, fn, xs in cases for order in (False, True)}
    assert None not in with_kernel.values() and None not in without.values()
    assert all(with_kernel[k] >= without[k] for k in with_kernel), (with_kernel, without)
    assert any(with_kernel[k] > without[k] for k in with_kernel), (with_kernel, without)


# ---------------------------------------------------------------- issue 28's elementwise ops

def _unit(rng, shape):
    return rng.uniform(0.02, 0.98, shape)


# op type -> (the op, how its operands are drawn): each one op emitting only its own op type
ELEMENTWISE_28 = {
    "Relu6": (gg.relu6, [lambda r, s: r.uniform(-3, 9, s)]),
    "Selu": (gg.selu, [lambda r, s: r.uniform(-4, 4, s)]),
    "Celu": (lambda x: gg.celu(x, alpha=1.5), [lambda r, s: r.uniform(-4, 4, s)]),
    "Hardswish": (gg.hardswish, [lambda r, s: r.uniform(-5, 5, s)]),
    "Logit": (gg.logit, [_unit]),
    "GeluTanh": (lambda x: gg.gelu(x, approximate="tanh"), [lambda r, s: r.uniform(-4, 4, s)]),
    "Lgamma": (gg.lgamma, [lambda r, s: r.uniform(-3.5, 6, s)]),
    "Digamma": (gg.digamma, [lambda r, s: r.uniform(-3.5, 6, s)]),
    "Polygamma": (lambda x: gg.polygamma(2, x), [lambda r, s: r.uniform(0.1, 6, s)]),
    "Erfc": (gg.erfc, [lambda r, s: r.uniform(-4, 8, s)]),
    "Erfinv": (gg.erfinv, [lambda r, s: r.uniform(-0.999, 0.999, s)]),
    "I0e": (gg.i0e, [lambda r, s: r.uniform(-12, 12, s)]),
    "I1e": (gg.i1e, [lambda r, s: r.uniform(-12, 12, s)]),
    "Xlogy": (gg.xlogy, [lambda r, s: np.where(r.uniform(size=s) < 0.3, 0.0, r.uniform(-2, 2, s)),
                         lambda r, s: r.uniform(0.0, 3, s)]),
    "Xlog1py": (gg.xlog1py, [lambda r, s: r.uniform(-2, 2, s), lambda r, s: r.uniform(-1, 3, s)]),
    "FloorDiv": (lambda a, b: a // b, [lambda r, s: r.uniform(-9, 9, s), lambda r, s: r.uniform(-3, 3, s)]),
    "Copysign": (gg.copysign, [lambda r, s: r.uniform(-3, 3, s), lambda r, s: r.uniform(-3, 3, s)]),
}
ELEMENTWISE_28_WITH_ATTRS = {"Celu", "Logit", "Polygamma"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("op_type", sorted(ELEMENTWISE_28))
def test_issue_28s_elementwise_ops_replay_as_kernel_steps_to_the_eager_bits(op_type, device, dtype):
    op, draws = ELEMENTWISE_28[op_type]

    def make_args(seed, dev):
        rng = np.random.default_rng(seed)
        return [gg.tensor(draw(rng, (4, 6)).astype(dtype), device=dev) for draw in draws]

    fn = _replays_to_the_bit(op, make_args, device)
    assert _steps(fn) == (1, 0), fn.diagnostics()
    assert "1 kernel steps, 0 call steps" in fn.diagnostics()[0]


@pytest.mark.parametrize("op_type", sorted(ELEMENTWISE_28))
def test_their_declarations_are_what_makes_the_kernel_steps(op_type, monkeypatch):
    from gpugrad.ops import replay
    op, draws = ELEMENTWISE_28[op_type]
    args = [gg.tensor(draw(np.random.default_rng(0), (3,))) for draw in draws]
    monkeypatch.delitem(replay._DECLARED, op_type)
    fn = gg.function(op)
    fn(*args)
    assert _steps(fn) == (0, 1), fn.diagnostics()


def test_an_elementwise_replay_refuses_operands_the_forward_converts():
    # integers become float32 in the forward: the replay calls the op again rather than guess
    from gpugrad.backend import CPU
    from gpugrad.ops import replay
    ints, out = np.array([1, 2]), np.empty(2, np.float32)
    assert replay.lookup("Relu6").build([ints], None, [out], CPU) is None
    assert replay.lookup("Celu").build([np.ones(2)], {}, [np.empty(2)], CPU) is None  # no alpha: not this op
    assert {op_type for op_type in ELEMENTWISE_28_WITH_ATTRS} <= set(replay.declared())
