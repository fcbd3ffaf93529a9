"""`graphlab.sizing.planner.plan` and `python -m graphlab plan`: exact optimum, never worse than the
default, inputs, CLI."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from graphlab.cli import main
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import TABLE_ENGINES, get_engine, round_for_spec_decode
from graphlab.sizing.planner.compare import eager_penalty_tokens, fewest_graphs
from graphlab.sizing.planner.plan import (
    MIB,
    NO_GRAPHS,
    V1_ENGINES,
    Budget,
    PlanRequest,
    SizeTable,
    Workload,
    plan,
    plan_for,
    read_graph_memory,
    read_latency,
    read_spec_decode_steps,
    uniform_workload,
)
from graphlab.sizing.planner.result import evaluate

V0, V1 = (
    dict(engine="vllm-0.6.0", batch_unit="rows", num_speculative_tokens=0),
    dict(engine="vllm-0.33.0", batch_unit="tokens", num_speculative_tokens=3),
)
CAPTURED = (4, 8, 16, 24)  # multiples of 1 + k = 4: sizes a V1 run with k = 3 captures

# The table's V1 engines: the releases between them are checked against the wheels elsewhere.
TABLE_V1_ENGINES = tuple(n for n in TABLE_ENGINES if n in V1_ENGINES)


def bench_latency(run: dict, model: str = "tiny", scale: float = 1.0) -> pd.DataFrame:
    """latency.csv rows of one run (bench's columns): eager and graph mode per batch size up to 28,
    graph mode eager above the largest graph; graph ms = scale*(1 + size/100), eager =
    scale*(1.2 + n/50)."""
    q = 1 + run["num_speculative_tokens"] if run["batch_unit"] == "tokens" else 1
    rows = []
    for n in range(q, 29, q):
        graph = next((g for g in CAPTURED if g >= n), None)
        common = dict(
            run, model=model, dtype="float32", backend="cpu-emulated", num_reqs=n // q, batch_size=n
        )
        rows.append(
            dict(
                common,
                mode="eager",
                path="eager",
                graph_size=None,
                median_ms=scale * (1.2 + n / 50),
            )
        )
        rows.append(
            dict(
                common,
                mode="graph",
                path="graph" if graph else "eager",
                graph_size=graph,
                median_ms=scale * (1 + graph / 100) if graph else scale * (1.2 + n / 50),
            )
        )
    return pd.DataFrame(rows)


def bench_memory(run: dict, model: str = "tiny", per_size: int = 1000) -> pd.DataFrame:
    """graph_memory.csv rows of one run (bench's columns): each pool mode, largest graph first; a
    graph of size s holds per_size*s bytes (predicted); a shared pool's later graphs add nothing."""
    rows = []
    for pool in ("shared", "separate"):
        for order, size in enumerate(sorted(CAPTURED, reverse=True)):
            own = per_size * size
            rows.append(
                dict(
                    run,
                    model=model,
                    dtype="float32",
                    backend="cpu-emulated",
                    graph_pool=pool,
                    capture_order=order,
                    capture_size=size,
                    num_reqs=size // 4,
                    predicted_bytes=own,
                    memory_bytes=own if pool == "separate" or order == 0 else 0,
                    memory_kind="predicted",
                )
            )
    return pd.DataFrame(rows)


def bench_steps() -> pd.DataFrame:
    """spec_decode_steps.csv rows (bench's columns): two engines' runs of the same load, S = 8,
    k = 4, a prefill step then decode steps; the second engine's steps differ so reading it would
    show."""
    rows = []
    for engine, shift in (("vllm-0.6.0", 0), ("adaptive", 1)):
        for step, (kind, seqs, speculating) in enumerate(
            [
                ("prefill", 1, 0),
                ("decode", 1, 0),
                ("decode", 3, 2),
                ("decode", 3, 2),
                ("decode", 8, 8 - shift),
            ]
        ):
            rows.append(
                dict(
                    engine=engine,
                    model="tiny",
                    dtype="float32",
                    max_num_seqs=8,
                    num_speculative_tokens=4,
                    step=step,
                    kind=kind,
                    num_seqs=seqs,
                    num_speculating=speculating,
                    batch_size=seqs + 4 * speculating,
                    backend="cpu-emulated",
                )
            )
    return pd.DataFrame(rows)


@pytest.fixture
def bench(tmp_path):
    """A bench output folder like a current quick run's: V0 and V1 latency and memory rows, two
    engines' steps."""
    pd.concat([bench_latency(V0), bench_latency(V1, scale=2.0)]).to_csv(
        tmp_path / "latency.csv", index=False
    )
    pd.concat([bench_memory(V0), bench_memory(V1, per_size=3000)]).to_csv(
        tmp_path / "graph_memory.csv", index=False
    )
    bench_steps().to_csv(tmp_path / "spec_decode_steps.csv", index=False)
    return tmp_path


def linear_memory(top: int, per_token: float = 1000.0, base: float = 50_000.0) -> SizeTable:
    """Graph memory growing with size (bytes), listed for every size up to top."""
    sizes = np.arange(1, top + 1)
    return SizeTable(sizes, base + per_token * sizes, "test memory", "predicted")


def random_latency(rng, top: int) -> tuple[SizeTable, SizeTable]:
    """Graph and eager latency growing with size, with random steps; eager above graph at some
    sizes."""
    sizes = np.arange(1, top + 1)
    graph = 1.0 + np.cumsum(rng.uniform(0.0, 0.2, top))
    eager = graph + rng.uniform(-0.5, 0.6, top)
    return SizeTable(sizes, graph, "graph"), SizeTable(
        sizes, np.maximum.accumulate(np.maximum(eager, 0.1)), "eager"
    )


def brute_force(engine, cfg, workload, budget, memory=None, latency=None):
    """Best plan over every subset of the sizes vLLM keeps (multiples of 1+k up to T, up to one past
    the largest batch) whose graphs all serve some batch: key (-graph fraction, padding waste), or
    (mean step latency,) with latency tables; None when no subset fits the budget."""
    q, policy = cfg.decode_query_len, get_engine(engine)
    tokens = policy.effective_max_num_batched_tokens(cfg)
    universe = [s for s in range(q, min(tokens, int(workload.sizes[-1]) + 2 * q) + 1, q)]
    best = None
    for g in range(1, (budget.max_graphs or len(universe)) + 1):
        for subset in itertools.combinations(universe, g):
            out = evaluate(policy, cfg, subset, workload, memory, budget.graph_pool, latency)
            if budget.memory_mib is not None and out.memory_bytes > budget.memory_mib * MIB:
                continue
            if len(set(out.padded.tolist()) - {0}) < g:  # a graph no batch replays is not a plan
                continue
            key = (out.mean_step_ms,) if latency else (-out.graph_fraction, out.mean_padding_waste)
            if best is None or key < best:
                best = key
    return best


def plan_key(result, latency):
    out = result.plan
    return (out.mean_step_ms,) if latency else (-out.graph_fraction, out.mean_padding_waste)


def small_cases():
    rng = np.random.default_rng(7)
    for engine, seqs, k, tokens in itertools.product(
        TABLE_V1_ENGINES, (1, 3, 5, 9), (0, 1, 2), (None, 7)
    ):
        cfg = SizingConfig(seqs, k, tokens)
        if tokens is not None and tokens < seqs:
            continue
        q, top = 1 + k, min(tokens or 10**6, seqs * (1 + k))
        if top // q > 11:
            continue
        observed = Workload.from_counts(
            rng.integers(1, top + 1, 6), rng.integers(1, 5, 6), "random"
        )
        for workload in (None, observed):
            yield engine, cfg, workload, rng


CASES = list(small_cases())


def test_brute_force_covers_enough_cases():
    assert len(CASES) >= 60


@pytest.mark.parametrize("chunk", range(3))
def test_padding_optimum_equals_brute_force(chunk):
    for engine, cfg, workload, rng in CASES[chunk::3]:
        load = workload or uniform_workload(get_engine(engine), cfg)
        memory = linear_memory(200)
        for budget in (
            Budget(1),
            Budget(2),
            Budget(3),
            Budget(None, 0.06),
            Budget(2, 0.0485 + 0.001 * rng.integers(0, 9)),
            Budget(3, 0.15, "separate"),
            Budget(None, 0.1, "separate"),
            Budget(2, 1.0, "separate"),  # the graph limit binds, not the memory
        ):
            try:
                result = plan(engine, cfg, workload, budget, memory)
            except GraphlabError:  # the budget is below the smallest graph
                assert brute_force(engine, cfg, load, budget, memory) is None
                continue
            assert plan_key(result, False) == pytest.approx(
                brute_force(engine, cfg, load, budget, memory)
            ), (cfg, budget)
            assert budget.max_graphs is None or len(result.capture_sizes) <= budget.max_graphs


@pytest.mark.parametrize("chunk", range(2))
def test_latency_optimum_equals_brute_force(chunk):
    for engine, cfg, workload, rng in CASES[chunk::2]:
        load = workload or uniform_workload(get_engine(engine), cfg)
        latency, memory = random_latency(rng, 200), linear_memory(200)
        for budget in (Budget(1), Budget(3), Budget(2, 0.06), Budget(3, 0.12, "separate")):
            try:
                result = plan(engine, cfg, workload, budget, memory, latency)
            except GraphlabError:
                assert brute_force(engine, cfg, load, budget, memory, latency) is None
                continue
            assert plan_key(result, True) == pytest.approx(
                brute_force(engine, cfg, load, budget, memory, latency)
            )


def property_configs():
    rng = np.random.default_rng(11)
    for _ in range(120):
        seqs, k = int(rng.integers(1, 400)), int(rng.integers(0, 9))
        tokens = [None, int(rng.integers(seqs, 4 * seqs * (k + 1) + 2))][int(rng.integers(0, 2))]
        yield str(rng.choice(TABLE_V1_ENGINES)), SizingConfig(seqs, k, tokens)


@pytest.mark.parametrize("engine,cfg", list(property_configs()))
def test_never_worse_than_default_at_its_graph_count_memory_and_coverage(engine, cfg):
    policy = get_engine(engine)
    default = policy.capture_sizes(cfg)
    if not default:  # 0.12/0.13 refuse to start there: no default to beat
        return
    memory = linear_memory(max(8192, cfg.max_num_seqs * cfg.decode_query_len))
    budget_mib = (
        evaluate(policy, cfg, default, uniform_workload(policy, cfg), memory).memory_bytes / MIB
    )
    for budget in (Budget(len(default)), Budget(len(default), budget_mib)):
        free = plan(engine, cfg, None, budget, memory)
        assert free.plan.graph_fraction >= free.default.graph_fraction
        assert (
            free.plan.memory_bytes <= free.default.memory_bytes + 1e-6 or budget.memory_mib is None
        )
        same = plan(engine, cfg, None, budget, memory, max_capture_size=default[-1])
        assert same.plan.graph_fraction == pytest.approx(same.default.graph_fraction)
        assert same.plan.mean_padding_waste <= same.default.mean_padding_waste + 1e-9
    # Coverage first: with only a graph budget the largest reachable batch always has a graph.
    assert (
        free.capture_sizes[-1] >= uniform_workload(get_engine(engine), cfg).sizes[-1]
        or budget.memory_mib is not None
    )


@pytest.mark.parametrize("engine", TABLE_V1_ENGINES)
def test_plans_only_sizes_vllm_keeps(engine):
    for seqs, k, tokens in ((256, 4, None), (6, 6, None), (100, 3, 300), (33, 0, 40)):
        cfg = SizingConfig(seqs, k, tokens)
        sizes = list(plan(engine, cfg, budget=Budget(12)).capture_sizes)
        assert (
            round_for_spec_decode(sizes, cfg.decode_query_len) == sizes
            or sorted(round_for_spec_decode(sizes, cfg.decode_query_len)) == sizes
        )
        assert all(
            s % cfg.decode_query_len == 0
            and s <= get_engine(engine).effective_max_num_batched_tokens(cfg)
            for s in sizes
        )


def test_reference_config_plan_and_default():
    result = plan("vllm-0.33.0", SizingConfig(256, 4), budget=Budget(40))
    assert result.capture_sizes[-1] == 1280 and result.plan.graph_fraction == 1.0
    assert result.default.graph_fraction == 102 / 256  # the default stops at 512 = 102 requests * 5
    assert result.eager_sizes == () and result.eager_reason is None
    everything = plan("vllm-0.33.0", SizingConfig(256, 4), budget=Budget(256))
    assert everything.plan.mean_padding_waste == 0.0 and len(everything.capture_sizes) == 256


@pytest.mark.parametrize(
    "method, runner, noted",
    [("eagle", "auto", True), ("draft_model", "v1", True), ("draft_model", "auto", False)],
)
def test_plan_names_the_drafter_that_shares_its_sizes(method, runner, noted):
    # vLLM builds the drafter's graphs from the same capture list (graphlab.sizing.drafter);
    # draft_model on model runner V2 (the default) captures none, so there is nothing to share.
    cfg = SizingConfig(8, 3, speculative_method=method, model_runner=runner)
    notes = [n for n in plan("vllm-0.33.0", cfg).notes if n.startswith("the drafter")]
    assert len(notes) == noted
    assert not [n for n in plan("vllm-0.33.0", SizingConfig(8, 3)).notes if "drafter" in n]


def test_memory_budget_leaves_top_batches_eager_and_says_why():
    memory = linear_memory(2000)
    result = plan(
        "vllm-0.33.0",
        SizingConfig(64, 3),
        budget=Budget(8, memory(np.array([100]))[0] / MIB),
        memory=memory,
    )
    assert result.capture_sizes[-1] == 100 and result.eager_sizes[0] == 104
    assert "memory budget" in result.eager_reason


def test_spec_decode_steps_tokens_equal_batch_expansion_rows(bench):
    frame = bench_steps()
    run = frame[(frame.engine == "vllm-0.6.0") & (frame.kind == "decode")]
    workload = read_spec_decode_steps(bench / "spec_decode_steps.csv", SizingConfig(8, 4))
    expected = run.batch_size.value_counts(normalize=True).sort_index()
    assert workload.sizes.tolist() == expected.index.tolist() == [1, 11, 40]
    assert workload.weights == pytest.approx(expected.to_numpy())


def test_latency_reads_the_v1_token_rows_of_a_mixed_file(bench):
    graph, eager = read_latency(bench / "latency.csv")
    assert graph(np.array([8]))[0] == pytest.approx(2.0 * 1.08) and eager(np.array([12]))[
        0
    ] == pytest.approx(2.0 * 1.44)
    assert graph(np.array([12]))[0] == pytest.approx(
        (graph(np.array([8]))[0] + graph(np.array([16]))[0]) / 2
    )
    assert graph.kind == "cpu-emulated" and graph.note == ""
    with pytest.raises(GraphlabError, match=r"has sizes 4\.\.24; size 25 is outside"):
        graph(np.array([25]))
    with pytest.raises(
        GraphlabError, match=r"has sizes 4\.\.28"
    ):  # the V0 rows start at 1: not read
        eager(np.array([1]))
    v0 = read_latency(
        bench / "latency.csv", engine="vllm-0.6.0"
    )  # picked: the V0 rows, with their note
    assert (
        v0[1](np.array([1]))[0] == pytest.approx(1.22)
        and "V0 rows (one token per request) stand in" in v0[0].note
    )


def test_v0_rows_stand_in_for_tokens_and_the_plan_says_so(tmp_path):
    bench_latency(V0).to_csv(tmp_path / "latency.csv", index=False)
    latency = read_latency(tmp_path / "latency.csv")
    assert latency[0](np.array([4]))[0] == pytest.approx(1.04) and latency[1](np.array([5]))[
        0
    ] == pytest.approx(1.3)
    result = plan("vllm-0.33.0", SizingConfig(6, 3), budget=Budget(2), latency=latency)
    assert sum("V0 rows (one token per request) stand in" in note for note in result.notes) == 1
    assert not any(
        "V0" in note for note in plan("vllm-0.33.0", SizingConfig(6, 3), budget=Budget(2)).notes
    )


def test_two_models_are_never_mixed(tmp_path):
    pd.concat(
        [bench_latency(V0), bench_latency(V1, "100m"), bench_latency(V1, "1b", scale=5.0)]
    ).to_csv(tmp_path / "latency.csv", index=False)
    pd.concat([bench_memory(V1, "100m"), bench_memory(V1, "1b", per_size=7000)]).to_csv(
        tmp_path / "graph_memory.csv", index=False
    )
    for read in (read_latency, read_graph_memory):
        with pytest.raises(GraphlabError, match="several model: 100m, 1b; pick one with --model"):
            read(tmp_path / f"{'latency' if read is read_latency else 'graph_memory'}.csv")
    assert read_latency(tmp_path / "latency.csv", model="1b")[0](np.array([8]))[0] == pytest.approx(
        5.0 * 1.08
    )
    assert (
        read_graph_memory(tmp_path / "graph_memory.csv", model="1b")(np.array([8]))[0] == 7000 * 8
    )
    with pytest.raises(GraphlabError, match="no rows with model=7b; it has 100m, 1b"):
        read_latency(tmp_path / "latency.csv", model="7b")
    pd.concat([bench_latency(V1), bench_latency(dict(V1, num_speculative_tokens=5))]).to_csv(
        tmp_path / "k.csv", index=False
    )
    with pytest.raises(
        GraphlabError, match="several num_speculative_tokens: 3, 5; pick one with --bench-k"
    ):
        read_latency(tmp_path / "k.csv")
    assert read_latency(tmp_path / "k.csv", num_speculative_tokens=5)[0].sizes.tolist() == [
        8,
        16,
        24,
    ]


def test_graph_memory_table_is_per_graph(bench):
    memory = read_graph_memory(
        bench / "graph_memory.csv"
    )  # the V1 rows' separate pool: each graph's own
    assert memory.kind == "predicted" and memory(np.array([8, 24])).tolist() == [
        3000 * 8,
        3000 * 24,
    ]
    shared = bench_memory(V1)
    shared[shared.graph_pool == "shared"].to_csv(bench / "shared.csv", index=False)
    assert (
        read_graph_memory(bench / "shared.csv")(np.array([8]))[0] == 1000 * 8
    )  # predicted_bytes, not the 0 increment


def run(capsys, *argv):
    code = main(["plan", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json(capsys):
    code, out, err = run(
        capsys,
        "--max-num-seqs",
        "256",
        "--num-speculative-tokens",
        "4",
        "--max-graphs",
        "40",
        "--json",
    )
    d = json.loads(out)
    assert code == 0 and err == ""
    for key in (
        "capture_sizes",
        "mean_padding_waste",
        "graph_fraction",
        "default_capture_sizes",
        "default_mean_padding_waste",
        "default_graph_fraction",
        "vllm_flag",
    ):
        assert key in d
    assert (
        d["vllm_flag"]
        == "--compilation-config '"
        + json.dumps({"cudagraph_capture_sizes": d["capture_sizes"]})
        + "'"
    )
    assert len(d["capture_sizes"]) == 40 and d["graph_fraction"] == 1.0
    assert d["default_capture_sizes"] == list(
        get_engine("vllm-0.33.0").capture_sizes(SizingConfig(256, 4))
    )


def test_cli_text_with_csvs(capsys, tmp_path, bench):
    observed = tmp_path / "observed.csv"
    observed.write_text("batch_size,count\n4,10\n8,1\n12,3\n")
    code, out, _ = run(
        capsys,
        "--max-num-seqs",
        "8",
        "--num-speculative-tokens",
        "3",
        "--batch-sizes",
        str(observed),
        "--max-graphs",
        "2",
        "--latency",
        str(bench / "latency.csv"),
        "--graph-memory",
        str(bench / "graph_memory.csv"),
        "--memory-mib",
        "1",
    )
    assert (
        code == 0
        and "vllm: --compilation-config" in out
        and "mean step" in out
        and "memory 0." in out
    )


def test_cli_picks_a_model(capsys, tmp_path):
    pd.concat([bench_latency(V1, "100m"), bench_latency(V1, "1b", scale=5.0)]).to_csv(
        tmp_path / "l.csv", index=False
    )
    argv = (
        "--max-num-seqs",
        "6",
        "--num-speculative-tokens",
        "3",
        "--max-graphs",
        "2",
        "--json",
        "--latency",
        str(tmp_path / "l.csv"),
    )
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--model" in err
    code, out, _ = run(capsys, *argv, "--model", "1b")
    assert code == 0 and json.loads(out)["mean_step_ms"] > 5.0


@pytest.mark.parametrize(
    "argv,content,named",
    [
        (
            [
                "--max-num-seqs",
                "1",
                "--num-speculative-tokens",
                "8",
                "--max-num-batched-tokens",
                "5",
            ],
            None,
            "no decode batch",
        ),
        (
            [
                "--max-num-seqs",
                "6",
                "--num-speculative-tokens",
                "3",
                "--memory-mib",
                "0.01",
                "--graph-memory",
                "BENCH/graph_memory.csv",
            ],
            None,
            "below the smallest graph",
        ),
        (
            [
                "--max-num-seqs",
                "8",
                "--memory-mib",
                "inf",
                "--graph-memory",
                "BENCH/graph_memory.csv",
            ],
            None,
            "'inf'",
        ),
        (
            [
                "--max-num-seqs",
                "8",
                "--memory-mib",
                "nan",
                "--graph-memory",
                "BENCH/graph_memory.csv",
            ],
            None,
            "'nan'",
        ),
        (
            ["--max-num-seqs", "8", "--batch-sizes", "CSV"],
            "batch_size\n4\n99999999999999999999\n",
            "integers in 1..1048576, got '99999999999999999999'",
        ),
        (
            ["--max-num-seqs", "8", "--batch-sizes", "CSV"],
            "batch_size\n9223372036854775807\n",
            "integers in 1..1048576, got '9223372036854775807'",
        ),
        (["--max-num-seqs", "8", "--batch-sizes", "CSV"], "batch_size\n4\ninf\n", "got 'inf'"),
        (
            ["--max-num-seqs", "8", "--batch-sizes", "CSV"],
            "batch_size,count\n4,1\n8,9223372036854775807\n",
            "column 'count' needs integers in 0..9007199254740992",
        ),
        (
            ["--max-num-seqs", "8", "--latency", "CSV"],
            "batch_size,path,graph_size,median_ms\n4,graph,4,1.0\n",
            "missing column 'batch_unit'",
        ),
        (
            ["--max-num-seqs", "8", "--graph-memory", "CSV"],
            "batch_unit,engine,model,dtype,num_speculative_tokens,capture_size,memory_bytes,memory_kind,graph_pool\n"
            "tokens,vllm-0.33.0,tiny,float32,0,4,10,predicted,shared\n",
            "missing column 'predicted_bytes'",
        ),
        (
            ["--max-num-seqs", "8", "--latency", "BENCH/latency.csv", "--model", "1b"],
            None,
            "no rows with model=1b",
        ),
        (["--max-num-seqs", "8", "--memory-mib", "5"], None, "--graph-memory"),
        (
            ["--max-num-seqs", "8", "--batch-sizes", "CSV"],
            "batch_size,tokens\n4,1\n",
            "unknown column 'tokens'",
        ),
        (["--max-num-seqs", "8", "--batch-sizes", "CSV"], "batch_size\n4\nfour\n", "'four'"),
        (
            ["--max-num-seqs", "8", "--batch-sizes", "CSV"],
            "count\n4\n",
            "missing column 'batch_size'",
        ),
        (
            ["--max-num-seqs", "8", "--batch-sizes", "CSV"],
            "batch_size\n4\n9000\n",
            "exceeds max_num_batched_tokens",
        ),
        (["--max-num-seqs", "8", "--batch-sizes", "CSV"], 'batch_size\n"4\n', "cannot read CSV"),
        (
            ["--max-num-seqs", "8", "--latency", "CSV"],
            "batch_unit,engine,model,dtype,num_speculative_tokens,backend,"
            "batch_size,path,graph_size,median_ms\ntokens,vllm-0.33.0,tiny,float32,0,cpu,4,graph,4,1.0\n",
            "missing column 'mode'",
        ),
        (
            ["--max-num-seqs", "8", "--steps", "BENCH/spec_decode_steps.csv"],
            None,
            "no run with max_num_seqs=8, k=0; it has (max_num_seqs, k) in (8, 4)",
        ),
        (["--max-num-seqs", "8", "--engine", "vllm-0.5.5"], None, "'vllm-0.5.5'"),
        (["--max-num-seqs", "8", "--max-graphs", "0"], None, "got 0"),
        (["--max-num-seqs", "300", "--max-num-batched-tokens", "100"], None, "refuses"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, tmp_path, bench, argv, content, named):
    if content is not None:
        (tmp_path / "in.csv").write_text(content)
    argv = [
        str(tmp_path / "in.csv") if a == "CSV" else a.replace("BENCH", str(bench)) for a in argv
    ]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert (
        err.count("\n") == 1 and err.startswith("error: ") and named in err and "np." not in err
    ), err


@pytest.mark.parametrize(
    "extra, named",
    [
        ([], "max_num_batched_tokens=10 is below"),
        (["--max-capture-size", "20"], "max_num_batched_tokens=10 is below"),
        (["--max-capture-size", "8"], "max_capture_size=8 is below"),
    ],
)
def test_a_step_rounding_past_the_ceiling_names_the_setting_that_sets_it(
    capsys, tmp_path, extra, named
):
    # 9 tokens fit in max_num_batched_tokens=10, but their graph is a multiple of 1+k=4: 12.
    (tmp_path / "in.csv").write_text("batch_size\n9\n")
    argv = ["--max-num-seqs", "2", "--num-speculative-tokens", "3", "--max-num-batched-tokens"]
    code, out, err = run(capsys, *argv, "10", "--batch-sizes", str(tmp_path / "in.csv"), *extra)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert named in err and "the smallest graph the workload can use (12 tokens" in err, err


ROUND_TRIP = [
    (256, 4, None, 40),
    (256, 4, None, None),
    (6, 6, None, 3),
    (100, 3, 300, 12),
    (33, 0, 40, 5),
    (256, 8, 8192, 40),
    (512, 1, 2048, 64),
    (1, 0, None, 1),
    (7, 15, 64, 2),
]


@pytest.mark.parametrize("engine", TABLE_V1_ENGINES)
def test_kit_engines_keep_the_planned_sizes(engine):
    for seqs, k, tokens, graphs in ROUND_TRIP:
        sizes = plan(engine, SizingConfig(seqs, k, tokens), budget=Budget(graphs)).capture_sizes
        explicit = SizingConfig(seqs, k, tokens, cudagraph_capture_sizes=sizes)
        assert get_engine(engine).capture_sizes(explicit) == sizes and not get_engine(
            engine
        ).startup_error(explicit)


@pytest.mark.vllm
def test_vllm_flag_round_trips_through_installed_vllm():
    """The printed flag, parsed by vLLM's own CLI, sized by its `_set_cudagraph_sizes` and rounded
    by its `adjust_cudagraph_sizes_for_spec_decode`, yields exactly the planned sizes, with no
    warning."""
    import shlex
    from types import SimpleNamespace

    from graphlab.against_vllm.installed import installed_sizing

    try:
        from vllm.config.compilation import CompilationConfig
        from vllm.engine.arg_utils import EngineArgs
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"vllm not importable: {error}")
    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    for seqs, k, tokens, graphs in ROUND_TRIP:
        result = plan("vllm-0.33.0", SizingConfig(seqs, k, tokens), budget=Budget(graphs))
        parsed = parser.parse_args(
            shlex.split(result.vllm_flag)
        ).compilation_config.cudagraph_capture_sizes
        sized = installed_sizing(SizingConfig(seqs, k, tokens, cudagraph_capture_sizes=parsed))
        assert sized["error"] is None and sized["warnings"] == ()
        rounded = SimpleNamespace(
            cudagraph_capture_sizes=list(sized["capture_sizes"]),
            max_cudagraph_capture_size=sized["capture_sizes"][-1],
        )
        CompilationConfig.adjust_cudagraph_sizes_for_spec_decode(rounded, 1 + k)
        assert (
            tuple(rounded.cudagraph_capture_sizes) == sized["capture_sizes"] == result.capture_sizes
        ), (seqs, k)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_budget_rejects_bad_graph_counts(bad):
    with pytest.raises(GraphlabError, match="max_graphs must be an integer >= 1"):
        Budget(bad)


@pytest.mark.parametrize("engine", TABLE_V1_ENGINES)
def test_default_figures_equal_the_audit(engine):
    from graphlab.sizing.audit import audit

    for cfg in (
        SizingConfig(256, 4),
        SizingConfig(100, 3, 300),
        SizingConfig(6, 6),
        SizingConfig(33, 0, 40),
    ):
        if not get_engine(engine).capture_sizes(cfg):
            continue
        summary = audit(engine, cfg).summary
        default = plan(engine, cfg).default
        assert default.mean_padding_waste == pytest.approx(summary.mean_padding_waste)
        assert default.graph_fraction == pytest.approx(summary.graph_fraction)


@pytest.mark.parametrize("engine", TABLE_V1_ENGINES)
def test_the_default_baseline_replays_full_graphs_at_sizes_rounded_to_1_plus_k(engine):
    from graphlab.sizing.dispatch import graph_families

    for cfg in (
        SizingConfig(8, 4),
        SizingConfig(6, 6),
        SizingConfig(256, 4),
        SizingConfig(100, 3, 300),
    ):
        if not get_engine(engine).capture_sizes(cfg):
            continue
        result, families = plan(engine, cfg), graph_families(engine, cfg)
        expected = [families.dispatch(int(n)).graph_size or 0 for n in result.workload.sizes]
        assert list(result.default.padded) == expected
        assert result.default_full_sizes == families.full_sizes
        assert all(s % cfg.decode_query_len == 0 for s in result.default_full_sizes)
    # Hand-checked: S 8, k 4 (verify batches 5..40) on FULL sizes 5, 10, 20, 25, 35, 40 pads 15
    # and 30 by 5 tokens each (1.25 per step; the raw list gave 1.875); S 6, k 6 fits exactly.
    if engine == "vllm-0.33.0":
        assert plan(engine, SizingConfig(8, 4)).default.mean_padding_waste == 1.25
        assert plan(engine, SizingConfig(6, 6)).default.mean_padding_waste == 0.0


def test_cli_text_leads_with_the_same_footing_and_flags_sizes_above_the_ceiling(capsys):
    code, out, _ = run(
        capsys, "--max-num-seqs", "256", "--num-speculative-tokens", "4", "--max-graphs", "40"
    )
    lines = out.splitlines()
    assert code == 0 and lines[1].startswith("same FULL graph count and coverage (")
    assert "up to 512 tokens" in lines[1] and "graph fraction 0.398 vs 0.398" in lines[1]
    # The default's FULL graphs end at 500 (line 3), so its 505- and 510-token steps replay the
    # one PIECEWISE size above that, 512: graphs the plan's 51 do not include.
    assert lines[3].endswith(", 480, 500")
    assert (
        "the default's steps of 505..510 tokens, above its largest FULL graph, replay its "
        "1 PIECEWISE size above it" in lines[1]
    )
    piecewise = next(line for line in lines if line.startswith("PIECEWISE graphs"))
    assert "default's 57 sizes up to 512 tokens with the plan's 40 up to 1280" in piecewise
    ceiling = next(line for line in lines if line.startswith("above vLLM's default ceiling"))
    assert ceiling.startswith("above vLLM's default ceiling of 512 tokens: 540, 570,")
    assert "PR 50488" in ceiling and "PR 54418" in ceiling
    # Without PIECEWISE graphs those steps run eagerly, as the line on mixed batches says.
    code, out, _ = run(
        capsys, "--max-num-seqs", "256", "--num-speculative-tokens", "4", "--max-graphs", "40",
        "--cudagraph-mode", "FULL_DECODE_ONLY",
    )  # fmt: skip
    eager = out.splitlines()
    assert code == 0 and "505..510 tokens, above its largest FULL graph, run eagerly" in eager[1]
    assert any(line.startswith("prefill and mixed batches: no PIECEWISE") for line in eager)
    # Within the ceiling, nothing is flagged.
    code, out, _ = run(capsys, "--max-num-seqs", "8", "--num-speculative-tokens", "4")
    assert code == 0 and "default ceiling" not in out


# --- what a user relies on: ties, repeated rows, zero counts, blank cells, limits -----------------


def test_equal_cost_plans_use_the_fewest_graphs():
    # Every graph step costs 1 ms whatever its size: one graph covering all is as fast as eight.
    flat = SizeTable(np.array([1, 64]), np.array([1.0, 1.0]), "flat graph latency", "cpu-emulated")
    eager = SizeTable(np.array([1, 64]), np.array([5.0, 5.0]), "eager latency", "cpu-emulated")
    result = plan(
        "vllm-0.33.0", SizingConfig(8), budget=Budget(max_graphs=8), latency=(flat, eager)
    )
    assert result.capture_sizes == (8,) and result.plan.mean_step_ms == pytest.approx(1.0)


def test_repeated_latency_rows_are_merged_by_their_median(tmp_path):
    # Three runs of the same sizes, the third one slow (a noisy neighbour): the median ignores it.
    runs = [bench_latency(V1), bench_latency(V1), bench_latency(V1, scale=10.0)]
    pd.concat(runs).to_csv(tmp_path / "latency.csv", index=False)
    graph_ms, eager_ms = read_latency(tmp_path / "latency.csv")
    assert graph_ms(np.array([4, 24])).tolist() == pytest.approx([1.04, 1.24])
    assert eager_ms(np.array([8])).tolist() == pytest.approx([1.2 + 8 / 50])


def test_zero_count_sizes_get_no_graph(capsys, tmp_path):
    observed = tmp_path / "observed.csv"
    observed.write_text("batch_size,count\n4,10\n8,0\n12,3\n")
    code, out, _ = run(
        capsys,
        "--max-num-seqs",
        "8",
        "--num-speculative-tokens",
        "3",
        "--batch-sizes",
        str(observed),
        "--max-graphs",
        "4",
        "--json",
    )
    d = json.loads(out)
    assert code == 0 and d["capture_sizes"] == [4, 12] and d["mean_padding_waste"] == 0.0
    observed.write_text("batch_size,count\n4,0\n8,0\n")
    code, out, err = run(capsys, "--max-num-seqs", "8", "--batch-sizes", str(observed))
    assert (
        code == 2 and out == "" and err.count("\n") == 1 and "no batch with a positive count" in err
    )


@pytest.mark.parametrize(
    "name, option",
    [
        ("latency.csv", "--latency"),
        ("graph_memory.csv", "--graph-memory"),
        ("spec_decode_steps.csv", "--steps"),
    ],
)
def test_blank_cells_and_cut_lines_name_the_file_line_and_column(capsys, bench, name, option):
    frame = pd.read_csv(bench / name)
    path = bench / f"broken_{name}"
    argv = [
        "--max-num-seqs",
        "8",
        "--num-speculative-tokens",
        "4" if option == "--steps" else "3",
        option,
        str(path),
    ]
    blank = frame.copy()
    blank.loc[3, "model"] = (
        None  # pandas 3 keeps NaN under astype(str): this once ended in a TypeError
    )
    blank.to_csv(path, index=False)
    code, out, err = run(capsys, *argv)
    assert (
        code == 2
        and err.count("\n") == 1
        and f"{str(path)!r}: line 5 has no value in column 'model'" in err
    )
    lines = frame.to_csv(index=False).splitlines()
    path.write_text(
        "\n".join(lines[:-1] + [",".join(lines[-1].split(",")[:2])])
    )  # a write cut short
    code, out, err = run(capsys, *argv)
    third = frame.columns[2]
    assert (
        code == 2
        and err.count("\n") == 1
        and f"line {len(lines)} has no value in column {third!r}" in err
    ), err


@pytest.mark.parametrize(
    "make, named",
    [
        (lambda: Workload.from_counts([4, 8], [1, np.inf], "api"), "counts must be finite"),
        (
            lambda: Workload.from_counts([4, 8], [1, -1], "api"),
            "counts must be finite numbers >= 0",
        ),
        (lambda: Workload(np.array([0, 4]), np.array([0.5, 0.5]), "api"), "integers >= 1"),
        (lambda: Workload(np.array([8, 4]), np.array([0.5, 0.5]), "api"), "ascending"),
        (
            lambda: Workload(np.array([4, 8]), np.array([0.5, np.nan]), "api"),
            "weights must be finite",
        ),
        (lambda: Budget(memory_mib="5"), "memory budget must be a finite number"),
        (lambda: Budget(memory_mib=True), "memory budget must be a finite number"),
        (lambda: Budget(max_graphs=2.0), "max_graphs must be an integer"),
        (
            lambda: plan(
                "vllm-0.33.0",
                SizingConfig(8, 2, num_speculative_tokens_per_batch_size=((1, 8, 2),)),
            ),
            "plan does not model num_speculative_tokens_per_batch_size",
        ),
        (
            lambda: plan(
                "vllm-0.33.0",
                SizingConfig(8, 2),
                latency=random_latency(np.random.default_rng(0), 64),
                eager_penalty=1.0,
            ),
            "give latency or eager_penalty, not both",
        ),
        (
            lambda: plan("vllm-0.33.0", SizingConfig(8, 2), eager_penalty=True),
            "eager_penalty must be a finite number",
        ),
        (
            lambda: plan("vllm-0.33.0", SizingConfig(8, 2), budget=Budget(memory_mib=64)),
            "a memory budget needs per-size graph memory",
        ),
    ],
)
def test_bad_planner_inputs_raise_one_clear_error(make, named):
    with pytest.raises(GraphlabError, match=named) as raised:
        make()
    assert "\n" not in str(raised.value)


def test_a_programme_too_large_for_seconds_is_refused_at_once(capsys):
    from graphlab.sizing.planner.plan import MAX_PROGRAMME_CELLS

    code, out, err = run(
        capsys,
        "--max-num-seqs",
        "2048",
        "--max-num-batched-tokens",
        "1048576",
        "--max-graphs",
        "2048",
    )
    most = MAX_PROGRAMME_CELLS // 2048**2
    assert code == 2 and err.count("\n") == 1 and f"plan handles at most {most} graphs" in err
    code, out, err = run(capsys, "--max-num-seqs", "4096", "--max-num-batched-tokens", "1048576")
    assert code == 2 and "4096 candidate graph sizes; plan handles at most 2048" in err


def test_without_a_budget_the_plan_captures_as_many_graphs_as_the_default():
    cfg = SizingConfig(256, 4)
    result = plan("vllm-0.33.0", cfg)
    default = get_engine("vllm-0.33.0").capture_sizes(cfg)
    assert (
        result.budget.max_graphs
        == len(default)
        == len(result.capture_sizes)
        == len(result.default.capture_sizes)
    )


def test_eager_penalty_optimum_equals_brute_force():
    # the cost: mean padding + penalty per eager step, over every subset of the kept sizes
    for engine, cfg, workload, _rng in CASES[::4]:
        load = workload or uniform_workload(get_engine(engine), cfg)
        for penalty in (0.0, 2.5, 40.0):
            for graphs in (1, 2):
                result = plan(engine, cfg, workload, Budget(graphs), eager_penalty=penalty)
                q = cfg.decode_query_len
                tokens = get_engine(engine).effective_max_num_batched_tokens(cfg)
                universe = range(q, min(tokens, int(load.sizes[-1]) + 2 * q) + 1, q)
                best = min(
                    result.mean_cost(evaluate(get_engine(engine), cfg, subset, load))
                    for g in range(1, graphs + 1)
                    for subset in itertools.combinations(universe, g)
                )
                assert result.mean_cost(result.plan) == pytest.approx(best), (cfg, penalty)
                assert result.to_dict()["mean_cost"] == pytest.approx(best)


def test_fewest_graphs_pads_less_than_the_default_with_fewer_graphs():
    # S 256, k 4 (notebook 06): the default's 51 FULL graphs pad 1.344 tokens a step up to 512
    result = fewest_graphs("vllm-0.33.0", SizingConfig(256, 4))
    graphs, full = len(result.capture_sizes), len(result.default_full_sizes)
    assert graphs < full and result.plan.mean_padding_waste < result.default.mean_padding_waste
    assert result.capture_sizes[-1] <= result.default.capture_sizes[-1]  # the same coverage
    # one graph fewer does not pad less: the count is the fewest
    fewer = plan(
        "vllm-0.33.0", SizingConfig(256, 4), budget=Budget(graphs - 1), max_capture_size=512
    )
    assert fewer.plan.mean_padding_waste >= result.default.mean_padding_waste


def test_an_eager_penalty_in_tokens_from_measured_curves():
    # graph ms 1 + size/100 (0.01 ms a token); eager ms 1.2 + n/50: (0.2 + n/100) / 0.01 tokens
    graph = SizeTable(np.array([4, 8, 16, 24]), 1 + np.array([4, 8, 16, 24]) / 100, "graph")
    eager = SizeTable(np.array([4, 8, 12]), 1.2 + np.array([4, 8, 12]) / 50, "eager")
    assert eager_penalty_tokens((graph, eager)) == pytest.approx(20 + 8)
    with pytest.raises(GraphlabError, match="no eager penalty"):
        eager_penalty_tokens((SizeTable(np.array([4]), np.array([1.0]), "graph"), eager))


def test_log_plan_equals_brute_force_over_the_replays():
    # every list of at most 2 sizes up to T replayed by the kit's dispatch: the log planner's
    # padding is the least of those leaving no more steps without a graph than the current list
    from graphlab.sizing.planner.log_plan import LoggedTraffic, plan_for_log, replay

    rng = np.random.default_rng(5)
    for case in range(24):
        seqs, k, tokens = int(rng.integers(2, 7)), int(rng.integers(1, 3)), 30
        mode = ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY")[case % 2]
        name = ("vllm-0.33.0", "vllm-0.13.0")[case // 2 % 2]  # rounds FULL graphs / whole list
        engine = get_engine(name)
        cfg = SizingConfig(seqs, k, tokens, cudagraph_mode=mode)
        uniform = [(int(m) * (k + 1), "FULL") for m in rng.integers(1, seqs + 1, 4)]
        mixed = [(int(n), "PIECEWISE") for n in rng.integers(1, tokens + 1, 4)]
        frame = pd.DataFrame(uniform + mixed, columns=["unpadded_tokens", "runtime_mode"])
        frame["count"] = rng.integers(1, 9, len(frame))
        traffic = LoggedTraffic.from_frame(frame, mode, "random")
        current = sorted({int(s) for s in rng.integers(1, tokens + 1, 4)})
        result = plan_for_log(engine, cfg, traffic, current, 2)
        allowed = result.current.steps_without_graph
        best = min(
            replayed.padding_tokens
            for g in (1, 2)
            for sizes in itertools.combinations(range(1, tokens + 1), g)
            if (replayed := replay(engine, cfg, traffic, sizes)).steps_without_graph <= allowed
        )
        assert result.plan.steps_without_graph <= allowed
        assert result.plan.padding_tokens == best, (name, mode, seqs, k, current)


def test_a_ceiling_equal_to_the_smallest_graph_plans_that_one_graph(capsys, tmp_path):
    # 9 tokens round up to a graph of 12 (1+k = 4): a cap of exactly 12 still allows it.
    (tmp_path / "in.csv").write_text("batch_size\n9\n")
    argv = ["--max-num-seqs", "2", "--num-speculative-tokens", "3", "--max-num-batched-tokens"]
    code, out, err = run(
        capsys, *argv, "16", "--batch-sizes", str(tmp_path / "in.csv"), "--max-capture-size", "12",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["capture_sizes"] == [12]


# What the independent mutation campaign of 2026-12-06 found untested (docs/mutation.md).


def test_an_eager_penalty_does_not_charge_the_step_the_largest_graph_serves():
    # k = 0, steps of 1, 2, 3 tokens weighted 1:8:1, one graph, 2 tokens an eager step: graph 2
    # costs 0.1 padding + 0.1 * 2 eager, graph 3 costs 1.0 padding, graph 1 0.9 * 2 eager.
    workload = Workload.from_counts([1, 2, 3], [1, 8, 1], "skewed")
    cfg, engine = SizingConfig(3, 0), get_engine("vllm-0.33.0")
    result = plan(engine, cfg, workload, Budget(1), eager_penalty=2.0)
    costs = {s: result.mean_cost(evaluate(engine, cfg, (s,), workload)) for s in (1, 2, 3)}
    assert costs == pytest.approx({1: 1.8, 2: 0.3, 3: 1.0})
    assert result.capture_sizes == (2,)


def test_a_step_whose_graph_rounds_past_max_num_batched_tokens_names_that_setting():
    # k = 3, T = 10: 9 tokens would need the graph 12 > T, so it runs eagerly; no cap was given.
    workload = Workload.from_counts([4, 9], [1, 1], "two")
    result = plan("vllm-0.33.0", SizingConfig(2, 3, 10), workload)
    assert result.capture_sizes == (4,) and result.eager_sizes == (9,)
    assert result.eager_reason == "a graph above 10 tokens exceeds max_num_batched_tokens"


def test_separate_pools_may_spend_exactly_the_memory_budget():
    # 1 MiB a graph, a 2 MiB budget over separate pools: both steps get their own graph.
    memory = SizeTable(np.array([1, 64]), np.array([MIB, MIB], dtype=float), "flat memory")
    workload = Workload.from_counts([1, 2], [1, 1], "two")
    result = plan(
        "vllm-0.33.0", SizingConfig(2, 0), workload, Budget(None, 2.0, "separate"), memory
    )
    assert result.capture_sizes == (1, 2) and result.plan.memory_bytes == 2 * MIB
    assert result.eager_sizes == ()  # the largest graph, 2 tokens, serves both steps


def test_an_infinite_memory_budget_is_refused():
    with pytest.raises(GraphlabError, match=r"finite number > 0 MiB, got 'inf'"):
        Budget(None, float("inf"))


def test_a_logged_full_step_under_plain_full_is_planned_as_a_mixed_batch():
    # plain FULL keeps no separate FULL decode graphs: its FULL steps are the mixed family's
    from graphlab.sizing.planner.log_plan import LoggedTraffic

    frame = pd.DataFrame({"unpadded_tokens": [4, 8], "runtime_mode": ["FULL", "FULL"]})
    frame["count"] = [3, 1]
    traffic = LoggedTraffic.from_frame(frame, "FULL", "plain")
    assert traffic.uniform_sizes.tolist() == [] and traffic.mixed_sizes.tolist() == [4, 8]
    separate = LoggedTraffic.from_frame(frame, "FULL_AND_PIECEWISE", "separate")
    assert separate.uniform_sizes.tolist() == [4, 8] and separate.mixed_counts.tolist() == []


def test_a_log_plan_as_good_as_the_current_sizes_is_the_headline():
    # the current sizes pad nothing: the plan equals them, which is not worse, so it leads
    from graphlab.sizing.planner.log_plan import LoggedTraffic, plan_for_log

    frame = pd.DataFrame({"unpadded_tokens": [4, 8], "runtime_mode": ["PIECEWISE"] * 2})
    frame["count"] = [3, 1]
    cfg = SizingConfig(8, 0, cudagraph_mode="PIECEWISE")
    traffic = LoggedTraffic.from_frame(frame, "PIECEWISE", "exact")
    result = plan_for_log(get_engine("vllm-0.33.0"), cfg, traffic, [4, 8])
    assert result.plan.padding_tokens == result.current.padding_tokens == 0
    assert result.headline_kind == "plan"


def test_a_log_plan_without_max_graphs_reports_the_sizes_it_had_to_drop_to():
    # FULL_AND_PIECEWISE: a size at or below S*q is two graphs, so a list as long as the current
    # one can capture more graphs; the plan drops sizes until it captures no more, and says so
    from graphlab.sizing.planner.log_plan import LoggedTraffic, plan_for_log

    frame = pd.DataFrame({"unpadded_tokens": [4, 16], "runtime_mode": ["FULL", "PIECEWISE"]})
    frame["count"] = [9, 1]
    cfg = SizingConfig(4, 0, cudagraph_mode="FULL_AND_PIECEWISE")
    traffic = LoggedTraffic.from_frame(frame, "FULL_AND_PIECEWISE", "drop")
    result = plan_for_log(get_engine("vllm-0.33.0"), cfg, traffic, [8, 16])
    assert result.current.num_graphs == 2 and len(result.same_count.capture_sizes) == 1
    assert result.max_graphs == 1


def test_under_an_eager_penalty_a_plan_costing_the_same_is_the_headline():
    # the current sizes pad nothing and leave nothing eager: the plan costs as much, so it leads
    from graphlab.sizing.planner.log_plan import LoggedTraffic, plan_for_log

    frame = pd.DataFrame({"unpadded_tokens": [4, 8], "runtime_mode": ["PIECEWISE"] * 2})
    frame["count"] = [3, 1]
    cfg = SizingConfig(8, 0, cudagraph_mode="PIECEWISE")
    traffic = LoggedTraffic.from_frame(frame, "PIECEWISE", "exact")
    result = plan_for_log(get_engine("vllm-0.33.0"), cfg, traffic, [4, 8], eager_penalty=5.0)
    assert result.cost(result.plan) == result.cost(result.current) == 0
    assert result.headline_kind == "plan"


def test_a_memory_budget_names_the_smallest_graph_it_cannot_afford():
    # graphs grow with their size: the first one over budget is where the eager tail starts
    memory = linear_memory(2000)
    budget = Budget(8, memory(np.array([100]))[0] / MIB)
    result = plan("vllm-0.33.0", SizingConfig(64, 3), budget=budget, memory=memory)
    needs = memory(np.array([104]))[0] / MIB
    assert result.eager_reason.endswith(f"a graph of 104 tokens needs {needs:.3f} MiB")


def test_a_programme_is_sized_by_the_graphs_asked_for_not_by_every_candidate(capsys):
    # 2048 candidates: 2048 graphs are too large a programme, 2 are not
    code, out, err = run(
        capsys,
        "--max-num-seqs",
        "2048",
        "--max-num-batched-tokens",
        "1048576",
        "--max-graphs",
        "2",
    )
    assert code == 0 and err == "", err


# ---- what mutmut over sizing/planner/plan.py (2026-12-06) found untested ----------------------


def test_a_plan_without_a_workload_names_its_workload_uniform():
    result = plan("vllm-0.33.0", SizingConfig(8, 3))
    assert result.to_dict()["workload"] == "uniform"


def test_a_programme_exactly_at_the_cell_limit_is_planned(monkeypatch):
    # 8 candidates (S = 8, k = 3: 4..32 tokens), 2 graphs: 2 * 8**2 = 128 cells, the limit itself
    import graphlab.sizing.planner.optimum as optimum  # where the programme's work is checked

    monkeypatch.setattr(optimum, "MAX_PROGRAMME_CELLS", 128)
    assert len(plan("vllm-0.33.0", SizingConfig(8, 3), budget=Budget(2)).capture_sizes) == 2
    monkeypatch.setattr(optimum, "MAX_PROGRAMME_CELLS", 127)
    with pytest.raises(GraphlabError) as refused:
        plan("vllm-0.33.0", SizingConfig(8, 3), budget=Budget(2))
    assert str(refused.value) == (
        "2 graphs over 8 candidate sizes is too large a programme; with 8 candidates plan handles "
        "at most 1 graphs (lower max_graphs, max_num_seqs or max_num_batched_tokens)"
    )


def test_a_memory_budget_below_every_graph_names_the_smallest_graphs_mib():
    memory = linear_memory(100)
    smallest = memory(np.array([4]))[0] / MIB  # 54 000 bytes: 0.051 MiB
    with pytest.raises(GraphlabError) as refused:
        plan("vllm-0.33.0", SizingConfig(8, 3), budget=Budget(2, 0.01), memory=memory)
    assert str(refused.value) == (
        f"memory budget 0.01 MiB is below the smallest graph the workload uses "
        f"(4 tokens: {smallest:.3f} MiB)"
    )


def test_with_every_graph_affordable_the_eager_reason_is_the_capture_ceiling():
    memory = linear_memory(100)
    result = plan(
        "vllm-0.33.0",
        SizingConfig(8, 3),
        budget=Budget(2, 100.0),
        memory=memory,
        max_capture_size=16,
    )
    assert result.eager_sizes == (20, 24, 28, 32)
    assert result.eager_reason == "no graph above max_capture_size=16"


def test_separate_pools_under_a_memory_budget_cover_what_the_budget_affords():
    # separate pools keep the unaffordable candidates (their sum is the budget's), coverage first:
    # 59 000 bytes hold one graph of up to 8 tokens (58 000), not the 10-token one (60 000)
    memory = linear_memory(100)
    cfg = SizingConfig(5, 1)  # batches of 2..10 tokens
    budget = Budget(3, 59_000 / MIB, "separate")
    result = plan("vllm-0.33.0", cfg, budget=budget, memory=memory)
    workload = uniform_workload(get_engine("vllm-0.33.0"), cfg)
    assert plan_key(result, None) == brute_force("vllm-0.33.0", cfg, workload, budget, memory)
    assert result.plan.memory_bytes <= budget.memory_mib * MIB
    assert result.capture_sizes == (8,) and result.eager_sizes == (10,)


def test_an_eager_penalty_weighs_each_eager_step_by_its_own_share():
    # a skewed workload: the steps above a graph weigh what those sizes occur, not what as many
    # of the smallest sizes would
    workload = Workload.from_counts(
        np.array([4, 8, 12, 16, 20, 24, 28, 32]), np.array([30, 1, 1, 1, 1, 1, 1, 4]), "skewed"
    )
    weights = dict(zip(workload.sizes.tolist(), workload.weights.tolist()))

    def cost(graph: int, penalty: float) -> float:
        return sum(w * ((graph - n) if n <= graph else penalty) for n, w in weights.items())

    for penalty in (1.0, 6.0, 12.0, 30.0):
        best = min(range(4, 33, 4), key=lambda s: cost(s, penalty))
        result = plan("vllm-0.33.0", SizingConfig(8, 3), workload, Budget(1), eager_penalty=penalty)
        assert result.capture_sizes == (best,), penalty


def test_the_default_is_priced_with_the_plans_graph_pool_and_latency():
    memory = linear_memory(100)
    cfg = SizingConfig(8, 3)
    default_sizes = get_engine("vllm-0.33.0").capture_sizes(cfg)
    separate = plan("vllm-0.33.0", cfg, budget=Budget(4, 100.0, "separate"), memory=memory)
    assert separate.default.memory_bytes == pytest.approx(
        sum(50_000.0 + 1000.0 * s for s in default_sizes)
    )
    shared = plan("vllm-0.33.0", cfg, budget=Budget(4, 100.0, "shared"), memory=memory)
    assert shared.default.memory_bytes == pytest.approx(50_000.0 + 1000.0 * default_sizes[-1])
    sizes = np.arange(1, 101)
    latency = (SizeTable(sizes, 1.0 + sizes / 100, "graph"), SizeTable(sizes, 2.0 + sizes, "eager"))
    result = plan("vllm-0.33.0", cfg, latency=latency)
    steps = [next(s for s in default_sizes if s >= n) for n in range(4, 33, 4)]
    assert result.default.mean_step_ms == pytest.approx(np.mean([1.0 + s / 100 for s in steps]))


def test_the_notes_say_where_the_default_could_not_be_priced_or_would_not_start():
    # the default's 40..64 lie outside a memory table of sizes 1..32 that the plan stays within
    sizes = np.arange(1, 33)
    memory = SizeTable(sizes, 50_000.0 + 1000.0 * sizes, "m", "predicted")
    result = plan("vllm-0.33.0", SizingConfig(8, 3), memory=memory)
    assert result.default.memory_bytes is None
    assert result.notes == (
        "default's memory/latency not computed: m has sizes 1..32; size 40 is outside that range "
        "(measure it, or plan a smaller config)",
    )
    # vLLM 0.12.0 keeps [1, 2] for S = 1 and finds no multiple of 1 + k = 4 among them
    refused = plan("vllm-0.12.0", SizingConfig(1, 3), budget=Budget(1))
    assert refused.default.capture_sizes == () and refused.notes == (
        "the engine's default sizing refuses to start here: ValueError: No valid cudagraph sizes "
        "after rounding to multiple of 4",
    )
    assert plan("vllm-0.33.0", SizingConfig(8, 3)).notes == ()


def test_the_drafter_note_names_the_model_runner_and_the_audit_line():
    cfg = SizingConfig(8, 3, speculative_method="eagle", model_runner="v1")
    (note,) = [n for n in plan("vllm-0.33.0", cfg).notes if n.startswith("the drafter")]
    assert note == (
        "the drafter (speculative method 'eagle', model runner V1) keeps its graphs at these "
        "same capture sizes: vLLM gives it no setting of its own; `audit --speculative-method "
        "eagle` shows its draft steps"
    )


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


def test_of_plans_costing_the_same_up_to_rounding_the_one_with_fewer_graphs_is_chosen():
    # graph latency flat from 17 to 37 tokens: a graph at 17 saves nothing, and the four-graph
    # plan's sum comes out one unit in the last place below the three-graph plan's
    sizes = np.array([6, 12, 17, 37])
    weights = np.array([63, 70, 147, 30]) / 310
    graph = SizeTable(sizes, np.array([0.3, 0.7, 1.1, 1.1]), "graph", "cpu-emulated")
    eager = SizeTable(sizes, np.full(4, 10.0), "eager", "cpu-emulated")
    workload = Workload(sizes, weights, "flat top")
    result = plan("vllm-0.33.0", SizingConfig(40, 0), workload, Budget(4), latency=(graph, eager))
    assert result.plan.capture_sizes == (6, 12, 37)


def test_same_footing_plans_on_the_defaults_terms():
    """Asked for, the result holds the plan at the default's FULL graph count and coverage."""
    request = PlanRequest(get_engine("vllm-0.33.0"), SizingConfig(256, 4), same_footing=True)
    result = plan_for(request)
    footing = result.same_footing
    assert len(footing.capture_sizes) == len(result.default_full_sizes) < len(result.capture_sizes)
    assert footing.capture_sizes[-1] <= result.default.capture_sizes[-1] < result.capture_sizes[-1]
    assert plan_for(PlanRequest(request.policy, request.config)).same_footing is None
    with pytest.raises(GraphlabError, match="same_footing"):
        PlanRequest(request.policy, request.config, same_footing=1)


# What mutmut over sizing/planner/plan.py found untested: each refusal's whole sentence (a
# substring match passed on a mangled one), NONE refused on a V1 engine, the user's
# compilation_config kept.


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda: plan("vllm-0.6.0", SizingConfig(8, 0)),
            f"plan supports the vLLM V1 engines {', '.join(V1_ENGINES)}, got 'vllm-0.6.0'",
        ),
        (
            lambda: plan("vllm-0.33.0", SizingConfig(8, 2), budget=Budget(memory_mib=64)),
            "a memory budget needs per-size graph memory (a graph_memory.csv)",
        ),
        (
            lambda: plan(
                "vllm-0.33.0",
                SizingConfig(8, 0, 16),
                Workload.from_counts([4, 8, 64], [1, 1, 1], "three"),
            ),
            "workload batch of 64 tokens exceeds max_num_batched_tokens=16",
        ),
        (lambda: plan("vllm-0.33.0", SizingConfig(8, 0, cudagraph_mode="NONE")), NO_GRAPHS),
    ],
)
def test_each_planner_refusal_is_its_whole_sentence(make, message):
    with pytest.raises(GraphlabError) as raised:
        make()
    assert str(raised.value) == message


def test_the_users_compilation_config_is_kept_whole_in_the_plan():
    user = {"mode": 3, "cudagraph_mode": "FULL_AND_PIECEWISE"}
    result = plan("vllm-0.33.0", SizingConfig(8, 0), compilation_config=user)
    assert result.compilation_config == user


def test_an_eager_penalty_of_zero_is_still_the_padding_and_eager_cost():
    # 0 is a penalty given (eager steps free), not the padding-only objective of None
    given = plan("vllm-0.33.0", SizingConfig(8, 2), eager_penalty=0)
    assert (given.cost, plan("vllm-0.33.0", SizingConfig(8, 2)).cost) == (
        "padding+eager",
        "padding",
    )
    assert given.to_dict()["cost"] == "padding+eager"
