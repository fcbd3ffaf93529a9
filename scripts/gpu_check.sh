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
# sweep writes its CSV when it ends, latency after each request count and graph memory after each
# capture loop, and the archive and summary.txt are rewritten after every step, so a step that
# times out, or a check killed from outside, keeps what finished. With nvidia-smi, the GPU's SM
# and memory clocks are sampled every 0.5 s (clocks.csv) and the report prints them per step. A step's state is ok, timeout (at its limit), killed(137) (a
# SIGKILL before its limit: the kernel's out-of-memory killer) or failed(rc); the report then
# names every expected row a CSV lacks (a latency.csv with the guard's rows only is incomplete).
# The plan (H200 estimates; limits about 1.5x; 35 s of the 480 kept for the report and a kill).
# Short steps first, so a slow one loses only itself and later; the optional last step gets
# what is left and its timeout fails nothing:
#   step          est.  limit  what
#   crash_map      20     90   41,472 cells of sizing rules on one host CPU core, in the
#                              background beside environment and gpu_tests (measured 16-20 s on
#                              the 2-core CPU VM, 3.6 s of it imports); waited for before the
#                              timed steps, so it costs no serial time unless it outlasts them
#   environment    12     30   torch import, CUDA start, the 1b model's SDPA call probed
#   gpu_tests      40     60   the GPU tests, V1 runner first (tiny captures; 100m/1b replay vs
#                              eager); the compiled-cuda-graph test is the last step instead
#   memory_100m    30     50   graph memory, V0 35 sizes + V1 51 token counts, 2 pool modes each
#   memory_1b      25     45   graph memory, V0 only
#   latency_100m   75    110   copy bandwidth; V0 96 sizes x 34 steps x 2 modes, V1 51 x 34 x 2
#   latency_1b     60     90   copy bandwidth; V0 as above, 11 ms eager steps
#   spec_decode   100    150   guard vs adaptive at S 8/32, k 2/4, summary and per step
#   gpu_compiled   30  (rest)  optional: torch.compile + CUDA graphs, cold inductor (15-45 s)
#   serial estimates 342 s; limits before spec_decode 385 s (environment and gpu_tests 90 s,
#   crash_map beside them), so spec_decode keeps at least 60 s and, on the estimates, about
#   100 s are left for the compiled one.
set -uo pipefail
OUT="${OUT:-build/gpu_check}"
# python3 first: on the lent GPU machine it is the interpreter that holds torch.
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
# LIMIT_SCALE: every limit and the budget times this, for a CPU dry run on a loaded machine.
LIMIT_SCALE="${LIMIT_SCALE:-1}"
BUDGET_S="${BUDGET_S:-$((480 * LIMIT_SCALE))}"
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
RESULTS="$WORK/gpu_check"
mkdir -p "$RESULTS/logs"
# A step stopped mid-compile can leave an empty module in inductor's cache, which fails every later
# run's import ("file too short"): a rerun right after a timeout starts without them.
find "${TORCHINDUCTOR_CACHE_DIR:-${TMPDIR:-/tmp}/torchinductor_$(id -un)}" -name '*.so' -size 0 \
    -delete 2>/dev/null || true
START=$SECONDS
RESERVE_S=$((35 * LIMIT_SCALE))  # 20 s for the report, 15 for a kill
status=0
declare -A PIDS LIMITS T0 T0_UNIX
CLOCKS_PID=""
trap 'for pid in "${PIDS[@]}" $CLOCKS_PID; do kill "$pid" 2>/dev/null; done; rm -rf "$WORK"' EXIT
printf 'step\tstatus\tseconds\tlimit_s\tstart_unix\tend_unix\n' >"$RESULTS/steps.tsv"
# The GPU's clocks every 0.5 s for the whole check, so each timed step can be read against the
# clocks it ran at (the report prints them per step); none on a machine without nvidia-smi.
if [[ "$DEVICE" != cpu ]] && command -v nvidia-smi >/dev/null; then
    echo "unix_s,sm_mhz,mem_mhz,temperature_c,power_w" >"$RESULTS/clocks.csv"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw \
        --format=csv,noheader,nounits -lms 500 2>/dev/null \
        | while IFS= read -r line; do echo "$(date +%s.%N),${line// /}"; done \
            >>"$RESULTS/clocks.csv" &
    CLOCKS_PID=$!
