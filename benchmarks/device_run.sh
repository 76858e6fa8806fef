#!/usr/bin/env bash
# The one command to run on a lent GPU machine (repository root, gpugrad not installed):
#   bash benchmarks/device_run.sh            # DEVICE_RUN_DRY=1 prints the plan and the budgets, runs nothing
# Parts, in order, each with a time limit cut from one deadline (TOTAL, 490 s: a 10-minute call with more than
# 100 s to spare for the start-up and the copying back), so a part that hangs cannot push the run past it:
#   1 environment  nvidia-smi, Python, NumPy, CuPy, ml_dtypes                                  10 s
#   2 tests+G1     benchmarks/gpu_check.py: tests/test_gpu.py, benchmark G1, the gradient table
#                  and the other gpu-marked tests on cuda                                     215 s
#   3 training     gpugrad.training.train: MLP and CNN on cuda, MLP on the CPU                  95 s
#   4 jit          benchmarks/gpu_jit.py: gg.function(jit_compile=True) on cuda: the copy bandwidth,
#                  W3 and a 10-op chain over 64 Mi float32 as % of it (target >= 80 %), the
#                  digits-MLP step fused against eager gpugrad, CuPy by hand and PyTorch CUDA      50 s
#   5 benchmarks   W1, W3, the large gradient and the precision steps (pytest-benchmark, about
#                  1 s of timed rounds each: --gpugrad-max-time 1.0)                           110 s
#   6 ratios       benchmarks/ratios.py on the benchmark JSON                                   5 s
# NumPy: whatever the machine has (2.4 and 2.5 both run). The suite's pyproject turns DeprecationWarnings
# raised from gpugrad into errors (filterwarnings); here pytest runs with -W default::DeprecationWarning, so a
# NumPy newer than CI's shows its deprecations as warnings (counted on the summary line) instead of failing tests.
# Output: one summary line per part on stdout; the figures (those lines, G1's table, the training results,
# the jit figures, the benchmark medians and ratios) in $OUT/figures.txt; each part's full log in $OUT/logs/.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD" CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-/tmp/cupycache}"
out="${OUT:-/tmp/gpugrad-device-run}"
TOTAL="${DEVICE_RUN_TOTAL:-490}"
PARTS=("environment:10" "tests+G1:215" "training:95" "jit:50" "benchmarks:110" "ratios:5")
WARN=(-W default::DeprecationWarning)

