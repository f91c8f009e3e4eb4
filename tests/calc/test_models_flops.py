"""Forward FLOP of Llama-style models (SwiGLU, grouped-query attention, MoE), checked
against what PyTorch counts: ``torch.utils.flop_counter.FlopCounterMode`` on small
transformers models with eager attention, whose every matmul it sees."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from calc.models import ALL_MODELS, MODELS, ModelConfig, forward_flops, param_count

SEQ, BATCH = 16, 2
# Small shapes with grouped-query attention (4 heads, 2 key/value heads) and a SwiGLU
# MLP whose width is not 4h, so a GPT-style count would be wrong.
TINY_LLAMA = dataclasses.replace(MODELS["llama2-7b"], key="tiny-llama", vocab=96, hidden=64, layers=2,
                                 heads=4, kv_heads=2, ffn=88, seq_len=SEQ)
TINY_MIXTRAL = dataclasses.replace(ALL_MODELS["mixtral-8x7b"], key="tiny-mixtral", vocab=96, hidden=64,
                                   layers=2, heads=4, kv_heads=2, ffn=40, moe_ffn=40, experts=4,
                                   experts_per_token=2, seq_len=SEQ)


def _hf_model(m: ModelConfig) -> Any:
    import torch
    import transformers

    common = dict(vocab_size=m.vocab, hidden_size=m.hidden, num_hidden_layers=m.layers,
                  num_attention_heads=m.heads, num_key_value_heads=m.kv_heads,
                  max_position_embeddings=m.seq_len, tie_word_embeddings=False, attn_implementation="eager",
                  experts_implementation="eager")
    if m.experts:
        config = transformers.MixtralConfig(**common, intermediate_size=m.moe_ffn, num_local_experts=m.experts,
                                            num_experts_per_tok=m.experts_per_token)
    else:
        config = transformers.LlamaConfig(**common, intermediate_size=m.ffn)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == param_count(m)
    return model


def _count(model: Any, *, backward: bool) -> tuple[int, int]:
    """(forward, backward) FLOP of one step over BATCH × SEQ random tokens."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(0, model.config.vocab_size, (BATCH, SEQ))
    with FlopCounterMode(display=False) as fwd:
        out = model(input_ids=ids).logits
    forward = fwd.get_total_flops()
    if not backward:
        return forward, 0
    with FlopCounterMode(display=False) as bwd:
        out.float().sum().backward()
    return forward, bwd.get_total_flops()


def test_llama_forward_and_backward_equal_pytorchs_count() -> None:
    """Every matmul of a Llama block with GQA and SwiGLU is counted: q and o h×h, k and v
    h×d_kv, gate, up and down h×ffn, QKᵀ and ·V over s×s, the logits; backward is twice
    the forward (input and weight gradients of each matmul; the embedding has none)."""
    f = forward_flops(TINY_LLAMA, seq_len=SEQ, global_batch=BATCH)
    tokens, h, d_kv = BATCH * SEQ, TINY_LLAMA.hidden, TINY_LLAMA.kv_heads * TINY_LLAMA.head_dim
    assert f.attention_linear == 2 * tokens * 2 * (2 * h * h + 2 * h * d_kv)
    assert f.mlp == 2 * tokens * 2 * 3 * h * TINY_LLAMA.ffn
    assert f.attention_scores == 2 * 4 * tokens * SEQ * h and f.router == 0
    forward, backward = _count(_hf_model(TINY_LLAMA), backward=True)
    assert forward == f.total
    assert backward == 2 * f.total


def test_mixtral_counts_only_the_experts_a_token_is_sent_to() -> None:
    """Top-2 of 4 experts: the MLP costs k experts' SwiGLU per token plus the router's
    h×E. transformers' eager experts run each expert on its own tokens, so PyTorch's
    count agrees (its default grouped-matmul kernel has no FLOP formula in
    FlopCounterMode and would count the experts as zero)."""
    f = forward_flops(TINY_MIXTRAL, seq_len=SEQ, global_batch=BATCH)
    tokens, h = BATCH * SEQ, TINY_MIXTRAL.hidden
    assert f.mlp == 2 * tokens * 2 * 2 * 3 * h * TINY_MIXTRAL.moe_ffn
    assert f.router == 2 * tokens * 2 * h * TINY_MIXTRAL.experts
    forward, _ = _count(_hf_model(TINY_MIXTRAL), backward=False)
    assert forward == f.total


def test_gqa_and_swiglu_change_the_count_from_the_gpt_formula() -> None:
    """Llama 2 70B (8 key/value heads of 64): k and v are 8× smaller than q, so the
    attention projections are 2.25·h² weights, not GPT's 4·h²; its SwiGLU MLP of
    28,672 is 3·28,672/(8·8,192) = 1.31 times GPT's 8h² per layer."""
    m = MODELS["llama2-70b"]
    f = forward_flops(m, seq_len=m.seq_len)
    tokens, h = m.seq_len, m.hidden
    assert f.attention_linear == 2 * tokens * m.layers * (2 * h * h + 2 * h * (h // 8))
    assert f.attention_linear * 16 == 2 * tokens * m.layers * 36 * h * h
    assert f.mlp == 2 * tokens * m.layers * 3 * h * m.ffn


def test_gpt_matches_megatrons_appendix_without_biases() -> None:
    """For GPT-3 the count is Narayanan et al.'s: 24·B·s·h² + 4·B·s²·h per layer and
    2·B·s·h·V (calc.models.megatron_forward_flops)."""
    from calc.models import megatron_forward_flops

    m = MODELS["gpt3-175b"]
    ours = forward_flops(m, global_batch=4)
    theirs = megatron_forward_flops(layers=m.layers, hidden=m.hidden, vocab=m.vocab, seq_len=m.seq_len,
                                    global_batch=4)
    assert (ours.linear, ours.attention_scores, ours.logits) == (theirs.linear, theirs.attention, theirs.logits)


def test_deepseek_mla_scores_use_its_head_widths() -> None:
    """MLA: QKᵀ over d_h + d_h^R = 192 per head and ·V over d_v = 128 (DeepSeek-V3 Sec.
    2.1.1); the projections' RMSNorm weights are not matmul weights."""
    m = ALL_MODELS["deepseek-v3"]
    f = forward_flops(m, seq_len=4096)
    assert f.attention_scores == 2 * 4096 * 4096 * m.layers * m.heads * (192 + 128)
    assert f.attention_linear % (2 * 4096 * m.layers) == 0


def test_docstring_figure_and_validation() -> None:
    assert forward_flops(MODELS["llama2-7b"]).linear == 53_051_436_040_192
    with pytest.raises(ValueError, match="seq_len"):
        forward_flops(MODELS["llama2-7b"], seq_len=0)
    with pytest.raises(ValueError, match="global_batch"):
        forward_flops(MODELS["llama2-7b"], global_batch=0)
