"""Convolution, pooling, padding and resizing against PyTorch's values and gradients.

PyTorch is a test-only oracle (torch.nn.functional), absent from the project's environment:
each test skips with that reason where it is not installed. Every case compares the forward
value and the gradients of ``sum(out * g)`` (a random ``g``) with respect to every float input.
"""
import numpy as np
import pytest

import gpugrad as gg

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these tests (a test-only dependency)")
F = torch.nn.functional


def _compare(gg_fn, torch_fn, arrays, rtol=1e-9, atol=1e-9, seed=0):
    """``gg_fn`` and ``torch_fn`` on the same float64 ``arrays``: equal values and input gradients."""
    xs = [gg.tensor(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    with gg.GradientTape() as tape:
        tape.watch(xs)
        y = gg_fn(*xs)
    expected = torch_fn(*ts)
    assert y.shape == tuple(expected.shape)
    np.testing.assert_allclose(y.numpy(), expected.detach().numpy(), rtol=rtol, atol=atol)
    g = np.random.default_rng(seed).standard_normal(y.shape)
    grads = tape.gradient(y, xs, output_gradients=gg.tensor(g))
    torch_grads = torch.autograd.grad(expected, ts, torch.tensor(g), allow_unused=True)
    for ours, theirs in zip(grads, torch_grads):
        theirs = np.zeros_like(ours.numpy()) if theirs is None else theirs.numpy()
        np.testing.assert_allclose(ours.numpy(), theirs, rtol=rtol, atol=atol)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed + len(shape) + sum(shape)).standard_normal(shape)


# ---------------------------------------------------------------- convolutions

CONV1D_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(padding="same", dilation=2),
    dict(padding="same"),  # even kernel below: the odd pixel pads after
    dict(padding="valid", groups=2),
    dict(stride=3, padding=2, dilation=2, groups=2),
]


@pytest.mark.parametrize("kwargs", CONV1D_CASES, ids=str)
def test_conv1d(kwargs):
    k = 4 if kwargs == dict(padding="same") else 3
    arrays = [_rand(2, 4, 11), _rand(6, 4 // kwargs.get("groups", 1), k), _rand(6)]
    _compare(lambda x, w, b: gg.conv1d(x, w, b, **kwargs), lambda x, w, b: F.conv1d(x, w, b, **kwargs), arrays)


@pytest.mark.parametrize("kwargs", [dict(padding="same", dilation=(2, 1)), dict(padding="valid", groups=3),
                                    dict(padding="same", groups=3, dilation=2)], ids=str)
def test_conv2d_padding_strings_dilation_groups(kwargs):
    arrays = [_rand(2, 6, 7, 8), _rand(3, 6 // kwargs.get("groups", 1), 3, 2), _rand(3)]
    _compare(lambda x, w, b: gg.conv2d(x, w, b, **kwargs), lambda x, w, b: F.conv2d(x, w, b, **kwargs), arrays)


CONV_T2D_CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2)),
    dict(stride=2, padding=0, output_padding=1),  # output padding past the padding: zero rows appended
    dict(stride=1, padding=1, output_padding=1, dilation=2),  # output padding below the dilation
    dict(stride=2, padding=2, groups=2, dilation=(1, 2)),
]


@pytest.mark.parametrize("kwargs", CONV_T2D_CASES, ids=str)
def test_conv_transpose2d(kwargs):
    g = kwargs.get("groups", 1)
    arrays = [_rand(2, 4, 4, 5), _rand(4, 6 // g, 3, 3), _rand(6)]
    _compare(lambda x, w, b: gg.conv_transpose2d(x, w, b, **kwargs),
             lambda x, w, b: F.conv_transpose2d(x, w, b, **kwargs), arrays)


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=3, padding=1, output_padding=2),
                                    dict(stride=2, groups=2, dilation=3, output_padding=2)], ids=str)
