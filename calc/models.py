"""Model configurations and parameter counts.

Three architectures:

* ``"llama"``: Llama 2 (Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned
  Chat Models", Table 1 and Sec. 2.2; Hugging Face ``meta-llama/Llama-2-*-hf``
  ``config.json``): RMSNorm, rotary positions (no position parameters), SwiGLU MLP,
  no biases, untied input embedding and output head, grouped-query attention in 70B.
  Llama 3.1 (Dubey et al. 2024, "The Llama 3 Herd of Models", Table 3) is the same
  block with a 128K vocabulary and 8 key/value heads at every size; its RoPE scaling
  (``rope_scaling`` ``"llama3"``) changes frequencies, not parameters. Mixtral 8x7B
  (Jiang et al. 2024, "Mixtral of Experts", Sec. 2) keeps this attention and replaces
  every MLP by 8 SwiGLU experts and a router (``experts`` > 0).
* ``"gpt"``: GPT-3 (Brown et al. 2020, "Language Models are Few-Shot Learners",
  Table 2.1 and Sec. 2.1; GPT-2 architecture of Radford et al. 2019): LayerNorm with
  bias, learned position embeddings, 4h GELU MLP, biases everywhere, output head tied
  to the token embedding.
* ``"deepseek"``: DeepSeek-V3 (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report",
  Sec. 2.1 and 4.2): Llama's RMSNorm, SwiGLU and untied head, with multi-head latent
  attention (MLA: low-rank query and key/value projections, each followed by an
  RMSNorm, and a decoupled rotary part of the keys shared by all heads) and DeepSeekMoE
  (shared plus fine-grained routed experts) in every layer after the first
  ``dense_layers``.

Presets: ``MODELS`` (the seed explainers' models; every widget's model list),
``MEGATRON_MODELS`` (the planner's 1T GPT), ``RECENT_MODELS`` (Llama 3.1, Mixtral,
DeepSeek-V3) and ``ALL_MODELS``, the three merged. Every count is an exact integer and
equals the number of elements of ``model.parameters()`` of the Hugging Face
``transformers`` implementation built from the same config (tests/calc).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import (
    MAX_BATCH,
    MAX_HEADS,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    MAX_TOKENS,
    MAX_VOCAB,
    check_choice,
    check_int,
    check_real,
)
from .activations import RECOMPUTE_MODES
from .experts import MAX_EXPERTS, active_moe_layer_params, expert_params, moe_layer_params

__all__ = [
    "ALL_MODELS",
    "ARCHITECTURES",
    "DEFAULT_MODEL",
    "MEGATRON_MODELS",
    "MODELS",
    "MegatronForwardFlops",
    "ModelConfig",
    "ModelForwardFlops",
    "RECENT_MODELS",
    "active_param_count",
    "attention_param_count",
    "dense_layer_param_count",
    "expert_param_count",
    "forward_flops",
    "get_model",
    "layer_param_count",
    "megatron_flops_per_iteration",
    "megatron_forward_flops",
    "megatron_param_count",
    "moe_layer_param_count",
    "param_count",
]

ARCHITECTURES = ("llama", "gpt", "deepseek")


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer, as published.

    ``hidden`` is h, ``layers`` is l (L), ``heads`` is a, ``kv_heads`` the number of
    key/value heads (== heads without grouped-query attention; MLA has no shared
    key/value heads and keeps config.json's value, == heads), ``ffn`` the inner size of
    a dense MLP, ``seq_len`` s the context length of the main pre-training, ``vocab`` V.
    ``train_tokens`` is the number of tokens the model was pre-trained on (paper; 0 =
    not published).

    ``long_seq_len`` is the context length of a later long-context training stage
    (Llama 3.1's and DeepSeek-V3's 128K), 0 = none.

    Mixture of experts (all 0 for a dense model): ``experts`` E, the routed experts of
    one MoE layer (config.json ``num_local_experts`` / ``n_routed_experts``);
    ``experts_per_token`` k, the routed experts each token uses (top-k,
    ``num_experts_per_tok``); ``shared_experts``, experts every token uses besides its
    k (DeepSeekMoE, ``n_shared_experts``); ``moe_ffn``, the inner size of one expert
    (Mixtral's ``intermediate_size``, DeepSeek's ``moe_intermediate_size``);
    ``dense_layers``, how many leading layers keep a dense MLP of size ``ffn``
    (``first_k_dense_replace``; 0 when every layer is MoE, as in Mixtral).

    Multi-head latent attention, architecture ``"deepseek"`` (all 0 for standard
    attention): ``q_lora_rank`` d_c′, the rank of the query compression (0 = a
    full-rank query projection), ``kv_lora_rank`` d_c, the rank of the joint key/value
    compression, ``qk_nope_head_dim`` d_h and ``qk_rope_head_dim`` d_h^R, the per-head
    query/key dimensions without and with rotary positions, ``v_head_dim`` the
    per-head value dimension (DeepSeek-V3 Sec. 2.1.1, Eq. 1-11).
    """

    key: str
    name: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    seq_len: int
    tied_embeddings: bool
    source: str
    architecture: str = "llama"
    train_tokens: float = 2e12
    long_seq_len: int = 0
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_ffn: int = 0
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0

    @property
    def head_dim(self) -> int:
        """h / a (for MLA not a head's width: see ``qk_nope_head_dim`` and ``v_head_dim``)."""
        return self.hidden // self.heads

    @property
    def moe_layers(self) -> int:
        """Layers with an MoE MLP: ``layers - dense_layers`` for an MoE model, else 0."""
        return self.layers - self.dense_layers if self.experts else 0


