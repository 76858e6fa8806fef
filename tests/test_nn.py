"""gg.nn: Module discovery and modes, layers against NumPy, initialisers, functional exports.

Layers whose ops come from the network-ops module (conv2d, pooling, dropout,
embedding, layer_norm, batch_norm) are tested when ``gg`` has the op and
skipped, naming the op, while it does not.
"""
import math

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import nn
from gpugrad.nn import init
from tests.conftest import device_params


def needs(*ops):
    missing = [op for op in ops if not hasattr(gg, op)]
    return pytest.mark.skipif(bool(missing), reason=f"gpugrad has no {', '.join(missing)} yet (network ops)")


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = gg.Variable([1.0], name="w")
        self.frozen = gg.Variable([2.0], trainable=False)
        self.constant = gg.tensor([3.0])  # a Tensor, not a Variable: not state
        self.number = 4

    def forward(self, x):
        return x * self.w + self.frozen


class Nest(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Pair()
        self.blocks = [Pair(), (gg.Variable([5.0]), {"inner": Pair()})]
        self.table = {"a": gg.Variable([6.0]), "b": [gg.Variable([7.0])]}

    def forward(self, x):
        return self.first(x)


# ---------------------------------------------------------------- Module


def test_module_finds_variables_in_attributes_lists_tuples_dicts_and_submodules():
    m = Nest()
    assert [name for name, _ in m.named_variables()] == [
        "first.w", "first.frozen",
        "blocks.0.w", "blocks.0.frozen", "blocks.1.0", "blocks.1.1.inner.w", "blocks.1.1.inner.frozen",
        "table.a", "table.b.0"]
    assert len(m.variables) == 9
    assert len(m.trainable_variables) == 6 and all(v.trainable for v in m.trainable_variables)
    assert [v.item() for v in m.non_trainable_variables] == [2.0, 2.0, 2.0]
    assert m.trainable_variables[0] is m.first.w
    assert [name for name, _ in m.named_modules()] == ["", "first", "blocks.0", "blocks.1.1.inner"]
    assert len(m.submodules) == 3


def test_shared_variables_and_modules_are_listed_once_and_cycles_end():
    m = Nest()
    m.again = m.first  # the same sub-module twice
    m.tied = m.first.w  # and the same variable
    m.first.parent = m  # a cycle back to the root
    names = [name for name, _ in m.named_variables()]
    assert names.count("first.w") == 1 and "again.w" not in names and "tied" not in names
    assert len(m.variables) == 9


def test_variables_are_named_variables_in_the_same_order():
    """``variables`` walks without building paths; it must list what ``named_variables`` lists."""
    m = Nest()
    m.again, m.tied, m.first.parent = m.first, m.blocks[1][0], m
    assert [id(v) for v in m.variables] == [id(v) for _, v in m.named_variables()]
    assert [id(v) for v in m.trainable_variables] == [id(v) for _, v in m.named_variables() if v.trainable]


def test_call_runs_forward_and_a_module_without_forward_says_so():
    assert Pair()(gg.tensor([3.0])).numpy().tolist() == [5.0]
    with pytest.raises(NotImplementedError, match="Module does not define forward"):
        nn.Module()(1)


def test_train_and_eval_reach_every_submodule():
    m = Nest()
    assert all(sub.training for sub in m.modules())
    assert m.eval() is m
    assert [sub.training for sub in m.modules()] == [False] * 4
    m.train()
    assert all(sub.training for sub in m.modules())
    m.blocks[1][1]["inner"].train(False)  # one sub-module alone
    assert not m.blocks[1][1]["inner"].training and m.training


def test_a_subclass_that_skips_init_still_works():
    class Bare(nn.Module):
        def forward(self, x):
            return x

    b = Bare()
    assert b.training and b.variables == [] and b.eval().training is False


# ---------------------------------------------------------------- Dense, Flatten, Sequential


def test_dense_forward_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    layer = nn.Dense(3, 4, seed=1)
    kernel, bias = rng.standard_normal((3, 4)), rng.standard_normal(4)
    layer.kernel.assign(kernel.astype(np.float32))
    layer.bias.assign(bias.astype(np.float32))
    np.testing.assert_allclose(layer(gg.tensor(x)).numpy(), x @ kernel + bias, rtol=1e-5, atol=1e-6)
    relu = nn.Dense(3, 4, activation="relu", seed=1)
    relu.kernel.assign(layer.kernel)
    np.testing.assert_allclose(relu(gg.tensor(x)).numpy(), np.maximum(x @ kernel, 0), rtol=1e-5, atol=1e-6)
    nobias = nn.Dense(3, 4, use_bias=False, activation=gg.tanh, seed=1)
    nobias.kernel.assign(layer.kernel)
    assert nobias.bias is None and [n for n, _ in nobias.named_variables()] == ["kernel"]
    np.testing.assert_allclose(nobias(gg.tensor(x)).numpy(), np.tanh(x @ kernel), rtol=1e-5, atol=1e-6)


def test_dense_gradients_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3))
    layer = nn.Dense(3, 2, dtype=np.float64, seed=0)
    with gg.GradientTape() as tape:
        loss = gg.sum(layer(gg.tensor(x)) ** 2)
    gk, gb = tape.gradient(loss, [layer.kernel, layer.bias])
    y = x @ layer.kernel.numpy() + layer.bias.numpy()
    np.testing.assert_allclose(gk.numpy(), x.T @ (2 * y), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), (2 * y).sum(0), rtol=1e-12)


