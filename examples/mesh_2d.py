"""Lab: a 2-D device mesh, FSDP over one axis and tensor parallelism over the other.

    torchrun --nproc_per_node=4 examples/mesh_2d.py [--steps 3] [--json out.json]

The ranks form a DeviceMesh of dp × tp = (world / 2) × 2 named ("dp", "tp"); rank
r sits at (r // tp, r % tp). As torchtitan's parallelize functions do, tensor
parallelism is applied first, on the "tp" sub-mesh (parallelize_module: QKV and fc1
ColwiseParallel, the output projection and fc2 RowwiseParallel, Megatron's split), and
then FSDP2, fully_shard on the "dp" sub-mesh, once per transformer block and once for
the root (embeddings and final LayerNorm). The two ranks of a "tp" row see the same
sequences; the dp rows see different slices of the global batch.

Checks (printed, and written by rank 0 with --json): the loss of every step and the
parameters after --steps steps of SGD equal those of one process trained on the whole
global batch (at most 1e-5 in fp32); and what each rank holds. A weight that tensor
parallelism splits is split again by FSDP, so a rank holds 1/(dp·tp) of it; the
LayerNorms, the biases of the row-parallel matrices and the embeddings are whole on
every tp rank, so FSDP alone splits them, 1/dp each. FSDP splits dimension 0 into
chunks of ceil(rows/dp): with a vocabulary of 127 rows the last dp rank holds one row
fewer of the word embedding, but its storage is padded to the full chunk. Each
rank's local tensors (DTensor.to_local()) and the storage behind them are compared
with the exact expectation. Exits 1 if a check fails. PyTorch only: gloo on a CPU,
NCCL on GPUs.
"""

from __future__ import annotations

import argparse
import json
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

