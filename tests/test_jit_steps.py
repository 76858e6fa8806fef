"""gg.function(jit_compile=True) on the CPU: the compiled forms beside the fused regions, each against eager over
several calls, in float32 and float64.

- the optimizers' step (SGD plain, momentum, Nesterov, weight decay; Adam with both epsilon placements; AdamW)
  as compiled updates: eager's bits, with a learning-rate schedule, 0-d, empty and one-element variables, a
  variable or slot replaced between calls (the function traces again), settings changed between calls;
- SoftmaxCrossEntropy's forward as one loop: within ``bound.cross_entropy_tolerance`` of eager, NaN and
  infinities as eager, labels out of range raising eager's error; its gradient: eager's bits;
- Dense's bias and ReLU after the product: eager's bits (NaN, infinities and -0.0 too);
- the digits MLP and CNN training steps, jit against eager;
- without numba every step stays as it is.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad._tracing import fusion
from gpugrad._tracing.fusion import bound, cpu_cross_entropy, cpu_dense, cpu_optimizers
from gpugrad.errors import IndexOutOfRangeError
from gpugrad.ops.loss.losses import softmax_cross_entropy_arrays
from gpugrad.backend import CPU

needs_numba = pytest.mark.skipif(not fusion.cpu.available(),
                                 reason="the gpugrad[jit] extra (numba) compiles the CPU steps: pip install 'gpugrad[jit]'")

DTYPES = [np.float32, np.float64]
SHAPES = [(), (0,), (1,), (3, 4), (5,)]  # 0-d, empty, one element, a matrix, a vector


def _stats(f):
    (trace,) = f._traces.values()
    return trace.plan.stats["fusion"]


def _bits(a):
    a = np.asarray(a)
    return a.dtype.str, a.shape, a.tobytes()


# --------------------------------------------------------------------------- the optimizers' step

SCHEDULE = gg.optimizers.schedules.StepDecay(0.1, decay_steps=2, decay_rate=0.5)
OPTIMIZERS = {
    "sgd": lambda: gg.optimizers.SGD(0.1),
    "sgd-schedule": lambda: gg.optimizers.SGD(SCHEDULE),
    "sgd-weight-decay": lambda: gg.optimizers.SGD(0.1, weight_decay=0.01),
    "momentum": lambda: gg.optimizers.SGD(0.05, momentum=0.9),
    "momentum-weight-decay-schedule": lambda: gg.optimizers.SGD(SCHEDULE, momentum=0.8, weight_decay=0.003),
    "nesterov": lambda: gg.optimizers.SGD(0.05, momentum=0.9, nesterov=True),
    "adam-keras": lambda: gg.optimizers.Adam(0.01),
    "adam-pytorch": lambda: gg.optimizers.Adam(0.01, epsilon=1e-8, epsilon_placement="pytorch"),
    "adam-weight-decay-schedule": lambda: gg.optimizers.Adam(SCHEDULE, weight_decay=0.01),
    "adamw": lambda: gg.optimizers.AdamW(0.01, weight_decay=0.1),
    "adamw-pytorch-no-decay": lambda: gg.optimizers.AdamW(0.01, weight_decay=0.0, epsilon_placement="pytorch"),
}


def _problem(make_opt, dtype, shapes=SHAPES, seed=0):
    """``(step, variables, optimizer, gradients)``: ``step(*grads)`` applies gradients given as arguments (so no
    fused region makes them: the step alone is compared); ``gradients(k)``: call ``k``'s."""
    rng = np.random.default_rng(seed)
    variables = [gg.Variable(rng.standard_normal(s).astype(dtype), name=f"v{i}") for i, s in enumerate(shapes)]
    opt = make_opt()

    def step(*grads):
        opt.apply_gradients(zip(grads, variables))
        return variables[-1] * 1.0

    def gradients(k):
        draw = np.random.default_rng(100 + k)
        return [gg.tensor(draw.standard_normal(s).astype(dtype)) for s in shapes]
    return step, variables, opt, gradients


