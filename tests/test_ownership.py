"""The one ownership rule of the speed mechanisms (:mod:`gpugrad._ownership`), and each mechanism under it.

The rule first, row by row (0-d, empty, one element, views, read-only, every float and complex dtype,
a flagless CuPy-like array, arrays a ``gg.function`` plan holds). Then each mechanism that writes in
place (the sweep's donation, ``minimize``'s scratch gradients, a plan's shared buffers and replayed
scratch) against the same computation without it: the same bits, eagerly and inside ``gg.function``,
and no array the user holds changed but the variables' intended updates.
"""
import gc
import types

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _donation, _ownership
from gpugrad._ownership import MIN_SIZE, may_write_in_place
from gpugrad.optimizers import SGD, Adam, AdamW
from tests.conftest import device_params, swapped_cpu_formula

N = 2 * MIN_SIZE  # large enough for every mechanism
NO_ML_DTYPES = "bfloat16 needs ml_dtypes: pip install -e '.[bfloat16]'"
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def np_dtype(name):
    """NumPy's dtype ``name``; a bfloat16 row skips with its reason where ml_dtypes is missing."""
    if name == "bfloat16":
        return pytest.importorskip("ml_dtypes", reason=NO_ML_DTYPES).bfloat16
    return np.dtype(name).type


def values(shape, dtype, seed=0, low=0.25, high=1.0):
    """Values in [low, high) of ``shape`` and ``dtype`` (the values every dtype holds)."""
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float64).astype(dtype)


def assert_same(new, old):
    """The same dtype, shape and bytes (NaN payloads, zero signs; bfloat16 and complex too)."""
    new, old = np.asarray(new), np.asarray(old)
    assert new.dtype == old.dtype and new.shape == old.shape, (new.dtype, new.shape, old.dtype, old.shape)
    assert new.tobytes() == old.tobytes(), (new, old)


# --------------------------------------------------------------------------- the rule


def _read_only():
    a = np.ones(N)
    a.flags.writeable = False
    return a


def _flagless(base=None):
    """A CuPy-like array: CuPy's flags have no ``writeable`` (its arrays are always writeable)."""
    return types.SimpleNamespace(base=base, ndim=1, size=N, flags=types.SimpleNamespace(c_contiguous=True))


RULE = {  # name -> (array maker, min_size, may be written in place)
    "0-d": (lambda: np.array(1.0), 1, False),
    "numpy scalar": (lambda: np.float32(1.0), 1, False),
    "python float": (lambda: 1.0, 1, False),
    "empty": (lambda: np.zeros(0), 1, False),
    "empty 2-d": (lambda: np.zeros((0, N)), 1, False),
    "one element": (lambda: np.zeros(1), 1, True),
    "one element, MIN_SIZE": (lambda: np.zeros(1), MIN_SIZE, False),
    "MIN_SIZE - 1": (lambda: np.zeros(MIN_SIZE - 1), MIN_SIZE, False),
    "MIN_SIZE": (lambda: np.zeros(MIN_SIZE), MIN_SIZE, True),
    "default min_size": (lambda: np.zeros(MIN_SIZE - 1), None, False),
    "slice": (lambda: np.zeros(N + 1)[1:], 1, False),
    "strided slice": (lambda: np.zeros(2 * N)[::2], 1, False),
    "transpose": (lambda: np.zeros((2, N)).T, 1, False),
    "reshape view": (lambda: np.zeros(N).reshape(2, -1), 1, False),
    "broadcast": (lambda: np.broadcast_to(np.zeros(1), (N,)), 1, False),
    "read-only": (_read_only, 1, False),
    "fortran order": (lambda: np.zeros((N, 2), order="F"), MIN_SIZE, True),
    "flagless (CuPy-like)": (_flagless, MIN_SIZE, True),
    "flagless view": (lambda: _flagless(base=np.zeros(N)), MIN_SIZE, False),
}


@pytest.mark.parametrize("name", list(RULE))
def test_the_rule(name):
    make, min_size, expected = RULE[name]
    a = make()
    got = may_write_in_place(a) if min_size is None else may_write_in_place(a, min_size)
    assert got is expected


