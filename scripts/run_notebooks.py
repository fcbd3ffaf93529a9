#!/usr/bin/env python
"""Execute every notebook headless with papermill and print a summary table.

    python scripts/run_notebooks.py [--out build] [--ci] [--only NAME ...]

Executed copies go to <out>/notebooks/<name>.ipynb; what a notebook writes (figures, CSVs) goes
to <out>/<name>/, passed to it as the `out_dir` parameter. `--ci` passes `ci=True`, which the
notebooks turn into small sizes. Exit status 1 when any notebook failed, did not write what it
promises, or did not show its figures inline (EXPECTED).

An executed notebook is written whole or not at all, as the kit's CSVs are: papermill saves after
every cell, so it writes to a hidden file that takes the final name only when the run ends; a run
that fails in a cell leaves <name>.failed.ipynb beside the last complete one, and an interrupt
leaves the earlier notebooks as they were (exit status 130, one line). One runner per --out: a
second is refused while the first lives (graphlab.bench.export.locked_folder).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
# Kernels inherit this. The tiny model's CPU steps are overhead-bound: two OpenMP threads spinning
# against each other on a busy 2-core machine made the notebooks' sweeps ~20x slower. Rows record
# the thread count in their device name. Set OMP_NUM_THREADS yourself to override.
# VLLM_LOGGING_LEVEL: vLLM's INFO lines (platform detection, ...) say nothing about sizing; its
# warnings still show.
KERNEL_ENV = {"OMP_NUM_THREADS": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
# The kernel listens on 127.0.0.1 for this run only; its "running over TCP without encryption"
# warning (ipykernel >= 7) would be printed once per notebook. Errors still show.
KERNEL_ARGS = ["--IPKernelApp.log_level=ERROR"]


@dataclass(frozen=True)
class Expected:
    figures: int  # images shown inline (image/png or image/svg+xml outputs)
    outputs: tuple[str, ...] = ()  # files written under out_dir
    reference_figures: bool = False  # plus one figure per reference plot of data/ (05)
    # Runs the real vllm package: without it the notebook says so in one line and promises nothing
    # (a CUDA machine's `make notebooks` installs no vllm; see the Makefile's EXTRAS).
    needs_vllm: bool = False


# What each notebook promises; the runner checks it after every run. One line per notebook.
EXPECTED = {
    "00_setup_check": Expected(0, ("setup.json",)),
    "01_cuda_graphs_first_principles": Expected(2, ("padding.png", "graph_pool.png")),
    "02_the_crash": Expected(1, ("traceback.txt", "crash_dispatch.csv", "crash.json")),
    "03_the_guard_fix": Expected(
        3,
        (
            "guard_steps.csv",
            "guard_timeline.png",
            "guard_latency.csv",
            "guard_price.csv",
            "guard_latency.png",
        ),
    ),
    "04_adaptive_sizing": Expected(
        4,
        (
            "crash_map.csv",
            "crash_map_before_after.png",
            "graph_fraction_before_after.png",
            "adaptive_graph_memory.png",
            "adaptive_price.csv",
            "adaptive_price.png",
        ),
    ),
    "04b_vllm_v1_today": Expected(
        2, ("vllm_v1_graph_fraction.png", "v1_verify_cliff.png", "v1_verify_samples.csv")
    ),
    "05_latency_and_memory": Expected(
        4,
        (
            "latency.csv",
            "graph_memory.csv",
            "spec_decode.csv",
            "spec_decode_steps.csv",
            "crash_map.csv",
            "latency.png",
            "graph_memory.png",
            "spec_decode.png",
            "crash_map.png",
        ),
        reference_figures=True,
    ),
    "06_capture_size_planner": Expected(3, ("plan_vs_default.png", "plan_priced.png")),
    "07_your_deployment": Expected(
        2,
        ("vllm.log", "logged_steps.png", "gpu_shaped.log", "gpu_shaped_steps.png"),
        needs_vllm=True,
    ),
}
IMAGE_TYPES = ("image/png", "image/svg+xml")


def promised(name: str) -> Expected:
    """What notebook `name` promises on this machine: EXPECTED's, or nothing for a notebook that
    needs vllm where it is not installed."""
    import importlib.util

    expected = EXPECTED[name]
    if expected.needs_vllm and importlib.util.find_spec("vllm") is None:
        return Expected(0)
    return expected


def expected_figures(name: str) -> int:
    """The number of inline images notebook `name` must show."""
    expected = promised(name)
    if not expected.reference_figures:
        return expected.figures
    from graphlab.views.plots import reference_figures

    return expected.figures + sum(len(reference_figures(folder)) for folder in reference_folders())


def reference_folders() -> list[Path]:
    """The committed reference runs under data/ (one folder per run)."""
    return sorted(p for p in (ROOT / "data").iterdir() if p.is_dir())


def images(cell) -> int:
    """Inline images in one executed code cell."""
    return sum(
        1 for o in cell.get("outputs", ()) if any(t in o.get("data", {}) for t in IMAGE_TYPES)
    )


def figure_problems(executed: Path, name: str) -> str:
    """'' when the executed notebook shows its expected figures inline, else what is wrong."""
    import nbformat

    cells = [c for c in nbformat.read(executed, as_version=4).cells if c.cell_type == "code"]
    text = json.dumps([c.get("outputs", []) for c in cells])
    if "<Figure size" in text:
        return "a figure printed as text (<Figure size ...>) instead of an image"
    found, want = sum(images(c) for c in cells), expected_figures(name)
    return "" if found == want else f"{found} inline figures, expected {want}"


@dataclass(frozen=True)
class Result:
    notebook: str
    seconds: float
    status: str  # "ok" | "failed" | "missing outputs" | "missing figures"
    detail: str = ""  # the error's last line, or the missing files

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def notebook_names() -> list[str]:
    return sorted(p.stem for p in NOTEBOOK_DIR.glob("[0-9][0-9]*_*.ipynb"))  # 04b after 04


def run_notebook(name: str, out: Path, ci: bool = False) -> Result:
    """Run one notebook with cwd=notebooks/ (as in Jupyter) and check its promised outputs."""
    import papermill  # imported here so --help works without the notebook extras

    for key, value in KERNEL_ENV.items():
        os.environ.setdefault(key, value)
    out = Path(out).resolve()
    out_dir = out / name
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out / "notebooks" / f"{name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    running = executed.with_name(f".{name}.running.ipynb")  # papermill saves after every cell
    failed = executed.with_name(f"{name}.failed.ipynb")
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(NOTEBOOK_DIR / f"{name}.ipynb"),
            str(running),
            parameters={"ci": ci, "out_dir": str(out_dir)},
            kernel_name="python3",
            cwd=str(NOTEBOOK_DIR),
            progress_bar=False,
            extra_arguments=KERNEL_ARGS,
        )
    except Exception as exc:  # papermill raises PapermillExecutionError with the cell's error
        if running.exists():  # the failed run, its error cell included, beside the last good one
            os.replace(running, failed)
        lines = [line for line in str(exc).strip().splitlines() if line.strip()]
        return Result(
            name, time.perf_counter() - start, "failed", lines[-1] if lines else repr(exc)
        )
    except BaseException:  # an interrupt: the cells run so far are no executed notebook
        running.unlink(missing_ok=True)
        raise
    os.replace(running, executed)
    failed.unlink(missing_ok=True)  # an earlier failure's notebook, superseded
    seconds = time.perf_counter() - start
    missing = [f for f in promised(name).outputs if not (out_dir / f).is_file()]
    if missing:
        return Result(name, seconds, "missing outputs", ", ".join(missing))
    problem = figure_problems(executed, name)
    if problem:
        return Result(name, seconds, "missing figures", problem)
    return Result(name, seconds, "ok")


def run_notebooks(
    out: Path = ROOT / "build", ci: bool = False, only: list[str] | None = None
) -> list[Result]:
    names = notebook_names()
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"unknown notebook(s) {unknown}; known: {', '.join(names)}")
        names = [n for n in names if n in only]
    from graphlab.bench.export import locked_folder

    Path(out).mkdir(parents=True, exist_ok=True)
    with locked_folder(out):
        return [run_notebook(name, out, ci) for name in names]


def summary(results: list[Result]) -> str:
    width = max([len("notebook")] + [len(r.notebook) for r in results])
    lines = [f"{'notebook':<{width}}  {'seconds':>7}  status"]
    for r in results:
        lines.append(
            f"{r.notebook:<{width}}  {r.seconds:7.1f}  {r.status}"
            + (f": {r.detail}" if r.detail else "")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "build",
        help="where executed notebooks and their outputs go (default: build/)",
    )
    parser.add_argument("--ci", action="store_true", help="small parameters (ci=True)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this notebook (name without .ipynb); repeatable",
    )
    args = parser.parse_args(argv)
    from graphlab.errors import GraphlabError

    before = os.getloadavg()[0]
    try:
        results = run_notebooks(args.out, args.ci, args.only)
    except GraphlabError as error:  # another runner holds --out
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"interrupted: no notebook half-written; {args.out}/notebooks holds the last complete "
            "runs as they were",
            file=sys.stderr,
        )
        return 130
    print(summary(results))
    path = record_times(results, args.out, args.ci, before)
    print(f"times recorded in {path}")
    return 0 if all(r.ok for r in results) else 1


def record_times(results: list[Result], out: Path, ci: bool, load_before: float) -> Path:
    """<out>/notebook_times.json: each notebook's seconds and status, their total, and the
    machine they ran on (CPU, cores, load average before and after): what the README quotes."""
    import platform

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    record = {
        "ci": ci,
        "machine": f"{_cpu_name() or platform.machine()}, {cpus} cores",
        "load_avg_1m_before": round(load_before, 2),
        "load_avg_1m_after": round(os.getloadavg()[0], 2),
        "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "default (/tmp)"),
        "seconds": {r.notebook: round(r.seconds, 1) for r in results},
        "status": {r.notebook: r.status for r in results},
        "total_seconds": round(sum(r.seconds for r in results), 1),
    }
    path = Path(out) / "notebook_times.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def _cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else ''."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return ""
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else ""


if __name__ == "__main__":
    sys.exit(main())
