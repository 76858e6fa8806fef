"""One training step per precision: W4 (MLP 512-1024-1024-10, batch 256), the digits MLP (64-256-256-10,
batch 64) and the digits CNN (batch 64), each with Adam.

Rows: float32, mixed16 (``gg.autocast("float16")`` + ``LossScaleOptimizer``) and bf16
(``gg.autocast("bfloat16")``), each through ``gg.function`` with the autocast block around the call,
as ``gpugrad train --precision`` runs them. On the CPU the low-precision rows show that the step
runs and what the casts cost (NumPy has no fast float16 product; gpugrad computes it in float32
from rounded inputs); on a GPU they show the tensor cores' speed.

``test_autocast_hook_costs_nothing_when_off`` times ``gg.matmul`` of 2x2 tensors against the same
function compiled without its hook line, in one process, interleaved.
"""
import contextlib
import importlib.util
import inspect
import textwrap

import numpy as np
import pytest

import gpugrad as gg
from gpugrad.ops import linalg
from gpugrad.training import build_model, standardized_digits

from .conftest import device_params, run, run_interleaved, synchronize

PRECISIONS = {"float32": None, "mixed16": "float16", "bf16": "bfloat16"}
ROUNDS, WARMUP = 20, 3


def _w4(device):
    """The W4 network and one batch of 256 random rows."""
    rng = np.random.default_rng(0)
    with gg.device(device):
        net = gg.nn.Sequential(gg.nn.Dense(512, 1024, activation="relu", seed=1),
                               gg.nn.Dense(1024, 1024, activation="relu", seed=2), gg.nn.Dense(1024, 10, seed=3))
        xb = gg.tensor(rng.standard_normal((256, 512)).astype(np.float32))
        yb = gg.tensor(rng.integers(0, 10, 256))
    return net, xb, yb


def _step(model_name, precision, device):
    if model_name == "w4":
        net, xb, yb = _w4(device)
    else:
        net = build_model(model_name, seed=0, device=device)
        x_train, y_train, _, _ = standardized_digits(model_name == "mlp", device)
        xb, yb = x_train[:64], y_train[:64]
    opt = gg.optimizers.Adam(1e-3)
    if precision == "mixed16":
        opt = gg.optimizers.LossScaleOptimizer(opt)
    low = PRECISIONS[precision]
    variables = net.trainable_variables
    logits = (lambda x: gg.cast(net(x), "float32")) if low else net

    @gg.function
    def step(x, y):
        return opt.minimize(lambda: gg.softmax_cross_entropy(logits(x), y), variables)

    def call():
        with gg.autocast(low) if low else contextlib.nullcontext():
            loss = step(xb, yb)
        synchronize(device)
        return loss
    return call


@pytest.mark.parametrize("precision", [
    pytest.param(p, marks=pytest.mark.skipif(p == "bf16" and importlib.util.find_spec("ml_dtypes") is None,
                                             reason="bfloat16 needs ml_dtypes: pip install -e '.[bfloat16]'"))
    for p in PRECISIONS])
@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("model_name", ["w4", "mlp", "cnn"])
def test_training_step_per_precision(benchmark, model_name, precision, device):
    batch = 256 if model_name == "w4" else 64
    benchmark.group = f"training step per precision ({model_name}, batch {batch}, Adam)"
    call = _step(model_name, precision, device)
    loss = run(benchmark, call, workload=f"{model_name.upper()} {precision}", impl="gpugrad-function",
               device=device, rounds=ROUNDS, warmup_rounds=WARMUP)
    assert loss.item() == loss.item()  # finite and read back


def _unhooked_matmul():
    """``linalg.matmul`` compiled again from its source without the two lines of the autocast hook."""
    source = textwrap.dedent(inspect.getsource(linalg.matmul))
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if "_mp.active" in line)
    body = "from __future__ import annotations\n" + "\n".join(lines[:start] + lines[start + 2:])
    namespace = dict(vars(linalg))
    exec(compile(body, linalg.__file__, "exec"), namespace)
    return namespace["matmul"]


def test_autocast_hook_costs_nothing_when_off(benchmark):
    benchmark.group = "autocast hook, off (gg.matmul 2x2)"
    a = gg.ones((2, 2))
    plain = _unhooked_matmul()
    assert plain(a, a).numpy().tolist() == gg.matmul(a, a).numpy().tolist()
    run_interleaved(benchmark, {"hooked": lambda: gg.matmul(a, a), "unhooked": lambda: plain(a, a)},
                    workload="matmul 2x2 hook", block=200, cycles=30)
    times = benchmark.extra_info["interleaved"]
    assert times["hooked"]["median"] < 1.10 * times["unhooked"]["median"] + 1e-7
