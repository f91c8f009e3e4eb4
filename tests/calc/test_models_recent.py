"""Llama 3.1, Mixtral 8x7B and DeepSeek-V3: published totals and active counts, the
per-layer counts, the MoE and MLA fields' validation, and every preset's count against
Hugging Face transformers' own implementation built on the meta device (no weights, no
download: the configs are made here from our fields)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from calc import experts
from calc.models import (
    ALL_MODELS,
    MEGATRON_MODELS,
    MODELS,
    RECENT_MODELS,
    ModelConfig,
    active_param_count,
    attention_param_count,
    dense_layer_param_count,
    expert_param_count,
    get_model,
    layer_param_count,
    moe_layer_param_count,
    param_count,
)

LLAMA31 = ("llama3.1-8b", "llama3.1-70b", "llama3.1-405b")


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("llama3.1-8b", 8_030_261_248),
        ("llama3.1-70b", 70_553_706_496),
        ("llama3.1-405b", 405_853_388_800),
        ("mixtral-8x7b", 46_702_792_704),
        ("deepseek-v3", 671_026_404_352),
    ],
)
def test_recent_parameter_counts_are_exact(key: str, expected: int) -> None:
    """The checkpoints' sizes (Llama 3.1 and Mixtral on Hugging Face; DeepSeek-V3's main
    model, 671B in the report, Sec. 4.2)."""
    n = param_count(RECENT_MODELS[key])
    assert type(n) is int and n == expected


def test_deepseek_v3_is_671b_total_without_the_mtp_module() -> None:
    """Report Sec. 4.2: "671B total parameters"; the HF checkpoint's 685B add the MTP
    module (README_WEIGHTS.md), which the preset leaves out."""
    m = RECENT_MODELS["deepseek-v3"]
    assert param_count(m) / 1e9 == pytest.approx(671, abs=0.5)
    assert m.layers == 61 and m.moe_layers == 58


def test_dense_models_use_every_parameter() -> None:
    for m in (*MODELS.values(), *MEGATRON_MODELS.values(), *(RECENT_MODELS[k] for k in LLAMA31)):
        assert active_param_count(m) == param_count(m)


def test_mixtral_active_count_is_mistrals_12_9b_with_embedding_and_head() -> None:
    """Mistral AI: 46.7B total, 12.9B per token (Jiang et al. 2024 Sec. 2.1: 47B and
    13B). Two of eight experts, the router, attention, norms, embedding and head:
    12,879,925,248. Leaving the input embedding out would give 12.75B, not 12.9B: the
    published figure counts it."""
    m = RECENT_MODELS["mixtral-8x7b"]
    active = active_param_count(m)
    assert active == 12_879_925_248
    assert round(active / 1e9, 1) == 12.9 and round(param_count(m) / 1e9, 1) == 46.7
    assert round(active / 1e9) == 13 and round(param_count(m) / 1e9) == 47
    assert round((active - m.vocab * m.hidden) / 1e9, 1) == 12.7
    unused = (m.experts - m.experts_per_token) * expert_param_count(m) * m.layers
    assert param_count(m) - active == unused


def test_deepseek_v3_active_count_is_about_37b() -> None:
    """Report Sec. 4.2: "37B are activated for each token". 8 routed of 256 + 1 shared
    expert in 58 MoE layers, everything else in full: 37,552,282,624 (1.5% above)."""
    m = RECENT_MODELS["deepseek-v3"]
    active = active_param_count(m)
    assert active == 37_552_282_624
    assert active == pytest.approx(37e9, rel=0.02)
    unused = (m.experts - m.experts_per_token) * expert_param_count(m) * m.moe_layers
    assert param_count(m) - active == unused


def test_recent_per_layer_counts() -> None:
    """One block of each kind, worked in the docstrings."""
    llama, mixtral, ds = (RECENT_MODELS[k] for k in ("llama3.1-405b", "mixtral-8x7b", "deepseek-v3"))
    assert attention_param_count(llama) == 2 * 16384**2 + 2 * 16384 * 1024 == 570_425_344
    assert layer_param_count(llama) == dense_layer_param_count(llama) == 3_187_703_808
    assert expert_param_count(mixtral) == 3 * 4096 * 14336 == 176_160_768
    assert attention_param_count(mixtral) == 41_943_040
    assert layer_param_count(mixtral) == moe_layer_param_count(mixtral) == 1_451_270_144
    assert expert_param_count(ds) == 3 * 7168 * 2048 == 44_040_192
    assert attention_param_count(ds) == (
        7168 * 1536 + 1536 + 1536 * 128 * 192  # W^DQ, its RMSNorm, W^UQ/W^QR
        + 7168 * (512 + 64) + 512 + 512 * 128 * 256  # W^DKV/W^KR, its RMSNorm, W^UK/W^UV
        + 128 * 128 * 7168  # W^O
    ) == 187_107_328
    assert dense_layer_param_count(ds) == 187_107_328 + 3 * 7168 * 18432 + 2 * 7168 == 583_483_392
    assert moe_layer_param_count(ds) == 187_107_328 + 257 * 44_040_192 + 7168 * 256 + 2 * 7168
    assert layer_param_count(ds) == moe_layer_param_count(ds) == 11_507_286_016
    total = 3 * dense_layer_param_count(ds) + 58 * moe_layer_param_count(ds) + 2 * 129_280 * 7168 + 7168
    assert param_count(ds) == total


@pytest.mark.parametrize("key", ["mixtral-8x7b", "deepseek-v3"])
def test_moe_layers_agree_with_calc_experts(key: str) -> None:
    """The MoE MLP is ``calc.experts``' count: one formula for both modules."""
    m = RECENT_MODELS[key]
    mlp = experts.moe_layer_params(hidden=m.hidden, moe_ffn=m.moe_ffn, experts=m.experts,
                                   shared_experts=m.shared_experts)
    active_mlp = experts.active_moe_layer_params(hidden=m.hidden, moe_ffn=m.moe_ffn, experts=m.experts,
                                                 experts_per_token=m.experts_per_token,
                                                 shared_experts=m.shared_experts)
    block = attention_param_count(m) + 2 * m.hidden
    assert moe_layer_param_count(m) == block + mlp
    assert expert_param_count(m) == experts.expert_params(hidden=m.hidden, moe_ffn=m.moe_ffn)
    assert param_count(m) - active_param_count(m) == m.moe_layers * (mlp - active_mlp)


