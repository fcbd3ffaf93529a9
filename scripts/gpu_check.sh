#!/usr/bin/env bash
# The prepared GPU check, one script: GPU tests, the bench "full" suite on the 100m model
# (latency with the eager cliff, graph memory, speculative decoding guard vs adaptive and its
# per-step view, the crash map), latency and graph memory of the 1b model, the target table.
# Everything lands in ONE archive $OUT/gpu_check.tar.gz (CSVs, logs, environment) plus
# $OUT/summary.txt; the summary is printed last. Run from the repository root:
#   GPU machine:  GRAPHLAB_GIT_COMMIT=<sha> PYTHONPATH=. OUT=$OUT bash scripts/gpu_check.sh
#   CPU dry run:  PYTHONPATH=. OUT=/tmp/check bash scripts/gpu_check.sh --device cpu --small
# --small: the quick suite on the tiny preset only (seconds). Needs no network and no venv.
# Each step runs under `timeout`, its limit also cut to what is left of BUDGET_S (default 450 s)
# so the whole check stays under ~8 minutes; the archive is rewritten after every step, so a
# check killed from outside still leaves the finished steps' files.
set -uo pipefail
OUT="${OUT:-build/gpu_check}"
PYTHON="${PYTHON:-$(command -v python || command -v python3)}"
BUDGET_S="${BUDGET_S:-450}"
DEVICE=auto SUITE=full SMALL=100m LARGE=1b
while (($#)); do
    case "$1" in
        --device) DEVICE="$2"; shift 2 ;;
        --small) SUITE=quick SMALL=tiny LARGE=tiny; shift ;;
        *) echo "usage: gpu_check.sh [--device auto|cuda|cpu] [--small]" >&2; exit 2 ;;
    esac
done
export PYTHONPATH="${PYTHONPATH:-.}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
# A copy without .git: say so in every row, rather than let git find some enclosing repository.
if [[ -z "${GRAPHLAB_GIT_COMMIT:-}" && ! -e .git ]]; then export GRAPHLAB_GIT_COMMIT=unknown; fi
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# Staged outside $OUT: the device tool brings back only a few files, so $OUT holds just two.
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
RESULTS="$WORK/gpu_check"
mkdir -p "$RESULTS/logs"
START=$SECONDS
status=0
printf 'step\tstatus\tseconds\tlimit_s\n' >"$RESULTS/steps.tsv"

pack() {  # the archive of everything so far, replaced atomically
    tar -czf "$OUT/.gpu_check.tar.gz.tmp" -C "$WORK" gpu_check \
        && mv "$OUT/.gpu_check.tar.gz.tmp" "$OUT/gpu_check.tar.gz"
}

step() {  # step NAME MAX_SECONDS COMMAND...: run under timeout, log, record, pack
    local name="$1" limit="$2" left t0 rc state
    shift 2
    left=$((BUDGET_S - (SECONDS - START) - 20))  # 20 s kept for the report
    ((limit > left)) && limit=$left
    if ((limit < 5)); then
        state=skipped rc=1
        echo "== $name: skipped, the time budget is spent" | tee "$RESULTS/logs/$name.log"
    else
        echo "== $name (limit ${limit} s)"
        t0=$SECONDS
        timeout --kill-after=10 "$limit" "$@" >"$RESULTS/logs/$name.log" 2>&1
        rc=$?
        case $rc in 0) state=ok ;; 124 | 137) state=timeout ;; *) state="failed($rc)" ;; esac
        echo "   $state in $((SECONDS - t0)) s; last lines of logs/$name.log:"
        tail -n 4 "$RESULTS/logs/$name.log" | sed 's/^/   | /'
    fi
    ((rc == 0)) || status=1
    printf '%s\t%s\t%s\t%s\n' "$name" "$state" "$((SECONDS - ${t0:-$SECONDS}))" "$limit" \
        >>"$RESULTS/steps.tsv"
    pack
}

environment() {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command: gpu_check.sh --device $DEVICE (suite $SUITE, presets $SMALL $LARGE)"
    echo "GRAPHLAB_GIT_COMMIT: ${GRAPHLAB_GIT_COMMIT:-(not set)}; .git here: $([ -d .git ] && echo yes || echo no)"
    timeout 60 "$PYTHON" - <<'EOF'
import importlib.metadata as md
import platform

import torch

from graphlab.provenance import provenance

print("python", platform.python_version(), "| torch", torch.__version__, "| cuda",
      torch.version.cuda, "| device",
      torch.cuda.get_device_name() if torch.cuda.is_available() else "none")
versions = []
for name in ("numpy", "pandas", "matplotlib", "tqdm", "pytest", "hypothesis", "transformers"):
    try:
        versions.append(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        versions.append(f"{name} not installed")
print(" | ".join(versions))
print("provenance:", provenance("auto"))
EOF
    command -v nvidia-smi >/dev/null \
        && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
}

echo "== environment"
environment 2>&1 | tee "$RESULTS/environment.txt"
pack

# Only the files with GPU tests: collecting the others needs packages this machine may lack.
step gpu_tests 120 "$PYTHON" -m pytest -q -m gpu -p no:cacheprovider \
    $(grep -l "mark.gpu" tests/test_*.py)
BENCH=("$PYTHON" scripts/gpu_bench.py sweep --suite "$SUITE" --device "$DEVICE")
# The 1b model last: it is the longest step, so a slow one cannot starve the others.
step "latency_memory_$SMALL" 120 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    latency graph_memory
step spec_decode 180 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    spec_decode spec_decode_steps
step crash_map 60 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" crash_map
if [[ "$LARGE" != "$SMALL" ]]; then
    step "latency_memory_$LARGE" 150 "${BENCH[@]}" --preset "$LARGE" --out "$RESULTS/$LARGE" \
        latency graph_memory
fi

# The report: budgeted apart (the 20 s every step leaves), its output the summary's last part.
t0=$SECONDS
timeout 40 "$PYTHON" scripts/gpu_bench.py report --out "$RESULTS" --small "$SMALL" \
    --large "$LARGE" >"$RESULTS/report.txt" 2>&1
rc=$?
((rc == 0)) || status=1
printf 'report\t%s\t%s\t40\n' "$([ $rc = 0 ] && echo ok || echo "failed($rc)")" \
    "$((SECONDS - t0))" >>"$RESULTS/steps.tsv"
{
    cat "$RESULTS/environment.txt"
    echo
    echo "== steps (total $((SECONDS - START)) s; archive gpu_check.tar.gz)"
    column -t -s $'\t' "$RESULTS/steps.tsv" 2>/dev/null || cat "$RESULTS/steps.tsv"
    echo
    cat "$RESULTS/report.txt"
} >"$RESULTS/summary.txt"
cp "$RESULTS/summary.txt" "$OUT/summary.txt"
pack
echo
cat "$OUT/summary.txt"
exit "$status"
