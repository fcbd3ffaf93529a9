#!/usr/bin/env bash
# The prepared GPU check, one script: environment (versions, cuDNN, the SDPA kernel of a decode
# call), the GPU tests, copy bandwidth, latency and graph memory of the 100m and 1b presets
# (the V1 engine's token-count graphs and their cliff on 100m), the crash map, speculative
# decoding guard vs adaptive (summary and per step), and the target table. Everything lands in
# ONE archive $OUT/gpu_check.tar.gz (CSVs, logs, environment) plus $OUT/summary.txt, which ends
# with the target table and is printed last.
# Run from the repository root:
#   GPU machine:  GRAPHLAB_GIT_COMMIT=<sha> PYTHONPATH=. OUT=$OUT bash scripts/gpu_check.sh
#                 (<sha>: `git rev-parse --short=12 HEAD` of the clean tree sent; the copy
#                 has no .git)
#   CPU dry run:  PYTHONPATH=. OUT=build/gpu_check bash scripts/gpu_check.sh --device cpu --small
# --small: the quick suite on the tiny preset only (seconds). Needs no network and no venv.
# Each step runs under `timeout`, interrupted with SIGINT first (its log ends in a traceback
# naming where it was), its limit also cut to what is left of BUDGET_S (default 480 s); every
# sweep writes its CSV when it ends, latency and graph memory also after each engine, and the
# archive is rewritten after every step, so a step that times out, or a check killed from
# outside, keeps what finished.
# The plan (H200 estimates; limits about 1.5x, the last step gets what is left; 35 s of the 480
# kept for the report and a kill). Short steps first, so a slow one loses only itself and later:
#   step          est.  limit  what
#   environment    12     30   torch import, CUDA start, the 1b model's SDPA call probed
#   crash_map      12     25   41,472 cells of sizing rules on the host CPU
#   memory_100m    30     50   graph memory, V0 35 sizes + V1 51 token counts, 2 pool modes each
#   memory_1b      25     45   graph memory, V0 only
#   gpu_tests      45     75   the GPU tests (tiny captures; 100m/1b replay vs eager)
#   latency_100m   75    110   copy bandwidth; V0 96 sizes x 34 steps x 2 modes, V1 51 x 34 x 2
#   latency_1b     60     90   copy bandwidth; V0 as above, 11 ms eager steps
#   spec_decode   100  (rest)  guard vs adaptive at S 8/32, k 2/4, summary and per step
#   sum of estimates 359 s; of limits 425 s before spec_decode, which then still has 20 s.
# The SDPA kernel is pinned (graphlab/engine/sdpa.py): no cuDNN plan per new shape in the timing.
set -uo pipefail
OUT="${OUT:-build/gpu_check}"
# python3 first: on the lent GPU machine it is the interpreter that holds torch.
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
BUDGET_S="${BUDGET_S:-480}"
DEVICE=auto SUITE=full SMALL=100m LARGE=1b
while (($#)); do
    case "$1" in
        --device) DEVICE="${2:-}"; shift 2 || shift ;;
        --small) SUITE=quick SMALL=tiny LARGE=tiny; shift ;;
        *) echo "usage: gpu_check.sh [--device auto|cuda|cpu] [--small]" >&2; exit 2 ;;
    esac
done
case "$DEVICE" in auto | cuda | cpu) ;; *)
    echo "gpu_check.sh: --device '$DEVICE' is not one of auto, cuda, cpu" >&2; exit 2 ;;
esac
# `.` first and kept when PYTHONPATH is already set: graphlab is imported from this checkout.
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
# A torch that does not import is its own error, not "no CUDA device".
if ! probe="$("$PYTHON" -c 'import torch; print("cuda", int(torch.cuda.is_available()))' 2>&1)"
then
    echo "gpu_check.sh: $PYTHON cannot import torch: $(tail -n 1 <<<"$probe")" >&2
    exit 2
fi
if [[ "$DEVICE" != cpu && "$probe" != *"cuda 1"* ]]; then
    echo "gpu_check.sh: no CUDA device here; for the CPU dry run pass --device cpu --small" >&2
    exit 2