def test_recent_presets_are_sourced_keyed_and_apart() -> None:
    """The seed widgets' model list is unchanged; ALL_MODELS merges the three dicts and
    get_model knows every key."""
    assert list(MODELS) == ["llama2-7b", "llama2-13b", "llama2-70b", "gpt3-175b"]
    assert list(RECENT_MODELS) == [*LLAMA31, "mixtral-8x7b", "deepseek-v3"]
    assert ALL_MODELS == {**MODELS, **MEGATRON_MODELS, **RECENT_MODELS}
    assert len(ALL_MODELS) == len(MODELS) + len(MEGATRON_MODELS) + len(RECENT_MODELS)
    for key, m in RECENT_MODELS.items():
        assert isinstance(m, ModelConfig) and m.key == key and m.name and m.source
        assert get_model(key) is m
    assert get_model("llama2-7b") is MODELS["llama2-7b"]
    assert get_model("megatron-1t") is MEGATRON_MODELS["megatron-1t"]
    for key in LLAMA31:
        m = RECENT_MODELS[key]
        assert (m.kv_heads, m.vocab, m.seq_len, m.long_seq_len, m.head_dim) == (8, 128_256, 8_192, 131_072, 128)
    assert RECENT_MODELS["llama3.1-405b"].train_tokens == 15.6e12
    ds = RECENT_MODELS["deepseek-v3"]
    assert (ds.seq_len, ds.long_seq_len, ds.train_tokens) == (4_096, 131_072, 14.8e12)


