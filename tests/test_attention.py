"""Attention and the transformer's layers: against a NumPy float64 reference, and against PyTorch
(a test-only oracle, skipped with its reason where it is not installed)."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import nn
from gpugrad.nn import functional as F
from tests.conftest import device_params


def _reference_sdpa(q, k, v, keep=None, bias=None, scale=None):
    """softmax(q k^T scale + bias) v in float64 with NumPy, a row that keeps nothing giving zeros."""
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if bias is not None:
        s = s + bias
    keep = np.ones(s.shape, dtype=bool) if keep is None else np.broadcast_to(keep, s.shape)
    keep = keep & np.isfinite(s)
    s = np.where(keep, s, -np.inf)
    m = np.where(keep.any(-1, keepdims=True), s.max(-1, keepdims=True), 0.0)
    e = np.where(keep, np.exp(s - m), 0.0)
    total = e.sum(-1, keepdims=True)
    return (e / np.where(total == 0, 1, total)) @ v


def _qkv(rng, batch=(2, 3), length=4, source=5, e=8, ev=6):
    return (rng.standard_normal(batch + (length, e)), rng.standard_normal(batch + (source, e)),
            rng.standard_normal(batch + (source, ev)))


@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("case", ["plain", "causal", "bool", "float", "scale", "fully_masked_row"])
def test_sdpa_matches_numpy_reference(case, device):
    rng = np.random.default_rng(0)
    q, k, v = _qkv(rng)
    kwargs, keep, bias, scale = {}, None, None, None
    if case == "causal":
        kwargs["is_causal"], keep = True, np.tril(np.ones((4, 5), dtype=bool))
    elif case == "bool":
        keep = rng.random((3, 4, 5)) < 0.6
        kwargs["mask"] = gg.tensor(keep, device=device)
    elif case == "float":
        bias = rng.standard_normal((4, 5))
        bias[1, 2] = -np.inf
        kwargs["mask"] = gg.tensor(bias, device=device)
    elif case == "scale":
        kwargs["scale"] = scale = 0.3
    else:
        keep = np.ones((4, 5), dtype=bool)
        keep[2] = False
        kwargs["mask"] = gg.tensor(keep, device=device)
    got = F.scaled_dot_product_attention(*(gg.tensor(a, device=device) for a in (q, k, v)), **kwargs).numpy()
    want = _reference_sdpa(q, k, v, keep, bias, scale)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    if case == "fully_masked_row":
        assert not np.isnan(got).any() and (got[..., 2, :] == 0).all()


def test_sdpa_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    q, k, v = (gg.tensor(a) for a in _qkv(rng, batch=(2,), length=3, source=3, e=4, ev=2))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    theoretical, numerical = gg.gradient_checker.compute_gradient(fn, [q, k, v])
    for t, n in zip(theoretical, numerical):
        np.testing.assert_allclose(t, n, rtol=1e-6, atol=1e-7)


def test_fully_masked_row_has_zero_gradient_not_nan():
    x = gg.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]))
    keep = gg.tensor([[True, True], [False, False]])
    with gg.GradientTape() as tape:
        y = gg.masked_softmax(x, keep)
        loss = gg.sum(y * gg.tensor([[1.0, 2.0], [3.0, 4.0]]))
    g = tape.gradient(loss, x).numpy()
    assert np.isfinite(g).all() and (g[1] == 0).all()


def test_sdpa_errors_name_the_problem():
    q = gg.ones((2, 3, 4))
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(q, q, q, mask=gg.ones((3, 3), dtype="bool"), is_causal=True)
    with pytest.raises(gg.ShapeError, match="scaled_dot_product_attention"):
        F.scaled_dot_product_attention(q, gg.ones((2, 3, 5)), q)
    with pytest.raises(gg.ShapeError, match="MaskedSoftmax"):
        F.scaled_dot_product_attention(q, q, q, mask=gg.ones((2, 2), dtype="bool"))
    with pytest.raises(gg.DTypeError, match="MaskedSoftmax"):
        gg.masked_softmax(q, gg.ones((3, 4), dtype="int64"))
    with pytest.raises(gg.ShapeError, match="MaskedSoftmaxGrad"):
        gg.ops.masked_softmax_grad(q, gg.ones((3, 4)))


def test_rmsnorm_matches_formula():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 5))
    layer = nn.RMSNorm(5, eps=1e-6, dtype="float64")
    layer.weight.assign(np.arange(1.0, 6.0))
    want = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * np.arange(1.0, 6.0)
    np.testing.assert_allclose(layer(gg.tensor(x)).numpy(), want, rtol=1e-12)


def test_sinusoidal_table_is_vaswani():
    table = nn.transformer.sinusoids(7, 6)
    pos, i = 5, 2
    assert table[pos, 2 * i] == pytest.approx(np.sin(pos / 10000 ** (2 * i / 6)))
    assert table[pos, 2 * i + 1] == pytest.approx(np.cos(pos / 10000 ** (2 * i / 6)))


def test_transformer_block_is_causal_and_trains():
    block = nn.TransformerBlock(8, 2, causal=True, seed=0, dtype="float64")
    x = np.random.default_rng(3).standard_normal((1, 5, 8))
    y = block(gg.tensor(x)).numpy()
    x2 = x.copy()
    x2[:, 3:] += 1.0  # a later step changes; earlier outputs must not
    y2 = block(gg.tensor(x2)).numpy()
    np.testing.assert_allclose(y[:, :3], y2[:, :3], rtol=1e-12)
    assert not np.allclose(y[:, 3:], y2[:, 3:])
    with gg.GradientTape() as tape:
        loss = gg.sum(block(gg.tensor(x)) ** 2)
    grads = tape.gradient(loss, block.trainable_variables)
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in grads)


def test_multi_head_attention_errors():
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiHeadAttention(10, 3)
    with pytest.raises(gg.ShapeError, match="batch-first"):
        nn.MultiHeadAttention(8, 2)(gg.ones((5, 8)))


# ---------------------------------------------------------------- against PyTorch

def _torch():
    return pytest.importorskip("torch", reason="PyTorch (a test-only oracle) is not installed")


@pytest.mark.parametrize("case", ["plain", "causal_rect", "bool", "float", "scale", "fully_masked_row"])
def test_sdpa_values_and_gradients_match_pytorch(case):
    torch = _torch()
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng)
    kwargs = {}
    if case == "causal_rect":
        kwargs["is_causal"] = True  # L=4 < S=5: top-left tril, as PyTorch
    elif case == "bool":
        kwargs["mask"] = rng.random((3, 4, 5)) < 0.6
    elif case == "float":
        kwargs["mask"] = rng.standard_normal((4, 5))
    elif case == "scale":
        kwargs["scale"] = 0.3
    elif case == "fully_masked_row":
        keep = np.ones((4, 5), dtype=bool)
        keep[1] = False
        kwargs["mask"] = keep
    dy = rng.standard_normal((2, 3, 4, 6))
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tkw = dict(kwargs)
    if "mask" in tkw:
        tkw["attn_mask"] = torch.tensor(tkw.pop("mask"))
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **tkw)
    tout.backward(torch.tensor(dy))
    gq, gk, gv = (gg.Variable(a) for a in (q, k, v))
    if "mask" in kwargs:
        kwargs["mask"] = gg.tensor(kwargs["mask"])
    with gg.GradientTape() as tape:
        out = F.scaled_dot_product_attention(gq, gk, gv, **kwargs)
    grads = tape.gradient(out, [gq, gk, gv], output_gradients=gg.tensor(dy))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    for g, t in zip(grads, (tq, tk, tv)):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_multi_head_attention_matches_pytorch():
    torch = _torch()
    rng = np.random.default_rng(5)
    mha = nn.MultiHeadAttention(8, 2, causal=True, seed=0, dtype="float64")
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # PyTorch's weights are (out, in): the transposes of our kernels
        ref.in_proj_weight.copy_(torch.tensor(np.concatenate(
            [mha.q_kernel.numpy().T, mha.k_kernel.numpy().T, mha.v_kernel.numpy().T])))
        ref.in_proj_bias.copy_(torch.tensor(rng.standard_normal(24)))
        ref.out_proj.weight.copy_(torch.tensor(mha.out_kernel.numpy().T))
        ref.out_proj.bias.copy_(torch.tensor(rng.standard_normal(8)))
    bias = ref.in_proj_bias.detach().numpy()
    mha.q_bias.assign(bias[:8]), mha.k_bias.assign(bias[8:16]), mha.v_bias.assign(bias[16:])
    mha.out_bias.assign(ref.out_proj.bias.detach().numpy())
    x = rng.standard_normal((3, 5, 8))
    # PyTorch's module masks out where its bool mask is True: the upper triangle
    want, _ = ref(*(torch.tensor(x),) * 3, attn_mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), 1),
                  need_weights=False)
    np.testing.assert_allclose(mha(gg.tensor(x)).numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_rmsnorm_matches_pytorch():
    torch = _torch()
    x = np.random.default_rng(6).standard_normal((3, 4, 6)).astype(np.float32)
    want = torch.nn.RMSNorm(6)(torch.tensor(x)).detach().numpy()  # eps None: float32's epsilon, both
    np.testing.assert_allclose(nn.RMSNorm(6)(gg.tensor(x)).numpy(), want, rtol=1e-6, atol=1e-6)
