"""gg.distributed: one process alone, and 2 or 3 ranks under ``mpiexec`` (MPICH's wheel, the extra).

The multi-process tests start ``mpiexec -n N`` themselves with a time limit; they need the
``distributed`` extra (``pip install -e '.[distributed]'``) and skip, saying so, without it.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpugrad as gg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIEXEC = next((p for p in (os.path.join(os.path.dirname(sys.executable), "mpiexec"), shutil.which("mpiexec"))
                if p and os.path.exists(p)), None)
HAVE_MPI = importlib.util.find_spec("mpi4py") is not None and MPIEXEC is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="mpi4py and mpiexec are not installed: "
                                                    "pip install -e '.[distributed]'")


def run_ranks(n, code, timeout=90, **extra_env):
    """``code`` run by ``n`` ranks under mpiexec (``extra_env`` added to the environment);
    ``(returncode, stdout, stderr)``."""
    env = {k: v for k, v in os.environ.items() if k != "GPUGRAD_DEVICE"}
    env.update(extra_env)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([MPIEXEC, "-n", str(n), sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


# --------------------------------------------------------------------------- one process


def test_alone_the_world_is_one_process_and_collectives_return_their_input():
    assert gg.distributed.init().size == 1 and gg.distributed.rank() == 0 and gg.distributed.local_rank() == 0
    x = gg.tensor([[1.0, 2.0]])
    for out in (gg.distributed.allreduce(x), gg.distributed.allreduce(x, op="sum"), gg.distributed.allgather(x),
                gg.distributed.broadcast(x)):
        assert out.numpy().tolist() == [[1.0, 2.0]] and out is not x
    assert gg.distributed.allreduce(gg.tensor(3.0)).shape == () and gg.distributed.broadcast(gg.tensor(3.0)).shape == ()
    gg.distributed.barrier()


def test_allreduce_refuses_an_unknown_op_and_broadcast_a_root_outside_the_world():
    with pytest.raises(ValueError, match="op"):
        gg.distributed.allreduce(gg.tensor([1.0]), op="prod")
    with pytest.raises(ValueError, match="root"):
        gg.distributed.broadcast(gg.tensor([1.0]), root=1)


def test_the_distributed_optimizer_alone_is_the_optimizer():
    w1, w2 = gg.Variable([1.0, -2.0]), gg.Variable([1.0, -2.0])
    plain, wrapped = gg.optimizers.Adam(0.1), gg.distributed.DistributedOptimizer(gg.optimizers.Adam(0.1))
    for _ in range(3):
        plain.minimize(lambda: gg.sum(w1 * w1 * w1), [w1])
        wrapped.minimize(lambda: gg.sum(w2 * w2 * w2), [w2])
    assert w1.numpy().tobytes() == w2.numpy().tobytes() and wrapped.iterations == 3


def test_buckets_fill_in_reverse_order_by_dtype_and_size():
    from gpugrad.distributed.optimizer import buckets
    arrays = [np.zeros(10, np.float32), np.zeros(10, np.float32), np.zeros(100, np.float32), np.zeros(3)]
    assert buckets(arrays, bucket_bytes=80) == [[3], [2], [1, 0]]


def test_shard_gives_every_item_once():
    n = 10
    parts = [list(gg.distributed.shard(n, rank=r, size=3)) for r in range(3)]
    assert sum(parts, []) == list(range(n)) and max(map(len, parts)) - min(map(len, parts)) <= 1


def test_launched_under_mpi_without_mpi4py_says_what_to_install(monkeypatch):
    from gpugrad.distributed import world
    monkeypatch.setattr(world, "_world", None)
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # import mpi4py fails
    with pytest.raises(gg.distributed.DistributedError, match=r"pip install 'gpugrad\[distributed\]'"):
        world.init()
    monkeypatch.setattr(world, "_world", None)


# --------------------------------------------------------------------------- ranks under mpiexec

TRAIN = """
import numpy as np, gpugrad as gg
world = gg.distributed.init()
rng = np.random.default_rng(0)
x_all = rng.standard_normal((48, 8)).astype(np.float32)
y_all = rng.integers(0, 4, 48)
model = gg.nn.Sequential(gg.nn.Dense(8, 16, activation="relu", seed=1), gg.nn.Dense(16, 4, seed=2))
gg.distributed.broadcast_variables(model.trainable_variables)
opt = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(0.1, momentum=0.9))
for step in range(5):
    rows = gg.distributed.shard(range(step * 12 % 48, step * 12 % 48 + 12))  # this rank's share of a global batch of 12
    x, y = gg.tensor(x_all[rows.start:rows.stop]), gg.tensor(y_all[rows.start:rows.stop])
    opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), model.trainable_variables)
