"""Training curves (``gpugrad train --plot``): loss and accuracy per epoch, drawn with matplotlib (the ``plot``
extra) on its Agg backend, into a file only.

Two panels share the epoch axis: the loss (the mean training loss of each epoch, and the test loss after
it) and the accuracy (train and test, after each epoch), as Keras's ``History`` and TensorBoard's scalars
show a run. A series the history lacks is left out.

Example:
    >>> history = [{"epoch": 1, "loss": 1.2, "test_loss": 0.9, "train_accuracy": 0.7, "test_accuracy": 0.68},
    ...            {"epoch": 2, "loss": 0.4, "test_loss": 0.5, "train_accuracy": 0.9, "test_accuracy": 0.86}]
    >>> series(history)["accuracy"]
    [('train', [1, 2], [0.7, 0.9]), ('test', [1, 2], [0.68, 0.86])]
"""
from .bench.plot import INSTALL_HINT, matplotlib_missing  # noqa: F401 - the CLI's check before training

FORMATS = (".png", ".svg", ".pdf")  # what matplotlib's Agg backend writes, by the file's suffix
PANELS = {"loss": (("train", "loss"), ("test", "test_loss")),
          "accuracy": (("train", "train_accuracy"), ("test", "test_accuracy"))}


def series(history):
    """``{panel: [(label, epochs, values)]}`` of the per-epoch dicts ``history``, each series where present."""
    found = {}
    for panel, lines in PANELS.items():
        found[panel] = []
        for label, key in lines:
            points = [(h["epoch"], h[key]) for h in history if h.get(key) is not None]
            if points:
                found[panel].append((label, [e for e, _ in points], [v for _, v in points]))
    return found


def write_curves(history, path, title):
    """Draw the loss and accuracy of ``history`` (``train(history=True)``'s per-epoch dicts) into ``path``
    (the format by its suffix: one of :data:`FORMATS`) under ``title``."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    try:
        for ax, (panel, lines) in zip(axes, series(history).items()):
            for label, epochs, values in lines:
                ax.plot(epochs, values, marker="o", markersize=3, label=label)
            ax.set_xlabel("epoch")
            ax.set_ylabel(panel if panel == "accuracy" else "loss (cross-entropy)")
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            if panel == "loss":
                ax.set_yscale("log")
            else:
                ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
            if lines:
                ax.legend()
            ax.set_title(panel)
        fig.suptitle(title)
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