fi
# A copy without .git: say so in every row, rather than let git find some enclosing repository.
if [[ -z "${GRAPHLAB_GIT_COMMIT:-}" && ! -e .git ]]; then export GRAPHLAB_GIT_COMMIT=unknown; fi
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# Staged outside $OUT: the device tool brings back at most 8 files, so $OUT holds just two.
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
    local name="$1" limit="$2" left t0=$SECONDS rc state
    shift 2
    left=$((BUDGET_S - (SECONDS - START) - 35))  # 20 s kept for the report, 15 for a kill
    ((limit > left)) && limit=$left
    if ((limit < 5)); then
        state=skipped rc=1
        echo "== $name: skipped, the time budget is spent" | tee "$RESULTS/logs/$name.log"
    else
        echo "== $name (limit ${limit} s)"
        timeout -s INT --kill-after=15 "$limit" "$@" >"$RESULTS/logs/$name.log" 2>&1
        rc=$?
        case $rc in 0) state=ok ;; 124 | 130 | 137) state=timeout ;; *) state="failed($rc)" ;; esac
        echo "   $state in $((SECONDS - t0)) s; last lines of logs/$name.log:"
        tail -n 4 "$RESULTS/logs/$name.log" | sed 's/^/   | /'
    fi
    ((rc == 0)) || status=1
    printf '%s\t%s\t%s\t%s\n' "$name" "$state" "$((SECONDS - t0))" "$limit" >>"$RESULTS/steps.tsv"
    pack
}

RUN=("$PYTHON" -u scripts/gpu_bench.py)
BENCH=("${RUN[@]}" sweep --suite "$SUITE" --device "$DEVICE")
step environment 30 "${RUN[@]}" environment --device "$DEVICE" --preset "$LARGE"
cp "$RESULTS/logs/environment.log" "$RESULTS/environment.txt"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command: gpu_check.sh --device $DEVICE (suite $SUITE, presets $SMALL $LARGE)"
    echo "GRAPHLAB_GIT_COMMIT: ${GRAPHLAB_GIT_COMMIT:-(not set)}; .git here: $([ -d .git ] && echo yes || echo no)"
    command -v nvidia-smi >/dev/null \
        && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
} >>"$RESULTS/environment.txt" 2>&1
# $LARGE runs V0 rows only (--no-v1): the V1 cliff is measured on $SMALL.
step crash_map 25 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" crash_map
step "memory_$SMALL" 50 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" graph_memory
[[ "$LARGE" != "$SMALL" ]] && step "memory_$LARGE" 45 "${BENCH[@]}" --preset "$LARGE" \
    --out "$RESULTS/$LARGE" --no-v1 graph_memory
# Only the files with GPU tests: collecting the others needs packages this machine may lack.
step gpu_tests 75 "$PYTHON" -u -m pytest -q -m gpu -p no:cacheprovider \
    $(grep -l "mark.gpu" tests/test_*.py)
step "latency_$SMALL" 110 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    copy_bandwidth latency
[[ "$LARGE" != "$SMALL" ]] && step "latency_$LARGE" 90 "${BENCH[@]}" --preset "$LARGE" \
    --out "$RESULTS/$LARGE" --no-v1 copy_bandwidth latency
# COMPILED + CUDA GRAPH MODE (issue 24, item 7): not in this check; add its step here only if
# the plan above still fits 480 s.
step spec_decode 200 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    spec_decode spec_decode_steps

# The report: budgeted apart (20 s of what every step leaves), its target table printed last.
t0=$SECONDS
timeout -s INT --kill-after=5 15 "${RUN[@]}" report --out "$RESULTS" --small "$SMALL" \
    --large "$LARGE" >"$RESULTS/report.txt" 2>&1
rc=$?
((rc == 0)) || status=1
printf 'report\t%s\t%s\t15\n' "$([ $rc = 0 ] && echo ok || echo "failed($rc)")" \
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
