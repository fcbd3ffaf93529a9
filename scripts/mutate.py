"""A small mutation run: does the test suite notice a meaningful change to the core logic?

Each mutant replaces one exact snippet of one module (it must occur once), runs only the tests
that cover it (pytest -x), and restores the file, always (also on Ctrl-C or an error). A mutant
is caught when those tests fail, survived when they pass. Not part of the test suite: run it by
hand, e.g. `python scripts/mutate.py` or `python scripts/mutate.py --only plan`.

    usage: python scripts/mutate.py [--only SUBSTRING] [--list | --check]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 300  # a mutant that loops forever counts as caught (the tests never pass)


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # relative to the repository root
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, optionally with -k


SIZING = ("tests/test_sizing.py", "tests/test_sizing_vectors.py", "tests/test_workload_audit.py")
PLAN = ("tests/test_plan.py",)
SPEC = (
    "tests/test_spec_decode.py",
    "-k",
    "bonus or step_zero or mixed_load or guarded or greedy or "
    "acceptance or coverage or temperature or plain_rows or batch_expansion",
)
REJECTION = ("tests/test_rejection.py",)
CLI = ("tests/test_cli.py", "tests/test_cli_audit.py", "-k", "not real_run and not ctrl_c")
WIDGETS = ("tests/test_widgets.py",)
PROVENANCE = (
    "tests/test_bench_export.py",
    "-k",
    "provenance or cudnn or torch_threads or full_disk or could_not",
)
AUDIT = ("tests/test_cli.py", "tests/test_workload_audit.py", "tests/test_cli_audit.py")

S, P, C = "graphlab/sizing/", "graphlab/specdec/", "graphlab/cli/"
MUTANTS = [
    # sizing/engines.py: V0 padding, lookups, limits
    Mutant(
        "pad0 small sizes",
        S + "engines.py",
        "padded = np.where(n <= 2, n,",
        "padded = np.where(n <= 3, n,",
        SIZING,
    ),
    Mutant(
        "pad0 4",
        S + "engines.py",
        "np.where(n <= 4, 4, round_up(n, _V0_ALIGNMENT))",
        "np.where(n < 4, 4, round_up(n, _V0_ALIGNMENT))",
        SIZING,
    ),
    Mutant(
        "padded lookup side",
        S + "families.py",
        'i = np.searchsorted(sizes, ns, side="left")',
        'i = np.searchsorted(sizes, ns, side="right")',
        SIZING,
    ),
    Mutant(
        "tries_graph bound",
        S + "engines.py",
        "return ns <= self.graph_limit(cfg, capture_sizes)",
        "return ns < self.graph_limit(cfg, capture_sizes)",
        SIZING,
    ),
    Mutant(
        "0.5.5 list cut",
        S + "engines.py",
        "_V0_SIZES_055[_V0_SIZES_055 <= pad0(cfg.max_num_seqs)]",
        "_V0_SIZES_055[_V0_SIZES_055 < pad0(cfg.max_num_seqs)]",
        SIZING,
    ),
    Mutant(
        "adaptive uses S only",
        S + "engines.py",
        "limit = _v0_max_graph_batch_size(cfg.max_num_seqs * cfg.decode_query_len, _V0_SIZES_060)",
        "limit = _v0_max_graph_batch_size(cfg.max_num_seqs, _V0_SIZES_060)",
        SIZING,
    ),
    Mutant(
        "crash key 0",
        S + "outcomes.py",
        'return f"KeyError: {key}" if key else "StopIteration"',
        'return f"KeyError: {key}"',
        SIZING,
    ),
    Mutant(
        "bool as int",
        "graphlab/errors.py",
        "numbers.Integral) and not isinstance(value, bool)",
        "numbers.Integral)",
        SIZING + ("tests/test_plan.py", "-k", "bad_planner or budget"),
    ),
    Mutant(
        "limit S off by one",
        S + "limits.py",
        "if value is not None and value > limit:",
        "if value is not None and value > limit + 1:",
        CLI,
    ),
    Mutant(
        "decode query len",
        S + "config.py",
        "return 1 + self.num_speculative_tokens",
        "return self.num_speculative_tokens",
        SIZING,
    ),
    # sizing/batches.py
    Mutant(
        "expansion ends",
        S + "batches.py",
        "ends = seqs + speculating * k",
        "ends = seqs + speculating * (k - 1)",
        SIZING,
    ),
    Mutant(
        "expansion keeps 0",
        S + "batches.py",
        "sizes = _union_of_intervals(starts, ends)[1:]",
        "sizes = _union_of_intervals(starts, ends)",
        SIZING,
    ),
    Mutant(
        "token cap",
        S + "batches.py",
        "requests = min(requests, tokens // query_len)",
        "requests = min(requests, -(-tokens // query_len))",
        SIZING,
    ),
    Mutant(
        "interval merge",
        S + "batches.py",
        "breaks = np.flatnonzero(starts[1:] > ends[:-1] + 1) + 1",
        "breaks = np.flatnonzero(starts[1:] > ends[:-1]) + 1",
        SIZING,
    ),
    # sizing/dispatch.py
    Mutant(
        "FULL rounding",
        S + "families.py",
        "{round_up(s, query_len) for s in sizes}",
        "{s // query_len * query_len for s in sizes}",
        ("tests/test_v1_runner.py", "tests/test_sizing_vllm.py"),
    ),
    Mutant(
        "FULL limit",
        S + "families.py",
        "limit = min(sizes[-1], cfg.max_num_seqs * q)",
        "limit = sizes[-1]",
        ("tests/test_v1_runner.py", "tests/test_sizing_vllm.py"),
    ),
    # sizing/audit.py
    Mutant(
        "graph fraction",
        S + "audit.py",
        "graph_fraction=float(counts[GRAPH] / len(ns))",
        "graph_fraction=float(counts[GRAPH] / (len(ns) + 1))",
        AUDIT,
    ),
    Mutant(
        "proposer rows",
        S + "audit.py",
        "np.arange(1, 2 * max_num_seqs + 1, dtype=np.int64)",
        "np.arange(1, max_num_seqs + 1, dtype=np.int64)",
        AUDIT,
    ),
    Mutant(
        "draft ignores k",
        S + "audit.py",
        "draft_cfg = replace(cfg, num_speculative_tokens=0)",
        "draft_cfg = cfg",
        AUDIT,
    ),
    Mutant(
        "audit bound",
        S + "audit.py",
        "if len(ns) > MAX_AUDIT_BATCH_SIZES:",
        "if len(ns) > 4 * MAX_AUDIT_BATCH_SIZES:",
        CLI,
    ),
    Mutant(
        "crash-map bound",
        S + "crash_maps.py",
        "if sweep > CRASH_MAP_MAX_BATCH_SIZES:",
        "if sweep > 2**40:",
        CLI,
    ),
    Mutant(
        "proposer only with k",
        S + "crash_maps.py",
        "p = proposer.summary if proposer is not None and k > 0 else None",
        "p = proposer.summary if proposer is not None else None",
        AUDIT,
    ),
    # sizing/plan.py and plan_inputs.py
    Mutant(
        "tie: most graphs",
        S + "optimum.py",
        "np.argwhere(total <= least + 1e-9 * max(1.0, abs(least)))[0]",
        "np.argwhere(total <= least + 1e-9 * max(1.0, abs(least)))[-1]",
        PLAN,
    ),
    Mutant(
        "path code", S + "plan_result.py", "on_graph = path == GRAPH", "on_graph = path != 2", PLAN
    ),
    Mutant(
        "padding cost",
        S + "optimum.py",
        "cost = candidates[None, :] * span_w - (tokens[1:][None, :] - tokens[:-1][:, None])",
        "cost = candidates[None, :] * span_w",
        PLAN,
    ),
    Mutant(
        "coverage top", S + "plan.py", "        tail[-1] = 0.0\n", "        tail[:] = 0.0\n", PLAN
    ),
    Mutant(
        "candidates rounding",
        S + "plan.py",
        "candidates = np.unique(round_up(workload.sizes, q))",
        "candidates = np.unique(workload.sizes)",
        PLAN,
    ),
    Mutant(
        "default budget",
        S + "plan.py",
        "budget = replace(budget, max_graphs=len(policy.capture_sizes(cfg)))",
        "budget = replace(budget, max_graphs=len(policy.capture_sizes(cfg)) + 1)",
        PLAN,
    ),
    Mutant(
        "shared pool",
        S + "plan_result.py",
        'memory_bytes = float(own.max(initial=0.0) if graph_pool == "shared" else own.sum())',
        "memory_bytes = float(own.sum())",
        PLAN,
    ),
    Mutant(
        "work bound",
        S + "plan.py",
        "if graphs * num_candidates**2 > MAX_PROGRAMME_CELLS:",
        "if graphs * num_candidates > MAX_PROGRAMME_CELLS:",
        PLAN,
    ),
    Mutant(
        "memory affordable",
        S + "plan.py",
        "affordable = own <= budget.memory_mib * MIB",
        "affordable = own < budget.memory_mib * MIB",
        PLAN,
    ),
    Mutant(
        "Pareto keep",
        S + "optimum.py",
        "ordered[1:] < np.minimum.accumulate(ordered)[:-1]",
        "ordered[1:] <= np.minimum.accumulate(ordered)[:-1]",
        PLAN,
    ),
    Mutant(
        "median rows",
        S + "plan_inputs.py",
        "series = series.groupby(level=0).median().sort_index()",
        "series = series.groupby(level=0).mean().sort_index()",
        PLAN,
    ),
    Mutant(
        "zero counts kept",
        S + "plan_inputs.py",
        "grouped = grouped[grouped > 0]",
        "grouped = grouped[grouped >= 0]",
        PLAN,
    ),
    Mutant(
        "blank cells",
        S + "plan_inputs.py",
        "    if blank.any():  # a blank",
        "    if False:  # a blank",
        PLAN,
    ),
    Mutant(
        "table outside",
        S + "plan_inputs.py",
        "outside = (sizes < self.sizes[0]) | (sizes > self.sizes[-1])",
        "outside = sizes > self.sizes[-1]",
        PLAN,
    ),
    Mutant(
        "V1 rows first",
        S + "plan_inputs.py",
        'if unit and (frame.batch_unit == "tokens").any():',
        'if unit and (frame.batch_unit == "tokens").all():',
        PLAN,
    ),
    Mutant(
        "steps tokens",
        S + "plan_inputs.py",
        'proposals = _positive_ints(decode, "num_speculating", path, 0) '
        "* cfg.num_speculative_tokens",
        'proposals = _positive_ints(decode, "num_speculating", path, 0) * cfg.decode_query_len',
        PLAN,
    ),
    Mutant(
        "count exact",
        S + "plan_inputs.py",
        '_positive_ints(frame, "count", path, 0, MAX_EXACT)',
        '_positive_ints(frame, "count", path, 1, MAX_EXACT)',
        PLAN,
    ),
    # specdec
    Mutant(
        "draft cache after verify",
        P + "engine.py",
        "seq.draft_len = seq.seq_len - 1 + min(a + 1, k)",
        "seq.draft_len = seq.seq_len - 1 + min(a, k)",
        SPEC,
    ),
    Mutant(
        "admission",
        P + "engine.py",
        "requests[waiting[0]].arrival_step <= step",
        "requests[waiting[0]].arrival_step < step",
        SPEC,
    ),
    Mutant(
        "proposals near the end",
        P + "engine.py",
        "spec = [s for s in running if k > 0 and s.seq_len + k < max_len]",
        "spec = [s for s in running if k > 0 and s.seq_len + k <= max_len]",
        SPEC,
    ),
    Mutant(
        "accepted tokens appended",
        P + "engine.py",
        "generated += seq.append(tokens[: a + 1])",
        "generated += seq.append(tokens[:a])",
        SPEC,
    ),
    Mutant(
        "V1 default proposer",
        P + "records.py",
        '"vllm-0.6.0" if v1 else self.engine',
        '"adaptive" if v1 else self.engine',
        SPEC,
    ),
    Mutant(
        "V1 default scorer",
        P + "records.py",
        'object.__setattr__(self, "scorer", "mqa" if v1 else "batch-expansion")',
        'object.__setattr__(self, "scorer", "batch-expansion")',
        SPEC,
    ),
    Mutant(
        "temperature floor",
        P + "records.py",
        "MIN_TEMPERATURE <= t <= MAX_TEMPERATURE",
        "0 <= t <= MAX_TEMPERATURE",
        SPEC,
    ),
    Mutant(
        "mixed load first S",
        P + "requests.py",
        "        if i >= max_num_seqs:\n",
        "        if i > max_num_seqs:\n",
        SPEC,
    ),
    Mutant(
        "accepted prefix",
        P + "rejection.py",
        "num_accepted = accepted.long().cumprod(dim=1).sum(dim=1)",
        "num_accepted = accepted.long().sum(dim=1)",
        REJECTION + SPEC,
    ),
    Mutant(
        "greedy stop token",
        P + "rejection.py",
        "return _emit(draft_tokens, draft_tokens == best[:, :-1], best)",
        "return _emit(draft_tokens, draft_tokens == best[:, 1:], best)",
        REJECTION + SPEC,
    ),
    Mutant(
        "rejection test",
        P + "rejection.py",
        "accepted = u * q < p",
        "accepted = u * p < q",
        REJECTION,
    ),
    Mutant(
        "residual",
        P + "rejection.py",
        "residual = (target_probs[:, :k] - draft_probs).clamp_min(0.0)",
        "residual = target_probs[:, :k]",
        REJECTION,
    ),
    # bench/provenance.py, bench/export.py
    Mutant(
        "versions swapped",
        "graphlab/bench/provenance.py",
        '"cuda_version": torch.version.cuda or "none",\n'
        '        "cudnn_version": str(cudnn or "none"),',
        '"cuda_version": str(cudnn or "none"),\n'
        '        "cudnn_version": torch.version.cuda or "none",',
        PROVENANCE,
    ),
    Mutant(
        "torch_threads bool",
        "graphlab/bench/sweeps.py",
        'check_int("torch_threads (or None)", torch_threads, 1)',
        'check_int("torch_threads (or None)", torch_threads, 0)',
        PROVENANCE,
    ),
    Mutant(
        "disk full names csv",
        "graphlab/bench/export.py",
        "            error.filename = str(path)\n",
        "            pass\n",
        PROVENANCE,
    ),
    # cli/ argument types and checks
    Mutant(
        "range 3:3",
        C + "arguments.py",
        "if bounds is None or bounds[0] > bounds[1]:",
        "if bounds is None or bounds[0] >= bounds[1]:",
        CLI,
    ),
    Mutant(
        "range end",
        C + "arguments.py",
        "return range(bounds[0], bounds[1] + 1)",
        "return range(bounds[0], bounds[1])",
        CLI,
    ),
    Mutant(
        "int upper bound",
        "graphlab/errors.py",
        "(maximum is not None and value > maximum)",
        "(maximum is not None and value > maximum + 1)",
        CLI,
    ),
    Mutant(
        "out writable",
        C + "arguments.py",
        "    if not os.access(existing, os.W_OK | os.X_OK):\n",
        "    if False:\n",
        CLI,
    ),
    Mutant(
        "crash-map out first",
        C + "crash_map.py",
        "    check_out_file(args.out)\n    frame = crash_map(",
        "    frame = crash_map(",
        CLI,
    ),
    Mutant(
        "repro json tokens",
        C + "repro.py",
        '"num_tokens": s.num_speculating * q + s.num_seqs - s.num_speculating',
        '"num_tokens": s.num_seqs * q',
        SPEC,
    ),
    Mutant(
        "repro token bound",
        C + "repro.py",
        "if args.num_requests * args.max_model_len > REPRO_MAX_TOKENS:",
        "if args.num_requests * args.max_model_len > 2 * REPRO_MAX_TOKENS:",
        SPEC,
    ),
    Mutant(
        "negative range matcher",
        C + "arguments.py",
        r'r"^-\d+(:-?\d+)?$|^-\d*\.\d+$"',
        r'r"^-\d+$|^-\d*\.\d+$"',
        CLI,
    ),
    Mutant(
        "audit exit refused",
        C + "audit.py",
        "return EXIT_REFUSED if report.startup_error else 0",
        "return 0",
        CLI,
    ),
    # views/explorer_figure.py, views/widgets.py
    Mutant(
        "stale crash map",
        "graphlab/views/explorer_figure.py",
        "key = (state.engine, state.max_num_batched_tokens, MAP_VALUES[state.map_value])",
        "key = (state.engine, None, MAP_VALUES[state.map_value])",
        WIDGETS,
    ),
    Mutant(
        "S bound 512",
        "graphlab/views/explorer_figure.py",
        'check_int("max_num_seqs", self.max_num_seqs, 1, MAX_NUM_SEQS)',
        'check_int("max_num_seqs", self.max_num_seqs, 1, MAX_NUM_SEQS - 1)',
        WIDGETS,
    ),
    Mutant(
        "colour scale",
        "graphlab/views/explorer_figure.py",
        "max(1.0, float(finite.max(initial=0)))",
        "max(1.0, float(finite.min(initial=0)))",
        WIDGETS,
    ),
    Mutant(
        "T bound",
        "graphlab/views/explorer_figure.py",
        "self.max_num_batched_tokens,\n                1,\n"
        "                MAX_NUM_BATCHED_TOKENS,\n",
        "self.max_num_batched_tokens,\n                1,\n",
        WIDGETS,
    ),
    Mutant(
        "T only for V1",
        "graphlab/views/widgets.py",
        'self.controls["max_num_batched_tokens"].disabled = not reads',
        'self.controls["max_num_batched_tokens"].disabled = False',
        WIDGETS,
    ),
]


def run_tests(tests: tuple[str, ...]) -> tuple[bool, float]:
    """(passed, seconds) of pytest -x over tests."""
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
    )
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=ROOT,
            env=env,
            capture_output=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - start
    return done.returncode == 0, time.monotonic() - start


def apply(mutant: Mutant) -> str:
    """The original text of the mutant's file, after writing the mutated one (main checked that
    the snippet occurs once)."""
    path = ROOT / mutant.path
    text = path.read_text()
    path.write_text(text.replace(mutant.old, mutant.new))
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default="", help="run the mutants whose name or path contains this"
    )
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument(
        "--check", action="store_true", help="check that every snippet occurs once, and exit"
    )
    args = parser.parse_args(argv)
    mutants = [m for m in MUTANTS if args.only in m.name or args.only in m.path]
    if args.list:
        for m in mutants:
            print(f"{m.path}: {m.name}")
        return 0
    for m in mutants:  # every snippet present once, before changing anything
        if (count := (ROOT / m.path).read_text().count(m.old)) != 1:
            raise SystemExit(
                f"mutant {m.name!r}: the snippet occurs {count} times in {m.path}, not once "
                "(the code moved: update the mutant)"
            )
    if args.check:
        print(f"{len(mutants)} mutants, every snippet found once")
        return 0
    survived = []
    for i, m in enumerate(mutants, 1):
        original = apply(m)
        try:
            passed, seconds = run_tests(m.tests)
        finally:  # always restore, also on Ctrl-C
            (ROOT / m.path).write_text(original)
        print(
            f"[{i}/{len(mutants)}] {'SURVIVED' if passed else 'caught  '} {m.path}: {m.name} "
            f"({seconds:.0f} s)",
            flush=True,
        )
        if passed:
            survived.append(m)
    caught = len(mutants) - len(survived)
    print(f"\ncaught {caught} of {len(mutants)}: {100 * caught / max(1, len(mutants)):.1f}%")
    for m in survived:
        print(f"survived: {m.path}: {m.name}: {m.old.strip()!r} -> {m.new.strip()!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
