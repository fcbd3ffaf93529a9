"""The Llama decoder: equal to transformers' Llama, cache semantics, checkpoints, bad input."""

import dataclasses
import json

import pytest
import torch
import torch.nn.functional as F
from helpers import restore, snapshot

from graphlab.engine.checkpoint import load_checkpoint, save_checkpoint
from graphlab.engine.config import PRESETS, Llama3RopeScaling, ModelConfig
from graphlab.engine.model import RMSNorm, build_model, default_init_std, rope_inv_freq
from graphlab.errors import GraphlabError, UnreadableInput

LLAMA3_ROPE = dict(
    rope_type="llama3",
    factor=8.0,
    low_freq_factor=1.0,
    high_freq_factor=4.0,
    original_max_position_embeddings=64,
)


pytestmark = pytest.mark.usefixtures("one_thread")


def hf_llama(tmp_path, rope_scaling=None, tie=False):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=512,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rope_theta=500000.0,
        rope_scaling=rope_scaling,
        tie_word_embeddings=tie,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(tmp_path)
    return model


def decode_all(model, ids, seq_slots):
    """Prefill all but the last two tokens, then decode them one at a time."""
    n, length = ids.shape
    pos = torch.arange(length).repeat(n, 1)
    outs = [model(ids[:, :-2], pos[:, :-2], seq_slots)]
    for t in range(length - 2, length):
        outs.append(model(ids[:, t : t + 1], pos[:, t : t + 1], seq_slots))
    return torch.cat(outs, dim=1)


@pytest.mark.parametrize("rope_scaling", [None, LLAMA3_ROPE], ids=["rope-default", "rope-llama3"])
def test_matches_transformers_prefill_and_decode(tmp_path, rope_scaling):
    hf = hf_llama(tmp_path, rope_scaling)
    model = load_checkpoint(tmp_path)
    model.allocate_kv_cache(num_slots=3, max_seq_len=32)
    ids = torch.randint(0, 512, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits
        ours = decode_all(model, ids, torch.tensor([2, 0]))
    assert ours.dtype == torch.float32
    torch.testing.assert_close(ours, ref, atol=1e-4, rtol=0)


def test_save_load_round_trip_and_transformers_reads_export(tmp_path):
    transformers = pytest.importorskip("transformers")
    model = build_model("tiny", seed=3)
    save_checkpoint(model, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["torch_dtype"] == "float32"
    again = load_checkpoint(tmp_path)
    hf = transformers.LlamaForCausalLM.from_pretrained(tmp_path).eval()
    ids = torch.randint(0, 512, (2, 6), generator=torch.Generator().manual_seed(2))
    pos = torch.arange(6).repeat(2, 1)
    for m in (model, again):
        m.allocate_kv_cache(2, 16)
    with torch.no_grad():
        a = model(ids, pos, torch.tensor([0, 1]))
        b = again(ids, pos, torch.tensor([0, 1]))
        ref = hf(ids).logits
    assert torch.equal(a, b)
    torch.testing.assert_close(a, ref, atol=1e-4, rtol=0)


def test_tied_checkpoint_from_transformers_loads(tmp_path):
    hf = hf_llama(tmp_path, tie=True)
    model = load_checkpoint(tmp_path)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    model.allocate_kv_cache(1, 8)
    ids = torch.tensor([[5, 7, 11]])
    with torch.no_grad():
        torch.testing.assert_close(
            model(ids, torch.arange(3)[None], torch.tensor([0])), hf(ids).logits, atol=1e-4, rtol=0
        )


def test_rows_sharing_a_slot_equal_one_multi_token_row():
    # Batch expansion: k+1 single-token rows on the parent's slot == one row of k+1 tokens.
    model = build_model("tiny", seed=1)
    model.allocate_kv_cache(num_slots=2, max_seq_len=16)
    prompt, proposal = torch.tensor([[3, 1, 4, 1, 5]]), torch.tensor([9, 2, 6, 5])
    with torch.no_grad():
        model(prompt, torch.arange(5)[None], torch.tensor([1]))
        cache_after_prefill = snapshot(model)
        rows = model(proposal[:, None], torch.arange(5, 9)[:, None], torch.tensor([1] * 4))
        restore(model, cache_after_prefill)
        one = model(proposal[None], torch.arange(5, 9)[None], torch.tensor([1]))
    torch.testing.assert_close(rows[:, 0], one[0], atol=1e-5, rtol=1e-5)


def test_forward_is_the_lm_head_over_the_hidden_states():
    model = build_model("tiny", seed=4, dtype="bfloat16")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    ids, pos = torch.tensor([[5, 6], [7, 8]]), torch.tensor([[0, 1], [3, 4]])
    seq_slots = torch.tensor([1, 0])
    with torch.no_grad():
        start = snapshot(model)
        hidden = model.hidden_states(ids, pos, seq_slots)
        restore(model, start)
        logits = model(ids, pos, seq_slots)
    assert hidden.shape == (2, 2, 128) and hidden.dtype == torch.bfloat16
    assert torch.equal(logits, model.compute_logits(hidden)) and logits.dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_equals_hugging_face_bit_for_bit(dtype):
    # transformers' LlamaRMSNorm: float32 normalisation, rounded to the input dtype, then scaled.
    g = torch.Generator().manual_seed(0)
    x = (3 * torch.randn(64, 2048, generator=g)).to(dtype)
    norm = RMSNorm(2048, 1e-5, dtype=dtype)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.1 * torch.randn(2048, generator=g))
    x32 = x.float()
    normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)
    reference = norm.weight * normed.to(dtype)
    assert torch.equal(norm(x), reference)
    # Scaling inside rms_norm (before rounding) is not Hugging Face's order: bf16 would differ.
    if dtype == torch.bfloat16:
        assert not torch.equal(F.rms_norm(x, (2048,), norm.weight, 1e-5), reference)