weights = np.concatenate([v.numpy().ravel() for v in model.trainable_variables])
gathered = gg.distributed.allgather(gg.tensor(weights[None]))
if world.rank == 0:
    np.save(OUT, gathered.numpy())
"""


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_train_to_bitwise_identical_weights_equal_to_one_process(ranks, tmp_path):
    code, out, err = run_ranks(ranks, f"OUT = {str(tmp_path / 'w.npy')!r}\n" + TRAIN)
    assert code == 0, err[-3000:]
    per_rank = np.load(tmp_path / "w.npy")
    assert per_rank.shape[0] == ranks
    for r in range(1, ranks):
        assert per_rank[r].tobytes() == per_rank[0].tobytes()
    code, out, err = run_ranks(1, f"OUT = {str(tmp_path / 'one.npy')!r}\n" + TRAIN)
    assert code == 0, err[-3000:]
    # the mean of the ranks' mean gradients is the global batch's mean gradient when the shares are equal
    # (12 rows over 2 or 3 ranks): the same weights to float32 rounding
    np.testing.assert_allclose(per_rank[0], np.load(tmp_path / "one.npy")[0], rtol=1e-5, atol=1e-6)


@needs_mpi
def test_collectives_values_on_three_ranks():
    code, out, err = run_ranks(3, """
        import numpy as np, gpugrad as gg
        r = gg.distributed.init().rank
        t = gg.tensor([float(r), 10.0 * r])
        assert gg.distributed.allreduce(t, op="sum").numpy().tolist() == [3.0, 30.0]
        assert gg.distributed.allreduce(t).numpy().tolist() == [1.0, 10.0]
        assert gg.distributed.allreduce(t, op="max").numpy().tolist() == [2.0, 20.0]
        g = gg.distributed.allgather(gg.tensor(np.full((r + 1, 2), r, np.int64)))
        assert g.numpy().tolist() == [[0, 0], [1, 1], [1, 1], [2, 2], [2, 2], [2, 2]]
        assert gg.distributed.broadcast(gg.tensor([float(r)]), root=2).numpy().tolist() == [2.0]
        v = gg.Variable([float(r)])
        gg.distributed.broadcast_variables([v], root=1)
        assert v.numpy().tolist() == [1.0]
        gg.distributed.barrier()
        # edges, as NumPy's reductions over the ranks' arrays give them: a NaN anywhere wins min and max
        x = gg.tensor([[1.0, np.nan][r == 2], 5.0 - r, -np.inf if r == 1 else 0.0])
        every = np.array([[1.0, 5, 0], [1, 4, -np.inf], [np.nan, 3, 0]])
        for op, ref in (("max", np.maximum), ("min", np.minimum), ("sum", np.add)):
            assert np.array_equal(gg.distributed.allreduce(x, op=op).numpy(), ref.reduce(every), equal_nan=True), op
        assert gg.distributed.allreduce(gg.zeros((0, 3)), op="sum").shape == (0, 3)
        for collective in (gg.distributed.allreduce, gg.distributed.broadcast):  # 0-d stays 0-d, float64 stays
            scalar = collective(gg.tensor(float(r), dtype="float64"))
            assert scalar.shape == () and scalar.dtype == np.float64, (collective, scalar)
        assert gg.distributed.allgather(gg.zeros((r % 2, 2))).shape == (1, 2)
        print("ok")
    """)
    assert code == 0, err[-3000:]
    assert out.count("ok") == 3  # the ranks' lines may interleave


@needs_mpi
def test_a_shape_that_differs_across_ranks_names_the_ranks_and_the_variable():
    code, out, err = run_ranks(2, """
        import gpugrad as gg
        r = gg.distributed.init().rank
        try:
            gg.distributed.allreduce(gg.ones((2 + r,)), name="w")
        except gg.distributed.DistributedError as e:
            print("refused:", e)
    """)
    assert code == 0, err[-3000:]
    assert out.count("refused:") == 2 and "'w'" in out and "rank 0: float32 (2,)" in out and "rank 1: float32 (3,)" in out


@needs_mpi
def test_a_rank_that_raises_stops_the_others_instead_of_hanging():
    code, out, err = run_ranks(2, """
        import gpugrad as gg
        r = gg.distributed.init().rank
        if r == 1:
            raise RuntimeError("rank 1 fails here")
        gg.distributed.allreduce(gg.tensor([1.0]))  # rank 0 waits here for rank 1
        print("rank 0 went on")
    """, timeout=60)
    assert code != 0 and "rank 1 fails here" in err and "rank 0 went on" not in out


@needs_mpi
def test_gpugrad_train_under_mpiexec_trains_data_parallel_and_reports_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GPUGRAD_DEVICE"}
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "gpugrad", "train", "--no-progress", "--epochs",
                           "3", "--save", str(tmp_path / "w.npz")], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("test accuracy") == 1 and "on 2 ranks (cpu)" in done.stdout
    accuracy = float(done.stdout.split("test accuracy ")[1].split("%")[0])
    from gpugrad.training import train
    alone = train("mlp", epochs=3, device="cpu", progress=False)
    assert abs(accuracy - 100 * alone.test_accuracy) <= 1.0 and (tmp_path / "w.npz").exists()


@needs_mpi
def test_gpugrad_bench_under_mpiexec_prints_the_collectives_and_the_data_parallel_step():
    env = {k: v for k, v in os.environ.items() if k != "GPUGRAD_DEVICE"}
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "gpugrad", "bench"], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("allreduce (mean) of float32 on 2 ranks") == 1
    assert "65536 KiB" in done.stdout and "W4 step, global batch 256, 2 ranks: eager" in done.stdout


# --------------------------------------------------------------------------- the sweep's overlap, timeouts, None


def test_the_sweep_reports_each_source_once_when_its_gradient_is_final():
    a, b, c, unused = gg.Variable([1.0, 2.0]), gg.Variable(3.0), gg.Variable(5.0), gg.Variable(1.0)
    seen = []
    with gg.GradientTape() as tape:
        tape.watch(unused)  # watched, read by no op
        h = a * b  # a and b are read first: their gradients are final last
        y = gg.sum(h * c) + c  # c is read by the last two ops
    grads_at_report = {}

    def on_final(key, grad):
        seen.append(key)
        grads_at_report[key] = None if grad is None else grad.numpy().copy()
    result = tape._gradient(y, [a, b, c, unused], None, "none", on_final=on_final)
    assert sorted(seen) == sorted([id(a), id(b), id(c), id(unused)]) and len(seen) == 4
    assert seen.index(id(c)) < seen.index(id(a)) and seen.index(id(unused)) == 0  # unused: final before any op
    for v, g in zip([a, b, c], result):
        assert grads_at_report[id(v)].tobytes() == g.numpy().tobytes()  # reported final: nothing added after
    assert grads_at_report[id(unused)] is None and result[3] is None


def test_the_sweep_with_a_watch_gives_the_same_gradients_as_without():
    w = gg.Variable(np.linspace(-1, 1, 12).reshape(3, 4))
    x = gg.tensor(np.arange(8.0).reshape(2, 4))
    grads = []
    for watch in (None, lambda key, grad: None):
        with gg.GradientTape() as tape:
            loss = gg.sum(gg.tanh(gg.matmul(x, gg.transpose(w))) ** 2)
        grads.append(tape._gradient(loss, [w], None, "none", on_final=watch)[0].numpy().tobytes())
    assert grads[0] == grads[1]


def test_a_timeout_that_is_not_a_positive_number_is_refused_in_one_line(monkeypatch):
    from gpugrad.distributed import world
    for bad in ("soon", "-1", "0", "inf", "nan"):
        with pytest.raises(gg.distributed.DistributedError, match="GPUGRAD_DISTRIBUTED_TIMEOUT"):
            world.timeout_from(bad)
    assert world.timeout_from("0.5") == 0.5 and world.timeout_from(None) == 600.0


OVERLAP = """
import numpy as np, gpugrad as gg
world = gg.distributed.init()
rng = np.random.default_rng(world.rank)
x = gg.tensor(rng.standard_normal((16, 8)).astype(np.float32))
y = gg.tensor(rng.integers(0, 4, 16))
model = gg.nn.Sequential(gg.nn.Dense(8, 32, activation="relu", seed=1), gg.nn.Dense(32, 32, activation="relu", seed=2),
                         gg.nn.Dense(32, 4, seed=3))