# A small GPT in Megatron's layout, as in data_parallel.py, with two changes: the QKV
# features are laid out head by head (so a column split hands each rank whole heads),
# and the vocabulary has an odd size, as real ones do (GPT-2's 50,257), so that FSDP's
# padding shows.
LAYERS, HIDDEN, HEADS, VOCAB, SEQ_LEN = 2, 64, 4, 127, 32
GLOBAL_BATCH = 8  # sequences per step, split over the dp rows
TP = 2  # tensor-parallel size; dp = world size / TP
DTYPE_BYTES = 4  # fp32 parameters
INIT_SEED, DATA_SEED = 1234, 99
TOLERANCE = 1e-5  # largest |difference| from one process (fp32, summation order)
STEPS, LR = 3, 0.5  # SGD steps, each on the whole global batch, and their learning rate


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.fc1, self.fc2 = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        # -1 heads: all of them on one process, this rank's a/tp under tensor parallelism.
        q, k, v = self.qkv(self.ln1(x)).view(b, s, -1, 3, HIDDEN // HEADS).permute(3, 0, 2, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, -1))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQ_LEN, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T  # tied output head


def build(device: torch.device) -> GPT:
    torch.manual_seed(INIT_SEED)
    return GPT().to(device)


def batches(steps: int, device: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The same global batches on every rank: (inputs, next-token targets)."""
    g = torch.Generator().manual_seed(DATA_SEED)
    out = []
    for _ in range(steps):
        seq = torch.randint(0, VOCAB, (GLOBAL_BATCH, SEQ_LEN + 1), generator=g)
        out.append((seq[:, :-1].to(device), seq[:, 1:].to(device)))
    return out


def loss_of(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))


def one_process(data: list, device: torch.device) -> tuple[GPT, list[float]]:
    """The reference: one model trained on the whole global batch, no communication."""
    model = build(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = loss_of(model, x, y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


# --8<-- [start:parallelize]
def parallelize(model: GPT, mesh) -> GPT:
    """Tensor parallelism on mesh["tp"] first, then FSDP on mesh["dp"] (torchtitan's
    order): FSDP then shards the local part of each TP-sharded weight."""
    for block in model.blocks:
        parallelize_module(block, mesh["tp"], {
            "qkv": ColwiseParallel(), "proj": RowwiseParallel(),  # heads split over tp
            "fc1": ColwiseParallel(), "fc2": RowwiseParallel(),  # 4h split over tp
        })
    for block in model.blocks:
        fully_shard(block, mesh=mesh["dp"])  # one all-gather / reduce-scatter per block
    fully_shard(model, mesh=mesh["dp"])  # the root: embeddings and final LayerNorm
    return model
# --8<-- [end:parallelize]


def train_2d(data: list, mesh, device: torch.device) -> tuple[GPT, list[float]]:
    model = parallelize(build(device), mesh)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    dp, row = mesh["dp"].size(), mesh["dp"].get_local_rank()
    share = GLOBAL_BATCH // dp
    losses = []
    for x, y in data:
        opt.zero_grad()
        # Both ranks of a tp row take the same slice; FSDP averages the gradients over dp.
        loss = loss_of(model, x[row * share:(row + 1) * share], y[row * share:(row + 1) * share])
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM, group=mesh["dp"].get_group())
        losses.append(mean.item() / dp)  # the loss of the whole global batch
    return model, losses


# --8<-- [start:bytes_held]
def bytes_held(model: GPT) -> dict[str, int]:
    """What this rank holds: the bytes of the local tensors of the DTensor parameters,
    split by whether tensor parallelism shards them (a tp placement that is a Shard),
    and the bytes of the storage behind them, which FSDP pads to whole chunks."""
    held = {"split": 0, "replicated": 0, "storage": 0}
    for p in model.parameters():
        assert isinstance(p, DTensor)
        local = p.to_local()
        split = p.device_mesh.ndim == 2 and p.placements[1].is_shard()  # (dp, tp) placements
        held["split" if split else "replicated"] += local.numel() * local.element_size()
        held["storage"] += local.untyped_storage().nbytes()
    return held
# --8<-- [end:bytes_held]


def expected_bytes(dp: int, tp: int, row: int) -> dict[str, int]:
    """The exact expectation for a rank in dp row `row`. Each parameter's shape after
    the tp split, then FSDP's dim-0 chunks of ceil(rows/dp): row i holds
    min(chunk, rows - i·chunk) rows, and every row's storage holds a whole chunk."""
    h = HIDDEN
    split = [(3 * h // tp, h), (3 * h // tp, 1), (h, h // tp), (4 * h // tp, h), (4 * h // tp, 1), (h, 4 * h // tp)]
    replicated = [(h, 1)] * 4 + [(h, 1), (h, 1)]  # two LayerNorms (weight, bias), proj and fc2 bias
    shapes = {"split": split * LAYERS, "replicated": replicated * LAYERS + [(VOCAB, h), (SEQ_LEN, h), (h, 1), (h, 1)]}
    out = {"storage": 0}
    for kind, tensors in shapes.items():
        out[kind] = 0
        for rows, cols in tensors:
            chunk = math.ceil(rows / dp)
            out[kind] += max(0, min(chunk, rows - row * chunk)) * cols * DTYPE_BYTES
            out["storage"] += chunk * cols * DTYPE_BYTES
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description="FSDP over dp and tensor parallelism over tp on a 2-D mesh.")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if world % TP or HEADS % TP or GLOBAL_BATCH % (world // TP):
        raise SystemExit(f"{world} ranks: need a multiple of tp = {TP}, and dp = world / tp dividing the batch")
    dp = world // TP
    # --8<-- [start:mesh]
    mesh = init_device_mesh(device.type, (dp, TP), mesh_dim_names=("dp", "tp"))
    row, col = mesh["dp"].get_local_rank(), mesh["tp"].get_local_rank()  # rank = row·tp + col
    # --8<-- [end:mesh]

    data = batches(args.steps, device)
    reference, ref_losses = one_process(data, device)
    model, losses = train_2d(data, mesh, device)
    held = bytes_held(model)
    # One process's weights cut the same way (src_data_rank=None: each rank slices its
    # own copy, no communication), compared with this rank's shard of every parameter.
    drift = max((p.to_local() - distribute_tensor(q.detach(), p.device_mesh, p.placements, src_data_rank=None)
                 .to_local()).abs().max().item() for p, q in zip(model.parameters(), reference.parameters()))
    drift = torch.tensor(drift, device=device)
    dist.all_reduce(drift, op=dist.ReduceOp.MAX)  # the largest over all ranks
    drift = drift.item()
    per_rank = [None] * world
    dist.all_gather_object(per_rank, {"row": row, "col": col, "held": held})

    checks = [
        ("loss, every step: max |2-D - one process|", max(abs(a - b) for a, b in zip(losses, ref_losses)), TOLERANCE),
        ("max |parameter - one process| after the steps", drift, TOLERANCE),
    ]
    for r, got in enumerate(per_rank):
        want = expected_bytes(dp, TP, got["row"])
        where = f"rank {r} (dp {got['row']}, tp {got['col']})"
        checks += [
            (f"{where}: bytes of TP-split parameters", got["held"]["split"], want["split"]),
            (f"{where}: bytes of TP-replicated parameters", got["held"]["replicated"], want["replicated"]),
            (f"{where}: bytes of storage, FSDP padding included", got["held"]["storage"], want["storage"]),
        ]
    results = [{"name": name, "measured": measured, "expected": expected,
                "ok": bool(measured <= expected if "max |" in name else measured == expected)}
               for name, measured, expected in checks]

    if rank == 0:
        params = sum(p.numel() for p in reference.parameters())
        print(f"2-D mesh dp x tp = {dp} x {TP} on {world} ranks ({dist.get_backend()}), {args.steps} steps, "
              f"global batch {GLOBAL_BATCH} x {SEQ_LEN} tokens, {params:,} parameters "
              f"({params * DTYPE_BYTES:,} bytes); losses {', '.join(f'{v:.4f}' for v in losses)}")
        for r in results:
            relation = "<= " if "max |" in r["name"] else ""
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {r['measured']:g} (expected {relation}{r['expected']:g})")
        if args.json:
            report = {"lab": "mesh_2d", "world_size": world, "backend": dist.get_backend(),
                      "config": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "vocab": VOCAB,
                                 "seq_len": SEQ_LEN, "global_batch": GLOBAL_BATCH, "tp": TP, "dp": dp,
                                 "steps": args.steps, "lr": LR, "dtype_bytes": DTYPE_BYTES,
                                 "tolerance": TOLERANCE},
                      "checks": results}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
