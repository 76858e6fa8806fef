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