def test_dense_initialisation_is_seeded_and_configurable():
    a, b, c = nn.Dense(8, 4, seed=5), nn.Dense(8, 4, seed=5), nn.Dense(8, 4, seed=6)
    assert np.array_equal(a.kernel.numpy(), b.kernel.numpy())
    assert not np.array_equal(a.kernel.numpy(), c.kernel.numpy())
    assert not a.bias.numpy().any()  # zeros
    limit = math.sqrt(6 / 12)
    assert np.abs(a.kernel.numpy()).max() <= limit
    he = nn.Dense(8, 4, kernel_init="he_normal", bias_init=init.ones, dtype=np.float64, seed=0)
    assert he.kernel.dtype == np.float64 and he.bias.numpy().tolist() == [1.0] * 4
    custom = nn.Dense(2, 2, kernel_init=lambda shape, dtype, seed: np.full(shape, 0.5, dtype))
    assert custom.kernel.numpy().tolist() == [[0.5, 0.5], [0.5, 0.5]]
    with pytest.raises(ValueError, match="unknown initialiser 'nope'"):
        nn.Dense(2, 2, kernel_init="nope")
    with pytest.raises(ValueError, match="activation"):
        nn.Dense(2, 2, activation="swishy")
    named = nn.Dense(2, 2, name="head")
    assert named.kernel.name == "head.kernel" and named.bias.name == "head.bias"


def test_flatten():
    x = gg.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(start_axis=2)(x).shape == (2, 3, 4)
    np.testing.assert_array_equal(nn.Flatten()(x).numpy(), x.numpy().reshape(2, 12))


def test_sequential():
    model = nn.Sequential(nn.Dense(4, 8, seed=0), gg.relu, nn.Dense(8, 3, seed=1))
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    k0, b0, k1, b1 = (v.numpy() for v in model.variables)
    want = np.maximum(x @ k0 + b0, 0) @ k1 + b1
    np.testing.assert_allclose(model(gg.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    assert [n for n, _ in model.named_variables()] == ["layers.0.kernel", "layers.0.bias",
                                                       "layers.2.kernel", "layers.2.bias"]
    assert len(model) == 3 and model[1] is gg.relu and isinstance(model[:1], nn.Sequential)
    assert nn.Sequential([nn.Flatten()]).add(nn.Dense(6, 1, seed=0))(gg.ones((1, 2, 3))).shape == (1, 1)
    with pytest.raises(TypeError, match="callables"):
        nn.Sequential(3)
    assert "Dense(in_features=4, out_features=8" in repr(model)


def test_mlp_trains_with_an_optimizer():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 2)).astype(np.float32)
    labels = (x[:, 0] * x[:, 1] > 0).astype(np.int64)  # XOR of the signs: needs the hidden layer
    model = nn.Sequential(nn.Dense(2, 16, activation="tanh", seed=0), nn.Dense(16, 2, seed=1))
    opt = gg.optimizers.Adam(0.05)
    xs = gg.tensor(x)
    for _ in range(200):
        loss = opt.minimize(lambda: gg.softmax_cross_entropy(model(xs), labels))
    accuracy = (model(xs).numpy().argmax(1) == labels).mean()
    assert loss.item() < 0.15 and accuracy > 0.95


# ---------------------------------------------------------------- initialisers


@pytest.mark.parametrize("name, std_of", [
    ("glorot_uniform", lambda fi, fo: math.sqrt(2 / (fi + fo))),
    ("glorot_normal", lambda fi, fo: math.sqrt(2 / (fi + fo))),
    ("he_uniform", lambda fi, fo: math.sqrt(2 / fi)),
    ("he_normal", lambda fi, fo: math.sqrt(2 / fi)),
])
def test_initialiser_statistics(name, std_of):
    fn = getattr(init, name)
    for shape in [(200, 300), (64, 32, 3, 3)]:
        w = fn(shape, seed=0)
        fan_in, fan_out = init.compute_fans(shape)
        assert w.shape == shape and w.dtype == np.float32
        assert abs(w.mean()) < 0.05 * std_of(fan_in, fan_out)
        assert w.std() == pytest.approx(std_of(fan_in, fan_out), rel=0.03)
        if name.endswith("uniform"):
            assert np.abs(w).max() <= math.sqrt(3) * std_of(fan_in, fan_out)


