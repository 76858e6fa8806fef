"""Train a 64-256-256-10 perceptron on the embedded 8x8 digits and print its test accuracy.

Run it with ``python -m gpugrad.examples.digits_mlp --epochs 15 --device cpu``.
The loop is written out: a GradientTape records the forward pass, the tape
gives the gradients of the loss, the optimizer applies them. (``gpugrad
train`` runs the same model through :mod:`gpugrad.training`.)

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
    """The network: two ReLU layers of 256 units, then 10 logits (one per digit).

    Example:
        >>> build_model(device="cpu")(gg.ones((5, 64), device="cpu")).shape
        (5, 10)
    """
    rng = np.random.default_rng(seed)  # one generator: each layer draws its own initial weights from it
    return gg.nn.Sequential(
        gg.nn.Dense(64, 256, activation="relu", seed=rng, device=device),
        gg.nn.Dense(256, 256, activation="relu", seed=rng, device=device),
        gg.nn.Dense(256, 10, seed=rng, device=device),
    )


def evaluate(model, images, labels):
    """The fraction of ``images`` whose largest logit is at the right label (in eval mode).

    Example:
        >>> x, y, x_test, y_test = standardized_digits(True, "cpu")
        >>> 0.0 <= evaluate(build_model(device="cpu"), x_test, y_test) <= 1.0
        True
    """
    model.eval()
    predicted = gg.argmax(model(images), axis=-1)
    model.train()
    return float((predicted.numpy() == labels.numpy()).mean())


def main(argv=None):
    """Train, printing the mean loss of each epoch, then the test accuracy; return the test accuracy."""
    parser = argparse.ArgumentParser(prog="python -m gpugrad.examples.digits_mlp",
                                     description="Train a perceptron on the embedded 8x8 digits.")
    parser.add_argument("--epochs", type=int, default=15, help="passes over the training split (default 15)")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step (default 64)")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam's learning rate (default 0.001)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: gpugrad's default device)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the batch order")
    parser.add_argument("--quiet", action="store_true", help="print only the test accuracy")
    args = parser.parse_args(argv)

    device = gg.get_device(args.device).name
    # pixels scaled by the training split's mean and spread; labels are int64 tensors
    x_train, y_train, x_test, y_test = standardized_digits(flatten=True, device=device)
    model = build_model(args.seed, device)
    optimizer = gg.optimizers.Adam(args.lr)
    params = model.trainable_variables  # the same Variables every step: find them once
    shuffle = np.random.default_rng(args.seed)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        total, seen = 0.0, 0
        for images, labels in gg.data.batches(x_train, y_train, args.batch_size, seed=shuffle.integers(2**31)):
            with gg.GradientTape() as tape:
                logits = model(images)
                loss = gg.softmax_cross_entropy(logits, labels)  # mean over the batch
            grads = tape.gradient(loss, params)
            optimizer.apply_gradients(zip(grads, params))
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
