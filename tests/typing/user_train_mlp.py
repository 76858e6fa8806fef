"""A user's script: the README's quick start MLP, trained on the embedded digits, written as a typed program.

tests/test_typing.py runs mypy on it (no error, and the revealed types below are Tensor) and then runs it
for real, so the script cannot drift from the API it type-checks. Not collected by pytest
(tests/conftest.py's collect_ignore).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import gpugrad as gg


def train(epochs: int = 2, batch_size: int = 64, seed: int = 0) -> float:
    """Train a 64-64-10 perceptron for ``epochs`` passes; return the test accuracy."""
    images, labels = gg.data.load_digits("train", device="cpu")
    test_images, test_labels = gg.data.load_digits("test", device="cpu")
    model = gg.nn.Sequential(gg.nn.Dense(64, 64, activation="relu", seed=seed, device="cpu"),
                             gg.nn.Dense(64, 10, seed=seed + 1, device="cpu"))
    optimizer = gg.optimizers.Adam(0.01)
    params = model.trainable_variables
    for epoch in range(epochs):
        for x, y in gg.data.batches(images, labels, batch_size, seed=seed + epoch):
            with gg.GradientTape() as tape:
                loss = gg.softmax_cross_entropy(model(x), y)
            grads = tape.gradient(loss, params)
            optimizer.apply_gradients(zip(grads, params))
    predicted = gg.argmax(model(test_images), axis=-1)
    return float((predicted.numpy() == test_labels.numpy()).mean())


def typed_values() -> None:
    """The values whose inferred types tests/test_typing.py asserts (mypy's reveal_type notes)."""
    doubled = gg.tensor([1.0, 2.0]) * 2
    total = gg.sum(gg.square(doubled))
    w = gg.Variable([0.5, -1.0])
    with gg.GradientTape(persistent=True) as tape:
        y = gg.sum(w * doubled)
    dw = tape.gradient(y, w)
    dws = tape.gradient(y, [w])
    layer = gg.nn.Dense(2, 3, activation="relu", seed=0)
    model = gg.nn.Sequential(layer, gg.nn.Dense(3, 1, seed=1))
    optimizer = gg.optimizers.Adam(0.01)
    out = model(doubled[None])
    loss = optimizer.minimize(lambda: gg.sum(model(doubled[None])))
    if TYPE_CHECKING:
        reveal_type(doubled)  # noqa: F821 - mypy's builtin
        reveal_type(total)  # noqa: F821
        reveal_type(dw)  # noqa: F821
        reveal_type(dws)  # noqa: F821
        reveal_type(doubled.sum(axis=0).mean())  # noqa: F821
        reveal_type(2.0 - doubled[0])  # noqa: F821
        reveal_type(layer)  # noqa: F821
        reveal_type(model)  # noqa: F821
        reveal_type(optimizer)  # noqa: F821
        reveal_type(out)  # noqa: F821
        reveal_type(loss)  # noqa: F821
    assert np.allclose(dw.numpy(), [2.0, 4.0])
    assert len(dws) == 1 and np.allclose(dws[0].numpy(), [2.0, 4.0]) and total.item() == 20.0
    assert out.shape == (1, 1) and loss.shape == () and optimizer.iterations == 1


if __name__ == "__main__":
    typed_values()
    accuracy = train()
    print(f"test accuracy {accuracy:.3f}")
    assert accuracy > 0.8, accuracy