def test_conv_transpose1d(kwargs):
    g = kwargs.get("groups", 1)
    arrays = [_rand(3, 4, 6), _rand(4, 2 // g, 3), _rand(2)]
    _compare(lambda x, w, b: gg.conv_transpose1d(x, w, b, **kwargs),
             lambda x, w, b: F.conv_transpose1d(x, w, b, **kwargs), arrays)


def test_conv_transpose2d_second_order():
    """The gradient of a gradient (d/dw of the input gradient's norm) matches PyTorch's double backward."""
    x, w = _rand(1, 2, 3, 3), _rand(2, 3, 2, 2)
    kwargs = dict(stride=2, padding=1, output_padding=1)
    xs = [gg.tensor(x), gg.tensor(w)]
    with gg.GradientTape() as outer:
        outer.watch(xs)
        with gg.GradientTape() as inner:
            inner.watch(xs)
            y = gg.sum(gg.square(gg.conv_transpose2d(*xs, **kwargs)))
        dx = inner.gradient(y, xs[0])
        z = gg.sum(dx * dx)
    ours = outer.gradient(z, xs)
    ts = [torch.tensor(a, requires_grad=True) for a in (x, w)]
    ty = (F.conv_transpose2d(*ts, **kwargs) ** 2).sum()
    (tdx,) = torch.autograd.grad(ty, ts[0], create_graph=True)
    theirs = torch.autograd.grad((tdx * tdx).sum(), ts)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- padding

PAD_CASES = [((1, 2), "constant", 0.0), ((2, 0, 1, 3), "constant", -1.5), ((1, -2, -1, 2), "constant", 2.0),
             ((2, 1), "reflect", None), ((1, 2, 2, 1), "reflect", None), ((3, 0, 0, 2), "replicate", None),
             ((1, 1, 2, 2), "circular", None), ((4, 3, 1, 0), "circular", None)]


@pytest.mark.parametrize("widths, mode, value", PAD_CASES, ids=str)
def test_functional_pad(widths, mode, value):
    F_gg = gg.nn.functional
    kwargs = {} if value is None else dict(value=value)
    shape = (2, 3, 4, 5) if mode == "constant" else (2, 3, 4, 5)[:2 + len(widths) // 2]  # PyTorch's (N, C, ...)
    _compare(lambda x: F_gg.pad(x, widths, mode=mode, **kwargs), lambda x: F.pad(x, widths, mode=mode, **kwargs),
             [_rand(*shape)])


# ---------------------------------------------------------------- pooling

def _distinct(*shape, seed=0):
    """Values far apart (no ties, so max pooling is differentiable and its indices are unique)."""
    values = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape) * 0.1
    return values - values.mean()


MAX_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(3, 2), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=2, stride=1, dilation=2),
    dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(1, 3), padding=1, dilation=(3, 2), ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX_POOL_CASES, ids=str)
def test_max_pool2d(kwargs):
    _compare(lambda x: gg.max_pool2d(x, **kwargs), lambda x: F.max_pool2d(x, **kwargs), [_distinct(2, 3, 7, 8)])
    ours = gg.max_pool2d(gg.tensor(_distinct(2, 3, 7, 8)), return_indices=True, **kwargs)[1]
    theirs = F.max_pool2d(torch.tensor(_distinct(2, 3, 7, 8)), return_indices=True, **kwargs)[1]
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


AVG_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=1, padding=1, divisor_override=3),
]


@pytest.mark.parametrize("kwargs", AVG_POOL_CASES, ids=str)
def test_avg_pool2d(kwargs):
    _compare(lambda x: gg.avg_pool2d(x, **kwargs), lambda x: F.avg_pool2d(x, **kwargs), [_rand(2, 3, 7, 8)])


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2),
                                    dict(kernel_size=3, stride=2, padding=1, output_size=(8, 6)),
                                    dict(kernel_size=(3, 2), stride=(2, 1), padding=1, output_size=(8, 6))],
                         ids=str)
