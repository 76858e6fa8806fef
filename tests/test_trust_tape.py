"""Trust in the tape engine: declared buffer reuse, per-thread recording, gradient dtypes,
and TensorFlow's tape semantics (each test failed before the engine was changed for it)."""
import sys
import threading

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import registry
from gpugrad._recorder import active_tapes
from gpugrad._donation import DONATE_MIN_SIZE
from tests.conftest import HOT_GRADIENTS, swapped_cpu_formula

LARGE = 2 * DONATE_MIN_SIZE  # above the size at which the sweep donates dy's buffer (64 Ki elements)

# every hot gradient of one saved tensor and dy (params at their defaults), drawn where its check draws
FUSED = {h.name: (h.function, h.input_range(h.inputs[0]).low, h.input_range(h.inputs[0]).high)
         for h in HOT_GRADIENTS.values() if len(h.inputs) == 2 and all(p in h.defaults for p in h.params)}


@pytest.fixture(autouse=True)
def _no_tape_left():
    yield
    assert not active_tapes(), f"tapes left recording: {active_tapes()}"


def _register_once(op_type, rule, **declared):
    if op_type not in registry.rules:
        gg.RegisterGradient(op_type, **declared)(rule)


# --------------------------------------------------------------------------- buffer reuse is declared


@pytest.mark.parametrize("size", [DONATE_MIN_SIZE + 7, LARGE, 3 * LARGE])
@pytest.mark.parametrize("name", sorted(FUSED))
def test_a_user_rule_that_reuses_dy_after_a_fused_op_gets_the_right_numbers(name, size):
    fused, low, high = FUSED[name]
    op_type = f"TrustReuse_{name}"

    def rule(op, dy):
        (x,) = op.inputs
        return [fused(x, dy) + dy]  # dy read again after the fused op: it must be intact

    _register_once(op_type, rule)
    rng = np.random.default_rng(0)
    a = rng.uniform(low, high, size).astype(np.float32)
    w = rng.uniform(0.5, 1.5, size).astype(np.float32)
    x = gg.tensor(a)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.tensor(a * 1.0)
        gg.record_operation(op_type, [y], [x])
        loss = gg.sum(y * gg.tensor(w))  # dy = w: a fresh array nobody else holds
    got = tape.gradient(loss, x).numpy()
    expected = fused(gg.tensor(a), gg.tensor(w)).numpy() + w
    np.testing.assert_array_equal(got, expected)


