"""scripts/check_release_code.py, offline: the comparison it runs on a release's own vectors
passes the recorded vector files and fails loudly, naming the config, on a file with one value
changed. (Its live mode reads wheels from the index: never run by the tests.)"""

import copy
import json

import pytest
from helpers import ROOT, release_check

DATA = ROOT / "data"


def _part(name: str, keep) -> dict:
    """A recorded file cut to the vectors `keep` picks (its provenance kept)."""
    data = json.loads((DATA / name).read_text())
    return {"provenance": data["provenance"]} | {
        key: [v for v in data[key] if keep(v)]
        for key in ("vectors", "startup_errors")
        if key in data
    }


def _run(capsys, tmp_path, payload: dict) -> tuple[int, str]:
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(payload))
    code = release_check().main(["--vectors", str(path)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "keep", "line"),
    [
        ("vllm_sizing_vectors_0_34_0.json", lambda v: True, "vllm 0.34.0 (split): 420 configs"),
        (
            "vllm_sizing_vectors_v1_early.json",
            lambda v: v["engine"] in ("vllm-0.9.2", "vllm-0.11.1"),
            "vllm 0.9.2 (early-v1): 400 configs all match the kit's vllm-0.9.2",
        ),
        (
            "vllm_sizing_vectors_model_runner_v2.json",
            lambda v: v["engine"] == "vllm-0.27.0",
            "vllm 0.27.0 (v2): 256 configs all match the kit's vllm-0.26.0",
        ),
        (
            "vllm_sizing_vectors_model_runner_v1.json",
            lambda v: v["engine"] == "vllm-0.30.0",
            "vllm 0.30.0 (v1): 810 configs all match the kit's vllm-0.29.0",
        ),
    ],
)
def test_the_recorded_vectors_pass(capsys, tmp_path, name, keep, line):
    code, out = _run(capsys, tmp_path, _part(name, keep))
    assert code == 0 and line in out, out


def _changed(payload: dict, pick, change) -> tuple[dict, dict]:
    """payload with one value of its first vector `pick` accepts changed; and that vector."""
    payload = copy.deepcopy(payload)
    vector = next(v for v in payload["vectors"] if pick(v))
    change(vector)
    return payload, vector


def _bump_first_graph(key):
    def change(v):
        outcome = next(o for o in v[key] if o[2] is not None)
        outcome[2] += 1

    return change


@pytest.mark.parametrize(
    ("name", "keep", "pick", "change", "words"),
    [
        (
            "vllm_sizing_vectors_0_34_0.json",
            lambda v: True,
            lambda v: "error" not in v and v["graphs"] and v["max_num_seqs"] > 4,
            _bump_first_graph("uniform"),
            "vllm 0.34.0 (split) DIFFERS from the kit's vllm-0.34.0 at config",
        ),
        (
            "vllm_sizing_vectors_v1_early.json",
            lambda v: v["engine"] == "vllm-0.9.2",
            lambda v: "error" not in v and len(v["capture_sizes"]) > 3,
            lambda v: v["capture_sizes"].pop(),
            "vllm 0.9.2 (early-v1) DIFFERS from the kit's vllm-0.9.2 at config",
        ),
        (
            "vllm_sizing_vectors_model_runner_v2.json",
            lambda v: v["engine"] == "vllm-0.27.0",
            lambda v: v["max_num_seqs"] > 4,
            _bump_first_graph("mixed"),
            "vllm 0.27.0 (v2) DIFFERS from the kit's vllm-0.26.0 at config",
        ),
        (
            "vllm_sizing_vectors_model_runner_v1.json",
            lambda v: v["engine"] == "vllm-0.30.0",
            lambda v: any(o[1] == "graph" for o in v["outcomes"]),
            lambda v: next(o for o in v["outcomes"] if o[1] == "graph").__setitem__(1, "eager"),
            "vllm 0.30.0 (v1) DIFFERS from the kit's vllm-0.29.0 at config",
        ),
    ],
)
def test_one_changed_value_fails_naming_the_config(
    capsys, tmp_path, name, keep, pick, change, words
):
    payload, vector = _changed(_part(name, keep), pick, change)
    code, out = _run(capsys, tmp_path, payload)
    assert code == 1 and words in out, out
    named = json.loads(out.split(" at config ", 1)[1].rsplit("}: ", 1)[0] + "}")
    for key in ("max_num_seqs", "num_speculative_tokens", "max_num_batched_tokens"):
        assert named[key] == vector[key]


def test_each_release_takes_its_familys_extraction():
    families = release_check().families_of_release
    assert families("0.8.5.post1") == ["early-v1"] and families("0.11.2") == ["early-v1"]
    assert families("0.14.1") == ["v1"] and families("0.25.1") == ["v2", "v1"]
    assert families("0.34.0") == ["split"] and families("0.35.0") == ["split"]
    with pytest.raises(SystemExit, match="V0"):
        families("0.7.3")


def test_unchecked_means_no_recorded_file_has_read_it():
    done = release_check().checked_releases()
    assert {"0.8.0", "0.9.2", "0.25.0", "0.34.0"} <= done
    assert not {"0.9.1", "0.14.1", "0.25.1"} & done
