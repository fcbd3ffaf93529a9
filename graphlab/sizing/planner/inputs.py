"""The planner's inputs: a workload over decode step sizes and per-size tables, read from CSV files.

A workload comes from observed batch sizes or from a bench run's `spec_decode_steps.csv`; graph
memory and step latency from a bench run's `graph_memory.csv` and `latency.csv`. Bench files may
hold several engines, models, dtypes and k: the readers pick one set of rows explicitly (V1 token
rows first) and refuse to mix the others.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np
import pandas as pd

from graphlab.errors import BadInput, UnreadableInput, check_input_file
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, BatchUnit, RunMode
from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT

# Counts and bytes: the largest integers a float64 weight or table value holds exactly.
MAX_EXACT = 2**53
# Columns that tell bench rows apart; a table is read from rows sharing one value of each.
PICK_COLUMNS = ("engine", "model", "dtype", "num_speculative_tokens")
PICK_OPTIONS = {
    "engine": "--bench-engine",
    "model": "--model",
    "dtype": "--dtype",
    "num_speculative_tokens": "--bench-k",
}
V0_STAND_IN = "{what}: V0 rows (one token per request) stand in for V1 token counts"


@dataclass(frozen=True)
class Workload:
    """Weights over batch sizes n (tokens per decode step), n ascending and unique, weights summing
    to 1."""

    sizes: np.ndarray
    weights: np.ndarray
    source: str  # "uniform" or the CSV it came from

    def __post_init__(self) -> None:
        sizes, weights = np.asarray(self.sizes), np.asarray(self.weights)
        if (
            sizes.ndim != 1
            or not len(sizes)
            or sizes.dtype.kind not in "iu"
            or sizes.shape != weights.shape
        ):
            raise BadInput(
                f"workload {self.source!r}: sizes must be a non-empty list of integers, "
                f"one weight each, got {self.sizes!r}"
            )
        if sizes[0] < 1 or (np.diff(sizes) <= 0).any():
            raise BadInput(
                f"workload {self.source!r}: sizes must be ascending and unique integers >= 1 "
                f"(tokens per step), got {sizes.tolist()[:8]}"
            )
        if not (np.isfinite(weights) & (weights >= 0)).all() or not np.isclose(weights.sum(), 1.0):
            raise BadInput(
                f"workload {self.source!r}: weights must be finite, >= 0 and sum to 1 "
                "(Workload.from_counts takes counts)"
            )

    @classmethod
    def from_counts(cls, sizes, counts, source: str) -> Workload:
        """Counts per batch size (repeated sizes add up; zero-count sizes are left out)."""
        sizes, counts = np.asarray(sizes), np.asarray(counts)
        if sizes.dtype.kind not in "iu" or sizes.shape != counts.shape or sizes.ndim != 1:
            raise BadInput(f"workload {source!r}: sizes must be integers, one count each")
        if counts.dtype.kind not in "iuf" or not (np.isfinite(counts) & (counts >= 0)).all():
            raise BadInput(
                f"workload {source!r}: counts must be finite numbers >= 0, "
                f"got {counts.tolist()[:8]}"
            )
        frame = pd.DataFrame({"n": sizes.astype(np.int64), "w": counts.astype(float)})
        grouped = frame.groupby("n", sort=True)["w"].sum()
        grouped = grouped[grouped > 0]
        if grouped.empty:
            raise BadInput(f"workload {source!r} has no batch with a positive count")
        return cls(
            grouped.index.to_numpy(np.int64), (grouped / grouped.sum()).to_numpy(float), source
        )


@dataclass(frozen=True)
class SizeTable:
    """A figure per size (graph memory in bytes, latency in ms), linear between listed sizes."""

    sizes: np.ndarray  # ascending
    values: np.ndarray
    what: str  # names the figure and its source in error messages
    # memory_kind (measured | predicted) or latency backend (cuda-graph | cpu-emulated)
    kind: str = ""
    note: str = ""  # what a plan built on it should say about the rows read

    def __call__(self, sizes) -> np.ndarray:
        sizes = np.asarray(sizes, dtype=float)
        outside = (sizes < self.sizes[0]) | (sizes > self.sizes[-1])
        if outside.any():
            raise BadInput(
                f"{self.what} has sizes {int(self.sizes[0])}..{int(self.sizes[-1])}; size "
                f"{int(sizes[outside][0])} is outside that range "
                "(measure it, or plan a smaller config)"
            )
        return np.interp(sizes, self.sizes, self.values)

    @classmethod
    def from_series(cls, series: pd.Series, what: str, kind: str = "", note: str = "") -> SizeTable:
        series = series.groupby(level=0).median().sort_index()
        return cls(series.index.to_numpy(np.int64), series.to_numpy(float), what, kind, note)


def _read_csv(
    path,
    required: tuple[str, ...],
    allowed: tuple[str, ...] | None = None,
    may_be_blank: tuple[str, ...] = (),
) -> pd.DataFrame:
    """A CSV with the required columns (and, when allowed is given, no others), none blank but those
    in may_be_blank; UnreadableInput otherwise."""
    check_input_file("CSV", path)  # a FIFO or device would block the read or never end
    try:
        _check_field_counts(path)
        frame = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        raise UnreadableInput(
            f"cannot read CSV {str(path)!r}: {str(error).splitlines()[0]}"
        ) from None
    unknown = [c for c in frame.columns if allowed is not None and c not in allowed]
    if unknown:
        raise UnreadableInput(
            f"{str(path)!r}: unknown column {unknown[0]!r}; allowed: {', '.join(allowed)}"
        )
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise UnreadableInput(
            f"{str(path)!r}: missing column {missing[0]!r}; needs {', '.join(required)}"
        )
    if frame.empty:
        raise UnreadableInput(f"{str(path)!r} has no rows")
    checked = [
        c for c in frame.columns if c in (*required, *(allowed or ())) and c not in may_be_blank
    ]
    blank = frame[checked].isna().to_numpy()
    if blank.any():  # a blank cell or a line cut short (pandas reads both as NaN)
        row, column = map(int, np.argwhere(blank)[0])
        raise UnreadableInput(
            f"{str(path)!r}: line {row + 2} has no value in column {checked[column]!r}; "
            f"every row needs {', '.join(checked)}"
        )
    return frame


def _check_field_counts(path) -> None:
    """UnreadableInput at the first row with more fields than the header: pandas would take the
    extra field as an index and shift every column, naming the wrong line and column."""
    with open(path, newline="") as handle:
        rows = csv.reader(handle)
        header = next(rows, [])
        for row in rows:
            if len(row) > len(header):
                raise UnreadableInput(
                    f"{str(path)!r}: line {rows.line_num} has {len(row)} fields, the header "
                    f"{len(header)} ({', '.join(header)})"
                )


def _plain(value) -> str:
    """A cell as the CSV wrote it, without numpy's repr (np.int64(...))."""
    return repr(str(value.item() if isinstance(value, np.generic) else value))


