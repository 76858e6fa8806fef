"""gg.special and gg.distributions: values against float64 oracles (Python's math, NumPy's i0, direct sums,
finite differences), and values and gradients (first and second order) against PyTorch where it is installed
(a test-only oracle: ``torch.special``, ``torch.distributions``)."""
import math

import numpy as np
import pytest

import gpugrad as gg

F64 = "float64"


def t64(a):
    return gg.tensor(np.asarray(a, dtype=np.float64), dtype=F64)


def grads(fn, *arrays, order=1):
    """d sum(fn) / d each input (order 1), or d sum(d sum(fn)/dx) / dx of the first input (order 2)."""
    xs = [t64(a) for a in arrays]
    with gg.GradientTape(persistent=True) as outer:
        for x in xs:
            outer.watch(x)
        with gg.GradientTape() as inner:
            for x in xs:
                inner.watch(x)
            y = gg.sum(fn(*xs))
        first = inner.gradient(y, xs)
        total = gg.sum(first[0])
    if order == 1:
        return [g.numpy() for g in first]
    second = outer.gradient(total, xs[0])
    return [np.zeros(np.shape(arrays[0])) if second is None else second.numpy()]


def torch_grads(torch, fn, *arrays, order=1):
    xs = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    y = fn(*xs).sum()
    first = torch.autograd.grad(y, xs, create_graph=True)
    if order == 1:
        return [g.detach().numpy() for g in first]
    if not first[0].requires_grad:  # the first gradient does not depend on the inputs (xlogy's in x)
        return [np.zeros_like(xs[0].detach().numpy())]
    second = torch.autograd.grad(first[0].sum(), xs[0], allow_unused=True)[0]
    return [np.zeros_like(xs[0].detach().numpy()) if second is None else second.numpy()]


# ---------------------------------------------------------------- float64 oracles without PyTorch


def test_lgamma_matches_math_lgamma_to_the_stated_accuracy():
    x = np.concatenate([np.linspace(-20.3, 20.7, 2001), np.logspace(-10, 10, 100), [1.0, 2.0, 1e-300, 171.5]])
    x = x[~((x <= 0) & (x == np.rint(x)))]
    got = gg.special.gammaln(t64(x)).numpy()
    ref = np.array([math.lgamma(v) for v in x])
    small = np.abs(ref) < 1
    assert np.max(np.abs(got - ref)[small]) < 1e-14
    assert np.max(np.abs(got - ref)[~small] / np.abs(ref[~small])) < 1e-14


def test_lgamma_is_inf_at_the_poles_and_float32_stays_float32():
    assert gg.lgamma(t64([0.0, -1.0, -7.0])).numpy().tolist() == [np.inf] * 3
    y = gg.lgamma(gg.tensor([3.0], dtype="float32"))
    assert y.dtype == np.float32 and y.numpy()[0] == np.float32(math.log(2.0))
    assert gg.lgamma(gg.tensor([3])).dtype == np.float32  # integers compute in float32, as the other float ops


def test_erfc_matches_math_erfc_in_both_tails():
    x = np.linspace(-6, 27, 3001)
    got = gg.special.erfc(t64(x)).numpy()
    ref = np.array([math.erfc(v) for v in x])
    assert np.max(np.abs(got - ref) / ref) < 1e-15 * 4


def test_digamma_is_the_derivative_of_lgamma_and_keeps_its_recurrence():
    x = np.array([-3.7, -0.5, 0.1, 0.7, 1.4616, 3.3, 17.2, 100.5, 1e4])
    got = gg.digamma(t64(x)).numpy()
    h = 1e-5 * np.maximum(1, np.abs(x))
    fd = np.array([(math.lgamma(v + e) - math.lgamma(v - e)) / (2 * e) for v, e in zip(x, h)])
    np.testing.assert_allclose(got, fd, rtol=1e-8, atol=1e-8)
    # psi(x + 1) = psi(x) + 1/x, away from digamma's root
    np.testing.assert_allclose(gg.digamma(t64(x + 1)).numpy(), got + 1 / x, rtol=1e-14, atol=1e-14)
    assert gg.digamma(t64([0.0])).numpy().tolist() == [-np.inf]  # as torch.digamma


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_polygamma_matches_its_series_summed_directly(n):
    # psi^(n)(x) = (-1)^(n+1) n! sum_k 1/(x + k)^(n+1); the sum to K plus the Euler-Maclaurin tail from K
    x = np.array([0.3, 1.0, 2.5, 7.0, 30.0, -0.5, -2.25])
    k_max = 200000

    def series(v):
        terms = 1.0 / (v + np.arange(k_max)) ** (n + 1)
        end = v + k_max
        tail = 1.0 / (n * end ** n) + 0.5 / end ** (n + 1) + (n + 1) / (12 * end ** (n + 2))
        return (-1) ** (n + 1) * math.factorial(n) * (math.fsum(terms) + tail)

    ref = np.array([series(v) for v in x])
    np.testing.assert_allclose(gg.polygamma(n, t64(x)).numpy(), ref, rtol=1e-13)


