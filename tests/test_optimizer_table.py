"""Every optimizer on every kind of variable, eager and inside ``gg.function``, against a float64 reference.

One table: each optimizer configuration (SGD plain, with L2 decay, momentum, Nesterov; Adam with both
epsilon placements and with L2 decay; AdamW; Adam inside a LossScaleOptimizer; RMSProp plain and
centered with momentum and decay; AdaGrad with decay) × each kind of variable (0-d, empty, one element, a non-contiguous gradient,
float16, bfloat16, float64) × each way of stepping (``apply_gradients``; ``minimize``, whose gradients
are scratch the update may overwrite; ``minimize`` inside ``gg.function``, replayed) × each device
(the CPU; ``cuda``, which runs on the stand-in CuPy with the kernels built for the host in
tests/test_gpu_paths_on_host.py). Each runs three steps and compares the variable with the update
written out below in float64 NumPy, independently of gpugrad's code, from the same starting values and
gradients. The slow path and every fast path (the scratch step, the threads, the fused kernels, the
replay) must take every one of these.

Tolerances, per dtype (absolute and relative, on values of order 1 after three steps of size <= 0.1):
float64 1e-13 (the update's rounding only; 1e-16 measured), float32 5e-7 (about 4 units in the last
place; 5e-8 measured), float16 3e-3 (3 ulps at 1; 7e-4 measured) and bfloat16 1.6e-2 (2 ulps at 1;
2.3e-3 measured): the variable and its state are stored at the variable's precision each step.

A Variable always owns a C-contiguous array (``gg.Variable`` copies, in C order, whatever it is given;
``test_a_variable_owns_a_contiguous_array`` holds that), so the non-contiguous kind is the gradient:
a transposed view from ``gg.from_numpy`` for ``apply_gradients``, a transpose's gradient for ``minimize``.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.optimizers import SGD, AdaGrad, Adam, AdamW, RMSProp
from tests.conftest import HAVE_ML_DTYPES, device_params

STEPS = 3
TOLERANCE = {"float64": 1e-13, "float32": 5e-7, "float16": 3e-3, "bfloat16": 1.6e-2}


# ---------------------------------------------------------------- the references, float64 NumPy

def _sgd(lr, weight_decay=0.0, momentum=0.0, nesterov=False):
    def step(p, g, state, t):
        g = g + weight_decay * p
        if not momentum:
            return p - lr * g
        v = momentum * state.get("v", 0.0) - lr * g  # Keras' velocity (PyTorch's buffer times -lr)
        state["v"] = v
        return p + momentum * v - lr * g if nesterov else p + v
    return step


def _adam(lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=0.0, decoupled=False, placement="keras"):
    def step(p, g, state, t):
        if decoupled:
            p = p * (1.0 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = state["m"] = beta_1 * state.get("m", 0.0) + (1.0 - beta_1) * g
        v = state["v"] = beta_2 * state.get("v", 0.0) + (1.0 - beta_2) * g * g
        m_hat, v_hat = m / (1.0 - beta_1 ** t), v / (1.0 - beta_2 ** t)
        if placement == "pytorch":  # PyTorch, optax: epsilon beside the bias-corrected sqrt(v_hat)
            return p - lr * m_hat / (np.sqrt(v_hat) + epsilon)
        # Keras: epsilon beside sqrt(v), the bias correction folded into the step size
        return p - lr * np.sqrt(1.0 - beta_2 ** t) / (1.0 - beta_1 ** t) * m / (np.sqrt(v) + epsilon)
    return step


def _rmsprop(lr, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, weight_decay=0.0):
    def step(p, g, state, t):
        g = g + weight_decay * p
        ms = state["ms"] = rho * state.get("ms", 0.0) + (1.0 - rho) * g * g
        if centered:
            mg = state["mg"] = rho * state.get("mg", 0.0) + (1.0 - rho) * g
            ms = ms - mg * mg
        update = g / (np.sqrt(ms) + epsilon)
        if momentum:
            update = state["buf"] = momentum * state.get("buf", 0.0) + update
        return p - lr * update
    return step


def _adagrad(lr, initial_accumulator_value=0.1, epsilon=1e-7, weight_decay=0.0):
    def step(p, g, state, t):
        g = g + weight_decay * p
        acc = state["acc"] = state.get("acc", initial_accumulator_value) + g * g
        return p - lr * g / (np.sqrt(acc) + epsilon)
    return step


# name: (the optimizer, its reference); the hyperparameters spelled once for both
OPTIMIZERS = {
    "sgd": (lambda: SGD(0.1), _sgd(0.1)),
    "sgd_decay": (lambda: SGD(0.1, weight_decay=0.05), _sgd(0.1, weight_decay=0.05)),
    "momentum": (lambda: SGD(0.1, momentum=0.9, weight_decay=0.05), _sgd(0.1, 0.05, momentum=0.9)),
    "nesterov": (lambda: SGD(0.1, momentum=0.9, nesterov=True), _sgd(0.1, momentum=0.9, nesterov=True)),
    "adam": (lambda: Adam(0.1, epsilon=1e-3), _adam(0.1, epsilon=1e-3)),
    "adam_pytorch_epsilon": (lambda: Adam(0.1, epsilon=1e-3, epsilon_placement="pytorch"),
                             _adam(0.1, epsilon=1e-3, placement="pytorch")),
    "adam_decay": (lambda: Adam(0.1, weight_decay=0.05), _adam(0.1, weight_decay=0.05)),
    "adamw": (lambda: AdamW(0.1, weight_decay=0.5), _adam(0.1, weight_decay=0.5, decoupled=True)),
    "adamw_pytorch_epsilon": (lambda: AdamW(0.1, weight_decay=0.5, epsilon=1e-3, epsilon_placement="pytorch"),
                              _adam(0.1, epsilon=1e-3, weight_decay=0.5, decoupled=True, placement="pytorch")),
    # loss scaling by a power of two is exact: Adam's reference; the unscaled gradients are views of one
    # flat buffer, which the update overwrites as scratch
    "loss_scale_adam": (lambda: gg.optimizers.LossScaleOptimizer(Adam(0.1, epsilon=1e-3), initial_scale=2.0 ** 10),
                        _adam(0.1, epsilon=1e-3)),
    "rmsprop": (lambda: RMSProp(0.01), _rmsprop(0.01)),
    "rmsprop_centered_momentum": (lambda: RMSProp(0.01, momentum=0.5, centered=True, weight_decay=0.05),
                                  _rmsprop(0.01, momentum=0.5, centered=True, weight_decay=0.05)),
    "adagrad": (lambda: AdaGrad(0.1, weight_decay=0.05), _adagrad(0.1, weight_decay=0.05)),
}

# kind: (variable shape, dtype, gradient transposed: a non-contiguous view)
KINDS = {
    "0-d": ((), "float32", False),
    "empty": ((3, 0), "float32", False),
    "1-element": ((1,), "float32", False),
    "non-contiguous-gradient": ((4, 3), "float32", True),
    "float16": ((2, 3), "float16", False),
    "bfloat16": ((2, 3), "bfloat16", False),
    "float64": ((2, 3), "float64", False),
}
MODES = ["apply_gradients", "minimize", "function"]


def _draw(kind):
    """Starting values and STEPS gradients (as stored in the kind's dtype: the reference starts from these)."""
    shape, dtype, transposed = KINDS[kind]
    rng = np.random.default_rng(7)
    p0 = rng.uniform(-1.0, 1.0, shape)
    given = shape[::-1] if transposed else shape  # a transposed gradient is given as its transpose
    grads = [rng.uniform(0.25, 1.0, given) * rng.choice([-1.0, 1.0], given) for _ in range(STEPS)]
    as_dtype = gg.tensor(np.zeros(()), dtype=dtype).numpy().dtype
    return p0.astype(as_dtype), [g.astype(as_dtype) for g in grads], transposed


def _reference(name, p0, grads, transposed):
    step, state, p = OPTIMIZERS[name][1], {}, p0.astype(np.float64)
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        p = step(p, g.T if transposed else g, state, t)
    return p


def _run(name, kind, mode, device):
    p0, grads, transposed = _draw(kind)
    opt = OPTIMIZERS[name][0]()
    w = gg.Variable(p0, device=device)
    array = w._data
    consts = [gg.tensor(g, device=device) for g in grads]

    def loss(c):  # d/dw sum(w * c) = c exactly; a transposed c gives a transpose's gradient
        return gg.sum(w * (gg.transpose(c) if transposed else c))

    if mode == "apply_gradients":
        for g, c in zip(grads, consts):
            if transposed and device == "cpu":
                grad = gg.from_numpy(g.T)  # a view that shares g's memory, in F order
                assert not grad.data.flags.c_contiguous
            else:
                grad = gg.transpose(c) if transposed else c
            opt.apply_gradients([(grad, w)])
    elif mode == "minimize":
        for c in consts:
            opt.minimize(lambda: loss(c))
    else:
        @gg.function
        def train_step(c):
            return opt.minimize(lambda: loss(c), [w])
        for c in consts:
            train_step(c)
        assert train_step.trace_count == 1
    assert w._data is array, "the update rebound the variable's array instead of writing into it"
    assert opt.iterations == STEPS and w.dtype == p0.dtype and w.shape == p0.shape
    for slot in getattr(opt, "optimizer", opt)._state[id(w)][1]:
        held = opt.get_slot(w, slot)
        assert held.dtype == w.dtype and held.shape == w.shape and held._device is w._device
    return w.numpy(), _reference(name, p0, grads, transposed)


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_its_reference(name, kind, mode, device):
    if KINDS[kind][1] == "bfloat16" and not HAVE_ML_DTYPES:
        pytest.skip("bfloat16 needs the optional ml_dtypes (pip install -e '.[bfloat16]')")
    got, want = _run(name, kind, mode, device)
    tol = TOLERANCE[KINDS[kind][1]]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_the_epsilon_placements_differ_beyond_the_tolerance():
    # the table's two Adam rows would pass each other's reference if the option did nothing
    p0, grads, _ = _draw("float64")
    keras = _reference("adam", p0, grads, False)
    pytorch = _reference("adam_pytorch_epsilon", p0, grads, False)
    assert np.max(np.abs(keras - pytorch)) > 1e3 * TOLERANCE["float64"]
    got, _ = _run("adam_pytorch_epsilon", "float64", "apply_gradients", "cpu")
    assert np.max(np.abs(got - keras)) > 1e3 * TOLERANCE["float64"]


def test_a_variable_owns_a_contiguous_array():
    base = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    for view in (base[:, ::2], base.T, np.asfortranarray(base), base[::2]):
        w = gg.Variable(view)
        assert w.data.flags.c_contiguous and not np.shares_memory(w.data, base)
        np.testing.assert_array_equal(w.numpy(), view)


def test_a_bad_epsilon_placement_is_a_value_error():
    with pytest.raises(ValueError, match="epsilon_placement"):
        Adam(epsilon_placement="tensorflow")