variables = model.trainable_variables
def loss():
    return gg.softmax_cross_entropy(model(x), y)
results = []
for bucket_bytes in (600, 25 * 1024 * 1024):  # small buckets: several start while the sweep goes on
    with gg.distributed.DistributedGradientTape(gg.GradientTape(), bucket_bytes=bucket_bytes) as tape:
        value = loss()
    overlapped = tape.gradient(value, variables)
    with gg.GradientTape() as plain:
        value = loss()
    after = [g for g, _ in gg.distributed.optimizer.average_gradients(
        list(zip(plain.gradient(value, variables), variables)), bucket_bytes)]
    results.append([g.numpy() for g in overlapped])
    assert all(a.numpy().tobytes() == b.tobytes() for a, b in zip(after, results[-1]))
assert all(a.tobytes() == b.tobytes() for a, b in zip(*results))
everyone = gg.distributed.allgather(gg.tensor(np.concatenate([g.ravel() for g in results[0]])[None]))
assert all(row.tobytes() == everyone.numpy()[0].tobytes() for row in everyone.numpy())
mine = np.concatenate([g.ravel() for g in results[0]])
with gg.GradientTape() as alone:
    value = loss()
local = np.concatenate([g.numpy().ravel() for g in alone.gradient(value, variables)])
total = gg.distributed.allreduce(gg.tensor(local), op="sum").numpy()
np.testing.assert_allclose(mine, total / world.size, rtol=1e-6, atol=1e-7)
print("ok")
"""


@needs_mpi
def test_buckets_reduced_during_the_sweep_give_the_bits_of_buckets_reduced_after_it():
    code, out, err = run_ranks(2, OVERLAP)
    assert code == 0, err[-3000:]
    assert out.count("ok") == 2


@needs_mpi
def test_a_rank_that_never_joins_the_collective_makes_the_others_stop_within_the_timeout():
    import time
    start = time.monotonic()
    code, out, err = run_ranks(2, """
        import time, gpugrad as gg
        world = gg.distributed.init(timeout=3)
        if world.rank == 1:
            time.sleep(60)  # hangs without raising
        gg.distributed.allreduce(gg.tensor([1.0]))
        print("went on")
    """, timeout=50)
    took = time.monotonic() - start
    assert code != 0 and "went on" not in out and took < 40, (took, err[-2000:])
    assert "rank 0 of 2 waited 3 s in allreduce" in err and "GPUGRAD_DISTRIBUTED_TIMEOUT" in err


@needs_mpi
def test_a_gradient_that_is_none_on_one_rank_only_raises_on_every_rank():
    code, out, err = run_ranks(2, """
        import gpugrad as gg
        world = gg.distributed.init()
        a, b = gg.Variable([1.0, 2.0], name="a"), gg.Variable(3.0, name="b")
        opt = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(0.1))
        try:
            opt.minimize(lambda: gg.sum(a * b) if world.rank == 0 else gg.sum(a * 2.0), [a, b])
        except gg.distributed.DistributedError as e:
            print("refused:", e)
        c = gg.Variable(1.0, name="c")  # None on every rank stays None
        pairs = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(0.1)).compute_gradients(lambda: gg.sum(a), [a, c])
        assert pairs[1][0] is None and pairs[0][0].numpy().tolist() == [1.0, 1.0]
        print("none ok")
    """)
    assert code == 0, err[-3000:]
    assert out.count("refused:") == 2 and "variable 'b' is None on 1 of 2 ranks" in out
    assert out.count("none ok") == 2


@needs_mpi
def test_gradients_of_gather_and_embedding_lookups_are_averaged_dense():
    code, out, err = run_ranks(2, """
        import numpy as np, gpugrad as gg
        world = gg.distributed.init()
        table = gg.Variable(np.arange(12.0).reshape(6, 2), name="table")
        rows = gg.tensor([0, 0, 3] if world.rank == 0 else [5])  # each rank looks up other rows
        opt = gg.distributed.DistributedOptimizer(gg.optimizers.SGD(1.0))
        (g, _), = opt.compute_gradients(lambda: gg.sum(gg.gather(table, rows)), [table])
        # rank 0: 2 at row 0, 1 at row 3; rank 1: 1 at row 5; averaged over 2
        assert g.numpy().tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.5, 0.5], [0.0, 0.0], [0.5, 0.5]], g
        print("gather ok")
    """)
    assert code == 0, err[-3000:]
    assert out.count("gather ok") == 2, out


# --------------------------------------------------------------------------- GPU tensors: NCCL

NCCL = """
import numpy as np, gpugrad as gg
world = gg.distributed.init()
r = world.rank
with gg.device("cuda"):
    t = gg.tensor([float(r), 10.0 * r])
    s = gg.distributed.allreduce(t, op="sum")
    assert s.device.startswith("cuda") and s.numpy().tolist() == [1.0, 10.0]
    assert gg.distributed.allreduce(t).numpy().tolist() == [0.5, 5.0]
    assert gg.distributed.allreduce(t, op="max").numpy().tolist() == [1.0, 10.0]
    nan = gg.distributed.allreduce(gg.tensor([np.nan if r == 0 else 1.0, 2.0]), op="max").numpy()
    assert np.isnan(nan[0]) and nan[1] == 2.0  # a NaN on any rank wins, as NumPy's maximum
    g = gg.distributed.allgather(gg.tensor(np.full((r + 1, 2), r, np.int64)))
    assert g.device.startswith("cuda") and g.numpy().tolist() == [[0, 0], [1, 1], [1, 1]]
    assert gg.distributed.broadcast(gg.tensor([float(r)]), root=1).numpy().tolist() == [1.0]
    rng = np.random.default_rng(0)
    x_all = rng.standard_normal((24, 8)).astype(np.float32)
    y_all = rng.integers(0, 4, 24)
    model = gg.nn.Sequential(gg.nn.Dense(8, 16, activation="relu", seed=1), gg.nn.Dense(16, 4, seed=2))
    if r == 1:
        model.trainable_variables[0].assign(gg.zeros((8, 16)))  # broadcast_variables must undo this
    gg.distributed.broadcast_variables(model.trainable_variables)
    opt = gg.distributed.DistributedOptimizer(gg.optimizers.Adam(0.01), bucket_bytes=512)
    for step in range(4):
        rows = gg.distributed.shard(range(0, 24))
        x, y = gg.tensor(x_all[rows.start:rows.stop]), gg.tensor(y_all[rows.start:rows.stop])
        opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), model.trainable_variables)
    weights = gg.concat([gg.reshape(v, (-1,)) for v in model.trainable_variables], axis=0)
    assert weights.device.startswith("cuda")
    everyone = gg.distributed.allgather(gg.reshape(weights, (1, -1))).numpy()
    assert everyone[0].tobytes() == everyone[1].tobytes()