def _state(variables, opt):
    slots = [(name, _bits(a)) for v in variables for name, a in sorted(opt._state[id(v)][1].items())]
    return [_bits(v.numpy()) for v in variables], slots, opt.iterations, [v._version for v in variables]


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_optimizer_step_gives_eager_bits(name, dtype):
    eager, ev, eo, grads = _problem(OPTIMIZERS[name], dtype)
    step, jv, jo, _ = _problem(OPTIMIZERS[name], dtype)
    f = gg.function(step, jit_compile=True)
    for k in range(5):
        assert _bits(f(*grads(k)).numpy()) == _bits(eager(*grads(k)).numpy())
        assert _state(jv, jo) == _state(ev, eo)
    assert f.trace_count == 1 and _stats(f)["optimizer_steps"] == 1


@needs_numba
def test_compiled_optimizer_step_splits_a_large_variable_across_threads_to_eager_bits():
    shapes = [(cpu_optimizers.SPLIT_MIN_CHEAP + 7,), (3,)]
    for name in ("momentum", "adam-keras"):
        eager, ev, eo, grads = _problem(OPTIMIZERS[name], np.float32, shapes)
        step, jv, jo, _ = _problem(OPTIMIZERS[name], np.float32, shapes)
        f = gg.function(step, jit_compile=True)
        for k in range(3):
            f(*grads(k)), eager(*grads(k))
        assert _state(jv, jo) == _state(ev, eo)


@needs_numba
def test_mixed_dtypes_update_in_one_step_to_eager_bits():
    def make():
        rng = np.random.default_rng(1)
        a = gg.Variable(rng.standard_normal(4).astype(np.float32))
        b = gg.Variable(rng.standard_normal(3))  # float64
        opt = gg.optimizers.Adam(0.1)

        def step(ga, gb):
            opt.apply_gradients([(ga, a), (gb, b)])
            return a * 1.0
        return step, [a, b], opt
    eager, ev, eo = make()
    step, jv, jo = make()
    f = gg.function(step, jit_compile=True)
    for k in range(3):
        rng = np.random.default_rng(k)
        ga, gb = gg.tensor(rng.standard_normal(4).astype(np.float32)), gg.tensor(rng.standard_normal(3))
        f(ga, gb), eager(ga, gb)
    assert _state(jv, jo) == _state(ev, eo) and _stats(f)["optimizer_steps"] == 1


def _replace_variable(variables, opt):
    variables[3]._data = variables[3]._data.copy()  # a variable's array rebound (as a loader might)


def _replace_slot(variables, opt):
    slots = opt._state[id(variables[3])][1]
    for key in slots:
        slots[key] = slots[key].copy()


def _set_clipnorm(variables, opt):
    opt.clipnorm = 1.0


def _momentum_off(variables, opt):
    opt.momentum = 0.0


def _nesterov_on(variables, opt):
    opt.nesterov = True


def _rate_changed(variables, opt):
    opt.learning_rate = 0.01


def _decay_as_numpy_float64(variables, opt):
    opt.weight_decay = np.float64(0.01)  # eager computes a float64 temporary: the step runs eagerly then


CHANGES = [  # (optimizer, change between calls, whether the function traces again)
    ("momentum", _replace_variable, True), ("momentum", _replace_slot, True), ("momentum", _set_clipnorm, True),
    ("momentum", _momentum_off, True), ("momentum", _nesterov_on, False), ("momentum", _rate_changed, False),
    ("momentum", _decay_as_numpy_float64, False), ("sgd", _replace_variable, True), ("sgd", _rate_changed, False),
    ("sgd", _decay_as_numpy_float64, False), ("adamw", _replace_slot, True), ("adamw", _set_clipnorm, True),
    ("adamw", _decay_as_numpy_float64, False)]


@needs_numba
@pytest.mark.parametrize("name, change, retraces", CHANGES)
def test_changes_between_calls_are_followed(name, change, retraces):
    eager, ev, eo, grads = _problem(OPTIMIZERS[name], np.float32)
    step, jv, jo, _ = _problem(OPTIMIZERS[name], np.float32)
    f = gg.function(step, jit_compile=True)
    for k in range(2):
        f(*grads(k)), eager(*grads(k))
    change(jv, jo)
    change(ev, eo)
    for k in range(2, 5):
        assert _bits(f(*grads(k)).numpy()) == _bits(eager(*grads(k)).numpy())
    assert _state(jv, jo) == _state(ev, eo)
    assert f.trace_count == (2 if retraces else 1)