fi

summary() {  # summary.txt from what exists: environment, the steps so far, the report if run
    {
        cat "$RESULTS/environment.txt" 2>/dev/null
        echo
        echo "== steps (total $((SECONDS - START)) s; archive gpu_check.tar.gz)"
        column -t -s $'\t' "$RESULTS/steps.tsv" 2>/dev/null || cat "$RESULTS/steps.tsv"
        echo
        if [[ -e "$RESULTS/report.txt" ]]; then cat "$RESULTS/report.txt"; else
            echo "== report: not reached (the check was still running when this was written)"
        fi
    } >"$RESULTS/summary.txt"
    cp "$RESULTS/summary.txt" "$OUT/.summary.txt.tmp" && mv "$OUT/.summary.txt.tmp" "$OUT/summary.txt"
}

pack() {  # the archive of everything so far and the summary, each replaced atomically: a check
    # killed from outside (the device's own limit) still leaves both
    summary
    tar -czf "$OUT/.gpu_check.tar.gz.tmp" -C "$WORK" gpu_check \
        && mv "$OUT/.gpu_check.tar.gz.tmp" "$OUT/gpu_check.tar.gz"
}

launch() {  # launch NAME MAX_SECONDS COMMAND...: start a step under timeout, in the background
    local name="$1" limit="$(($2 * LIMIT_SCALE))" left
    shift 2
    left=$((BUDGET_S - (SECONDS - START) - RESERVE_S))
    ((limit > left)) && limit=$((left > 0 ? left : 0))
    LIMITS[$name]=$limit T0[$name]=$SECONDS T0_UNIX[$name]=${EPOCHSECONDS:-$(date +%s)} PIDS[$name]=""
    ((limit < 5)) && return
    echo "== $name (limit ${limit} s)"
    # The subshell notes when the step ended: a background step is waited for later.
    (
        timeout -s INT --kill-after=15 "$limit" "$@" >"$RESULTS/logs/$name.log" 2>&1
        rc=$?
        echo "$rc $SECONDS" >"$WORK/$name.end"
        exit $rc
    ) &
    PIDS[$name]=$!
}

finish() {  # finish NAME [optional]: wait for the step, record its state, pack
    local name="$1" optional="${2:-}" limit="${LIMITS[$1]}" rc ended seconds state
    if [[ -z "${PIDS[$name]}" ]]; then
        rc=1 seconds=0 state=skipped
        echo "== $name: skipped, the time budget is spent" | tee "$RESULTS/logs/$name.log"
    else
        wait "${PIDS[$name]}"
        read -r rc ended <"$WORK/$name.end"
        seconds=$((ended - T0[$name]))
        case $rc in
            0) state=ok ;;
            124) state=timeout ;;
            # timeout's own KILL comes 15 s past the limit; a SIGKILL before it is not ours.
            137) ((seconds >= limit)) && state=timeout || state="killed(137)" ;;
            *) state="failed($rc)" ;;
        esac
        echo "   $name: $state in $seconds s; last lines of logs/$name.log:"
        [[ $state == "killed(137)" ]] && echo "SIGKILL after $seconds s, before the step's" \
            "${limit} s limit: the kernel's out-of-memory killer?" >>"$RESULTS/logs/$name.log"
        tail -n 4 "$RESULTS/logs/$name.log" | sed 's/^/   | /'
    fi
    PIDS[$name]=""
    # An optional step that ran out of time fails nothing; one that failed does.
    [[ -n "$optional" && ($state == skipped || $state == timeout) ]] || ((rc == 0)) || status=1
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$state" "$seconds" "$limit" \
        "${T0_UNIX[$name]:-}" "${EPOCHSECONDS:-$(date +%s)}" >>"$RESULTS/steps.tsv"
    pack
}

