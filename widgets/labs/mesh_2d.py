"""examples/mesh_2d.py: FSDP2 over "dp" and tensor parallelism over "tp" on a 2-D mesh."""

from __future__ import annotations

import math
from typing import Any

from calc.memory import WEIGHT_BYTES
from calc.models import megatron_param_count
from calc.tensor import replicated_params_per_layer, shard_rows, split_params_per_layer, weights_per_gpu_layer
from calc.zero import state_per_gpu

NAME = "mesh_2d"
CONFIG: dict[str, Any] = {
    "layers": 2, "hidden": 64, "heads": 4, "vocab": 127, "seq_len": 32, "global_batch": 8,
    "tp": 2, "steps": 3, "lr": 0.5, "dtype_bytes": 4, "tolerance": 1e-5, "world_size": 4,
}
OUTPUTS = {
    "dp": "integer",
    "parameters": "integer",
    "parameter_bytes": "integer",
    "split_parameters": "integer",
    "replicated_parameters": "integer",
    "bytes_if_all_split": "number",
    "split_bytes_first": "integer",
    "split_bytes_last": "integer",
    "split_bytes_even": "integer",
    "replicated_bytes_first": "integer",
    "replicated_bytes_last": "integer",
    "replicated_bytes_even": "number",
    "storage_bytes": "integer",
    "padding_bytes_last": "integer",
    "embedding_rows_first": "integer",
    "embedding_rows_last": "integer",
    "seqs_per_row": "integer",
    "qkv_rows": "integer",
    "qkv_rows_tp": "integer",
    "qkv_rows_held": "integer",
    "qkv_first_row_strided": "integer",
    "qkv_last_row_strided": "integer",
    "qkv_first_row_plain": "integer",
    "qkv_last_row_plain": "integer",
    **{key: "integer" for key in ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch", "tp",
                                  "steps", "dtype_bytes", "world_size")},
    "lr": "number",
    "tolerance": "scientific",
}


