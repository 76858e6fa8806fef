"""Optimizers: each update against a step computed by hand, and against PyTorch where it is installed.

Hand-computed steps use float64 variables so the expected numbers are exact
to the last few bits; the PyTorch comparisons run several steps on random
gradients with the same hyperparameters (``torch.optim`` documents the
formulas quoted in each test). GPU dispatch is checked twice: on a stand-in GPU
whose "kernels" are host builds of ``kernels/*.cu`` (no GPU needed), and on a
real GPU when there is one.
"""
import importlib.util
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.optimizers import kernels_ref
from gpugrad.optimizers import AdaGrad, Adam, AdamW, RMSProp, SGD, schedules
from gpugrad._recorder import active_tapes
from tests.conftest import device_params

HAVE_TORCH = importlib.util.find_spec("torch") is not None
NO_TORCH = "PyTorch is not installed: the same steps are checked by hand above"


def f64(values):
    return gg.Variable(np.array(values, dtype=np.float64))


def grad64(values):
    return gg.tensor(np.array(values, dtype=np.float64))


def step(opt, var, *grads):
    for g in grads:
        opt.apply_gradients([(grad64(g), var)])
    return var.numpy()


# ---------------------------------------------------------------- one step by hand


def test_sgd_plain_step():
    w = f64([1.0, -2.0])
    # PyTorch SGD(lr=0.1): p -= lr * g
    np.testing.assert_allclose(step(SGD(0.1), w, [0.5, 1.0]), [0.95, -2.1], rtol=0, atol=1e-15)


def test_sgd_weight_decay_is_l2_in_the_gradient():
    w = f64([1.0, -2.0])
    # PyTorch SGD(lr=0.1, weight_decay=0.5): g += 0.5 p -> [1.0, 0.0]; p -= 0.1 g
    np.testing.assert_allclose(step(SGD(0.1, weight_decay=0.5), w, [0.5, 1.0]), [0.9, -2.0], atol=1e-15)


def test_sgd_momentum_two_steps():
    w = f64([1.0])
    opt = SGD(0.1, momentum=0.9)
    # step 1: v = -0.1 * 2 = -0.2, p = 0.8;  step 2: v = 0.9 * -0.2 - 0.1 * 1 = -0.28, p = 0.52
    np.testing.assert_allclose(step(opt, w, [2.0], [1.0]), [0.52], atol=1e-15)
    np.testing.assert_allclose(opt.get_slot(w, "velocity").numpy(), [-0.28], atol=1e-15)


def test_sgd_nesterov_two_steps():
    w = f64([1.0])
    opt = SGD(0.1, momentum=0.9, nesterov=True)
    # step 1: v = -0.2, p += 0.9 * -0.2 - 0.2 = -0.38 -> 0.62
    # step 2: v = 0.9 * -0.2 - 0.1 = -0.28, p += 0.9 * -0.28 - 0.1 = -0.352 -> 0.268
    np.testing.assert_allclose(step(opt, w, [2.0], [1.0]), [0.268], atol=1e-15)


def test_adam_first_steps():
    w = f64([1.0, 1.0])
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-7
    g1, g2 = np.array([2.0, -0.5]), np.array([1.0, 0.5])
    m1, v1 = (1 - b1) * g1, (1 - b2) * g1 ** 2
    p1 = 1.0 - lr * math.sqrt(1 - b2) / (1 - b1) * m1 / (np.sqrt(v1) + eps)
    m2, v2 = b1 * m1 + (1 - b1) * g2, b2 * v1 + (1 - b2) * g2 ** 2
    p2 = p1 - lr * math.sqrt(1 - b2 ** 2) / (1 - b1 ** 2) * m2 / (np.sqrt(v2) + eps)
    opt = Adam(lr, beta_1=b1, beta_2=b2, epsilon=eps)
    np.testing.assert_allclose(step(opt, w, g1), p1, rtol=1e-14)
    assert np.all(np.abs(p1 - 1.0) < lr * 1.0001)  # the first step moves each weight by about lr
    np.testing.assert_allclose(step(opt, w, g2), p2, rtol=1e-14)
    np.testing.assert_allclose(opt.get_slot(w, "m").numpy(), m2, rtol=1e-14)
    np.testing.assert_allclose(opt.get_slot(w, "v").numpy(), v2, rtol=1e-14)


def test_adam_weight_decay_is_coupled():
    w = f64([2.0])
    # g = 0 + 0.5 * 2 = 1; the first Adam step of a positive gradient moves by lr (epsilon 0)
    np.testing.assert_allclose(step(Adam(0.1, weight_decay=0.5, epsilon=0.0), w, [0.0]), [1.9], atol=1e-14)


def test_adamw_decays_then_steps():
    w = f64([2.0])
    # PyTorch AdamW: p *= 1 - lr * wd -> 2 * (1 - 0.1 * 0.5) = 1.9; then Adam's first step, -lr sign(g)
    np.testing.assert_allclose(step(AdamW(0.1, weight_decay=0.5, epsilon=0.0), w, [3.0]), [1.8], atol=1e-14)
    assert AdamW().weight_decay == 1e-2  # PyTorch's default, not Keras' 0.004