def _broken(key: str, **changes: Any) -> ModelConfig:
    return dataclasses.replace(ALL_MODELS[key], **changes)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (_broken("mixtral-8x7b", experts_per_token=9), "model.experts_per_token must be an integer from 1 to 8, got 9"),
        (_broken("mixtral-8x7b", experts_per_token=0), "model.experts_per_token must be an integer from 1 to 8"),
        (_broken("mixtral-8x7b", moe_ffn=0), "model.moe_ffn must be an integer from 1"),
        (_broken("mixtral-8x7b", dense_layers=32), "model.dense_layers must be an integer from 0 to 31, got 32"),
        (_broken("mixtral-8x7b", shared_experts=-1), "model.shared_experts must be an integer from 0"),
        (_broken("mixtral-8x7b", experts=1.5), "model.experts must be an integer from 1"),
        (_broken("llama3.1-8b", experts_per_token=2), "model.experts_per_token must be 0 for a dense model"),
        (_broken("llama3.1-8b", moe_ffn=2048), "model.moe_ffn must be 0 for a dense model"),
        (_broken("llama3.1-8b", dense_layers=3), "model.dense_layers must be 0 for a dense model"),
        (_broken("gpt3-175b", experts=8, experts_per_token=2, moe_ffn=4), "model.experts must be 0 for the GPT"),
        (_broken("llama3.1-8b", kv_lora_rank=512), "model.kv_lora_rank must be 0 for the llama architecture"),
        (_broken("deepseek-v3", kv_lora_rank=0), "model.kv_lora_rank must be an integer from 1"),
        (_broken("deepseek-v3", v_head_dim=None), "model.v_head_dim must be an integer from 1"),
        (_broken("llama3.1-8b", long_seq_len=4_096), "model.long_seq_len must be an integer from 8193"),
        (_broken("llama3.1-8b", long_seq_len=None), "model.long_seq_len must be 0 for no long-context stage"),
        (_broken("llama3.1-8b", kv_heads=7), "model.kv_heads must be a divisor of model.heads (32), got 7"),
        (_broken("llama3.1-8b", kv_heads=64), "model.kv_heads must be an integer from 1 to 32, got 64"),
        (_broken("llama2-7b", heads=24, kv_heads=24), "model.heads must be a divisor of model.hidden (4096), got 24"),
        (_broken("llama2-7b", architecture="mamba"), "model.architecture must be one of llama, gpt, deepseek"),
        (_broken("llama2-7b", train_tokens=-1.0), "model.train_tokens must be a number from 0"),
        (_broken("llama2-7b", tied_embeddings=1), "model.tied_embeddings must be one of True, False"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_inconsistent_fields_are_rejected_by_name(model: ModelConfig, message: str) -> None:
    for fn in (param_count, active_param_count, layer_param_count, attention_param_count,
               dense_layer_param_count):
        with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
            fn(model)


@pytest.mark.parametrize("fn", [active_param_count, attention_param_count, dense_layer_param_count,
                                moe_layer_param_count, expert_param_count])
def test_model_functions_reject_non_models(fn: Any) -> None:
    with pytest.raises(ValueError, match="^model must be a ModelConfig"):
        fn("mixtral-8x7b")


@pytest.mark.parametrize("fn", [moe_layer_param_count, expert_param_count])
def test_expert_counts_need_experts(fn: Any) -> None:
    with pytest.raises(ValueError, match="^model must be a mixture of experts"):
        fn(RECENT_MODELS["llama3.1-405b"])


# -- against Hugging Face transformers, on the meta device --------------------------------

# Not parameters: RoPE's scaling (Llama 3.1's "llama3", DeepSeek-V3's YaRN) changes the
# frequencies, kept as buffers; they are set as in the checkpoints' config.json to show it.
LLAMA31_ROPE = {"rope_type": "llama3", "rope_theta": 500_000.0, "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8_192}
DEEPSEEK_V3_ROPE = {"rope_type": "yarn", "rope_theta": 10_000.0, "factor": 40.0, "beta_fast": 32.0,
                    "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                    "original_max_position_embeddings": 4_096}


def _hf_config(m: ModelConfig) -> Any:
    """The transformers config of ``m``, built from our fields alone."""
    import transformers

    common = dict(vocab_size=m.vocab, tie_word_embeddings=m.tied_embeddings)
    if m.architecture == "gpt":  # GPT-2's code: LayerNorm, biases, learned positions
        return transformers.GPT2Config(**common, n_embd=m.hidden, n_layer=m.layers, n_head=m.heads,
                                       n_inner=m.ffn, n_positions=m.seq_len)
    common.update(hidden_size=m.hidden, num_hidden_layers=m.layers, num_attention_heads=m.heads,
                  num_key_value_heads=m.kv_heads, max_position_embeddings=m.long_seq_len or m.seq_len)
    if m.architecture == "deepseek":
        return transformers.DeepseekV3Config(
            **common, intermediate_size=m.ffn, moe_intermediate_size=m.moe_ffn,
            n_routed_experts=m.experts, num_experts_per_tok=m.experts_per_token,
            n_shared_experts=m.shared_experts, first_k_dense_replace=m.dense_layers,
            q_lora_rank=m.q_lora_rank, kv_lora_rank=m.kv_lora_rank, qk_nope_head_dim=m.qk_nope_head_dim,
            qk_rope_head_dim=m.qk_rope_head_dim, v_head_dim=m.v_head_dim,
            n_group=8, topk_group=4,  # node-limited routing (config.json), no parameters
            num_nextn_predict_layers=1,  # as in config.json: the checkpoint's one MTP module
            rope_parameters=DEEPSEEK_V3_ROPE,
        )
    if m.experts:
        assert m.dense_layers == 0 and m.shared_experts == 0 and m.moe_ffn == m.ffn
        return transformers.MixtralConfig(**common, intermediate_size=m.moe_ffn,
                                          num_local_experts=m.experts, num_experts_per_tok=m.experts_per_token)
    rope = LLAMA31_ROPE if m.long_seq_len else {"rope_type": "default", "rope_theta": 10_000.0}
    return transformers.LlamaConfig(**common, intermediate_size=m.ffn, rope_parameters=rope)


def _meta_model(m: ModelConfig) -> Any:
    import torch
    import transformers

    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(_hf_config(m))


@pytest.mark.parametrize("key", list(ALL_MODELS))
def test_param_count_equals_transformers_on_the_meta_device(key: str) -> None:
    """transformers (pinned in the Makefile) builds the reference implementation without
    memory: every count equals its parameters' numel, tied weights counted once. The
    largest, DeepSeek-V3 and the 1T GPT, take well under a second each."""
    import torch  # noqa: F401  (imported before the clock starts)
    import transformers  # noqa: F401

    m = ALL_MODELS[key]
    start = time.perf_counter()
    model = _meta_model(m)
    assert time.perf_counter() - start < 30  # a few tenths of a second on an idle machine
    assert sum(p.numel() for p in model.parameters()) == param_count(m)
    assert len(model.model.layers if hasattr(model, "model") else model.transformer.h) == m.layers


def test_transformers_deepseek_v3_matches_layer_by_layer_without_mtp() -> None:
    """DeepseekV3ForCausalLM builds the 61 main layers only, even with
    num_nextn_predict_layers = 1 (transformers loads the MTP module separately, for
    speculative decoding, and skips the checkpoint's model.layers.61.* otherwise). The
    routing bias e_score_correction_bias is a buffer, 256 per MoE layer, not a
    parameter; the rotary frequencies are buffers too."""
    import transformers

    m = RECENT_MODELS["deepseek-v3"]
    model = _meta_model(m)
    assert isinstance(model, transformers.DeepseekV3ForCausalLM)
    assert model.config.num_nextn_predict_layers == 1 and len(model.model.layers) == 61
    names = [name for name, _ in model.named_parameters()]
    assert not [n for n in names if "layers.61" in n or "eh_proj" in n or "enorm" in n or "mtp" in n.lower()]

    def numel(module: Any) -> int:
        return sum(p.numel() for p in module.parameters())

    layers = model.model.layers
    assert all(numel(layer) == dense_layer_param_count(m) for layer in layers[:3])
    assert all(numel(layer) == moe_layer_param_count(m) for layer in layers[3:])
    assert numel(layers[0].self_attn) == attention_param_count(m)
    moe = layers[3].mlp
    assert numel(moe.experts) == m.experts * expert_param_count(m)
    assert numel(moe.shared_experts) == m.shared_experts * expert_param_count(m)
    assert numel(moe.gate) == m.experts * m.hidden
    biases = {name: b.numel() for name, b in model.named_buffers() if name.endswith("e_score_correction_bias")}
    assert len(biases) == m.moe_layers and set(biases.values()) == {m.experts}
    assert not [n for n in names if "e_score_correction_bias" in n]
    assert numel(model.model.embed_tokens) == numel(model.lm_head) == m.vocab * m.hidden


def test_transformers_mixtral_experts_and_router() -> None:
    """MixtralSparseMoeBlock: 8 SwiGLU experts in two 3-D tensors and a bias-free
    router h×E; the active count is the model less 6 experts per layer."""
    m = RECENT_MODELS["mixtral-8x7b"]
    model = _meta_model(m)
    block = model.model.layers[0].mlp
    assert sum(p.numel() for p in block.experts.parameters()) == m.experts * expert_param_count(m)
    assert [tuple(p.shape) for p in block.gate.parameters()] == [(m.experts, m.hidden)]
    per_expert = sum(p.numel() for p in block.experts.parameters()) // m.experts
    total = sum(p.numel() for p in model.parameters())
    assert total - m.layers * (m.experts - m.experts_per_token) * per_expert == active_param_count(m)