_LLAMA2_SRC = (
    "Touvron et al. 2023, Llama 2, Table 1 (context 4k, 2.0T tokens, GQA for 70B); "
    "Hugging Face meta-llama/{repo} config.json"
)

MODELS: dict[str, ModelConfig] = {
    "llama2-7b": ModelConfig(
        key="llama2-7b",
        name="Llama 2 7B",
        vocab=32_000,  # config.json vocab_size
        hidden=4_096,  # hidden_size
        layers=32,  # num_hidden_layers
        heads=32,  # num_attention_heads
        kv_heads=32,  # num_key_value_heads
        ffn=11_008,  # intermediate_size
        seq_len=4_096,  # Llama 2 paper Table 1: context length 4k
        tied_embeddings=False,  # tie_word_embeddings: false
        source=_LLAMA2_SRC.format(repo="Llama-2-7b-hf"),
        architecture="llama",
        train_tokens=2e12,  # Llama 2 paper Table 1: 2.0T tokens
    ),
    "llama2-13b": ModelConfig(
        key="llama2-13b",
        name="Llama 2 13B",
        vocab=32_000,
        hidden=5_120,
        layers=40,
        heads=40,
        kv_heads=40,
        ffn=13_824,
        seq_len=4_096,
        tied_embeddings=False,
        source=_LLAMA2_SRC.format(repo="Llama-2-13b-hf"),
        architecture="llama",
        train_tokens=2e12,
    ),
    "llama2-70b": ModelConfig(
        key="llama2-70b",
        name="Llama 2 70B",
        vocab=32_000,
        hidden=8_192,
        layers=80,
        heads=64,
        kv_heads=8,  # grouped-query attention, 8 key/value heads
        ffn=28_672,
        seq_len=4_096,
        tied_embeddings=False,
        source=_LLAMA2_SRC.format(repo="Llama-2-70b-hf"),
        architecture="llama",
        train_tokens=2e12,
    ),
    "gpt3-175b": ModelConfig(
        key="gpt3-175b",
        name="GPT-3 175B",
        vocab=50_257,  # GPT-2 BPE vocabulary (Radford et al. 2019)
        hidden=12_288,  # Brown et al. 2020 Table 2.1: d_model
        layers=96,  # Table 2.1: n_layers
        heads=96,  # Table 2.1: n_heads (d_head 128)
        kv_heads=96,
        ffn=4 * 12_288,  # Sec. 2.1: feedforward layer is four times d_model
        seq_len=2_048,  # Sec. 2.1: context window n_ctx = 2048
        tied_embeddings=True,
        source=(
            "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1 "
            "(96 layers, d_model 12288, 96 heads, ctx 2048) and Sec. 2.1 "
            "(GPT-2 architecture, ffn = 4 d_model); vocab 50257 from GPT-2"
        ),
        architecture="gpt",
        train_tokens=300e9,  # Brown et al. 2020 Sec. 2.2: 300 billion tokens
    ),
}

DEFAULT_MODEL = "llama2-7b"  # the seed explainer's model

# Models used only by the planner (kept apart so the other widgets' model lists stay
# as they are): the largest GPT of Narayanan et al. 2021 ("Efficient Large-Scale
# Language Model Training on GPU Clusters Using Megatron-LM"), Table 1, last row.
MEGATRON_MODELS: dict[str, ModelConfig] = {
    "megatron-1t": ModelConfig(
        key="megatron-1t",
        name="GPT 1T (Megatron-LM)",
        vocab=51_200,  # Sec. 5.1: vocabulary size 51,200
        hidden=25_600,  # Table 1: hidden size
        layers=128,  # Table 1: number of layers
        heads=160,  # Table 1: attention heads
        kv_heads=160,
        ffn=4 * 25_600,  # GPT architecture: 4h MLP
        seq_len=2_048,  # Sec. 5.1: sequence length 2,048
        tied_embeddings=True,
        source=(
            "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU "
            "Clusters Using Megatron-LM, Table 1 (1,008B parameters, 160 heads, hidden "
            "25,600, 128 layers) and Sec. 5.1 (vocabulary 51,200, sequence length 2,048; "
            "450B tokens in the training-time estimate)"
        ),
        architecture="gpt",
        train_tokens=450e9,  # Sec. 5.1: the 1T model trained on 450 billion tokens
    ),
}


_LLAMA31_SRC = (
    "Dubey et al. 2024, The Llama 3 Herd of Models, Table 3 (layers, model dimension, FFN "
    "dimension, attention heads, 8 key/value heads, 128K vocabulary), Sec. 3.4.1 (main "
    "pre-training on sequences of 8,192 tokens, the same recipe for 8B and 70B), Sec. 3.4.2 "
    "(long-context pre-training up to 128K tokens), Sec. 1 (about 15T tokens; 405B on "
    "15.6T, also Sec. 2); Hugging Face meta-llama/{repo} config.json"
)

