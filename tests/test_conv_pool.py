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
