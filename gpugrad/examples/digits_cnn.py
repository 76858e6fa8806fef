"""Train a small convolutional network on the embedded 8x8 digits and print its test accuracy.

Run it with ``python -m gpugrad.examples.digits_cnn --epochs 12``. Images come
as (N, 1, 8, 8) (NCHW); two 3x3 convolutions keep the 8x8 size, a 2x2 max pool
halves it, two dense layers give 10 logits. Each step is one
``optimizer.minimize(loss_fn)``: it runs ``loss_fn`` under a GradientTape and
applies the gradients of the variables the loss read; the step is a ``gg.function``,
traced on its first call and replayed after.

Example:
    >>> accuracy = main(["--epochs", "1", "--device", "cpu", "--quiet"])  # doctest: +ELLIPSIS
    test accuracy ...
    >>> accuracy > 0.8
    True
"""
import argparse
import time

import numpy as np

import gpugrad as gg
from gpugrad.training import standardized_digits


def build_model(seed=0, device=None):
    """conv 3x3 (16) - conv 3x3 (32) - max pool 2x2 - dense 64 - dense 10, ReLU between.

    Example:
        >>> build_model(device="cpu")(gg.ones((5, 1, 8, 8), device="cpu")).shape
        (5, 10)
    """
    rng = np.random.default_rng(seed)
    return gg.nn.Sequential(
        gg.nn.Conv2D(1, 16, 3, padding=1, activation="relu", seed=rng, device=device),   # (N, 16, 8, 8)
        gg.nn.Conv2D(16, 32, 3, padding=1, activation="relu", seed=rng, device=device),  # (N, 32, 8, 8)
        gg.nn.MaxPool2D(2),                                                               # (N, 32, 4, 4)
        gg.nn.Flatten(),                                                                  # (N, 512)
        gg.nn.Dense(32 * 4 * 4, 64, activation="relu", seed=rng, device=device),
        gg.nn.Dense(64, 10, seed=rng, device=device),
    )


def evaluate(model, images, labels):
    """The fraction of ``images`` whose largest logit is at the right label (in eval mode).

    Example:
        >>> x, y, x_test, y_test = standardized_digits(False, "cpu")
        >>> 0.0 <= evaluate(build_model(device="cpu"), x_test, y_test) <= 1.0
        True
    """
    model.eval()
    predicted = gg.argmax(model(images), axis=-1)
    model.train()
    return float((predicted.numpy() == labels.numpy()).mean())


def main(argv=None):
    """Train, printing the mean loss of each epoch, then the test accuracy; return the test accuracy."""
    parser = argparse.ArgumentParser(prog="python -m gpugrad.examples.digits_cnn",
                                     description="Train a small CNN on the embedded 8x8 digits.")
    parser.add_argument("--epochs", type=int, default=12, help="passes over the training split (default 12)")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step (default 64)")
    parser.add_argument("--lr", type=float, default=2e-3, help="Adam's learning rate (default 0.002)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: gpugrad's default device)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the batch order")
    parser.add_argument("--quiet", action="store_true", help="print only the test accuracy")
    args = parser.parse_args(argv)

    device = gg.get_device(args.device).name
    x_train, y_train, x_test, y_test = standardized_digits(flatten=False, device=device)
    model = build_model(args.seed, device)
    optimizer = gg.optimizers.Adam(args.lr)
    params = model.trainable_variables
    shuffle = np.random.default_rng(args.seed)

    @gg.function  # traced once per batch shape, then replayed: the same bits as the eager step
    def train_step(images, labels):
        return optimizer.minimize(lambda: gg.softmax_cross_entropy(model(images), labels), params)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        total, seen = 0.0, 0
        for images, labels in gg.data.batches(x_train, y_train, args.batch_size, seed=shuffle.integers(2**31)):
            loss = train_step(images, labels)
            total += loss.item() * images.shape[0]
            seen += images.shape[0]
        if not args.quiet:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {total / seen:.4f}")
    seconds = time.perf_counter() - start

    accuracy = evaluate(model, x_test, y_test)
    print(f"test accuracy {accuracy:.2%} after {args.epochs} epochs ({seconds:.1f} s on {device})")
    return accuracy


if __name__ == "__main__":
    main()
