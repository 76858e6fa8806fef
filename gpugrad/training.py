"""The main job: train a small classifier on the embedded digits and report test accuracy.

``gpugrad train`` is a thin command-line layer over :func:`train`.

Example:
    >>> from gpugrad.training import train
    >>> result = train("mlp", epochs=1, device="cpu", progress=False)
    >>> result.test_accuracy > 0.8, result.device
    (True, 'cpu')
"""
import dataclasses
import sys
import time
from typing import Any, Optional

import numpy as np

import contextlib

from . import backend, data, distributed, mixed_precision, nn, optimizers
from .ops import argmax, cast, softmax_cross_entropy
from .tensor import Tensor
from .traced import function

MODELS = ("mlp", "cnn", "gpt")  # gpt: the character transformer of gpugrad/gpt.py
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw", "rmsprop", "adagrad")
# --precision: the low dtype of matmul/dense/conv2d (None: float32 throughout) and whether the loss is scaled
PRECISIONS = {"float32": (None, False), "mixed16": ("float16", True), "bf16": ("bfloat16", False)}
DEFAULTS = {  # per model: epochs, batch size, optimizer, learning rate
    "mlp": {"epochs": 15, "batch_size": 64, "optimizer": "adam", "lr": 0.001},
    "cnn": {"epochs": 12, "batch_size": 64, "optimizer": "adam", "lr": 0.002},
}


@dataclasses.dataclass
class TrainResult:
    """What a training run measured; ``device`` is the device of each rank, ``ranks`` how many trained."""

    model: str
    device: str
    epochs: int
    steps: int
    final_loss: float
    train_accuracy: float
    test_accuracy: float
    seconds: float
    samples_per_second: float
    eager: bool = False
    seed: int = 0
    ranks: int = 1
    precision: str = "float32"
    loss_scale: Optional[dict] = None  # mixed16: the LossScaleOptimizer's final scale, skips, growths, history
    history: Optional[list] = None  # with train(history=True): one dict per epoch (see train)
    profile: Any = None  # with train(profile=True): the gpugrad.profile() of one epoch
    profile_epoch: Optional[int] = None  # which epoch it profiled (1 is the first)

    @property
    def where(self):
        """The device, or ``"N ranks (device)"`` for a data-parallel run under ``mpiexec``."""
        return self.device if self.ranks == 1 else f"{self.ranks} ranks ({self.device})"

    def summary(self):
        """The final line ``gpugrad train`` prints.

        Example:
            >>> TrainResult("mlp", "cpu", 15, 345, 0.0034, 1.0, 0.9777, 1.23, 17535.0).summary()
            'mlp: test accuracy 97.77% (train 100.00%), final loss 0.0034, 15 epochs in 1.2 s on cpu'
        """
        return (f"{self.model}: test accuracy {self.test_accuracy:.2%} "
                f"(train {self.train_accuracy:.2%}), final loss {self.final_loss:.4f}, "
                f"{self.epochs} epoch{'' if self.epochs == 1 else 's'} in {self.seconds:.1f} s on {self.where}"
                f"{' (eager)' if self.eager else ''}"
                f"{'' if self.precision == 'float32' else f', precision {self.precision}'}"
                f"{'' if not self.loss_scale else self._loss_scale_text()}")

    def _loss_scale_text(self):
        s = self.loss_scale
        return (f"; loss scale {s['scale']:g} ({s['skips']} skipped step{'' if s['skips'] == 1 else 's'}, "
                f"{s['growths']} growth{'' if s['growths'] == 1 else 's'})")

    def summary_dict(self):
        """The run as a JSON-ready dict (``gpugrad train --json``): accuracy is the test accuracy, loss the
        last step's, time the seconds of the training loop.

        Example:
            >>> result = TrainResult("mlp", "cpu", 15, 345, 0.0034, 1.0, 0.9777, 1.23, 17535.0)
            >>> {k: result.summary_dict()[k] for k in ("accuracy", "loss", "time", "device", "seed")}
            {'accuracy': 0.9777, 'loss': 0.0034, 'time': 1.23, 'device': 'cpu', 'seed': 0}
        """
        return {"model": self.model, "device": self.device, "ranks": self.ranks, "epochs": self.epochs,
                "steps": self.steps, "seed": self.seed, "eager": self.eager, "accuracy": self.test_accuracy,
                "train_accuracy": self.train_accuracy, "loss": self.final_loss, "time": self.seconds,
                "samples_per_second": self.samples_per_second, "precision": self.precision,
                "loss_scale": self.loss_scale, **({} if self.history is None else {"history": self.history})}


