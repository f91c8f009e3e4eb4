"""examples/flops.py: FlopCounterMode on a small GPT against Megatron's FLOP count.

The lab counts one training step (forward, backward; with and without recomputation)
of a GPT in Megatron's layout; these are the counts Narayanan et al. 2021's Eq. 3 and
its derivation give (calc.models), the step over 6ND (calc.compute), and the two
places PyTorch counts otherwise than the paper: checkpoint's default early stop skips
each checkpointed region's last matmul, and a fused attention kernel's backward
computes QKᵀ again.
"""

from __future__ import annotations

from typing import Any

from calc.activations import recompute_overhead
from calc.compute import non_embedding_params, training_flops
from calc.data_parallel import tokens_per_step
from calc.models import megatron_flops_per_iteration, megatron_forward_flops, megatron_param_count

NAME = "flops"
CONFIG: dict[str, Any] = {
    "layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 32, "long_seq_len": 256,
    "global_batch": 8, "world_size": 1,
}
FIGURES = (  # per sequence length; the longer one's carry a long_ prefix
    "parameters", "step_flops", "attention_fraction", "ratio_6nd", "ratio_6nd_non_embedding",
)
# The FLOP counts are exact integers (the lab compares them exactly), so they are shown whole.
OUTPUTS = {
    "parameters": "integer",
    "forward_addmm_flops": "integer",
    "forward_mm_flops": "integer",
    "forward_bmm_flops": "integer",
    "forward_flops": "integer",
    "backward_mm_flops": "integer",
    "backward_bmm_flops": "integer",
    "backward_flops": "integer",
    "step_flops": "integer",
    "attention_fraction": "fraction",
    "ratio_6nd": "ratio",
    "ratio_6nd_non_embedding": "ratio",
    "full_flops": "integer",
    "full_early_stop_flops": "integer",
    "selective_flops": "integer",
    "selective_early_stop_flops": "integer",
    "full_overhead": "fraction",
    "selective_overhead": "fraction",
    "fused_flops": "integer",
    "fused_default_table_flops": "integer",
    # for the page's text: the terms behind the checks above
    "tokens": "integer",
    "non_embedding_parameters": "integer",
    "exact_6nd_parameters": "integer",
    "attention_flops": "integer",
    "full_early_stop_skipped_flops": "integer",
    "selective_early_stop_skipped_flops": "integer",
    "full_early_stop_overhead": "fraction",
    "selective_early_stop_overhead": "fraction",
    "fused_extra_flops": "integer",
    "long_parameters": "integer",
    "long_step_flops": "integer",
    "long_attention_fraction": "fraction",
    "long_ratio_6nd": "ratio",
    "long_ratio_6nd_non_embedding": "ratio",
    **{key: "integer" for key in CONFIG},  # the settings, for the page's text
}


def at(config: dict[str, Any], seq_len: int) -> dict[str, float]:
    """The figures of one sequence length (names without the `long_` prefix)."""
    shape = dict(layers=config["layers"], hidden=config["hidden"], vocab=config["vocab"], seq_len=seq_len)
    batch = config["global_batch"]
    forward = megatron_forward_flops(**shape, global_batch=batch)
    step = {mode: megatron_flops_per_iteration(**shape, global_batch=batch, recompute=mode)
            for mode in ("none", "selective", "full")}
    # Megatron's Eq. 2 leaves out the final LayerNorm (2h); the lab's model has one.
    params = megatron_param_count(**shape) + 2 * config["hidden"]
    tokens = tokens_per_step(seq_len=seq_len, global_batch=batch)
    return {
        "parameters": params,
        "forward_addmm_flops": forward.linear,  # every Linear is one addmm (bias add not counted)
        "forward_mm_flops": forward.logits,  # the tied head, x @ wte.weight.T
        "forward_bmm_flops": forward.attention,  # math-backend SDPA: QKᵀ and attention over V
        "forward_flops": forward.total,
        # backward is twice the forward: the input's and the weight's gradient, all mm
        "backward_mm_flops": 2 * (forward.linear + forward.logits),
        "backward_bmm_flops": 2 * forward.attention,
        "backward_flops": 2 * forward.total,
        "step_flops": step["none"],
        "attention_fraction": 3 * forward.attention / step["none"],
        "ratio_6nd": step["none"] / training_flops(params, tokens),
        "ratio_6nd_non_embedding": step["none"] / training_flops(non_embedding_params(config["layers"],
                                                                                       config["hidden"]), tokens),
        "full_flops": step["full"],
        # checkpoint's early stop: the recomputation ends once backward's last saved
        # tensor (fc2's input, the attention probabilities) is there again, so the
        # region's last matmul is not rerun
        "full_early_stop_flops": step["full"] - forward.fc2,
        "selective_flops": step["selective"],
        "selective_early_stop_flops": step["selective"] - forward.context,
        "full_overhead": recompute_overhead(**shape, recompute="full"),
        "selective_overhead": recompute_overhead(**shape, recompute="selective"),
        # a fused kernel never stores the scores: its backward computes QKᵀ again
        "fused_flops": step["none"] + forward.scores,
        # FlopCounterMode has no formula for the fused CPU kernel: attention counts 0
        "fused_default_table_flops": step["none"] - 3 * forward.attention,
        "tokens": tokens,  # D of 6ND
        "non_embedding_parameters": non_embedding_params(config["layers"], config["hidden"]),
        # the N that makes 6ND the step exactly: 12lh² + Vh + 2lsh (attention's s² terms
        # act as 2sh "parameters" per layer)
        "exact_6nd_parameters": step["none"] / training_flops(1, tokens),
        "attention_flops": 3 * forward.attention,  # QKᵀ and attention over V, forward and backward
        "full_early_stop_skipped_flops": forward.fc2,
        "selective_early_stop_skipped_flops": forward.context,
        "full_early_stop_overhead": (step["full"] - forward.fc2) / step["none"] - 1,
        "selective_early_stop_overhead": (step["selective"] - forward.context) / step["none"] - 1,
        "fused_extra_flops": forward.scores,
    }


def compute(config: dict[str, Any]) -> dict[str, float]:
    short, long = at(config, config["seq_len"]), at(config, config["long_seq_len"])
    return {**short, **{f"long_{key}": long[key] for key in FIGURES}, **{key: config[key] for key in CONFIG}}