def test_checkpoint_keeps_hugging_face_projections_and_fused_matrices_stack_them(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    model = build_model("tiny", seed=3)
    save_checkpoint(model, tmp_path)
    state = safetensors.load_file(str(tmp_path / "model.safetensors"))
    attn, mlp = model.model.layers[1].self_attn, model.model.layers[1].mlp
    layer = "model.layers.1."
    assert torch.equal(
        attn.qkv_proj.weight,
        torch.cat([state[layer + f"self_attn.{p}.weight"] for p in ("q_proj", "k_proj", "v_proj")]),
    )
    assert torch.equal(
        mlp.gate_up_proj.weight,
        torch.cat([state[layer + f"mlp.{p}.weight"] for p in ("gate_proj", "up_proj")]),
    )
    assert not any("qkv" in name or "gate_up" in name for name in state)
    assert "lm_head.weight" not in state  # tied: loaders re-tie it
    assert set(state) == set(model.hf_parameters())


def test_pad_slot_writes_leave_real_slots_untouched():
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=3, max_seq_len=8)
    assert model.pad_slot == 3
    before = [(k[:3].clone(), v[:3].clone()) for k, v in model.kv_cache()]
    with torch.no_grad():
        model(torch.tensor([[1], [2]]), torch.tensor([[0], [0]]), torch.tensor([3, 3]))
    for (k, v), (k0, v0) in zip(model.kv_cache(), before):
        assert torch.equal(k[:3], k0) and torch.equal(v[:3], v0)
        assert k[3].abs().sum() > 0


def test_seeded_weights_are_reproducible():
    a, b = build_model("tiny", seed=7), build_model("tiny", seed=7)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.lm_head.weight, build_model("tiny", seed=8).lm_head.weight)


@pytest.mark.parametrize("preset", ["tiny", "100m"])
def test_default_weights_give_a_non_degenerate_greedy_continuation(preset):
    # A tied lm_head echoes the input token when the layers add little to its embedding (at a
    # fixed std 0.02 the tiny and 100m greedy texts repeat their last token >90% of the time).
    model = build_model(preset, seed=7)
    model.allocate_kv_cache(1, 48)
    tokens = torch.randint(
        0, model.config.vocab_size, (8,), generator=torch.Generator().manual_seed(0)
    ).tolist()
    with torch.no_grad():
        logits = model(torch.tensor([tokens]), torch.arange(8)[None], torch.tensor([0]))[0, -1]
        while len(tokens) < 48:
            tokens.append(int(logits.argmax()))
            logits = model(
                torch.tensor([tokens[-1:]]), torch.tensor([[len(tokens) - 1]]), torch.tensor([0])
            )[0, 0]
    continuation = tokens[7:]  # the prompt's last token, then 40 generated
    repeats = sum(a == b for a, b in zip(continuation, continuation[1:]))
    assert repeats <= 8 and len(set(continuation[1:])) >= 24
    assert 0.5 < float(logits.std()) < 4  # logits spread by about INIT_GAIN, not saturated


