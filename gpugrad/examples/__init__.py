"""Small runnable programs that show gpugrad at work: ``python -m gpugrad.examples.NAME``.

- ``linear_regression``: fit ``y = 3x + 2 + noise`` with ``SGD.minimize``.
- ``digits_mlp``: a 64-256-256-10 perceptron on the embedded 8x8 digits.
- ``digits_cnn``: a small convolutional network on the same digits.
- ``sine_lstm``: an LSTM that continues sine waves of any frequency and phase.

Each module has a ``main(argv=None)`` that parses its command-line arguments,
prints what it found and returns it (tests call it in-process).

Run one from a shell::

    python -m gpugrad.examples.linear_regression
    python -m gpugrad.examples.digits_mlp --epochs 15 --device cpu
    python -m gpugrad.examples.digits_cnn --epochs 12
    python -m gpugrad.examples.sine_lstm --steps 300
"""
