"""Allreduce bandwidth and the data-parallel W4 step, under ``mpiexec -n N``.

Run ``mpiexec -n 2 python benchmarks/distributed_bench.py`` (with the ``distributed`` extra):
rank 0 prints the allreduce (mean) of float32 tensors of 4 KiB to 64 MiB (median of repeats,
algorithm bandwidth = bytes / time) and the W4 step (MLP 512-1024-1024-10, global batch 256,
SGD, gradients averaged by ``DistributedOptimizer``) per step: eager with the buckets reduced during
the sweep and after it, and through ``gg.function``.
"""
import time

import numpy as np

import gpugrad as gg

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def _median_seconds(fn, repeats):
    times = []
    for _ in range(repeats):
        gg.distributed.barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def allreduce_table():
    rows = []
    for nbytes in SIZES:
        t = gg.tensor(np.ones(nbytes // 4, np.float32))
        seconds = _median_seconds(lambda: gg.distributed.allreduce(t), 20 if nbytes < (16 << 20) else 5)
        rows.append((nbytes, seconds))
    return rows


def w4_step_seconds(mode):
    """The W4 step's median seconds: ``"overlap"`` (``minimize``: buckets reduce while the sweep runs),
    ``"after"`` (the sweep, then every bucket), ``"function"`` (``minimize`` through gg.function)."""
    world = gg.distributed.init()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 512)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    rows = gg.distributed.shard(256)
    xb, yb = gg.tensor(x[rows.start:rows.stop]), gg.tensor(y[rows.start:rows.stop])
    layers = [gg.nn.Dense(512, 1024, activation="relu", seed=1), gg.nn.Dense(1024, 1024, activation="relu", seed=2),
              gg.nn.Dense(1024, 10, seed=3)]
    model = gg.nn.Sequential(*layers)
    opt = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(0.01))
    variables = model.trainable_variables

    def step():
        return opt.minimize(lambda: gg.softmax_cross_entropy(model(xb), yb), variables)

    def step_reducing_after_the_sweep():
        with gg.GradientTape() as tape:
            loss = gg.softmax_cross_entropy(model(xb), yb)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss
    fn = {"overlap": step, "after": step_reducing_after_the_sweep, "function": gg.function(step)}[mode]
    for _ in range(3):
        fn()
    del world
    return _median_seconds(fn, 20)


def main():
    world = gg.distributed.init()
    table = allreduce_table()
    overlap, after, traced = w4_step_seconds("overlap"), w4_step_seconds("after"), w4_step_seconds("function")
    if world.rank == 0:
        print(f"allreduce (mean) of float32 on {world.size} ranks:")
        for nbytes, seconds in table:
            print(f"  {nbytes / 1024:>8.0f} KiB  {seconds * 1e6:>10.1f} us  {nbytes / seconds / 1e9:6.2f} GB/s")
        print(f"W4 step, global batch 256, {world.size} ranks: eager {overlap * 1e3:.2f} ms (buckets reduced "
              f"during the sweep; {after * 1e3:.2f} ms reduced after it), gg.function {traced * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