step() {  # step NAME MAX_SECONDS COMMAND...: one step in the foreground
    launch "$@"
    finish "$1"
}

RUN=("$PYTHON" -u scripts/gpu_bench.py)
BENCH=("${RUN[@]}" sweep --suite "$SUITE" --device "$DEVICE")
# Only the files with GPU tests (collecting the others needs packages this machine may lack),
# the V1 runner's first; the cold torch.compile test runs last, alone (gpu_compiled).
GPU_TESTS=(tests/engine/test_v1_runner.py
    $(grep -l "mark.gpu" tests/*/test_*.py | grep -v -e test_v1_runner -e test_gpu_compiled))
PYTEST=("$PYTHON" -u -m pytest -q -m gpu -p no:cacheprovider)
# The crash map is sizing rules on the host CPU: it runs beside the untimed GPU steps.
OMP_NUM_THREADS=1 launch crash_map 90 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    crash_map
step environment 30 "${RUN[@]}" environment --device "$DEVICE" --preset "$LARGE"
cp "$RESULTS/logs/environment.log" "$RESULTS/environment.txt"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command: gpu_check.sh --device $DEVICE (suite $SUITE, presets $SMALL $LARGE)"
    echo "GRAPHLAB_GIT_COMMIT: ${GRAPHLAB_GIT_COMMIT:-(not set)}; .git here: $([ -d .git ] && echo yes || echo no)"
    command -v nvidia-smi >/dev/null \
        && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
} >>"$RESULTS/environment.txt" 2>&1
step gpu_tests 60 "${PYTEST[@]}" "${GPU_TESTS[@]}"
finish crash_map
# $LARGE runs V0 rows only (--no-v1): the V1 cliff is measured on $SMALL.
step "memory_$SMALL" 50 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" graph_memory
[[ "$LARGE" != "$SMALL" ]] && step "memory_$LARGE" 45 "${BENCH[@]}" --preset "$LARGE" \
    --out "$RESULTS/$LARGE" --no-v1 graph_memory
step "latency_$SMALL" 110 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    copy_bandwidth latency
[[ "$LARGE" != "$SMALL" ]] && step "latency_$LARGE" 90 "${BENCH[@]}" --preset "$LARGE" \
    --out "$RESULTS/$LARGE" --no-v1 copy_bandwidth latency
step spec_decode 150 "${BENCH[@]}" --preset "$SMALL" --out "$RESULTS/$SMALL" \
    spec_decode spec_decode_steps
# Optional, last: a cold inductor compile (15-45 s) may run out of time without failing the check.
launch gpu_compiled 600 "${PYTEST[@]}" tests/engine/test_gpu_compiled.py
finish gpu_compiled optional

# The report: budgeted apart (20 s of what every step leaves), its target table printed last.
[[ -n "$CLOCKS_PID" ]] && kill "$CLOCKS_PID" 2>/dev/null
t0=$SECONDS t0_unix=$(date +%s)
timeout -s INT --kill-after=5 $((15 * LIMIT_SCALE)) "${RUN[@]}" report --out "$RESULTS" \
    --small "$SMALL" --large "$LARGE" --suite "$SUITE" >"$RESULTS/.report.txt" 2>&1
rc=$?
mv "$RESULTS/.report.txt" "$RESULTS/report.txt"
((rc == 0)) || status=1
printf 'report\t%s\t%s\t%s\t%s\t%s\n' "$([ $rc = 0 ] && echo ok || echo "failed($rc)")" \
    "$((SECONDS - t0))" "$((15 * LIMIT_SCALE))" "$t0_unix" "$(date +%s)" >>"$RESULTS/steps.tsv"
pack
echo
cat "$OUT/summary.txt"
exit "$status"
