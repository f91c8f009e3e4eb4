"""examples/data_parallel.py: data parallelism three ways on a small GPT."""

from __future__ import annotations

import math
from typing import Any

from calc.collectives import ring_all_reduce_bytes_per_rank
from calc.data_parallel import gradient_bytes
from calc.memory import GRAD_BYTES
from calc.models import megatron_param_count

NAME = "data_parallel"
CONFIG: dict[str, Any] = {
    "layers": 2, "hidden": 64, "heads": 4, "vocab": 128, "seq_len": 32,
    "global_batch": 8, "world_size": 4, "steps": 3, "bucket_kb": 64, "grad_dtype_bytes": 4,
    "tolerance": 1e-5,
}
# Exact counts are integers (the lab compares them exactly); `gradient_kb` is for exercises in KB.
OUTPUTS = {
    "parameters": "integer",
    "parameter_tensors": "integer",
    "gradient_bytes": "integer",
    "gradient_kb": "bytes",
    "ring_sent_bytes": "integer",
    "buckets": "integer",
    "fc_weight_bytes": "integer",
    "seqs_per_rank": "integer",
    **{key: "integer" for key in ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch",
                                  "world_size", "steps", "bucket_kb", "grad_dtype_bytes")},
    "tolerance": "scientific",
}


def tensor_sizes(config: dict[str, Any]) -> list[int]:
    """Elements of each parameter tensor in `model.parameters()` order: the word and
    position embeddings, per block the two LayerNorms, QKV, projection, fc1, fc2 (weight
    and bias each, in the order the block defines them), then the final LayerNorm (the
    head is tied to the word embedding)."""
    h, v, s = config["hidden"], config["vocab"], config["seq_len"]
    block = [h, h, h, h, 3 * h * h, 3 * h, h * h, h, 4 * h * h, 4 * h, 4 * h * h, h]
    return [v * h, s * h] + block * config["layers"] + [h, h]


def bucket_count(sizes: list[int], bucket_bytes: float, dtype_bytes: int) -> int:
    """The lab's bucketing: tensors in backward order (reverse of the forward), a new
    bucket once the current one holds `bucket_bytes` or more."""
    buckets, size = 1, 0
    for n in reversed(sizes):
        if size >= bucket_bytes:
            buckets, size = buckets + 1, 0
        size += n * dtype_bytes
    return buckets


def compute(config: dict[str, Any]) -> dict[str, float]:
    if config["global_batch"] % config["world_size"]:
        raise ValueError(f"the global batch of {config['global_batch']} sequences does not split "
                         f"evenly over {config['world_size']} ranks")
    sizes = tensor_sizes(config)
    # Megatron's count (Narayanan et al. 2021, Eq. 2) leaves out the final LayerNorm.
    params = megatron_param_count(layers=config["layers"], hidden=config["hidden"],
                                  vocab=config["vocab"], seq_len=config["seq_len"]) + 2 * config["hidden"]
    assert params == math.fsum(sizes)  # exact: integers far below 2**53
    # calc's gradient is fp16 (ZeRO Sec. 3.1); the lab's is fp32.
    grad = gradient_bytes(params) / GRAD_BYTES * config["grad_dtype_bytes"]
    return {
        "parameters": params,
        "parameter_tensors": len(sizes),
        "gradient_bytes": grad,
        "gradient_kb": grad,
        "ring_sent_bytes": ring_all_reduce_bytes_per_rank(grad, config["world_size"]),
        "buckets": bucket_count(sizes, config["bucket_kb"] * 1024, config["grad_dtype_bytes"]),
        "fc_weight_bytes": 4 * config["hidden"] ** 2 * config["grad_dtype_bytes"],
        "seqs_per_rank": config["global_batch"] // config["world_size"],
        **{key: config[key] for key in ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch",
                                        "world_size", "steps", "bucket_kb", "grad_dtype_bytes", "tolerance")},
    }
