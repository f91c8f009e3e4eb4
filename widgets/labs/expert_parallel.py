"""examples/expert_parallel.py: a mixture-of-experts layer with its experts split over the
ranks (expert parallelism), dispatch and combine by all-to-all, checked against one process.

The figures here follow from the lab's settings alone: the balanced routing's bytes, the
capacity, what a rank holds. What the router's own routing sends depends on the experts it
picks; the lab's test recomputes those figures from the routing the report carries, with
calc.experts.dispatch_counts, routed_sent_per_gpu_bytes, expert_load and dropped_tokens.
"""

from __future__ import annotations

from typing import Any

from calc.experts import (
    ALL_TO_ALLS_PER_PASS,
    active_moe_layer_params,
    all_to_all_sent_per_gpu_layer_bytes,
    capacity,
    expert_params,
    experts_per_gpu,
    moe_layer_params,
)
from calc.memory import ACTIVATION_BYTES

NAME = "expert_parallel"
# world_size is the expert-parallel size ep: every rank of the lab holds E/ep experts.
CONFIG: dict[str, Any] = {
    "hidden": 32, "moe_ffn": 64, "experts": 8, "top_k": 2, "tokens": 32,
    "capacity_factor": 1.0, "dtype_bytes": 4, "tolerance": 1e-5, "world_size": 4,
}
OUTPUTS = {
    "experts_per_rank": "integer",
    "expert_params": "integer",
    "expert_params_per_rank": "integer",
    "router_params": "integer",
    "layer_params": "integer",
    "active_params": "integer",
    "tokens_total": "integer",
    "capacity": "integer",
    "mean_load": "number",
    "row_bytes": "integer",
    "balanced_copies_per_pair": "integer",
    "balanced_copies_off_rank": "integer",
    "balanced_all_to_all_bytes": "integer",
    "balanced_forward_bytes": "integer",
    "balanced_backward_bytes": "integer",
    "balanced_layer_bytes": "integer",
    "all_to_alls_per_layer": "integer",
    "router_grad_bytes": "integer",
    **{key: "integer" for key in ("hidden", "moe_ffn", "experts", "top_k", "tokens", "dtype_bytes", "world_size")},
    "capacity_factor": "number",
    "tolerance": "scientific",
}


def _whole(value: float, what: str) -> int:
    if value != int(value):
        raise ValueError(f"{what} is not a whole number of bytes: {value}")
    return int(value)


def compute(config: dict[str, Any]) -> dict[str, float]:
    ep, h, f = config["world_size"], config["hidden"], config["moe_ffn"]
    e, k, t = config["experts"], config["top_k"], config["tokens"]
    if t * k % e:
        raise ValueError(f"the balanced routing needs {e} experts to divide {t} tokens × top-{k}")
    per_rank = experts_per_gpu(e, ep)  # raises unless ep divides E
    one_expert = expert_params(hidden=h, moe_ffn=f)
    # calc counts 16-bit elements (ACTIVATION_BYTES = 2); the lab's are fp32.
    scale = config["dtype_bytes"] / ACTIVATION_BYTES

    def sent(direction: str) -> int:
        return _whole(all_to_all_sent_per_gpu_layer_bytes(tokens=t, hidden=h, experts_per_token=k, ep=ep,
                                                          direction=direction) * scale, f"{direction} bytes")

    forward = sent("forward")
    return {
        "experts_per_rank": per_rank,
        "expert_params": one_expert,
        "expert_params_per_rank": per_rank * one_expert,
        # The router is h·E: the layer's parameters less its experts'.
        "router_params": moe_layer_params(hidden=h, moe_ffn=f, experts=e) - e * one_expert,
        "layer_params": moe_layer_params(hidden=h, moe_ffn=f, experts=e),
        "active_params": active_moe_layer_params(hidden=h, moe_ffn=f, experts=e, experts_per_token=k),
        "tokens_total": t * ep,
        # Switch Transformer Sec. 2.2 over the tokens of all ranks (one expert sees them all).
        "capacity": capacity(tokens=t * ep, experts=e, experts_per_token=k, capacity_factor=config["capacity_factor"]),
        "mean_load": k * t * ep / e,
        "row_bytes": h * config["dtype_bytes"],
        # Balanced: each rank's T·k copies split evenly over the ep ranks; one share stays.
        "balanced_copies_per_pair": t * k // ep,
        "balanced_copies_off_rank": t * k * (ep - 1) // ep,
        "balanced_all_to_all_bytes": _whole(forward / ALL_TO_ALLS_PER_PASS, "one all-to-all"),
        "balanced_forward_bytes": forward,
        "balanced_backward_bytes": sent("backward"),
        "balanced_layer_bytes": sent("both"),
        "all_to_alls_per_layer": 2 * ALL_TO_ALLS_PER_PASS,
        # The replicated router's gradient, summed over the ranks once after backward.
        "router_grad_bytes": (moe_layer_params(hidden=h, moe_ffn=f, experts=e) - e * one_expert) * config["dtype_bytes"],
        **{key: config[key] for key in ("hidden", "moe_ffn", "experts", "top_k", "tokens", "dtype_bytes",
                                        "world_size", "capacity_factor", "tolerance")},
    }
