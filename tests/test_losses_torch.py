"""The losses of PyTorch's names against PyTorch (``torch.nn.functional``): values and gradients in float64.

nll_loss, softmax_cross_entropy's options (probability targets, weight, ignore_index, label_smoothing),
binary_cross_entropy, sigmoid_cross_entropy's pos_weight and weight, huber, smooth_l1, kl_div,
cosine_similarity. PyTorch is a test-only oracle (skipped where absent); the checks that need no
oracle (errors, gg.function equal to eager) run everywhere.
"""
import numpy as np
import pytest

import gpugrad as gg

from .conftest import device_params

REDUCTIONS = ["mean", "sum", "none"]


def _torch():
    return pytest.importorskip("torch", reason="PyTorch is the oracle of these values (a test-only dependency)")


def _compare(gg_fn, torch_fn, arrays, grad_of=None, rtol=1e-10, atol=1e-12):
    """gg_fn(*tensors) against torch_fn(*torch tensors): the value, and the gradient of sum(out * w) for
    each input index in ``grad_of`` (default: all)."""
    torch = _torch()
    grad_of = range(len(arrays)) if grad_of is None else grad_of
    xs = [gg.Variable(np.asarray(a, np.float64)) for a in arrays]
    with gg.GradientTape() as tape:
        out = gg_fn(*xs)
        w = np.random.default_rng(5).uniform(0.5, 1.5, size=out.shape)
        total = gg.sum(out * w)
    grads = tape.gradient(total, [xs[i] for i in grad_of])
    ts = [torch.tensor(np.asarray(a, np.float64), requires_grad=i in grad_of) for i, a in enumerate(arrays)]
    t_out = torch_fn(*ts)
    (t_out * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(out.numpy(), t_out.detach().numpy(), rtol=rtol, atol=atol)
    for i, g in zip(grad_of, grads):
        np.testing.assert_allclose(g.numpy(), ts[i].grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {i}")


def _log_probs(shape, seed=0):
    x = np.random.default_rng(seed).normal(size=shape)
    return x - np.log(np.exp(x).sum(axis=1 if len(shape) > 1 else 0, keepdims=True))


# ---------------------------------------------------------------- nll_loss


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 4), (4,), (2, 4, 3)])
def test_nll_loss_matches_torch(shape, weighted, reduction):
    torch = _torch()
    rng = np.random.default_rng(1)
    target = rng.integers(0, 4, size=(shape[:1] + shape[2:]) if len(shape) > 1 else ())
    if target.ndim:
        target.reshape(-1)[0] = -100  # ignored (PyTorch's default ignore_index)
    weight = np.array([0.5, 2.0, 1.0, 3.0]) if weighted else None
    tw = None if weight is None else torch.tensor(weight)
    _compare(lambda x: gg.nll_loss(x, target, weight=weight, reduction=reduction),
             lambda x: torch.nn.functional.nll_loss(x, torch.tensor(target), weight=tw, reduction=reduction),
             [_log_probs(shape)])


def test_nll_loss_mean_of_only_ignored_targets_is_nan_as_torch():
    torch = _torch()
    x = _log_probs((2, 3))
    expected = torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor([-100, -100])).item()
    assert np.isnan(expected) and np.isnan(gg.nll_loss(gg.tensor(x), [-100, -100]).item())


def test_nll_loss_raises_for_a_target_out_of_range_naming_the_op():
    with pytest.raises(IndexError, match="'NLLLoss' got label 3"):
        gg.nll_loss(gg.tensor(_log_probs((2, 3))), [0, 3])
    with pytest.raises(IndexError, match="'NLLLoss' got label -1"):
        gg.nll_loss(gg.tensor(_log_probs((2, 3))), [0, -1])
    with pytest.raises(gg.DTypeError, match="'NLLLoss'"):
        gg.nll_loss(gg.tensor(_log_probs((2, 3))), [0.0, 1.0])
    with pytest.raises(gg.ShapeError, match=r"'NLLLoss' needs a target of shape \(2, 5\) for log-probabilities of "
                                            r"shape \(2, 3, 5\) \(classes on axis 1"):
        gg.nll_loss(gg.tensor(np.zeros((2, 3, 5))), np.zeros((2, 3), int))


# ---------------------------------------------------------------- softmax_cross_entropy (F.cross_entropy)


def _ce_torch(torch, x, target, **kwargs):
    """F.cross_entropy with classes last, as softmax_cross_entropy takes them."""
    return torch.nn.functional.cross_entropy(x.movedim(-1, 1) if x.ndim > 2 else x, target, **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [dict(ignore_index=-100), dict(label_smoothing=0.2),
                                     dict(weight=True), dict(weight=True, ignore_index=2, label_smoothing=0.1)])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4)])
