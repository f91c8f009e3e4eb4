"""examples/activations.py: what autograd saves for backward in one GPT layer (bf16)."""

from __future__ import annotations

import math
from typing import Any

from calc import activations as act

NAME = "activations"
CONFIG: dict[str, Any] = {
    "hidden": 64, "heads": 4, "seq_len": 32, "micro_batch": 2, "dropout": 0.1, "seed": 1234,
    "world_size": 1,
}
# The terms of Korthikanti et al. 2022, Sec. 4.1, in the paper's order (their keys do not
# depend on the shape).
TERMS = tuple(t.key for t in act.activation_terms_per_layer(hidden=1, heads=1, seq_len=1, micro_batch=1))
OUTPUTS = {
    **{f"{key}_bytes": "bytes" for key in TERMS},
    "none_bytes": "bytes",
    "selective_bytes": "bytes",
    "full_bytes": "bytes",
    "attention_score_bytes": "bytes",
    "score_share": "fraction",
    "none_terms": "integer",
    "selective_terms": "integer",
    "full_terms": "integer",
    "sbh": "count",
    "as2b": "count",
    # What PyTorch keeps beyond the paper's terms, on the CPU (the lab's extras), and the
    # report's counts of saved tensors and storages.
    "layernorm_stats_bytes": "bytes",
    "none_mask_extra_bytes": "bytes",
    "selective_mask_extra_bytes": "bytes",
    "full_mask_extra_bytes": "bytes",
    "mask_extra_fraction": "fraction",
    "none_saved_bytes": "bytes",
    "selective_saved_bytes": "bytes",
    "full_saved_bytes": "bytes",
    "qkv_output_bytes": "bytes",
    "causal_mask_bytes": "bytes",
    "weight_tensors": "integer",
    "none_tensors": "integer",
    "selective_tensors": "integer",
    "full_tensors": "integer",
    "none_storages": "integer",
    "selective_storages": "integer",
    "full_storages": "integer",
    # The lab's settings, for the page's prose.
    "hidden": "integer",
    "heads": "integer",
    "seq_len": "integer",
    "micro_batch": "integer",
    "dropout": "number",
}
# Tensors saved by reference in one layer: the two LayerNorms' weight and bias, the weights
# of the four Linears (a Linear's bias needs nothing saved: its gradient is a sum).
WEIGHT_TENSORS = 2 * 2 + 4
# The LayerNorms' mean and rstd: two small tensors per LayerNorm, b·s values each.
LAYERNORM_STATS = 2 * 2


def compute(config: dict[str, Any]) -> dict[str, float]:
    shape = dict(hidden=config["hidden"], heads=config["heads"], seq_len=config["seq_len"],
                 micro_batch=config["micro_batch"])
    values: dict[str, float] = {f"{t.key}_bytes": t.bytes for t in act.activation_terms_per_layer(**shape)}
    for mode in act.RECOMPUTE_MODES:
        values[f"{mode}_bytes"] = act.activation_bytes_per_layer(**shape, recompute=mode)
        values[f"{mode}_terms"] = len(act.activation_terms_per_layer(**shape, recompute=mode))
    values["attention_score_bytes"] = act.attention_score_bytes_per_layer(**shape)
    values["score_share"] = values["attention_score_bytes"] / values["none_bytes"]  # 5as/h over 34 + 5as/h
    values["sbh"] = float(config["seq_len"]) * config["micro_batch"] * config["hidden"]
    values["as2b"] = float(config["heads"]) * config["seq_len"] ** 2 * config["micro_batch"]
    # Beyond the paper, on the CPU in bf16 (PyTorch 2.x): each LayerNorm keeps its mean and
    # rstd, b·s values each, 2 bytes; CPU dropout keeps its mask as a bf16 tensor of 0 and
    # 1/(1 - p), 2 bytes per element where the paper counts 1, so each mask term kept
    # costs its own bytes once more. Full recomputation keeps only the layer's input.
    bs = float(config["micro_batch"]) * config["seq_len"]
    values["layernorm_stats_bytes"] = LAYERNORM_STATS * bs * 2
    for mode in act.RECOMPUTE_MODES:
        kept = act.activation_terms_per_layer(**shape, recompute=mode)
        masks = math.fsum(t.bytes for t in kept if t.key.endswith("_mask"))
        stats = values["layernorm_stats_bytes"] if mode != "full" else 0.0
        values[f"{mode}_mask_extra_bytes"] = masks
        values[f"{mode}_saved_bytes"] = values[f"{mode}_bytes"] + stats + masks
        # One saved tensor per term, but Q and K (one term) are two; plus the four
        # LayerNorm statistics; plus the weights, saved by reference. With selective
        # recomputation q, k and v are three views of one storage (the QKV output).
        activations = len(kept) + ("query_key" in {t.key for t in kept}) + (LAYERNORM_STATS if stats else 0)
        values[f"{mode}_tensors"] = activations + (WEIGHT_TENSORS if mode != "full" else 0)
        values[f"{mode}_storages"] = activations - (2 if mode == "selective" else 0)
    values["mask_extra_fraction"] = values["none_mask_extra_bytes"] / values["none_bytes"]
    values["weight_tensors"] = WEIGHT_TENSORS
    # The storage selective recomputation keeps q, k and v in: the QKV output, 6sbh.
    values["qkv_output_bytes"] = values["query_key_bytes"] + values["value_bytes"]
    # A causal mask applied with masked_fill would keep an s × s bool (1 byte each).
    values["causal_mask_bytes"] = float(config["seq_len"]) ** 2
    for key in ("hidden", "heads", "seq_len", "micro_batch", "dropout"):
        values[key] = config[key]
    return values