def test_polygamma_refuses_a_bad_order_and_order_zero_is_digamma():
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="Polygamma"):
            gg.polygamma(bad, t64([1.0]))
    x = t64([0.3, 2.0])
    assert gg.polygamma(0, x).numpy().tolist() == gg.digamma(x).numpy().tolist()


def test_erfinv_inverts_erf_and_erfc_to_the_stated_accuracy():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 2001), [1e-300, 0.0]])
    x = gg.erfinv(t64(y)).numpy()
    erf = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(erf - y) / np.maximum(np.abs(y), 1e-300)) < 1e-14
    near_one = np.concatenate([1 - np.logspace(-16, -1, 200), np.linspace(0.5, 0.99999, 500)])
    x = gg.erfinv(t64(near_one)).numpy()
    erfc = np.array([math.erfc(v) for v in x])
    assert np.max(np.abs(erfc - (1 - near_one)) / (1 - near_one)) < 1e-13
    assert gg.erfinv(t64([1.0, -1.0, 1.5, np.nan])).numpy().tolist()[:2] == [np.inf, -np.inf]
    assert np.isnan(gg.erfinv(t64([1.5, -2.0, np.nan])).numpy()).all()


def test_i0e_matches_numpy_i0_and_i1e_its_derivative_without_overflow():
    x = np.linspace(-30, 30, 601)
    np.testing.assert_allclose(gg.i0e(t64(x)).numpy(), np.exp(-np.abs(x)) * np.i0(x), rtol=1e-14)
    h = 1e-6
    i1 = (np.i0(x + h) - np.i0(x - h)) / (2 * h)  # I0' = I1
    np.testing.assert_allclose(gg.i1e(t64(x)).numpy(), np.exp(-np.abs(x)) * i1, rtol=1e-7, atol=1e-12)
    # far out, where exp(-|x|) I0(x) overflows if formed as written: ~ 1 / sqrt(2 pi |x|) (1 + 1/(8|x|))
    big = np.array([800.0, -1e4, 1e8])
    lead = 1 / np.sqrt(2 * np.pi * np.abs(big))
    np.testing.assert_allclose(gg.i0e(t64(big)).numpy(), lead * (1 + 1 / (8 * np.abs(big))), rtol=1e-6)
    np.testing.assert_allclose(gg.i1e(t64(big)).numpy(), np.sign(big) * lead * (1 - 3 / (8 * np.abs(big))),
                               rtol=1e-6)


def test_xlogy_is_zero_where_x_is_zero_and_its_x_gradient_is_zero_only_where_y_is_at_the_pole_too():
    x, y = np.array([0.0, 0.0, 2.0, -1.0]), np.array([0.0, 3.0, 3.0, 0.5])
    assert gg.xlogy(t64(x), t64(y)).numpy().tolist() == [0.0, 0.0, 2 * math.log(3.0), -math.log(0.5)]
    assert gg.xlog1py(t64(x), t64(y - 1)).numpy().tolist() == [0.0, 0.0, 2 * math.log(3.0), -math.log(0.5)]
    gx, _ = grads(gg.xlogy, x, y)
    assert gx.tolist() == [0.0, math.log(3.0), math.log(3.0), math.log(0.5)]  # PyTorch's: 0 where x == 0, y <= 0
    gx, _ = grads(gg.xlog1py, x, y - 1)
    assert gx.tolist() == [0.0, math.log(3.0), math.log(3.0), math.log(0.5)]