def test_a_rule_reading_outputs_through_a_helper_gets_them():
    def first_output(op):
        return op.outputs[0]

    def rule(op, dy):
        return [dy * 2.0 * first_output(op)]  # y = x here, so this is the gradient of x^2: 2 x

    _register_once("TrustHelperOutputs", rule)
    x = gg.tensor([1.0, 3.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.tensor(x.numpy())
        gg.record_operation("TrustHelperOutputs", [y], [x])
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 6.0]


def test_a_rule_declared_not_reading_outputs_that_reads_them_fails_clearly():
    _register_once("TrustLiesAboutOutputs", lambda op, dy: [dy * op.outputs[0]], reads_outputs=False)
    x = gg.tensor([1.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.tensor(x.numpy())
        gg.record_operation("TrustLiesAboutOutputs", [y], [x])
    with pytest.raises(gg.GradientError, match="reads_outputs=False"):
        tape.gradient(y, x)


def test_reuse_and_output_freeing_are_declarations_of_the_builtin_rules_only():
    assert registry.rules_donating_dy == {"Square", "Sqrt", "Rsqrt", "Reciprocal", "Exp", "Log", "Tanh",
                                          "Sigmoid", "Relu", "LeakyRelu", "Elu", "Softplus", "Softsign", "Gelu",
                                          "Abs", "Clip", "Tan", "Atan", "Sinh", "Cosh", "Silu", "LogSigmoid",
                                          "Cbrt", "Selu"}
    for op_type in ("Exp", "Tanh", "Sigmoid", "Sqrt", "Relu", "Softmax"):
        assert op_type in registry.rules_reading_outputs
    user = [t for t in registry.rules if t.startswith("Trust")]
    assert user and not registry.rules_donating_dy.intersection(user)


@pytest.mark.skipif(not gg._donation.donating, reason="buffer donation needs CPython < 3.14 reference counts")
def test_a_builtin_rule_still_writes_into_a_free_dy():
    """Tanh declares donates_dy: its gradient lands in dy's own buffer (the speed W3/W4 keep)."""
    seen = {}
    fused = HOT_GRADIENTS["tanh_grad"].cpu

    def spy(y, dy, out=None):
        seen["out_is_dy"] = out is dy
        return fused(y, dy, out=out)

    x = gg.tensor(np.linspace(-1, 1, LARGE, dtype=np.float32))
    w = gg.tensor(np.full(LARGE, 2.0, np.float32))
    with swapped_cpu_formula("tanh_grad", spy), _one_thread():
        with gg.GradientTape() as tape:
            tape.watch(x)
            loss = gg.sum(gg.tanh(x) * w)
        g = tape.gradient(loss, x)
    assert seen == {"out_is_dy": True}
    np.testing.assert_allclose(g.numpy(), 2 * (1 - np.tanh(x.numpy()) ** 2), rtol=1e-6)


class _one_thread:
    def __enter__(self):
        self.n = gg.get_num_threads()
        gg.set_num_threads(1)

    def __exit__(self, *exc):
        gg.set_num_threads(self.n)


# --------------------------------------------------------------------------- per-thread recording


def test_threads_each_with_a_tape_get_their_own_gradients():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython allows
    errors, results = [], {}

    def work(k):
        try:
            for step in range(40):
                x = gg.tensor(np.full(3, float(k + 1)))
                with gg.GradientTape() as tape:
                    tape.watch(x)
                    y = gg.sum(x * x * float(step + 1))
                g = tape.gradient(y, x)
                assert g is not None, "None gradient"
                expected = 2.0 * (k + 1) * (step + 1)
                assert g.numpy().tolist() == [expected] * 3, (g.numpy(), expected)
            results[k] = True
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"thread {k}: {type(e).__name__}: {e}")

    try:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors[:3]
    assert len(results) == 8


def test_a_tape_does_not_record_another_threads_ops():
    x = gg.tensor([1.0, 2.0])
    entered, done = threading.Event(), threading.Event()
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)

        def other():
            entered.wait()
            (x * 3.0).sum()  # reads the watched tensor, in another thread
            assert not active_tapes()  # that thread has no tape recording
            done.set()

        t = threading.Thread(target=other)
        t.start()
        entered.set()
        done.wait(10)
        t.join()
        assert tape._ops == []
        y = (x * x).sum()
    assert len(tape._ops) == 2 and tape.gradient(y, x).numpy().tolist() == [2.0, 4.0]


def test_anomaly_mode_and_custom_gradients_in_threads_stay_in_their_thread():
    errors = []

    @gg.custom_gradient
    def double(x):
        return x * 2.0, lambda dy: dy * 2.0

    def work():
        try:
            for _ in range(30):
                x = gg.tensor([1.0, 2.0])
                with gg.detect_anomaly():
                    with gg.GradientTape() as tape:
                        tape.watch(x)
                        y = gg.sum(double(x) * x)
                    assert tape.gradient(y, x).numpy().tolist() == [4.0, 8.0]
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert not gg.anomaly.enabled()


# --------------------------------------------------------------------------- gradient dtype


def test_a_float32_variable_times_float64_data_gets_a_float32_gradient():
    w = gg.Variable(np.ones(3, np.float32))
    data = gg.tensor(np.array([1.0, 2.0, 3.0]))  # float64, as NumPy data is by default
    with gg.GradientTape() as tape:
        loss = gg.sum(w * data)
    assert loss.dtype == np.float64
    g = tape.gradient(loss, w)
    assert g.dtype == np.float32 and g.numpy().tolist() == [1.0, 2.0, 3.0]


def test_minimize_a_float32_model_on_float64_data():
    w = gg.Variable(np.zeros(2, np.float32))
    x = gg.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]))
    y = gg.tensor(np.array([1.0, 2.0]))
    opt = gg.optimizers.Adam(0.1)
    for _ in range(3):
        opt.minimize(lambda: gg.mean(gg.square(gg.matmul(x, w) - y)), [w])
    assert w.dtype == np.float32 and np.all(w.numpy() != 0)


