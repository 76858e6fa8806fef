"""Continue a sine wave with an LSTM: read 20 samples of ``sin(w t + phase)``, predict the next one.

Run it with ``python -m gpugrad.examples.sine_lstm``. Each sequence has its own
frequency ``w`` (between 0.1 and 0.5 radians a step) and phase, so the model
must read both off the window. The model is ``gg.nn.LSTM(1, 32,
batch_first=True)`` and a ``Dense(32, 1)`` on its last output; Adam minimises
the mean squared error, one ``gg.function``-traced step a batch (the loop over
the 20 time steps is traced once). It prints the training loss as it falls
and, at the end, the test loss beside that of repeating the last sample (the
baseline the LSTM must beat); a few hundred steps take seconds on a CPU.

Example:
    >>> test_loss, baseline = main(["--steps", "60", "--quiet"])  # doctest: +ELLIPSIS
    test MSE ... (repeating the last sample: ...) after 60 steps
    >>> test_loss < baseline
    True
"""
import argparse
import time

import numpy as np

import gpugrad as gg

WINDOW = 20


def make_data(n, seed, device=None):
    """``(x, y)``: ``n`` windows (n, 20, 1) of sines with random frequency and phase, and the next
    sample of each (n, 1), float32.

    Example:
        >>> x, y = make_data(4, seed=0)
        >>> x.shape, y.shape
        ((4, 20, 1), (4, 1))
    """
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 0.5, (n, 1))
    phase = rng.uniform(0.0, 2 * np.pi, (n, 1))
    t = np.arange(WINDOW + 1)[None, :]
    wave = np.sin(w * t + phase).astype(np.float32)
    return (gg.tensor(wave[:, :WINDOW, None], device=device), gg.tensor(wave[:, WINDOW:], device=device))


class SineLSTM(gg.nn.Module):
    """An LSTM over the window and a linear read-out of its last hidden state."""

    def __init__(self, hidden=32, device=None, seed=0):
        super().__init__()
        self.lstm = gg.nn.LSTM(1, hidden, batch_first=True, device=device, seed=seed)
        self.head = gg.nn.Dense(hidden, 1, device=device, seed=seed + 1)

    def forward(self, x):
        _, (h_n, _) = self.lstm(x)
        return self.head(h_n[-1])


def main(argv=None):
    """Train; print the loss now and then; return ``(test MSE, MSE of repeating the last sample)``."""
    parser = argparse.ArgumentParser(prog="python -m gpugrad.examples.sine_lstm",
                                     description="Predict the next sample of a sine wave with an LSTM.")
    parser.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    parser.add_argument("--batch", type=int, default=64, help="sequences a step (default 64)")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate (default 0.01)")
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: gpugrad's default device)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the data (default 0)")
    parser.add_argument("--quiet", action="store_true", help="print only the test loss")
    args = parser.parse_args(argv)

    x_train, y_train = make_data(2048, args.seed, args.device)
    x_test, y_test = make_data(512, args.seed + 1, args.device)
    model = SineLSTM(device=args.device, seed=args.seed)
    optimizer = gg.optimizers.Adam(args.lr)
    params = model.trainable_variables

    @gg.function
    def train_step(x, y):
        return optimizer.minimize(lambda: gg.mse(model(x), y), params)

    order = np.random.default_rng(args.seed).permutation
    start, batches = time.perf_counter(), []
    for step in range(args.steps):
        if not batches:
            batches = list(np.split(order(x_train.shape[0]), x_train.shape[0] // args.batch))
        rows = gg.tensor(batches.pop(), device=args.device)
        loss = train_step(gg.take(x_train, rows, axis=0), gg.take(y_train, rows, axis=0))
        if not args.quiet and (step % 50 == 0 or step == args.steps - 1):
            print(f"step {step}: loss {loss.item():.5f}")
    test_loss = gg.mse(model(x_test), y_test).item()
    baseline = gg.mse(x_test[:, -1], y_test).item()
    seconds = time.perf_counter() - start
    print(f"test MSE {test_loss:.5f} (repeating the last sample: {baseline:.5f}) after {args.steps} steps"
          + ("" if args.quiet else f" in {seconds:.1f} s"))
    return test_loss, baseline


if __name__ == "__main__":
    main()