def tensor_shapes(config: dict[str, Any]) -> dict[str, list[tuple[int, int]]]:
    """(rows, columns) of each parameter's tensor-parallel part, the tensor FSDP then cuts
    along its rows: per layer, the column-parallel QKV and fc1 (weight rows and bias split
    over tp) and the row-parallel proj and fc2 weights (columns split); whole on every tp
    rank, the two LayerNorms (weight, bias), the row-parallel biases, the word and position
    embeddings and the final LayerNorm. A vector is one column."""
    h, t = config["hidden"], config["tp"]
    split = [(3 * h // t, h), (3 * h // t, 1), (h, h // t), (4 * h // t, h), (4 * h // t, 1), (h, 4 * h // t)]
    whole = [(h, 1)] * 6
    return {"split": split * config["layers"],
            "replicated": whole * config["layers"] + [(config["vocab"], h), (config["seq_len"], h), (h, 1), (h, 1)]}


def held_bytes(config: dict[str, Any], kind: str, dp: int, dp_rank: int) -> int:
    """Bytes of the `kind` parameters data-parallel row `dp_rank` holds (calc's FSDP rows)."""
    return math.fsum(shard_rows(rows=rows, dp=dp, dp_rank=dp_rank) * cols
               for rows, cols in tensor_shapes(config)[kind]) * config["dtype_bytes"]


def qkv_rows_of_dp0_tp1(config: dict[str, Any]) -> dict[str, int]:
    """Which rows of the QKV weight (3h × h, PyTorch's out × in layout) the rank at
    (dp 0, tp 1) holds (tp 0 when t = 1). ColwiseParallel cuts dim 0 over tp first, then
    FSDP cuts that tp part over dp (right-to-left: the placements on ("dp", "tp") are
    (_StridedShard(0, sf=t), Shard(0))), so the rank holds the first dp chunk of tp 1's
    rows. A plain (Shard(0), Shard(0)) would cut over dp first, then over tp: the second
    tp chunk of dp 0's rows. Chunks as torch.chunk / calc's shard_rows."""
    h, t = config["hidden"], config["tp"]
    dp, j = config["world_size"] // t, min(1, t - 1)
    rows, tp_rows = 3 * h, 3 * h // t
    strided = j * tp_rows  # tp j's rows start here; dp 0 takes the first chunk of them
    held = shard_rows(rows=tp_rows, dp=dp, dp_rank=0)
    dp_rows = shard_rows(rows=rows, dp=dp, dp_rank=0)  # plain: dp 0 first, then tp j of it
    plain = j * shard_rows(rows=dp_rows, dp=t, dp_rank=0)
    return {"qkv_rows": rows, "qkv_rows_tp": tp_rows, "qkv_rows_held": held,
            "qkv_first_row_strided": strided, "qkv_last_row_strided": strided + held - 1,
            "qkv_first_row_plain": plain,
            "qkv_last_row_plain": plain + shard_rows(rows=dp_rows, dp=t, dp_rank=j) - 1}


def compute(config: dict[str, Any]) -> dict[str, float]:
    w, t, h = config["world_size"], config["tp"], config["hidden"]
    if w % t or config["heads"] % t or (4 * h) % t or config["global_batch"] % (w // t):
        raise ValueError(f"{w} ranks: tp = {t} must divide them, the heads and 4h; dp = world / tp the batch")
    dp, layers = w // t, config["layers"]
    shapes = tensor_shapes(config)
    params = megatron_param_count(layers=layers, hidden=h, vocab=config["vocab"],
                                  seq_len=config["seq_len"]) + 2 * h  # + the final LayerNorm
    split = layers * split_params_per_layer(h)
    replicated = params - split
    assert split == t * math.fsum(r * c for r, c in shapes["split"])
    assert replicated == layers * replicated_params_per_layer(h) + math.fsum(r * c for r, c in shapes["replicated"][-4:])
    # calc's ZeRO-3 weights are fp16 (WEIGHT_BYTES = 2); the lab's are fp32.
    per_byte = config["dtype_bytes"] / WEIGHT_BYTES
    storage = math.fsum(shard_rows(rows=r, dp=dp) * c for kind in shapes for r, c in shapes[kind]) * config["dtype_bytes"]
    last = {kind: held_bytes(config, kind, dp, dp - 1) for kind in shapes}
    return {
        "dp": dp,
        "parameters": params,
        "parameter_bytes": params * config["dtype_bytes"],
        # Ψ_split (QKV, proj, fc1, fc2 weights and the column biases) and the rest.
        "split_parameters": split,
        "replicated_parameters": replicated,
        # The 3-D chapter's Ψ/(t·d): what a rank would hold if every parameter were split.
        "bytes_if_all_split": params * config["dtype_bytes"] / w,
        "split_bytes_first": held_bytes(config, "split", dp, 0),
        "split_bytes_last": last["split"],
        # Ψ_split/(dp·tp): tensor parallelism's 1/t, then ZeRO-3's 1/N_d.
        "split_bytes_even": layers * state_per_gpu(params=weights_per_gpu_layer(split_params_per_layer(h), t),
                                                   dp=dp, zero_stage=3).weights * per_byte,
        "replicated_bytes_first": held_bytes(config, "replicated", dp, 0),
        "replicated_bytes_last": last["replicated"],
        "replicated_bytes_even": state_per_gpu(params=replicated, dp=dp, zero_stage=3).weights * per_byte,
        "storage_bytes": storage,
        "padding_bytes_last": storage - last["split"] - last["replicated"],
        # The word embedding's rows on dp row 0 and on the last: where the padding comes from.
        "embedding_rows_first": shard_rows(rows=config["vocab"], dp=dp, dp_rank=0),
        "embedding_rows_last": shard_rows(rows=config["vocab"], dp=dp, dp_rank=dp - 1),
        "seqs_per_row": config["global_batch"] // dp,
        **qkv_rows_of_dp0_tp1(config),
        **{key: config[key] for key in ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch", "tp",
                                        "steps", "dtype_bytes", "world_size", "lr", "tolerance")},
    }
