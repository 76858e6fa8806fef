"""One training step per precision: the W4-style MLP (64-256-256-10, batch 64, Adam) and the digits CNN.

Rows: float32, mixed16 (``gg.autocast("float16")`` + ``LossScaleOptimizer``) and bf16
(``gg.autocast("bfloat16")``), each through ``gg.function`` with the autocast block around the call,
as ``gpugrad train --precision`` runs them. On the CPU the low-precision rows show that the step
runs and what the casts cost (NumPy has no fast float16 product; gpugrad computes it in float32
from rounded inputs); on a GPU they show the tensor cores' speed.

``test_autocast_hook_costs_nothing_when_off`` times ``gg.matmul`` of 2x2 tensors against the same
function compiled without its hook line, in one process, interleaved.
"""
import contextlib
import inspect
import textwrap

import pytest

import gpugrad as gg
from gpugrad.ops import linalg
from gpugrad.training import build_model, standardized_digits

from .conftest import device_params, run, run_interleaved, synchronize

PRECISIONS = {"float32": None, "mixed16": "float16", "bf16": "bfloat16"}
ROUNDS, WARMUP = 20, 3


def _step(model_name, precision, device):
    net = build_model(model_name, seed=0, device=device)
    opt = gg.optimizers.Adam(1e-3)
    if precision == "mixed16":
        opt = gg.optimizers.LossScaleOptimizer(opt)
    low = PRECISIONS[precision]
    x_train, y_train, _, _ = standardized_digits(model_name == "mlp", device)
    xb, yb = x_train[:64], y_train[:64]
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


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("device", device_params())
@pytest.mark.parametrize("model_name", ["mlp", "cnn"])
def test_training_step_per_precision(benchmark, model_name, precision, device):
    benchmark.group = f"training step per precision ({model_name}, batch 64, Adam)"
    call = _step(model_name, precision, device)
    loss = run(benchmark, call, workload=f"{'W4' if model_name == 'mlp' else 'CNN'} {precision}", impl="gpugrad-function",
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