def test_max_unpool2d(kwargs):
    kwargs = dict(kwargs)
    size = kwargs.pop("output_size", None)
    x = torch.tensor(_distinct(2, 3, 8, 6))
    pooled, idx = F.max_pool2d(x, return_indices=True, **kwargs)
    _compare(lambda p: gg.max_unpool2d(p, gg.tensor(idx.numpy()), output_size=size, **kwargs),
             lambda p: F.max_unpool2d(p, idx, output_size=size, **kwargs), [pooled.detach().numpy()])


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=2, stride=1, dilation=3)], ids=str)
def test_max_pool1d(kwargs):
    _compare(lambda x: gg.max_pool1d(x, **kwargs), lambda x: F.max_pool1d(x, **kwargs), [_distinct(2, 3, 11)])
    ours = gg.max_pool1d(gg.tensor(_distinct(2, 3, 11)), return_indices=True, **kwargs)[1]
    theirs = F.max_pool1d(torch.tensor(_distinct(2, 3, 11)), return_indices=True, **kwargs)[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=4, stride=3, padding=2, ceil_mode=True,
                                         count_include_pad=False)], ids=str)
def test_avg_pool1d(kwargs):
    _compare(lambda x: gg.avg_pool1d(x, **kwargs), lambda x: F.avg_pool1d(x, **kwargs), [_rand(2, 3, 11)])


# ---------------------------------------------------------------- resizing

@pytest.mark.parametrize("size", [1, (2, 3), (3, 5), (7, 8), (None, 4)], ids=str)
def test_adaptive_avg_pool2d(size):
    _compare(lambda x: gg.adaptive_avg_pool2d(x, size), lambda x: F.adaptive_avg_pool2d(x, size),
             [_rand(2, 3, 7, 8)])


def test_adaptive_avg_pool1d():
    _compare(lambda x: gg.adaptive_avg_pool1d(x, 4), lambda x: F.adaptive_avg_pool1d(x, 4), [_rand(2, 3, 7)])


INTERPOLATE_CASES = [
    dict(size=(9, 5)), dict(scale_factor=2), dict(scale_factor=(1.7, 0.6)), dict(size=(3, 11), mode="nearest-exact"),
    dict(size=(9, 5), mode="bilinear"), dict(size=(9, 5), mode="bilinear", align_corners=True),
    dict(scale_factor=(2.5, 0.5), mode="bilinear"), dict(scale_factor=(1.5, 3), mode="bilinear", align_corners=True),
    dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True), dict(size=(2, 1), mode="bilinear"),
    dict(size=(1, 1), mode="bilinear", align_corners=True),
]


@pytest.mark.parametrize("kwargs", INTERPOLATE_CASES, ids=str)
def test_interpolate_2d(kwargs):
    _compare(lambda x: gg.interpolate(x, **kwargs), lambda x: F.interpolate(x, **kwargs), [_rand(2, 3, 4, 6)])


@pytest.mark.parametrize("kwargs", [dict(size=9, mode="linear"), dict(scale_factor=0.7, mode="linear"),
                                    dict(size=9, mode="linear", align_corners=True), dict(scale_factor=3)], ids=str)
def test_interpolate_1d(kwargs):
    _compare(lambda x: gg.interpolate(x, **kwargs), lambda x: F.interpolate(x, **kwargs), [_rand(2, 3, 6)])


@pytest.mark.parametrize("kwargs", [dict(size=(7, 3)), dict(size=(7, 3), align_corners=True),
                                    dict(scale_factor=2.5), dict(scale_factor=(0.5, 1.5), align_corners=True),
                                    dict(size=(1, 9)), dict(size=(2, 2), align_corners=True)], ids=str)
def test_interpolate_bicubic(kwargs):
    # A = -0.75, the source not clamped at 0, the four samples clamped at the border
    _compare(lambda x: gg.interpolate(x, mode="bicubic", **kwargs), lambda x: F.interpolate(x, mode="bicubic",
                                                                                            **kwargs),
             [_rand(2, 3, 4, 6)], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [1, (2, 3), (3, 5), (7, 8), (None, 4), (5, 11)], ids=str)
def test_adaptive_max_pool2d_values_indices_and_gradients(size):
    x = _distinct(2, 3, 7, 8)
    _compare(lambda t: gg.adaptive_max_pool2d(t, size), lambda t: F.adaptive_max_pool2d(t, size), [x])
    ours = gg.adaptive_max_pool2d(gg.tensor(x), size, return_indices=True)[1]
    theirs = F.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)[1]
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_adaptive_max_pool_ties_pick_pytorchs_first_and_overlaps_add():
    x = np.zeros((1, 1, 3, 5))
    x[0, 0, 1, 1] = x[0, 0, 1, 3] = 2.0  # ties within windows; windows of 5 -> 4 overlap by one column
    _compare(lambda t: gg.adaptive_max_pool2d(t, (2, 4)), lambda t: F.adaptive_max_pool2d(t, (2, 4)), [x])
    np.testing.assert_array_equal(gg.adaptive_max_pool2d(gg.tensor(x), (2, 4), return_indices=True)[1].numpy(),
                                  F.adaptive_max_pool2d(torch.tensor(x), (2, 4), return_indices=True)[1].numpy())


