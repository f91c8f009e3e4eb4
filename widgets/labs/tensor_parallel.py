"""examples/tensor_parallel.py: Megatron's tensor parallelism (plain and sequence-parallel)
by hand and by torch.distributed.tensor.parallel, on the layers of a small GPT."""

from __future__ import annotations

from typing import Any

from calc.collectives import bus_factor
from calc.memory import ACTIVATION_BYTES
from calc.tensor import (
    ALL_REDUCES_PER_LAYER,
    SP_ALL_GATHERS_PER_LAYER,
    SP_REDUCE_SCATTERS_PER_LAYER,
    replicated_params_per_layer,
    sent_per_gpu_layer_bytes,
    split_params_per_layer,
    weights_per_gpu_layer,
)

NAME = "tensor_parallel"
# world_size is the tensor-parallel size t: every rank of the lab is one member of the group.
CONFIG: dict[str, Any] = {
    "layers": 2, "hidden": 64, "heads": 4, "seq_len": 32, "micro_batch": 2,
    "dropout": 0.1, "dtype_bytes": 4, "tolerance": 1e-5, "world_size": 4,
}
OUTPUTS = {
    "all_reduces_forward": "integer",
    "all_reduces_backward": "integer",
    "collectives_per_layer": "integer",
    "sp_all_gathers_forward": "integer",
    "sp_reduce_scatters_forward": "integer",
    "sp_all_gathers_backward": "integer",
    "sp_reduce_scatters_backward": "integer",
    "sp_collectives_per_layer": "integer",
    "message_bytes": "integer",
    "sent_bytes": "integer",
    "sp_sent_bytes": "integer",
    "all_reduce_sent_bytes": "integer",
    "params_per_rank_layer": "integer",
    "params_per_rank_layer_approx": "integer",
    "replicated_params_layer": "integer",
    "sp_replicated_grad_bytes": "integer",
    "heads_per_rank": "integer",
    "seq_per_rank": "integer",
    **{key: "integer" for key in ("layers", "hidden", "heads", "seq_len", "micro_batch", "dtype_bytes",
                                  "world_size")},
    "dropout": "number",
    "tolerance": "scientific",
}


def compute(config: dict[str, Any]) -> dict[str, float]:
    t, h, s, b = config["world_size"], config["hidden"], config["seq_len"], config["micro_batch"]
    if config["heads"] % t or s % t:
        raise ValueError(f"{t} ranks must divide the {config['heads']} heads and the {s} tokens")
    # calc counts activations in fp16 (ACTIVATION_BYTES = 2); the lab's are fp32.
    scale = config["dtype_bytes"] / ACTIVATION_BYTES
    sent = sent_per_gpu_layer_bytes(hidden=h, seq_len=s, micro_batch=b, tp=t) * scale
    sp_sent = sent_per_gpu_layer_bytes(hidden=h, seq_len=s, micro_batch=b, tp=t, sequence_parallel=True) * scale
    message = s * b * h * config["dtype_bytes"]  # every collective moves one [s, b, h] activation
    split, whole = split_params_per_layer(h), replicated_params_per_layer(h)
    return {
        # Shoeybi et al. 2019 Fig. 4: half of the 4 all-reduces in each pass (g forward, f backward).
        "all_reduces_forward": ALL_REDUCES_PER_LAYER // 2,
        "all_reduces_backward": ALL_REDUCES_PER_LAYER // 2,
        "collectives_per_layer": ALL_REDUCES_PER_LAYER,
        "sp_all_gathers_forward": SP_ALL_GATHERS_PER_LAYER // 2,
        "sp_reduce_scatters_forward": SP_REDUCE_SCATTERS_PER_LAYER // 2,
        "sp_all_gathers_backward": SP_ALL_GATHERS_PER_LAYER // 2,
        "sp_reduce_scatters_backward": SP_REDUCE_SCATTERS_PER_LAYER // 2,
        "sp_collectives_per_layer": SP_ALL_GATHERS_PER_LAYER + SP_REDUCE_SCATTERS_PER_LAYER,
        "message_bytes": message,
        "sent_bytes": sent,
        "sp_sent_bytes": sp_sent,
        "all_reduce_sent_bytes": bus_factor("all_reduce", t) * message,
        # Exactly: the split weights over t plus the LayerNorms and row biases, whole;
        # calc's weights_per_gpu_layer counts the whole layer as split.
        "params_per_rank_layer": weights_per_gpu_layer(split, t) + whole,
        "params_per_rank_layer_approx": weights_per_gpu_layer(split + whole, t),
        "replicated_params_layer": whole,
        # Under sequence parallelism those gradients are partial sums over the sequence
        # slices: one all-reduce of all of them after backward (Megatron's finalize step).
        "sp_replicated_grad_bytes": config["layers"] * whole * config["dtype_bytes"],
        "heads_per_rank": config["heads"] // t,
        "seq_per_rank": s // t,
        **{key: config[key] for key in ("layers", "hidden", "heads", "seq_len", "micro_batch", "dtype_bytes",
                                        "world_size", "dropout", "tolerance")},
    }