def test_bfloat16_model_runs():
    model = build_model("tiny", dtype="bfloat16")
    model.allocate_kv_cache(2, 8)
    assert model.kv_cache()[0][0].dtype == torch.bfloat16
    with torch.no_grad():
        out = model(torch.tensor([[1], [2]]), torch.tensor([[0], [3]]), torch.tensor([0, 1]))
    assert out.dtype == torch.float32 and torch.isfinite(out).all()


def test_presets_have_the_documented_shapes():
    assert PRESETS["tiny"].head_dim >= 32
    assert 95e6 < PRESETS["100m"].num_parameters() < 105e6
    one_b = PRESETS["1b"]
    assert (
        one_b.hidden_size,
        one_b.num_hidden_layers,
        one_b.num_attention_heads,
        one_b.num_key_value_heads,
        one_b.intermediate_size,
        one_b.vocab_size,
        one_b.tie_word_embeddings,
    ) == (2048, 16, 32, 8, 8192, 128256, True)
    tiny = build_model("tiny")
    assert sum(p.numel() for p in tiny.parameters()) == PRESETS["tiny"].num_parameters()


@pytest.mark.parametrize(
    "ids, pos, seq_slots, message",
    [
        ([[1]], [[8]], [0], "positions out of range"),
        ([[512]], [[0]], [0], "input_ids out of range"),
        ([[1]], [[0]], [2], "seq_slots out of range"),
        ([[1], [2]], [[3], [3]], [1, 1], "same KV cache cell"),
        ([[1]], [[0], [1]], [0], "must both be"),
    ],
)
def test_check_inputs_names_the_problem(ids, pos, seq_slots, message):
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    with pytest.raises(GraphlabError, match=message):
        model.check_inputs(torch.tensor(ids), torch.tensor(pos), torch.tensor(seq_slots))


def test_bad_configs_and_missing_cache_are_clear_errors(tmp_path):
    with pytest.raises(GraphlabError, match="model preset 'huge' is not one of tiny"):
        build_model("huge")
    with pytest.raises(GraphlabError, match="num_key_value_heads"):
        ModelConfig(512, 128, 256, 2, 4, 3, 64)
    with pytest.raises(GraphlabError, match="dtype 'int8' is not one of float32"):
        build_model("tiny", dtype="int8")
    model = build_model("tiny")
    with pytest.raises(GraphlabError, match="allocate_kv_cache"):
        model(torch.tensor([[1]]), torch.tensor([[0]]), torch.tensor([0]))
    with pytest.raises(GraphlabError, match="max_seq_len"):
        model.allocate_kv_cache(1, 10**6)
    with pytest.raises(GraphlabError, match="no config.json"):
        load_checkpoint(tmp_path)


def test_a_checkpoint_folder_missing_its_files_is_unreadable_input(tmp_path):
    # a folder without the files a checkpoint is read from: not a value to correct but a file
    with pytest.raises(UnreadableInput, match="no config.json"):
        load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(UnreadableInput, match=r"has no \*\.safetensors weights"):
        load_checkpoint(tmp_path)


VLLM_GREEDY = """
import json, sys
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], skip_tokenizer_init=True, enforce_eager=True, dtype="float32",
          max_model_len=64, max_num_seqs=2)
out = llm.generate([{"prompt_token_ids": json.loads(sys.argv[2])}],
                   SamplingParams(temperature=0, max_tokens=6, detokenize=False))
print("TOKENS", json.dumps(list(out[0].outputs[0].token_ids)))
"""