def build_model(name, seed=0, device=None):
    """The digits classifier ``name``: "mlp" (64-256-256-10, ReLU) or "cnn" (two 3x3 convolutions).

    Example:
        >>> model = build_model("mlp", device="cpu")
        >>> [v.shape for v in model.trainable_variables][:2]
        [(64, 256), (256,)]
    """
    rng = np.random.default_rng(seed)
    if name == "mlp":
        return nn.Sequential(
            nn.Dense(64, 256, activation="relu", device=device, seed=rng),
            nn.Dense(256, 256, activation="relu", device=device, seed=rng),
            nn.Dense(256, 10, device=device, seed=rng),
        )
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2D(1, 16, 3, padding=1, activation="relu", device=device, seed=rng),
            nn.Conv2D(16, 32, 3, padding=1, activation="relu", device=device, seed=rng),
            nn.MaxPool2D(2),
            nn.Flatten(),
            nn.Dense(32 * 4 * 4, 64, activation="relu", device=device, seed=rng),
            nn.Dense(64, 10, device=device, seed=rng),
        )
    raise ValueError(f"unknown model {name!r}: choose one of {', '.join(MODELS)}")


def build_optimizer(name, lr):
    """The optimizer ``name`` at learning rate ``lr`` ("momentum" is SGD with momentum 0.9)."""
    table = {
        "sgd": lambda: optimizers.SGD(lr),
        "momentum": lambda: optimizers.SGD(lr, momentum=0.9),
        "adam": lambda: optimizers.Adam(lr),
        "adamw": lambda: optimizers.AdamW(lr),
        "rmsprop": lambda: optimizers.RMSProp(lr),
        "adagrad": lambda: optimizers.AdaGrad(lr),
    }
    if name not in table:
        raise ValueError(f"unknown optimizer {name!r}: choose one of {', '.join(OPTIMIZERS)}")
    return table[name]()


def standardized_digits(flatten, device):
    """The digits' splits, each pixel scaled by the training split's mean and spread.

    Example:
        >>> x, y, _, _ = standardized_digits(True, "cpu")
        >>> abs(float(x.numpy().mean())) < 1e-6
        True
    """
    x_train, y_train = data.load_digits("train", flatten=flatten, device="cpu")
    x_test, y_test = data.load_digits("test", flatten=flatten, device="cpu")
    mean = x_train.numpy().mean(axis=0)
    spread = np.maximum(x_train.numpy().std(axis=0), np.float32(1 / 16))  # constant border pixels stay 0
    scale = lambda x: Tensor._adopt(((x.numpy() - mean) / spread).astype(np.float32), device)  # noqa: E731 - fresh
    return scale(x_train), y_train.to(device), scale(x_test), y_test.to(device)


def accuracy(model, images, labels, batch_size=512):
    """The fraction of ``images`` that ``model`` classifies as ``labels`` (in eval mode)."""
    was_training = model.training
    model.eval()
    correct = 0
    for xb, yb in data.batches(images, labels, batch_size, shuffle=False):
        predicted = argmax(model(xb), axis=-1)
        correct += int((predicted._data == yb._data).sum())
    model.train(was_training)
    return correct / labels.shape[0]


def evaluate(model, images, labels, batch_size=512):
    """``(mean loss, accuracy)`` of ``model`` on ``images`` and ``labels`` in eval mode: the softmax
    cross-entropy of its float32 logits, and the fraction it classifies right.

    Example:
        >>> x, y, _, _ = standardized_digits(True, "cpu")
        >>> loss, acc = evaluate(build_model("mlp", device="cpu"), x, y)
        >>> loss > 2.0, 0.0 <= acc < 0.3
        (True, True)
    """
    was_training = model.training
    model.eval()
    total, correct = 0.0, 0
    for xb, yb in data.batches(images, labels, batch_size, shuffle=False):
        logits = cast(model(xb), "float32")
        total += float(softmax_cross_entropy(logits, yb).item()) * xb.shape[0]
        correct += int((argmax(logits, axis=-1)._data == yb._data).sum())
    model.train(was_training)
    return total / labels.shape[0], correct / labels.shape[0]


