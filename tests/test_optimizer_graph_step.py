"""The optimizers' step under gg.function on a GPU: host part between the graphs, one graphed launch per variable.

The eager step passes its scalars (Adam's step size, SGD's rate) to the fused kernels by value; a CUDA Graph
replays captured values, so the plan reads them from 0-d device arrays refilled by a host step
(gpugrad/optimizers/graph_step.py). Each test compares a traced training step with the same step run
eagerly on twin variables, bit for bit, over steps whose scalars change (a schedule, bias correction).
"""
import re

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.optimizers import graph_step


def assert_same(a, b):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


OPTIMIZERS = {
    "adam": lambda: gg.optimizers.Adam(0.01),
    "adam_pytorch_eps": lambda: gg.optimizers.Adam(0.01, epsilon_placement="pytorch", weight_decay=0.1),
    "adamw": lambda: gg.optimizers.AdamW(0.01, weight_decay=0.3),
    "adam_schedule": lambda: gg.optimizers.Adam(gg.optimizers.schedules.ExponentialDecay(0.05, 1, 0.5)),
    "momentum": lambda: gg.optimizers.SGD(0.05, momentum=0.9),
    "nesterov": lambda: gg.optimizers.SGD(gg.optimizers.schedules.ExponentialDecay(0.05, 1, 0.7), momentum=0.8,
                                          nesterov=True, weight_decay=0.01),
}