print("nccl ok")
"""


def nccl_refused_one_gpu(code, out, err, gpus):
    """Why a failed NCCL run of two ranks is NCCL refusing to put both on one GPU, or ``""`` when it is not.

    NCCL prints ``Duplicate GPU detected`` only with ``NCCL_DEBUG=WARN`` (which the run sets), and to
    stdout; CuPy's ``NcclError`` then says ``NCCL_ERROR_INVALID_USAGE`` on stderr. Invalid usage with
    two or more GPUs is a fault of the caller, not a skip.
    """
    if code == 0:
        return ""
    if "Duplicate GPU" in out or "Duplicate GPU" in err:
        return "NCCL refuses two ranks on one GPU (NCCL WARN: Duplicate GPU detected)"
    if "NCCL_ERROR_INVALID_USAGE" in err and gpus == 1:
        return "NCCL refuses two ranks on the one GPU here (NCCL_ERROR_INVALID_USAGE from ncclCommInitRank)"
    return ""


def test_the_nccl_skip_reads_nccls_warning_on_stdout_and_cupys_error_text():
    warn = "host:1:1 [1] init.cc:491 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n"
    cupy_error = ("cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_INVALID_USAGE: invalid usage "
                  "(run with NCCL_DEBUG=WARN for details)\n")
    assert "Duplicate GPU" in nccl_refused_one_gpu(1, warn, cupy_error, gpus=1)  # NCCL's own words, on stdout
    assert "NCCL_ERROR_INVALID_USAGE" in nccl_refused_one_gpu(1, "", cupy_error, gpus=1)  # without NCCL_DEBUG
    assert nccl_refused_one_gpu(1, "", cupy_error, gpus=2) == ""  # two GPUs: invalid usage is a fault
    assert nccl_refused_one_gpu(1, "", "Traceback ... AssertionError\n", gpus=1) == ""  # other failures fail
    assert nccl_refused_one_gpu(0, warn, "", gpus=1) == ""  # a run that passed is not skipped


@pytest.mark.gpu
@needs_mpi
def test_gpu_tensors_reduce_over_nccl_and_ranks_train_to_identical_weights():
    code, out, err = run_ranks(2, NCCL, timeout=120, NCCL_DEBUG="WARN")
    reason = nccl_refused_one_gpu(code, out, err, sum(d.startswith("cuda") for d in gg.devices()))
    if reason:
        pytest.skip(reason)
    assert code == 0, err[-3000:]
    assert out.count("nccl ok") == 2


@needs_mpi
def test_a_loss_scale_optimizer_under_the_distributed_one_scales_and_gives_the_unscaled_bits():
    code, out, err = run_ranks(2, """
        import numpy as np, gpugrad as gg
        world = gg.distributed.init()
        rng = np.random.default_rng(world.rank)
        x, y = gg.tensor(rng.standard_normal((8, 4)).astype(np.float32)), gg.tensor(rng.integers(0, 3, 8))
        results = []
        for scaled in (False, True):
            model = gg.nn.Dense(4, 3, seed=1)
            inner = gg.optimizers.SGD(0.1, momentum=0.9)
            if scaled:
                inner = gg.optimizers.LossScaleOptimizer(inner, initial_scale=2.0 ** 10, growth_interval=2)
            opt = gg.distributed.DistributedOptimizer(inner)
            for _ in range(3):
                opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), model.trainable_variables)
            results.append(np.concatenate([v.numpy().ravel() for v in model.trainable_variables]))
        # scaling by a power of two and back is exact: the same bits, and the scale grew once
        assert results[0].tobytes() == results[1].tobytes()
        assert inner.loss_scale == 2.0 ** 11 and inner.counter == 1
        print("scaled ok")
    """)
    assert code == 0, err[-3000:]
    assert out.count("scaled ok") == 2
