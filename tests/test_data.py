"""The embedded digits: shapes, split, class balance, batches."""
import numpy as np
import pytest

import gpugrad as gg


def test_digits_split_sizes_and_classes():
    xtr, ytr = gg.data.load_digits("train", device="cpu")
    xte, yte = gg.data.load_digits("test", device="cpu")
    assert xtr.shape == (1438, 64) and xte.shape == (359, 64)
    assert xtr.dtype == np.float32 and ytr.dtype == np.int64
    assert 0.0 <= float(xtr.numpy().min()) and float(xtr.numpy().max()) == 1.0
    for labels, n in ((ytr.numpy(), 1438), (yte.numpy(), 359)):
        counts = np.bincount(labels, minlength=10)
        assert counts.sum() == n and counts.min() >= 0.09 * n  # every class present in both


def test_train_and_test_images_are_disjoint():
    xtr, _ = gg.data.load_digits("train", device="cpu")
    xte, _ = gg.data.load_digits("test", device="cpu")
    train_rows = {row.tobytes() for row in xtr.numpy()}
    overlap = sum(row.tobytes() in train_rows for row in xte.numpy())
    assert overlap <= 5  # a few digits are pixel-identical after 4x4 pooling, no more


def test_nchw_layout():
    x, _ = gg.data.load_digits("test", flatten=False, device="cpu")
    flat, _ = gg.data.load_digits("test", device="cpu")
    assert x.shape == (359, 1, 8, 8)
    np.testing.assert_array_equal(x.numpy().reshape(359, 64), flat.numpy())


def test_batches_cover_every_sample_once_and_are_seeded():
    x, y = gg.data.load_digits("test", device="cpu")
    first = [b[1].numpy() for b in gg.data.batches(x, y, 50, seed=3)]
    again = [b[1].numpy() for b in gg.data.batches(x, y, 50, seed=3)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert sorted(np.concatenate(first).tolist()) == sorted(y.numpy().tolist())
    assert [len(b) for b in first] == [50] * 7 + [9]
    assert sum(1 for _ in gg.data.batches(x, y, 50, drop_last=True)) == 7


def test_bad_arguments():
    with pytest.raises(ValueError, match="split"):
        gg.data.load_digits("validation")
    x, y = gg.data.load_digits("test", device="cpu")
    with pytest.raises(ValueError, match="batch_size"):
        next(gg.data.batches(x, y, 0))
