"""gg.function replays only what its trace still describes; each case is checked against the eager call.

- an op whose output shape comes from traced values (boolean-mask indexing, nonzero, repeat by a
  tensor of counts, lstsq) makes the function run eagerly, with the reason in ``diagnostics()``;
- NumPy arguments are fed by value: a fresh array each call replays (no retrace), an array written
  in place gives its new values, an array at a recycled address gives its own; NumPy work on one
  outside gpugrad's ops is a TraceError naming the line;
- the Python state the trace read is guarded: a Module's ``training`` flag, its Variables and
  settings, the function's closure cells and globals (numbers by value, NumPy arrays by value,
  Variables and other objects by identity); a change traces again.
"""
import gc
import warnings

import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tracing import state

from .conftest import assert_same


def _quiet(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the one "runs eagerly" warning
        return f(*args)


def _value_and_grad(fn):
    def step(x, *rest):
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = fn(x, *rest)
        return y, tape.gradient(y, x)
    return step


def _same(a, b):
    for x, y in zip(a, b):
        assert_same(x.numpy(), y.numpy())


# --------------------------------------------------------------------------- data-dependent shapes


def test_boolean_mask_indexing_gives_the_eager_values_and_gradients_for_every_mask():
    step = _value_and_grad(lambda x, m: gg.sum(gg.square(x[m])))
    traced = gg.function(step)
    x = gg.tensor([1.0, 2.0, 3.0, 4.0])
    for m in ([True, False, True, False], [True, True, True, False], [False, False, False, True],
              [True, False, True, False]):
        _same(_quiet(traced, x, gg.tensor(m)), step(x, gg.tensor(m)))
    assert traced.trace_count == 1
    assert "boolean-mask indexing" in traced.diagnostics()[0] and "runs eagerly" in traced.diagnostics()[0]


def test_a_mask_computed_from_the_input_gives_the_eager_values():
    step = _value_and_grad(lambda x: gg.sum(x[x > 2.0] * 3.0))
    traced = gg.function(step)
    for v in ([1.0, 3.0, 4.0], [3.0, 3.0, 3.0], [3.0, 1.0, 1.0], [0.0, 0.0, 0.0]):
        _same(_quiet(traced, gg.tensor(v)), step(gg.tensor(v)))


@pytest.mark.parametrize("fn, args", [
    (lambda x: gg.nonzero(x)[0] * 1, [[0.0, 1.0, 2.0], [3.0, 0.0, 0.0], [1.0, 1.0, 1.0]]),
    (lambda x: gg.where(x)[0] * 1, [[0.0, 1.0, 2.0], [3.0, 0.0, 0.0], [1.0, 1.0, 1.0]]),
    (lambda x: gg.repeat(gg.tensor([1.0, 2.0, 3.0]), x) * 2.0, [[1, 0, 2], [3, 1, 1], [0, 0, 1]]),
    (lambda x: gg.tile(gg.tensor([1.0, 2.0]), x) * 2.0, [[2], [3], [1]]),
    (lambda x: gg.pad(gg.tensor([1.0, 2.0]), x) * 2.0, [[1, 0], [2, 3], [0, 0]]),
    (lambda x: gg.linalg.lstsq(x, gg.tensor([1.0, 2.0, 2.0], dtype="float64"))[1] * 1.0,
     [[[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]]),
], ids=["nonzero", "where_one_argument", "repeat_by_tensor", "tile_by_tensor", "pad_by_tensor", "lstsq_residuals"])
def test_every_op_with_a_data_dependent_shape_runs_eagerly_with_its_reason(fn, args):
    traced = gg.function(fn)
    dtype = "float64" if "lstsq" in repr(fn.__code__.co_names) else None
    for a in args:
        got, want = _quiet(traced, gg.tensor(a, dtype=dtype)).numpy(), fn(gg.tensor(a, dtype=dtype)).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert traced.trace_count == 1 and "depends on the values" in traced.diagnostics()[0]


def test_a_constant_mask_replays_with_no_eager_fallback():
    mask = np.array([True, False, True])
    traced = gg.function(lambda x: x[mask] * 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]):
            assert_same(traced(gg.tensor(v)).numpy(), (gg.tensor(v)[mask] * 2.0).numpy())
    assert "eagerly" not in traced.diagnostics()[0]


def test_an_undeclared_data_dependent_shape_raises_on_replay_instead_of_a_wrong_number(monkeypatch):
    # the declaration taken away: the call step's replay sees an array unlike the trace's and refuses
    monkeypatch.setattr(state, "dynamic_output_shape", lambda *a: None)
    traced = gg.function(lambda x, m: x[m] * 2.0)
    x = gg.tensor([1.0, 2.0, 3.0])
    traced(x, gg.tensor([True, False, True]))
    with pytest.raises(gg.TraceError, match="shape"):
        traced(x, gg.tensor([True, True, True]))
    with pytest.raises(gg.TraceError, match="shape"):
        traced(x, gg.tensor([True, False, False]))  # (1,) would broadcast into (2,)


# --------------------------------------------------------------------------- NumPy arguments


def test_a_fresh_numpy_array_each_call_replays_its_values_without_a_new_trace():
    traced = gg.function(lambda x, a: gg.sum(x * gg.tensor(a)) + gg.exp(x[0]) * a[1:2])
    x = gg.tensor([1.0, 2.0])
    for i in range(4):
        a = np.array([float(i), 2.0 * i])
        assert_same(traced(x, a).numpy(), (gg.sum(x * gg.tensor(a)) + gg.exp(x[0]) * a[1:2]).numpy())
    assert traced.trace_count == 1


def test_a_numpy_array_written_in_place_gives_its_new_values():
    traced = gg.function(lambda x, a: x * gg.tensor(a))
    x, a = gg.tensor([1.0, 1.0]), np.array([1.0, 2.0])
    traced(x, a)
    a[:] = [5.0, 7.0]
    assert traced(x, a).numpy().tolist() == [5.0, 7.0] and traced.trace_count == 1


def test_a_new_numpy_array_at_a_recycled_address_gives_its_own_values():
    traced = gg.function(lambda x, a: x * gg.tensor(a))
    x = gg.tensor([1.0, 1.0])
    for i in range(5):  # each temporary is freed after its call, and CPython often gives the next its address
        a = np.array([float(i), float(i + 1)])
        assert traced(x, a).numpy().tolist() == [float(i), float(i + 1)]
        del a
        gc.collect()
    assert traced.trace_count == 1


def test_a_numpy_arguments_shape_or_dtype_is_its_signature():
    traced = gg.function(lambda a: gg.tensor(a) * 2.0)
    traced(np.ones(2))
    traced(np.ones(3))
    traced(np.ones(3, np.float32))
    assert traced.trace_count == 3 and traced(np.full(3, 2.0)).numpy().tolist() == [4.0, 4.0, 4.0]


@pytest.mark.parametrize("work", [
    lambda a: np.mean(a), lambda a: a * 2.0, lambda a: a[0], lambda a: float(a.sum()), lambda a: a.tolist(),
    lambda a: a.copy(), lambda a: bool(a[0] > 0),
], ids=["np_mean", "multiply", "element", "float_sum", "tolist", "copy", "if"])
def test_numpy_work_on_a_numpy_argument_outside_gpugrads_ops_is_a_trace_error_naming_the_line(work):
    def fn(x, a):
        c = work(a)
        return x * gg.tensor(np.asarray(c, dtype=np.float32).reshape(-1)[:1])
    with pytest.raises(gg.TraceError, match=r"test_function_guards\.py:\d+"):
        gg.function(fn)(gg.tensor([1.0]), np.array([1.0, 2.0]))


def test_a_numpy_argument_as_an_index_or_a_mask_gives_each_calls_values():
    x = gg.tensor([1.0, 2.0, 3.0])
    by_index = gg.function(lambda x, i: x[i] * 2.0)
    by_mask = gg.function(lambda x, m: x[m] * 2.0)
    for i, m in (([0, 2], [True, False, True]), ([1, 1], [False, True, True]), ([2, 0], [True, True, True])):
        i, m = np.array(i), np.array(m)
        assert_same(by_index(x, i).numpy(), (x[i] * 2.0).numpy())
        assert_same(_quiet(by_mask, x, m).numpy(), (x[m] * 2.0).numpy())
    assert by_index.trace_count == 1 and "eagerly" not in by_index.diagnostics()[0]
    assert "boolean-mask indexing" in by_mask.diagnostics()[0]


def test_views_of_a_numpy_argument_follow_each_calls_values():
    traced = gg.function(lambda x, a: x * a.T[1:, ::-1].reshape(-1))
    x = gg.tensor(np.ones(2))
    for i in range(3):
        a = np.arange(4.0).reshape(2, 2) + i
        assert_same(traced(x, a).numpy(), (x * a.T[1:, ::-1].reshape(-1)).numpy())
    assert traced.trace_count == 1


def test_returning_a_numpy_argument_runs_eagerly_and_gives_the_callers_array():
    traced = gg.function(lambda x, a: (x * 2.0, a))
    for i in range(2):
        a = np.full(2, float(i))
        out = _quiet(traced, gg.tensor([1.0, 1.0]), a)
        assert out[1] is a
    assert "returns a NumPy argument" in traced.diagnostics()[0]


@pytest.mark.parametrize("draw", [lambda: np.random.rand(2), lambda: [__import__("random").random()] * 2],
                         ids=["numpy_global", "python_random"])
def test_a_host_random_draw_runs_eagerly_so_each_call_draws_anew(draw):
    traced = gg.function(lambda x: x * gg.tensor(np.asarray(draw(), np.float32)))
    x = gg.tensor([1.0, 1.0])
    first, second = _quiet(traced, x).numpy(), _quiet(traced, x).numpy()
    assert not np.array_equal(first, second)
    assert "global random generator" in traced.diagnostics()[0]


# --------------------------------------------------------------------------- Python state read


def test_a_modules_training_flag_is_guarded():
    model = gg.nn.Sequential(gg.nn.Dense(4, 4, seed=0), gg.nn.Dropout(0.5, seed=1))
    traced = gg.function(lambda x: model(x))
    x = gg.ones((2, 4))
    traced(x)
    model.eval()
    assert_same(traced(x).numpy(), model(x).numpy())
    assert traced.trace_count == 2


def test_a_layers_variable_rebound_to_a_new_variable_is_read():
    layer = gg.nn.Dense(2, 2, seed=0)
    traced = gg.function(lambda x: layer(x))
    x = gg.ones((1, 2))
    traced(x)
    layer.kernel = gg.Variable(np.full((2, 2), 3.0, np.float32))
    assert_same(traced(x).numpy(), layer(x).numpy())


@pytest.mark.parametrize("freeze", ["module", "variable"])
def test_freezing_after_the_trace_stops_the_updates_as_eagerly(freeze):
    """A trainable flag the trace read is guarded: minimize updates (and a tape watches) trainable ones only."""
    model = gg.nn.Sequential(gg.nn.Dense(3, 2, seed=0), gg.nn.Dense(2, 1, seed=1))
    opt = gg.optimizers.SGD(0.1)
    x = gg.ones((4, 3))
    step = gg.function(lambda x: opt.minimize(lambda: gg.sum(model(x) ** 2)))
    step(x)
    first = model.layers[0]
    if freeze == "module":
        first.trainable = False
    else:
        first.kernel.trainable = False
    frozen = [v for v in first.variables if not v.trainable]
    before = [v.numpy().copy() for v in frozen]
    step(x)
    assert frozen and all(np.array_equal(b, v.numpy()) for b, v in zip(before, frozen))
    assert step.trace_count == 2 and "traced again" in str(step.diagnostics())


def test_a_modules_python_setting_is_guarded():
    class Scale(gg.nn.Module):
        def __init__(self):
            super().__init__()
            self.factor = 2.0

        def forward(self, x):
            return x * self.factor

    m = Scale()
    traced = gg.function(lambda x: m(x))
    x = gg.tensor([1.0])
    assert traced(x).item() == 2.0
    m.factor = 5.0
    assert traced(x).item() == 5.0
    m.factor = 5.0
    traced(x)
    assert traced.trace_count == 2


def test_a_traced_methods_module_is_guarded():
    class Model(gg.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        @gg.function
        def step(self, x):
            return x * self.scale

    m = Model()
    x = gg.tensor([1.0])
    assert m.step(x).item() == 2.0
    m.scale = 3.0
    assert m.step(x).item() == 3.0


def _closure_over_a_number():
    scale = 2.0

    def fn(x):
        return x * scale

    def set_scale(value):
        nonlocal scale
        scale = value
    return fn, set_scale


def test_a_number_in_the_functions_closure_is_guarded_by_value():
    fn, set_scale = _closure_over_a_number()
    traced = gg.function(fn)
    x = gg.tensor([1.0])
    assert traced(x).item() == 2.0
    set_scale(3.0)
    assert traced(x).item() == 3.0
    traced(x)
    assert traced.trace_count == 2


GLOBAL_SCALE = 2.0


def _times_global(x):
    return x * GLOBAL_SCALE


def test_a_global_the_function_names_is_guarded():
    global GLOBAL_SCALE
    traced = gg.function(_times_global)
    x = gg.tensor([1.0])
    try:
        assert traced(x).item() == 2.0
        GLOBAL_SCALE = 4.0
        assert traced(x).item() == 4.0
        assert "traced again: GLOBAL_SCALE (global) changed" in traced.diagnostics()[0]
        with pytest.warns(RuntimeWarning, match="traced again 5 times.*GLOBAL_SCALE"):
            for i in range(4):
                GLOBAL_SCALE = 5.0 + i
                assert traced(x).item() == 5.0 + i
    finally:
        GLOBAL_SCALE = 2.0


def test_a_numpy_array_in_the_closure_written_in_place_is_seen():
    c = np.array([1.0, 2.0])
    traced = gg.function(lambda x: x * gg.tensor(c))  # the constant folds at the trace
    x = gg.tensor([1.0, 1.0])
    traced(x)
    c[:] = [5.0, 6.0]
    assert traced(x).numpy().tolist() == [5.0, 6.0]


def test_a_variable_in_the_closure_rebound_to_a_new_variable_is_read():
    def make():
        w = gg.Variable([1.0, 2.0])

        def fn(x):
            return gg.sum(w * x)

        def rebind():
            nonlocal w
            w = gg.Variable([10.0, 20.0])
        return fn, rebind
    fn, rebind = make()
    traced = gg.function(fn)
    x = gg.tensor([1.0, 1.0])
    assert traced(x).item() == 3.0
    rebind()
    assert traced(x).item() == 30.0


def test_a_training_step_under_guards_still_traces_once():
    model = gg.nn.Sequential(gg.nn.Dense(4, 8, activation="relu", seed=0), gg.nn.Dropout(0.25, seed=3),
                             gg.nn.Dense(8, 3, seed=1))
    opt = gg.optimizers.Adam(0.01)
    variables = model.trainable_variables
    traced = gg.function(lambda x, y: opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), variables))
    rng = np.random.default_rng(0)
    for _ in range(4):
        traced(gg.tensor(rng.standard_normal((5, 4)).astype(np.float32)), gg.tensor(rng.integers(0, 3, 5)))
    assert traced.trace_count == 1 and "eagerly" not in traced.diagnostics()[0]