def test_rmsprop_steps():
    w = f64([1.0])
    # ms = 0.1 * 4 = 0.4; p -= 0.01 * 2 / (sqrt(0.4) + 1e-3)
    p1 = 1.0 - 0.01 * 2.0 / (math.sqrt(0.4) + 1e-3)
    np.testing.assert_allclose(step(RMSProp(0.01, rho=0.9, epsilon=1e-3), w, [2.0]), [p1], rtol=1e-14)


def test_rmsprop_centered_with_momentum():
    w = f64([1.0])
    opt = RMSProp(0.01, rho=0.5, momentum=0.5, epsilon=0.0, centered=True)
    # step 1: ms = 0.5 * 4 = 2, mg = 0.5 * 2 = 1, denom = sqrt(2 - 1) = 1, buf = 2, p = 0.98
    # step 2: ms = 1 + 0.5 = 1.5, mg = 0.5 + 0.5 = 1, denom = sqrt(0.5), buf = 1 + 1/sqrt(0.5)
    want = 0.98 - 0.01 * (1.0 + 1.0 / math.sqrt(0.5))
    np.testing.assert_allclose(step(opt, w, [2.0], [1.0]), [want], rtol=1e-14)


def test_adagrad_steps():
    w = f64([1.0])
    opt = AdaGrad(0.1, initial_accumulator_value=0.5, epsilon=0.0)
    # acc = 0.5 + 4 = 4.5, p = 1 - 0.1 * 2 / sqrt(4.5); acc = 4.5 + 1, p -= 0.1 / sqrt(5.5)
    want = 1.0 - 0.2 / math.sqrt(4.5) - 0.1 / math.sqrt(5.5)
    np.testing.assert_allclose(step(opt, w, [2.0], [1.0]), [want], rtol=1e-14)
    np.testing.assert_allclose(opt.get_slot(w, "accumulator").numpy(), [5.5], rtol=1e-15)


def test_float32_variables_keep_float32_state():
    w = gg.Variable([1.0, 2.0])
    opt = Adam(0.1)
    opt.apply_gradients([(gg.tensor([1.0, 1.0]), w)])
    assert w.dtype == np.float32 and opt.get_slot(w, "m").dtype == np.float32
    assert opt.get_slot(w, "v").device == w.device


# ---------------------------------------------------------------- the CPU path gives the kernels' reference bits


def _float16_reference_runs(monkeypatch, name):
    calls = []
    real = getattr(kernels_ref, name)
    monkeypatch.setattr(kernels_ref, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


@pytest.mark.parametrize("make, name", [(lambda: SGD(0.1, momentum=0.9), "sgd_momentum_update"),
                                        (lambda: Adam(0.1), "adam_update")])
def test_float16_variables_take_the_numpy_reference(monkeypatch, make, name):
    calls = _float16_reference_runs(monkeypatch, name)
    make().apply_gradients([(gg.tensor([1.0], dtype="float16"), gg.Variable([1.0], dtype="float16"))])
    assert calls == [1]
    make().apply_gradients([(gg.tensor([1.0]), gg.Variable([1.0]))])
    assert calls == [1], "float32 updates in place, without the reference's copies"


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])  # the gradient's layout
@pytest.mark.parametrize("size", [50, (1 << 20) + 3])  # the second is split across threads
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, options", [("sgd_momentum", {}), ("sgd_momentum", {"weight_decay": 1e-3}),
                                           ("sgd_momentum", {"nesterov": True}), ("adam", {}),
                                           ("adam", {"weight_decay": 1e-3}),
                                           ("adam", {"epsilon_placement": "pytorch"})])
def test_cpu_updates_match_the_reference_bit_for_bit(name, options, dtype, size, strided):
    rng = np.random.default_rng(0)
    p0, g = rng.standard_normal(size).astype(dtype), rng.standard_normal(size).astype(dtype)
    # a strided gradient: every other element of a buffer twice the size (split by rows, not flat)
    grad = gg.from_numpy(np.repeat(g, 2)[::2]) if strided else gg.tensor(g)
    assert grad.data.flags.c_contiguous != strided
    w = gg.Variable(p0)
    a, b = np.zeros(size, dtype), np.zeros(size, dtype)
    p = p0.copy()
    if name == "sgd_momentum":
        opt = SGD(0.1, momentum=0.9, **options)
        for _ in range(3):
            opt.apply_gradients([(grad, w)])
            kernels_ref.sgd_momentum_update(p, a, g, 0.1, 0.9, options.get("weight_decay", 0.0),
                                            options.get("nesterov", False))
        state = [opt.get_slot(w, "velocity").numpy()]
        want = [a]
    else:
        opt = Adam(0.01, **options)
        for t in range(1, 4):
            opt.apply_gradients([(grad, w)])
            step_size, bc2_sqrt = kernels_ref.adam_step_params(0.01, 0.9, 0.999, t,
                                                               options.get("epsilon_placement", "keras"))
            kernels_ref.adam_update(p, a, b, g, step_size, 0.9, 0.999, 1e-7, options.get("weight_decay", 0.0),
                                    bc2_sqrt)
        state, want = [opt.get_slot(w, "m").numpy(), opt.get_slot(w, "v").numpy()], [a, b]
    np.testing.assert_array_equal(w.numpy(), p)
    for got, expected in zip(state, want):
        np.testing.assert_array_equal(got, expected)