def test_initialiser_seeds():
    assert np.array_equal(init.he_uniform((5, 5), seed=1), init.he_uniform((5, 5), seed=1))
    assert not np.array_equal(init.he_uniform((5, 5), seed=1), init.he_uniform((5, 5), seed=2))
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    assert np.array_equal(init.glorot_normal((3, 3), seed=g1), init.glorot_normal((3, 3), seed=g2))
    h1, h2 = gg.random.Generator(9), gg.random.Generator(9)
    assert np.array_equal(init.he_normal((3, 3), seed=h1), init.he_normal((3, 3), seed=h2))
    init.set_seed(11)
    a = init.glorot_uniform((4, 4))
    init.set_seed(11)
    assert np.array_equal(a, init.glorot_uniform((4, 4)))
    assert not np.array_equal(a, init.glorot_uniform((4, 4)))  # the default generator moves on
    assert init.he_normal((2, 2), dtype=np.float64, seed=0).dtype == np.float64
    assert init.zeros((2, 3)).sum() == 0 and init.ones(3).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match="seed"):
        init.he_normal((2, 2), seed="x")


def test_fans():
    assert init.compute_fans((10, 20)) == (10, 20)  # Dense: (in, out)
    assert init.compute_fans((8, 4, 3, 3)) == (36, 72)  # Conv2D OIHW
    assert init.compute_fans((5,)) == (5, 5)


# ---------------------------------------------------------------- layers over the network ops


def conv2d_numpy(x, w, b, stride, padding, groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, g * cg:(g + 1) * cg, i * stride:i * stride + kh, j * stride:j * stride + kw]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3))
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


@needs("conv2d")
def test_conv2d_layer_matches_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6))
    conv = nn.Conv2D(4, 6, kernel_size=3, stride=2, padding=1, groups=2, dtype=np.float64, seed=0)
    assert conv.kernel.shape == (6, 2, 3, 3) and conv.bias.shape == (6,)
    conv.bias.assign(rng.standard_normal(6))
    want = conv2d_numpy(x, conv.kernel.numpy(), conv.bias.numpy(), stride=2, padding=1, groups=2)
    np.testing.assert_allclose(conv(gg.tensor(x)).numpy(), want, rtol=1e-12, atol=1e-12)
    relu = nn.Conv2D(4, 2, kernel_size=(3, 1), padding="same", activation="relu", use_bias=False, seed=0)
    assert relu(gg.ones((1, 4, 5, 5))).shape == (1, 2, 5, 5) and relu.bias is None
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2D(3, 4, 3, groups=2)


@needs("max_pool2d", "avg_pool2d")
def test_pool_layers_match_numpy():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 6))
    blocks = x.reshape(2, 3, 2, 2, 3, 2)
    np.testing.assert_allclose(nn.MaxPool2D(2)(gg.tensor(x)).numpy(), blocks.max(axis=(3, 5)))
    np.testing.assert_allclose(nn.AvgPool2D(2)(gg.tensor(x)).numpy(), blocks.mean(axis=(3, 5)), rtol=1e-12)
    assert nn.MaxPool2D(3, stride=1, padding=1)(gg.tensor(x)).shape == (2, 3, 4, 6)


@needs("dropout")
def test_dropout_layer_train_and_eval():
    x = gg.ones((200, 50))
    drop = nn.Dropout(0.25)
    y = drop(x).numpy()
    kept = y != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)  # inverted scaling
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="rate"):
        nn.Dropout(1.0)


@needs("embedding")
def test_embedding_layer():
    emb = nn.Embedding(10, 3, seed=0)
    ids = np.array([[1, 4], [4, 9]])
    np.testing.assert_array_equal(emb(ids).numpy(), emb.weight.numpy()[ids])
    with gg.GradientTape() as tape:
        loss = gg.sum(emb(ids))
    grad = tape.gradient(loss, emb.weight).numpy()
    assert grad[4].tolist() == [2.0] * 3 and grad[1].tolist() == [1.0] * 3 and grad[0].tolist() == [0.0] * 3


