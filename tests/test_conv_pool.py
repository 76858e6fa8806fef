"""Convolution, pooling, padding and resizing against NumPy and reference formulas (no PyTorch needed;
tests/test_conv_pool_torch.py compares with PyTorch where it is installed)."""
import numpy as np
import pytest

import gpugrad as gg


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
def test_numpy_pad_modes_match_numpy_and_send_each_copy_back(mode):
    """gg.pad's NumPy modes equal np.pad's values, widths wider than the axis included; the gradient of a
    sum is how many copies of each element the padding made (np.pad of ones-indexed positions counts them)."""
    x = np.arange(12.0).reshape(3, 4)
    widths = ((4, 2), (5, 9))
    t = gg.tensor(x)
    with gg.GradientTape() as tape:
        tape.watch(t)
        y = gg.pad(t, widths, mode=mode)
        total = gg.sum(y)
    np.testing.assert_array_equal(y.numpy(), np.pad(x, widths, mode=mode))
    copies = np.bincount(np.pad(np.arange(12).reshape(3, 4), widths, mode=mode).ravel(), minlength=12)
    np.testing.assert_array_equal(tape.gradient(total, t).numpy().ravel(), copies)


def _step_results(traced):
    """Loss and weights after three Adam steps of a conv / transposed-conv / pooling / resizing model, eager
    or through gg.function."""
    rng = np.random.default_rng(0)
    model = gg.nn.Sequential(
        gg.nn.Conv1D(2, 4, 3, padding="same", seed=rng, dtype="float64"),
        gg.nn.Upsample(scale_factor=2, mode="linear"),
        gg.nn.AvgPool1D(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        gg.nn.ConvTranspose1D(4, 3, 4, stride=2, padding=1, seed=rng, dtype="float64"),
        gg.nn.GroupNorm(3, 3, dtype="float64"),
        gg.nn.MaxPool1D(2, ceil_mode=True),
    )
    optimizer = gg.optimizers.Adam(0.01)
    x = gg.tensor(rng.standard_normal((2, 2, 7)))

    def step(x):
        def loss():
            y = model(x)
            unpooled = gg.max_unpool2d(gg.expand_dims(y, 2), gg.expand_dims(gg.max_pool1d(
                y, 1, return_indices=True)[1], 2), 1)
            return gg.mean(gg.square(unpooled)) + gg.mean(gg.nn.functional.pad(y, (2, 1), mode="reflect"))
        return optimizer.minimize(loss, model.trainable_variables)

    run = gg.function(step) if traced else step
    losses = [run(x).item() for _ in range(3)]
    return losses, [v.numpy() for v in model.trainable_variables]


def test_the_new_layers_replay_under_gg_function_to_the_same_bits():
    eager, traced = _step_results(False), _step_results(True)
    assert eager[0] == traced[0]
    for a, b in zip(eager[1], traced[1]):
        np.testing.assert_array_equal(a, b)


def test_np_pad_with_a_constant_value_and_modes_dispatches_to_gg_pad():
    x = np.arange(6.0).reshape(2, 3)
    t = gg.tensor(x)
    for kwargs in (dict(constant_values=2.5), dict(mode="reflect"), dict(mode="edge"), dict(mode="wrap")):
        out = np.pad(t, ((1, 2), (2, 1)), **kwargs)
        assert isinstance(out, gg.Tensor)
        np.testing.assert_array_equal(out.numpy(), np.pad(x, ((1, 2), (2, 1)), **kwargs))


@pytest.mark.parametrize("call, error, words", [
    (lambda: gg.conv_transpose2d(gg.ones((1, 2, 3, 3)), gg.ones((2, 1, 3, 3)), stride=2, output_padding=2),
     ValueError, "ConvTranspose2D.*output_padding"),
    (lambda: gg.conv_transpose2d(gg.ones((1, 2, 3, 3)), gg.ones((3, 1, 3, 3))), gg.ShapeError,
     "ConvTranspose2D.*channels"),
    (lambda: gg.conv_transpose2d(gg.ones((1, 2, 1, 1)), gg.ones((2, 1, 1, 1)), padding=1), gg.ShapeError,
     "ConvTranspose2D.*empty output"),
    (lambda: gg.conv1d(gg.ones((1, 2, 5)), gg.ones((2, 2, 3)), stride=2, padding="same"), ValueError,
     "Conv1D.*stride 1"),
    (lambda: gg.conv1d(gg.ones((1, 2, 5, 5)), gg.ones((2, 2, 3))), gg.ShapeError, "Conv1D.*(N, C, L)"),
    (lambda: gg.max_pool2d(gg.ones((1, 1, 4, 4)), 2, padding=2), ValueError, "MaxPool2D.*half"),
    (lambda: gg.avg_pool2d(gg.ones((1, 1, 4, 4)), 2, divisor_override=0), ValueError, "AvgPool2D.*divisor"),
    (lambda: gg.max_unpool2d(gg.ones((1, 1, 2, 2)), np.array([[[[0, 1], [2, 9]]]]), 2, output_size=(2, 4)).numpy(),
     gg.IndexOutOfRangeError, r"MaxUnpool2D.*9.*\[0, 8\)"),  # on a GPU at the next host read
    (lambda: gg.max_unpool2d(gg.ones((1, 1, 2, 2)), np.zeros((1, 1, 2, 2)), 2), gg.ShapeError,
     "MaxUnpool2D.*integer"),
    (lambda: gg.interpolate(gg.ones((1, 1, 4, 4)), size=2, align_corners=True), ValueError,
     "Interpolate.*align_corners"),
    (lambda: gg.interpolate(gg.ones((1, 1, 4)), size=2, mode="bilinear"), gg.ShapeError, "Interpolate.*bilinear"),
    (lambda: gg.interpolate(gg.ones((1, 1, 4)), size=2, scale_factor=2), ValueError, "Interpolate.*exactly one"),
    (lambda: gg.adaptive_avg_pool2d(gg.ones((1, 1, 4, 4)), (2, 0)), ValueError, "AdaptiveAvgPool2D"),
    (lambda: gg.adaptive_max_pool2d(gg.ones((1, 1, 4, 4)), (2, 0)), ValueError, "AdaptiveMaxPool2D"),
    (lambda: gg.adaptive_max_pool2d(gg.ones((1, 4, 4)), 2), gg.ShapeError, r"AdaptiveMaxPool2D.*\(N, C, H, W\)"),
    (lambda: gg.adaptive_max_pool2d(gg.ones((1, 1, 4, 4), dtype="int64"), 2), gg.DTypeError, "AdaptiveMaxPool2D"),
    (lambda: gg.adaptive_max_pool1d(gg.ones((1, 1, 4)), (2, 2)), ValueError, "AdaptiveMaxPool1D"),
    (lambda: gg.max_unpool1d(gg.ones((1, 1, 2)), np.array([[[0, 7]]]), 2).numpy(), gg.IndexOutOfRangeError,
     r"MaxUnpool2D.*7.*\[0, 4\)"),
    (lambda: gg.max_unpool1d(gg.ones((1, 2)), np.zeros((1, 2), int), 2), gg.ShapeError, r"MaxUnpool1D.*\(N, C, L\)"),
    (lambda: gg.interpolate(gg.ones((1, 1, 4)), size=2, mode="bicubic"), gg.ShapeError, "Interpolate.*bicubic"),
    (lambda: gg.group_norm(gg.ones((1, 6, 4)), 4), ValueError, "GroupNorm.*divid"),
    (lambda: gg.pad(gg.ones(3), 1, mode="mean"), ValueError, "Pad.*mode"),
    (lambda: gg.pad(gg.ones((0, 2)), 1, mode="wrap"), gg.ShapeError, "Pad.*empty axis"),
    (lambda: gg.nn.functional.pad(gg.ones((1, 1, 3)), (3, 0), mode="reflect"), ValueError, "pad.*reflect"),
    (lambda: gg.nn.functional.pad(gg.ones((1, 1, 3)), (4, 0), mode="circular"), ValueError, "pad.*circular"),
    (lambda: gg.nn.functional.pad(gg.ones((1, 3)), (1, 0, 0)), ValueError, "pad.*even"),
    (lambda: gg.nn.functional.pad(gg.ones((1, 3)), (-1, 0), mode="replicate"), ValueError, "pad.*negative"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_bad_arguments_raise_an_error_naming_the_op(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_transposed_convolution_runs_in_the_low_dtype_under_autocast():
    """As torch.autocast's conv_transpose2d: float32 inputs cast once, a float16 result, float32 gradients."""
    x, w = gg.ones((1, 2, 3, 3)), gg.Variable(np.full((2, 3, 2, 2), 0.5, dtype=np.float32))
    with gg.GradientTape() as tape:
        with gg.autocast("float16"):
            y = gg.conv_transpose2d(x, w, stride=2)
        loss = gg.sum(gg.cast(y, "float32"))
    assert y.dtype == np.float16 and tape.gradient(loss, w).dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), gg.conv_transpose2d(x, w, stride=2).numpy().astype(np.float16))


def _windows_loop(n_in, n_out):
    return [(i * n_in // n_out, -(-(i + 1) * n_in // n_out)) for i in range(n_out)]


@pytest.mark.parametrize("shape, size", [((2, 3, 7, 5), (3, 2)), ((1, 2, 4, 9), (4, 4)), ((1, 1, 3, 3), (5, 2))])
def test_adaptive_max_pool2d_matches_a_loop_over_pytorchs_windows(shape, size):
    x = np.random.default_rng(0).integers(0, 4, shape).astype(float)  # many ties: the first in row-major wins
    out, idx = gg.adaptive_max_pool2d(gg.tensor(x), size, return_indices=True)
    for i, (r0, r1) in enumerate(_windows_loop(shape[2], size[0])):
        for j, (c0, c1) in enumerate(_windows_loop(shape[3], size[1])):
            window = x[:, :, r0:r1, c0:c1].reshape(shape[:2] + (-1,))
            first = window.argmax(axis=-1)
            np.testing.assert_array_equal(out.numpy()[:, :, i, j], window.max(axis=-1))
            np.testing.assert_array_equal(idx.numpy()[:, :, i, j],
                                          (r0 + first // (c1 - c0)) * shape[3] + c0 + first % (c1 - c0))


def _keys_cubic(d, a=-0.75):
    d = abs(d)
    return ((a + 2) * d - (a + 3)) * d * d + 1 if d <= 1 else (a * d - 5 * a) * d * d + 8 * a * d - 4 * a if d < 2 else 0


@pytest.mark.parametrize("align_corners", [False, True])
def test_bicubic_matches_keys_cubic_convolution_with_border_clamping(align_corners):
    x = np.random.default_rng(1).standard_normal((1, 1, 4, 5))
    out_h, out_w = 7, 3
    got = gg.interpolate(gg.tensor(x), size=(out_h, out_w), mode="bicubic", align_corners=align_corners).numpy()

    def source(dst, n_in, n_out):
        if align_corners:
            return dst * (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return (dst + 0.5) * n_in / n_out - 0.5

    want = np.zeros((out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            sy, sx = source(i, 4, out_h), source(j, 5, out_w)
            by, bx = int(np.floor(sy)), int(np.floor(sx))
            for p in range(by - 1, by + 3):
                for q in range(bx - 1, bx + 3):
                    want[i, j] += (_keys_cubic(sy - p) * _keys_cubic(sx - q) *
                                   x[0, 0, min(max(p, 0), 3), min(max(q, 0), 4)])
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-12, atol=1e-13)


def test_max_unpool1d_inverts_max_pool1d_at_its_maxima():
    x = gg.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.5]]])
    y, idx = gg.max_pool1d(x, 2, return_indices=True)
    np.testing.assert_array_equal(gg.max_unpool1d(y, idx, 2).numpy(), [[[0.0, 3.0, 0.0, 5.0, 4.0, 0.0]]])