# ---------------------------------------------------------------- minimize's scratch gradients


@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sgd_in_the_gradients_buffer_gives_the_same_bits(dtype, weight_decay):
    """p += (-lr) g, in g's buffer, is p -= lr g to the bit: specials, signed zeros, lr 0 included."""
    from gpugrad.backend import CPU
    from gpugrad.optimizers import updates
    from tests.conftest import data

    with np.errstate(all="ignore"):
        for lr in (0.1, 0.0, 3.0):
            p, g = data(np.dtype(dtype).type, 5000, 1), data(np.dtype(dtype).type, 5000, 2)
            want = p.copy()
            updates.sgd(CPU, want, g.copy(), lr, weight_decay)
            got, scratch = p.copy(), g.copy()
            updates.sgd(CPU, got, scratch, lr, weight_decay, grad_is_scratch=True)
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
            if lr == 0.1 and not weight_decay:
                assert not np.array_equal(scratch, g, equal_nan=True)  # the step went through its buffer


def _spy_scratch(monkeypatch):
    from gpugrad.optimizers import updates
    seen = []
    real = updates.sgd

    def spy(device, param, grad, lr, weight_decay=0.0, grad_is_scratch=False):
        seen.append(grad_is_scratch)
        real(device, param, grad, lr, weight_decay, grad_is_scratch)
    monkeypatch.setattr(updates, "sgd", spy)
    return seen


