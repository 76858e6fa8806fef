"""gg.autocast / gg.mixed_precision and gg.optimizers.LossScaleOptimizer (issue 19)."""
import copy
import importlib.util
import math
import os
import pickle
import sys
import threading

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import mixed_precision


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    gg.mixed_precision.set_policy("float32")


HAVE_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None
NO_ML_DTYPES = "bfloat16 needs ml_dtypes: pip install -e '.[bfloat16]'"
LOWS = ["float16", pytest.param("bfloat16", marks=pytest.mark.skipif(not HAVE_ML_DTYPES, reason=NO_ML_DTYPES))]


def _rng_variable(shape, seed):
    return gg.Variable(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


# --- the policy ----------------------------------------------------------------------------------

@pytest.mark.parametrize("low", LOWS)
def test_autocast_matmul_dense_conv_round_inputs_and_output(low):
    x, w, b = _rng_variable((5, 7), 0), _rng_variable((7, 3), 1), _rng_variable((3,), 2)
    xc, wc = _rng_variable((2, 3, 6, 6), 3), _rng_variable((4, 3, 3, 3), 4)
    with gg.autocast(low):
        y_mm, y_dense, y_conv = x @ w, gg.dense(x, w, b, activation="relu"), gg.conv2d(xc, wc, padding=1)
    low_dtype = np.dtype(np.float16) if low == "float16" else np.dtype(pytest.importorskip(
        "ml_dtypes", reason="bfloat16 needs ml_dtypes: pip install -e '.[bfloat16]'").bfloat16)
    assert y_mm.dtype == y_dense.dtype == y_conv.dtype == low_dtype
    rnd = lambda a: a.astype(low_dtype).astype(np.float32)  # noqa: E731
    # tensor cores' numbers: rounded inputs, a float32 product, a rounded output
    expect = rnd(rnd(x.numpy()) @ rnd(w.numpy()))
    np.testing.assert_array_equal(y_mm.numpy().astype(np.float32), expect)
    expect_dense = rnd(np.maximum(rnd(x.numpy()) @ rnd(w.numpy()) + rnd(b.numpy()), 0))
    np.testing.assert_allclose(y_dense.numpy().astype(np.float32), expect_dense, rtol=2 ** -7, atol=1e-6)
    f32 = gg.conv2d(xc, wc, padding=1).numpy()
    np.testing.assert_allclose(y_conv.numpy().astype(np.float32), f32, rtol=0.05, atol=0.05)
    assert not np.array_equal(y_conv.numpy().astype(np.float32), f32)  # it did round


@pytest.mark.parametrize("low", LOWS)
def test_gradients_flow_back_in_float32_to_the_variables(low):
    x, w, b = _rng_variable((4, 6), 0), _rng_variable((6, 3), 1), _rng_variable((3,), 2)
    with gg.autocast(low):
        with gg.GradientTape() as tape:
            loss = gg.sum(gg.square(gg.cast(gg.dense(x, w, b, activation="tanh"), "float32")))
    grads = tape.gradient(loss, [x, w, b])
    with gg.GradientTape() as tape:
        ref = gg.sum(gg.square(gg.dense(x, w, b, activation="tanh")))
    refs = tape.gradient(ref, [x, w, b])
    for g, r in zip(grads, refs):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=0.05, atol=0.05)


def test_casts_are_recorded_once_per_input():
    x, w = _rng_variable((2, 3), 0), _rng_variable((3, 2), 1)
    with gg.autocast("float16"):
        with gg.GradientTape(persistent=True) as tape:
            y = x @ w
    types = [rec[0] for rec in tape._ops]  # (op type, inputs, outputs, attrs, ...) records
    # each input cast down once (and, on the CPU, back up exactly), the product, the result rounded
    assert types == ["Cast", "Cast", "Cast", "Cast", "MatMul", "Cast"]
    assert y.dtype == np.float16 and tape.gradient(y, w).dtype == np.float32


def test_float64_and_integers_are_not_cast():
    a = gg.ones((2, 2), dtype="float64")
    with gg.autocast("float16"):
        assert (a @ a).dtype == np.float64


