"""examples/pipeline_parallel.py: GPipe and 1F1B on a small GPT, one process per stage."""

from __future__ import annotations

from typing import Any

from calc.memory import ACTIVATION_BYTES
from calc.pipeline import (
    activation_transfer_bytes,
    in_flight_microbatches,
    layers_per_stage,
    simulate_schedule,
    stage_layers,
    summarize_schedule,
)

NAME = "pipeline_parallel"
CONFIG: dict[str, Any] = {
    "layers": 4, "hidden": 32, "heads": 4, "vocab": 128, "seq_len": 16,
    "global_batch": 16, "microbatches": 8, "world_size": 4, "activation_dtype_bytes": 4,
}
OUTPUTS = {
    "layers_per_stage": "integer",
    "micro_batch_size": "integer",
    "gpipe_in_flight": "count",
    "onef1b_in_flight": "count",
    "onef1b_in_flight_last": "count",
    "onef1b_memory_ratio": "ratio",
    "onef1b_forwards_before_backward": "count",
    "onef1b_warmup": "integer",
    "activation_bytes": "bytes",
    "bytes_sent_per_step": "bytes",
    # The same two in exact bytes, as the lab's report prints them.
    "activation_bytes_exact": "integer",
    "bytes_sent_per_step_exact": "integer",
    # The settings themselves, for the lab page.
    **{key: "integer" for key in CONFIG},
}


def stage_orders(config: dict[str, Any], schedule: str) -> list[str]:
    """Each stage's passes in the order calc's simulator runs them ("F0 F1 ... B7"):
    the events of stage s sorted by start time."""
    p = config["world_size"]
    events = simulate_schedule(pp=p, microbatches=config["microbatches"], schedule=schedule)
    return [" ".join(f"{e.kind}{e.microbatch}" for e in sorted((e for e in events if e.stage == s), key=lambda e: e.start))
            for s in range(p)]


def peaks(config: dict[str, Any], schedule: str) -> tuple[float, ...]:
    """Most micro-batches whose activations each stage holds at once (the simulator's)."""
    events = simulate_schedule(pp=config["world_size"], microbatches=config["microbatches"], schedule=schedule)
    return summarize_schedule(events).peak_in_flight


def blocks(config: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    return stage_layers(config["layers"], config["world_size"])


def compute(config: dict[str, Any]) -> dict[str, float]:
    p, m = config["world_size"], config["microbatches"]
    micro_batch = config["global_batch"] // m
    gpipe = in_flight_microbatches(pp=p, microbatches=m, schedule="gpipe")
    onef1b = in_flight_microbatches(pp=p, microbatches=m, schedule="1f1b")
    first = stage_orders(config, "1f1b")[0].split()
    # calc's activations are fp16 (2 bytes); the lab's are fp32.
    per_microbatch = (activation_transfer_bytes(hidden=config["hidden"], seq_len=config["seq_len"], micro_batch=micro_batch)
                      / ACTIVATION_BYTES * config["activation_dtype_bytes"])
    return {
        "layers_per_stage": layers_per_stage(config["layers"], p),
        "micro_batch_size": micro_batch,
        "gpipe_in_flight": gpipe,
        "onef1b_in_flight": onef1b,
        "onef1b_in_flight_last": peaks(config, "1f1b")[-1],
        "onef1b_memory_ratio": onef1b / gpipe,
        # F0 ... F(p-1) before B0 on stage 0: the p - 1 warm-up forwards and the first
        # forward of the steady state.
        "onef1b_forwards_before_backward": next(i for i, e in enumerate(first) if e.startswith("B")),
        # Megatron's warm-up on stage 0 (p - 1): the forwards before B0 but the steady
        # state's first.
        "onef1b_warmup": next(i for i, e in enumerate(first) if e.startswith("B")) - 1,
        "activation_bytes": per_microbatch,
        "bytes_sent_per_step": m * per_microbatch,
        "activation_bytes_exact": per_microbatch,
        "bytes_sent_per_step_exact": m * per_microbatch,
        **{key: config[key] for key in CONFIG},
    }
