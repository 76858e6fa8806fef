"""Host synchronisations on a training step's path, counted on the stand-in CuPy, and where a range check raises.

On a GPU every device-to-host read (``.get()``, ``.item()``, ``bool()`` of a device array ...) waits for
the stream to drain. The stand-in counts them (``cupy._transfers.counting()``), so these tests can say
how many a step makes: none for the digits MLP and CNN steps, eager and under ``gg.function``, nor for a
DistributedOptimizer step; one for a LossScaleOptimizer step (its finite check, which decides the
wrapped optimizer's host step count: ``gpugrad/optimizers/loss_scale.py``). Label and index range
checks on the GPU keep their verdict on the device and raise at the thread's next host read of a GPU tensor
(``gpugrad/_device_checks.py``); on the CPU they raise at the op, eager or replayed.
"""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpugrad as gg
from gpugrad import _device_checks
from tests.conftest import NO_CXX

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_cxx = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None, reason=NO_CXX)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A process whose ``cupy`` is the stand-in (as tests/test_gpu_paths_on_host.py runs it), one kernel cache
    for the module's runs."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("GPUGRAD_DEVICE", "GPUGRAD_STAND_IN_CUPY", "GPUGRAD_STAND_IN_RECORD")}
    env.update(PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "stand_in_cupy"), ROOT]),
               CUPY_CACHE_DIR=str(tmp_path_factory.mktemp("stand_in") / "cupy"), GPUGRAD_STAND_IN_CUPY="1")
    return env


def run_python(code, env):
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


# --------------------------------------------------------------------------- the CPU: at the op


def test_on_the_cpu_a_bad_label_raises_at_the_op_eager_and_in_a_replay():
    logits = gg.tensor(np.zeros((2, 3), np.float32))
    with pytest.raises(gg.IndexOutOfRangeError, match=r"'SoftmaxCrossEntropy' got label 3, outside \[0, 3\)"):
        gg.softmax_cross_entropy(logits, gg.tensor([0, 3]))
    step = gg.function(lambda x, y: gg.softmax_cross_entropy(x, y))
    good = step(logits, gg.tensor([0, 2])).item()
    assert good == pytest.approx(np.log(3.0))
    with pytest.raises(gg.IndexOutOfRangeError, match="got label -1"):
        step(logits, gg.tensor([-1, 2]))  # the replay checks its labels on the host, at the step
    assert not _device_checks.pending  # nothing is left for a later read on the CPU


def test_host_checks_find_the_first_bad_value_and_leave_nothing_pending():
    _device_checks.check(np.array([0, 2, -3], np.int32), -3, 3, "unused {value}")
    with pytest.raises(gg.IndexOutOfRangeError, match="index 3 of"):
        _device_checks.check(np.array([0, 3, -4], np.int64), -3, 3, "index {value} of [-3, 3)")
    with pytest.raises(gg.IndexOutOfRangeError, match="id 9"):
        _device_checks.check(np.array([9], np.uint8), 0, 3, "id {value}")
    assert not _device_checks.pending


# --------------------------------------------------------------------------- the stand-in GPU: counted


@pytest.mark.slow
def test_the_stand_in_counts_every_device_to_host_transfer(env):
    run_python("""
        import pickle
        import numpy as np, cupy
        a = cupy.asarray(np.arange(4.0))
        with cupy._transfers.counting() as seen:
            b = cupy.exp(a) + a * 2  # device work: nothing moves
            c = b.sum()
        assert seen == [], seen
        with cupy._transfers.counting() as seen:
            a.get(); cupy.asnumpy(a); c.item(); a.tolist(); bool(c > 0); float(c); int(c); complex(c)
            repr(a); a.tobytes()
        assert [what for what, _ in seen] == ["get", "get", "item", "tolist", "bool()", "float()", "int()",
                                              "complex()", "repr()", "tobytes"], seen
        assert all(where.startswith("<string>:") for _, where in seen), seen  # the caller, not the stand-in
        with cupy._transfers.counting() as outer:
            with cupy._transfers.counting() as inner:
                a.get()
        assert len(outer) == len(inner) == 1
    """, env)


STEPS = """
    import collections
    import numpy as np, cupy
    import gpugrad as gg
    from gpugrad import training
    from gpugrad.optimizers import LossScaleOptimizer

    def run(model, eager, scaled=False, n=3):
        dev = gg.backend.get_device("cuda")
        net = training.build_model(model, 0, dev)
        opt = training.build_optimizer("adam", 1e-3)
        if scaled:
            opt = LossScaleOptimizer(opt)
        x, y, _, _ = training.standardized_digits(model == "mlp", dev)
        variables = net.trainable_variables

        def train_step(xb, yb):
            return opt.minimize(lambda: gg.softmax_cross_entropy(net(xb), yb), variables)
        step = train_step if eager else gg.function(train_step)
        batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 32 * (n + 1), 32)]
        step(*batches[0]).numpy()  # the trace, or a first eager step
        with cupy._transfers.counting() as seen:
            for xb, yb in batches[1:]:
                step(xb, yb)
        weights = np.concatenate([v.numpy().ravel() for v in variables])
        return collections.Counter(seen), weights
"""