def _twins(make_opt, device="cuda", dtype=np.float32):
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((5, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)
    out = []
    for _ in range(2):
        w, b = gg.Variable(w0, device=device), gg.Variable(b0, device=device)
        opt = make_opt()

        def step(x, y, w=w, b=b, opt=opt):
            return opt.minimize(lambda: gg.softmax_cross_entropy(gg.relu(gg.matmul(x, w) + b), y), [w, b])
        out.append((step, opt, [w, b]))
    return out


def _batches(n, device="cuda", dtype=np.float32):
    rng = np.random.default_rng(1)
    return [(gg.tensor(rng.standard_normal((4, 5)).astype(dtype), device=device),
             gg.tensor(rng.integers(0, 3, 4), device=device)) for _ in range(n)]


def _slots(opt, variables):
    return [{k: a.get() if hasattr(a, "get") else a for k, a in opt._state[id(v)][1].items()} for v in variables]


def _graph_line(f):
    line = f.diagnostics()[0]
    m = re.search(r"CUDA graphs: (\d+) segments?, (\d+) of (\d+) steps graphed", line)
    return line, m


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_on_a_gpu_the_traced_step_graphs_one_launch_per_variable_to_the_eager_bits(name):
    (eager, opt_e, vars_e), (step, opt_t, vars_t) = _twins(OPTIMIZERS[name])
    traced = gg.function(step)
    for x, y in _batches(5):
        assert_same(traced(x, y).numpy(), eager(x, y).numpy())
        for a, b in zip(vars_t, vars_e):
            assert_same(a.numpy(), b.numpy())
    assert opt_t.iterations == opt_e.iterations == 5
    assert opt_t.current_learning_rate() == opt_e.current_learning_rate()
    for s_t, s_e in zip(_slots(opt_t, vars_t), _slots(opt_e, vars_e)):
        assert s_t.keys() == s_e.keys()
        for k in s_t:
            assert_same(s_t[k], s_e[k])
    line, m = _graph_line(traced)
    assert m is not None and "failed" not in line, line
    assert "the optimizer's step: a host step and 2 update launches" in line, line
    assert int(m.group(2)) >= 2, line
    assert traced.trace_count == 1


@pytest.mark.gpu
def test_on_a_gpu_a_changed_hyperparameter_reaches_the_graphed_launches():
    (eager, opt_e, vars_e), (step, opt_t, vars_t) = _twins(OPTIMIZERS["adam"])
    traced = gg.function(step)
    for k, (x, y) in enumerate(_batches(6)):
        if k == 3:  # between calls, as a user tuning a running optimizer does
            for opt in (opt_e, opt_t):
                opt.beta_1, opt.epsilon = 0.5, 1e-3
        assert_same(traced(x, y).numpy(), eager(x, y).numpy())
        for a, b in zip(vars_t, vars_e):
            assert_same(a.numpy(), b.numpy())


@pytest.mark.gpu
@pytest.mark.parametrize("change", ["load_slots", "clipnorm", "momentum_off", "weight_decay_off"])
def test_on_a_gpu_replaced_slots_or_a_changed_step_trace_again_and_stay_eager_equal(change):
    import pickle
    name = {"momentum_off": "momentum", "weight_decay_off": "adamw"}.get(change, "adam")
    (eager, opt_e, vars_e), (step, opt_t, vars_t) = _twins(OPTIMIZERS[name])
    traced = gg.function(step)
    for k, (x, y) in enumerate(_batches(5)):
        if k == 2:
            for opt in (opt_e, opt_t):
                if change == "load_slots":  # new slot arrays, as a restored checkpoint may bring
                    entries = [(v, {s: np.full(a.shape, 0.25, a.dtype) for s, a in slots.items()})
                               for v, slots in pickle.loads(pickle.dumps(opt))._export_slots()]
                    opt._import_slots([(v, s) for (v, s), v2 in zip(entries, opt.variables()) for v in [v2]])
                    for slots in opt._state.values():  # a slot replaced, not written in place
                        for key in slots[1]:
                            slots[1][key] = slots[1][key].copy()
                elif change == "clipnorm":
                    opt.clipnorm = 0.01
                elif change == "momentum_off":
                    opt.momentum = 0.0
                else:
                    opt.weight_decay = 0.0
        assert_same(traced(x, y).numpy(), eager(x, y).numpy())
        for a, b in zip(vars_t, vars_e):
            assert_same(a.numpy(), b.numpy())
    assert traced.trace_count == 2


@pytest.mark.gpu
def test_on_a_gpu_steps_without_a_launch_form_stay_one_host_step():
    # plain SGD (a temporary lr * grad), RMSProp, clipping, float16 variables: the step is called as it is
    cases = [lambda: gg.optimizers.SGD(0.1), lambda: gg.optimizers.RMSProp(0.01),
             lambda: gg.optimizers.Adam(0.01, global_clipnorm=1.0)]
    for make in cases:
        (eager, _, vars_e), (step, _, vars_t) = _twins(make)
        traced = gg.function(step)
        for x, y in _batches(3):
            assert_same(traced(x, y).numpy(), eager(x, y).numpy())
        for a, b in zip(vars_t, vars_e):
            assert_same(a.numpy(), b.numpy())
        assert "Optimizer._apply_pairs" in traced.diagnostics()[0]
    w = gg.Variable(np.ones(3, np.float16), device="cuda")
    opt = gg.optimizers.Adam(0.1)
    opt.apply_gradients([(gg.tensor(np.ones(3, np.float16), device="cuda"), w)])
    assert graph_step.split(opt, [(gg.tensor(np.ones(3, np.float16), device="cuda"), w, False)]) is None


def test_on_the_cpu_the_step_is_not_split():
    w = gg.Variable([1.0, 2.0], device="cpu")
    opt = gg.optimizers.Adam(0.1)
    opt.apply_gradients([(gg.tensor([1.0, 1.0], device="cpu"), w)])
    assert graph_step.split(opt, [(gg.tensor([1.0, 1.0], device="cpu"), w, False)]) is None


def test_device_scalars_refill_only_what_changed_in_each_dtype():
    fills = []

    class Counted(np.ndarray):
        def fill(self, value):
            fills.append(value)
            super().fill(value)

    class Xp:
        dtype = staticmethod(np.dtype)

        @staticmethod
        def zeros(shape, dtype):
            return np.zeros(shape, dtype).view(Counted)
    s = graph_step.DeviceScalars(Xp)
    a64, a32, flag = s.array("decay", "float64"), s.array("decay", np.float32), s.array("nesterov", "bool")
    s.update({"decay": 0.1, "nesterov": False})
    assert a64[()] == 0.1 and a32[()] == np.float32(0.1) and not flag[()] and len(fills) == 3
    s.update({"decay": 0.1, "nesterov": False})
    assert len(fills) == 3
    s.update({"decay": 0.2, "nesterov": True})
    assert a64[()] == 0.2 and a32[()] == np.float32(0.2) and flag[()] and len(fills) == 6
    assert s.array("decay", "float64") is a64


@pytest.mark.gpu
def test_on_a_gpu_two_optimizer_steps_in_one_function_each_split_in_float64():
    # two optimizers, one step each, inside one traced function: each its own host step and launches
    rng = np.random.default_rng(5)
    w0, v0 = rng.standard_normal((5, 3)), rng.standard_normal(3)
    runs = []
    for _ in range(2):
        w, v = gg.Variable(w0, device="cuda"), gg.Variable(v0, device="cuda")
        adam, sgd = gg.optimizers.Adam(0.02), gg.optimizers.SGD(0.05, momentum=0.5, nesterov=True)

        def step(x, w=w, v=v, adam=adam, sgd=sgd):
            a = adam.minimize(lambda: gg.sum(gg.square(gg.matmul(x, w))), [w])
            b = sgd.minimize(lambda: gg.sum(gg.tanh(gg.matmul(x, w) + v)), [v])
            return a + b
        runs.append((step, w, v))
    traced = gg.function(runs[1][0])
    for k in range(4):
        x = gg.tensor(rng.standard_normal((4, 5)), device="cuda")
        assert_same(traced(x).numpy(), runs[0][0](x).numpy())
        for a, b in zip(runs[1][1:], runs[0][1:]):
            assert_same(a.numpy(), b.numpy())
    line, m = _graph_line(traced)
    assert "the optimizers' steps: 2 host steps and 2 update launches" in line and "failed" not in line, line
