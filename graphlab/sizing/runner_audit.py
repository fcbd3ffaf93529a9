"""One runner's audited batches: the outcome of each batch it can receive, their summary
(graph, eager and crash counts, coverage, padding waste) and the table `audit` prints of them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from graphlab.sizing.dispatch import BatchPath, Dispatch, Dispatches


@dataclass(frozen=True)
class AuditSummary:
    num_reachable: int
    num_graph: int
    num_eager: int
    num_crash: int
    graph_fraction: float  # num_graph / num_reachable (NaN when nothing is reachable)
    mean_padding_waste: float  # see the module docstring
    first_crash_n: int | None
    first_crash_error: str | None  # e.g. "KeyError: 40", "StopIteration"
    num_piecewise: int = 0  # vLLM V1: graph steps on PIECEWISE graphs (the rest are FULL)
    # Beside the waste, which counts an eager step as no waste: the share that pays eager cost.
    eager_fraction: float = float("nan")  # num_eager / num_reachable


@dataclass(frozen=True)
class RunnerAudit:
    """One runner's captured sizes and the outcome of each batch it can receive."""

    capture_sizes: tuple[int, ...]
    outcomes: tuple[Dispatch, ...]  # one per reachable n, ascending
    summary: AuditSummary

    def to_dict(self) -> dict:
        return {
            "capture_sizes": list(self.capture_sizes),
            "outcomes": [asdict(d) for d in self.outcomes],
            "summary": asdict(self.summary),
        }

    def format_lines(self, batch_unit: str) -> list[str]:
        """The captured sizes, one row per run of equal outcomes (see `_runs`), and the summary."""
        s = self.summary
        lines = [
            f"capture_sizes ({len(self.capture_sizes)}): {', '.join(map(str, self.capture_sizes))}",
            f"batch size ({batch_unit})  path   graph_size / error",
        ]
        for first, last, step, d in _runs(self.outcomes):
            span = (
                str(first)
                if first == last
                else f"{first}-{last}" + (f" step {step}" if step > 1 else "")
            )
            detail = d.graph_size if d.path.replays else (d.error or "")
            lines.append(f"  {span:>16}  {d.path:<5}  {detail}")
        graphs = (
            f"{s.num_graph - s.num_piecewise} full, {s.num_piecewise} piecewise"
            if any(d.path in (BatchPath.FULL, BatchPath.PIECEWISE) for d in self.outcomes)
            else f"{s.num_graph} graph"
        )
        lines.append(
            f"summary: {s.num_reachable} reachable, {graphs}, {s.num_eager} eager, "
            f"{s.num_crash} crash; graph fraction {s.graph_fraction:.3f}; "
            f"eager fraction {s.eager_fraction:.3f}; "
            f"mean padding waste {s.mean_padding_waste:.2f}; "
            + (
                f"first crash at n={s.first_crash_n} ({s.first_crash_error})"
                if s.first_crash_n
                else "no crash"
            )
        )
        return lines


def _runs(outcomes):
    """Outcomes with the same path, padded size and error at evenly spaced n, as (first, last, step,
    outcome).

    A run never spans an n that cannot occur: its members are exactly first, first+step, ...,
    last."""
    runs = []
    for d in outcomes:
        if runs:
            first, last, step, o = runs[-1]
            same = (o.path, o.graph_size, o.error) == (d.path, d.graph_size, d.error)
            if same and (step is None or d.batch_size - last == step):
                runs[-1] = [first, d.batch_size, d.batch_size - last, o]
                continue
        runs.append([d.batch_size, d.batch_size, None, d])
    return runs


def summarize(batches: Dispatches) -> AuditSummary:
    """Summary of `dispatch_batches`' answers."""
    ns, replays, crash = batches.batch_size, batches.replays, batches.takes(BatchPath.CRASH)
    graphs, eager, crashes = int(replays.sum()), batches.count(BatchPath.EAGER), int(crash.sum())
    waste = int(np.where(replays, batches.graph_size - ns, 0).sum())
    first = int(np.argmax(crash)) if crashes else None
    return AuditSummary(
        num_reachable=len(ns),
        num_graph=graphs,
        num_eager=eager,
        num_crash=crashes,
        graph_fraction=graphs / len(ns) if len(ns) else float("nan"),
        mean_padding_waste=waste / (graphs + eager) if graphs + eager else float("nan"),
        first_crash_n=None if first is None else int(ns[first]),
        first_crash_error=None if first is None else batches.crash_error(int(batches.key[first])),
        num_piecewise=batches.count(BatchPath.PIECEWISE),
        eager_fraction=eager / len(ns) if len(ns) else float("nan"),
    )
