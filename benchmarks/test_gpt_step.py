"""W5: one training step of the character transformer of ``gpugrad train --model gpt``, batch 32, SGD.

The model: ``gpugrad.gpt.CharGPT`` with the job's defaults (65 characters, context 64, 2 pre-norm
layers of d_model 64 with 4 heads, MLP 256, GELU; 116k weights); one batch of 32 windows of Tiny
Shakespeare; softmax cross-entropy (mean) of the next character; SGD at learning rate 0.1 (the job
uses AdamW under a schedule: SGD keeps the step comparable and exact across peers).

gpugrad runs ``optimizer.minimize`` eagerly and through ``gg.function``. Beside it: PyTorch eager
(the same math with ``F.embedding``, ``F.layer_norm``, ``F.scaled_dot_product_attention(is_causal=True)``,
``F.gelu``, ``F.cross_entropy`` on the same weights, ``optim.SGD``) on each device it can use.
``test_torch_agrees_after_one_step`` checks both take the same step.
"""
import numpy as np
import pytest

import gpugrad as gg
from gpugrad import data
from gpugrad.gpt import DEFAULTS, CharGPT

from .conftest import (assert_function_steps_as_eager, device_params, interleave_steps, load_weights, sgd_step,
                       synchronize, time_step, torch_device, torch_sgd_step, torch_synchronize, traced)

LR = 0.1
BATCH = DEFAULTS["batch_size"]
CONTEXT = DEFAULTS["context"]
ROUNDS, WARMUP = 20, 3
GROUP = "W5 transformer training step (char GPT, 2 layers, d64, ctx 64, batch 32, SGD)"
LABEL = "W5 GPT step 2x d64 h4 ctx64, b32"


def make_problem():
    """``(names, weights, x, y)``: the start weights of the job's model as NumPy arrays, one batch of ids."""
    text = data.load_shakespeare()
    vocab = data.CharVocabulary(text)
    model = CharGPT(vocab.size, CONTEXT, DEFAULTS["layers"], DEFAULTS["d_model"], DEFAULTS["heads"], "cpu", 0)
    names, weights = zip(*[(n, v.numpy()) for n, v in model.named_variables()])
    ids = vocab.encode(text[:200_000])
    starts = np.random.default_rng(0).integers(0, len(ids) - CONTEXT - 1, BATCH)
    rows = ids[starts[:, None] + np.arange(CONTEXT + 1)]
    return list(names), list(weights), rows[:, :-1].copy(), rows[:, 1:].copy(), vocab.size


def gpugrad_setup(device):
    """``(step, variables)``: one ``minimize`` of the model's loss on the batch."""
    _, weights, x, y, vocab_size = make_problem()
    model = CharGPT(vocab_size, CONTEXT, DEFAULTS["layers"], DEFAULTS["d_model"], DEFAULTS["heads"], device, 0)
    params = model.trainable_variables
    load_weights(params, weights)
    step = sgd_step(lambda ids: gg.reshape(model(ids), (-1, vocab_size)), params, x, y.reshape(-1), device=device,
                    lr=LR)
    return step, params


# --------------------------------------------------------------------------- PyTorch


def torch_setup(torch, device="cpu"):
    """``(step, params)``: the same model written with PyTorch's functional ops, weights as gpugrad lays them
    out (kernels (in, out)), and ``optim.SGD``."""
    F = torch.nn.functional
    names, weights, x, y, vocab_size = make_problem()
    p = {n: torch.tensor(w, device=device, requires_grad=True) for n, w in zip(names, weights)}
    heads, d = DEFAULTS["heads"], DEFAULTS["d_model"]

    def split(t):
        n, length, _ = t.shape
        return t.view(n, length, heads, d // heads).transpose(1, 2)

    def forward(ids):
        h = F.embedding(ids, p["token.weight"]) + p["position.weight"][:ids.shape[1]]
        for i in range(DEFAULTS["layers"]):
            b = f"blocks.{i}."
            a = F.layer_norm(h, (d,), p[b + "norm1.weight"], p[b + "norm1.bias"])
            q, k, v = (split(a @ p[f"{b}attn.{s}_kernel"] + p[f"{b}attn.{s}_bias"]) for s in "qkv")
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(h.shape)
            h = h + o @ p[b + "attn.out_kernel"] + p[b + "attn.out_bias"]
            m = F.layer_norm(h, (d,), p[b + "norm2.weight"], p[b + "norm2.bias"])
            m = F.gelu(m @ p[b + "fc1.kernel"] + p[b + "fc1.bias"])
            h = h + m @ p[b + "fc2.kernel"] + p[b + "fc2.bias"]
        h = F.layer_norm(h, (d,), p["norm.weight"], p["norm.bias"])
        return h @ p["head.kernel"] + p["head.bias"]

    step = torch_sgd_step(torch, lambda ids: forward(ids).reshape(-1, vocab_size), list(p.values()), x, y.reshape(-1),
                          device=device, lr=LR)
    return step, p


# --------------------------------------------------------------------------- checks (not timed)


def test_torch_agrees_after_one_step(torch):
    step, params = torch_setup(torch)
    torch_loss = float(step().detach())
    ours, variables = gpugrad_setup("cpu")
    our_loss = float(ours().item())
    assert our_loss == pytest.approx(torch_loss, rel=1e-5)
    for got, want in zip([v.numpy() for v in variables], [t.detach().numpy() for t in params.values()], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6)


def test_function_steps_to_the_same_bits_as_eager():
    """On the CPU the replayed step makes the eager step's NumPy calls in its order: the same weights."""
    assert_function_steps_as_eager(lambda: gpugrad_setup("cpu"))


def test_the_loss_decreases_over_steps():
    step, _ = gpugrad_setup("cpu")
    losses = [step().item() for _ in range(8)]
    assert losses[-1] < 0.95 * losses[0]


# --------------------------------------------------------------------------- benchmarks


def timed(benchmark, impl, step, device, sync):
    time_step(benchmark, step, sync, workload="W5", label=LABEL, impl=impl, device=device, rounds=ROUNDS,
              warmup_rounds=WARMUP)


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params())
def test_w5_gpugrad(benchmark, device):
    timed(benchmark, "gpugrad", gpugrad_setup(device)[0], device, lambda: synchronize(device))


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("gpugrad-function"))
def test_w5_gpugrad_function(benchmark, device):
    timed(benchmark, "gpugrad-function", traced(gpugrad_setup(device)[0]), device, lambda: synchronize(device))


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("device", device_params("torch"))
def test_w5_torch(benchmark, torch, device):
    step = torch_setup(torch, torch_device(torch, device))[0]
    timed(benchmark, "torch", step, device, lambda: torch_synchronize(torch, device))


@pytest.mark.benchmark(group=GROUP)
def test_w5_interleaved(benchmark, torch):
    """The three W5 steps (gpugrad eager and through ``gg.function``, PyTorch) on the CPU in alternating
    blocks of 2: the ratios that spells of load on a shared machine cannot tilt (see ``run_interleaved``)."""
    interleave_steps(benchmark, lambda: gpugrad_setup("cpu")[0], {"torch": torch_setup(torch)[0]}, workload="W5",
                     block=2, cycles=10)
