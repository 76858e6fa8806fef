"""gg.function: a replay computes what the eager call computes, to the bit.

Every op of the spec table is traced with its first-order gradient (and, where the spec checks
second order, its second) on one draw of inputs and replayed on two others, against the eager
call on those; training steps (MLP with Adam and momentum, dropout, a learning-rate schedule,
the CNN) are replayed for several steps against eager copies; what cannot be traced raises a
TraceError naming the line.
"""
import gc
import re
import threading
import tracemalloc
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _nest as nest
from gpugrad._tools.op_specs import ALL_SPECS

from .conftest import assert_same, device_params

SPEC_PARAMS = [pytest.param(spec, id=spec.id) for spec in ALL_SPECS]


def _first_order(spec):
    def step(*xs):
        with gg.GradientTape() as tape:
            tape.watch(list(xs))
            y = spec.fn(*xs)
        return y, tape.gradient(y, list(xs))
    return step


def _second_order(spec):
    def step(*xs):
        with gg.GradientTape(persistent=True) as outer:
            outer.watch(list(xs))
            with gg.GradientTape() as inner:
                inner.watch(list(xs))
                y = spec.fn(*xs)
            gs = [g for g in inner.gradient(y, list(xs)) if g is not None]
        return gs, outer.gradient(gs, list(xs)) if gs else []
    return step


def _assert_same_result(replayed, eager):
    a, b = nest.flatten(replayed), nest.flatten(eager)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.device == y.device
            assert_same(np.ascontiguousarray(x.numpy()), np.ascontiguousarray(y.numpy()))


# ops that declare an output shape from their input's values (gpugrad._tracing.state.dynamic_output_shape):
# a trace of them runs eagerly, every call, with the reason in diagnostics()
DYNAMIC_SHAPE_SPECS = ("lstsq",)


def _replays_match(step, spec, device, seeds=(0, 1, 2)):
    traced = gg.function(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in seeds:
            args = [gg.tensor(a, device=device) for a in spec.inputs(seed)]
            fresh = [gg.tensor(a, device=device) for a in spec.inputs(seed)]
            _assert_same_result(traced(*args), step(*fresh))
    assert traced.trace_count == 1
    if any(name in spec.id for name in DYNAMIC_SHAPE_SPECS):
        assert len(caught) == 1 and "depends on the values" in traced.diagnostics()[0]
        return
    assert not caught, [str(w.message) for w in caught]  # a trace that falls back to eager execution fails
    assert "eagerly" not in traced.diagnostics()[0]


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("spec", SPEC_PARAMS)
def test_every_op_replays_its_forward_and_gradient_to_the_bit(spec, device):
    if spec.refused_on(device):
        pytest.skip(f"{spec.id} runs on the CPU only: {spec.cpu_only}")
    _replays_match(_first_order(spec), spec, device)


@pytest.mark.parametrize("spec", [p for p in SPEC_PARAMS if p.values[0].order >= 2])
def test_every_op_replays_its_second_derivative_to_the_bit(spec):
    _replays_match(_second_order(spec), spec, "cpu", seeds=(0, 3))


# --------------------------------------------------------------------------- training steps


def _mlp(seed=0, dropout=0.0, device="cpu"):
    rng = np.random.default_rng(seed)
    layers = [gg.nn.Dense(8, 16, activation="relu", seed=rng, device=device)]
    if dropout:
        layers.append(gg.nn.Dropout(dropout, seed=7))
    layers += [gg.nn.Dense(16, 16, activation="tanh", seed=rng, device=device),
               gg.nn.Dense(16, 4, seed=rng, device=device)]
    return gg.nn.Sequential(*layers)


def _batches(n, seed=3):
    rng = np.random.default_rng(seed)
    return [(gg.tensor(rng.standard_normal((6, 8)).astype(np.float32)), gg.tensor(rng.integers(0, 4, 6)))
            for _ in range(n)]


OPTIMIZERS = {
    "adam": lambda: gg.optimizers.Adam(0.01),
    "momentum": lambda: gg.optimizers.SGD(0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "rmsprop": lambda: gg.optimizers.RMSProp(0.01),
    "adagrad": lambda: gg.optimizers.AdaGrad(0.1),
    "adamw_schedule": lambda: gg.optimizers.AdamW(gg.optimizers.schedules.StepDecay(0.01, 2, 0.5)),
    "sgd_clipped": lambda: gg.optimizers.SGD(0.1, global_clipnorm=0.5),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_replayed_training_step_matches_eager_steps_to_the_bit(name):
    eager_model, traced_model = _mlp(dropout=0.25), _mlp(dropout=0.25)
    eager_opt, traced_opt = OPTIMIZERS[name](), OPTIMIZERS[name]()

    def make_step(model, opt):
        variables = model.trainable_variables
        return lambda x, y: opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), variables)

    eager_step = make_step(eager_model, eager_opt)
    traced_step = gg.function(make_step(traced_model, traced_opt))
    for x, y in _batches(6):
        assert_same(traced_step(x, y).numpy(), eager_step(x, y).numpy())
    for a, b in zip(traced_model.trainable_variables, eager_model.trainable_variables):
        assert_same(a.numpy(), b.numpy())
    assert traced_opt.iterations == eager_opt.iterations == 6
    assert traced_step.trace_count == 1
    assert "eagerly" not in traced_step.diagnostics()[0]


def test_the_cnn_training_step_replays_to_the_bit():
    from gpugrad.training import build_model
    models = [build_model("cnn", seed=1), build_model("cnn", seed=1)]
    opts = [gg.optimizers.Adam(0.002), gg.optimizers.Adam(0.002)]
    steps = [(lambda m, o: lambda x, y: o.minimize(lambda: gg.softmax_cross_entropy(m(x), y),
                                                   m.trainable_variables))(m, o) for m, o in zip(models, opts)]
    traced = gg.function(steps[1])
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = gg.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32))
        y = gg.tensor(rng.integers(0, 10, 4))
        assert_same(traced(x, y).numpy(), steps[0](x, y).numpy())
    for a, b in zip(models[0].trainable_variables, models[1].trainable_variables):
        assert_same(a.numpy(), b.numpy())


