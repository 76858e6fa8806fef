"""benchmarks/gpu_jit.py, the ``jit`` part of benchmarks/device_run.sh: its smoke mode runs every row on the GPU
present (on CI the CuPy stand-in, in tests/test_gpu_paths_on_host.py's run of the ``gpu`` tests), so the script
cannot first break on a lent GPU; and it judges a fused kernel's bandwidth against 80 % of the copy's."""
import re

import pytest

import gpugrad as gg
from benchmarks import gpu_jit

GPU_PRESENT = any(d.startswith("cuda") for d in gg.devices())


@pytest.mark.gpu
def test_the_smoke_mode_prints_every_figure_and_fuses_the_chain(capsys):
    assert gpu_jit.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(line.startswith("jit  ") for line in lines), out
    assert re.search(r"^jit  copy 4096 float32 +\d+\.\d+ ms +\d+ GB/s", out, re.M), out
    for name in ("W3 4096", "chain of 10 ops 4096"):
        for impl in ("gg.function(jit)", "gg.function", "cupy by hand"):
            assert re.search(rf"^jit  {re.escape(name)}  {re.escape(impl)} +\d+\.\d+ ms +\d+ GB/s +\d+ % of copy$",
                             out, re.M), (name, impl, out)
        assert re.search(rf"^jit  {re.escape(name)}  jit/unfused = \d+\.\d\d, jit/cupy = \d+\.\d\d$", out, re.M), out
        assert "DISAGREES" not in out and "target" not in out  # the smoke mode judges nothing
    # the ten ops are one generated kernel: the chain's bandwidth is that of one fused region
    assert re.search(r"^jit  chain of 10 ops 4096  gg\.function\(jit\) plan: .*fused: 1 regions? \(10 ops", out,
                     re.M), out
    for impl in ("gpugrad eager", "gg.function", "gg.function(jit)", "cupy by hand"):
        assert re.search(rf"^jit  W2 MLP step  {re.escape(impl)} +\d+\.\d+ ms/step", out, re.M), (impl, out)
    assert re.search(r"^jit  W2 MLP step  (torch \S+ eager +\d+\.\d+ ms/step|torch: not measured: .+)$", out, re.M)
    assert lines[-1].startswith("jit  done in ")


def test_a_fused_row_is_judged_against_eighty_percent_of_the_copy_bandwidth():
    # 8 GB in 2 ms is 4000 GB/s: 80 % of a 5000 GB/s copy passes, 79 % of a 5063 GB/s one does not
    assert gpu_jit.kernel_line("W3", "jit", 2.0, 8e9, 5000.0, judge=True).endswith("(target >= 80 %: ok)")
    missed = gpu_jit.kernel_line("W3", "jit", 2.0, 8e9, 5063.0, judge=True)
    assert " 79 % of copy" in missed and missed.endswith("(target >= 80 %: MISS)")
    assert "target" not in gpu_jit.kernel_line("W3", "unfused", 2.0, 8e9, 5000.0, judge=False)


@pytest.mark.skipif(GPU_PRESENT, reason="a GPU is present: the run goes ahead (the gpu test above runs it)")
def test_without_a_gpu_it_exits_2_with_one_line(capsys):
    assert gpu_jit.main(["--smoke"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "no GPU" in captured.err
