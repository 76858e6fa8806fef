"""Forward values and errors of the network ops: conv2d, pooling, dropout, embedding,
layer_norm, batch_norm, and gg.random. Gradients are checked in test_gradients.py; here
the routed gradients are also compared with loops."""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad.errors import DTypeError, IndexOutOfRangeError, ShapeError

from .conftest import device_params

DEVICES = device_params()


def arr(t):
    return t.numpy()


# ---------------------------------------------------------------- reference loops


def conv_loops(x, w, b=None, stride=(1, 1), pads=((0, 0), (0, 0)), dilation=(1, 1), groups=1):
    """conv2d by its definition, one output element at a time."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for a in range(n):
        for f in range(o):
            g = f // og
            for i in range(oh):
                for j in range(ow):
                    total = 0.0 if b is None else b[f]
                    for ch in range(cg):
                        for p in range(kh):
                            for q in range(kw):
                                total += xp[a, g * cg + ch, i * stride[0] + p * dilation[0],
                                            j * stride[1] + q * dilation[1]] * w[f, ch, p, q]
                    out[a, f, i, j] = total
    return out


def pool_loops(x, kernel, stride, pad, kind):
    """(pooled, d sum(pooled) / dx) by loops; max takes the first maximum of a window."""
    n, c, h, w = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])), constant_values=fill)
    oh = (xp.shape[2] - kernel[0]) // stride[0] + 1
    ow = (xp.shape[3] - kernel[1]) // stride[1] + 1
    out = np.zeros((n, c, oh, ow))
    grad = np.zeros(xp.shape)
    for a in range(n):
        for ch in range(c):
            for i in range(oh):
                for j in range(ow):
                    r, q = i * stride[0], j * stride[1]
                    win = xp[a, ch, r:r + kernel[0], q:q + kernel[1]]
                    if kind == "max":
                        out[a, ch, i, j] = win.max()
                        k = int(np.argmax(win))  # the first maximum
                        grad[a, ch, r + k // kernel[1], q + k % kernel[1]] += 1
                    else:
                        out[a, ch, i, j] = win.sum() / win.size
                        grad[a, ch, r:r + kernel[0], q:q + kernel[1]] += 1 / win.size
    return out, grad[:, :, pad[0]:pad[0] + h, pad[1]:pad[1] + w]


def value_and_grad(fn, x):
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return y, tape.gradient(y, x)


# ---------------------------------------------------------------- conv2d

CONV_CASES = [
    # x shape, w shape, kwargs, loop args (stride, pads, dilation, groups)
    ((2, 3, 6, 5), (4, 3, 3, 3), {}, ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)),
    ((2, 3, 6, 5), (4, 3, 3, 3), {"padding": 1}, ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)),
    ((1, 2, 7, 8), (3, 2, 3, 2), {"stride": 2, "padding": (2, 1)}, ((2, 2), ((2, 2), (1, 1)), (1, 1), 1)),
    ((1, 2, 7, 8), (3, 2, 2, 3), {"stride": (1, 3), "dilation": (2, 1)}, ((1, 3), ((0, 0), (0, 0)), (2, 1), 1)),
    ((2, 4, 5, 6), (6, 2, 3, 3), {"padding": 1, "groups": 2}, ((1, 1), ((1, 1), (1, 1)), (1, 1), 2)),
    ((1, 6, 5, 5), (6, 1, 3, 3), {"groups": 6, "dilation": 2, "padding": 2},
     ((1, 1), ((2, 2), (2, 2)), (2, 2), 6)),
    ((1, 2, 5, 6), (2, 2, 2, 4), {"padding": "same"}, ((1, 1), ((0, 1), (1, 2)), (1, 1), 1)),
    ((1, 2, 5, 6), (2, 2, 3, 3), {"padding": "same", "dilation": 2}, ((1, 1), ((2, 2), (2, 2)), (2, 2), 1)),
    ((1, 2, 5, 6), (2, 2, 3, 3), {"padding": "valid"}, ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)),
    ((1, 1, 4, 4), (1, 1, 2, 2), {"padding": ((1, 0), (0, 2)), "stride": 2}, ((2, 2), ((1, 0), (0, 2)), (1, 1), 1)),
    ((3, 2, 4, 4), (5, 2, 4, 4), {}, ((1, 1), ((0, 0), (0, 0)), (1, 1), 1)),  # kernel as large as the input
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("xs, ws, kwargs, loop", CONV_CASES, ids=[str(c[2]) for c in CONV_CASES])
def test_conv2d_matches_loops(xs, ws, kwargs, loop, device):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    expected = conv_loops(x, w, b, *loop)
    y = gg.conv2d(gg.tensor(x, device=device), gg.tensor(w, device=device), gg.tensor(b, device=device), **kwargs)
    assert y.shape == expected.shape
    np.testing.assert_allclose(arr(y), expected, rtol=1e-10, atol=1e-10)
    y32 = gg.conv2d(gg.tensor(x, dtype="float32", device=device), gg.tensor(w, dtype="float32", device=device),
                    **kwargs)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(arr(y32), expected - b[:, None, None], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_conv2d_gradients_are_the_transposed_products(device):
    # <dy, conv(x, w)> is bilinear: its gradients are exactly backprop_input and backprop_filter,
    # checked here against loops over the definition
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((6, 2, 2, 3))
    kwargs = {"stride": (2, 1), "padding": 1, "dilation": (1, 2), "groups": 2}
    loop = ((2, 1), ((1, 1), (1, 1)), (1, 2), 2)
    dy = rng.standard_normal(conv_loops(x, w, None, *loop).shape)
    xt, wt = gg.tensor(x, device=device), gg.tensor(w, device=device)
    with gg.GradientTape() as tape:
        tape.watch([xt, wt])
        y = gg.conv2d(xt, wt, **kwargs)
    gx, gw = tape.gradient(y, [xt, wt], output_gradients=gg.tensor(dy, device=device))
    eye_x = np.eye(x.size).reshape((x.size,) + x.shape)
    expected_gx = np.array([np.sum(conv_loops(e, w, None, *loop) * dy) for e in eye_x]).reshape(x.shape)
    np.testing.assert_allclose(arr(gx), expected_gx, atol=1e-10)
    eye_w = np.eye(w.size).reshape((w.size,) + w.shape)
    expected_gw = np.array([np.sum(conv_loops(x, e, None, *loop) * dy) for e in eye_w]).reshape(w.shape)
    np.testing.assert_allclose(arr(gw), expected_gw, atol=1e-10)


def test_conv2d_bias_gradient_and_unused_rows():
    # stride 2 over 6 rows with a 3-row kernel never reads the last row: its gradient is 0
    x = gg.tensor(np.ones((1, 1, 6, 6)))
    w = gg.Variable(np.ones((2, 1, 3, 3)))
    b = gg.Variable(np.zeros(2))
    with gg.GradientTape() as tape:
        tape.watch(x)
        y = gg.conv2d(x, w, b, stride=2)
        total = gg.sum(y)
    gx, gb = tape.gradient(total, [x, b])
    assert y.shape == (1, 2, 2, 2)
    assert arr(gb).tolist() == [4.0, 4.0]
    assert arr(gx)[0, 0, 5].tolist() == [0.0] * 6 and arr(gx)[0, 0, :, 5].tolist() == [0.0] * 6
    assert arr(gx)[0, 0, 2, 2] == 8.0  # read by all four windows of both filters


def test_conv2d_accepts_arrays_and_lists():
    # filters and bias given as lists or arrays take the input's dtype and device
    y = gg.conv2d(np.ones((1, 1, 3, 3)), [[[[1.0, 1.0], [1.0, 1.0]]]], [0.5])
    assert y.dtype == np.float64
    assert arr(y).tolist() == [[[[4.5, 4.5], [4.5, 4.5]]]]


@pytest.mark.parametrize("call, error, words", [
    (lambda: gg.conv2d(gg.ones((1, 3, 5, 5)), gg.ones((4, 2, 3, 3))), ShapeError, ["3 channels", "2 per group"]),
    (lambda: gg.conv2d(gg.ones((1, 4, 5, 5)), gg.ones((4, 1, 3, 3)), groups=3), ShapeError, ["groups=3", "divide"]),
    (lambda: gg.conv2d(gg.ones((1, 4, 5, 5)), gg.ones((3, 2, 3, 3)), groups=2), ShapeError, ["output channels (3"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 2, 5)), gg.ones((1, 1, 3, 3))), ShapeError, ["larger than the padded input",
                                                                               "height"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), dilation=3), ShapeError, ["spanning 7"]),
    (lambda: gg.conv2d(gg.ones((3, 5, 5)), gg.ones((1, 3, 3, 3))), ShapeError, ["(N, C, H, W)", "(3, 5, 5)"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 3, 3))), ShapeError, ["w of shape"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((2, 1, 3, 3)), gg.ones((3,))), ShapeError, ["bias", "(2,)"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3), dtype="float64")), DTypeError, ["float32"]),
    (lambda: gg.conv2d(gg.tensor(np.ones((1, 1, 5, 5), int)), gg.tensor(np.ones((1, 1, 3, 3), int))), DTypeError,
     ["int64"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), stride=0), ValueError, ["stride", ">= 1"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), padding=-1), ValueError, ["padding"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), padding="full"), ValueError, ["'same'"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), stride=2, padding="same"), ValueError,
     ["stride 1"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), stride=(1, 2, 3)), TypeError, ["pair"]),
    (lambda: gg.conv2d(gg.ones((1, 1, 5, 5)), gg.ones((1, 1, 3, 3)), groups=0), ValueError, ["groups"]),
    (lambda: gg.raw_ops.conv2d_backprop_input(gg.ones((1, 1, 2, 2)), gg.ones((1, 1, 3, 3)), (1, 1, 5, 5), (1, 0, 1, 1)),
     ShapeError, ["dy of shape (1, 1, 2, 2)", "(1, 1, 3, 3)"]),
    (lambda: gg.raw_ops.conv2d_backprop_filter(gg.ones((1, 1, 5, 5)), gg.ones((1, 2, 3, 3)), (1, 1, 3, 3), (1, 0, 1, 1)),
     ShapeError, ["Conv2DBackpropFilter", "dy of shape"]),
])
def test_conv2d_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word.lower() in str(info.value).lower()


# ---------------------------------------------------------------- pooling

POOL_CASES = [
    ((2, 3, 6, 6), 2, None, 0),
    ((2, 3, 7, 6), (3, 2), (2, 1), (1, 1)),
    ((1, 2, 5, 5), 3, 1, 1),
    ((1, 1, 5, 7), (2, 3), (3, 2), (0, 1)),
    ((1, 1, 3, 3), 3, None, 0),
    ((1, 2, 5, 7), 2, None, 0),  # windows tile the input but leave its last row and column out
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("shape, kernel, stride, padding", POOL_CASES)
def test_pooling_matches_loops(shape, kernel, stride, padding, kind, device):
    x = np.random.default_rng(2).standard_normal(shape)
    fn = gg.max_pool2d if kind == "max" else gg.avg_pool2d
    y, g = value_and_grad(lambda t: fn(t, kernel, stride, padding), gg.tensor(x, device=device))
    pair = (lambda v: (v, v) if isinstance(v, int) else v)
    expected, expected_grad = pool_loops(x, pair(kernel), pair(stride or kernel), pair(padding), kind)
    np.testing.assert_allclose(arr(y), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(arr(g), expected_grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool_ties_go_to_the_first_maximum(device):
    x = gg.tensor(np.array([[[[1.0, 3.0, 0.0, 0.0], [3.0, 3.0, 0.0, 0.0]]]]), device=device)
    y, g = value_and_grad(lambda t: gg.max_pool2d(t, 2), x)
    assert arr(y).tolist() == [[[[3.0, 0.0]]]]
    assert arr(g).tolist() == [[[[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]]]


def test_max_pool_padding_never_wins():
    x = gg.tensor(-np.ones((1, 1, 2, 2)) * 5.0)
    y = gg.max_pool2d(x, 3, stride=1, padding=1)
    assert arr(y).tolist() == [[[[-5.0, -5.0], [-5.0, -5.0]]]]


def test_avg_pool_counts_padding():
    y = gg.avg_pool2d(gg.ones((1, 1, 3, 3)), 3, stride=3, padding=1)
    np.testing.assert_allclose(arr(y), [[[[4.0 / 9.0]]]], rtol=1e-6)


def test_max_pool_second_order_routes_grad_of_grad():
    # d/dx of <v, d(sum w * maxpool(x)^2)/dx> only touches the maxima
    x = gg.tensor(np.array([[[[1.0, 2.0], [4.0, 3.0]]]]))
    with gg.GradientTape() as outer:
        outer.watch(x)
        with gg.GradientTape() as inner:
            inner.watch(x)
            y = gg.sum(gg.square(gg.max_pool2d(x, 2)))
        g = inner.gradient(y, x)
    assert arr(g).tolist() == [[[[0.0, 0.0], [8.0, 0.0]]]]
    assert arr(outer.gradient(g, x)).tolist() == [[[[0.0, 0.0], [2.0, 0.0]]]]


@pytest.mark.parametrize("call, error, words", [
    (lambda: gg.max_pool2d(gg.ones((1, 1, 4, 4)), 2, padding=2), ValueError, ["half the kernel"]),
    (lambda: gg.avg_pool2d(gg.ones((1, 4, 4)), 2), ShapeError, ["(N, C, H, W)", "(1, 4, 4)"]),
    (lambda: gg.max_pool2d(gg.ones((1, 1, 4, 2)), 3), ShapeError, ["larger than the padded input", "width"]),
    (lambda: gg.max_pool2d(gg.ones((1, 1, 4, 4)), 0), ValueError, ["kernel_size"]),
    (lambda: gg.avg_pool2d(gg.tensor(np.ones((1, 1, 2, 2), int)), 2), DTypeError, ["float"]),
    (lambda: gg.raw_ops.max_pool2d_grad(gg.ones((1, 1, 4, 4)), gg.ones((1, 1, 3, 3)), 2), ShapeError, ["(1, 1, 2, 2)"]),
    (lambda: gg.raw_ops.avg_pool2d_grad(gg.ones((1, 1, 3, 3)), (1, 1, 4, 4), 2), ShapeError, ["(1, 1, 2, 2)"]),
])
def test_pooling_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word.lower() in str(info.value).lower()


# ---------------------------------------------------------------- dropout


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_statistics(device):
    rate = 0.3
    y = arr(gg.dropout(gg.ones((200, 500), device=device), rate, seed=123))
    kept = y != 0
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1.0 / (1.0 - rate))}
    assert abs(1.0 - kept.mean() - rate) < 0.01  # 100000 draws: the standard error is 0.0015
    assert abs(y.mean() - 1.0) < 0.02  # inverted scaling keeps the expectation


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_reproducible(device):
    x = gg.ones((50, 40), device=device)
    a = arr(gg.dropout(x, 0.5, seed=7))
    assert (arr(gg.dropout(x, 0.5, seed=7)) == a).all()
    assert not (arr(gg.dropout(x, 0.5, seed=8)) == a).all()
    g1, g2 = gg.random.Generator(3), gg.random.Generator(3)
    first = [arr(gg.dropout(x, 0.5, seed=g1)) for _ in range(2)]
    second = [arr(gg.dropout(x, 0.5, seed=g2)) for _ in range(2)]
    assert (first[0] == second[0]).all() and (first[1] == second[1]).all()
    assert not (first[0] == first[1]).all()  # a generator moves on between calls
    gg.random.seed(11)
    c = arr(gg.dropout(x, 0.5))
    gg.random.seed(11)
    assert (arr(gg.dropout(x, 0.5)) == c).all()


def test_dropout_gradient_is_the_mask():
    x = gg.tensor(np.arange(1.0, 13.0).reshape(3, 4))
    y, g = value_and_grad(lambda t: gg.dropout(t, 0.25, seed=5), x)
    mask = arr(y) / arr(x)
    assert set(np.unique(mask).tolist()) <= {0.0, 1.0 / 0.75}
    np.testing.assert_array_equal(arr(g), mask)


def test_dropout_identity_cases_and_errors():
    x = gg.ones((3,))
    assert gg.dropout(x, 0.5, training=False) is x
    assert gg.dropout(x, 0.0) is x
    for rate in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="rate"):
            gg.dropout(x, rate)
    with pytest.raises(DTypeError):
        gg.dropout(gg.tensor([1, 2]), 0.5)


# ---------------------------------------------------------------- embedding


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ids", [3, [1, 0, 3], [[1, 2], [2, 2], [0, 1]], np.array([[[4]]], dtype=np.int32)],
                         ids=["scalar", "list", "nested", "int32_array"])
def test_embedding_shapes_and_values(ids, device):
    w = np.arange(15.0).reshape(5, 3)
    y = gg.embedding(ids, gg.tensor(w, device=device))
    expected = w[np.asarray(ids)]
    assert y.shape == np.shape(ids) + (3,)
    np.testing.assert_array_equal(arr(y), expected)
    ids_tensor = gg.tensor(np.asarray(ids), device=device)
    np.testing.assert_array_equal(arr(gg.embedding(ids_tensor, gg.tensor(w, device=device))), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_gradient_adds_repeated_ids(device):
    w = gg.Variable(np.zeros((4, 2)), device=device)
    ids = [[0, 2, 0], [0, 3, 2]]
    dy = np.arange(12.0).reshape(2, 3, 2)
    with gg.GradientTape() as tape:
        y = gg.embedding(ids, w)
    g = arr(tape.gradient(y, w, output_gradients=gg.tensor(dy, device=device)))
    expected = np.zeros((4, 2))
    for (i, j), row in np.ndenumerate(np.asarray(ids)):
        expected[row] += dy[i, j]
    np.testing.assert_array_equal(g, expected)
    assert g[1].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("ids, error, words", [
    ([0, 5], IndexOutOfRangeError, ["id 5", "[0, 5)"]),
    ([-1, 0], IndexOutOfRangeError, ["id -1"]),
    ([True, False], DTypeError, ["integer"]),
    ([0.5, 1.0], DTypeError, ["integer"]),
])
def test_embedding_errors(ids, error, words):
    with pytest.raises(error) as info:
        gg.embedding(ids, gg.ones((5, 2)))
    for word in words:
        assert word.lower() in str(info.value).lower()


def test_embedding_weight_must_be_a_matrix():
    with pytest.raises(ShapeError, match="num_embeddings"):
        gg.embedding([0], gg.ones((5,)))


# ---------------------------------------------------------------- layer_norm, batch_norm


@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_matches_formula(device):
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    expected = (x - mu) / np.sqrt(var + 1e-5) * w + b
    y = gg.layer_norm(gg.tensor(x, device=device), (4, 5), gg.tensor(w, device=device), gg.tensor(b, device=device))
    np.testing.assert_allclose(arr(y), expected, rtol=1e-10, atol=1e-10)
    plain = gg.layer_norm(gg.tensor(x, dtype="float32", device=device), 5, eps=0.1)
    mu5, var5 = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    assert plain.dtype == np.float32
    np.testing.assert_allclose(arr(plain), (x - mu5) / np.sqrt(var5 + 0.1), rtol=1e-5, atol=1e-5)


def test_layer_norm_errors():
    with pytest.raises(ShapeError, match="trailing shape"):
        gg.layer_norm(gg.ones((2, 3)), (2,))
    with pytest.raises(ShapeError, match="trailing shape"):
        gg.layer_norm(gg.ones((3,)), (1, 3))
    with pytest.raises(ShapeError, match="weight"):
        gg.layer_norm(gg.ones((2, 3)), 3, weight=gg.ones((2,)))
    with pytest.raises(DTypeError):
        gg.layer_norm(gg.tensor([[1, 2]]), 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 5)])
def test_batch_norm_training_and_running_statistics(shape, device):
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal(shape) * 3.0 + 1.0, rng.standard_normal(3), rng.standard_normal(3)
    axes = (0,) + tuple(range(2, len(shape)))
    bshape = (1, 3) + (1,) * (len(shape) - 2)
    rm = gg.Variable(np.full(3, 0.5), trainable=False, device=device)
    rv = gg.Variable(np.full(3, 2.0), trainable=False, device=device)
    y = gg.batch_norm(gg.tensor(x, device=device), rm, rv, gg.tensor(w, device=device), gg.tensor(b, device=device),
                      momentum=0.2)
    mu, var = x.mean(axis=axes), x.var(axis=axes)
    expected = (x - mu.reshape(bshape)) / np.sqrt(var.reshape(bshape) + 1e-5) * w.reshape(bshape) + b.reshape(bshape)
    np.testing.assert_allclose(arr(y), expected, rtol=1e-10, atol=1e-10)
    n = x.size // 3
    np.testing.assert_allclose(arr(rm), 0.8 * 0.5 + 0.2 * mu, rtol=1e-12)
    np.testing.assert_allclose(arr(rv), 0.8 * 2.0 + 0.2 * var * n / (n - 1), rtol=1e-12)
    # evaluation normalises with the running statistics and leaves them alone
    before_mean, before_var = arr(rm).copy(), arr(rv).copy()
    z = gg.batch_norm(gg.tensor(x, device=device), rm, rv, gg.tensor(w, device=device), gg.tensor(b, device=device),
                      training=False)
    expected_eval = ((x - before_mean.reshape(bshape)) / np.sqrt(before_var.reshape(bshape) + 1e-5)
                     * w.reshape(bshape) + b.reshape(bshape))
    np.testing.assert_allclose(arr(z), expected_eval, rtol=1e-10, atol=1e-10)
    assert (arr(rm) == before_mean).all() and (arr(rv) == before_var).all()


def test_batch_norm_updates_numpy_arrays_in_place():
    rm, rv = np.zeros(2, np.float32), np.ones(2, np.float32)
    x = gg.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    y = gg.batch_norm(x, rm, rv, momentum=0.5)
    np.testing.assert_allclose(rm, [1.0, 1.5])
    np.testing.assert_allclose(rv, [0.5 + 0.5 * 4.0, 0.5 + 0.5 * 4.0])
    np.testing.assert_allclose(arr(y)[:, 0], np.array([-2.0, 0.0, 2.0]) / np.sqrt(8 / 3 + 1e-5), rtol=1e-5)


def test_batch_norm_gradients_leave_running_statistics_out():
    rm, rv = gg.Variable(np.zeros(2), trainable=False), gg.Variable(np.ones(2), trainable=False)
    w = gg.Variable(np.ones(2))
    x = gg.tensor(np.random.default_rng(5).standard_normal((4, 2)))
    with gg.GradientTape() as tape:
        loss = gg.sum(gg.square(gg.batch_norm(x, rm, rv, w)))
    assert [v is w for v in tape.watched_variables()] == [True]
    np.testing.assert_allclose(arr(tape.gradient(loss, w)), [8.0, 8.0], rtol=1e-4)  # sum of y_hat^2 * 2 / w


def test_batch_norm_errors():
    rm, rv = gg.Variable(np.zeros(3)), gg.Variable(np.ones(3))
    with pytest.raises(TypeError, match="immutable"):
        gg.batch_norm(gg.ones((2, 3)), gg.zeros((3,)), rv)
    with pytest.raises(ShapeError, match=r"running_var of shape \(3,\)"):
        gg.batch_norm(gg.ones((2, 3)), rm, np.ones(4))
    with pytest.raises(ShapeError, match="more than one value"):
        gg.batch_norm(gg.ones((1, 3)), rm, rv)
    with pytest.raises(ShapeError, match=r"\(N, C, \.\.\.\)"):
        gg.batch_norm(gg.ones((3,)), rm, rv)
    with pytest.raises(ShapeError, match="bias"):
        gg.batch_norm(gg.ones((2, 3)), rm, rv, bias=gg.ones((2,)))


# ---------------------------------------------------------------- gg.random


@pytest.mark.parametrize("device", DEVICES)
def test_random_generators_repeat_with_a_seed(device):
    for draw in (lambda g: g.uniform((3, 4), -1.0, 1.0, device=device),
                 lambda g: g.normal((5,), 2.0, 0.1, dtype="float64", device=device),
                 lambda g: g.integers(0, 100, (6,), device=device)):
        a, b = draw(gg.random.Generator(9)), draw(gg.random.Generator(9))
        assert a.device == gg.tensor(0.0, device=device).device
        assert (arr(a) == arr(b)).all()
        assert not (arr(a) == arr(draw(gg.random.Generator(10)))).all()
    gg.random.seed(5)
    first = arr(gg.random.uniform((10,), device=device))
    gg.random.seed(5)
    assert (arr(gg.random.uniform((10,), device=device)) == first).all()


def test_random_values_and_errors():
    g = gg.random.Generator(0)
    u = arr(g.uniform((20000,), -2.0, 3.0))
    assert u.dtype == np.float32 and u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    z = arr(g.normal((20000,), 1.0, 2.0, dtype="float64"))
    assert z.dtype == np.float64 and abs(z.mean() - 1.0) < 0.05 and abs(z.std() - 2.0) < 0.05
    assert sorted(g.permutation(6).tolist()) == list(range(6))
    with pytest.raises(TypeError, match="seed"):
        gg.random.Generator(1.5)
    with pytest.raises(TypeError, match="float dtype"):
        g.uniform((2,), dtype="int32")
