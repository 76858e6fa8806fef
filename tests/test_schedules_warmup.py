"""The warm-up, linear and one-cycle schedules: against their formulas and PyTorch's OneCycleLR / LinearLR
(a test-only oracle, skipped with its reason where it is not installed)."""
import math
import pickle

import pytest

import gpugrad as gg
from gpugrad.optimizers import schedules


def test_linear_decay_is_polynomial_decay_of_power_one():
    s = schedules.LinearDecay(0.5, decay_steps=10, end_learning_rate=0.1)
    for step in range(15):
        want = (0.5 - 0.1) * (1 - min(step, 10) / 10) + 0.1
        assert s(step) == pytest.approx(want, rel=1e-15)


def test_warmup_rises_linearly_then_follows_its_schedule():
    after = schedules.CosineDecay(1.0, decay_steps=8)
    s = schedules.Warmup(after, warmup_steps=4, start_learning_rate=0.2)
    assert [s(k) for k in range(4)] == pytest.approx([0.2, 0.4, 0.6, 0.8])
    assert [s(k) for k in range(4, 14)] == [after(k) for k in range(10)]
    assert schedules.Warmup(0.3, warmup_steps=3)(1) == pytest.approx(0.1)
    assert schedules.Warmup(0.3, warmup_steps=3)(7) == 0.3
    assert pickle.loads(pickle.dumps(s))(5) == s(5)


def test_an_optimizer_takes_the_new_schedules():
    w = gg.Variable([1.0])
    opt = gg.optimizers.SGD(schedules.Warmup(schedules.LinearDecay(0.1, 10), warmup_steps=2))
    for _ in range(3):
        opt.minimize(lambda: gg.sum(w * w), [w])
    # rates 0.0, 0.05, 0.1 on d/dw w^2 = 2w
    want = 1.0
    for lr in (0.0, 0.05, 0.1):
        want -= lr * 2 * want
    assert w.numpy()[0] == pytest.approx(want)


@pytest.mark.parametrize("kwargs", [{}, {"anneal_strategy": "linear", "pct_start": 0.25, "div_factor": 10.0,
                                         "final_div_factor": 100.0}])
def test_one_cycle_matches_pytorch(kwargs):
    torch = pytest.importorskip("torch", reason="PyTorch (a test-only oracle) is not installed")
    total = 40
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    ref = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.3, total_steps=total, **kwargs)
    want = []
    for _ in range(total):
        want.append(opt.param_groups[0]["lr"])
        opt.step()
        ref.step() if len(want) < total else None
    ours = schedules.OneCycle(0.3, total, **kwargs)
    assert [ours(k) for k in range(total)] == pytest.approx(want, rel=1e-12)


def test_one_cycle_formula_and_errors():
    s = schedules.OneCycle(1.0, total_steps=21, pct_start=0.5)
    initial = 1.0 / 25.0
    assert s(0) == pytest.approx(initial)
    assert s(9.5) == pytest.approx(1.0)  # the peak at pct_start * total - 1
    assert s(20) == pytest.approx(initial / 1e4) and s(50) == s(20)
    assert s(4.75) == pytest.approx(1.0 + (initial - 1.0) / 2 * (math.cos(math.pi * 0.5) + 1))
    with pytest.raises(ValueError, match="anneal_strategy"):
        schedules.OneCycle(1.0, 10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="pct_start"):
        schedules.OneCycle(1.0, 10, pct_start=1.5)