def test_minimize_updates_in_its_own_gradients_and_matches_apply_gradients(monkeypatch):
    from gpugrad._donation import donating
    from gpugrad._ownership import MIN_SIZE
    seen = _spy_scratch(monkeypatch)
    rng = np.random.default_rng(0)
    x = gg.tensor(rng.standard_normal((16, 256)).astype(np.float32))
    # the first kernel (64 Ki) is large enough to be scratch, the other variables are not
    layers = [gg.nn.Dense(256, 256, activation="relu", seed=1), gg.nn.Dense(256, 4, seed=2)]
    twins = [gg.nn.Dense(256, 256, activation="relu", seed=1), gg.nn.Dense(256, 4, seed=2)]
    model, twin = gg.nn.Sequential(layers), gg.nn.Sequential(twins)
    labels = gg.tensor(rng.integers(0, 4, 16))
    opt, twin_opt = SGD(0.1), SGD(0.1)
    for _ in range(3):
        opt.minimize(lambda: gg.softmax_cross_entropy(model(x), labels), model.trainable_variables)
        twin_opt.apply_gradients(twin_opt.compute_gradients(
            lambda: gg.softmax_cross_entropy(twin(x), labels), twin.trainable_variables))
    for a, b in zip(model.trainable_variables, twin.trainable_variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    n = len(model.trainable_variables)
    # minimize: scratch (on CPython < 3.14) where the ownership rule allows the size; apply_gradients: never,
    # the caller holds the gradients
    large = [donating and v.numpy().size >= MIN_SIZE for v in model.trainable_variables]
    assert True in large or not donating
    assert seen == (large + [False] * n) * 3


def test_minimize_leaves_gradients_it_shares_or_does_not_own(monkeypatch):
    seen = _spy_scratch(monkeypatch)
    a, b = gg.Variable([1.0, 2.0]), gg.Variable([3.0, 4.0])
    opt = SGD(0.5)
    opt.minimize(lambda: gg.sum(a + b), [a, b])  # Add hands both the one gradient tensor
    np.testing.assert_array_equal(a.numpy(), [0.5, 1.5])
    np.testing.assert_array_equal(b.numpy(), [2.5, 3.5])
    kept = gg.tensor([1.0, 1.0])

    @gg.custom_gradient
    def passthrough(v):
        return v * 1.0, lambda dy: kept  # a gradient the caller holds

    c = gg.Variable([0.0, 0.0])
    opt.minimize(lambda: gg.sum(passthrough(c)), [c])
    np.testing.assert_array_equal(kept.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(c.numpy(), [-0.5, -0.5])
    assert seen == [False, False, False]
    from gpugrad._ownership import MIN_SIZE
    w = gg.Variable(np.full(MIN_SIZE, 2.0))
    opt.minimize(lambda: gg.sum(w * w), [w])  # one fresh gradient: scratch where refcounts are exact
    from gpugrad._donation import donating
    assert seen[-1] is donating
    np.testing.assert_array_equal(w.numpy(), np.zeros(MIN_SIZE))


def test_minimize_with_clipping_does_not_write_into_gradients(monkeypatch):
    seen = _spy_scratch(monkeypatch)
    w = gg.Variable([3.0, 4.0])
    SGD(1.0, global_clipnorm=100.0).minimize(lambda: gg.sum(w * 1.0), [w])  # the clip returns its input
    np.testing.assert_array_equal(w.numpy(), [2.0, 3.0])
    assert seen == [False]


# ---------------------------------------------------------------- against PyTorch


def _run_both(make_ours, make_torch, steps=5, shape=(3, 4), seed=0):
    import torch

    rng = np.random.default_rng(seed)
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(steps)]
    ours = gg.Variable(p0)
    opt = make_ours()
    theirs = torch.nn.Parameter(torch.tensor(p0))
    topt = make_torch([theirs])
    for g in grads:
        opt.apply_gradients([(gg.tensor(g), ours)])
        theirs.grad = torch.tensor(g)
        topt.step()
    return ours.numpy(), theirs.detach().numpy()


TORCH_CASES = {
    # torch: buf = momentum buf + (g + wd p); p -= lr (g + momentum buf) for nesterov, else lr buf
    "sgd": (lambda: SGD(0.05, momentum=0.9, weight_decay=0.01),
            lambda ps: __import__("torch").optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01)),
    "nesterov": (lambda: SGD(0.05, momentum=0.8, nesterov=True),
                 lambda ps: __import__("torch").optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True)),
    # torch: eps added to sqrt(v_hat); with eps = 0 the two forms agree exactly
    "adam": (lambda: Adam(0.01, beta_1=0.8, beta_2=0.99, epsilon=0.0, weight_decay=0.1),
             lambda ps: __import__("torch").optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=0.0, weight_decay=0.1)),
    # torch: eps added to sqrt(v_hat), as epsilon_placement="pytorch" (an epsilon large enough to matter)
    "adam_pytorch_epsilon": (
        lambda: Adam(0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-2, weight_decay=0.1, epsilon_placement="pytorch"),
        lambda ps: __import__("torch").optim.Adam(ps, lr=0.01, betas=(0.8, 0.99), eps=1e-2, weight_decay=0.1)),
    "adamw_pytorch_epsilon": (
        lambda: AdamW(0.01, weight_decay=0.3, epsilon=1e-2, epsilon_placement="pytorch"),
        lambda ps: __import__("torch").optim.AdamW(ps, lr=0.01, weight_decay=0.3, eps=1e-2)),
    # torch: p *= 1 - lr wd, then the Adam step
    "adamw": (lambda: AdamW(0.01, weight_decay=0.3, epsilon=0.0),
              lambda ps: __import__("torch").optim.AdamW(ps, lr=0.01, weight_decay=0.3, eps=0.0)),
    # torch: square_avg = alpha sa + (1 - alpha) g^2; avg = sqrt(sa [- grad_avg^2]) + eps; buf = m buf + g / avg
    "rmsprop": (lambda: RMSProp(0.01, rho=0.95, momentum=0.5, epsilon=1e-6, centered=True, weight_decay=0.01),
                lambda ps: __import__("torch").optim.RMSprop(ps, lr=0.01, alpha=0.95, eps=1e-6, momentum=0.5,
                                                             centered=True, weight_decay=0.01)),
    # torch: sum += g^2; p -= lr g / (sqrt(sum) + eps)
    "adagrad": (lambda: AdaGrad(0.1, initial_accumulator_value=0.2, epsilon=1e-8, weight_decay=0.01),
                lambda ps: __import__("torch").optim.Adagrad(ps, lr=0.1, initial_accumulator_value=0.2, eps=1e-8,
                                                             weight_decay=0.01)),
}


@pytest.mark.skipif(not HAVE_TORCH, reason=NO_TORCH)
@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_matches_pytorch(name):
    ours, theirs = _run_both(*TORCH_CASES[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-13)


@pytest.mark.skipif(not HAVE_TORCH, reason=NO_TORCH)
def test_adam_epsilon_placement_differs_from_pytorch_as_documented():
    # ours with epsilon e equals torch with eps e / sqrt(1 - beta_2^t): at one step, t = 1
    e, b2 = 1e-3, 0.999
    ours, theirs = _run_both(lambda: Adam(0.01, epsilon=e),
                             lambda ps: __import__("torch").optim.Adam(ps, lr=0.01, eps=e / math.sqrt(1 - b2)),
                             steps=1)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# ---------------------------------------------------------------- learning rates and schedules


def test_schedule_values():
    step_decay = schedules.StepDecay(0.1, decay_steps=3, decay_rate=0.5)
    assert [step_decay(s) for s in range(7)] == [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025]
    exp = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.96)
    assert exp(5) == pytest.approx(0.1 * 0.96 ** 0.5, rel=1e-15)
    stairs = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.96, staircase=True)
    assert [stairs(9), stairs(10)] == [0.1, pytest.approx(0.096, rel=1e-15)]
    cos = schedules.CosineDecay(0.2, decay_steps=100, alpha=0.0)
    assert cos(0) == 0.2 and cos(100) == pytest.approx(0.0, abs=1e-17) and cos(500) == cos(100)
    assert cos(25) == pytest.approx(0.2 * 0.5 * (1 + math.cos(math.pi / 4)), rel=1e-15)
    warm = schedules.CosineDecay(0.0, decay_steps=10, warmup_target=0.4, warmup_steps=10)
    assert [warm(0), warm(5), warm(10), warm(15)] == [0.0, 0.2, 0.4, pytest.approx(0.2, rel=1e-15)]