def test_optimizers_without_a_compiled_form_keep_their_call_step():
    w = gg.Variable(np.ones(3, np.float32))
    for opt in (gg.optimizers.SGD(0.1, clipnorm=1.0), gg.optimizers.RMSProp(0.1)):
        grad = gg.tensor(np.ones(3, np.float32))
        opt.apply_gradients([(grad, w)])
        assert cpu_optimizers.split(opt, [(grad, w, False)]) is None
    w16 = gg.Variable(np.ones(3, np.float16))
    opt = gg.optimizers.SGD(0.1)
    g16 = gg.tensor(np.ones(3, np.float16))
    opt.apply_gradients([(g16, w16)])
    assert cpu_optimizers.split(opt, [(g16, w16, False)]) is None


def test_without_numba_every_step_stays(monkeypatch):
    monkeypatch.setattr(fusion.cpu, "available", lambda: False)
    monkeypatch.setattr(cpu_optimizers, "kernels", lambda: None)
    step, _, _, grads = _problem(OPTIMIZERS["sgd"], np.float32)
    f = gg.function(step, jit_compile=True)
    with pytest.warns(RuntimeWarning) if not fusion._warned else _no_warning():
        f(*grads(0)), f(*grads(1))
    stats = _stats(f)
    assert stats["optimizer_steps"] == 0 and "cross_entropy_steps" not in stats


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --------------------------------------------------------------------------- softmax cross-entropy

def _logits(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 4).astype(dtype), rng.integers(0, shape[-1], shape[:-1])


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6, 7), (2, 3, 5), (1, 1), (64, 10)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_kernel_within_bound(shape, reduction, dtype):
    logits, labels = _logits(shape, dtype)
    probs, losses = softmax_cross_entropy_arrays(CPU, logits, labels, reduction)
    p = np.empty_like(logits)
    out = np.empty(labels.shape if reduction == "none" else (), dtype)
    kernel = cpu_cross_entropy.compiled()
    code = {"none": 0, "mean": 1, "sum": 2}[reduction]
    assert kernel(logits.reshape(-1, shape[-1]), labels.reshape(-1), p.reshape(-1, shape[-1]), out.reshape(-1), code,
                  np.empty(1, dtype)) == -1
    rtol, atol = bound.cross_entropy_tolerance(logits, labels, reduction)
    assert np.all(np.abs(p - probs) <= rtol * np.abs(probs)), np.max(np.abs(p - probs) / probs)
    assert np.all(np.abs(out - losses) <= atol)


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_and_its_gradient_under_jit(reduction, dtype):
    def loss_and_grad(x, y):
        with gg.GradientTape() as tape:
            tape.watch(x)
            loss = gg.softmax_cross_entropy(x, y, reduction=reduction)
        return loss, tape.gradient(loss, x)
    f = gg.function(loss_and_grad, jit_compile=True)
    for seed in range(3):  # a new batch each call
        logits, labels = _logits((9, 5), dtype, seed)
        x, y = gg.tensor(logits), gg.tensor(labels)
        loss, grad = f(x, y)
        e_loss, e_grad = loss_and_grad(x, y)
        probs, _ = softmax_cross_entropy_arrays(CPU, logits, labels, reduction)
        rtol, atol = bound.cross_entropy_tolerance(logits, labels, reduction)
        eps = np.finfo(dtype).eps
        assert np.all(np.abs(loss.numpy() - e_loss.numpy()) <= atol)
        # grad = probs * dy - dy at the label: the probabilities' difference times dy, and one rounding each
        dy = 1.0 / 9 if reduction == "mean" else 1.0
        allowed = rtol * probs * dy + 2 * eps * np.abs(e_grad.numpy())
        assert np.all(np.abs(grad.numpy() - e_grad.numpy()) <= allowed)
    assert f.trace_count == 1 and _stats(f)["cross_entropy_steps"] == 2


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_nan_and_infinities_as_eager(dtype):
    logits, labels = _logits((5, 4), dtype)
    logits[1, 2] = np.nan
    logits[2, 0] = np.inf
    logits[3, 1] = -np.inf
    f = gg.function(lambda x, y: gg.softmax_cross_entropy(x, y, reduction="none"), jit_compile=True)
    x, y = gg.tensor(logits), gg.tensor(labels)
    f(x, y)
    got, want = f(x, y).numpy(), gg.softmax_cross_entropy(x, y, reduction="none").numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    _, atol = bound.cross_entropy_tolerance(np.where(np.isfinite(logits), logits, 0), labels, "none")
    assert np.all(np.abs(got[finite] - want[finite]) <= atol[finite])
    assert np.isnan(f(x, y, ).numpy()).any()
    mean = gg.function(lambda x, y: gg.softmax_cross_entropy(x, y), jit_compile=True)
    mean(x, y)
    assert np.isnan(mean(x, y).item())