@pytest.mark.parametrize("dtype", FLOATS + ["complex64", "complex128"])
def test_the_rule_for_every_dtype(dtype):
    a = np.zeros(N, np_dtype(dtype))
    assert may_write_in_place(a) is True
    assert may_write_in_place(a[1:]) is False
    assert may_write_in_place(a[:1].copy(), MIN_SIZE) is False
    assert may_write_in_place(np.zeros((), np_dtype(dtype)), 1) is False


def test_an_array_a_plan_holds_is_no_ones():
    a = np.zeros(N)
    first, second = _ownership.hold([a]), _ownership.hold([a])  # two plans
    assert _ownership.held(a) and not may_write_in_place(a)
    _ownership.release(first)
    assert not may_write_in_place(a)
    _ownership.release(second)
    assert may_write_in_place(a) and not _ownership.held(a)


def test_a_plan_holds_its_buffers_while_it_lives():
    before = dict(_ownership._held)

    def f(x):
        return gg.tanh(gg.exp(x) * 0.5 + x)

    fn = gg.function(f)
    x = gg.tensor(values(N, np.float32))
    fn(x)
    (trace,) = fn._traces.values()
    buffers = [b for b, _ in trace.plan.inputs]
    assert buffers and all(_ownership.held(b) and not may_write_in_place(b, 1) for b in buffers)
    assert len(_ownership._held) > len(before) + len(buffers)  # the steps' buffers too
    del fn, trace, buffers
    gc.collect()
    assert _ownership._held == before


@pytest.mark.gpu
def test_the_rule_on_a_gpu():
    a = gg.tensor(np.zeros(N, np.float32), device="cuda")._data  # CuPy's array: no writeable flag
    assert may_write_in_place(a) is True
    assert may_write_in_place(a[1:]) is False
    assert may_write_in_place(a[::2], 1) is False
    ids = _ownership.hold([a])
    assert may_write_in_place(a) is False
    _ownership.release(ids)
    assert may_write_in_place(gg.tensor(np.float32(1.0), device="cuda")._data, 1) is False


# --------------------------------------------------------------------------- the sweep's donation