@pytest.mark.parametrize("low,high", [(np.float16, np.float32), (np.float32, np.float64), (np.float16, np.float64)])
def test_every_source_gets_its_own_dtype_broadcast_or_not(low, high):
    a = gg.tensor(np.array([1.0, 2.0], low))
    b = gg.tensor(np.array([[3.0], [4.0]], high))
    c = gg.tensor(np.array(5.0, low))
    with gg.GradientTape() as tape:
        tape.watch([a, b, c])
        y = gg.sum(a * b * c)
    ga, gb, gc = tape.gradient(y, [a, b, c])
    assert (ga.dtype, gb.dtype, gc.dtype) == (np.dtype(low), np.dtype(high), np.dtype(low))
    assert (ga.shape, gb.shape, gc.shape) == ((2,), (2, 1), ())
    assert ga.numpy().tolist() == [35.0, 35.0] and gc.item() == 21.0


def test_second_order_through_the_dtype_cast():
    x = gg.tensor(np.array([1.0, 2.0], np.float32))
    k = gg.tensor(np.array([3.0, 4.0]))  # float64
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(x * x * k)
        g = inner.gradient(y, x)  # 2 k x, cast to float32
    assert g.dtype == np.float32 and g.numpy().tolist() == [6.0, 16.0]
    h = outer.gradient(g, x)
    assert h.dtype == np.float32 and h.numpy().tolist() == [6.0, 8.0]


def test_cast_is_differentiable_between_floats_and_not_from_integers():
    x = gg.tensor(np.array([1.5, 2.5]))
    i = gg.tensor([1, 2])
    with gg.GradientTape() as tape:
        tape.watch([x, i])
        y = gg.sum(gg.cast(x, "float16") * gg.cast(i, "float16"))
    gx, gi = tape.gradient(y, [x, i])
    assert gx.dtype == np.float64 and gx.numpy().tolist() == [1.0, 2.0] and gi is None
    assert x.astype("float64") is x
    with pytest.raises(gg.DTypeError):
        gg.cast(x, "not a dtype")


# --------------------------------------------------------------------------- TensorFlow's tape semantics


def test_persistent_tape_gradient_inside_its_block_gives_the_second_derivative():
    x = gg.tensor(3.0, dtype=gg.float64)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        d2 = tape.gradient(tape.gradient(y, x), x)  # TF backprop_test: testPersistentNestedGradient-style
    assert d2.item() == 18.0  # 6 x


def test_non_persistent_tape_gradient_inside_its_block_stops_recording():
    x = gg.tensor(3.0, dtype=gg.float64)
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        assert tape.gradient(y, x).item() == 6.0
        assert not active_tapes()  # as in TensorFlow, a used tape records no more
        with pytest.raises(gg.GradientError):
            tape.gradient(y, x)


def test_watched_variables_answer_after_gradient():
    v, w = gg.Variable(1.0), gg.Variable(2.0)
    with gg.GradientTape() as tape:
        y = v * w
    before = tape.watched_variables()
    tape.gradient(y, [v, w])
    assert tape.watched_variables() == before and [t is s for t, s in zip(before, (v, w))] == [True, True]


def test_ops_reading_only_stop_gradient_output_are_not_recorded():
    calls = []
    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        s = gg.stop_gradient(x * 2.0)
        z = gg.tensor(s.numpy() + 1.0)
        gg.record_operation("TrustNeverRun", [z], [s], lambda dy: calls.append(1) or [dy])
        w = s * 3.0
        y = gg.sum(w) + gg.sum(z) + gg.sum(x)
    assert [r[0] for r in tape._ops] == ["Mul", "StopGradient", "Sum", "Add"]
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 1.0]
    assert calls == []


def test_reentering_an_active_tape_is_a_value_error_as_in_tensorflow():
    tape = gg.GradientTape()
    with tape:
        with pytest.raises(ValueError, match="already recording"):
            tape.__enter__()
    assert issubclass(gg.GradientUsageError, gg.GradientError)


# --------------------------------------------------------------------------- custom gradients as TF has them


