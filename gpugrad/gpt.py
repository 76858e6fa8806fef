"""The transformer main job: a character-level GPT trained on the embedded Tiny Shakespeare.

``gpugrad train --model gpt`` calls :func:`train_gpt` (through :func:`gpugrad.training.train`): a
decoder-only transformer (token and learned position embeddings, pre-norm causal
:class:`~gpugrad.nn.TransformerBlock` s, a final LayerNorm and a dense head to the 65 characters) learns
to predict the next character of the first 90 % of the text, each step through :func:`gpugrad.function`
(or op by op with ``eager=True``), with AdamW under a linear warm-up and cosine decay of the rate. It
reports the loss on the last 10 % in bits per character and a sample the trained model writes.

Example:
    >>> result = train_gpt(epochs=1, steps_per_epoch=2, layers=1, d_model=16, heads=2, context=8,
    ...                    batch_size=4, eval_batches=1, sample_chars=10, device="cpu", progress=False)
    >>> result.steps, len(result.sample) >= 10, result.val_bits_per_char > 0
    (2, True, True)
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time

import numpy as np

from . import backend, data, nn, optimizers
from .ops import reshape, softmax_cross_entropy
from .tensor import Tensor
from .traced import function

# the default run: about 4 minutes on a 2-core CPU (see docs/guide/models.md)
DEFAULTS = {"epochs": 6, "steps_per_epoch": 100, "batch_size": 32, "lr": 3e-3, "layers": 2, "d_model": 64,
            "heads": 4, "context": 64}
VALIDATION = 0.1  # the last tenth of the text


def _embedding_init(shape, dtype=None, seed=None):
    """GPT-2's token embedding: normal with standard deviation 0.02."""
    return nn.init.normal(shape, stddev=0.02, dtype=dtype, seed=seed)