@pytest.mark.skipif(not HAVE_TORCH, reason=NO_TORCH)
def test_cosine_decay_matches_pytorch_cosine_annealing():
    import torch

    p = torch.nn.Parameter(torch.zeros(1))
    topt = torch.optim.SGD([p], lr=0.3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=20, eta_min=0.03)
    ours = schedules.CosineDecay(0.3, decay_steps=20, alpha=0.1)
    for s in range(20):
        assert ours(s) == pytest.approx(topt.param_groups[0]["lr"], rel=1e-12)
        topt.step()
        sched.step()


def test_optimizer_evaluates_the_schedule_at_each_step():
    seen = []

    def lr(step):
        seen.append(step)
        return 0.1 * (step + 1)

    w = f64([0.0])
    opt = SGD(lr)
    step(opt, w, [1.0], [1.0], [1.0])
    assert seen == [0, 1, 2]
    np.testing.assert_allclose(w.numpy(), [-0.6], atol=1e-15)  # 0.1 + 0.2 + 0.3
    assert opt.current_learning_rate() == pytest.approx(0.4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.1])
def test_bad_learning_rates_are_value_errors(bad):
    with pytest.raises(ValueError, match="learning_rate"):
        SGD(bad)
    opt = Adam(0.1)
    with pytest.raises(ValueError, match="learning_rate"):
        opt.learning_rate = bad
    w = gg.Variable([1.0])
    opt = Adam(lambda s: bad)
    with pytest.raises(ValueError, match="schedule returned"):
        opt.apply_gradients([(gg.tensor([1.0]), w)])
    assert w.numpy().tolist() == [1.0] and opt.iterations == 0


def test_bad_hyperparameters_are_value_errors():
    with pytest.raises(ValueError, match="beta_1"):
        Adam(beta_1=1.0)
    with pytest.raises(ValueError, match="momentum"):
        SGD(0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="nesterov"):
        SGD(0.1, nesterov=True)
    with pytest.raises(ValueError, match="not both"):
        SGD(0.1, clipnorm=1.0, global_clipnorm=1.0)
    with pytest.raises(TypeError, match="schedule"):
        SGD("fast")


# ---------------------------------------------------------------- clipping


def test_clip_by_global_norm():
    a, b = gg.tensor([3.0, 0.0]), gg.tensor([[4.0]])
    clipped, norm = gg.clip_by_global_norm([a, None, b], 2.5)
    assert norm.item() == 5.0
    assert clipped[1] is None
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 0.0])
    np.testing.assert_allclose(clipped[2].numpy(), [[2.0]])
    assert clipped[2].shape == (1, 1) and clipped[0].dtype == np.float32
    within, norm = gg.clip_by_global_norm([a, b], 5.0)
    assert within[0] is a and within[1] is b and norm.item() == 5.0  # within bounds: unchanged
    with pytest.raises(ValueError, match="max_norm"):
        gg.clip_by_global_norm([a], 0.0)


def test_clip_by_global_norm_of_a_non_finite_norm_is_nan():
    clipped, norm = gg.clip_by_global_norm([gg.tensor([np.inf, 1.0])], 1.0)
    assert np.isinf(norm.item()) and np.isnan(clipped[0].numpy()).all()


def test_optimizer_global_clipnorm():
    w, u = f64([0.0, 0.0]), f64([0.0])
    opt = SGD(1.0, global_clipnorm=1.0)
    opt.apply_gradients([(grad64([3.0, 0.0]), w), (grad64([4.0]), u)])  # norm 5 -> scaled by 1/5
    np.testing.assert_allclose(w.numpy(), [-0.6, 0.0], atol=1e-15)
    np.testing.assert_allclose(u.numpy(), [-0.8], atol=1e-15)


def test_optimizer_clipnorm_clips_each_gradient():
    w, u = f64([0.0, 0.0]), f64([0.0])
    opt = SGD(1.0, clipnorm=2.0)
    opt.apply_gradients([(grad64([3.0, 4.0]), w), (grad64([1.0]), u)])
    np.testing.assert_allclose(w.numpy(), [-1.2, -1.6], atol=1e-15)
    np.testing.assert_allclose(u.numpy(), [-1.0], atol=1e-15)  # within its bound


# ---------------------------------------------------------------- minimize, compute_gradients, apply_gradients