# Models of 2023-2024 (dense GQA, a sparse MoE, MLA with fine-grained experts), kept apart
# like MEGATRON_MODELS so that the seed widgets' model lists stay as they are. Each
# number names the config.json key it comes from.
RECENT_MODELS: dict[str, ModelConfig] = {
    "llama3.1-8b": ModelConfig(
        key="llama3.1-8b",
        name="Llama 3.1 8B",
        vocab=128_256,  # config.json vocab_size (paper: 128K tokens)
        hidden=4_096,  # hidden_size
        layers=32,  # num_hidden_layers
        heads=32,  # num_attention_heads
        kv_heads=8,  # num_key_value_heads
        ffn=14_336,  # intermediate_size
        seq_len=8_192,  # Sec. 3.4.1: sequences of 8,192 tokens (rope_scaling original_max_position_embeddings)
        tied_embeddings=False,  # tie_word_embeddings: false
        source=_LLAMA31_SRC.format(repo="Llama-3.1-8B"),
        architecture="llama",
        train_tokens=15e12,  # Sec. 1: "about 15T multilingual tokens"; model card: 15T+
        long_seq_len=131_072,  # Sec. 3.4.2: 128K context; max_position_embeddings
    ),
    "llama3.1-70b": ModelConfig(
        key="llama3.1-70b",
        name="Llama 3.1 70B",
        vocab=128_256,  # vocab_size
        hidden=8_192,  # hidden_size
        layers=80,  # num_hidden_layers
        heads=64,  # num_attention_heads
        kv_heads=8,  # num_key_value_heads
        ffn=28_672,  # intermediate_size
        seq_len=8_192,  # Sec. 3.4.1
        tied_embeddings=False,  # tie_word_embeddings
        source=_LLAMA31_SRC.format(repo="Llama-3.1-70B"),
        architecture="llama",
        train_tokens=15e12,  # Sec. 1: about 15T; model card: 15T+
        long_seq_len=131_072,  # Sec. 3.4.2; max_position_embeddings
    ),
    "llama3.1-405b": ModelConfig(
        key="llama3.1-405b",
        name="Llama 3.1 405B",
        vocab=128_256,  # vocab_size
        hidden=16_384,  # hidden_size
        layers=126,  # num_hidden_layers
        heads=128,  # num_attention_heads
        kv_heads=8,  # num_key_value_heads
        ffn=53_248,  # intermediate_size
        seq_len=8_192,  # Sec. 2: "a context window of 8K tokens"; Sec. 3.4.1
        tied_embeddings=False,  # tie_word_embeddings
        source=_LLAMA31_SRC.format(repo="Llama-3.1-405B"),
        architecture="llama",
        train_tokens=15.6e12,  # Sec. 1 and 2: "405B parameters on 15.6T tokens"
        long_seq_len=131_072,  # Sec. 2 and 3.4.2: 128K; max_position_embeddings
    ),
    "mixtral-8x7b": ModelConfig(
        key="mixtral-8x7b",
        name="Mixtral 8x7B",
        vocab=32_000,  # vocab_size (Table 1: vocab_size)
        hidden=4_096,  # hidden_size (Table 1: dim)
        layers=32,  # num_hidden_layers (Table 1: n_layers)
        heads=32,  # num_attention_heads (Table 1: n_heads, head_dim 128)
        kv_heads=8,  # num_key_value_heads (Table 1: n_kv_heads)
        ffn=14_336,  # intermediate_size (Table 1: hidden_dim), each expert's; no dense MLP
        seq_len=32_768,  # Sec. 2: context size of 32k tokens (Table 1: context_len)
        tied_embeddings=False,  # tie_word_embeddings
        source=(
            "Jiang et al. 2024, Mixtral of Experts, Table 1 (dim 4096, 32 layers, 32 heads, 8 "
            "kv heads, hidden_dim 14336, context 32768, vocab 32000, 8 experts, top 2) and "
            "Sec. 2.1 (47B parameters, 13B active; Mistral AI's announcement: 46.7B and "
            "12.9B); Hugging Face mistralai/Mixtral-8x7B-v0.1 config.json"
        ),
        architecture="llama",
        train_tokens=0.0,  # not published
        experts=8,  # num_local_experts (Table 1: num_experts)
        experts_per_token=2,  # num_experts_per_tok (Table 1: top_k_experts)
        moe_ffn=14_336,  # intermediate_size: every expert is a 14,336-wide SwiGLU
    ),
    # The main model only: the 671B total / 37B activated of the report exclude the
    # multi-token-prediction module (Sec. 2.2, depth D = 1; README_WEIGHTS.md: 11.5B more
    # parameters plus its own copies of the embedding and head, stored as
    # model.layers.61 in the Hugging Face checkpoint, whose 685B include it).
    "deepseek-v3": ModelConfig(
        key="deepseek-v3",
        name="DeepSeek-V3",
        vocab=129_280,  # vocab_size (Sec. 4.1: 128K byte-level BPE)
        hidden=7_168,  # hidden_size (Sec. 4.2)
        layers=61,  # num_hidden_layers (Sec. 4.2); MTP layer not counted
        heads=128,  # num_attention_heads (Sec. 4.2: n_h = 128)
        kv_heads=128,  # num_key_value_heads (MLA: not used by the count)
        ffn=18_432,  # intermediate_size, the MLP of the first 3 (dense) layers
        seq_len=4_096,  # Sec. 4.2: maximum sequence length 4K during pre-training
        tied_embeddings=False,  # tie_word_embeddings
        source=(
            "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, Sec. 2.1 (MLA, DeepSeekMoE), "
            "Sec. 4.2 (61 layers, hidden 7168, 128 heads of 128, d_c 512, d_c' 1536, rope "
            "dim 64, first 3 layers dense, 1 shared + 256 routed experts of 2048, 8 active; "
            "671B total, 37B activated; 4K sequences, 14.8T tokens), Sec. 4.3 (128K); "
            "Hugging Face deepseek-ai/DeepSeek-V3 config.json (main model, no MTP module)"
        ),
        architecture="deepseek",
        train_tokens=14.8e12,  # Sec. 4.2: pre-trained on 14.8T tokens
        long_seq_len=131_072,  # Sec. 4.3: YaRN extension 4K -> 32K -> 128K
        experts=256,  # n_routed_experts
        experts_per_token=8,  # num_experts_per_tok
        shared_experts=1,  # n_shared_experts
        moe_ffn=2_048,  # moe_intermediate_size
        dense_layers=3,  # first_k_dense_replace
        q_lora_rank=1_536,  # q_lora_rank (d_c')
        kv_lora_rank=512,  # kv_lora_rank (d_c)
        qk_nope_head_dim=128,  # qk_nope_head_dim (d_h)
        qk_rope_head_dim=64,  # qk_rope_head_dim (d_h^R)
        v_head_dim=128,  # v_head_dim
    ),
}

