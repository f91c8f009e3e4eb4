"""examples/context_parallel.py: ring attention (Llama 3's balanced split and the contiguous
one) and DeepSpeed-Ulysses by hand, on one causal grouped-query attention."""

from __future__ import annotations

import math
from typing import Any

from calc.context import (
    attention_flops_per_gpu_layer,
    chunk_ranks,
    kv_block_bytes,
    rank_chunks,
    ring_sent_per_gpu_layer_bytes,
    ring_step_work,
    ulysses_max_cp,
    ulysses_sent_per_gpu_layer_bytes,
)
from calc.memory import ACTIVATION_BYTES

NAME = "context_parallel"
# world_size is the context-parallel size cp: every rank of the lab is one member of the group.
CONFIG: dict[str, Any] = {
    "seq_len": 64, "micro_batch": 2, "heads": 8, "kv_heads": 4, "head_dim": 16,
    "dtype_bytes": 4, "tolerance": 1e-5, "world_size": 4,
}
# Ulysses' all-to-alls per pass: Q, K and V before attention, the output O after it
# (Jacobs et al. 2023, Sec. 3.1, Fig. 2); backward runs their transposes, as many.
ULYSSES_ALL_TO_ALLS = 4
SETTINGS = ("seq_len", "micro_batch", "heads", "kv_heads", "head_dim", "dtype_bytes", "world_size")
OUTPUTS = {
    "hidden": "integer",
    "kv_hidden": "integer",
    "query_group": "integer",
    "tokens_per_rank": "integer",
    "chunks": "integer",
    "chunk_tokens": "integer",
    "last_chunk": "integer",
    "last_rank": "integer",
    "block_bytes": "integer",
    "ring_forward_blocks": "integer",
    "ring_backward_blocks": "integer",
    "ring_forward_bytes": "integer",
    "ring_backward_bytes": "integer",
    "ring_bytes": "integer",
    "ulysses_forward_bytes": "integer",
    "ulysses_backward_bytes": "integer",
    "ulysses_bytes": "integer",
    "ulysses_all_to_alls_forward": "integer",
    "ulysses_all_to_alls_backward": "integer",
    "ulysses_max_cp": "integer",
    "ulysses_heads_per_rank": "integer",
    "ulysses_kv_heads_per_rank": "integer",
    # Work in blocks of s/cp queries against s/cp keys, unmasked (calc.context.ring_step_work).
    "balanced_work_per_step": "number",
    "balanced_work_per_rank": "number",
    "balanced_busiest_sum": "number",
    "contiguous_work_first": "number",
    "contiguous_work_last": "number",
    "contiguous_busiest_step": "number",
    "contiguous_busiest_sum": "number",
    "work_imbalance": "number",
    "balanced_attention_flops": "integer",
    "contiguous_attention_flops": "integer",
    **{key: "integer" for key in SETTINGS},
    "tolerance": "scientific",
}


def shape(config: dict[str, Any]) -> dict[str, int]:
    """calc's arguments for the lab's attention: h = heads · head_dim."""
    return {"hidden": config["heads"] * config["head_dim"], "heads": config["heads"],
            "kv_heads": config["kv_heads"], "seq_len": config["seq_len"], "micro_batch": config["micro_batch"],
            "cp": config["world_size"]}


def work(config: dict[str, Any], split: str) -> tuple[tuple[float, ...], ...]:
    """calc's work of each rank at each ring step, [step][rank], in blocks."""
    return ring_step_work(config["world_size"], split)


def rank_work(config: dict[str, Any], split: str) -> list[float]:
    """Each rank's work summed over the ring steps, in blocks."""
    steps = work(config, split)
    return [math.fsum(row[r] for row in steps) for r in range(config["world_size"])]


def busiest_sum(config: dict[str, Any], split: str) -> float:
    """The ring's length in blocks: a step lasts as long as its busiest rank."""
    return math.fsum(max(row) for row in work(config, split))


def compute(config: dict[str, Any]) -> dict[str, float]:
    cp, s = config["world_size"], config["seq_len"]
    args = shape(config)
    if s % (2 * cp):
        raise ValueError(f"2·cp = {2 * cp} must divide the {s} tokens (Llama 3's split)")
    # calc counts 16-bit elements (ACTIVATION_BYTES = 2); the lab's are fp32.
    scale = config["dtype_bytes"] / ACTIVATION_BYTES
    block = kv_block_bytes(**args) * scale
    ring = {d: ring_sent_per_gpu_layer_bytes(**args, direction=d) * scale for d in ("forward", "backward", "both")}
    ulysses = {d: ulysses_sent_per_gpu_layer_bytes(**args, direction=d) * scale for d in ("forward", "backward", "both")}
    balanced, contiguous = rank_work(config, "balanced"), rank_work(config, "contiguous")
    assert len(set(balanced)) == 1, balanced  # every rank the same work: the point of the split
    flops = {split: attention_flops_per_gpu_layer(hidden=args["hidden"], seq_len=s, micro_batch=config["micro_batch"],
                                                  cp=cp, split=split) for split in ("balanced", "contiguous")}
    return {
        "hidden": args["hidden"],
        "kv_hidden": config["kv_heads"] * config["head_dim"],
        "query_group": config["heads"] // config["kv_heads"],
        "tokens_per_rank": s // cp,
        "chunks": len(chunk_ranks(cp, "balanced")),
        "chunk_tokens": s // len(chunk_ranks(cp, "balanced")),
        "last_chunk": rank_chunks(cp, "balanced")[0][-1],
        "last_rank": cp - 1,
        "block_bytes": block,
        "ring_forward_blocks": ring["forward"] / block,
        "ring_backward_blocks": ring["backward"] / block,
        "ring_forward_bytes": ring["forward"],
        "ring_backward_bytes": ring["backward"],
        "ring_bytes": ring["both"],
        "ulysses_forward_bytes": ulysses["forward"],
        "ulysses_backward_bytes": ulysses["backward"],
        "ulysses_bytes": ulysses["both"],
        "ulysses_all_to_alls_forward": ULYSSES_ALL_TO_ALLS,
        "ulysses_all_to_alls_backward": ULYSSES_ALL_TO_ALLS,
        "ulysses_max_cp": ulysses_max_cp(config["heads"], config["kv_heads"]),
        "ulysses_heads_per_rank": config["heads"] // cp,
        "ulysses_kv_heads_per_rank": config["kv_heads"] // cp,
        "balanced_work_per_step": max(max(row) for row in work(config, "balanced")),
        "balanced_work_per_rank": balanced[0],
        "balanced_busiest_sum": busiest_sum(config, "balanced"),
        "contiguous_work_first": contiguous[0],
        "contiguous_work_last": contiguous[-1],
        "contiguous_busiest_step": max(max(row) for row in work(config, "contiguous")),
        "contiguous_busiest_sum": busiest_sum(config, "contiguous"),
        "work_imbalance": busiest_sum(config, "contiguous") / busiest_sum(config, "balanced"),
        "balanced_attention_flops": flops["balanced"],
        "contiguous_attention_flops": flops["contiguous"],
        **{key: config[key] for key in (*SETTINGS, "tolerance")},
    }