def test_the_special_namespace_has_scipys_names():
    for name in ("gammaln", "digamma", "psi", "polygamma", "erf", "erfc", "erfinv", "expit", "logit", "xlogy",
                 "xlog1py", "i0e", "i1e", "log_expit", "logsumexp", "softmax", "log_softmax"):
        assert callable(getattr(gg.special, name)), name
    assert gg.special.gammaln is gg.lgamma and gg.special.expit is gg.sigmoid


# ---------------------------------------------------------------- log-densities without PyTorch


def test_normal_and_student_t_log_prob_match_their_formulas():
    x, loc, scale, df = np.array([-1.0, 0.3, 2.5]), np.array([0.5, 0.0, 1.0]), np.array([0.7, 1.0, 2.0]), 3.5
    ref = [-(a - m) ** 2 / (2 * s * s) - math.log(s) - 0.5 * math.log(2 * math.pi) for a, m, s in zip(x, loc, scale)]
    np.testing.assert_allclose(gg.distributions.normal_log_prob(t64(x), t64(loc), t64(scale)).numpy(), ref, rtol=1e-14)
    ref_t = [math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi) - math.log(s)
             - (df + 1) / 2 * math.log1p(((a - m) / s) ** 2 / df) for a, m, s in zip(x, loc, scale)]
    got = gg.distributions.student_t_log_prob(t64(x), df, t64(loc), t64(scale)).numpy()
    np.testing.assert_allclose(got, ref_t, rtol=1e-13)
    got_tensor_df = gg.distributions.student_t_log_prob(t64(x), t64([df] * 3), t64(loc), t64(scale)).numpy()
    np.testing.assert_allclose(got_tensor_df, ref_t, rtol=1e-13)


def _spd_factor(rng, d, batch=()):
    a = rng.normal(size=batch + (d, d))
    lower = np.tril(a)
    idx = np.arange(d)
    lower[..., idx, idx] = np.abs(lower[..., idx, idx]) + 0.5
    return lower


def test_mvn_log_prob_matches_the_dense_formula_batched_and_ignores_the_upper_triangle():
    rng = np.random.default_rng(0)
    d = 3
    lower = _spd_factor(rng, d, (2, 1))
    x, loc = rng.normal(size=(2, 4, d)), rng.normal(size=(d,))
    cov = lower @ np.swapaxes(lower, -1, -2)
    diff = x - loc
    quad = np.einsum("...i,...ij,...j->...", diff, np.linalg.inv(cov), diff)
    ref = -0.5 * quad - 0.5 * np.linalg.slogdet(cov)[1] - 0.5 * d * math.log(2 * math.pi)
    junk_above = lower + np.triu(rng.normal(size=(d, d)), 1)  # not read, as torch's scale_tril
    got = gg.distributions.mvn_log_prob(t64(x), t64(loc), t64(junk_above)).numpy()
    assert got.shape == (2, 4)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    _, _, g_lower = grads(gg.distributions.mvn_log_prob, x, loc, junk_above)
    assert g_lower.shape == junk_above.shape and np.all(np.triu(g_lower, 1) == 0)


def test_mvn_log_prob_names_itself_on_a_shape_mismatch():
    with pytest.raises(gg.ShapeError, match="mvn_log_prob"):
        gg.distributions.mvn_log_prob(t64(np.zeros(3)), t64(np.zeros(3)), t64(np.eye(2)))


# ---------------------------------------------------------------- against PyTorch


def _torch():
    return pytest.importorskip("torch", reason="PyTorch is the test-only oracle here (not a dependency of gpugrad)")


def _special_cases(torch):
    """(name, gpugrad fn, torch fn, inputs) with inputs away from poles and kinks."""
    ts = torch.special
    pos = np.array([0.3, 1.1, 2.5, 7.0, 31.0])
    mixed = np.array([-3.7, -1.4, -0.3, 0.6, 1.9, 12.0])
    return [
        ("lgamma", gg.lgamma, torch.lgamma, [mixed]),
        ("digamma", gg.digamma, torch.digamma, [mixed]),
        ("polygamma1", lambda x: gg.polygamma(1, x), lambda x: torch.polygamma(1, x), [mixed]),
        ("polygamma3", lambda x: gg.polygamma(3, x), lambda x: torch.polygamma(3, x), [pos]),
        ("erfc", gg.erfc, torch.erfc, [mixed / 3]),
        ("erfinv", gg.erfinv, torch.erfinv, [np.array([-0.99, -0.4, 0.0, 0.3, 0.9, 0.999])]),
        ("xlogy", gg.xlogy, torch.xlogy, [mixed, pos[[0, 1, 2, 3, 4, 0]]]),
        ("xlog1py", gg.xlog1py, ts.xlog1py, [mixed, pos[[0, 1, 2, 3, 4, 0]] - 0.2]),
        ("i0e", gg.i0e, ts.i0e, [mixed * 3]),
        ("i1e", gg.i1e, ts.i1e, [mixed * 3]),
    ]


