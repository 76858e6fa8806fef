"""Train a small convolutional autoencoder on the embedded 8x8 digits and print its reconstruction loss.

Run it with ``python -m gpugrad.examples.conv_autoencoder --epochs 10``. The
encoder's two stride-2 convolutions take a (1, 8, 8) image to a (16, 2, 2)
code (64 numbers for 64 pixels, but through ReLUs and a bottleneck of 4
positions); two stride-2 transposed convolutions (``gg.nn.ConvTranspose2D``,
PyTorch's layout and ``output_padding``) bring it back to (1, 8, 8). The loss
is the mean squared error against the (standardized) input; the step is a
``gg.function``. The last line compares the test loss with the loss of
predicting every image as the training split's mean image (0 after the
standardization, so about 1).

Example:
    >>> loss = main(["--epochs", "1", "--device", "cpu", "--quiet"])  # doctest: +ELLIPSIS
    test reconstruction loss ...
    >>> loss < 1.0
    True
"""
import argparse
import time

import numpy as np

import gpugrad as gg
from gpugrad.training import standardized_digits


def build_model(seed=0, device=None):
    """conv 3x3/2 (16) - conv 3x3/2 (16) - transposed conv 3x3/2 (16) - transposed conv 3x3/2 (1).

    Example:
        >>> build_model(device="cpu")(gg.ones((5, 1, 8, 8), device="cpu")).shape
        (5, 1, 8, 8)
    """
    rng = np.random.default_rng(seed)
    up = dict(kernel_size=3, stride=2, padding=1, output_padding=1, seed=rng, device=device)
    return gg.nn.Sequential(
        gg.nn.Conv2D(1, 16, 3, stride=2, padding=1, activation="relu", seed=rng, device=device),   # (N, 16, 4, 4)
        gg.nn.Conv2D(16, 16, 3, stride=2, padding=1, activation="relu", seed=rng, device=device),  # (N, 16, 2, 2)
        gg.nn.ConvTranspose2D(16, 16, activation="relu", **up),                                   # (N, 16, 4, 4)
        gg.nn.ConvTranspose2D(16, 1, **up),                                                       # (N, 1, 8, 8)
    )


def reconstruction_loss(model, images):
    """The mean squared error of ``model``'s reconstruction of ``images``.

    Example:
        >>> x = gg.zeros((3, 1, 8, 8), device="cpu")
        >>> reconstruction_loss(build_model(device="cpu"), x) >= 0.0
        True
    """
    return float(gg.mse(model(images), images).item())


def main(argv=None):
    """Train, printing the mean loss of each epoch, then the test loss; return the test loss."""
    parser = argparse.ArgumentParser(prog="python -m gpugrad.examples.conv_autoencoder",
                                     description="Train a small convolutional autoencoder on the 8x8 digits.")
    parser.add_argument("--epochs", type=int, default=10, help="passes over the training split (default 10)")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step (default 64)")
    parser.add_argument("--lr", type=float, default=5e-3, help="Adam's learning rate (default 0.005)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: gpugrad's default device)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the batch order")
    parser.add_argument("--quiet", action="store_true", help="print only the test loss")
    args = parser.parse_args(argv)

    device = gg.get_device(args.device).name
    x_train, y_train, x_test, _ = standardized_digits(flatten=False, device=device)
    model = build_model(args.seed, device)
    optimizer = gg.optimizers.Adam(args.lr)
    params = model.trainable_variables
    shuffle = np.random.default_rng(args.seed)

    @gg.function  # traced once per batch shape, then replayed
    def train_step(images):
        return optimizer.minimize(lambda: gg.mse(model(images), images), params)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        total, seen = 0.0, 0
        for images, _ in gg.data.batches(x_train, y_train, args.batch_size, seed=shuffle.integers(2**31)):
            total += train_step(images).item() * images.shape[0]
            seen += images.shape[0]
        if not args.quiet:
            print(f"epoch {epoch + 1}/{args.epochs}: reconstruction loss {total / seen:.4f}")
    seconds = time.perf_counter() - start

    loss = reconstruction_loss(model, x_test)
    baseline = float(gg.mean(gg.square(x_test)).item())  # every image predicted as the mean image (0)
    print(f"test reconstruction loss {loss:.4f} (mean image: {baseline:.4f}) after {args.epochs} epochs "
          f"({seconds:.1f} s on {device})")
    return loss


if __name__ == "__main__":
    main()
