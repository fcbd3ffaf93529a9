"""What several test modules share: the checkout's root, a KV-cache snapshot (two runners start a
step from one state), a scipy-free chi-square for the sampling tests, the tiny bench suite, a
figure check, the GPU tests' model and batches, random dynamic-speculation schedules, the
notebooks' verdict check and the release check's comparisons."""

import functools
import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import torch

from graphlab.bench import suites
from graphlab.engine.model import build_model
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.sizing.config import SizingConfig
from graphlab.stats import MIN_SAMPLES

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def release_check():
    """scripts/check_release_code.py, whose `*_mismatches` functions are the one comparison of a
    release's vectors with the kit (the release check runs them on a new release's own vectors;
    V0's vectors take the same outcome format)."""
    spec = importlib.util.spec_from_file_location(
        "check_release_code", ROOT / "scripts" / "check_release_code.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def snapshot(model):
    """Copies of every layer's (K, V) cache."""
    return [(k.clone(), v.clone()) for k, v in model.kv_cache()]


def restore(model, snap):
    """Write a snapshot back into the model's cache tensors, in place."""
    for (k, v), (k0, v0) in zip(model.kv_cache(), snap):
        k.copy_(k0)
        v.copy_(v0)


# Each chi-square test fails by chance with probability ALPHA (fixed seeds make it
# deterministic; the rate says how unlucky a seed would have to be).
ALPHA = 1e-3


def chi_square_p_value(statistic: float, df: int) -> float:
    """Upper tail of chi-square via the Wilson-Hilferty cube-root normal approximation."""
    z = ((statistic / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    """p-value of observed counts against probabilities.

    The two smallest expected bins are merged until every bin expects >= 5 (the
    approximation's condition) or two bins are left.
    """
    expected = np.asarray(probs, dtype=float) * counts.sum()
    order = np.argsort(expected)
    obs, exp = np.asarray(counts, dtype=float)[order], expected[order]
    while exp[0] < 5 and len(exp) > 2:
        obs = np.concatenate([[obs[0] + obs[1]], obs[2:]])
        exp = np.concatenate([[exp[0] + exp[1]], exp[2:]])
        order = np.argsort(exp)
        obs, exp = obs[order], exp[order]
    statistic = float(((obs - exp) ** 2 / exp).sum())
    return chi_square_p_value(statistic, len(exp) - 1)


# Every sweep's shape at a size that runs in seconds on one CPU core.
TINY = suites.replace_suite(
    "quick",
    name="tiny-test",
    latency_batch_sizes=(1, 3),
    repeats=2,
    warmup=1,
    max_seq_len=16,
    memory_max_num_seqs=4,
    spec_max_num_seqs=(2,),
    spec_num_speculative_tokens=(2,),
    spec_num_requests_per_seq=1,
    spec_max_tokens=4,
    spec_max_model_len=24,
    crash_map_engines=("vllm-0.5.5", "vllm-0.6.0"),
    crash_map_max_num_seqs=range(1, 5),
    crash_map_k=range(0, 3),
    # A 16-token ceiling: 8 requests x 4 tokens cross it.
    v1_sizing=SizingConfig(8, 3, max_num_batched_tokens=16),
)


def fits_a_notebook(name, fig):
    """A figure that reads in a notebook: at most JupyterLab's width, text >= 10 px, nothing cut."""
    # JupyterLab's output area is ~850 px wide: a wider figure is shrunk, and its text with it.
    width, _ = fig.get_size_inches() * fig.dpi
    assert width <= 850, name
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    for text in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text")):
        if text.get_visible() and text.get_text().strip():
            assert text.get_fontsize() * fig.dpi / 72 >= 10, (name, text.get_text())  # >= 10 px
    # Everything drawn (titles, labels, legends) lies inside the figure: no line cut at its edge.
    drawn = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
    assert drawn.x0 >= -2 and drawn.x1 <= fig.bbox.x1 + 2, name  # pixels


# --- the GPU tests' model and batches (the same on CPU, where the emulated backend stands in) ----
NUM_SLOTS, MAX_SEQ_LEN = 64, 32


def device_of(backend):
    return "cuda" if backend == "cuda-graph" else "cpu"


def make_model(backend, dtype, preset="tiny"):
    model = build_model(preset, seed=0, dtype=dtype, device=device_of(backend))
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    return model


def batch(n, device, seed=0):
    """n decode rows of one token ([n, 1]) on distinct (seq_slot, position) cells."""
    g = torch.Generator().manual_seed(seed)
    cells = torch.randperm(NUM_SLOTS * MAX_SEQ_LEN, generator=g)[:n]
    ids = torch.randint(0, 512, (n, 1), generator=g)
    positions = (cells % MAX_SEQ_LEN)[:, None]
    return ids.to(device), positions.to(device), (cells // MAX_SEQ_LEN).to(device)


def runner(model, backend, engine="vllm-0.6.0", cfg=None, **kwargs):
    r = V0ModelRunner(model, engine, cfg or SizingConfig(NUM_SLOTS), backend=backend, **kwargs)
    r.capture_model()
    return r


# A comparison as graphlab.views.verdicts.sentence prints it.
VERDICT = re.compile(
    r"(is slower than|is faster than|shows no difference beyond noise from) [^:]*: "
    r"[\d.]+x \(95% CI ([\d.]+)-([\d.]+), (\d+) pairs\)"
)
# The bound a no-difference verdict states right after its interval.
BOUND = re.compile(r" \(any difference is under \+-(\d+)%\)")


def verdict_problems(text: str) -> list[str]:
    """Lines of printed text whose verdict the interval printed with it does not support (a
    direction, or a bound on the difference that the interval's far end exceeds), and lines
    that say slower or faster with no interval or count of intervals at all."""
    problems = []
    for line in text.splitlines():
        found = list(VERDICT.finditer(line))
        for match in found:
            said, low, high, n = match[1], float(match[2]), float(match[3]), int(match[4])
            # A bound near 1 is printed with the decimals that show its side (bound_digits).
            if n < MIN_SAMPLES:
                ok = said.startswith("shows no difference")
            elif said == "is slower than":
                ok = low > 1
            elif said == "is faster than":
                ok = high < 1
            else:
                ok = low <= 1 <= high
            bound = BOUND.match(line, match.end())
            # A far end printed at the bound itself is within it (1.02 is 0.020000000000000018)
            if bound and max(1 - low, high - 1) > int(bound[1]) / 100 + 1e-9:
                ok = False
            if not ok:
                problems.append(line)
        if not found and re.search(r"\b(slower|faster)\b", line) and "95% interval" not in line:
            problems.append(line)
    return problems


def random_schedule(rng, seqs: int, k: int):
    """A valid schedule: ranges from 1, with gaps, a tail short of seqs, k up to k + 2 (vLLM
    clamps it), entries shuffled (vLLM sorts them)."""
    starts = sorted({1, *rng.sample(range(2, seqs + 40), rng.randint(0, 4))})
    entries = []
    for start, after in zip(starts, [*starts[1:], starts[-1] + rng.randint(1, 60)], strict=True):
        end = rng.randint(start, after - 1)  # a gap up to the next start, or none
        entries.append([start, end, rng.randint(0, k + 2)])
    rng.shuffle(entries)
    return entries
