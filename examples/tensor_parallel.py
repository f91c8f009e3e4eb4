"""Lab: Megatron's tensor parallelism, plain and with sequence parallelism, by hand and by DTensor.

    torchrun --nproc_per_node=4 examples/tensor_parallel.py [--json out.json]

Every rank is one member of a tensor-parallel group of t = 4 (t divides the heads and
the sequence). The transformer layers of data_parallel.py's GPT are split the way
Shoeybi et al. 2019 (Megatron-LM, Sec. 3, Fig. 3) split them: in the MLP the first
matrix by columns (each rank applies GELU to its 4h/t features) and the second by rows
(each rank's product is a partial sum); in attention the fused QKV projection by heads
(column-parallel: each rank owns a/t whole heads) and the output projection by rows.
Two conjugate operators, written as torch.autograd.Function with Megatron's names, are
the only communication:

  f  identity in the forward pass, all-reduce in the backward pass: the block's entry
     (every rank needs the whole input; the input's gradient is a sum over the ranks);
  g  all-reduce in the forward pass, identity in the backward pass: the block's exit
     (the partial sums of the row-parallel matrix are added).

The sequence-parallel variant (Korthikanti et al. 2022, Sec. 4.2.2, Fig. 5) keeps the
residual stream, the LayerNorms and the dropouts on a 1/t slice of the sequence and
replaces f by an all-gather (backward: reduce-scatter) and g by a reduce-scatter
(backward: all-gather). Activations are [s, b, h], Megatron's layout, so a sequence
slice is a contiguous block of rows and the collectives need no copy. On a slice the
gradients of the LayerNorms and of the row-parallel biases are partial sums; as in
Megatron they are all-reduced once after backward.

Checks (printed, and written by rank 0 with --json): the output, the input gradient
and every weight gradient of both variants equal those of the unsharded layers on one
process (at most 1e-5 in fp32: only the order of the sums differs); the parameters a
rank holds of a layer ((12h² + 7h)/t split, 6h whole); the collectives per
layer (plain: 2 all-reduces forward, 2 backward; sequence-parallel: 2 all-gathers and 2
reduce-scatters forward and the same backward) and the bytes each rank sends per layer,
the ring cost of each collective's message (all-reduce 2(t-1)/t, all-gather and
reduce-scatter (t-1)/t of the full s·b·h tensor, as nccl-tests count it: the lab
measures the messages, the ring factor is the model); and torch.distributed.tensor.parallel
(parallelize_module with ColwiseParallel and RowwiseParallel on a 1-D DeviceMesh),
counted under CommDebugMode, makes the same collectives with the same messages and gives
the same output and gradients as the hand-written version. Exits 1 if a check fails.
PyTorch only (CommDebugMode's package imports numpy): gloo on a CPU, NCCL on GPUs.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

# The transformer layers of a small GPT in Megatron's layout (pre-LN, fused QKV, 4h MLP
# with GELU, dropout on both residual branches); the embeddings and the head are left
# out: they are not what tensor parallelism splits here.
LAYERS, HIDDEN, HEADS, SEQ_LEN, MICRO_BATCH = 2, 64, 4, 32, 2
HEAD_DIM = HIDDEN // HEADS
DROPOUT = 0.1
DTYPE_BYTES = 4  # fp32 activations and gradients
INIT_SEED, DATA_SEED, DROPOUT_SEED = 1234, 99, 7
TOLERANCE = 1e-5  # largest |difference| from one process (fp32, summation order)

# PyTorch 2.13 renamed the single-tensor all-gather and reduce-scatter.
all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def dropout(y: torch.Tensor, seed: int, rows: slice = slice(None)) -> torch.Tensor:
    """Residual dropout with the mask one process would draw for the whole [s, b, h]
    tensor, cut to `rows` of the sequence: so a sharded run can be compared with one
    process. (Megatron instead seeds each rank of a sequence-parallel region apart.)"""
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(SEQ_LEN, MICRO_BATCH, HIDDEN, generator=g)[rows] >= DROPOUT
    return y * keep.to(y.device) / (1 - DROPOUT)


def attention(qkv: torch.Tensor) -> torch.Tensor:
    """Causal self-attention of [s, b, heads·3·d]: the features of QKV are laid out head
    by head (Megatron's [s, b, a, 3·d]), so a contiguous block of 3h/t features is the
    q, k and v of a/t whole heads and the attention of a head never leaves its rank."""
    s, b, _ = qkv.shape
    q, k, v = qkv.view(s, b, -1, 3, HEAD_DIM).permute(3, 1, 2, 0, 4)  # 3 × [b, heads, s, d]
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.permute(2, 0, 1, 3).reshape(s, b, -1)


class Block(nn.Module):
    """One unsharded layer: the reference, and what parallelize_module splits."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.seed = DROPOUT_SEED + 2 * index
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.fc1, self.fc2 = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + dropout(self.proj(attention(self.qkv(self.ln1(x)))), self.seed)
        return x + dropout(self.fc2(F.gelu(self.fc1(self.ln2(x)))), self.seed + 1)


def build(device: torch.device) -> nn.Sequential:
    torch.manual_seed(INIT_SEED)
    return nn.Sequential(*(Block(i) for i in range(LAYERS))).to(device)


# --8<-- [start:conjugate_operators]
# Every collective the hand-written layers make is logged here: (pass, kind, message
# bytes). The message of an all-gather is its output, of a reduce-scatter its input:
# the whole s·b·h tensor either way, as nccl-tests size them.
TRAFFIC: list[tuple[str, str, int]] = []


def _log(phase: str, kind: str, t: torch.Tensor) -> None:
    TRAFFIC.append((phase, kind, t.numel() * t.element_size()))


def _all_reduce(x: torch.Tensor, phase: str) -> torch.Tensor:
    x = x.contiguous().clone()  # a new tensor: the one autograd handed over stays as it was
    _log(phase, "all_reduce", x)
    dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return x


def _all_gather(x: torch.Tensor, phase: str) -> torch.Tensor:
    """[s/t, b, h] slices of the ranks, in rank order, -> [s, b, h] on every rank."""
    x = x.contiguous()
    out = x.new_empty((x.shape[0] * dist.get_world_size(), *x.shape[1:]))
    _log(phase, "all_gather", out)
    all_gather_single(out, x)
    return out


def _reduce_scatter(x: torch.Tensor, phase: str) -> torch.Tensor:
    """[s, b, h] partial sums on every rank -> this rank's [s/t, b, h] slice of the sum."""
    x = x.contiguous()
    out = x.new_empty((x.shape[0] // dist.get_world_size(), *x.shape[1:]))
    _log(phase, "reduce_scatter", x)
    reduce_scatter_single(out, x, op=dist.ReduceOp.SUM)
    return out


class CopyToTensorParallel(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce backward (the entry of a block)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return _all_reduce(grad, "backward")


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's g: all-reduce forward, identity backward (the exit of a block)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return _all_reduce(x, "forward")

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return grad


class GatherFromSequenceParallel(torch.autograd.Function):
    """Sequence parallelism's entry (Korthikanti et al.'s g): all-gather the sequence
    forward, reduce-scatter the gradient backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return _all_gather(x, "forward")

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return _reduce_scatter(grad, "backward")


class ScatterToSequenceParallel(torch.autograd.Function):
    """Sequence parallelism's exit (Korthikanti et al.'s ḡ): reduce-scatter forward,
    all-gather the gradient backward."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return _reduce_scatter(x, "forward")

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        return _all_gather(grad, "backward")
# --8<-- [end:conjugate_operators]


# --8<-- [start:parallel_block]
class ParallelBlock(nn.Module):
    """This rank's share of a Block: the QKV features of a/t heads and the matching h/t
    inputs of the output projection; 4h/t features of fc1 and the matching inputs of
    fc2. (Megatron writes Y = XA; nn.Linear stores Aᵀ, so a split of A's columns is a
    split of `weight`'s dim 0, and a split of A's rows one of its dim 1.) LayerNorms and
    the row-parallel biases are whole on every rank: the biases are added once, after
    the partial sums are reduced."""

    def __init__(self, full: Block, rank: int, tp: int, sequence_parallel: bool) -> None:
        super().__init__()
        self.seed, self.sp, self.rank, self.tp = full.seed, sequence_parallel, rank, tp

        def part(t: torch.Tensor, dim: int) -> nn.Parameter:
            return nn.Parameter(t.detach().chunk(tp, dim=dim)[rank].clone())

        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.ln1.load_state_dict(full.ln1.state_dict())
        self.ln2.load_state_dict(full.ln2.state_dict())
        self.qkv_w, self.qkv_b = part(full.qkv.weight, 0), part(full.qkv.bias, 0)  # column-parallel
        self.proj_w, self.proj_b = part(full.proj.weight, 1), nn.Parameter(full.proj.bias.detach().clone())  # row
        self.fc1_w, self.fc1_b = part(full.fc1.weight, 0), part(full.fc1.bias, 0)  # column-parallel
        self.fc2_w, self.fc2_b = part(full.fc2.weight, 1), nn.Parameter(full.fc2.bias.detach().clone())  # row

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.sp:  # x is this rank's [s/t, b, h] slice of the sequence
            enter, leave = GatherFromSequenceParallel.apply, ScatterToSequenceParallel.apply
            share = SEQ_LEN // self.tp
            rows = slice(self.rank * share, (self.rank + 1) * share)
        else:  # x is the whole [s, b, h] on every rank
            enter, leave, rows = CopyToTensorParallel.apply, ReduceFromTensorParallel.apply, slice(None)
        y = attention(F.linear(enter(self.ln1(x)), self.qkv_w, self.qkv_b))
        x = x + dropout(leave(F.linear(y, self.proj_w)) + self.proj_b, self.seed, rows)
        y = F.gelu(F.linear(enter(self.ln2(x)), self.fc1_w, self.fc1_b))
        return x + dropout(leave(F.linear(y, self.fc2_w)) + self.fc2_b, self.seed + 1, rows)
# --8<-- [end:parallel_block]


def block_grads(block: ParallelBlock, full: Block) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(this rank's gradient, the matching part of one process's gradient) per parameter."""
    def part(t: torch.Tensor, dim: int) -> torch.Tensor:
        return t.chunk(block.tp, dim=dim)[block.rank]

    return [
        (block.ln1.weight.grad, full.ln1.weight.grad), (block.ln1.bias.grad, full.ln1.bias.grad),
        (block.ln2.weight.grad, full.ln2.weight.grad), (block.ln2.bias.grad, full.ln2.bias.grad),
        (block.qkv_w.grad, part(full.qkv.weight.grad, 0)), (block.qkv_b.grad, part(full.qkv.bias.grad, 0)),
        (block.proj_w.grad, part(full.proj.weight.grad, 1)), (block.proj_b.grad, full.proj.bias.grad),
        (block.fc1_w.grad, part(full.fc1.weight.grad, 0)), (block.fc1_b.grad, part(full.fc1.bias.grad, 0)),
        (block.fc2_w.grad, part(full.fc2.weight.grad, 1)), (block.fc2_b.grad, full.fc2.bias.grad),
    ]


def replicated_grads(block: ParallelBlock) -> list[torch.Tensor]:
    """Gradients of the parameters every rank holds whole: LayerNorms and row biases."""
    return [block.ln1.weight.grad, block.ln1.bias.grad, block.ln2.weight.grad, block.ln2.bias.grad,
            block.proj_b.grad, block.fc2_b.grad]


def data(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The same [s, b, h] input and upstream gradient (dL/dy) on every rank."""
    g = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(SEQ_LEN, MICRO_BATCH, HIDDEN, generator=g)
    return x.to(device), torch.randn(SEQ_LEN, MICRO_BATCH, HIDDEN, generator=g).to(device)


def run(layers: nn.Module, x: torch.Tensor, dy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward, then backward with dL/dy = dy; returns (y, dL/dx)."""
    x = x.detach().clone().requires_grad_()
    y = layers(x)
    y.backward(dy)
    return y.detach(), x.grad


def train_hand(reference: nn.Sequential, x: torch.Tensor, dy: torch.Tensor, rank: int, tp: int,
               sequence_parallel: bool) -> dict:
    layers = nn.Sequential(*(ParallelBlock(b, rank, tp, sequence_parallel) for b in reference))
    if sequence_parallel:
        x, dy = x.chunk(tp)[rank], dy.chunk(tp)[rank]  # this rank's slice of the sequence
    TRAFFIC.clear()
    y, dx = run(layers, x, dy)
    traffic, synced = list(TRAFFIC), 0
    if sequence_parallel:
        # On a sequence slice, the LayerNorm and row-bias gradients are partial sums;
        # Megatron all-reduces them once after backward, before the optimizer step.
        flat = torch.cat([g.reshape(-1) for block in layers for g in replicated_grads(block)])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        synced = flat.numel() * flat.element_size()
        offset = 0
        for block in layers:
            for g in replicated_grads(block):
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
    return {"layers": layers, "y": y, "dx": dx, "traffic": traffic, "synced": synced}


# --8<-- [start:dtensor]
class CountingCommMode(CommDebugMode):
    """CommDebugMode, also logging each collective's kind and message bytes like TRAFFIC."""

    def __init__(self, phase: str, log: list) -> None:
        super().__init__()
        self.phase, self.log = phase, log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        before = self.get_total_counts()
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.get_total_counts() > before:  # CommDebugMode counted a collective
            name, t = func.__name__.split(".")[0], args[0]
            size = t.numel() * t.element_size() * (args[1] if name == "all_gather_into_tensor" else 1)
            self.log.append((self.phase, {"all_gather_into_tensor": "all_gather",
                                          "reduce_scatter_tensor": "reduce_scatter"}.get(name, name), size))
        return out


def train_dtensor(device: torch.device, x: torch.Tensor, dy: torch.Tensor, tp: int) -> dict:
    """The same split by torch.distributed.tensor.parallel: QKV and fc1 column-wise,
    the output projection and fc2 row-wise, on a 1-D mesh of all ranks."""
    layers = build(device)
    mesh = init_device_mesh(device.type, (tp,), mesh_dim_names=("tp",))
    for block in layers:
        parallelize_module(block, mesh, {"qkv": ColwiseParallel(), "proj": RowwiseParallel(),
                                         "fc1": ColwiseParallel(), "fc2": RowwiseParallel()})
    x = x.detach().clone().requires_grad_()
    traffic: list[tuple[str, str, int]] = []
    with CountingCommMode("forward", traffic) as forward:
        y = layers(x)
    with CountingCommMode("backward", traffic) as backward:
        y.backward(dy)
    return {"layers": layers, "y": y.detach(), "dx": x.grad, "traffic": traffic,
            "counts": {"forward": forward.get_comm_counts(), "backward": backward.get_comm_counts()}}
# --8<-- [end:dtensor]


def per_layer(traffic: list, phase: str, kind: str) -> float:
    return sum(1 for p, k, _ in traffic if p == phase and k == kind) / LAYERS


def ring_bytes_per_layer(traffic: list, tp: int) -> float:
    """Bytes each rank sends per layer if every collective runs as a ring: all-reduce
    2(t-1)/t of its message, all-gather and reduce-scatter (t-1)/t (nccl-tests)."""
    factor = {"all_reduce": 2 * (tp - 1) / tp, "all_gather": (tp - 1) / tp, "reduce_scatter": (tp - 1) / tp}
    return sum(factor[k] * size for _, k, size in traffic) / LAYERS


def max_difference(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    return max((a - b).abs().max().item() for a, b in pairs)


def local(t: torch.Tensor) -> torch.Tensor:
    """This rank's part of a DTensor (a plain tensor is its own)."""
    return t.to_local() if isinstance(t, DTensor) else t


def hand_grads(layers: nn.Sequential, reference: nn.Sequential) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [pair for block, full in zip(layers, reference) for pair in block_grads(block, full)]


def main() -> None:
    parser = argparse.ArgumentParser(description="Megatron tensor parallelism by hand and by DTensor.")
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, tp = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if HEADS % tp or SEQ_LEN % tp:
        raise SystemExit(f"{tp} ranks must divide the {HEADS} heads and the {SEQ_LEN} tokens")

    x, dy = data(device)
    reference = build(device)  # one process: every layer whole, no communication
    y_ref, dx_ref = run(reference, x, dy)

    plain = train_hand(reference, x, dy, rank, tp, sequence_parallel=False)
    sp = train_hand(reference, x, dy, rank, tp, sequence_parallel=True)
    dt = train_dtensor(device, x, dy, tp)
    mine = slice(rank * SEQ_LEN // tp, (rank + 1) * SEQ_LEN // tp)  # this rank's sequence slice
    # DTensor's gradients are DTensors: full_tensor() gathers the parts (not counted).
    dt_grads = [(p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad, q.grad)
                for p, q in zip(dt["layers"].parameters(), reference.parameters())]
    counts = {phase: {str(op).split(".")[-1]: n for op, n in c.items()} for phase, c in dt["counts"].items()}
    # The book's expectations: Shoeybi et al. Fig. 4 (2 all-reduces each way) and
    # Korthikanti et al. Sec. 4.2.2 (each becomes an all-gather and a reduce-scatter),
    # each collective moving one [s, b, h] activation; a ring sends 2(t-1)/t of an
    # all-reduce's message and (t-1)/t of an all-gather's or a reduce-scatter's.
    message = SEQ_LEN * MICRO_BATCH * HIDDEN * DTYPE_BYTES
    ring_tp = 4 * 2 * (tp - 1) / tp * message
    ring_sp = (4 + 4) * (tp - 1) / tp * message
    # What a rank holds of one layer: the split weights over t, LayerNorms and row biases whole.
    held = (12 * HIDDEN**2 + 7 * HIDDEN) // tp + 6 * HIDDEN

    checks = [
        ("tp: max |output - one process|", max_difference([(plain["y"], y_ref)]), TOLERANCE),
        ("tp: max |input gradient - one process|", max_difference([(plain["dx"], dx_ref)]), TOLERANCE),
        ("tp: max |weight gradient - one process|", max_difference(hand_grads(plain["layers"], reference)), TOLERANCE),
        ("sp: max |output - one process|", max_difference([(sp["y"], y_ref[mine])]), TOLERANCE),
        ("sp: max |input gradient - one process|", max_difference([(sp["dx"], dx_ref[mine])]), TOLERANCE),
        ("sp: max |weight gradient - one process|", max_difference(hand_grads(sp["layers"], reference)), TOLERANCE),
        ("dtensor: max |output - hand-written tp|", max_difference([(dt["y"], plain["y"])]), TOLERANCE),
        ("dtensor: max |input gradient - hand-written tp|", max_difference([(dt["dx"], plain["dx"])]), TOLERANCE),
        ("dtensor: max |weight gradient - one process|", max_difference(dt_grads), TOLERANCE),
        ("tp: parameters per rank per layer", sum(p.numel() for p in plain["layers"][0].parameters()), held),
        ("dtensor: parameters per rank per layer", sum(local(p).numel() for p in dt["layers"][0].parameters()), held),
        ("tp: all-reduces per layer, forward (g)", per_layer(plain["traffic"], "forward", "all_reduce"), 2),
        ("tp: all-reduces per layer, backward (f)", per_layer(plain["traffic"], "backward", "all_reduce"), 2),
        ("tp: collectives per layer", len(plain["traffic"]) / LAYERS, 4),
        ("sp: all-gathers per layer, forward", per_layer(sp["traffic"], "forward", "all_gather"), 2),
        ("sp: reduce-scatters per layer, forward", per_layer(sp["traffic"], "forward", "reduce_scatter"), 2),
        ("sp: all-gathers per layer, backward", per_layer(sp["traffic"], "backward", "all_gather"), 2),
        ("sp: reduce-scatters per layer, backward", per_layer(sp["traffic"], "backward", "reduce_scatter"), 2),
        ("sp: collectives per layer", len(sp["traffic"]) / LAYERS, 8),
        ("sp: bytes of LayerNorm and row-bias gradients all-reduced after backward", sp["synced"],
         LAYERS * 6 * HIDDEN * DTYPE_BYTES),
        ("dtensor: all-reduces per layer, forward", counts["forward"].get("all_reduce", 0) / LAYERS, 2),
        ("dtensor: all-reduces per layer, backward", counts["backward"].get("all_reduce", 0) / LAYERS, 2),
        ("dtensor: collectives per layer", sum(n for c in counts.values() for n in c.values()) / LAYERS, 4),
        ("tp: bytes sent per rank per layer (ring)", ring_bytes_per_layer(plain["traffic"], tp), ring_tp),
        ("sp: bytes sent per rank per layer (ring)", ring_bytes_per_layer(sp["traffic"], tp), ring_sp),
        ("dtensor: bytes sent per rank per layer (ring)", ring_bytes_per_layer(dt["traffic"], tp), ring_tp),
    ]
    results = [{"name": name, "measured": measured, "expected": expected,
                "ok": bool(measured <= expected if "max |" in name else measured == expected)}
               for name, measured, expected in checks]

    if rank == 0:
        print(f"tensor parallelism on {tp} ranks ({dist.get_backend()}): {LAYERS} layers, hidden {HIDDEN}, "
              f"{HEADS} heads ({HEADS // tp} per rank), [s, b, h] = [{SEQ_LEN}, {MICRO_BATCH}, {HIDDEN}], "
              f"dropout {DROPOUT}, one activation {message:,} bytes; CommDebugMode counted "
              f"forward {counts['forward']}, backward {counts['backward']}")
        for r in results:
            relation = "<= " if "max |" in r["name"] else ""
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {r['measured']:g} (expected {relation}{r['expected']:g})")
        if args.json:
            report = {"lab": "tensor_parallel", "world_size": tp, "backend": dist.get_backend(),
                      "config": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "seq_len": SEQ_LEN,
                                 "micro_batch": MICRO_BATCH, "dropout": DROPOUT, "dtype_bytes": DTYPE_BYTES,
                                 "tolerance": TOLERANCE},
                      "checks": results}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