@pytest.mark.parametrize("make", [lambda: SGD(0.1), lambda: SGD(0.05, momentum=0.9, nesterov=True),
                                  lambda: Adam(0.1), lambda: AdamW(0.1, weight_decay=1e-4),
                                  lambda: RMSProp(0.05), lambda: AdaGrad(0.5)],
                         ids=["sgd", "nesterov", "adam", "adamw", "rmsprop", "adagrad"])
def test_minimize_converges_on_a_quadratic(make):
    target = np.array([1.0, -2.0, 0.5], np.float32)
    scale = gg.tensor([1.0, 2.0, 0.5])
    w = gg.Variable(np.zeros(3, np.float32))
    opt = make()
    first = None
    for _ in range(400):
        loss = opt.minimize(lambda: gg.sum(scale * gg.square(w - target)))
        first = loss.item() if first is None else first
    assert isinstance(loss, gg.Tensor) and loss.item() < 1e-4 * first
    np.testing.assert_allclose(w.numpy(), target, atol=2e-2)
    assert opt.iterations == 400


def test_var_list_none_takes_the_trainable_variables_the_loss_read():
    a, b = gg.Variable(2.0, name="a"), gg.Variable(3.0, name="b")
    unused = gg.Variable(5.0, name="unused")
    frozen = gg.Variable(7.0, trainable=False, name="frozen")
    pairs = SGD(0.1).compute_gradients(lambda: b * a + frozen)
    assert [v.name for _, v in pairs] == ["b", "a"]  # in the order the tape first saw them
    assert [g.item() for g, _ in pairs] == [2.0, 3.0]
    assert unused.item() == 5.0


def test_explicit_var_list_keeps_order_and_gives_none_for_unused():
    a, b = gg.Variable(2.0), gg.Variable(3.0)
    frozen = gg.Variable(4.0, trainable=False)
    pairs = SGD(0.1).compute_gradients(lambda: a * frozen, var_list=[b, frozen, a])
    assert [v for _, v in pairs] == [b, frozen, a]
    assert pairs[0][0] is None and pairs[1][0].item() == 2.0 and pairs[2][0].item() == 4.0
    opt = SGD(0.5)
    opt.minimize(lambda: a * a, var_list=lambda: [a, b])  # a callable var_list, as Keras allows
    assert a.item() == 0.0 and b.item() == 3.0  # b's None gradient is skipped


# ---------------------------------------------------------------- what is trained: frozen modules, var_list


def test_a_frozen_module_is_not_trained_and_unfreezes_to_what_it_was():
    # Keras' layer.trainable: False freezes the layer and its sublayers (their variables turn non-trainable:
    # the tape does not watch them, var_list=None and trainable_variables leave them out); True gives back
    # exactly the variables it froze (BatchNorm's running statistics stay non-trainable)
    model = gg.nn.Sequential(gg.nn.Sequential(gg.nn.Dense(2, 3, seed=0), gg.nn.BatchNorm(3)),
                             gg.nn.Dense(3, 1, seed=1))
    inner, head = model.layers
    stats = [inner.layers[1].running_mean, inner.layers[1].running_var]
    x = gg.tensor(np.random.default_rng(0).standard_normal((4, 2)).astype(np.float32))
    inner.trainable = False
    assert not inner.trainable and not inner.layers[0].trainable and model.trainable and head.trainable
    assert inner.trainable_variables == [] and len(inner.non_trainable_variables) == 6
    assert [id(v) for v in model.trainable_variables] == [id(head.kernel), id(head.bias)]
    frozen_before = [v.numpy().copy() for v in inner.layers[0].variables]
    head_before = head.kernel.numpy().copy()
    with gg.GradientTape() as tape:
        loss = gg.sum(model(x))
    assert {id(v) for v in tape.watched_variables()} == {id(head.kernel), id(head.bias)}
    for var_list in (None, model.trainable_variables):
        SGD(0.1).minimize(lambda: gg.sum(model(x)), var_list)
    for v, before in zip(inner.layers[0].variables, frozen_before):
        np.testing.assert_array_equal(v.numpy(), before)
    assert not np.array_equal(head.kernel.numpy(), head_before)
    model.trainable = True  # the model and every sublayer, as Keras
    assert inner.trainable and inner.layers[0].trainable
    assert len(model.trainable_variables) == 6 and not any(v.trainable for v in stats)
    assert [p for p, _ in model.named_variables()] == [p for p, _ in gg.nn.Sequential(
        gg.nn.Sequential(gg.nn.Dense(2, 3), gg.nn.BatchNorm(3)), gg.nn.Dense(3, 1)).named_variables()]
    head.trainable = False
    inner.trainable = False
    head.trainable = True  # unfreezing one layer leaves the other frozen
    assert [id(v) for v in model.trainable_variables] == [id(head.kernel), id(head.bias)]