def test_policy_names_nesting_and_disable():
    assert gg.mixed_precision.global_policy().name == "float32"
    gg.mixed_precision.set_policy("mixed_bfloat16")
    p = gg.mixed_precision.global_policy()
    assert (p.name, p.compute_dtype, p.variable_dtype) == ("mixed_bfloat16", "bfloat16", "float32")
    assert mixed_precision.compute_dtype() == "bfloat16"
    with gg.autocast("float16"):
        assert mixed_precision.compute_dtype() == "float16"
        with gg.autocast(enabled=False):
            assert mixed_precision.compute_dtype() is None
            assert (gg.ones((2, 2)) @ gg.ones((2, 2))).dtype == np.float32
    gg.mixed_precision.set_policy("float32")
    assert mixed_precision.compute_dtype() is None and not mixed_precision.active
    with pytest.raises(ValueError, match="mixed_float16"):
        gg.mixed_precision.set_policy("float8")
    with pytest.raises(gg.DTypeError, match="float16"):
        gg.autocast("float64")


def test_autocast_is_per_thread():
    seen = {}

    def other():
        seen["dtype"] = (gg.ones((2, 2)) @ gg.ones((2, 2))).dtype
    with gg.autocast("float16"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        here = (gg.ones((2, 2)) @ gg.ones((2, 2))).dtype
    assert here == np.float16 and seen["dtype"] == np.float32


def test_nn_layers_under_autocast():
    layer = gg.nn.Dense(4, 3, seed=0)
    conv = gg.nn.Conv2D(1, 2, 3, padding=1, seed=0)
    with gg.autocast("float16"):
        assert layer(gg.ones((2, 4))).dtype == np.float16
        assert conv(gg.ones((1, 1, 4, 4))).dtype == np.float16
    assert layer.kernel.dtype == np.float32  # the master copy


def test_traced_step_under_autocast_matches_eager():
    w = _rng_variable((6, 3), 1)
    x = gg.tensor(np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32))

    def step(x):
        return gg.sum(gg.cast(x @ w, "float32"))
    traced = gg.function(step)
    with gg.autocast("float16"):
        eager = step(x).item()
        first, second = traced(x).item(), traced(x).item()
    assert first == second == eager


# --- the loss scale: TF's sequence --------------------------------------------------------------

def _tf_expected(finite_steps, initial, interval):
    """TF's _DynamicLossScaleState.update, written out: (scale, counter, applied) after each step."""
    scale, counter, out = initial, 0, []
    for finite in finite_steps:
        if finite:
            if counter + 1 >= interval:
                scale, counter = (scale * 2 if math.isfinite(scale * 2) else scale), 0
            else:
                counter += 1
        else:
            scale, counter = max(scale / 2, 1.0), 0
        out.append((scale, counter, finite))
    return out


def test_overflow_skips_and_halves_then_growth_interval_doubles_as_tf():
    w = gg.Variable([1.0, 1.0])
    opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=2.0 ** 15, growth_interval=3)
    # TF's documented sequence for: finite, inf, finite x3, nan, finite x3 with growth_interval 3, 2**15:
    expected = [(32768.0, 1), (16384.0, 0), (16384.0, 1), (16384.0, 2), (32768.0, 0), (16384.0, 0),
                (16384.0, 1), (16384.0, 2), (32768.0, 0)]
    pattern = [True, False, True, True, True, False, True, True, True]
    assert [(s, c) for s, c, _ in _tf_expected(pattern, 2.0 ** 15, 3)] == expected
    for k, (finite, (scale, counter)) in enumerate(zip(pattern, expected)):
        before = w.numpy().copy()
        bad = 1.0 if finite else (float("inf") if k == 1 else float("nan"))
        opt.apply_gradients([(gg.tensor([bad, 1.0]), w)])
        assert (opt.loss_scale, opt.counter) == (scale, counter)
        assert opt.iterations == k + 1  # every step, applied or skipped
        assert opt.optimizer.iterations == sum(pattern[:k + 1])  # the applied ones (Keras 3, GradScaler)
        if finite:
            np.testing.assert_allclose(w.numpy(), before - 0.1, rtol=1e-6)
        else:
            np.testing.assert_array_equal(w.numpy(), before)
    assert opt.skipped_steps == 2 and opt.growths == 2
    assert [h[1] for h in opt.history] == ["skip", "growth", "skip", "growth"]