def train(model="mlp", epochs=None, batch_size=None, lr=None, optimizer=None, device=None, seed=0,
          save=None, progress=True, out=None, eager=False, precision="float32", history=False, profile=False,
          jit=False):
    """Train ``model`` on the digits' training split; returns a :class:`TrainResult`.

    Each training step runs through :func:`gpugrad.function` (traced once per batch shape, then
    replayed; the same bits as eager execution on the CPU), or op by op with ``eager=True``; ``jit=True``:
    through ``gg.function(jit_compile=True)``, its elementwise runs fused (within that bound of eager).

    Unset arguments take the model's defaults (:data:`DEFAULTS`); ``device``
    defaults to gpugrad's default device (the first GPU, else the CPU). The run
    is reproducible for a given ``seed``. ``save`` writes the trained weights
    to an ``.npz`` file (:func:`gpugrad.save`). With ``progress``, rank 0 shows
    the run on ``out`` (default: stderr): tqdm's bar when ``out`` is a terminal
    and tqdm is installed, else one line per epoch.

    ``precision``: ``"float32"``; ``"mixed16"`` (matmul, dense and conv2d in float16 under
    :func:`gpugrad.autocast`, float32 variables, the loss scaled by a
    :class:`~gpugrad.optimizers.LossScaleOptimizer`); ``"bf16"`` (the same in bfloat16, unscaled:
    bfloat16 has float32's range). The logits are cast to float32 before the loss.

    ``model="gpt"`` trains the character-level transformer of :mod:`gpugrad.gpt` on the embedded Tiny
    Shakespeare instead (an epoch is 100 steps there) and returns a :class:`gpugrad.gpt.GPTResult`; it
    runs in float32 on one process.

    ``history``: also return one dict per epoch in ``result.history``, as Keras's ``History`` keeps them:
    ``epoch`` (from 1); ``loss``, the mean of the epoch's step losses (in training mode, as the steps
    computed them); ``test_loss``, ``train_accuracy`` and ``test_accuracy``, in eval mode after the epoch;
    ``seconds``, the epoch's training time. The evaluations are not counted in ``seconds`` or the throughput.

    ``profile``: profile one epoch with :func:`gpugrad.profile` and return it in ``result.profile``: the
    second (the first after the warm-up epoch, whose first steps trace ``gg.function``'s step and compile
    kernels), or the first when there is one; ``result.profile_epoch`` says which.
    """
    if jit and eager:
        raise ValueError("jit and eager exclude each other: jit fuses the traced step")
    if model == "gpt":
        if history or profile:
            raise ValueError("--model gpt reports no per-epoch history and is not profiled by gpugrad train; "
                             "use gg.profile() around gpugrad.gpt.train_gpt")
        if jit:
            raise ValueError("--jit trains the mlp and cnn models")
        if precision != "float32":
            raise ValueError(f"--model gpt trains in float32 only, not precision {precision!r}")
        if optimizer not in (None, "adamw"):
            raise ValueError(f"--model gpt trains with AdamW (a warm-up and cosine schedule), not {optimizer!r}")
        from .gpt import train_gpt

        return train_gpt(epochs=epochs, batch_size=batch_size, lr=lr, device=device, seed=seed, eager=eager,
                         progress=progress, out=out, save=save)
    settings = dict(DEFAULTS.get(model, DEFAULTS["mlp"]))
    settings.update({k: v for k, v in dict(epochs=epochs, batch_size=batch_size, lr=lr,
                                           optimizer=optimizer).items() if v is not None})
    if settings["epochs"] < 1 or settings["batch_size"] < 1:
        raise ValueError("epochs and batch_size must be at least 1")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    low, scaled = PRECISIONS[precision]
    world = distributed.init()
    dev = backend.get_device(device)
    net = build_model(model, seed, dev)
    opt = build_optimizer(settings["optimizer"], settings["lr"])
    if scaled:
        opt = optimizers.LossScaleOptimizer(opt)
    scaler = opt if scaled else None
    policy = (lambda: mixed_precision.autocast(low)) if low else contextlib.nullcontext
    logits = (lambda x: cast(net(x), "float32")) if low else net
    flat = model == "mlp"
    x_train, y_train, x_test, y_test = standardized_digits(flat, dev)
    order = np.random.default_rng(seed)
    steps_per_epoch = -(-x_train.shape[0] // settings["batch_size"])
    where = dev.name if world.size == 1 else f"{world.size} ranks ({dev.name})"
    bar = _progress_bar(settings["epochs"] * steps_per_epoch, settings["epochs"], progress and world.rank == 0,
                        out or sys.stderr, f"{model} on {where}")
    net.train()
    loss = None
    steps = 0
    variables = net.trainable_variables  # found once, not on every step
    if world.size > 1:  # data-parallel: one start on every rank, gradients averaged before each update
        distributed.broadcast_variables(variables)
        opt = distributed.DistributedOptimizer(opt)
    start = time.perf_counter()

    def train_step(xb, yb, share):
        # share: this rank's rows over the global batch's mean rows; the ranks' mean of share-weighted
        # gradients is the global batch's mean gradient, even when the last batch splits unevenly
        if share == 1.0:
            return opt.minimize(lambda: softmax_cross_entropy(logits(xb), yb), variables)
        return opt.minimize(lambda: softmax_cross_entropy(logits(xb), yb) * share, variables)

    step = train_step if eager else function(train_step, jit_compile=jit)
    profile_epoch = (1 if settings["epochs"] > 1 else 0) if profile else None
    prof, epochs_seen, evaluating = None, [], 0.0
    for epoch in range(settings["epochs"]):
        epoch_start, loss_sum, epoch_steps = time.perf_counter(), None, 0
        profiling = _profiled() if epoch == profile_epoch else contextlib.nullcontext()
        with profiling as opened:
            for xb, yb in data.batches(x_train, y_train, settings["batch_size"], seed=order.integers(2**31)):
                if world.size > 1:
                    rows = distributed.shard(xb.shape[0])
                    share = len(rows) * world.size / xb.shape[0]
                    xb, yb = xb[rows.start:rows.stop], yb[rows.start:rows.stop]
                    with policy():
                        loss = step(xb, yb, share)
                else:
                    with policy():  # around the traced step: its trace and replays run under one policy
                        loss = step(xb, yb, 1.0)
                steps += 1
                if history:  # summed on the device: no op, nothing to profile, no wait for a GPU
                    value = loss._data.astype(np.float64)
                    loss_sum = value if loss_sum is None else loss_sum + value
                    epoch_steps += 1
                bar.step(loss, xb.shape[0] * world.size, epoch)
        prof = opened if epoch == profile_epoch else prof
        if history:
            epoch_seconds = time.perf_counter() - epoch_start
            evaluated = time.perf_counter()
            with policy():
                test_loss, test_accuracy = evaluate(net, x_test, y_test)
                epochs_seen.append({"epoch": epoch + 1, "loss": float(loss_sum) / epoch_steps, "test_loss": test_loss,
                                    "train_accuracy": accuracy(net, x_train, y_train),
                                    "test_accuracy": test_accuracy, "seconds": epoch_seconds})
            evaluating += time.perf_counter() - evaluated
        bar.end_epoch(loss, epoch)
    final_loss = float(loss.item())  # .item() waits for the GPU
    seconds = time.perf_counter() - start - evaluating
    bar.close()
    with policy():
        train_accuracy, test_accuracy = accuracy(net, x_train, y_train), accuracy(net, x_test, y_test)
    loss_scale = scaler.report() if scaler is not None else None
    result = TrainResult(model, dev.name, settings["epochs"], steps, final_loss, train_accuracy, test_accuracy,
                         seconds, x_train.shape[0] * settings["epochs"] / seconds, eager, seed, world.size,
                         precision, loss_scale, epochs_seen if history else None, prof,
                         None if profile_epoch is None else profile_epoch + 1)
    if save and world.rank == 0:
        from .serialization import save as save_weights

        save_weights(save, net)
    return result


def _profiled():
    from .profiler import profile

    return profile()


def is_terminal(stream):
    """Whether ``stream`` is a terminal (where a redrawn bar reads well) rather than a pipe, file or buffer.

    Example:
        >>> import io
        >>> is_terminal(io.StringIO())
        False
    """
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class _progress_bar:
    """tqdm's bar when ``out`` is a terminal and tqdm is installed (``pip install gpugrad[progress]``),
    else one plain line at the end of each epoch; nothing when not ``enabled``."""

    def __init__(self, total, epochs, enabled, out, label):
        self.enabled, self.out, self.label, self.epochs = enabled, out, label, epochs
        self.samples, self.start = 0, time.perf_counter()
        self.tqdm = None
        if enabled and is_terminal(out):
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.tqdm = tqdm(total=total, desc=label, unit="step", file=out, leave=True,
                                 dynamic_ncols=True, mininterval=0.25)

    def step(self, loss, batch, epoch):
        self.samples += batch
        if self.tqdm is not None:
            self.tqdm.update(1)
            if self.tqdm.n % 20 == 0:  # reading the loss syncs a GPU: not every step
                self.tqdm.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.4f}", samples_s=f"{self._rate():,.0f}")

    def end_epoch(self, loss, epoch):
        if self.enabled and self.tqdm is None:
            print(f"{self.label}: epoch {epoch + 1}/{self.epochs}, loss {loss.item():.4f}, "
                  f"{self._rate():,.0f} samples/s", file=self.out, flush=True)

    def _rate(self):
        return self.samples / max(time.perf_counter() - self.start, 1e-9)

    def close(self):
        if self.tqdm is not None:
            self.tqdm.close()
