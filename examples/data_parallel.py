"""Lab: data parallelism three ways, each checked against one process.

    torchrun --nproc_per_node=4 examples/data_parallel.py [--steps 3] [--bucket-kb 64] [--json out.json]

Every rank holds the whole model and a 1/N slice of the global batch; after backward
the gradients are averaged over the ranks, so every replica takes the step one process
would take on the whole batch. Three ways to average them:

  (a) naive: broadcast the weights from rank 0 once, then one all_reduce per parameter
      after backward;
  (b) buckets: gradients are packed into buckets of about --bucket-kb and each bucket
      is all-reduced as soon as its last gradient is ready, while backward goes on
      (gradient hooks), so communication overlaps with compute;
  (c) torch.nn.parallel.DistributedDataParallel, which does (b) in C++ (a comm hook
      counts its collectives).

Checks (printed, and written by rank 0 with --json): the parameters after --steps steps
equal those of one process trained on the whole global batch; the bytes all-reduced per
rank per step equal the gradient's bytes (the book's gradient_bytes, here in fp32); the
number of collectives per step (one per parameter, against one per bucket); and that the
first bucket leaves before backward has produced the last gradient. Exits 1 if a check
fails. PyTorch only: gloo on a CPU, NCCL on GPUs.
"""

from __future__ import annotations

import argparse
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# A small GPT in Megatron's layout (Shoeybi et al. 2019): learned positions, pre-LN
# blocks with one fused QKV projection, a 4h MLP with GELU, a final LayerNorm and an
# output head tied to the word embedding.
LAYERS, HIDDEN, HEADS, VOCAB, SEQ_LEN = 2, 64, 4, 128, 32
GLOBAL_BATCH = 8  # sequences per step, split evenly over the ranks
INIT_SEED, DATA_SEED = 1234, 99
TOLERANCE = 1e-5  # largest |difference| of a parameter after the steps (fp32, summation order)
STEPS = 3  # training steps each way; every rank must end where one process ends
BUCKET_KB = 64  # bucket size of (b) and (c); DDP's own default is 25 MiB


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.qkv, self.proj = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.fc1, self.fc2 = nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, HEADS, h // HEADS).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
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


def build(seed: int, device: torch.device) -> GPT:
    torch.manual_seed(seed)
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


def local(x: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    share = GLOBAL_BATCH // world
    return x[rank * share:(rank + 1) * share]


def one_process(data: list, device: torch.device) -> GPT:
    """The reference: one model trained on the whole global batch, no communication."""
    model = build(INIT_SEED, device)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    for x, y in data:
        opt.zero_grad()
        loss_of(model, x, y).backward()
        opt.step()
    return model


# (a) The naive loop -----------------------------------------------------------------------
# --8<-- [start:naive]
def train_naive(data: list, rank: int, world: int, device: torch.device) -> tuple[GPT, list[int], list[int]]:
    model = build(INIT_SEED + rank, device)  # each rank starts different ...
    for p in model.parameters():
        dist.broadcast(p.data, src=0)  # ... until rank 0's weights are copied to all
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    calls, sent = [], []
    for x, y in data:
        opt.zero_grad()
        loss_of(model, local(x, rank, world), local(y, rank, world)).backward()
        n = b = 0
        for p in model.parameters():  # one collective per parameter tensor
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad /= world
            n, b = n + 1, b + p.grad.numel() * p.grad.element_size()
        calls.append(n)
        sent.append(b)
        opt.step()
    return model, calls, sent
# --8<-- [end:naive]


# (b) Buckets all-reduced during backward --------------------------------------------------
# --8<-- [start:buckets]
class Buckets:
    """Gradients grouped into buckets of about `bucket_bytes`, in the order backward
    produces them (the reverse of the forward); a bucket is all-reduced, without
    waiting, as soon as its last gradient has been accumulated."""

    def __init__(self, model: nn.Module, bucket_bytes: int, world: int) -> None:
        self.world = world
        self.buckets: list[list[nn.Parameter]] = [[]]
        size = 0
        for p in reversed(list(model.parameters())):
            if size >= bucket_bytes:
                self.buckets.append([])
                size = 0
            self.buckets[-1].append(p)
            size += p.numel() * p.element_size()
        self.index = {p: i for i, bucket in enumerate(self.buckets) for p in bucket}
        self.events: list[str] = []  # "grad" and "send", in the order they happened
        self._reset()
        for p in model.parameters():
            p.register_post_accumulate_grad_hook(self._ready)

    def _reset(self) -> None:
        self.waiting = [len(bucket) for bucket in self.buckets]
        self.inflight: list[tuple[int, torch.Tensor, dist.Work]] = []

    def _ready(self, p: torch.Tensor) -> None:
        self.events.append("grad")
        i = self.index[p]
        self.waiting[i] -= 1
        if self.waiting[i] == 0:
            flat = torch.cat([q.grad.reshape(-1) for q in self.buckets[i]])
            self.inflight.append((i, flat, dist.all_reduce(flat, op=dist.ReduceOp.SUM, async_op=True)))
            self.events.append("send")

    def finish(self) -> tuple[int, int]:
        """Wait for every bucket, average, copy back; returns (collectives, bytes)."""
        calls = sent = 0
        for i, flat, work in self.inflight:
            work.wait()
            flat /= self.world
            offset = 0
            for q in self.buckets[i]:
                q.grad.copy_(flat[offset:offset + q.numel()].view_as(q.grad))
                offset += q.numel()
            calls, sent = calls + 1, sent + flat.numel() * flat.element_size()
        self._reset()
        return calls, sent
# --8<-- [end:buckets]


def train_buckets(data: list, rank: int, world: int, device: torch.device,
                  bucket_bytes: int) -> tuple[GPT, list[int], list[int], Buckets]:
    model = build(INIT_SEED + rank, device)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    buckets = Buckets(model, bucket_bytes, world)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    calls, sent = [], []
    for x, y in data:
        opt.zero_grad()
        buckets.events.clear()
        loss_of(model, local(x, rank, world), local(y, rank, world)).backward()
        n, b = buckets.finish()
        calls.append(n)
        sent.append(b)
        opt.step()
    return model, calls, sent, buckets


# (c) DistributedDataParallel --------------------------------------------------------------
# --8<-- [start:ddp]
def train_ddp(data: list, rank: int, world: int, device: torch.device,
              bucket_bytes: int) -> tuple[nn.Module, list[int], list[int]]:
    model = build(INIT_SEED + rank, device)  # DDP broadcasts rank 0's weights itself
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_bytes / 2**20,
                                              device_ids=[device.index] if device.type == "cuda" else None)
    count = {"calls": 0, "bytes": 0}

    def counting_hook(state, bucket):  # no annotations: DDP compares them with dist.GradBucket
        tensor = bucket.buffer()
        state["calls"] += 1
        state["bytes"] += tensor.numel() * tensor.element_size()
        tensor /= world
        return dist.all_reduce(tensor, op=dist.ReduceOp.SUM, async_op=True).get_future().then(lambda f: f.value()[0])

    ddp.register_comm_hook(count, counting_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    calls, sent = [], []
    for x, y in data:
        opt.zero_grad()
        count["calls"] = count["bytes"] = 0
        loss_of(ddp, local(x, rank, world), local(y, rank, world)).backward()
        calls.append(count["calls"])
        sent.append(count["bytes"])
        opt.step()
    return ddp.module, calls, sent
# --8<-- [end:ddp]


def max_difference(a: nn.Module, b: nn.Module) -> float:
    return max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))


