#!/usr/bin/env bash
# The one command to run on a lent GPU machine (repository root, gpugrad not installed):
#   bash benchmarks/device_run.sh
# 0. the fused kernels in float16 and bfloat16 (tests/test_gpu.py -k 16_bit or bfloat16; their builds
#    stay in $CUPY_CACHE_DIR, so gpu_check's run of tests/test_gpu.py finds them compiled);
# 1. benchmarks/gpu_check.py: GPU tests, benchmark G1, the gradient table on cuda (240 s budget);
# 2. the training job on cuda (MLP, CNN) and on the CPU, for accuracy and wall time;
# 3. W1 and W3 (pytest-benchmark) on every device, with the ratios, and the W4 and CNN steps in float32,
#    mixed16 and bf16 (benchmarks/test_precision.py).
# Everything it prints also lands in $OUT (or /tmp/gpugrad-device-run) as at most five files.
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD" CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-/tmp/cupycache}"
out="${OUT:-/tmp/gpugrad-device-run}"
mkdir -p "$out" /tmp/gc
nvidia-smi -L
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
python3 -c "import ml_dtypes; print('ml_dtypes', ml_dtypes.__version__)" 2>/dev/null || echo "no ml_dtypes: bfloat16 tests skip"
timeout 150 python3 -m pytest -q -p no:cacheprovider -rfEs --tb=short -o addopts= tests/test_gpu.py \
    -k "16_bit or bfloat16" > "$out/gpu_check.log" 2>&1
echo "low-precision kernel tests rc=$?"; tail -4 "$out/gpu_check.log"
OUT=/tmp/gc timeout 235 python3 benchmarks/gpu_check.py --budget 210 >> "$out/gpu_check.log" 2>&1
echo "gpu_check rc=$?"
tar czf "$out/gpu_check.tgz" -C /tmp gc 2>/dev/null
tail -c 5000 "$out/gpu_check.log"
timeout 160 python3 - <<'PY' 2>&1 | tail -20 | tee "$out/train.log"
import time
import traceback

from gpugrad.training import train

for model, device in (("mlp", "cuda"), ("cnn", "cuda"), ("mlp", "cpu")):
    try:
        start = time.time()
        print(train(model, device=device, progress=False).summary(), f"(wall {time.time() - start:.1f} s)", flush=True)
    except Exception:
        traceback.print_exc()
PY
timeout 150 python3 -m pytest -p no:cacheprovider benchmarks/test_tape_overhead.py benchmarks/test_large_gradient.py \
    benchmarks/test_precision.py -q \
    --benchmark-json="$out/bench.json" --benchmark-columns=min,median,max --benchmark-sort=name 2>&1 | tail -40 > "$out/bench.log"
python3 benchmarks/ratios.py "$out/bench.json" >> "$out/bench.log" 2>&1
cat "$out/bench.log"