def test_a_variable_assigned_between_calls_is_seen_by_the_next_replay():
    w = gg.Variable([1.0, 2.0])
    f = gg.function(lambda x: gg.sum(w * x))
    x = gg.tensor([1.0, 1.0])
    assert f(x).item() == 3.0
    w.assign([10.0, 20.0])
    assert f(x).item() == 30.0
    w.assign_add([1.0, 1.0])
    assert f(x).item() == 32.0 and f.trace_count == 1


def test_variables_assigned_inside_the_function_update_on_every_replay():
    counter = gg.Variable(0.0)
    total = gg.Variable([0.0, 0.0])

    @gg.function
    def accumulate(x):
        counter.assign_add(1.0)
        total.assign(total + x * 2.0)
        return gg.sum(total)

    for i in range(4):
        out = accumulate(gg.tensor([1.0, float(i)]))
    assert counter.item() == 4.0 and total.numpy().tolist() == [8.0, 12.0] and out.item() == 20.0


def test_dropout_draws_fresh_masks_on_every_replay_as_eager_does():
    gg.random.seed(11)
    eager = [gg.dropout(gg.ones((64,)), 0.5).numpy() for _ in range(3)]
    gg.random.seed(11)
    f = gg.function(lambda x: gg.dropout(x, 0.5))
    traced = [f(gg.ones((64,))).numpy() for _ in range(3)]
    for a, b in zip(eager, traced):
        assert_same(a, b)
    assert not np.array_equal(traced[0], traced[1])


def test_results_belong_to_the_caller():
    f = gg.function(lambda x: x * 2.0)
    first = f(gg.tensor([1.0]))
    second = f(gg.tensor([5.0]))
    assert first.numpy().tolist() == [2.0] and second.numpy().tolist() == [10.0]


def test_a_new_signature_traces_again_and_the_cache_is_bounded():
    f = gg.function(lambda x, n: x * n, max_traces=2)
    f(gg.ones((2,)), 2.0)
    f(gg.ones((2,)), 2.0)
    f(gg.ones((3,)), 2.0)  # a new shape
    f(gg.ones((3,)), 3.0)  # a new Python value
    f(gg.ones((3,), dtype="float64"), 3.0)  # a new dtype
    assert f.trace_count == 4 and len(f.diagnostics()) == 2
    assert f(gg.ones((2,)), 2.0).numpy().tolist() == [2.0, 2.0] and f.trace_count == 5  # evicted: traced again