@pytest.mark.vllm
def test_vllm_loads_the_export_and_decodes_the_same_greedy_tokens(tmp_path):
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed")
    model = build_model("tiny", seed=5)
    save_checkpoint(model, tmp_path)
    prompt = [3, 14, 15, 92, 65, 35]
    model.allocate_kv_cache(1, 64)
    ids, ours = list(prompt), []
    with torch.no_grad():
        logits = model(torch.tensor([ids]), torch.arange(len(ids))[None], torch.tensor([0]))
        for _ in range(6):
            ours.append(int(logits[0, -1].argmax()))
            logits = model(
                torch.tensor([[ours[-1]]]), torch.tensor([[len(ids)]]), torch.tensor([0])
            )
            ids.append(ours[-1])
    # A subprocess: vLLM's CPU backend pins this process's threads.
    env = dict(
        os.environ,
        VLLM_CPU_KVCACHE_SPACE="1",
        VLLM_ENABLE_V1_MULTIPROCESSING="0",
        HF_HUB_OFFLINE="1",
    )
    run = subprocess.run(
        [sys.executable, "-c", VLLM_GREEDY, str(tmp_path), json.dumps(prompt)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("TOKENS ")]
    assert lines, run.stderr[-2000:]
    assert json.loads(lines[-1].removeprefix("TOKENS ")) == ours


# ---- what the third independent mutation campaign (2026-12-06) found untested ----------------


def test_one_seq_slot_for_two_rows_is_refused():
    # a single slot would broadcast over both rows; each row names its own
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    with pytest.raises(GraphlabError, match=r"seq_slots \(1,\) must be \[n\] with n=2"):
        model.check_inputs(torch.tensor([[1], [2]]), torch.tensor([[0], [1]]), torch.tensor([0]))


@pytest.mark.parametrize("name", ["input_ids", "positions", "seq_slots"])
def test_a_negative_id_position_or_slot_is_out_of_range(name):
    # torch would index from the end: a -1 slot writes the last sequence's cache
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    batch = {"input_ids": [[1]], "positions": [[0]], "seq_slots": [0]}
    batch[name] = [[-1]] if name != "seq_slots" else [-1]
    with pytest.raises(GraphlabError, match=rf"{name} out of range: values in \[-1, -1\]"):
        model.check_inputs(*(torch.tensor(batch[k]) for k in batch))


@pytest.mark.parametrize("rows, tokens", [(0, 1), (1, 0)])
def test_a_batch_with_no_rows_or_no_tokens_is_empty(rows, tokens):
    # either dimension empty leaves nothing to take min() of
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    ids = torch.zeros(rows, tokens, dtype=torch.long)
    with pytest.raises(GraphlabError, match="empty batch"):
        model.check_inputs(ids, ids.clone(), torch.zeros(rows, dtype=torch.long))


# ---- what mutmut over engine/model.py (2026-12-06) found untested -----------------------------


def test_valid_inputs_pass_the_checks_whatever_their_values():
    # the largest id, the last position and the last slot are all in range; every cell distinct
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    ids, positions, slots = (
        torch.tensor([[511], [1]]),
        torch.tensor([[7], [0]]),
        torch.tensor([1, 0]),
    )
    assert model.check_inputs(ids, positions, slots) is None


def test_distinct_cells_are_never_taken_for_one():
    # slot 8 at position 0 and slot 0 at position 1 are two cells (8 * 8 + 0 and 0 * 8 + 1)
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=9, max_seq_len=8)
    model.check_inputs(torch.tensor([[1], [2]]), torch.tensor([[0], [1]]), torch.tensor([8, 0]))


@pytest.mark.parametrize(
    "ids, pos, seq_slots, message",
    [
        (
            [[512]],
            [[0]],
            [0],
            "input_ids out of range: values in [512, 512], allowed [0, 511] (vocab_size=512)",
        ),
        (
            [[1]],
            [[8]],
            [0],
            "positions out of range: values in [8, 8], allowed [0, 7] (max_seq_len=8)",
        ),
        (
            [[1]],
            [[0]],
            [2],
            "seq_slots out of range: values in [2, 2], allowed [0, 1] (num_slots=2)",
        ),
        (
            [[1], [2]],
            [[3], [3]],
            [1, 1],
            "two tokens in one step write the same KV cache cell (same seq_slot and position); "
            "each (seq_slot, position) once per step",
        ),
    ],
)
def test_check_inputs_messages_name_the_value_the_range_and_the_setting(
    ids, pos, seq_slots, message
):
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    with pytest.raises(GraphlabError) as raised:
        model.check_inputs(torch.tensor(ids), torch.tensor(pos), torch.tensor(seq_slots))
    assert str(raised.value) == message


@pytest.mark.parametrize("name", ["input_ids", "positions", "seq_slots"])
def test_a_list_or_a_float_tensor_is_named_not_a_deep_error(name):
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    batch = {
        "input_ids": torch.tensor([[1]]),
        "positions": torch.tensor([[0]]),
        "seq_slots": torch.tensor([0]),
    }
    batch[name] = batch[name].tolist()
    with pytest.raises(GraphlabError, match=rf"^{name} must be a tensor with values, got \["):
        model.check_inputs(*batch.values())
    batch[name] = torch.tensor(batch[name], dtype=torch.float32)
    with pytest.raises(
        GraphlabError, match=rf"^{name} must be int64 \(torch.long\), got torch.float32$"
    ):
        model.check_inputs(*batch.values())