SWEEP_SHAPES = {"0-d": (), "empty": (0,), "one element": (1,), "large": (N,), "large 2-d": (2, N // 2)}


def _sweep_input(shape_name, dtype, view):
    """``(x, arrays the user holds)``: x of the shape, a view into a larger tensor with ``view``."""
    shape = SWEEP_SHAPES[shape_name]
    if view:
        user = values((2,) + shape, dtype)
        parent = gg.tensor(user)
        return parent[1], [user, parent]
    user = values(shape, dtype)
    return gg.tensor(user), [user]


def _chain(x):
    """``sum(square(tanh(x^T)))`` (the transpose hands tanh's rule a view of dy in 2-d) times a constant."""
    t = gg.transpose(gg.tanh(x)) if len(x.shape) == 2 else gg.tanh(x)
    return gg.sum(gg.square(gg.tanh(t)) * 0.5)


def _sweep_gradient(x, donate, v=None):
    saved = _donation.donating
    _donation.donating = donate
    try:
        return _gradient_of_chain(x, v).numpy()
    finally:
        _donation.donating = saved


@pytest.mark.parametrize("view", [False, True], ids=["own", "view"])
@pytest.mark.parametrize("dtype", FLOATS + ["complex64", "complex128"])
@pytest.mark.parametrize("shape_name", list(SWEEP_SHAPES))
def test_donation_gives_the_bits_of_no_donation(shape_name, dtype, view):
    dtype = np_dtype(dtype)
    x, held = _sweep_input(shape_name, dtype, view)
    v = gg.Variable(values(SWEEP_SHAPES[shape_name], dtype, seed=7))  # a variable the chain reads
    held.append(v)
    kept = [np.array(h.numpy() if isinstance(h, gg.Tensor) else h, copy=True) for h in held]
    without = _sweep_gradient(x, False, v)
    with_donation = _sweep_gradient(x, _donation.donating, v)
    traced = gg.function(lambda x: _gradient_of_chain(x, v))
    replays = [traced(x).numpy() for _ in range(3)]  # traced, then replayed
    for got in [with_donation] + replays:
        assert_same(got, without)
    for h, k in zip(held, kept):
        assert_same(h.numpy() if isinstance(h, gg.Tensor) else h, k)


def _gradient_of_chain(x, v=None):
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = _chain(x if v is None else x * v)
    return tape.gradient(y, x)


@pytest.mark.skipif(not _donation.donating, reason="buffer donation needs CPython < 3.14 reference counts")
@pytest.mark.parametrize("shape_name, donated", [("0-d", [False, False]), ("one element", [False, False]), ("large", [True, True]),
                                                 ("large 2-d", [True, False])])
def test_donation_happens_only_where_the_rule_allows(shape_name, donated):
    """Whether each tanh gradient wrote into its dy: square's fresh gradient is donated where large; in 2-d
    the inner tanh's dy is the transpose's view of the outer one's, never donated."""
    seen = []

    def spy(formula):
        def tanh_grad(y, dy, out=None):
            seen.append(out is not None)
            return formula(y, dy, out=out)
        return tanh_grad

    from gpugrad.ops.hot import HOT_GRADIENTS
    with swapped_cpu_formula("tanh_grad", spy(HOT_GRADIENTS["tanh_grad"].cpu)):
        x, _ = _sweep_input(shape_name, np.float32, False)
        _sweep_gradient(x, donate=True)
    assert seen == donated


def test_arrays_shared_with_the_user_are_never_written():
    """``gg.from_numpy`` shares the user's array (DESIGN: memory ownership): as output_gradients, and as a
    custom gradient that minimize receives, it stays the user's."""
    upstream = values(N, np.float32, seed=3)
    kept = upstream.copy()
    x = gg.tensor(values(N, np.float32))
    saved = _donation.donating
    try:
        results = []
        for donate in (saved, False):
            _donation.donating = donate
            with gg.GradientTape() as tape:
                tape.watch(x)
                y = gg.tanh(gg.square(x))
            results.append(tape.gradient(y, x, output_gradients=gg.from_numpy(upstream)).numpy())
            assert_same(upstream, kept)
    finally:
        _donation.donating = saved
    assert_same(results[0], results[1])
    shared = values(N, np.float32, seed=4)
    shared_kept = shared.copy()

    @gg.custom_gradient
    def passthrough(v):
        return v * 1.0, lambda dy: gg.from_numpy(shared)

    w = gg.Variable(values(N, np.float32))
    expected = w.numpy().copy()
    for _ in range(2):
        SGD(0.5).minimize(lambda: gg.sum(passthrough(w)), [w])
        expected -= 0.5 * shared_kept
    assert_same(shared, shared_kept)
    assert_same(w.numpy(), expected)


# --------------------------------------------------------------------------- minimize's scratch gradients

OPTIMIZERS = {
    "sgd": lambda: SGD(0.1),
    "sgd-momentum": lambda: SGD(0.1, momentum=0.9, nesterov=True),
    "sgd-decay": lambda: SGD(0.1, weight_decay=0.01),
    "adam": lambda: Adam(0.01),
    "adamw": lambda: AdamW(0.01, weight_decay=0.1),
}
VAR_SHAPES = {"0-d": (), "empty": (0,), "one element": (1,), "small": (7,), "large": (N,)}
LOSSES = {  # name -> (number of variables, loss of the variables and the input x)
    "one": (1, lambda ws, x: gg.sum(gg.square(ws[0]) * x)),
    # Add hands both variables the one gradient tensor: one buffer read twice by the step
    "shared gradient": (2, lambda ws, x: gg.sum(gg.exp(ws[0] + ws[1]) * x)),
    # Reshape's gradient of the second is a view of the first's
    "view gradient": (2, lambda ws, x: gg.sum(gg.exp(ws[0] + gg.reshape(ws[1], ws[0].shape)) * x)),
}


def _train(make_opt, loss_name, shape, dtype, mode, device="cpu", steps=3):
    """The variables after ``steps`` steps of ``mode``: ``apply`` (apply_gradients: never scratch),
    ``minimize`` (eager) or ``function`` (minimize inside gg.function); and the user's arrays before/after."""
    n, loss = LOSSES[loss_name]
    ws = [gg.Variable(values(shape, dtype, seed=i), device=device) for i in range(n)]
    if loss_name == "view gradient" and len(shape) == 1:
        ws[1] = gg.Variable(values((1, shape[0]), dtype, seed=1), device=device)
    size = int(np.prod(shape))
    x_user = values(shape, dtype, seed=9, low=0.5 / max(size, 1), high=1.5 / max(size, 1))  # a loss near 1
    x_kept = x_user.copy()
    x = gg.tensor(x_user, device=device)
    bystander_kept = values(shape, dtype, seed=5)
    bystander = gg.Variable(bystander_kept, device=device)  # a variable the loss reads and no one trains
    opt = make_opt()

    def total(x):
        return loss(ws, x) + gg.sum(gg.square(bystander) * x)

    def step(x):
        if mode == "apply":
            opt.apply_gradients(opt.compute_gradients(lambda: total(x), ws))
            return None
        return opt.minimize(lambda: total(x), ws)

    run = gg.function(step) if mode == "function" else step
    for _ in range(steps):
        run(x)
    assert_same(x_user, x_kept)
    assert_same(x.numpy(), x_kept)
    assert_same(bystander.numpy(), bystander_kept)
    return [w.numpy() for w in ws]


@pytest.mark.parametrize("loss_name", list(LOSSES))
@pytest.mark.parametrize("shape_name", list(VAR_SHAPES))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
def test_minimize_gives_the_bits_of_apply_gradients(opt_name, dtype, shape_name, loss_name):
    dtype, shape = np_dtype(dtype), VAR_SHAPES[shape_name]
    make = OPTIMIZERS[opt_name]
    reference = _train(make, loss_name, shape, dtype, "apply")
    for mode in ("minimize", "function"):
        for got, want in zip(_train(make, loss_name, shape, dtype, mode), reference):
            assert_same(got, want)


def test_a_gradient_two_variables_share_is_not_overwritten_in_a_replay():
    """The replayed optimizer step once overwrote the one buffer both variables read, for the first's update."""
    for make in (lambda: SGD(0.1), lambda: Adam(0.1)):
        for shape in [(4,), (N,)]:
            reference = _train(make, "shared gradient", shape, np.float32, "apply")
            for got, want in zip(_train(make, "shared gradient", shape, np.float32, "function"), reference):
                assert_same(got, want)


@pytest.mark.skipif(not _donation.donating, reason="scratch gradients need CPython < 3.14 reference counts")
@pytest.mark.parametrize("mode", ["minimize", "function"])
@pytest.mark.parametrize("shape_name, scratch", [("0-d", False), ("one element", False), ("small", False),
                                                 ("large", True)])
def test_scratch_only_where_the_rule_allows(monkeypatch, mode, shape_name, scratch):
    seen = []
    real = SGD._update_scratch

    def spy(self, var, param, grad, lr, state):
        seen.append(grad.shape)
        real(self, var, param, grad, lr, state)

    monkeypatch.setattr(SGD, "_update_scratch", spy)
    _train(lambda: SGD(0.1), "one", VAR_SHAPES[shape_name], np.float32, mode)
    assert bool(seen) is scratch


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("opt_name", ["sgd", "adam"])
def test_minimize_on_each_device(device, opt_name):
    make = OPTIMIZERS[opt_name]
    for loss_name in ("one", "shared gradient"):
        reference = _train(make, loss_name, (N,), np.float32, "apply", device)
        for mode in ("minimize", "function"):
            for got, want in zip(_train(make, loss_name, (N,), np.float32, mode, device), reference):
                assert_same(got, want)


# --------------------------------------------------------------------------- a plan's shared buffers

PLAN_SHAPES = {"0-d": (), "empty": (0,), "one element": (1,), "small": (5, 3), "large": (2, N // 2)}


def _many_intermediates(x):
    """Intermediates of several lifetimes and layouts (a transpose's copy, a reduction), two results."""
    a = gg.exp(x) * 0.5
    b = gg.tanh(a + x)
    c = gg.transpose(b * a) if len(x.shape) == 2 else b * a
    d = gg.square(c) - 1.0
    return gg.sum(d), gg.sigmoid(b) * x


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape_name", list(PLAN_SHAPES))
def test_a_plan_sharing_buffers_gives_the_eager_bits(shape_name, dtype, device):
    dtype, shape = np_dtype(dtype), PLAN_SHAPES[shape_name]
    fn = gg.function(_many_intermediates)
    for seed in range(3):  # traced, then replayed with new data
        user = values(shape, dtype, seed=seed, low=-1.0, high=1.0)
        kept = user.copy()
        x = gg.tensor(user, device=device)
        got = fn(x)
        want = _many_intermediates(x)
        for g, w in zip(got, want):
            assert_same(g.numpy(), w.numpy())
        assert_same(user, kept)
        assert_same(x.numpy(), kept)