def test_custom_gradient_may_return_python_and_numpy_values():
    @gg.custom_gradient
    def f(x):
        return np.asarray(x.numpy() * 2.0), lambda dy: dy * 2.0

    @gg.custom_gradient
    def g(x):
        return 5.0, lambda dy: dy * 0.0

    x = gg.tensor([1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        z = g(x)
    assert isinstance(y, gg.Tensor) and isinstance(z, gg.Tensor)
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 2.0]
    assert z.item() == 5.0 and f(x).numpy().tolist() == [2.0, 4.0]


def test_custom_gradient_takes_nested_arguments_and_their_tensors_get_gradients():
    @gg.custom_gradient
    def weighted(pair, scale):
        a, b = pair
        y = a * b * scale

        def grad(dy):
            return [dy * b * scale, dy * a * scale], dy * a * b  # the arguments' structure, as TF allows

        return y, grad

    a, b, c = gg.tensor(2.0), gg.tensor(3.0), gg.tensor(4.0)
    with gg.GradientTape() as tape:
        tape.watch([a, b, c])
        y = weighted([a, b], c)
    ga, gb, gc = tape.gradient(y, [a, b, c])
    assert (ga.item(), gb.item(), gc.item()) == (12.0, 8.0, 6.0)


def test_custom_gradient_with_the_wrong_number_of_gradients_is_a_value_error():
    @gg.custom_gradient
    def f(x, y):
        return x * y, lambda dy: dy

    x, y = gg.tensor(1.0), gg.tensor(2.0)
    with gg.GradientTape() as tape:
        tape.watch([x, y])
        z = f(x, y)
    with pytest.raises(ValueError, match="returned 1 input gradients; expected 2"):
        tape.gradient(z, [x, y])


def test_jacobian_inside_a_persistent_block_is_recorded_and_keeps_watched_variables():
    x = gg.tensor([1.0, 2.0], dtype=gg.float64)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        j = tape.jacobian(y, x)  # diag(3 x^2), recorded on the tape itself
        s = gg.sum(j)
    assert tape.gradient(s, x).numpy().tolist() == [6.0, 12.0]  # d/dx sum(3 x^2) = 6 x
    v = gg.Variable([1.0, 2.0])
    with gg.GradientTape() as once:
        z = v * v
    once.jacobian(z, v)
    assert once.watched_variables() == (v,)


def test_asyncio_tasks_of_one_thread_share_its_tapes_as_a_thread_local_would():
    import asyncio

    x = gg.tensor([1.0, 2.0])

    async def square():
        return x * x

    async def main():
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = gg.sum(await asyncio.create_task(square()))
        return tape.gradient(y, x)

    assert asyncio.run(main()).numpy().tolist() == [2.0, 4.0]


def test_a_pool_worker_thread_does_not_record_on_the_callers_tape():
    from concurrent.futures import ThreadPoolExecutor

    x = gg.tensor([1.0, 2.0])
    with ThreadPoolExecutor(2) as pool:
        with gg.GradientTape(persistent=True) as tape:
            tape.watch(x)
            pool.submit(lambda: (x * 3.0, x + 1.0)).result()
            y = gg.sum(x * x)
        assert [r[0] for r in tape._ops] == ["Mul", "Sum"]
        assert tape.gradient(y, x).numpy().tolist() == [2.0, 4.0]


def test_output_gradients_of_another_dtype_start_the_sweep_in_the_targets_dtype():
    x = gg.tensor(np.array([1.0, 2.0], np.float32))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=np.array([1.0, 0.5]))  # float64 weights
    assert g.dtype == np.float32 and g.numpy().tolist() == [2.0, 2.0]


def test_the_gradient_checker_counts_a_nan_as_a_mismatch():
    from gpugrad.gradient_checker import max_error

    assert max_error([np.array([[np.nan, 1.0]])], [np.array([[0.0, 1.0]])]) == float("inf")
    assert max_error([np.array([[0.0, 1.0]])], [np.array([[0.0, np.nan]])]) == float("inf")
    assert max_error([np.array([[0.0, 1.0]])], [np.array([[0.0, 1.5]])]) == 0.5


def test_a_custom_gradient_returning_a_variable_gives_a_snapshot_not_the_live_array():
    v = gg.Variable([1.0, 2.0])

    @gg.custom_gradient
    def passthrough(x):
        return v, lambda dy: dy * 0.0

    x = gg.tensor([0.0, 0.0])
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = passthrough(x)
    v.assign([5.0, 5.0])
    assert y.numpy().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("call", ["watch", "gradient source", "gradient target", "jacobian source"])
def test_a_non_tensor_given_to_a_tape_is_both_a_type_error_and_tensorflows_value_error(call):
    x = gg.tensor(1.0)
    with gg.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
    calls = {"watch": lambda: tape.watch(1), "gradient source": lambda: tape.gradient(y, 1.0),
             "gradient target": lambda: tape.gradient(2.0, x), "jacobian source": lambda: tape.jacobian(y, "x")}
    with pytest.raises(gg.NotATensorError) as info:
        calls[call]()
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