class CharGPT(nn.Module):
    """A decoder-only transformer over character ids (N, T), T <= ``context``: logits (N, T, vocab_size).

    Example:
        >>> import gpugrad as gg
        >>> model = CharGPT(65, context=8, layers=1, d_model=16, heads=2, seed=0)
        >>> model(gg.tensor([[1, 2, 3]])).shape
        (1, 3, 65)
    """

    def __init__(self, vocab_size, context, layers=2, d_model=64, heads=4, device=None, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.context = context
        self.token = nn.Embedding(vocab_size, d_model, init=_embedding_init, device=device, seed=rng)
        self.position = nn.PositionalEmbedding(context, d_model, device=device, seed=rng)
        self.blocks = [nn.TransformerBlock(d_model, heads, causal=True, device=device, seed=rng)
                       for _ in range(layers)]
        self.norm = nn.LayerNorm(d_model, device=device)
        self.head = nn.Dense(d_model, vocab_size, device=device, seed=rng)

    def forward(self, ids):
        x = self.position(self.token(ids))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


@dataclasses.dataclass
class GPTResult:
    """What a ``--model gpt`` run measured: losses in nats, the validation loss also in bits per character."""

    model: str
    device: str
    epochs: int
    steps: int
    final_loss: float
    val_loss: float
    sample: str
    seconds: float
    tokens_per_second: float
    eager: bool = False
    seed: int = 0
    parameters: int = 0

    @property
    def val_bits_per_char(self):
        return self.val_loss / math.log(2.0)

    def summary(self):
        """The lines ``gpugrad train --model gpt`` prints: the result, then the sample.

        Example:
            >>> print(GPTResult("gpt", "cpu", 1, 10, 2.5, 2.0794, "To be", 3.0, 100.0).summary())
            gpt: validation loss 3.000 bits/char (2.0794 nats), final training loss 2.5000, 10 steps in 3.0 s on cpu
            sample:
            To be
        """
        return (f"gpt: validation loss {self.val_bits_per_char:.3f} bits/char ({self.val_loss:.4f} nats), "
                f"final training loss {self.final_loss:.4f}, {self.steps} steps in {self.seconds:.1f} s on "
                f"{self.device}{' (eager)' if self.eager else ''}\nsample:\n{self.sample}")

    def summary_dict(self):
        """The run as a JSON-ready dict (``gpugrad train --model gpt --json``)."""
        return {"model": self.model, "device": self.device, "epochs": self.epochs, "steps": self.steps,
                "seed": self.seed, "eager": self.eager, "loss": self.final_loss, "val_loss": self.val_loss,
                "val_bits_per_char": self.val_bits_per_char, "sample": self.sample, "time": self.seconds,
                "tokens_per_second": self.tokens_per_second, "parameters": self.parameters}


def _windows(ids, starts, context):
    """(inputs, targets): rows ``ids[s:s + context]`` and ``ids[s + 1:s + context + 1]`` for each start s."""
    index = np.asarray(starts)[:, None] + np.arange(context + 1)
    rows = ids[index]
    return rows[:, :-1], rows[:, 1:]


def validation_loss(model, ids, context, batch_size, batches, device):
    """Mean next-character loss (nats) of ``model`` on ``batches`` batches of windows evenly spaced over ``ids``."""
    count = batch_size * batches
    starts = np.linspace(0, len(ids) - context - 1, count).astype(np.int64)
    was_training = model.training
    model.eval()
    total = 0.0
    for b in range(batches):
        x, y = _windows(ids, starts[b * batch_size:(b + 1) * batch_size], context)
        logits = model(Tensor(x, None, device))
        total += float(softmax_cross_entropy(reshape(logits, (-1, logits.shape[-1])),
                                             Tensor(y.reshape(-1), None, device)).item())
    model.train(was_training)
    return total / batches


def generate(model, vocab, prompt, chars, device, temperature=0.8, seed=0):
    """``prompt`` followed by ``chars`` characters sampled from ``model`` at ``temperature``.

    Example:
        >>> vocab = data.CharVocabulary("ab")
        >>> len(generate(CharGPT(2, 4, 1, 8, 2), vocab, "a", 5, "cpu"))
        6
    """
    rng = np.random.default_rng(seed)
    ids = list(vocab.encode(prompt))
    was_training = model.training
    model.eval()
    for _ in range(chars):
        window = np.asarray(ids[-model.context:], dtype=np.int64)[None]
        logits = model(Tensor(window, None, device)).numpy()[0, -1].astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train(was_training)
    return vocab.decode(ids)


def train_gpt(epochs=None, steps_per_epoch=None, batch_size=None, lr=None, layers=None, d_model=None, heads=None,
              context=None, device=None, seed=0, eager=False, progress=True, out=None, eval_batches=16,
              sample_chars=300, save=None):
    """Train :class:`CharGPT` on Tiny Shakespeare; returns a :class:`GPTResult`.

    ``epochs`` rounds of ``steps_per_epoch`` AdamW steps (weight decay 0.01) on ``batch_size`` random
    windows of ``context`` characters; the rate warms up linearly over the first 10 % of the steps to
    ``lr``, then decays by a cosine to a tenth of it. Unset arguments take :data:`DEFAULTS`. The run is
    reproducible for a given ``seed`` (on the CPU, bit for bit).
    """
    settings = dict(DEFAULTS)
    settings.update({k: v for k, v in dict(epochs=epochs, steps_per_epoch=steps_per_epoch, batch_size=batch_size,
                                           lr=lr, layers=layers, d_model=d_model, heads=heads,
                                           context=context).items() if v is not None})
    dev = backend.get_device(device)
    text = data.load_shakespeare()
    vocab = data.CharVocabulary(text)
    ids = vocab.encode(text)
    split = int(len(ids) * (1 - VALIDATION))
    train_ids, val_ids = ids[:split], ids[split:]
    ctx = settings["context"]
    model = CharGPT(vocab.size, ctx, settings["layers"], settings["d_model"], settings["heads"], dev, seed)
    variables = model.trainable_variables
    total = settings["epochs"] * settings["steps_per_epoch"]
    warmup = max(1, total // 10)
    schedule = optimizers.Warmup(optimizers.CosineDecay(settings["lr"], max(1, total - warmup), alpha=0.1),
                                 warmup_steps=warmup)
    opt = optimizers.AdamW(schedule, weight_decay=0.01)
    vocab_size = vocab.size

    def train_step(x, y):
        def loss_fn():
            logits = model(x)
            return softmax_cross_entropy(reshape(logits, (-1, vocab_size)), reshape(y, (-1,)))
        return opt.minimize(loss_fn, variables)

    step = train_step if eager else function(train_step)
    order = np.random.default_rng(seed)
    out = out or sys.stderr
    loss = None
    steps = 0
    start = time.perf_counter()
    for epoch in range(settings["epochs"]):
        for _ in range(settings["steps_per_epoch"]):
            starts = order.integers(0, len(train_ids) - ctx - 1, settings["batch_size"])
            x, y = _windows(train_ids, starts, ctx)
            loss = step(Tensor(x, None, dev), Tensor(y, None, dev))
            steps += 1
        if progress:
            print(f"gpt on {dev.name}: epoch {epoch + 1}/{settings['epochs']}, step {steps}, training loss "
                  f"{loss.item():.4f}, {time.perf_counter() - start:.1f} s", file=out, flush=True)
    final_loss = float(loss.item())
    seconds = time.perf_counter() - start
    val = validation_loss(model, val_ids, ctx, settings["batch_size"], eval_batches, dev)
    sample = generate(model, vocab, "\n", sample_chars, dev, seed=seed) if sample_chars else ""
    if save:
        from .serialization import save as save_weights

        save_weights(save, model)
    parameters = sum(int(np.prod(v.shape)) for v in variables)
    return GPTResult("gpt", dev.name, settings["epochs"], steps, final_loss, val, sample.strip("\n"), seconds,
                     steps * settings["batch_size"] * ctx / seconds, eager, seed, parameters)