def main() -> None:
    parser = argparse.ArgumentParser(description="Data parallelism three ways, checked against one process.")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--bucket-kb", type=float, default=BUCKET_KB, help="bucket size of (b) and (c), in KiB")
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if GLOBAL_BATCH % world:
        raise SystemExit(f"the global batch of {GLOBAL_BATCH} sequences must split evenly over {world} ranks")
    bucket_bytes = int(args.bucket_kb * 1024)

    data = batches(args.steps, device)
    reference = one_process(data, device)
    params = sum(p.numel() for p in reference.parameters())
    tensors = len(list(reference.parameters()))
    grad_bytes = params * 4  # fp32 gradients: 4 bytes per parameter

    naive, naive_calls, naive_sent = train_naive(data, rank, world, device)
    bucketed, bucket_calls, bucket_sent, buckets = train_buckets(data, rank, world, device, bucket_bytes)
    ddp, ddp_calls, ddp_sent = train_ddp(data, rank, world, device, bucket_bytes)
    first_send = buckets.events.index("send")
    grads_before = buckets.events[:first_send].count("grad")

    checks = [
        ("parameters", params, VOCAB * HIDDEN + SEQ_LEN * HIDDEN + LAYERS * (12 * HIDDEN**2 + 13 * HIDDEN) + 2 * HIDDEN),
        ("naive: max |parameter - one process|", max_difference(naive, reference), TOLERANCE),
        ("buckets: max |parameter - one process|", max_difference(bucketed, reference), TOLERANCE),
        ("ddp: max |parameter - one process|", max_difference(ddp, reference), TOLERANCE),
        ("naive: bytes all-reduced per rank per step", naive_sent[-1], grad_bytes),
        ("buckets: bytes all-reduced per rank per step", bucket_sent[-1], grad_bytes),
        ("ddp: bytes all-reduced per rank per step", ddp_sent[-1], grad_bytes),
        ("naive: collectives per step (one per parameter tensor)", naive_calls[-1], tensors),
        ("buckets: collectives per step (one per bucket)", bucket_calls[-1], len(buckets.buckets)),
        ("buckets: gradients ready before the first bucket leaves", grads_before, len(buckets.index)),
    ]
    results = []
    for name, measured, expected in checks:
        if name.startswith(("naive: max", "buckets: max", "ddp: max")):
            ok = measured <= expected
        elif name.startswith("buckets: gradients ready"):
            ok = measured < expected  # overlap: a bucket left while backward still ran
        else:
            ok = measured == expected
        results.append({"name": name, "measured": measured, "expected": expected, "ok": bool(ok)})
    results.append({"name": "ddp: collectives per step", "measured": ddp_calls[-1], "expected": None, "ok": ddp_calls[-1] >= 1})

    if rank == 0:
        print(f"data parallelism on {world} ranks ({dist.get_backend()}), {args.steps} steps, "
              f"global batch {GLOBAL_BATCH} x {SEQ_LEN} tokens, {params:,} parameters in {tensors} tensors, "
              f"buckets of {args.bucket_kb:g} KiB: {len(buckets.buckets)}")
        for r in results:
            relation = "<= " if "max |" in r["name"] else "< " if "gradients ready" in r["name"] else ""
            expected = "" if r["expected"] is None else f" (expected {relation}{r['expected']:g})"
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {r['measured']:g}{expected}")
        if args.json:
            report = {"lab": "data_parallel", "world_size": world, "backend": dist.get_backend(),
                      "config": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "vocab": VOCAB,
                                 "seq_len": SEQ_LEN, "global_batch": GLOBAL_BATCH, "steps": args.steps,
                                 "bucket_kb": args.bucket_kb, "tolerance": TOLERANCE, "bucket_bytes": bucket_bytes, "grad_dtype_bytes": 4},
                      "checks": results}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