def _positive_ints(
    frame: pd.DataFrame,
    column: str,
    path,
    minimum: int = 1,
    maximum: int = MAX_NUM_BATCHED_TOKENS_LIMIT,
) -> np.ndarray:
    """The column as int64, every value an integer in minimum..maximum, checked as floats before
    casting."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
    bad = (
        ~np.isfinite(values)
        | (values != np.round(values))
        | (values < minimum)
        | (values > maximum)
    )
    if bad.any():
        raise UnreadableInput(
            f"{str(path)!r}: column {column!r} needs integers in {minimum}..{maximum}, "
            f"got {_plain(frame[column].iloc[int(np.argmax(bad))])}"
        )
    return values.astype(np.int64)


def _milliseconds(frame: pd.DataFrame, path) -> np.ndarray:
    values = pd.to_numeric(frame.median_ms, errors="coerce").to_numpy(float)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise UnreadableInput(
            f"{str(path)!r}: column 'median_ms' needs finite numbers >= 0, "
            f"got {_plain(frame.median_ms.iloc[int(np.argmax(bad))])}"
        )
    return values


def _pick(
    frame: pd.DataFrame, path, columns: tuple[str, ...], pick: dict, unit: bool = False
) -> pd.DataFrame:
    """The rows with the picked value of each column (then, with unit, V1 token rows when any are
    left); BadInput when a column still holds several values (pick one)."""
    unknown = set(pick) - set(PICK_COLUMNS)
    if unknown:
        raise BadInput(
            f"cannot pick rows by {sorted(unknown)[0]!r}; pick by {', '.join(PICK_COLUMNS)}"
        )
    for column, wanted in pick.items():
        if wanted is not None:
            choices = sorted(frame[column].astype(str).unique())
            frame = frame[frame[column].astype(str) == str(wanted)]
            if frame.empty:
                raise BadInput(
                    f"{str(path)!r} has no rows with {column}={wanted}; it has {', '.join(choices)}"
                )
    if unit and (frame.batch_unit == BatchUnit.TOKENS).any():  # a V1 plan pads token counts
        frame = frame[frame.batch_unit == BatchUnit.TOKENS]
    for column in columns:
        choices = sorted(frame[column].astype(str).unique())
        if len(choices) > 1:
            raise BadInput(
                f"{str(path)!r} holds rows of several {column}: {', '.join(choices)}; "
                f"pick one with {PICK_OPTIONS[column]}"
            )
    return frame


def _bench_rows(frame: pd.DataFrame, path, what: str, pick: dict) -> tuple[pd.DataFrame, str]:
    """One run's rows of a bench CSV and a note: V1 token rows when present, else V0 rows
    (noted)."""
    units = set(frame.batch_unit.astype(str))
    if not units <= {"tokens", "rows"}:
        raise UnreadableInput(
            f"{str(path)!r}: column 'batch_unit' needs tokens or rows, "
            f"got {sorted(units - {'tokens', 'rows'})[0]!r}"
        )
    rows = _pick(frame, path, PICK_COLUMNS, pick, unit=True)
    v1 = (rows.batch_unit == BatchUnit.TOKENS).all()
    return rows, "" if v1 else V0_STAND_IN.format(what=what)


def read_batch_sizes(path) -> Workload:
    """Observed batch sizes in tokens: a `batch_size` column, one step per row, or with a `count`
    column."""
    frame = _read_csv(path, ("batch_size",), ("batch_size", "count"))
    counts = (
        _positive_ints(frame, "count", path, 0, MAX_EXACT)
        if "count" in frame.columns
        else np.ones(len(frame))
    )
    return Workload.from_counts(_positive_ints(frame, "batch_size", path), counts, str(path))


def read_spec_decode_steps(
    path, cfg: SizingConfig, model: str | None = None, dtype: str | None = None
) -> Workload:
    """The decode steps of one run in a `spec_decode_steps.csv`, as V1 tokens per step.

    A step with num_seqs sequences of which num_speculating carry k proposals submits
    num_seqs + num_speculating*k tokens in V1 (1 + its proposals per request); for the
    batch-expansion scorer that is also the CSV's batch_size in V0 rows. Prefill steps are left
    out (V1 does not run them on full decode graphs). The run must have the plan's max_num_seqs
    and k, and one model and dtype; of several engines' runs (the same seeded load) the first is
    read.
    """
    columns = (
        "engine",
        "model",
        "dtype",
        "kind",
        "max_num_seqs",
        "num_speculative_tokens",
        "num_seqs",
        "num_speculating",
    )
    frame = _pick(
        _read_csv(path, columns), path, ("model", "dtype"), {"model": model, "dtype": dtype}
    )
    runs = frame[
        (frame.max_num_seqs == cfg.max_num_seqs)
        & (frame.num_speculative_tokens == cfg.num_speculative_tokens)
    ]
    if runs.empty:
        found = sorted(
            {(str(s), str(k)) for s, k in zip(frame.max_num_seqs, frame.num_speculative_tokens)}
        )
        raise BadInput(
            f"{str(path)!r} has no run with max_num_seqs={cfg.max_num_seqs}, "
            f"k={cfg.num_speculative_tokens}; it has (max_num_seqs, k) in "
            f"{', '.join(f'({s}, {k})' for s, k in found)}"
        )
    decode = runs[(runs.engine == runs.engine.iloc[0]) & (runs.kind == "decode")]
    if decode.empty:
        raise UnreadableInput(f"{str(path)!r}: the run has no decode step")
    proposals = _positive_ints(decode, "num_speculating", path, 0) * cfg.num_speculative_tokens
    tokens = _positive_ints(decode, "num_seqs", path) + proposals
    return Workload.from_counts(tokens, np.ones(len(tokens)), str(path))


def read_graph_memory(path, **pick) -> SizeTable:
    """Bytes one graph of each size needs, from a `graph_memory.csv` (pick: see `read_latency`).

    Rows with graph_pool = separate give each graph's own `memory_bytes` (measured or predicted, per
    `memory_kind`); in a shared pool a graph's increment hides what it holds alone, so a run without
    separate rows is read from `predicted_bytes`, labelled predicted.
    """
    columns = (
        "batch_unit",
        *PICK_COLUMNS,
        "capture_size",
        "memory_bytes",
        "memory_kind",
        "predicted_bytes",
        "graph_pool",
    )
    frame = _read_csv(path, columns)
    for column in ("memory_bytes", "predicted_bytes"):  # every row, also those not picked
        _positive_ints(frame, column, path, 0, MAX_EXACT)
    _positive_ints(frame, "capture_size", path)
    rows, note = _bench_rows(frame, path, f"graph memory {str(path)!r}", pick)
    own = rows[rows.graph_pool == "separate"]
    if own.empty:
        own, column, kind = rows, "predicted_bytes", "predicted"
    else:
        column, kind = "memory_bytes", "/".join(sorted(own.memory_kind.astype(str).unique()))
    values = pd.Series(
        _positive_ints(own, column, path, 0, MAX_EXACT),
        index=_positive_ints(own, "capture_size", path),
    )
    return SizeTable.from_series(values, f"graph memory {str(path)!r}", kind, note)


def read_latency(path, **pick) -> tuple[SizeTable, SizeTable]:
    """(graph latency per replayed size, eager latency per batch size) in ms, from a `latency.csv`.

    Rows: those with the picked values (engine, model, dtype, num_speculative_tokens = value), then
    V1 token rows (batch_unit tokens) when any are left, else V0 rows, whose one-token requests
    stand in for tokens (a note says so); several runs left are refused, never mixed. A graph step
    costs the same whatever n was padded into it, so graph rows are keyed by graph_size; eager rows
    (mode eager, path eager) by batch_size.
    """
    columns = (
        "batch_unit",
        *PICK_COLUMNS,
        "mode",
        "backend",
        "batch_size",
        "path",
        "graph_size",
        "median_ms",
    )
    # graph_size is blank on eager rows.
    frame = _read_csv(path, columns, may_be_blank=("graph_size",))
    _milliseconds(frame, path)  # every row, also those not picked, as a blank cell is
    _positive_ints(frame, "batch_size", path)
    rows, note = _bench_rows(frame, path, f"latency {str(path)!r}", pick)
    graph = rows[rows.path.isin(("graph", "full"))]  # V0 graphs, V1 FULL decode graphs
    eager = rows[(rows.path == BatchPath.EAGER) & (rows["mode"] == RunMode.EAGER)]
    if graph.empty or eager.empty:
        raise UnreadableInput(
            f"{str(path)!r} needs rows with path graph (V1: full) and rows with mode and path eager"
        )

    def ms(part, key):
        return pd.Series(_milliseconds(part, path), index=_positive_ints(part, key, path))

    backend = "/".join(sorted(rows.backend.astype(str).unique()))
    return (
        SizeTable.from_series(
            ms(graph, "graph_size"), f"graph latency {str(path)!r}", backend, note
        ),
        SizeTable.from_series(
            ms(eager, "batch_size"), f"eager latency {str(path)!r}", backend, note
        ),
    )