# torch's trigamma (digamma's gradient, lgamma's second) sums six terms and a short asymptotic series: it is
# good to 1e-9 relative (gpugrad's matches a direct sum to 1e-13, test_polygamma_matches_its_series_summed_directly)
TORCH_RTOL = {"polygamma1": 1e-9, "digamma": 1e-9, "lgamma": 1e-9}


@pytest.mark.parametrize("name", ["lgamma", "digamma", "polygamma1", "polygamma3", "erfc", "erfinv", "xlogy",
                                  "xlog1py", "i0e", "i1e"])
def test_special_functions_match_torch_values_and_gradients(name):
    torch = _torch()
    _, fn, ref, inputs = next(case for case in _special_cases(torch) if case[0] == name)
    got = fn(*[t64(a) for a in inputs]).numpy()
    want = ref(*[torch.tensor(a) for a in inputs]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12 if name != "polygamma1" else 1e-9, atol=1e-14)
    for order in (1, 2):
        mine, theirs = grads(fn, *inputs, order=order), torch_grads(torch, ref, *inputs, order=order)
        for a, b in zip(mine, theirs):
            np.testing.assert_allclose(a, b, rtol=TORCH_RTOL.get(name, 1e-10), atol=1e-12,
                                       err_msg=f"{name} order {order}")


def test_xlogy_gradients_at_zero_match_torch():
    torch = _torch()
    x, y = np.array([0.0, 0.0, 1.5]), np.array([2.0, 0.5, 0.25])
    for a, b in zip(grads(gg.xlogy, x, y), torch_grads(torch, torch.xlogy, x, y)):
        np.testing.assert_array_equal(a, b)


def test_log_densities_match_torch_distributions_values_and_gradients():
    torch = _torch()
    td = torch.distributions
    rng = np.random.default_rng(1)
    x, loc, scale, df = rng.normal(size=(5,)), rng.normal(size=(5,)), rng.uniform(0.5, 2, 5), rng.uniform(1, 6, 5)

    def normal_t(x, m, s):
        return td.Normal(m, s).log_prob(x)

    def student_t(x, nu, m, s):
        return td.StudentT(nu, m, s).log_prob(x)

    for fn, ref, inputs in [(gg.distributions.normal_log_prob, normal_t, [x, loc, scale]),
                            (gg.distributions.student_t_log_prob, student_t, [x, df, loc, scale])]:
        np.testing.assert_allclose(fn(*[t64(a) for a in inputs]).numpy(),
                                   ref(*[torch.tensor(a) for a in inputs]).numpy(), rtol=1e-12)
        for a, b in zip(grads(fn, *inputs), torch_grads(torch, ref, *inputs)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(grads(fn, *inputs, order=2)[0], torch_grads(torch, ref, *inputs, order=2)[0],
                                   rtol=1e-10, atol=1e-12)


def test_mvn_log_prob_matches_torch_multivariate_normal_batched():
    torch = _torch()
    rng = np.random.default_rng(2)
    d = 3
    lower = _spd_factor(rng, d, (2, 1))
    x, loc = rng.normal(size=(2, 4, d)), rng.normal(size=(4, d))

    def ref(x, m, L):
        return torch.distributions.MultivariateNormal(m, scale_tril=torch.tril(L)).log_prob(x)

    np.testing.assert_allclose(gg.distributions.mvn_log_prob(t64(x), t64(loc), t64(lower)).numpy(),
                               ref(*[torch.tensor(a) for a in (x, loc, lower)]).numpy(), rtol=1e-12)
    for a, b in zip(grads(gg.distributions.mvn_log_prob, x, loc, lower), torch_grads(torch, ref, x, loc, lower)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(grads(gg.distributions.mvn_log_prob, x, loc, lower, order=2)[0],
                               torch_grads(torch, ref, x, loc, lower, order=2)[0], rtol=1e-9, atol=1e-11)