@pytest.mark.slow
@needs_cxx
def test_digits_mlp_and_cnn_steps_read_nothing_back_eager_and_under_function_with_eager_bits(env):
    run_python(STEPS + """
    for model in ("mlp", "cnn"):
        seen_eager, eager = run(model, eager=True)
        seen_traced, traced = run(model, eager=False)
        assert not seen_eager and not seen_traced, (model, seen_eager, seen_traced)
        assert eager.tobytes() == traced.tobytes(), model  # the replayed steps give eager's bits
    """, env)


@pytest.mark.slow
@needs_cxx
def test_a_loss_scaled_step_reads_back_one_value_its_finite_check(env):
    run_python(STEPS + """
    for eager in (True, False):
        seen, _ = run("mlp", eager=eager, scaled=True)
        assert sum(seen.values()) == 3, seen  # one per step, at the finite check
        assert all(what == "float()" and where.startswith("gpugrad/optimizers/loss_scale.py:")
                   for what, where in seen), seen
    """, env)


@pytest.mark.slow
def test_on_the_gpu_range_checks_raise_at_the_next_host_read_naming_the_op(env):
    run_python("""
        import numpy as np, cupy, pytest
        import gpugrad as gg

        def raised_at_read(make, match):
            with cupy._transfers.counting() as seen:
                out = make()  # no error and no read here
            assert seen == [], seen
            with pytest.raises(gg.IndexOutOfRangeError, match=match):
                out.numpy()
            out.numpy()  # raised once: the check is done with

        logits = gg.tensor(np.zeros((2, 3), np.float32), device="cuda")
        raised_at_read(lambda: gg.softmax_cross_entropy(logits, gg.tensor([0, 5], device="cuda")),
                       r"'SoftmaxCrossEntropy' got label 5, outside \\[0, 3\\).*next host read")
        raised_at_read(lambda: gg.softmax_cross_entropy(logits, gg.tensor([-2, 0], "int32", device="cuda")),
                       "got label -2")
        x = gg.tensor(np.arange(6.0).reshape(2, 3), device="cuda")
        raised_at_read(lambda: gg.take(x, gg.tensor([0, -7], device="cuda")), "'Take': index -7 is out of bounds")
        raised_at_read(lambda: gg.gather(x, gg.tensor([3], device="cuda"), axis=1), "'Gather': index 3 .* axis 1")
        raised_at_read(lambda: x[gg.tensor([2], device="cuda")], "'GetItem': index 2 .* axis 0 with size 2")
        raised_at_read(lambda: gg.embedding(gg.tensor([[2]], "uint8", device="cuda"), x),
                       r"'Embedding': id 2 is outside \\[0, 2\\)")
        # in range: nothing raises, and the values are NumPy's
        assert gg.take(x, gg.tensor([0, -6, 5], device="cuda")).numpy().tolist() == [0.0, 0.0, 5.0]
        # labels given on the host are checked there, at the op
        with pytest.raises(gg.IndexOutOfRangeError, match="got label 7"):
            gg.softmax_cross_entropy(logits, [0, 7])
        # a replay under gg.function: the check runs in every replay, its verdict read at the next host read
        step = gg.function(lambda x, y: gg.softmax_cross_entropy(x, y))
        step(logits, gg.tensor([0, 1], device="cuda")).numpy()
        raised_at_read(lambda: step(logits, gg.tensor([0, 3], device="cuda")), "got label 3")
        # the verdict is the thread's: a read of any GPU tensor raises it (a CPU tensor's read is no sync)
        gg.softmax_cross_entropy(logits, gg.tensor([9, 0], device="cuda"))
        assert gg.tensor([1.0], device="cpu").item() == 1.0
        with pytest.raises(gg.IndexOutOfRangeError, match="got label 9"):
            x.numpy()
    """, env)


MPI = os.path.join(os.path.dirname(sys.executable), "mpiexec")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(MPI) or subprocess.run([sys.executable, "-c", "import mpi4py"]).returncode,
                    reason="mpi4py and mpiexec are not installed: pip install -e '.[distributed]'")
def test_a_distributed_step_reads_nothing_back_per_bucket(env):
    code = """
        import numpy as np, cupy, gpugrad as gg
        gg.distributed.init()
        model = gg.nn.Sequential(gg.nn.Dense(8, 16, activation="relu", seed=1, device="cuda"),
                                 gg.nn.Dense(16, 4, seed=2, device="cuda"))
        opt = gg.distributed.DistributedOptimizer(gg.optimizers.Adam(0.01), bucket_bytes=512)  # several buckets
        x, y = gg.tensor(np.ones((4, 8), np.float32), device="cuda"), gg.tensor([0, 1, 2, 3], device="cuda")
        opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), model.trainable_variables)
        with cupy._transfers.counting() as seen:
            opt.minimize(lambda: gg.softmax_cross_entropy(model(x), y), model.trainable_variables)
        assert seen == [], seen
        print("none read")
    """
    done = subprocess.run([MPI, "-n", "2", sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("none read") == 2