@pytest.mark.parametrize("read", [
    lambda t: t.item(), lambda t: t.numpy(), lambda t: float(t), lambda t: bool(t > 0), lambda t: t.tolist(),
    lambda t: np.asarray(t), lambda t: t.data, lambda t: int(t), lambda t: f"{t:.2f}",
], ids=["item", "numpy", "float", "if", "tolist", "asarray", "data", "int", "format"])
def test_reading_a_traced_value_on_the_host_is_a_trace_error_naming_the_line(read):
    def fn(x):
        y = gg.sum(x * 2.0)
        read(y)
        return y
    with pytest.raises(gg.TraceError, match=r"test_function\.py:\d+"):
        gg.function(fn)(gg.tensor([1.0, 2.0]))


def test_data_dependent_control_flow_is_a_trace_error():
    @gg.function
    def fn(x):
        if gg.sum(x) > 0:
            return x
        return -x
    with pytest.raises(gg.TraceError, match="bool"):
        fn(gg.tensor([1.0]))


def test_reading_constants_and_shapes_is_allowed():
    c = gg.tensor([3.0])

    @gg.function
    def fn(x):
        assert x.shape == (1,) and c.item() == 3.0
        return x * c
    assert fn(gg.tensor([2.0])).item() == 6.0 and fn(gg.tensor([4.0])).item() == 12.0


def test_variables_may_be_created_on_the_first_trace_only():
    made = []

    @gg.function
    def fn(x):
        if not made or x.shape != (1,):
            made.append(gg.Variable(x * 0.0 + 1.0))
        return x * made[0]
    assert fn(gg.tensor([2.0])).item() == 2.0 and fn(gg.tensor([3.0])).item() == 3.0
    with pytest.raises(gg.TraceError, match="first trace"):
        fn(gg.tensor([1.0, 2.0]))


def test_a_random_draw_returned_as_host_data_is_refused():
    with pytest.raises(gg.TraceError, match="permutation"):
        gg.function(lambda x: x[gg.random.permutation(2)])(gg.tensor([1.0, 2.0]))


def test_python_side_effects_run_once_per_trace():
    seen = []

    @gg.function
    def fn(x):
        seen.append(1)
        return x + 1.0
    for _ in range(3):
        fn(gg.tensor([0.0]))
    assert seen == [1]


def test_under_a_recording_tape_the_function_runs_eagerly_so_the_tape_sees_it():
    f = gg.function(lambda x: gg.exp(x))
    x = gg.tensor([0.5])
    f(x)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert tape.gradient(y, x).numpy().tolist() == gg.exp(x).numpy().tolist()


def test_untraceable_work_runs_eagerly_with_a_warning_and_the_right_values():
    @gg.function
    def fn(x):
        try:
            return gg.linalg.inv(x)
        except gg.LinAlgError:
            return x
    singular = gg.tensor([[1.0, 1.0], [1.0, 1.0]])
    with pytest.warns(RuntimeWarning, match="runs eagerly"):
        assert fn(singular).numpy().tolist() == singular.numpy().tolist()
    regular = gg.tensor([[2.0, 0.0], [0.0, 4.0]])
    assert fn(regular).numpy().tolist() == [[0.5, 0.0], [0.0, 0.25]]
    assert "runs eagerly" in fn.diagnostics()[0]


def test_threads_trace_and_replay_their_own_calls():
    f = gg.function(lambda x: gg.tanh(x) * 3.0)
    results = {}

    def work(i):
        results[i] = [f(gg.tensor([float(i + k)])).numpy() for k in range(5)]
    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, values in results.items():
        for k, v in enumerate(values):
            assert_same(v, (gg.tanh(gg.tensor([float(i + k)])) * 3.0).numpy())


