"""benchmarks/device_run.sh, the lent GPU machine's one command: it parses, its parts' budgets fit a 10-minute call
with time to spare, and a run (with stub programs in place of Python and nvidia-smi) prints one summary line per
part and writes its figures to one file."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "device_run.sh")
PARTS = ("environment", "tests+G1", "training", "jit", "benchmarks", "ratios")
CALL_LIMIT = 10 * 60  # seconds a command may run on the lent machine
SPARE = 100  # seconds of it left for the start-up and the copy back
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="the script is a bash script; no bash here")


@needs_bash
def test_the_device_script_parses_and_its_budgets_fit_a_ten_minute_call_with_time_to_spare():
    subprocess.run(["bash", "-n", SCRIPT], check=True)
    plan = subprocess.run(["bash", SCRIPT], env={**os.environ, "DEVICE_RUN_DRY": "1"}, capture_output=True,
                          text=True, check=True, timeout=30).stdout
    budgets = {name: int(s) for name, s in re.findall(r"^  (\S+)\s+(\d+) s$", plan, re.M)}
    assert tuple(budgets) == PARTS
    deadline = int(re.search(r"deadline (\d+) s", plan).group(1))
    assert sum(budgets.values()) <= deadline <= CALL_LIMIT - SPARE


@needs_bash
def test_a_device_run_prints_one_line_per_part_and_writes_one_figures_file(tmp_path):
    from benchmarks.gpu_jit import kernel_line

    jit_lines = [kernel_line("W3 64 Mi", "gg.function(jit)", 2.0, 8e9, 5000.0, judge=True),  # 80 %: ok
                 kernel_line("W3 64 Mi", "gg.function", 4.0, 8e9, 5000.0, judge=False),
                 kernel_line("chain of 10 ops 64 Mi", "gg.function(jit)", 4.0, 8e9, 5000.0, judge=True)]  # 40 %
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "nvidia-smi").write_text("#!/bin/bash\necho 'GPU 0: stub'\n")
    (stubs / "python3").write_text("""#!/bin/bash
case "$*" in
  *gpu_check.py*) echo "== summary"; echo "GPU tests  passed  1.0 s  3 passed in 1.0s"; echo; echo "G1 table" ;;
  *ratios.py*) echo "W1 cuda ratio 0.5" ;;
  *gpu_jit*) printf '%s\\n' "jit  copy 64 Mi float32" JIT_LINES ;;
  "-m pytest"*) echo "==== 2 passed in 1.0s ====" ;;
  -) cat > /dev/null; echo "train: mlp: test accuracy 97.00% (stub)" ;;
  *) echo "cupy 14.2.0 numpy 2.5.0" ;;
esac
""".replace("JIT_LINES", " ".join(f"'{line}'" for line in jit_lines)))
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    out = tmp_path / "out"
    done = subprocess.run(["bash", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "OUT": str(out)})
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("== ")]
    assert [line.split()[1] for line in lines] == list(PARTS)
    assert sorted(p.name for p in out.iterdir()) == ["figures.txt", "logs"]
    figures = (out / "figures.txt").read_text()
    for needed in ("G1 table", "train: mlp", "W1 cuda ratio", "2 passed", "jit  copy 64 Mi float32", *jit_lines):
        assert needed in figures
    # the jit part's summary line: each judged row's % of the copy bandwidth and its verdict
    assert lines[PARTS.index("jit")].startswith(
        "== jit          rc=0; W3 64 Mi 80 % of copy ok;chain of 10 ops 64 Mi 40 % of copy MISS ("), lines