@needs_numba
def test_labels_out_of_range_raise_eagers_error_under_jit():
    f = gg.function(lambda x, y: gg.softmax_cross_entropy(x, y), jit_compile=True)
    logits, labels = _logits((4, 3), np.float32)
    x = gg.tensor(logits)
    f(x, gg.tensor(labels)), f(x, gg.tensor(labels))
    assert _stats(f)["cross_entropy_steps"] == 1
    for bad in (3, -1):
        wrong = labels.copy()
        wrong[2] = bad
        with pytest.raises(IndexOutOfRangeError) as eager_error:
            gg.softmax_cross_entropy(x, gg.tensor(wrong))
        with pytest.raises(IndexOutOfRangeError) as jit_error:
            f(x, gg.tensor(wrong))
        assert str(jit_error.value) == str(eager_error.value)


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_row", [False, True])
def test_cross_entropy_gradient_gives_eager_bits(per_row, dtype):
    grad = gg.ops.softmax_cross_entropy_grad
    f = gg.function(grad, jit_compile=True)
    rng = np.random.default_rng(0)
    for _ in range(3):
        probs = gg.tensor(rng.random((7, 4)).astype(dtype))
        labels = gg.tensor(rng.integers(0, 4, 7))
        dy = gg.tensor(rng.standard_normal(7 if per_row else ()).astype(dtype))
        assert _bits(f(probs, labels, dy).numpy()) == _bits(grad(probs, labels, dy).numpy())
    assert _stats(f)["cross_entropy_steps"] == 1
    with pytest.raises(IndexError):  # a label out of range: eager's formula, and its error
        f(probs, gg.tensor(np.array([0, 1, 2, 3, 4, 0, 1])), dy)


# --------------------------------------------------------------------------- Dense

@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ["relu", None])
@pytest.mark.parametrize("x_shape", [(5, 3), (2, 4, 3), (1, 3)])
def test_dense_bias_and_relu_give_eager_bits(x_shape, activation, dtype):
    rng = np.random.default_rng(0)
    kernel = gg.tensor(rng.standard_normal((3, 6)).astype(dtype))
    bias = rng.standard_normal(6).astype(dtype)
    bias[:3] = [np.nan, -0.0, np.inf]
    bias = gg.tensor(bias)
    f = gg.function(lambda x: gg.dense(x, kernel, bias, activation=activation), jit_compile=True)
    for _ in range(3):
        data = rng.standard_normal(x_shape).astype(dtype)
        data.reshape(-1, 3)[0] = 0.0  # a row of zeros: -0.0 + 0.0 and the ReLU's tie at zero
        x = gg.tensor(data)
        assert _bits(f(x).numpy()) == _bits(gg.dense(x, kernel, bias, activation=activation).numpy())
    assert _stats(f)["dense_steps"] == 1


# --------------------------------------------------------------------------- training steps

def _training(name, dtype, seed=0):
    from gpugrad.training import build_model
    model = build_model(name, seed=seed, device="cpu")
    params = model.trainable_variables
    for v in params:
        v._data = v._data.astype(dtype)
    rng = np.random.default_rng(seed)
    x = gg.tensor(rng.standard_normal((16, 64) if name == "mlp" else (8, 1, 8, 8)).astype(dtype))
    y = gg.tensor(rng.integers(0, 10, x.shape[0]))
    opt = gg.optimizers.SGD(0.1)
    return (lambda: opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), params)), params


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_training_steps_under_jit_follow_eager(name, dtype):
    eager, ev = _training(name, dtype)
    step, jv = _training(name, dtype)
    f = gg.function(step, jit_compile=True)
    tol = 1e-4 if dtype == np.float32 else 1e-11  # the cross-entropy's bound, carried through a few steps
    for _ in range(4):
        np.testing.assert_allclose(f().numpy(), eager().numpy(), rtol=tol, atol=tol)
    for a, b in zip(jv, ev):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
    stats = _stats(f)
    assert f.trace_count == 1 and stats["optimizer_steps"] == 1 and stats["cross_entropy_steps"] == 2
    assert stats["dense_steps"] == (3 if name == "mlp" else 2)