def _peak_and_growth(fn, *args):
    """The peak of memory allocated while ``fn(*args)`` runs, and what it still holds after (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn(*args)
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        return peak - base, current - base
    finally:
        tracemalloc.stop()


def test_a_replay_with_its_buffers_needs_no_more_memory_than_the_eager_step():
    """W4's step (MLP 512-1024-1024-10, batch 256, SGD): the plan's own buffers (what the trace leaves
    held) plus the replay's peak, against the eager step's peak (both past a first call)."""
    rng = np.random.default_rng(0)
    x = gg.tensor(rng.standard_normal((256, 512)).astype(np.float32))
    y = gg.tensor(rng.integers(0, 10, 256))

    def make_step():
        layers = [gg.nn.Dense(512, 1024, activation="relu", seed=1), gg.nn.Dense(1024, 1024, activation="relu", seed=2),
                  gg.nn.Dense(1024, 10, seed=3)]
        model, opt = gg.nn.Sequential(*layers), gg.optimizers.SGD(0.01)
        variables = model.trainable_variables
        return lambda x, y: opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), variables)
    eager, traced = make_step(), gg.function(make_step())
    _, eager_slots = _peak_and_growth(eager, x, y)
    _, plan_and_slots = _peak_and_growth(traced, x, y)  # the trace: the plan's buffers
    eager_peak, _ = _peak_and_growth(eager, x, y)
    replay_peak, _ = _peak_and_growth(traced, x, y)
    plan_buffers = plan_and_slots - eager_slots
    assert plan_buffers > 0
    assert replay_peak + plan_buffers <= eager_peak, (replay_peak, plan_buffers, eager_peak)


def test_gg_function_decorates_methods():
    class Scale:
        def __init__(self):
            self.w = gg.Variable(2.0)

        @gg.function
        def __call__(self, x):
            return x * self.w
    s = Scale()
    assert s(gg.tensor(3.0)).item() == 6.0 and s(gg.tensor(4.0)).item() == 8.0


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_gpugrad_train_through_gg_function_gives_the_eager_weights_to_the_bit(model, tmp_path):
    from gpugrad.training import train
    results = {}
    for eager in (True, False):
        path = tmp_path / f"{eager}.npz"
        results[eager] = train(model, epochs=1, device="cpu", progress=False, save=str(path), eager=eager)
    assert results[True].final_loss == results[False].final_loss
    assert results[True].test_accuracy == results[False].test_accuracy
    eager_weights, traced_weights = np.load(tmp_path / "True.npz"), np.load(tmp_path / "False.npz")
    assert sorted(eager_weights.files) == sorted(traced_weights.files)
    for name in eager_weights.files:
        assert_same(traced_weights[name], eager_weights[name])


@pytest.mark.gpu
def test_on_a_gpu_runs_of_kernel_steps_replay_as_cuda_graphs_to_the_eager_bits():
    x0 = np.random.default_rng(0).uniform(-1, 1, 16).astype(np.float32)

    def w1(x):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(20):
                y = gg.tanh(y) * 1.01
            loss = gg.sum(y)
        return loss, tape.gradient(loss, x)
    f = gg.function(w1)
    for k in range(3):
        x = gg.tensor(x0 + k, device="cuda")
        _assert_same_result(f(x), w1(gg.tensor(x0 + k, device="cuda")))
    line = f.diagnostics()[0]
    assert "CUDA graphs: " in line and "steps graphed" in line and "failed" not in line, line


GRAPH_REPORT = r"(CUDA graphs: \d+ segments?, (\d+) of (\d+) steps graphed|no CUDA graph: no run of graph-safe kernel " \
               r"steps among (\d+) steps)"


@pytest.mark.gpu
@pytest.mark.parametrize("model", ["small", "mlp", "cnn"])
def test_on_a_gpu_the_training_step_captures_no_library_call_and_says_how_much_is_graphed(model):
    # CuPy 14.2 refuses cuBLAS during a capture: the products (Dense, MatMul, Conv2D) run between the graphs
    from gpugrad.training import build_model
    models = [_mlp(device="cuda") if model == "small" else build_model(model, 0, "cuda") for _ in range(2)]
    opts = [gg.optimizers.Adam(0.01), gg.optimizers.Adam(0.01)]
    steps = [(lambda m, o: lambda x, y: o.minimize(lambda: gg.softmax_cross_entropy(m(x), y),
                                                   m.trainable_variables))(m, o) for m, o in zip(models, opts)]
    traced = gg.function(steps[1])
    shape = {"small": (6, 8), "mlp": (6, 64), "cnn": (6, 1, 8, 8)}[model]
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = gg.tensor(rng.standard_normal(shape).astype(np.float32), device="cuda")
        y = gg.tensor(rng.integers(0, 4, 6), device="cuda")
        assert_same(traced(x, y).numpy(), steps[0](x, y).numpy())
    for a, b in zip(models[0].trainable_variables, models[1].trainable_variables):
        assert_same(a.numpy(), b.numpy())
    line = traced.diagnostics()[0]
    assert "failed" not in line and re.search(GRAPH_REPORT, line), line
    # Adam's update: a host step between the graphs, then one graphed launch per variable
    n = len(models[1].trainable_variables)
    assert f"the optimizer's step: a host step and {n} update launches" in line, line
    assert int(re.search(GRAPH_REPORT, line).group(2)) >= n, line


def test_one_tensor_passed_twice_is_its_own_signature():
    f = gg.function(lambda a, b: a * b + a)
    x, y = gg.tensor([2.0]), gg.tensor([3.0])
    assert f(x, x).item() == 6.0 and f(x, y).item() == 8.0 and f(y, y).item() == 12.0
    assert f(y, x).item() == 9.0 and f.trace_count == 2


def test_jacobians_and_hessians_inside_replay_to_the_bit():
    def fn(a):
        return gg.jacobian(lambda z: gg.sin(z) * z)(a), gg.hessian(lambda z: gg.sum(z ** 3))(a)
    f = gg.function(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(3):
            x = gg.tensor([1.0 + k, -0.5 * k])
            _assert_same_result(f(x), fn(gg.tensor([1.0 + k, -0.5 * k])))
    assert f.trace_count == 1


@pytest.mark.parametrize("view", [lambda t: gg.transpose(t), lambda t: t[::2], lambda t: t[:, 1:],
                                  lambda t: t[::-1, ::3]], ids=["transpose", "step", "offset", "reversed"])
def test_inputs_laid_out_as_views_replay_to_the_bit(view):
    """A reduction adds in an order that follows the layout: the input buffers keep the argument's strides."""
    rng = np.random.default_rng(0)

    def fn(t):
        return gg.sum(t, axis=1), gg.mean(t), t @ t.T, gg.sum(t, axis=0)
    f = gg.function(fn)
    for seed in range(3):
        x = gg.tensor(rng.standard_normal((257, 129)).astype(np.float32))
        _assert_same_result(f(view(x)), fn(view(x)))
    assert f.trace_count == 1
    f(gg.tensor(np.ascontiguousarray(view(x).numpy())))  # the same shape, C-contiguous: another trace
    assert f.trace_count == 2