def test_cross_entropy_options_with_integer_labels_match_torch(shape, options, reduction):
    torch = _torch()
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 4, size=shape[:-1])
    labels.reshape(-1)[1] = options.get("ignore_index", 0)
    weight = np.array([0.5, 2.0, 1.0, 3.0]) if options.get("weight") else None
    kw = dict(options, weight=weight)
    t_kw = dict(options, weight=None if weight is None else torch.tensor(weight))
    t_labels = torch.tensor(labels)
    if reduction == "none" and len(shape) > 2:
        torch_fn = lambda x: _ce_torch(torch, x, t_labels.clone(), reduction=reduction, **t_kw)  # noqa: E731
    else:
        torch_fn = lambda x: _ce_torch(torch, x, t_labels, reduction=reduction, **t_kw)  # noqa: E731
    _compare(lambda x: gg.softmax_cross_entropy(x, labels, reduction=reduction, **kw), torch_fn,
             [rng.normal(size=shape) * 2])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [{}, dict(label_smoothing=0.3), dict(weight=True)])
def test_cross_entropy_with_probability_targets_matches_torch_in_both_operands(options, reduction):
    torch = _torch()
    rng = np.random.default_rng(3)
    p = rng.uniform(0.1, 1.0, size=(5, 4))
    p /= p.sum(axis=-1, keepdims=True)
    weight = np.array([0.5, 2.0, 1.0, 3.0]) if options.get("weight") else None
    kw = dict(options, weight=weight)
    t_kw = dict(options, weight=None if weight is None else torch.tensor(weight))
    _compare(lambda x, t: gg.softmax_cross_entropy(x, t, reduction=reduction, **kw),
             lambda x, t: _ce_torch(torch, x, t, reduction=reduction, **t_kw),
             [rng.normal(size=(5, 4)), p])


def test_cross_entropy_plain_integer_labels_keep_the_fused_op():
    # the training step's path: one SoftmaxCrossEntropy op, its value to the bit what it was
    logits = gg.tensor(np.random.default_rng(4).normal(size=(6, 5)))
    loss = gg.softmax_cross_entropy(logits, [0, 1, 2, 3, 4, 0])
    x = logits.numpy()
    shifted = x - x.max(axis=-1, keepdims=True)
    picked = shifted[np.arange(6), [0, 1, 2, 3, 4, 0]]
    np.testing.assert_allclose(loss.item(), np.mean(np.log(np.exp(shifted).sum(-1)) - picked), rtol=1e-15)


def test_cross_entropy_bad_options_raise_naming_the_op():
    logits = gg.tensor(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="'SoftmaxCrossEntropy' takes label_smoothing"):
        gg.softmax_cross_entropy(logits, [0, 1], label_smoothing=1.5)
    with pytest.raises(ValueError, match="'SoftmaxCrossEntropy' takes ignore_index with integer labels"):
        gg.softmax_cross_entropy(logits, np.full((2, 3), 1 / 3), ignore_index=0)
    with pytest.raises(gg.ShapeError, match="'SoftmaxCrossEntropy' needs a weight of shape \\(3,\\)"):
        gg.softmax_cross_entropy(logits, [0, 1], weight=[1.0, 2.0])
    with pytest.raises(gg.ShapeError, match="'SoftmaxCrossEntropy'"):
        gg.softmax_cross_entropy(logits, np.full((2, 2), 0.5))
    with pytest.raises(IndexError, match="'SoftmaxCrossEntropy' got label 5"):
        gg.softmax_cross_entropy(logits, [5, -100], ignore_index=-100)


# ---------------------------------------------------------------- binary cross-entropy


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_matches_torch_in_both_operands(weighted, reduction):
    torch = _torch()
    rng = np.random.default_rng(6)
    weight = rng.uniform(0.5, 2.0, size=(4,)) if weighted else None
    tw = None if weight is None else torch.tensor(weight)
    _compare(lambda p, t: gg.binary_cross_entropy(p, t, weight=weight, reduction=reduction),
             lambda p, t: torch.nn.functional.binary_cross_entropy(p, t, weight=tw, reduction=reduction),
             [rng.uniform(0.05, 0.95, size=(3, 4)), rng.uniform(0, 1, size=(3, 4))])


def test_binary_cross_entropy_clamps_the_log_at_minus_100_as_torch():
    torch = _torch()
    p, t = np.array([0.0, 1.0, 0.0, 1.0, 1e-50]), np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    _compare(lambda p: gg.binary_cross_entropy(p, t, reduction="none"),
             lambda p: torch.nn.functional.binary_cross_entropy(p, torch.tensor(t), reduction="none"), [p])


