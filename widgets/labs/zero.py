"""examples/zero.py: ZeRO stages 1-3 by hand, ZeroRedundancyOptimizer and FSDP2 on a small GPT."""

from __future__ import annotations

import math
from typing import Any

from calc.memory import GRAD_BYTES, WEIGHT_BYTES
from calc.models import megatron_param_count
from calc.zero import comm_over_dp, sent_per_gpu_elements, state_per_gpu, state_per_gpu_bytes

NAME = "zero"
CONFIG: dict[str, Any] = {
    "layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 32, "global_batch": 8,
    "steps": 3, "lr": 1e-3, "world_size": 4,
    # the lab's recipe: bf16 weights and gradients, fp32 masters + Adam moments (K = 12)
    "weight_bytes": 2, "grad_bytes": 2, "optimizer_bytes": 12,
    "rel_tolerance": 0.05, "rel_tolerance_fp32": 1e-4, "ddp_bucket_bytes": 26_214_400,
}
STAGES = (1, 2, 3)
FP32 = 4  # bytes of an fp32 element: ZeroRedundancyOptimizer's model and FSDP2's shards
# The lab page sets these figures beside the lab's report, which prints exact integers:
# bytes and element counts are therefore `integer` (220.672, not 220,7 kB; 49.984, not
# 5 万), as in the data-parallel lab.
OUTPUTS = {
    **{key: "integer" for key in ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch", "steps",
                                  "world_size", "weight_bytes", "grad_bytes", "optimizer_bytes")},
    "lr": "scientific",
    "rel_tolerance": "fraction",
    "rel_tolerance_fp32": "scientific",
    "seqs_per_rank": "integer",
    "parameters": "integer",
    "parameter_tensors": "integer",
    "largest_tensor": "integer",
    "key_bias_elements": "integer",
    "params_per_rank": "number",
    "root_params": "integer",
    "block_params": "integer",
    "units": "integer",
    "stage0_state_bytes": "integer",
    **{f"stage{s}_{kind}_bytes": "integer" for s in STAGES for kind in ("weight", "grad", "optimizer", "state")},
    **{f"stage{s}_collectives": "integer" for s in STAGES},
    "dp_sent_elements": "integer",
    **{f"stage{s}_sent_elements": "integer" for s in STAGES},
    "stage3_comm_ratio": "ratio",
    "stage3_peak_unsharded": "integer",
    "zro_shard_largest": "integer",
    "zro_shard_smallest": "integer",
    "zro_moment_bytes_largest": "integer",
    "zro_imbalance": "ratio",
    "zro_all_reduces": "integer",
    "zro_all_reduced_elements": "integer",
    "zro_broadcasts": "integer",
    "zro_broadcast_elements": "integer",
    "fsdp_shard_elements": "integer",
    "fsdp_padding_elements": "integer",
    "fsdp_weight_bytes": "integer",
    "fsdp_grad_bytes": "integer",
    "fsdp_optimizer_bytes": "integer",
    "fsdp_state_bytes": "integer",
    "fsdp_all_gathers": "integer",
    "fsdp_all_gathered_elements": "integer",
    "fsdp_reduce_scatters": "integer",
    "fsdp_reduce_scattered_elements": "integer",
    "fsdp_collectives": "integer",
}


def shapes(config: dict[str, Any]) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """Shapes of the parameter tensors: (root, one block). The root holds the word and
    position embeddings (the output head is tied to the first) and the final LayerNorm;
    a block its two LayerNorms, QKV, projection, fc1 and fc2 (nn.Linear: (out, in))."""
    h, v, s = config["hidden"], config["vocab"], config["seq_len"]
    root = [(v, h), (s, h), (h,), (h,)]
    block = [(h,), (h,), (h,), (h,), (3 * h, h), (3 * h,), (h, h), (h,), (4 * h, h), (4 * h,), (h, 4 * h), (h,)]
    return root, block