if [ "${DEVICE_RUN_DRY:-0}" = "1" ]; then
    echo "device_run.sh plan (deadline ${TOTAL} s; each part gets min(its budget, what the deadline leaves)):"
    sum=0
    for p in "${PARTS[@]}"; do printf '  %-12s %4s s\n' "${p%%:*}" "${p##*:}"; sum=$((sum + ${p##*:})); done
    echo "  total budget ${sum} s; output: $out/figures.txt and $out/logs/"
    exit 0
fi

mkdir -p "$out/logs"
figures="$out/figures.txt"
: > "$figures"
start=$SECONDS

budget() {  # the seconds part $1 may take: its own budget, cut to what the deadline leaves after the later parts
    local name=$1 own=0 later=0 seen=0 p
    for p in "${PARTS[@]}"; do
        if [ "$seen" = 1 ]; then later=$((later + ${p##*:})); fi
        if [ "${p%%:*}" = "$name" ]; then own=${p##*:}; seen=1; fi
    done
    local left=$((TOTAL - (SECONDS - start) - later))
    [ "$left" -lt "$own" ] && own=$left
    [ "$own" -lt 5 ] && own=5
    echo "$own"
}

summary() {  # one line per part: printed, and the first lines of the figures file
    local line
    line=$(printf '%-12s %s (%d s, %d s into the run)' "$1" "$2" "$3" $((SECONDS - start)))
    echo "== $line"
    echo "$line" >> "$out/summary.txt"
}

: > "$out/summary.txt"

# 1 environment
t0=$SECONDS
{
    nvidia-smi -L
    timeout "$(budget environment)" python3 -c \
        "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
    python3 -c "import ml_dtypes; print('ml_dtypes', ml_dtypes.__version__)" 2>/dev/null \
        || echo "no ml_dtypes: bfloat16 tests skip"
} > "$out/logs/environment.log" 2>&1
summary environment "$(tr '\n' ';' < "$out/logs/environment.log" | sed 's/;$//')" $((SECONDS - t0))

# 2 tests, then G1 (gpu_check keeps its own inner budget a little under this part's limit)
t0=$SECONDS
b=$(budget tests+G1)
OUT="$out/logs/gpu_check" timeout "$b" python3 benchmarks/gpu_check.py --quiet --budget $((b - 8)) \
    --pytest-arg=-W --pytest-arg=default::DeprecationWarning > "$out/logs/gpu_check.log" 2>&1
rc=$?
deprecations=$(cat "$out"/logs/gpu_check/*.log 2>/dev/null | grep -c "DeprecationWarning")
parts=$(sed -n '/^== summary/,/^$/p' "$out/logs/gpu_check.log" | sed '1d;/^$/d' | awk '{$1=$1};1' | paste -sd';' -)
summary tests+G1 "rc=$rc; ${parts:-no summary (see logs/gpu_check.log)}; ${deprecations} DeprecationWarning lines" \
    $((SECONDS - t0))

# 3 training runs
t0=$SECONDS
timeout "$(budget training)" python3 - > "$out/logs/train.log" 2>&1 <<'PY'
import time
import traceback

from gpugrad.training import train

for model, device in (("mlp", "cuda"), ("cnn", "cuda"), ("mlp", "cpu")):
    try:
        start = time.time()
        print("train:", train(model, device=device, progress=False).summary(), f"(wall {time.time() - start:.1f} s)",
              flush=True)
    except Exception:
        traceback.print_exc()
        print(f"train: {model} on {device} failed", flush=True)
PY
rc=$?
summary training "rc=$rc; $(grep -c '^train: .*accuracy' "$out/logs/train.log") of 3 runs finished" $((SECONDS - t0))

# 4 gg.function(jit_compile=True) on cuda: one line per figure, each flushed as measured
t0=$SECONDS
timeout "$(budget jit)" python3 -m benchmarks.gpu_jit > "$out/logs/jit.log" 2>&1
rc=$?
judged=$(grep 'gg.function(jit) .*(target' "$out/logs/jit.log" | sed -E \
    's/^jit  (.*)  gg\.function\(jit\).* ([0-9]+ % of copy).*: ([A-Za-z]+)\)$/\1 \2 \3/' | paste -sd';' -)
summary jit "rc=$rc; ${judged:-no judged row (see logs/jit.log)}" $((SECONDS - t0))

# 5 benchmarks
t0=$SECONDS
timeout "$(budget benchmarks)" python3 -m pytest -p no:cacheprovider "${WARN[@]}" benchmarks/test_tape_overhead.py \
    benchmarks/test_large_gradient.py benchmarks/test_precision.py -q --gpugrad-max-time 1.0 \
    --benchmark-json="$out/bench.json" --benchmark-columns=min,median,max --benchmark-sort=name \
    > "$out/logs/bench.log" 2>&1
rc=$?
result=$(grep -E '[0-9]+ (passed|failed)' "$out/logs/bench.log" | tail -1 | tr -d '=' | awk '{$1=$1};1')
summary benchmarks "rc=$rc; ${result:-no result line (see logs/bench.log)}" $((SECONDS - t0))

# 6 ratios
t0=$SECONDS
timeout "$(budget ratios)" python3 benchmarks/ratios.py "$out/bench.json" > "$out/logs/ratios.log" 2>&1
rc=$?
summary ratios "rc=$rc; $(wc -l < "$out/logs/ratios.log") lines" $((SECONDS - t0))

# the figures: one file
{
    echo "# gpugrad device run, $(date -u +%FT%TZ), ${SECONDS} s in all"
    cat "$out/summary.txt"
    echo; echo "# tests and G1 (benchmarks/gpu_check.py's summary)"
    sed -n '/^== summary/,$p' "$out/logs/gpu_check.log"
    echo; echo "# training"
    grep '^train:' "$out/logs/train.log"
    echo; echo "# gg.function(jit_compile=True) on cuda (benchmarks/gpu_jit.py)"
    grep '^jit  ' "$out/logs/jit.log"
    echo; echo "# benchmarks (medians) and ratios"
    grep -E '^(test_|Name|-)' "$out/logs/bench.log" | tail -60
    cat "$out/logs/ratios.log"
} >> "$figures"
rm -f "$out/summary.txt"
echo "figures in $figures (${SECONDS} s in all); logs in $out/logs/"