def test_a_variable_listed_twice_is_a_value_error():
    # two updates of one variable in a step is a silent wrong number: refused (PyTorch refuses a parameter
    # in two groups and warns that a duplicate in one will be an error), before anything changes
    w, b = gg.Variable([1.0, 2.0], name="w"), gg.Variable([0.5])
    opt = Adam(0.1)
    with pytest.raises(ValueError, match="'w'.*listed twice in var_list"):
        opt.minimize(lambda: gg.sum(w * w) + gg.sum(b), var_list=[w, b, w])
    with pytest.raises(ValueError, match="listed twice in var_list"):
        opt.compute_gradients(lambda: gg.sum(w), var_list=[[w], {"again": w}])
    with pytest.raises(ValueError, match="'w'.*listed twice in grads_and_vars"):
        opt.apply_gradients([(gg.tensor([1.0, 1.0]), w), (gg.tensor([1.0]), b), (gg.tensor([2.0, 2.0]), w)])
    assert w.numpy().tolist() == [1.0, 2.0] and opt.iterations == 0 and opt.variables() == []


def test_var_list_and_apply_gradients_take_nested_structures():
    # the structures tape.gradient takes and returns: lists, tuples and dicts, nested
    def make():
        return {"dense": [gg.Variable([1.0, -1.0]), gg.Variable(2.0)], "scale": (gg.Variable([[0.5]]),)}

    def loss_of(p):
        return gg.sum(p["dense"][0] ** 2) + p["dense"][1] * 3.0 + gg.sum(p["scale"][0])

    def flat(p):
        return [v.numpy().tolist() for v in (p["dense"][0], p["dense"][1], p["scale"][0])]

    reference = make()
    SGD(0.1).minimize(lambda: loss_of(reference), [reference["dense"][0], reference["dense"][1],
                                                 reference["scale"][0]])
    nested = make()
    SGD(0.1).minimize(lambda: loss_of(nested), nested)
    assert flat(nested) == flat(reference)
    pairs = SGD(0.1).compute_gradients(lambda: loss_of(nested), [nested["scale"], [nested["dense"]]])
    assert [v for _, v in pairs] == [nested["scale"][0], *nested["dense"]]
    applied = make()
    with gg.GradientTape() as tape:
        loss = loss_of(applied)
    SGD(0.1).apply_gradients([(tape.gradient(loss, applied), applied)])
    assert flat(applied) == flat(reference)
    with pytest.raises(ValueError, match="keys"):
        SGD(0.1).apply_gradients([({"other": gg.tensor(1.0)}, {"dense": applied["dense"][1]})])
    with pytest.raises(ValueError, match="2 gradients for 1 variables"):
        SGD(0.1).apply_gradients([([gg.tensor(1.0), gg.tensor(1.0)], [applied["dense"][1]])])
    with pytest.raises(ValueError, match="a Tensor where the variables are a list"):
        SGD(0.1).apply_gradients([(gg.tensor(1.0), [applied["dense"][1]])])
    distributed = make()
    with gg.GradientTape() as tape:
        loss = loss_of(distributed)
    gg.distributed.DistributedOptimizer(SGD(0.1)).apply_gradients([(tape.gradient(loss, distributed), distributed)])
    assert flat(distributed) == flat(reference)


def test_no_gradient_at_all_is_an_error():
    a = gg.Variable(1.0)
    opt = SGD(0.1)
    with pytest.raises(ValueError, match="read no trainable Variable"):
        opt.minimize(lambda: gg.tensor(1.0) * 2.0)
    with pytest.raises(ValueError, match="no gradient for any variable"):
        opt.apply_gradients([(None, a)])
    opt.apply_gradients([])  # nothing asked, nothing done
    assert opt.iterations == 0
    with pytest.raises(TypeError, match="function that computes the loss"):
        opt.minimize(a * 2.0)


def test_apply_gradients_checks_each_pair():
    w = gg.Variable(np.zeros((2, 3), np.float32), name="kernel")
    opt = SGD(0.1)
    with pytest.raises(gg.ShapeError, match=r"'kernel' has shape \(3, 2\) but the variable has shape \(2, 3\)"):
        opt.apply_gradients([(gg.zeros((3, 2)), w)])
    with pytest.raises(gg.DTypeError, match="dtype float64 but the variable has dtype float32"):
        opt.apply_gradients([(gg.zeros((2, 3), dtype=np.float64), w)])
    with pytest.raises(TypeError, match="Variable"):
        opt.apply_gradients([(gg.zeros((2, 3)), gg.zeros((2, 3)))])
    with pytest.raises(gg.DTypeError, match="floating-point"):
        opt.apply_gradients([(gg.tensor([1]), gg.Variable([1]))])
    assert opt.iterations == 0 and not w.numpy().any()


def test_apply_gradients_rejects_a_gradient_on_another_device(stand_in_gpu):
    w = gg.Variable([1.0, 2.0], name="w")
    g = gg.tensor([1.0, 1.0], device=stand_in_gpu)
    with pytest.raises(gg.DeviceError, match="'w' is on 'cuda:0' but the variable is on 'cpu'"):
        SGD(0.1).apply_gradients([(g, w)])