def test_no_kv_cache_says_which_call_allocates_it():
    with pytest.raises(GraphlabError) as raised:
        build_model("tiny").kv_cache()
    assert str(raised.value) == "no KV cache: call allocate_kv_cache(num_slots, max_seq_len) first"


def test_norm_weights_start_at_one_as_hugging_faces_and_the_default_seed_is_0():
    transformers = pytest.importorskip("transformers")
    hf_norm = transformers.models.llama.modeling_llama.LlamaRMSNorm(128)
    model = build_model("tiny")
    norms = {n: p for n, p in model.named_parameters() if n.endswith("norm.weight")}
    assert norms and all(torch.equal(p, torch.ones_like(p)) for p in norms.values())
    assert torch.equal(hf_norm.weight, torch.ones(128))
    seeded = build_model("tiny", seed=0)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), seeded.parameters()))
    with pytest.raises(
        GraphlabError, match=r"^seed must be an integer in 0\.\.9223372036854775807, got -1$"
    ):
        build_model("tiny", seed=-1)


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


def test_the_cache_may_hold_every_position_the_model_has():
    model = build_model("tiny")
    limit = model.config.max_position_embeddings
    model.allocate_kv_cache(num_slots=1, max_seq_len=limit)
    assert model.max_seq_len == limit
    with pytest.raises(GraphlabError, match=rf"max_seq_len .* in 1..{limit}, got {limit + 1}"):
        model.allocate_kv_cache(num_slots=1, max_seq_len=limit + 1)


# ---- what mutmut over engine/model.py with its own test file found untested (2026-12-06, later)


def test_a_weight_std_scales_every_matrix_of_the_same_seed_and_leaves_the_norms_at_one():
    # one seeded draw per parameter: std s gives (s / default std) times the default weights
    default = build_model("tiny", seed=3)
    scaled = build_model("tiny", seed=3, weight_std=0.02)
    ratio = 0.02 / default_init_std(default.config)
    for (name, a), b in zip(default.hf_parameters().items(), scaled.hf_parameters().values()):
        expected = a if name.endswith("norm.weight") else a * ratio
        torch.testing.assert_close(b, expected, rtol=1e-5, atol=0, msg=name)


def test_a_built_model_records_no_autograd_graph():
    # outside inference_mode too: a step's logits carry no graph back to the weights
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=1, max_seq_len=8)
    logits = model(torch.tensor([[1]]), torch.tensor([[0]]), torch.tensor([0]))
    assert not logits.requires_grad and logits.grad_fn is None
    assert not any(p.requires_grad for p in model.parameters())


def test_a_step_without_a_kv_cache_says_which_call_allocates_it():
    model = build_model("tiny")
    one = torch.tensor([[1]])
    with pytest.raises(GraphlabError) as raised:
        model.hidden_states(one, one, torch.tensor([0]))
    assert str(raised.value) == "no KV cache: call allocate_kv_cache(num_slots, max_seq_len) first"


def test_the_kv_cache_takes_the_dtype_it_is_given():
    model = build_model("tiny")
    model.allocate_kv_cache(num_slots=1, max_seq_len=8, dtype="bfloat16")
    assert {t.dtype for pair in model.kv_cache() for t in pair} == {torch.bfloat16}


def test_llama3_rope_frequencies_equal_hugging_faces_for_a_low_freq_factor_above_1():
    # at low_freq_factor 1 (the presets') multiplying and dividing by it agree
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    scaling = dict(
        factor=8.0, low_freq_factor=2.0, high_freq_factor=4.0, original_max_position_embeddings=64
    )
    config = dataclasses.replace(PRESETS["1b"], rope_scaling=Llama3RopeScaling(**scaling))
    hf = transformers.LlamaConfig(
        hidden_size=config.hidden_size,
        num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads,
        max_position_embeddings=config.max_position_embeddings,
        rope_theta=config.rope_theta,
        rope_scaling=dict(rope_type="llama3", **scaling),
    )
    expected = ROPE_INIT_FUNCTIONS["llama3"](hf, "cpu")[0]
    torch.testing.assert_close(rope_inv_freq(config), expected, rtol=1e-6, atol=0)