ALL_MODELS: dict[str, ModelConfig] = {**MODELS, **MEGATRON_MODELS, **RECENT_MODELS}


def get_model(model: str) -> ModelConfig:
    """The preset ``ALL_MODELS[model]`` (``MODELS``, then ``MEGATRON_MODELS`` and
    ``RECENT_MODELS``); raises ValueError listing the known keys."""
    return ALL_MODELS[check_choice("model", model, ALL_MODELS)]


def _zero(field: str, value: object, why: str) -> None:
    """A field that must be 0 here (``0`` only: not ``False``, ``0.0`` or ``None``)."""
    if not (type(value) is int and value == 0):
        raise ValueError(f"model.{field} must be 0 for {why}, got {value!r}")


def _check_model(model: ModelConfig) -> ModelConfig:
    """``model`` if its fields are consistent, else ValueError naming the field."""
    if not isinstance(model, ModelConfig):
        raise ValueError(
            f"model must be a ModelConfig (one of {', '.join(ALL_MODELS)}), got {model!r}"
        )
    m = model
    arch = check_choice("model.architecture", m.architecture, ARCHITECTURES)
    check_int("model.vocab", m.vocab, 1, MAX_VOCAB)
    check_int("model.hidden", m.hidden, 1, MAX_HIDDEN)
    check_int("model.layers", m.layers, 1, MAX_LAYERS)
    check_int("model.heads", m.heads, 1, MAX_HEADS)
    check_int("model.kv_heads", m.kv_heads, 1, m.heads)
    if m.heads % m.kv_heads:
        raise ValueError(f"model.kv_heads must be a divisor of model.heads ({m.heads}), got {m.kv_heads}")
    if arch != "deepseek" and m.hidden % m.heads:
        raise ValueError(f"model.heads must be a divisor of model.hidden ({m.hidden}), got {m.heads}")
    check_int("model.ffn", m.ffn, 1, MAX_HIDDEN)
    check_int("model.seq_len", m.seq_len, 1, MAX_SEQ_LEN)
    check_choice("model.tied_embeddings", m.tied_embeddings, (True, False))
    check_real("model.train_tokens", m.train_tokens, 0, MAX_TOKENS)
    if m.long_seq_len:
        check_int("model.long_seq_len", m.long_seq_len, m.seq_len + 1, MAX_SEQ_LEN)
    else:
        _zero("long_seq_len", m.long_seq_len, "no long-context stage")
    if m.experts:
        if arch == "gpt":
            _zero("experts", m.experts, "the GPT architecture (dense)")
        e = check_int("model.experts", m.experts, 1, MAX_EXPERTS)
        check_int("model.experts_per_token", m.experts_per_token, 1, e)
        check_int("model.shared_experts", m.shared_experts, 0, MAX_EXPERTS)
        check_int("model.moe_ffn", m.moe_ffn, 1, MAX_HIDDEN)
        check_int("model.dense_layers", m.dense_layers, 0, m.layers - 1)  # >= 1 MoE layer
    else:
        for field in ("experts", "experts_per_token", "shared_experts", "moe_ffn", "dense_layers"):
            _zero(field, getattr(m, field), "a dense model (model.experts 0)")
    if arch == "deepseek":
        check_int("model.q_lora_rank", m.q_lora_rank, 0, MAX_HIDDEN)  # 0: full-rank query
        for field in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            check_int(f"model.{field}", getattr(m, field), 1, MAX_HIDDEN)
    else:
        for field in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _zero(field, getattr(m, field), f"the {arch} architecture (MLA is deepseek's)")
    return m