@pytest.mark.parametrize("shape", [(3, 2), ()])
@pytest.mark.parametrize("traced", [False, True])
def test_a_skipped_step_leaves_adam_where_the_step_never_was(traced, shape):
    # Adam's bias correction and the schedule read the wrapped optimizer's step count: a skipped step must
    # not advance it (Keras 3's LossScaleOptimizer, PyTorch's GradScaler), so the run ends bit-equal to
    # plain Adam given the same gradients without the overflowing one
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal(shape).astype(np.float32)
    grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    overflow = np.full(shape, np.inf, np.float32)

    def run(make, steps):
        w = gg.Variable(p0)
        opt = make()

        def step(c):
            return opt.minimize(lambda: gg.sum(w * c), [w])
        step = gg.function(step) if traced else step
        with np.errstate(invalid="ignore"):  # the overflowing step's loss is inf - inf
            for g in steps:
                step(gg.tensor(g))
        return w, opt

    schedule = gg.optimizers.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    scaled, lso = run(lambda: gg.optimizers.LossScaleOptimizer(gg.optimizers.Adam(schedule), initial_scale=8.0),
                      grads[:2] + [overflow] + grads[2:])
    plain, adam = run(lambda: gg.optimizers.Adam(schedule), grads)
    assert lso.skipped_steps == 1 and lso.iterations == 5 and lso.optimizer.iterations == adam.iterations == 4
    assert scaled.numpy().tobytes() == plain.numpy().tobytes()
    for slot in ("m", "v"):
        assert lso.get_slot(scaled, slot).numpy().tobytes() == adam.get_slot(plain, slot).numpy().tobytes()


def test_scale_never_below_one_and_minimize_scales_and_unscales():
    w = gg.Variable([2.0])
    opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.25), initial_scale=2.0, growth_interval=100)
    for _ in range(3):
        opt.apply_gradients([(gg.tensor([float("inf")]), w)])
    assert opt.loss_scale == 1.0
    loss = opt.minimize(lambda: gg.sum(w * w))  # unscaled loss 4, gradient 4: w = 2 - 0.25 * 4
    assert loss.item() == 4.0 and w.numpy().tolist() == [1.0]
    # a float16 overflow of the scaled backward sweep is skipped
    v = gg.Variable([300.0])
    opt16 = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=2.0 ** 15)
    opt16.minimize(lambda: gg.sum(gg.cast(gg.cast(v, "float16") * 100.0, "float32")))
    assert v.numpy().tolist() == [300.0] and opt16.loss_scale == 2.0 ** 14 and opt16.skipped_steps == 1


def test_finiteness_is_one_reduction(monkeypatch):
    from gpugrad.optimizers import loss_scale
    calls = []
    real = np.sum

    def counting(*args, **kwargs):
        calls.append(args[0].size)
        return real(*args, **kwargs)
    monkeypatch.setattr(loss_scale.np, "sum", counting, raising=False)
    ws = [gg.Variable(np.ones(n, np.float32)) for n in (3, 5, 7)]
    opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1))
    opt.apply_gradients([(gg.ones(w.shape), w) for w in ws])
    assert calls == [15]


def test_loss_scale_state_in_checkpoint_pickle_and_deepcopy(tmp_path):
    model = gg.nn.Dense(2, 1, seed=0)
    opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.Adam(0.1), initial_scale=64.0, growth_interval=2)
    x = gg.ones((3, 2))
    for _ in range(3):
        opt.minimize(lambda: gg.sum(model(x)))
    opt.apply_gradients([(gg.tensor([[float("nan")], [0.0]]), model.kernel), (gg.zeros((1,)), model.bias)])
    state = (opt.loss_scale, opt.counter, opt.iterations, opt.optimizer.iterations, opt.history)
    assert state[2:4] == (4, 3)  # four steps, one skipped
    path = os.path.join(tmp_path, "ckpt.npz")
    gg.save(path, model, optimizer=opt)
    model2 = gg.nn.Dense(2, 1, seed=1)
    opt2 = gg.optimizers.LossScaleOptimizer(gg.optimizers.Adam(0.1), growth_interval=2)
    gg.load(path, model2, optimizer=opt2)
    assert (opt2.loss_scale, opt2.counter, opt2.iterations, opt2.optimizer.iterations, opt2.history) == state
    np.testing.assert_array_equal(opt2.get_slot(model2.kernel, "m").numpy(), opt.get_slot(model.kernel, "m").numpy())
    with pytest.raises(gg.CheckpointError, match="Adam"):
        gg.load(path, model2, optimizer=gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1)))
    for twin in (copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert (twin.loss_scale, twin.counter, twin.iterations, twin.optimizer.iterations, twin.history) == state
    m3, o3 = pickle.loads(pickle.dumps((model, opt)))
    o3.minimize(lambda: gg.sum(m3(x)))  # the unpickled optimizer updates the unpickled variables
    assert o3.counter == 1 and o3.variables()[0] is m3.kernel or o3.variables()[0] is m3.bias


def test_traced_minimize_replays_the_check():
    w = gg.Variable([1.0])
    opt = gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=4.0, growth_interval=2)

    @gg.function
    def step(x):
        return opt.minimize(lambda: gg.sum(w * x), [w])
    step(gg.tensor([1.0]))
    step(gg.tensor([1.0]))  # a replay: growth after 2 finite steps
    assert opt.loss_scale == 8.0 and opt.counter == 0
    step(gg.tensor([float("inf")]))  # a replay sees the overflow, skips and halves
    assert opt.loss_scale == 4.0 and opt.skipped_steps == 1
    np.testing.assert_allclose(w.numpy(), [0.8], rtol=1e-6)
    assert step.trace_count == 1