@needs("layer_norm")
def test_layer_norm_layer_matches_numpy():
    x = np.random.default_rng(2).standard_normal((3, 4, 5))
    ln = nn.LayerNorm((4, 5), dtype=np.float64)
    ln.weight.assign(np.full((4, 5), 2.0))
    ln.bias.assign(np.full((4, 5), 0.5))
    mean, var = x.mean(axis=(1, 2), keepdims=True), x.var(axis=(1, 2), keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * 2.0 + 0.5
    np.testing.assert_allclose(ln(gg.tensor(x)).numpy(), want, rtol=1e-10, atol=1e-12)
    assert nn.LayerNorm(5, elementwise_affine=False).variables == []


@needs("batch_norm")
def test_batch_norm_layer_train_and_eval():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 3, 2, 2)) * 2.0 + 1.0
    bn = nn.BatchNorm(3, momentum=0.1, dtype=np.float64)
    assert [n for n, _ in bn.named_variables()] == ["weight", "bias", "running_mean", "running_var"]
    assert [v.trainable for v in bn.variables] == [True, True, False, False]
    y = bn(gg.tensor(x)).numpy()
    mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    want = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-9, atol=1e-10)
    count = x.size // 3
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * mean, rtol=1e-10)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.9 + 0.1 * var * count / (count - 1), rtol=1e-10)
    bn.eval()
    running_mean, running_var = bn.running_mean.numpy(), bn.running_var.numpy()
    y_eval = bn(gg.tensor(x)).numpy()
    want_eval = (x - running_mean.reshape(1, 3, 1, 1)) / np.sqrt(running_var.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(y_eval, want_eval, rtol=1e-9, atol=1e-10)
    np.testing.assert_array_equal(bn.running_mean.numpy(), running_mean)  # eval leaves the statistics alone


def test_a_layer_whose_op_is_missing_says_which(monkeypatch):
    from gpugrad import ops

    monkeypatch.delattr(ops, "max_pool2d", raising=False)
    with pytest.raises(NotImplementedError, match="gpugrad.max_pool2d is not available"):
        nn.MaxPool2D(2)(gg.ones((1, 1, 2, 2)))


# ---------------------------------------------------------------- functional


def test_functional_reexports_the_network_ops():
    from gpugrad.nn import functional as F

    for name in ["relu", "softmax", "log_softmax", "softmax_cross_entropy", "sigmoid_cross_entropy", "mse"]:
        assert getattr(F, name) is getattr(gg, name)
        assert getattr(nn, name) is getattr(gg, name)
    for name in ["conv2d", "max_pool2d", "avg_pool2d", "dropout", "embedding", "layer_norm", "batch_norm"]:
        assert (name in F.__all__) == hasattr(gg, name)


# ---------------------------------------------------------------- devices


@pytest.mark.parametrize("device", device_params())
def test_layers_live_on_the_device_asked_for(device):
    layer = nn.Dense(3, 2, device=device, seed=0)
    assert all(v.device.startswith(device) for v in layer.variables)
    cpu = nn.Dense(3, 2, device="cpu", seed=0)  # the same seed gives the same weights on every device
    np.testing.assert_array_equal(layer.kernel.numpy(), cpu.kernel.numpy())
    out = layer(gg.ones((4, 3), device=device))
    assert out.device.startswith(device)
    # the CPU layer needs a CPU input: gg.ones alone goes to the default device, the GPU where one exists
    np.testing.assert_allclose(out.numpy(), cpu(gg.ones((4, 3), device="cpu")).numpy(), rtol=1e-6)


@needs("dropout")
def test_dropout_layer_seed_repeats_the_sequence_of_masks():
    x = gg.ones((4, 8))
    a, b = nn.Dropout(0.5, seed=3), nn.Dropout(0.5, seed=3)
    first, second = a(x).numpy(), a(x).numpy()
    assert not np.array_equal(first, second)  # a new mask each call
    np.testing.assert_array_equal(b(x).numpy(), first)
    np.testing.assert_array_equal(b(x).numpy(), second)
    gg.random.seed(5)
    c = nn.Dropout(0.5)(x).numpy()
    gg.random.seed(5)
    np.testing.assert_array_equal(nn.Dropout(0.5)(x).numpy(), c)  # the global generator


def test_global_seed_makes_models_repeat():
    gg.random.seed(21)
    a = nn.Sequential(nn.Dense(5, 4), nn.Dense(4, 2))
    gg.random.seed(21)
    b = nn.Sequential(nn.Dense(5, 4), nn.Dense(4, 2))
    for va, vb in zip(a.variables, b.variables):
        np.testing.assert_array_equal(va.numpy(), vb.numpy())
    gg.random.seed(21)
    c, d = nn.Dense(5, 4), nn.Dense(5, 4)
    np.testing.assert_array_equal(c.kernel.numpy(), a.layers[0].kernel.numpy())
    assert not np.array_equal(c.kernel.numpy(), d.kernel.numpy())  # the global stream moves on