def _attention(m: ModelConfig) -> int:
    h, a = m.hidden, m.heads
    if m.architecture == "gpt":
        return (3 * h * h + 3 * h) + (h * h + h)
    if m.architecture == "llama":
        d_kv = m.kv_heads * h // a
        return 2 * h * h + 2 * h * d_kv
    qk = m.qk_nope_head_dim + m.qk_rope_head_dim
    r_q, r_kv = m.q_lora_rank, m.kv_lora_rank
    if r_q:
        query = h * r_q + r_q + r_q * a * qk  # W^DQ, its RMSNorm, W^UQ and W^QR
    else:
        query = h * a * qk
    key_value = h * (r_kv + m.qk_rope_head_dim) + r_kv + r_kv * a * (m.qk_nope_head_dim + m.v_head_dim)
    return query + key_value + a * m.v_head_dim * h  # ... and W^O


def _norms(m: ModelConfig) -> int:
    """The two norms of a block: LayerNorm weight and bias (GPT) or RMSNorm weight."""
    return 4 * m.hidden if m.architecture == "gpt" else 2 * m.hidden


def _dense_layer(m: ModelConfig) -> int:
    h, f = m.hidden, m.ffn
    mlp = (h * f + f + f * h + h) if m.architecture == "gpt" else 3 * h * f
    return _attention(m) + mlp + _norms(m)


def _moe_layer(m: ModelConfig, *, active: bool) -> int:
    if active:
        mlp = active_moe_layer_params(hidden=m.hidden, moe_ffn=m.moe_ffn, experts=m.experts,
                                      experts_per_token=m.experts_per_token, shared_experts=m.shared_experts)
    else:
        mlp = moe_layer_params(hidden=m.hidden, moe_ffn=m.moe_ffn, experts=m.experts,
                               shared_experts=m.shared_experts)
    return _attention(m) + mlp + _norms(m)


def attention_param_count(model: ModelConfig) -> int:
    """Parameters of one layer's attention (its projections; the block's norms are in
    ``dense_layer_param_count``).

    Llama (Touvron et al. 2023, Sec. 2.2; Ainslie et al. 2023 for grouped-query
    attention), no biases, ``d_kv = kv_heads · h / heads``: q and o 2·h², k and v
    2·h·d_kv. Llama 3.1 405B: 2·16384² + 2·16384·1024 = 570,425,344.

    GPT (Radford et al. 2019): qkv 3·h² + 3·h and output h² + h, 4·h² + 4·h.

    MLA (DeepSeek-V3 report, Sec. 2.1.1, Eq. 1-11; HF ``DeepseekV3Attention``), with
    a heads, d_c′ = ``q_lora_rank``, d_c = ``kv_lora_rank``, d_h = ``qk_nope_head_dim``,
    d_h^R = ``qk_rope_head_dim``, d_v = ``v_head_dim``, no biases:
        query  h·d_c′ (W^DQ) + d_c′ (its RMSNorm) + d_c′·a·(d_h + d_h^R) (W^UQ, W^QR)
               (h·a·(d_h + d_h^R) when d_c′ = 0)
        + key/value  h·(d_c + d_h^R) (W^DKV and the shared rotary key W^KR)
               + d_c (RMSNorm) + d_c·a·(d_h + d_v) (W^UK, W^UV)
        + output  a·d_v·h (W^O).
    DeepSeek-V3: 11,010,048 + 1,536 + 37,748,736 + 4,128,768 + 512 + 16,777,216
    + 117,440,512 = 187,107,328.
    """
    return _attention(_check_model(model))


def expert_param_count(model: ModelConfig) -> int:
    """Parameters of one expert of an MoE model: a SwiGLU MLP of width ``moe_ffn``,
    3·h·moe_ffn (``calc.experts.expert_params``). Mixtral 8x7B 176,160,768,
    DeepSeek-V3 44,040,192; ValueError for a dense model."""
    m = _check_model(model)
    if not m.experts:
        raise ValueError(f"model must be a mixture of experts (model.experts >= 1), got {m.key} with 0")
    return expert_params(hidden=m.hidden, moe_ffn=m.moe_ffn)


def dense_layer_param_count(model: ModelConfig) -> int:
    """Parameters of one block with a dense MLP of width ``ffn``: attention
    (``attention_param_count``) + MLP + the block's two norms.

    Llama and DeepSeek: SwiGLU MLP (gate, up, down) 3·h·ffn, two RMSNorm weights 2·h;
    Llama 2 7B 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360, DeepSeek-V3's first three
    layers 187,107,328 + 3·7168·18432 + 2·7168 = 583,483,392.
    GPT: MLP h·ffn + ffn + ffn·h + h, two LayerNorms (weight and bias) 4·h; with
    ffn = 4h the block is 12·h² + 13·h (Narayanan et al. 2021, Eq. 2's per-layer part).
    For a model whose every layer is MoE (Mixtral, ``ffn`` = the expert width) this is
    the block of the same shape with one dense MLP, which the model does not have.
    """
    return _dense_layer(_check_model(model))