def test_bad_arguments():
    with pytest.raises(TypeError):
        gg.optimizers.LossScaleOptimizer("adam")
    with pytest.raises(ValueError):
        gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), initial_scale=0.5)
    with pytest.raises(ValueError):
        gg.optimizers.LossScaleOptimizer(gg.optimizers.SGD(0.1), growth_interval=0)


# --- training: within 0.5 points of float32 -------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_digits_low_precision_within_half_a_point(model):
    from gpugrad.training import train
    ref = train(model, device="cpu", progress=False)
    for precision in ("mixed16", "bf16") if HAVE_ML_DTYPES else ("mixed16",):
        result = train(model, device="cpu", progress=False, precision=precision)
        assert abs(result.test_accuracy - ref.test_accuracy) <= 0.005, (precision, result.summary())
        if precision == "mixed16":
            assert result.loss_scale["scale"] >= 1 and "loss scale" in result.summary()
            assert result.summary_dict()["loss_scale"]["skips"] == result.loss_scale["skips"]
        else:
            assert result.loss_scale is None


@pytest.mark.parametrize("low", LOWS)
def test_the_sensitive_ops_compute_in_float32_under_a_policy_and_in_their_dtype_without(low):
    low_dtype = np.dtype(np.float16) if low == "float16" else np.dtype(pytest.importorskip(
        "ml_dtypes", reason="bfloat16 needs ml_dtypes: pip install -e '.[bfloat16]'").bfloat16)
    x = gg.tensor(np.linspace(-3, 3, 12).reshape(3, 4), dtype=low_dtype)
    labels = gg.tensor([0, 3, 1])
    ops = {"softmax": lambda: gg.softmax(x), "log_softmax": lambda: gg.log_softmax(x),
           "softmax_cross_entropy": lambda: gg.softmax_cross_entropy(x, labels),
           "sigmoid_cross_entropy": lambda: gg.sigmoid_cross_entropy(x, gg.ones((3, 4), dtype=low_dtype)),
           "mse": lambda: gg.mse(x, gg.zeros((3, 4), dtype=low_dtype)), "logsumexp": lambda: gg.logsumexp(x)}
    for name, op in ops.items():
        assert op().dtype == low_dtype, name  # no policy: the input's dtype
        with gg.autocast(low):
            inside = op()
        assert inside.dtype == np.float32, name
        with gg.autocast(low, enabled=False):
            assert op().dtype == low_dtype, name
    with gg.autocast(low):  # a float32 operand is left as it is
        assert gg.softmax(gg.cast(x, "float32")).dtype == np.float32


def test_autocast_in_bfloat16_without_ml_dtypes_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)
    with pytest.raises(gg.DTypeError, match=r"gpugrad\[bfloat16\]"):
        gg.autocast("bfloat16")


def test_a_traced_function_traces_again_under_another_policy():
    w = _rng_variable((3, 2), 1)
    f = gg.function(lambda x: x @ w)
    x = gg.ones((2, 3))
    plain = f(x)
    with gg.autocast("float16"):
        low = f(x)
        assert f(x).dtype == np.float16
    assert plain.dtype == np.float32 and low.dtype == np.float16 and f.trace_count == 2
    assert f(x).dtype == np.float32 and f.trace_count == 2