@pytest.mark.parametrize("size", [1, 4, 7, 10])
def test_adaptive_max_pool1d_and_adaptive_avg_pool1d(size):
    x = _distinct(2, 3, 7)
    _compare(lambda t: gg.adaptive_max_pool1d(t, size), lambda t: F.adaptive_max_pool1d(t, size), [x])
    np.testing.assert_array_equal(gg.adaptive_max_pool1d(gg.tensor(x), size, return_indices=True)[1].numpy(),
                                  F.adaptive_max_pool1d(torch.tensor(x), size, return_indices=True)[1].numpy())
    _compare(lambda t: gg.adaptive_avg_pool1d(t, size), lambda t: F.adaptive_avg_pool1d(t, size), [x])


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, output_size=(12,)),
                                    dict(kernel_size=3, stride=2, padding=1, output_size=(2, 3, 11))], ids=str)
def test_max_unpool1d(kwargs):
    kwargs = dict(kwargs)
    size = kwargs.pop("output_size", None)
    pooled, idx = F.max_pool1d(torch.tensor(_distinct(2, 3, 11)), return_indices=True, **kwargs)
    _compare(lambda p: gg.max_unpool1d(p, gg.tensor(idx.numpy()), output_size=size, **kwargs),
             lambda p: F.max_unpool1d(p, idx, output_size=size, **kwargs), [pooled.detach().numpy()])


# ---------------------------------------------------------------- normalization and layers

@pytest.mark.parametrize("groups, shape", [(2, (2, 4, 5)), (1, (3, 6, 2, 3)), (6, (2, 6, 4, 1))], ids=str)
def test_group_norm(groups, shape):
    c = shape[1]
    _compare(lambda x, w, b: gg.group_norm(x, groups, w, b, eps=1e-3),
             lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-3), [_rand(*shape), _rand(c), _rand(c, seed=1)],
             rtol=1e-7)


def _same_weights(ours, theirs):
    """Copy our layer's kernel and bias into PyTorch's layer of the same layout."""
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.kernel.numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.numpy()))


@pytest.mark.parametrize("make, make_torch, shape", [
    (lambda: gg.nn.Conv1D(4, 6, 3, stride=2, padding=1, groups=2, dtype="float64", seed=0),
     lambda: torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2, dtype=torch.float64), (2, 4, 9)),
    (lambda: gg.nn.ConvTranspose2D(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dtype="float64",
                                   seed=0),
     lambda: torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2,
                                      dtype=torch.float64), (2, 4, 5, 3)),
    (lambda: gg.nn.ConvTranspose1D(3, 2, 4, stride=2, padding=1, dtype="float64", seed=0),
     lambda: torch.nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1, dtype=torch.float64), (2, 3, 7)),
], ids=["Conv1D", "ConvTranspose2D", "ConvTranspose1D"])
def test_conv_layers_match_pytorch_layers(make, make_torch, shape):
    ours, theirs = make(), make_torch()
    _same_weights(ours, theirs)
    x = _rand(*shape)
    np.testing.assert_allclose(ours(gg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-12)


def test_upsample_and_adaptive_pool_layers():
    x = _rand(2, 3, 5, 4)
    up = gg.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)(gg.tensor(x))
    expected = torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)(torch.tensor(x))
    np.testing.assert_allclose(up.numpy(), expected.numpy(), atol=1e-12)
    pooled = gg.nn.AdaptiveAvgPool2D((2, 3))(gg.tensor(x))
    np.testing.assert_allclose(pooled.numpy(), F.adaptive_avg_pool2d(torch.tensor(x), (2, 3)).numpy(), atol=1e-12)