def moe_layer_param_count(model: ModelConfig) -> int:
    """Parameters of one MoE block: attention + E routed experts + the shared experts
    + the router's h·E matrix (no bias) + the block's two RMSNorms
    (``calc.experts.moe_layer_params`` for the MLP; Jiang et al. 2024 Sec. 2.1,
    DeepSeek-V3 report Sec. 2.1.2).

    Mixtral 8x7B: 41,943,040 + 8·176,160,768 + 4096·8 + 2·4096 = 1,451,270,144.
    DeepSeek-V3: 187,107,328 + (256 + 1)·44,040,192 + 7168·256 + 2·7168 = 11,507,286,016.
    DeepSeek-V3's per-expert routing bias (Sec. 2.1.2, auxiliary-loss-free balancing:
    256 numbers per layer, set by a rule, not by gradients) is not counted: HF
    transformers keeps it as a buffer (``e_score_correction_bias``), not a parameter;
    the checkpoint stores 58·256 = 14,848 of them. ValueError for a dense model.
    """
    m = _check_model(model)
    if not m.experts:
        raise ValueError(f"model must be a mixture of experts (model.experts >= 1), got {m.key} with 0")
    return _moe_layer(m, active=False)


def layer_param_count(model: ModelConfig) -> int:
    """Parameters of one transformer block, the block that repeats: for a dense model
    ``dense_layer_param_count`` (every layer), for an MoE model
    ``moe_layer_param_count`` (its ``layers - dense_layers`` MoE layers; DeepSeek-V3's
    3 dense layers are ``dense_layer_param_count``).

    Llama (Touvron et al. 2023; HF ``LlamaDecoderLayer``), no biases, with
    ``d_kv = kv_heads · h / heads``:
        q, o projections 2·h²  +  k, v projections 2·h·d_kv
        + SwiGLU MLP (gate, up, down) 3·h·ffn  +  two RMSNorm weights 2·h.
    Llama 2 7B: 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360.

    GPT (Radford et al. 2019 / Brown et al. 2020), with biases:
        qkv 3·h² + 3·h, output h² + h, MLP h·ffn + ffn + ffn·h + h,
        two LayerNorms (weight and bias) 4·h;
    with ffn = 4h this is 12·h² + 13·h (Narayanan et al. 2021, Eq. 2's per-layer part).
    """
    m = _check_model(model)
    return _moe_layer(m, active=False) if m.experts else _dense_layer(m)


def _outside_layers(m: ModelConfig) -> int:
    """Token embedding, output head (unless tied), positions and the final norm."""
    h = m.hidden
    embeddings = m.vocab * h if m.tied_embeddings else 2 * m.vocab * h
    if m.architecture == "gpt":
        return embeddings + m.seq_len * h + 2 * h  # learned positions + final LayerNorm
    return embeddings + h  # final RMSNorm weight


def param_count(model: ModelConfig) -> int:
    """Exact parameter count of the model:

        dense_layers · dense_layer_param_count + moe_layers · moe_layer_param_count
        + V·h (embedding) + V·h (output head, untied) + final norm
        (+ s·h learned positions and a LayerNorm's bias for GPT),

    with every layer dense for a dense model. Llama: 6,738,415,616 (Llama 2 7B),
    13,015,864,320 (13B), 68,976,648,192 (70B); Llama 3.1 8,030,261,248 (8B),
    70,553,706,496 (70B), 405,853,388,800 (405B), the sizes of the published
    checkpoints (HF config.json). Mixtral 8x7B: 46,702,792,704 ("46.7B"). DeepSeek-V3:
    671,026,404,352 (report Sec. 4.2: 671B; without the multi-token-prediction module).

    GPT: ``layers · (12h² + 13h) + V·h (token embedding, tied with the output head)
    + s·h (learned positions) + final LayerNorm 2h``; GPT-3 175B comes to
    174,604,259,328 (Brown et al. 2020 Table 2.1 rounds to 175.0B).
    """
    m = _check_model(model)
    dense = m.layers - m.moe_layers
    body = dense * _dense_layer(m) + (m.moe_layers * _moe_layer(m, active=False) if m.experts else 0)
    return body + _outside_layers(m)


def active_param_count(model: ModelConfig) -> int:
    """Parameters one token uses: ``param_count`` less the routed experts it is not
    sent to, i.e. every MoE layer counts its k routed experts (of E), its shared
    experts and the whole router; attention, norms, the dense layers, the token
    embedding and the output head count in full. For a dense model it is
    ``param_count``.

    This convention (embedding and head included) is the one that reproduces
    Mixtral's figure: 12,879,925,248, Mistral AI's "12.9B active" (Jiang et al. 2024,
    Sec. 2.1: 13B); without the embedding it would be 12.75B. DeepSeek-V3:
    37,552,282,624, published as "37B activated" (report Sec. 4.2; this is 1.5% more).
    DeepSeek's README_WEIGHTS.md gives 36.7B "including 0.9B for Embedding and 0.9B
    for the output Head", 0.85B below this count; leaving the input embedding out
    would give 36.6B.
    """
    m = _check_model(model)
    dense = m.layers - m.moe_layers
    body = dense * _dense_layer(m) + (m.moe_layers * _moe_layer(m, active=True) if m.experts else 0)
    return body + _outside_layers(m)


def _check_megatron(layers: int, hidden: int, vocab: int, seq_len: int) -> tuple[int, int, int, int]:
    return (
        check_int("layers", layers, 1, MAX_LAYERS),
        check_int("hidden", hidden, 1, MAX_HIDDEN),
        check_int("vocab", vocab, 1, MAX_VOCAB),
        check_int("seq_len", seq_len, 1, MAX_SEQ_LEN),
    )


