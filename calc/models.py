"""Model configurations and parameter counts.

Two architectures:

* ``"llama"``: Llama 2 (Touvron et al. 2023, "Llama 2: Open Foundation and Fine-Tuned
  Chat Models", Table 1 and Sec. 2.2; Hugging Face ``meta-llama/Llama-2-*-hf``
  ``config.json``): RMSNorm, rotary positions (no position parameters), SwiGLU MLP,
  no biases, untied input embedding and output head, grouped-query attention in 70B.
* ``"gpt"``: GPT-3 (Brown et al. 2020, "Language Models are Few-Shot Learners",
  Table 2.1 and Sec. 2.1; GPT-2 architecture of Radford et al. 2019): LayerNorm with
  bias, learned position embeddings, 4h GELU MLP, biases everywhere, output head tied
  to the token embedding.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._check import (
    MAX_BATCH,
    MAX_HIDDEN,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    MAX_VOCAB,
    check_choice,
    check_int,
)
from .activations import RECOMPUTE_MODES

__all__ = [
    "ARCHITECTURES",
    "DEFAULT_MODEL",
    "MEGATRON_MODELS",
    "MODELS",
    "MegatronForwardFlops",
    "ModelConfig",
    "get_model",
    "layer_param_count",
    "megatron_flops_per_iteration",
    "megatron_forward_flops",
    "megatron_param_count",
    "param_count",
]

ARCHITECTURES = ("llama", "gpt")


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only transformer, as published.

    ``hidden`` is h, ``layers`` is l (L), ``heads`` is a, ``kv_heads`` the number of
    key/value heads (== heads without grouped-query attention), ``ffn`` the MLP inner
    size, ``seq_len`` s the training context length, ``vocab`` V.
    ``train_tokens`` is the number of tokens the model was trained on (paper).
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

    @property
    def head_dim(self) -> int:
        """h / a."""
        return self.hidden // self.heads


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


def get_model(model: str) -> ModelConfig:
    """The preset ``MODELS[model]``; raises ValueError listing the known keys."""
    return MODELS[check_choice("model", model, MODELS)]


def _check_model(model: ModelConfig) -> ModelConfig:
    if not isinstance(model, ModelConfig):
        raise ValueError(
            f"model must be a ModelConfig (one of {', '.join(MODELS)}), got {model!r}"
        )
    check_choice("model.architecture", model.architecture, ARCHITECTURES)
    return model


def layer_param_count(model: ModelConfig) -> int:
    """Parameters of one transformer block.

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
    h, f = m.hidden, m.ffn
    if m.architecture == "llama":
        d_kv = m.kv_heads * h // m.heads
        return 2 * h * h + 2 * h * d_kv + 3 * h * f + 2 * h
    return (3 * h * h + 3 * h) + (h * h + h) + (h * f + f + f * h + h) + 4 * h


def param_count(model: ModelConfig) -> int:
    """Exact parameter count of the model.

    Llama: ``layers · layer_param_count + final RMSNorm h + V·h (embedding)
    + V·h (output head, untied)``. Gives 6,738,415,616 (7B), 13,015,864,320 (13B) and
    68,976,648,192 (70B), the sizes of the published checkpoints (HF config.json).

    GPT: ``layers · (12h² + 13h) + V·h (token embedding, tied with the output head)
    + s·h (learned positions) + final LayerNorm 2h``; GPT-3 175B comes to
    174,604,259,328 (Brown et al. 2020 Table 2.1 rounds to 175.0B).
    """
    m = _check_model(model)
    h = m.hidden
    embeddings = m.vocab * h if m.tied_embeddings else 2 * m.vocab * h
    body = m.layers * layer_param_count(m)
    if m.architecture == "llama":
        return body + embeddings + h  # final RMSNorm weight
    return body + embeddings + m.seq_len * h + 2 * h  # positions + final LayerNorm


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
