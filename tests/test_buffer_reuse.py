"""The backward sweep reuses a dying gradient's buffer only when nothing else can see it.

Every case compares gradients of large arrays (where reuse happens) with the
same computation with reuse switched off, and checks that arrays the user or
another gradient holds are left untouched.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _donation
from tests.conftest import HOT_GRADIENTS, swapped_cpu_formula

N = 1 << 16  # above DONATE_MIN_SIZE


@pytest.fixture
def x():
    return gg.tensor(np.random.default_rng(0).uniform(0.5, 2.0, N))


def gradients(fn, x, donate, **kwargs):
    saved = _donation.donating
    _donation.donating = donate
    try:
        with gg.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x, **kwargs).numpy()
    finally:
        _donation.donating = saved


CHAINS = {
    "log-square-sum": lambda x: gg.sum(gg.square(gg.log(x))),
    "shared-upstream": lambda x: gg.sum(gg.log(gg.tanh(x) + gg.exp(x))),  # Add hands dy to both branches
    "used-twice": lambda x: gg.sum(gg.sqrt(x) * gg.sqrt(x) + gg.reciprocal(gg.sigmoid(x))),
    "fan-out": lambda x: gg.sum(gg.relu(gg.log(x)) * gg.exp(gg.log(x))),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_reuse_gives_the_same_gradients(name, x):
    fn = CHAINS[name]
    np.testing.assert_array_equal(gradients(fn, x, donate=True), gradients(fn, x, donate=False))


def test_reuse_happens_for_a_chain(x):
    seen = []
    original = HOT_GRADIENTS["log_grad"].cpu

    def spy(a, dy, out=None):
        seen.append(out is not None)
        return original(a, dy, out=out)

    with swapped_cpu_formula("log_grad", spy):
        gradients(CHAINS["log-square-sum"], x, donate=True)
    assert seen == [True]


def test_user_output_gradients_are_never_overwritten(x):
    upstream = np.random.default_rng(1).uniform(-1, 1, N)
    kept = upstream.copy()
    g = gradients(lambda x: gg.tanh(gg.log(x)), x, donate=True, output_gradients=upstream)
    np.testing.assert_array_equal(upstream, kept)
    ref = gradients(lambda x: gg.tanh(gg.log(x)), x, donate=False, output_gradients=kept)
    np.testing.assert_array_equal(g, ref)


def test_no_reuse_under_an_outer_tape(x):
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(gg.square(gg.log(x)))
        g = inner.gradient(y, x)
        total = gg.sum(g * g)
    second = outer.gradient(total, x).numpy()
    xs = x.numpy()
    first = 2 * np.log(xs) / xs  # d/dx sum((2 log x / x)^2) = 2 g g'
    np.testing.assert_allclose(second, 2 * first * (2 - 2 * np.log(xs)) / xs**2, rtol=1e-10)