def test_binary_cross_entropy_raises_for_a_probability_outside_0_1():
    with pytest.raises(IndexError, match="'BinaryCrossEntropy' needs probabilities in \\[0, 1\\]"):
        gg.binary_cross_entropy(gg.tensor([0.5, 1.5]), [1.0, 0.0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", [dict(pos_weight=True), dict(weight=True), dict(pos_weight=True, weight=True)])
def test_sigmoid_cross_entropy_pos_weight_and_weight_match_torch(options, reduction):
    torch = _torch()
    rng = np.random.default_rng(7)
    pw = rng.uniform(0.5, 3.0, size=(4,)) if options.get("pos_weight") else None
    w = rng.uniform(0.5, 2.0, size=(3, 1)) if options.get("weight") else None
    arrays = [rng.normal(size=(3, 4)) * 4, rng.uniform(0, 1, size=(3, 4))] + ([pw] if pw is not None else [])

    def ours(x, z, *pos):
        return gg.sigmoid_cross_entropy(x, z, reduction=reduction, weight=w, pos_weight=pos[0] if pos else None)

    def theirs(x, z, *pos):
        return torch.nn.functional.binary_cross_entropy_with_logits(
            x, z, reduction=reduction, weight=None if w is None else torch.tensor(w),
            pos_weight=pos[0] if pos else None)
    _compare(ours, theirs, arrays, grad_of=(0, 1))  # PyTorch does not differentiate pos_weight (gpugrad does)


def test_sigmoid_cross_entropy_with_pos_weight_is_finite_for_huge_logits():
    x = gg.Variable(np.array([-1000.0, 1000.0, -30.0, 30.0], np.float32))
    with gg.GradientTape() as tape:
        loss = gg.sigmoid_cross_entropy(x, [1.0, 0.0, 0.0, 1.0], reduction="sum", pos_weight=2.0)
    grad = tape.gradient(loss, x).numpy()
    # the reference in float64 from the definition: pw z softplus(-x) + (1 - z) softplus(x)
    xs, z = np.array([-1000.0, 1000.0, -30.0, 30.0]), np.array([1.0, 0.0, 0.0, 1.0])
    ref = (2.0 * z * np.logaddexp(0, -xs) + (1 - z) * np.logaddexp(0, xs)).sum()
    np.testing.assert_allclose(loss.item(), ref, rtol=1e-6)
    assert np.isfinite(grad).all()


# ---------------------------------------------------------------- huber, smooth_l1, kl_div, cosine_similarity


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.3])
def test_huber_matches_torch(delta, reduction):
    torch = _torch()
    rng = np.random.default_rng(8)
    _compare(lambda p, t: gg.huber(p, t, delta=delta, reduction=reduction),
             lambda p, t: torch.nn.functional.huber_loss(p, t, delta=delta, reduction=reduction),
             [rng.normal(size=(3, 4)), rng.normal(size=(3, 4))])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.5, 0.0])
def test_smooth_l1_matches_torch(beta, reduction):
    torch = _torch()
    rng = np.random.default_rng(9)
    _compare(lambda p, t: gg.smooth_l1(p, t, beta=beta, reduction=reduction),
             lambda p, t: torch.nn.functional.smooth_l1_loss(p, t, beta=beta, reduction=reduction),
             [rng.normal(size=(3, 4)), rng.normal(size=(3, 4))])


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")  # PyTorch's note on its "mean"
@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch_in_both_operands(log_target, reduction):
    torch = _torch()
    q, p = _log_probs((3, 4), seed=10), _log_probs((3, 4), seed=11)
    _compare(lambda x, t: gg.kl_div(x, t, reduction=reduction, log_target=log_target),
             lambda x, t: torch.nn.functional.kl_div(x, t, reduction=reduction, log_target=log_target),
             [q, p if log_target else np.exp(p)])


def test_kl_div_of_a_zero_target_is_zero_as_torch():
    torch = _torch()
    t = np.array([[0.0, 0.5, 0.5]])
    _compare(lambda x: gg.kl_div(x, t, reduction="none"),
             lambda x: torch.nn.functional.kl_div(x, torch.tensor(t), reduction="none"), [_log_probs((1, 3))])


@pytest.mark.parametrize("shapes, dim", [(((4, 5), (4, 5)), 1), (((4, 5), (4, 5)), 0), (((2, 3, 4), (3, 4)), -1),
                                         (((3, 4), (1, 4)), 0), (((3, 4), (4,)), 0)])
