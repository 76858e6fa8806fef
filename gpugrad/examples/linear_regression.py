"""Fit ``y = 3x + 2 + noise`` (1000 samples) with one weight, one bias and plain SGD.

Run it with ``python -m gpugrad.examples.linear_regression``. The weight starts
at 5 and the bias at 10; ``SGD(0.1).minimize`` takes the gradient of the mean
squared error with a GradientTape and updates both Variables in place.

Example:
    >>> weight, bias = main(["--steps", "100", "--quiet"])  # doctest: +ELLIPSIS
    W = 2.99..., B = 1.98... (true line: W = 3, B = 2)
    >>> abs(weight - 3) < 0.2, abs(bias - 2) < 0.2
    (True, True)
"""
import argparse

import numpy as np

import gpugrad as gg


def make_data(n=1000, seed=1234, device=None):
    """``n`` points of ``y = 3x + 2 + noise`` with x and the noise standard normal, as float32 tensors.

    Example:
        >>> x, y = make_data(10)
        >>> x.shape, y.dtype
        ((10,), dtype('float32'))
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = 3.0 * x + 2.0 + rng.standard_normal(n)
    return gg.tensor(x, dtype=gg.float32, device=device), gg.tensor(y, dtype=gg.float32, device=device)


def main(argv=None):
    """Fit the line; print the loss now and then and the fitted W and B; return ``(W, B)`` as floats."""
    parser = argparse.ArgumentParser(prog="python -m gpugrad.examples.linear_regression",
                                     description="Fit y = 3x + 2 + noise with SGD.")
    parser.add_argument("--steps", type=int, default=150, help="gradient steps (default 150)")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: gpugrad's default device)")
    parser.add_argument("--quiet", action="store_true", help="print only the fitted W and B")
    args = parser.parse_args(argv)

    x, y = make_data(device=args.device)
    W = gg.Variable(5., device=args.device)
    B = gg.Variable(10., device=args.device)
    optimizer = gg.optimizers.SGD(args.lr)

    def loss_fn():
        return gg.mse(W * x + B, y)

    for step in range(args.steps):
        loss = optimizer.minimize(loss_fn)  # var_list=None: every trainable Variable loss_fn read (W and B)
        if not args.quiet and step % 25 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    print(f"W = {W.item():.4f}, B = {B.item():.4f} (true line: W = 3, B = 2)")
    return W.item(), B.item()


if __name__ == "__main__":
    main()