def test_updates_bump_the_version_and_are_not_recorded():
    w = gg.Variable([1.0, 2.0])
    with gg.GradientTape(persistent=True) as tape:
        y = gg.sum(w * w)
        recorded = len(tape._ops)
        SGD(0.1, momentum=0.5).apply_gradients([(gg.tensor([1.0, 1.0]), w)])
        Adam(0.1).apply_gradients([(gg.tensor([1.0, 1.0]), w)])
        assert len(tape._ops) == recorded  # the updates recorded nothing
    assert w._version == 2
    with pytest.raises(gg.GradientError, match="was assigned after"):
        tape.gradient(y, w)  # the tape saved w's old value
    assert not active_tapes()


def test_non_tensor_gradients_are_converted():
    w = gg.Variable([1.0, 2.0])
    SGD(1.0).apply_gradients([(np.array([1.0, 1.0], np.float32), w)])
    assert w.numpy().tolist() == [0.0, 1.0]


# ---------------------------------------------------------------- GPU dispatch


ALL = [("sgd", lambda: SGD(0.1)), ("momentum", lambda: SGD(0.1, momentum=0.9, weight_decay=1e-3)),
       ("nesterov", lambda: SGD(0.1, momentum=0.9, nesterov=True)), ("adam", lambda: Adam(0.01)),
       ("adamw", lambda: AdamW(0.01)), ("rmsprop", lambda: RMSProp(0.01, momentum=0.5, centered=True)),
       ("adagrad", lambda: AdaGrad(0.1))]
KERNEL_OF = {"momentum": "sgd_momentum_update", "nesterov": "sgd_momentum_update", "adam": "adam_update",
             "adamw": "adam_update"}


def _three_steps(make, device, dtype=np.float32):
    rng = np.random.default_rng(1)
    p0 = rng.standard_normal((4, 5)).astype(dtype)
    grads = [rng.standard_normal((4, 5)).astype(dtype) for _ in range(3)]
    w = gg.Variable(p0, device=device)
    opt = make()
    for g in grads:
        opt.apply_gradients([(gg.tensor(g, device=device), w)])
    return w, opt


@pytest.mark.parametrize("name, make", ALL, ids=[n for n, _ in ALL])
def test_stand_in_gpu_runs_the_fused_kernels_and_matches_the_cpu(stand_in_gpu, monkeypatch, name, make):
    backend, called = stand_in_gpu.backend, []
    real = backend.fused
    monkeypatch.setattr(backend, "fused", lambda kernel, *a, **k: called.append(kernel) or real(kernel, *a, **k))
    w, opt = _three_steps(make, stand_in_gpu)
    cpu, _ = _three_steps(make, "cpu")
    assert w.device == "cuda:0" and w._device is stand_in_gpu
    kernel = KERNEL_OF.get(name)
    assert called == ([kernel] * 3 if kernel else [])
    if kernel:
        assert (kernel, np.dtype(np.float32), 0) in backend._kernels
    for slot in opt._state[id(w)][1]:
        assert opt.get_slot(w, slot)._device is stand_in_gpu  # state lives on the variable's device
    # the host build of the kernel is the kernel's arithmetic, compiled with g++: equal to the reference
    # up to the compiler's contraction choices
    np.testing.assert_allclose(w.numpy(), cpu.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", [p for p in device_params() if p.id == "cuda"])
@pytest.mark.parametrize("name, make", ALL, ids=[n for n, _ in ALL])
def test_gpu_matches_cpu(device, name, make):
    for dtype in (np.float32, np.float64):
        w, opt = _three_steps(make, device, dtype)
        cpu, _ = _three_steps(make, "cpu", dtype)
        assert w.device.startswith("cuda") and w.dtype == dtype
        for slot in opt._state[id(w)][1]:
            assert opt.get_slot(w, slot).device == w.device
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(w.numpy(), cpu.numpy(), rtol=tol, atol=tol)


@pytest.mark.gpu
def test_gpu_minimize_converges():
    w = gg.Variable(np.zeros(3, np.float32), device="cuda")
    opt = Adam(0.1)
    for _ in range(300):
        loss = opt.minimize(lambda: gg.sum(gg.square(w - 1.0)))
    assert loss.device == w.device and loss.item() < 1e-4


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [7, 1000, 300_000])  # the last is split across threads
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_with_its_gradient_as_scratch_gives_the_same_bits(dtype, n, weight_decay):
    from gpugrad.backend import CPU
    from gpugrad.optimizers import updates
    rng = np.random.default_rng(n)
    start = [rng.standard_normal(n), 0.1 * rng.standard_normal(n), 0.01 * np.abs(rng.standard_normal(n)),
             rng.standard_normal(n)]
    plain, scratch = ([a.astype(dtype) for a in start] for _ in range(2))
    updates.adam(CPU, *plain, 0.001, 0.9, 0.999, 1e-7, weight_decay)
    updates.adam(CPU, *scratch, 0.001, 0.9, 0.999, 1e-7, weight_decay, grad_is_scratch=True)
    for a, b in zip(plain[:3], scratch[:3]):
        assert a.tobytes() == b.tobytes()
