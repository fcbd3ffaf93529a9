#!/usr/bin/env bash
# The GPU machine's Python stack, rebuilt on this CPU machine before a GPU run: Python 3.12 with
# torch 2.11.0 and only the packages of that machine the project uses (no vllm, papermill, jupyter
# or playwright), then the CPU dry run of scripts/gpu_check.sh and the CPU parts of the GPU-marked
# test files. An import or API error that the project's own venv (another Python and
# torch) would hide shows up here instead of in the lent machine's few minutes.
#   bash scripts/check_gpu_env.sh            # builds $VENV once (5 GB: torch's CUDA build)
#   VENV=/tmp/gpuenv312 PY312=python3.12 bash scripts/check_gpu_env.sh
# torch 2.11.0 from the package index is its CUDA build; it imports and runs on a CPU-only
# machine once its nvidia-* libraries are installed beside it (they are loaded, not used).
# Versions: the GPU machine's as last read (torch 2.11.0+cu130, numpy 2.5.2, transformers 5.17.0,
# Python 3.12.3); the others it has unpinned.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-/tmp/gpuenv312}"
PACKAGES=(torch==2.11.0 numpy==2.5.2 transformers==5.17.0 pandas matplotlib tqdm pytest
    hypothesis pytest-xdist)
find_python312() {  # python3.12 on PATH, else pyenv's
    local candidate check='import sys; assert sys.version_info[:2] == (3, 12)'
    for candidate in "${PY312:-}" python3.12 \
        "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
        [[ -n "$candidate" ]] && "$candidate" -c "$check" 2>/dev/null \
            && { echo "$candidate"; return; }
    done
    echo "check_gpu_env.sh: no Python 3.12 found (set PY312, or install it with pyenv)" >&2
    exit 2
}
if [[ ! -x "$VENV/bin/python" ]]; then
    "$(find_python312)" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q "${PACKAGES[@]}"
fi
PY="$VENV/bin/python"
"$PY" - <<'EOF'
import platform, torch
print(f"python {platform.python_version()}, torch {torch.__version__}, "
      f"cuda build {torch.version.cuda}, cuda available {torch.cuda.is_available()}")
assert platform.python_version_tuple()[:2] == ("3", "12") and torch.__version__.startswith("2.11.")
EOF
export PYTHONPATH=. OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
# test_gpu_check.py runs the CPU dry run of scripts/gpu_check.sh with this Python, its optional
# packages blocked; the GPU-marked files run their CPU parts.
# shellcheck disable=SC2046  # one word per file
"$PY" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile tests/bench/test_gpu_check.py \
    $(grep -l "mark.gpu" tests/*/test_*.py) tests/engine/test_gpu_compiled.py tests/bench/test_bench_timings.py
