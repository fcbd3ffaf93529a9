#!/usr/bin/env bash
# The prepared GPU check: GPU tests, then the latency and graph-memory sweeps (CSVs under $OUT),
# the target table printed last. Run from the repository root:
#   on the GPU machine:  PYTHONPATH=. OUT=/some/dir bash scripts/gpu_check.sh
#   CPU dry run:         PYTHONPATH=. OUT=/tmp/check bash scripts/gpu_check.sh --device cpu --small
# Extra arguments go to scripts/gpu_bench.py. Needs no network and no project venv.
set -uo pipefail
OUT="${OUT:-build/gpu_check}"
PYTHON="${PYTHON:-python}"
export PYTHONPATH="${PYTHONPATH:-.}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$OUT"
status=0

echo "== environment" | tee "$OUT/environment.txt"
"$PYTHON" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'device', torch.cuda.get_device_name() if torch.cuda.is_available() else 'none')" \
    | tee -a "$OUT/environment.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >>"$OUT/environment.txt" 2>&1

echo "== GPU tests (pytest -m gpu)"
# Collection errors in unrelated test files must not hide the GPU tests' own results.
timeout 180 "$PYTHON" -m pytest -q -m gpu -p no:cacheprovider --continue-on-collection-errors \
    tests >"$OUT/gpu_tests.txt" 2>&1 || status=1
tail -n 15 "$OUT/gpu_tests.txt"

echo "== sweeps: latency, graph memory"
timeout 300 "$PYTHON" scripts/gpu_bench.py --out "$OUT" "$@" >"$OUT/gpu_bench.txt" 2>&1 \
    || status=1
tail -n 40 "$OUT/gpu_bench.txt"
exit "$status"