def megatron_param_count(*, layers: int, hidden: int, vocab: int, seq_len: int) -> int:
    """Parameters of a GPT model, Narayanan et al. 2021, Eq. 2 (Sec. 5.1, Appendix):

        P = 12·l·h² · (1 + 13/(12h) + (V + s)/(12·l·h))
          = 12·l·h² + 13·l·h + (V + s)·h

    l layers, h hidden size, V vocabulary, s sequence length (learned positions,
    tied output head, final LayerNorm ignored). Computed in integers, the expanded
    form, so it is a whole count like ``param_count``.
    """
    l, h, v, s = _check_megatron(layers, hidden, vocab, seq_len)
    return 12 * l * h * h + 13 * l * h + (v + s) * h


@dataclass(frozen=True)
class MegatronForwardFlops:
    """FLOP of one forward pass of a GPT over B sequences, matmul by matmul, as
    Narayanan et al. 2021 list them (Appendix, "Floating-point operations"); each field
    is summed over the l layers, except ``logits`` (the output head, once).

    ``qkv`` 6·B·s·h² per layer (key, query and value transformation), ``scores``
    2·B·s²·h (attention matrix QKᵀ), ``context`` 2·B·s²·h (attention over values),
    ``proj`` 2·B·s·h² (post-attention linear projection), ``fc1`` and ``fc2`` 8·B·s·h²
    each (the MLP's h → 4h and 4h → h, the paper's 16·B·s·h²), ``logits`` 2·B·s·h·V.
    A multiply-add counts 2 FLOP; bias adds, softmax, LayerNorm and GELU are left out.
    """

    qkv: int
    scores: int
    context: int
    proj: int
    fc1: int
    fc2: int
    logits: int

    @property
    def linear(self) -> int:
        """The four weight matmuls of the layers: l·24·B·s·h²."""
        return self.qkv + self.proj + self.fc1 + self.fc2

    @property
    def attention(self) -> int:
        """The two attention-score matmuls of the layers: l·4·B·s²·h."""
        return self.scores + self.context

    @property
    def transformer(self) -> int:
        """The layers' forward pass, l·(24·B·s·h² + 4·B·s²·h): what full recomputation reruns."""
        return self.linear + self.attention

    @property
    def total(self) -> int:
        """The whole forward pass: the layers plus the logits."""
        return self.transformer + self.logits


def megatron_forward_flops(
    *, layers: int, hidden: int, vocab: int, seq_len: int, global_batch: int
) -> MegatronForwardFlops:
    """One forward pass of Narayanan et al. 2021's GPT over ``global_batch`` sequences,
    term by term (their Appendix; see ``MegatronForwardFlops``), in integers:

        l·(24·B·s·h² + 4·B·s²·h) + 2·B·s·h·V.

    Tiny GPT (l 2, h 64, V 128, s 32, B 8): 50,331,648 FLOP in the linear layers,
    4,194,304 in attention, 4,194,304 in the logits.
    """
    l, h, v, s = _check_megatron(layers, hidden, vocab, seq_len)
    b = check_int("global_batch", global_batch, 1, MAX_BATCH)
    tokens = b * s
    return MegatronForwardFlops(
        qkv=l * 6 * tokens * h * h,
        scores=l * 2 * tokens * s * h,
        context=l * 2 * tokens * s * h,
        proj=l * 2 * tokens * h * h,
        fc1=l * 8 * tokens * h * h,
        fc2=l * 8 * tokens * h * h,
        logits=2 * tokens * h * v,
    )


def megatron_flops_per_iteration(
    *,
    layers: int,
    hidden: int,
    vocab: int,
    seq_len: int,
    global_batch: int,
    recompute: str = "full",
) -> float:
    """FLOP of one training iteration, Narayanan et al. 2021, Eq. 3 (Appendix):

        F = 96·B·s·l·h² · (1 + s/(6h) + V/(16·l·h))

    l layers, h hidden size, V vocabulary, s sequence length, B = ``global_batch``
    sequences. Derivation (same appendix): a layer's forward pass is 24·B·s·h² +
    4·B·s²·h FLOP and the logit layer's 2·B·s·h·V; backward costs twice the forward,
    and full activation recomputation (``recompute="full"``) adds one more forward of
    the layers (not of the logits): 4 × layers + 3 × logits. Without recomputation
    (``"none"``) it is 3 × layers + 3 × logits, i.e.

        F = 72·B·s·l·h² · (1 + s/(6h) + V/(12·l·h)),

    the leading 96 becoming 72 (the logit term keeps its 6·B·s·h·V). Selective
    recomputation (``"selective"``) reruns the forward of the two attention-score
    matmuls, QKᵀ and attention over V, 4·B·s²·h per layer (Korthikanti et al. 2022,
    Appendix A), so

        F = 72·B·s·l·h² · (1 + s/(6h) + s/(18h) + V/(12·l·h)),

    the count of ``calc.activations.recompute_overhead`` (Korthikanti et al.'s Eq. 8
    adds three times as much, see ``calc.activations.selective_overhead_eq8``).

    Computed in integers from the derivation's terms (``megatron_forward_flops``), so it
    is the exact count (the closed forms above round in floating point: 72·(…) gives
    176,160,767.99999997 for l 2, h 64, V 128, s 32, B 8 instead of 176,160,768).
    """
    forward = megatron_forward_flops(layers=layers, hidden=hidden, vocab=vocab, seq_len=seq_len,
                                     global_batch=global_batch)
    mode = check_choice("recompute", recompute, RECOMPUTE_MODES)
    # forward + backward (twice the forward) of everything, then what is rerun
    rerun = {"none": 0, "selective": forward.attention, "full": forward.transformer}[mode]
    return float(3 * forward.total + rerun)