def test_a_result_is_laid_out_as_the_eager_result():
    f = gg.function(lambda t: gg.transpose(t * 2.0))
    x = gg.tensor(np.arange(6.0).reshape(2, 3))
    f(x)
    assert f(x).data.strides == gg.transpose(x * 2.0).data.strides


def test_an_error_while_tracing_reaches_the_caller_and_leaves_nothing_recording():
    import sys
    from gpugrad import _recorder
    from gpugrad._tracing import state
    f = gg.function(lambda a, b: a @ b)
    with pytest.raises(gg.ShapeError):
        f(gg.ones((2, 3)), gg.ones((2, 3)))
    assert _recorder.recording_anywhere == [] and state.active == [] and state.current() is None
    assert f(gg.ones((2, 3)), gg.ones((3, 2))).numpy().tolist() == [[3.0, 3.0], [3.0, 3.0]]


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_reductions_of_16_bit_floats_replay_to_the_eager_bits(name, dtype, device):
    # the forward accumulates 16-bit floats in float32: the replay calls the forward's own array function
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes", reason="bfloat16 needs the bfloat16 extra (ml_dtypes)")
    op = getattr(gg, name)

    def f(x):
        return op(x * 1.0, axis=0), op(x + 0.5)
    traced = gg.function(f)
    rng = np.random.default_rng(4)
    for _ in range(4):
        x = gg.tensor(rng.uniform(0, 2, (96, 9)).astype(np.float32), dtype=dtype, device=device)
        for got, want in zip(traced(x), f(x)):
            assert got.dtype == want.dtype and got.numpy().tobytes() == want.numpy().tobytes()
    assert traced.trace_count == 1