def padded(n: int, world: int) -> int:
    """The lab's unit: its flat buffer padded to a multiple of N, so the N chunks are equal."""
    return -(-n // world) * world


def dim0_padded(group: list[tuple[int, ...]], world: int) -> int:
    """FSDP2 shards each tensor on dim 0 and pads dim 0 to a multiple of N: the elements
    of the group's all-gather (N times what each rank stores)."""
    return math.fsum(-(-s[0] // world) * world * math.prod(s[1:]) for s in group)


def zero_redundancy_partition(config: dict[str, Any]) -> list[int]:
    """Parameters whose optimizer state each rank holds under ZeroRedundancyOptimizer:
    whole tensors, largest first, each to the rank with the fewest so far (the first such
    rank on a tie), as its `_partition_parameters` does (PyTorch 2.13)."""
    root, block = shapes(config)
    sizes = sorted((math.prod(s) for s in root + block * config["layers"]), reverse=True)
    ranks = [0] * config["world_size"]
    for n in sizes:
        ranks[ranks.index(min(ranks))] += n
    return ranks


def compute(config: dict[str, Any]) -> dict[str, float]:
    n, layers = config["world_size"], config["layers"]
    if config["global_batch"] % n:
        raise ValueError(f"{n} ranks must divide the global batch of {config['global_batch']}")
    root, block = shapes(config)
    root_params, block_params = math.fsum(math.prod(s) for s in root), math.fsum(math.prod(s) for s in block)
    # Megatron's count (Narayanan et al. 2021, Eq. 2) leaves out the final LayerNorm.
    psi = megatron_param_count(layers=layers, hidden=config["hidden"], vocab=config["vocab"],
                               seq_len=config["seq_len"]) + 2 * config["hidden"]
    assert psi == root_params + layers * block_params
    units = layers + 1
    psi_padded = padded(root_params, n) + layers * padded(block_params, n)  # = psi when each unit divides by N
    out: dict[str, float] = {key: config[key] for key in OUTPUTS if key in config}  # the settings
    sizes = [math.prod(s) for s in root + block * layers]
    out |= {"seqs_per_rank": config["global_batch"] // n,
            "parameters": psi, "parameter_tensors": len(sizes), "largest_tensor": max(sizes),
            "key_bias_elements": layers * config["hidden"],  # the middle third of each qkv.bias
            "params_per_rank": psi / n, "root_params": root_params, "block_params": block_params, "units": units,
            "stage0_state_bytes": state_per_gpu_bytes(params=psi, dp=n, zero_stage=0,
                                                      optimizer_bytes=config["optimizer_bytes"]),
            "dp_sent_elements": sent_per_gpu_elements(params=psi, dp=n, zero_stage=0)}
    for s in STAGES:
        # ZeRO Sec. 5 / Fig. 1 with calc's fp16 weights and gradients (2 bytes), scaled
        # to the lab's dtypes (bf16: the same 2 bytes).
        state = state_per_gpu(params=psi_padded, dp=n, zero_stage=s, optimizer_bytes=config["optimizer_bytes"])
        weights = state.weights / WEIGHT_BYTES * config["weight_bytes"]
        grads = state.grads / GRAD_BYTES * config["grad_bytes"]
        out |= {f"stage{s}_weight_bytes": weights, f"stage{s}_grad_bytes": grads,
                f"stage{s}_optimizer_bytes": state.optimizer,
                f"stage{s}_state_bytes": weights + grads + state.optimizer,
                # per unit a reduce-scatter and an all-gather; stage 3 a second all-gather
                # (before the forward and before the backward)
                f"stage{s}_collectives": (3 if s == 3 else 2) * units,
                f"stage{s}_sent_elements": sent_per_gpu_elements(params=psi_padded, dp=n, zero_stage=s)}
    out["stage3_comm_ratio"] = comm_over_dp(3)
    out["stage3_peak_unsharded"] = padded(root_params, n) + padded(block_params, n)  # the root + one block

    shares = zero_redundancy_partition(config)
    out |= {"zro_shard_largest": max(shares), "zro_shard_smallest": min(shares), "zro_imbalance": max(shares) / (psi / n),
            "zro_moment_bytes_largest": 2 * FP32 * max(shares),  # Adam's two fp32 moments per owned parameter
            # DDP all-reduces every fp32 gradient in buckets of ddp_bucket_bytes; the
            # optimizer broadcasts every parameter from its owner, one tensor at a time.
            "zro_all_reduces": math.ceil(FP32 * psi / config["ddp_bucket_bytes"]), "zro_all_reduced_elements": psi,
            "zro_broadcasts": len(root) + layers * len(block), "zro_broadcast_elements": psi}

    everything = root + block * layers
    shard = dim0_padded(everything, n) // n
    # FSDP2 with bf16 compute keeps fp32 shards (the masters: weights and optimizer's
    # master in one), fp32 sharded gradients and fp32 Adam moments: 4 + 4 + 8 bytes, the
    # same 16 as ZeRO's 2 + 2 + 12. Its weights and gradients hold the dim-0 padding.
    weights = state_per_gpu(params=shard * n, dp=n, zero_stage=3).weights / WEIGHT_BYTES * FP32
    grads = state_per_gpu(params=shard * n, dp=n, zero_stage=3).grads / GRAD_BYTES * FP32
    moments = state_per_gpu(params=psi, dp=n, zero_stage=3, optimizer_bytes=2 * FP32).optimizer
    out |= {"fsdp_shard_elements": shard, "fsdp_padding_elements": shard - psi / n,
            "fsdp_weight_bytes": weights, "fsdp_grad_bytes": grads, "fsdp_optimizer_bytes": moments,
            "fsdp_state_bytes": weights + grads + moments,
            # The root is not resharded after the forward (FSDP2's default for the root):
            # gathered once, each block twice; one reduce-scatter per group.
            "fsdp_all_gathers": 2 * layers + 1,
            "fsdp_all_gathered_elements": 2 * layers * dim0_padded(block, n) + dim0_padded(root, n),
            "fsdp_reduce_scatters": units, "fsdp_reduce_scattered_elements": dim0_padded(everything, n),
            "fsdp_collectives": 3 * layers + 2}
    # Nothing needs padding at the lab's sizes: FSDP2 then holds exactly ZeRO-3's 16Ψ/N.
    assert shard * n != psi or out["fsdp_state_bytes"] == state_per_gpu_bytes(params=psi, dp=n, zero_stage=3)
    return out