@dataclass(frozen=True)
class ModelForwardFlops:
    """FLOP of one forward pass of a ``ModelConfig`` over ``global_batch`` sequences of
    ``seq_len`` tokens, by kind of matmul; each field is summed over the layers except
    ``logits`` (the output head, once). A multiply-add counts 2 FLOP; norms,
    activations, softmax, rotary embeddings and the embedding lookup (a gather) are
    left out, as in Narayanan et al. 2021's Appendix and PaLM's Appendix B.

    ``attention_linear`` the attention's weight matmuls (q, k, v, o; with grouped-query
    attention k and v are h × d_kv), ``attention_scores`` QKᵀ and the product with V
    over the whole s × s matrix (the non-causal count PaLM and torchtitan use; a causal
    kernel does about half), ``mlp`` the MLP (SwiGLU: three h × ffn matrices, GPT: two;
    MoE: the k routed and the shared experts each token is sent to), ``router`` the MoE
    router's h × E matmul, ``logits`` the output head 2·h·V per token.
    """

    attention_linear: int
    attention_scores: int
    mlp: int
    router: int
    logits: int

    @property
    def linear(self) -> int:
        """The layers' weight matmuls: 2 FLOP per token per weight a token uses."""
        return self.attention_linear + self.mlp + self.router

    @property
    def layers(self) -> int:
        """The layers' forward pass (what full recomputation reruns)."""
        return self.linear + self.attention_scores

    @property
    def total(self) -> int:
        """The whole forward pass: the layers plus the logits."""
        return self.layers + self.logits


def _attention_matmul_weights(m: ModelConfig) -> int:
    """Weights of one layer's attention that take part in a matmul: the projections
    without GPT's biases or MLA's two low-rank RMSNorm weights."""
    h = m.hidden
    if m.architecture == "gpt":
        return 4 * h * h
    if m.architecture == "llama":
        return _attention(m)
    norms = m.kv_lora_rank + (m.q_lora_rank if m.q_lora_rank else 0)
    return _attention(m) - norms


def _score_widths(m: ModelConfig) -> tuple[int, int]:
    """(query/key, value) width summed over the heads: a·d_head each for standard
    attention; MLA's a·(d_h + d_h^R) and a·d_v (DeepSeek-V3 Sec. 2.1.1)."""
    if m.architecture == "deepseek":
        return m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim), m.heads * m.v_head_dim
    return m.heads * m.head_dim, m.heads * m.head_dim


def forward_flops(model: ModelConfig, *, seq_len: int | None = None, global_batch: int = 1) -> ModelForwardFlops:
    """Forward FLOP of ``global_batch`` sequences of ``seq_len`` tokens (default: the model's
    ``seq_len``), matmul by matmul (see ``ModelForwardFlops``), in integers. Per token
    and layer:

        attention projections 2·(2·h² + 2·h·d_kv)      (GQA: d_kv = kv_heads·h/a)
        scores                2·s·a·d_qk + 2·s·a·d_v  (= 4·s·h without MLA)
        MLP                   2·3·h·ffn (SwiGLU; GPT 2·2·h·ffn);
                              MoE: (k + shared)·2·3·h·moe_ffn + router 2·h·E

    and the logits 2·h·V once. Summed over the layers, 2·(matmul weights) + 4·L·s·h is
    PaLM's per-token forward count (Chowdhery et al. 2022, Appendix B: 6N + 12·L·H·Q·T
    for forward and backward, N the weights used in matmuls). Tests check every field
    against ``torch.utils.flop_counter.FlopCounterMode`` on small Llama (GQA, SwiGLU)
    and Mixtral models of transformers with eager attention. Llama 2 7B, one 4,096-token
    sequence: 53,051,436,040,192 FLOP in the layers' weight matmuls.
    """
    m = _check_model(model)
    s = m.seq_len if seq_len is None else check_int("seq_len", seq_len, 1, MAX_SEQ_LEN)
    b = check_int("global_batch", global_batch, 1, MAX_BATCH)
    tokens = b * s
    h = m.hidden
    dense = m.layers - m.moe_layers
    if m.architecture == "gpt":
        dense_mlp = 2 * h * m.ffn
    else:
        dense_mlp = 3 * h * m.ffn
    mlp_weights = dense * dense_mlp
    router_weights = 0
    if m.experts:
        active = m.experts_per_token + m.shared_experts
        mlp_weights += m.moe_layers * active * expert_params(hidden=h, moe_ffn=m.moe_ffn)
        router_weights = m.moe_layers * h * m.experts
    qk, v = _score_widths(m)
    return ModelForwardFlops(
        attention_linear=2 * tokens * m.layers * _attention_matmul_weights(m),
        attention_scores=2 * tokens * s * m.layers * (qk + v),
        mlp=2 * tokens * mlp_weights,
        router=2 * tokens * router_weights,
        logits=2 * tokens * h * m.vocab,
    )