def test_cosine_similarity_matches_torch(shapes, dim):
    torch = _torch()
    rng = np.random.default_rng(12)
    _compare(lambda a, b: gg.cosine_similarity(a, b, dim=dim),
             lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=dim),
             [rng.normal(size=s) for s in shapes])


def test_cosine_similarity_of_a_zero_vector_is_zero_with_a_finite_gradient():
    torch = _torch()
    a, b = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]), np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    _compare(lambda a, b: gg.cosine_similarity(a, b), lambda a, b: torch.nn.functional.cosine_similarity(a, b),
             [a, b], rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------- gg.function: a replay equals the eager call


def _cases():
    rng = np.random.default_rng(13)
    logp = _log_probs((5, 4))
    labels = np.array([0, 3, -100, 1, 2])
    probs = rng.uniform(0.05, 0.95, size=(5, 4))
    return {
        "nll_loss": (lambda x: gg.nll_loss(x, labels, weight=np.array([1.0, 2.0, 0.5, 1.0])), logp),
        "cross_entropy_options": (lambda x: gg.softmax_cross_entropy(x, labels, ignore_index=-100,
                                                                     label_smoothing=0.1), logp * 3),
        "cross_entropy_probabilities": (lambda x: gg.softmax_cross_entropy(x, probs / probs.sum(-1, keepdims=True)),
                                        logp * 3),
        "binary_cross_entropy": (lambda x: gg.binary_cross_entropy(x, 1.0 - probs), probs),
        "pos_weight": (lambda x: gg.sigmoid_cross_entropy(x, probs, pos_weight=np.array([1.0, 2.0, 3.0, 4.0])),
                       logp * 3),
        "huber": (lambda x: gg.huber(x, probs, delta=0.5), logp),
        "smooth_l1": (lambda x: gg.smooth_l1(x, probs, beta=0.5), logp),
        "kl_div": (lambda x: gg.kl_div(x, probs, reduction="batchmean"), logp),
        "cosine_similarity": (lambda x: gg.sum(gg.cosine_similarity(x, probs)), logp),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_a_replay_under_gg_function_equals_the_eager_call(name):
    fn, start = _cases()[name]
    v_eager, v_traced = gg.Variable(start), gg.Variable(start)

    def step(v):
        with gg.GradientTape() as tape:
            loss = fn(v)
        g = tape.gradient(loss, v)
        v.assign_sub(0.01 * g)
        return loss

    traced = gg.function(step)
    for _ in range(3):
        eager_loss, traced_loss = step(v_eager), traced(v_traced)
        assert eager_loss.numpy().tobytes() == traced_loss.numpy().tobytes()
    assert v_eager.numpy().tobytes() == v_traced.numpy().tobytes()


# ---------------------------------------------------------------- on every device


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("name", list(_cases()))
def test_each_loss_computes_on_the_device_what_it_computes_on_the_cpu(name, device):
    fn, start = _cases()[name]
    values, grads = [], []
    for dev in ("cpu", device):
        v = gg.Variable(gg.tensor(start, device=dev))
        with gg.GradientTape() as tape:
            loss = fn(v)
        values.append(loss.numpy())
        grads.append(tape.gradient(loss, v).numpy())
    np.testing.assert_allclose(values[1], values[0], rtol=1e-12)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("device", device_params())
def test_a_label_out_of_range_on_the_device_raises_at_the_next_host_read_naming_the_op(device):
    cupy = __import__("sys").modules.get("cupy") if device != "cpu" else None
    counting = getattr(getattr(cupy, "_transfers", None), "counting", None)  # the stand-in counts transfers
    logp = gg.tensor(_log_probs((2, 3)), device=device)
    for make, match in [
            (lambda: gg.nll_loss(logp, gg.tensor([0, 3], device=device)), "'NLLLoss' got label 3"),
            (lambda: gg.softmax_cross_entropy(logp, gg.tensor([-100, -1], device=device), ignore_index=-100),
             "'SoftmaxCrossEntropy' got label -1"),
            (lambda: gg.binary_cross_entropy(gg.tensor([0.5, -0.5], device=device), [1.0, 0.0]),
             "'BinaryCrossEntropy' needs probabilities in")]:
        if device == "cpu":
            with pytest.raises(IndexError, match=match):
                make()
            continue
        if counting is not None:
            with counting() as seen:
                out = make()  # no error and no read here
            assert seen == [], seen
        else:
            out = make()
        with pytest.raises(gg.IndexOutOfRangeError, match=match):
            out.numpy()
    # an ignored label in range of nothing is no error, on any device
    assert np.isfinite(gg.nll_loss(logp, gg.tensor([-100, 2], device=device)).numpy())
