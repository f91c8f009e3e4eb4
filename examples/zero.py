"""Lab: ZeRO stages 1, 2 and 3 by hand, then PyTorch's own ZeroRedundancyOptimizer and FSDP2.

    torchrun --nproc_per_node=4 examples/zero.py [--steps 3] [--json out.json]

Every rank trains the same small GPT on a 1/N slice of the global batch with the mixed-
precision recipe of the ZeRO paper: bf16 weights and gradients for the forward and the
backward, an fp32 master copy of the weights and fp32 Adam moments for the step (K = 12
bytes of optimizer state per parameter). The parameters are split into units (one per
transformer block, plus the root: embeddings and the final LayerNorm); each unit is one
flat buffer cut into N equal chunks, and rank r owns chunk r of every unit: its fp32
master, its Adam moments and (stages 2, 3) its gradient.

  stage 1: backward fills the whole bf16 gradient; then each unit's gradient is
           reduce-scattered, each rank updates its chunk, and the weights are
           all-gathered;
  stage 2: each unit's gradient is reduce-scattered as soon as backward has produced it,
           and the whole gradient is dropped: a rank keeps only its chunk;
  stage 3: a rank also keeps only its chunk of the bf16 weights: a unit is all-gathered
           before its forward and again before its backward, and freed after each.

Then the same training with torch.distributed.optim.ZeroRedundancyOptimizer over DDP
(fp32, stage 1) and with FSDP2, torch.distributed.fsdp.fully_shard (bf16 compute, stage
3). Collectives are counted with torch.distributed.tensor.debug.CommDebugMode.

Checks (printed, and written by rank 0 with --json): per rank, the bytes of weights,
gradients and optimizer state each variant really holds (summed over the storages of its
tensors); the collectives of one step and the elements they carry; the largest number of
parameters stage 3 holds unsharded at once; the shard sizes of ZeroRedundancyOptimizer
(whole tensors, so unequal) and of FSDP2 (dim 0 padded to a multiple of N); the stages
agree bitwise with each other, and every variant ends close to one process trained on
the whole batch with the same recipe. Exits 1 if a check fails. PyTorch only: gloo on a
CPU, NCCL on GPUs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import warnings
from collections import defaultdict
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.debug import CommDebugMode

# A small GPT in Megatron's layout (Shoeybi et al. 2019): learned positions, pre-LN
# blocks with one fused QKV projection, a 4h MLP with GELU, a final LayerNorm and an
# output head tied to the word embedding. Every unit's size divides by 4 (and 2), so the
# chunks are equal without padding (the code pads if they do not).
LAYERS, HIDDEN, HEADS, VOCAB, SEQ_LEN = 2, 64, 4, 128, 32
GLOBAL_BATCH = 8  # sequences per step, split evenly over the ranks
STEPS = 3
LR = 1e-3  # Adam, default betas and eps
INIT_SEED, DATA_SEED = 1234, 99
LOW, HIGH = torch.bfloat16, torch.float32  # compute dtype; master weights and Adam moments
# Every variant is compared with one process by the relative distance
#   |theta - theta_one| / |theta_one - theta_init|   (fp32 masters, key biases left out:
# see comparable()). bf16 keeps 8 significant bits: N partial gradients summed in another
# order than one backward over the whole batch differ by a few bf16 roundings, and Adam
# divides by sqrt(v), so where a gradient nearly cancels its update can even change sign
# (up to 2*LR per step). Measured: 1.2 %; gradients that miss some ranks' slices: 60 %+.
REL_TOLERANCE = 0.05
REL_TOLERANCE_FP32 = 1e-4  # ZeroRedundancyOptimizer, all in fp32; measured: 4e-6
DDP_BUCKET_BYTES = 26_214_400  # DDP's default bucket_cap_mb = 25 (MiB)

warnings.filterwarnings(  # CommDebugMode's module tracker hooks every module; our inputs are token ids
    "ignore", message="Full backward hook is firing when gradients are computed with respect to module outputs")


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


def build(device: torch.device) -> GPT:
    """The same fp32 model on every rank: each rank builds it whole from the seed and keeps
    its shards (no broadcast needed; a large model would be built on the meta device)."""
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
    return F.cross_entropy(model(x).float().reshape(-1, VOCAB), y.reshape(-1))  # the loss in fp32


def local(x: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    share = GLOBAL_BATCH // world
    return x[rank * share:(rank + 1) * share]


def held_bytes(tensors) -> int:
    """Bytes of the distinct storages behind `tensors`: what the rank really holds. A view
    counts its whole buffer, once; a freed buffer (storage resized to 0) counts nothing."""
    storages = {}
    for t in tensors:
        if t is None:
            continue
        s = (t.to_local() if isinstance(t, DTensor) else t).untyped_storage()
        if s.nbytes():
            storages[s.data_ptr()] = s.nbytes()
    return sum(storages.values())


def one_process(data: list, device: torch.device, mixed: bool) -> dict[str, torch.Tensor]:
    """The reference: one process, the whole global batch, no communication; with
    `mixed`, the same recipe as the ZeRO ranks (bf16 model, fp32 masters and Adam)."""
    model = build(device)
    masters = [p for p in model.parameters()]
    if mixed:
        masters = [p.detach().clone() for p in masters]
        model.to(LOW)
    adam = torch.optim.Adam(masters, lr=LR)
    for x, y in data:
        model.zero_grad(set_to_none=True)
        loss_of(model, x, y).backward()
        if mixed:
            for m, p in zip(masters, model.parameters()):
                m.grad = p.grad.to(HIGH)
        adam.step()
        if mixed:
            with torch.no_grad():
                for m, p in zip(masters, model.parameters()):
                    p.copy_(m)  # round the master to bf16
    return {name: m.detach() for (name, _), m in zip(model.named_parameters(), masters)}


# --8<-- [start:count]
NAMES = {"c10d::_allgather_base_": "all_gather", "c10d::_reduce_scatter_base_": "reduce_scatter",
         "c10d::allreduce_": "all_reduce", "c10d::broadcast_": "broadcast"}


class CountCollectives(CommDebugMode):
    """CommDebugMode counts each c10d collective that passes the dispatcher (our dist.*
    calls, DDP's all-reduce from C++, FSDP2's all-gathers and reduce-scatters); this also
    adds up the elements of each call's whole buffer: the largest tensor of the call (the
    output of an all-gather, the input of a reduce-scatter, the tensor of an all-reduce
    or a broadcast)."""

    def __enter__(self):
        self.calls: dict[str, int] = defaultdict(int)
        self.elements: dict[str, int] = defaultdict(int)
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        before = self.get_total_counts()
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.get_total_counts() > before:  # CommDebugMode counted a collective
            name = NAMES.get(func.name(), func.name())
            self.calls[name] += 1
            self.elements[name] += max(t.numel() for t in _tensors(args))
        return out


def _tensors(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)
# --8<-- [end:count]


# ZeRO by hand --------------------------------------------------------------------------
# --8<-- [start:unit]
class Unit:
    """Parameters sharded together: one flat bf16 buffer that the parameters are views of,
    padded to a multiple of N and cut into N equal chunks; rank r owns chunk r: its fp32
    master, its Adam moments and (stages 2, 3) its gradient."""

    def __init__(self, params: list[nn.Parameter], stage: int, rank: int, world: int) -> None:
        self.params, self.stage, self.world = params, stage, world
        self.numel = sum(p.numel() for p in params)
        self.padded = -(-self.numel // world) * world
        n = self.padded // world
        full = torch.cat([p.detach().reshape(-1) for p in params]
                         + [params[0].new_zeros(self.padded - self.numel)])  # fp32
        self.flat = full.to(LOW)
        offset = 0
        for p in params:  # the module's parameters become bf16 views of the flat buffer
            p.data = self.flat[offset:offset + p.numel()].view_as(p)
            offset += p.numel()
        own = slice(rank * n, (rank + 1) * n)
        self.master = full[own].clone()  # fp32: the rank's chunk only
        if stage == 3:
            self.shard = self.flat[own].clone()  # the rank's bf16 chunk, kept on its own
            self.free()  # ... and the whole buffer dropped
        else:
            self.shard = self.flat[own]  # a view: the rank's chunk of the whole weights
        if stage == 1:  # the whole gradient, in one buffer the .grad are views of
            self.grad_flat = torch.zeros_like(self.flat)
            offset = 0
            for p in params:
                p.grad = self.grad_flat[offset:offset + p.numel()].view_as(p)
                offset += p.numel()
            self.grad_shard = self.grad_flat[own]  # the reduce-scatter lands here, in place
        else:
            self.grad_shard = torch.zeros_like(self.shard)
        self.ready = 0

    def gather(self) -> None:
        """Stage 3: give the flat buffer its memory back and all-gather the chunks into it;
        the parameters (and what autograd saved of them) are views of it."""
        storage = self.flat.untyped_storage()
        if storage.nbytes() == 0:
            storage.resize_(self.padded * self.flat.element_size())
            dist.all_gather_single(self.flat, self.shard)

    def free(self) -> None:
        self.flat.untyped_storage().resize_(0)

    def grad_ready(self, _p: torch.Tensor) -> None:
        """Stages 2, 3 (a hook after each gradient is accumulated): once the unit's last
        gradient is in, reduce-scatter them, keep the own chunk, drop the whole gradient."""
        self.ready += 1
        if self.ready < len(self.params):
            return
        self.ready = 0
        pad = self.flat.new_zeros(self.padded - self.numel)
        flat_grad = torch.cat([p.grad.reshape(-1) for p in self.params] + [pad])
        for p in self.params:
            p.grad = None
        dist.reduce_scatter_single(self.grad_shard, flat_grad)
        self.grad_shard.div_(self.world)  # the mean over the ranks' slices of the batch
        if self.stage == 3:
            self.free()  # its backward is done
# --8<-- [end:unit]


# --8<-- [start:zero]
class Zero:
    """ZeRO stage 1, 2 or 3 over a GPT: its units, the hooks of the stage and the step."""

    def __init__(self, model: GPT, stage: int, rank: int, world: int) -> None:
        self.model, self.stage, self.world = model, stage, world
        root = [p for name, p in model.named_parameters() if not name.startswith("blocks.")]
        modules = [model, *model.blocks]
        self.units = [Unit(params, stage, rank, world)
                      for params in [root, *[list(b.parameters()) for b in model.blocks]]]
        self.adam = torch.optim.Adam([u.master for u in self.units], lr=LR)
        self.peak = 0  # most parameter elements unsharded at once (stage 3)
        if stage >= 2:
            for unit in self.units:
                for p in unit.params:
                    p.register_post_accumulate_grad_hook(unit.grad_ready)
        if stage == 3:
            for module, unit in zip(modules, self.units):
                module.register_forward_pre_hook(lambda m, args, u=unit: self._gather(u))
                module.register_forward_hook(lambda m, args, out, u=unit: self._after_forward(u, out))

    def _gather(self, unit: Unit) -> None:
        unit.gather()
        held = sum(u.flat.untyped_storage().nbytes() for u in self.units)
        self.peak = max(self.peak, held // unit.flat.element_size())

    def _after_forward(self, unit: Unit, out: torch.Tensor) -> None:
        # What autograd saved for backward are views of the parameters, so of the flat
        # buffer: freeing its storage frees them too, and the gather refills that storage.
        unit.free()
        out.register_hook(lambda grad: self._gather(unit))  # runs before the unit's backward

    def backward(self, loss: torch.Tensor) -> None:
        if self.stage == 1:
            for u in self.units:
                u.grad_flat.zero_()
        loss.backward()

    def step(self) -> None:
        if self.stage == 1:  # the whole gradient is there: reduce-scatter it now
            for u in self.units:
                dist.reduce_scatter_single(u.grad_shard, u.grad_flat)
                u.grad_shard.div_(self.world)
        for u in self.units:
            u.master.grad = u.grad_shard.to(HIGH)  # a transient fp32 copy of the own chunk
        self.adam.step()  # each rank updates its chunk: 1/N of Adam's work and state
        for u in self.units:
            u.master.grad = None
            u.shard.copy_(u.master)  # round to bf16
            if self.stage < 3:  # everyone needs the whole weights for the next forward
                dist.all_gather_single(u.flat, u.shard)

    def held(self) -> dict[str, int]:
        """Bytes this rank holds (Adam's step counters, one scalar per tensor, left out)."""
        params = [p for u in self.units for p in u.params]
        moments = [t for s in self.adam.state.values() for t in (s["exp_avg"], s["exp_avg_sq"])]
        return {"weights": held_bytes(params + [u.shard for u in self.units]),
                "grads": held_bytes([p.grad for p in params] + [u.grad_shard for u in self.units]),
                "optimizer": held_bytes([u.master for u in self.units] + moments)}

    def masters(self) -> dict[str, torch.Tensor]:
        """The fp32 masters, all-gathered (after training, not counted)."""
        out = {}
        names = {p: name for name, p in self.model.named_parameters()}
        for u in self.units:
            full = u.master.new_empty(u.padded)
            dist.all_gather_single(full, u.master)
            offset = 0
            for p in u.params:
                out[names[p]] = full[offset:offset + p.numel()].view(p.shape)
                offset += p.numel()
        return out
# --8<-- [end:zero]


def train_zero(stage: int, data: list, rank: int, world: int, device: torch.device) -> dict:
    zero = Zero(build(device), stage, rank, world)
    for i, (x, y) in enumerate(data):
        last = i == len(data) - 1
        with CountCollectives() if last else nullcontext() as count:  # one step, the last
            zero.backward(loss_of(zero.model, local(x, rank, world), local(y, rank, world)))
            if last:
                grads = zero.held()["grads"]  # at the end of backward, before the step
            zero.step()
    return {"held": {**zero.held(), "grads": grads}, "count": count, "peak": zero.peak,
            "masters": zero.masters()}


# PyTorch's own -------------------------------------------------------------------------
def train_zero_redundancy(data: list, rank: int, world: int, device: torch.device) -> dict:
    """Stage 1 as PyTorch ships it: DDP all-reduces the fp32 gradients, then
    ZeroRedundancyOptimizer steps the parameters this rank owns and broadcasts them."""
    model = build(device)
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=LR)
    for i, (x, y) in enumerate(data):
        last = i == len(data) - 1
        with CountCollectives() if last else nullcontext() as count:
            opt.zero_grad()
            loss_of(ddp, local(x, rank, world), local(y, rank, world)).backward()
            opt.step()
    state = opt.optim.state.values()  # the local optimizer: the owned parameters only
    return {"owned": sum(s["exp_avg"].numel() for s in state),
            "moment_bytes": held_bytes(t for s in state for t in (s["exp_avg"], s["exp_avg_sq"])),
            "count": count, "masters": {n: p.detach() for n, p in model.named_parameters()}}


def train_fsdp2(data: list, rank: int, world: int, device: torch.device) -> dict:
    """Stage 3 as PyTorch ships it: fully_shard on each block and on the root, bf16 compute
    and bf16 reduce-scatter; the fp32 shards are the masters (sharded per tensor on dim 0)."""
    model = build(device)
    policy = MixedPrecisionPolicy(param_dtype=LOW, reduce_dtype=LOW)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    # foreach: each step op is dispatched once for all the DTensors, not once per tensor
    # (DTensor's dispatch is slow in Python the first time it sees an op and a shape).
    adam = torch.optim.Adam(model.parameters(), lr=LR, foreach=True)
    for i, (x, y) in enumerate(data):
        last = i == len(data) - 1
        with CountCollectives() if last else nullcontext() as count:
            adam.zero_grad()
            loss_of(model, local(x, rank, world), local(y, rank, world)).backward()
            if last:
                grads = held_bytes(p.grad for p in model.parameters())
            adam.step()
    params = list(model.parameters())
    moments = [t for s in adam.state.values() for t in (s["exp_avg"], s["exp_avg_sq"])]
    return {"held": {"weights": held_bytes(params), "grads": grads, "optimizer": held_bytes(moments)},
            "local": sum(p.to_local().numel() for p in params),  # without the padding
            "count": count, "masters": {n: p.full_tensor() for n, p in model.named_parameters()}}


def comparable(name: str, t: torch.Tensor) -> torch.Tensor:
    """All of a parameter but the key bias (the middle third of qkv.bias). Its gradient is
    zero in exact arithmetic: a bias added to every key adds the same q.b to all the scores
    of a query, and softmax ignores that. So it gets rounding noise, which Adam (dividing by
    sqrt(v)) turns into steps of up to LR, different noise in one process and in N."""
    if name.endswith("qkv.bias"):
        return torch.cat([t[:HIDDEN], t[2 * HIDDEN:]])
    return t.reshape(-1)


def distance(a: dict, b: dict, init: dict) -> float:
    """|a - b| / |b - init| over all parameters but the key biases: how far apart,
    relative to how far b moved from the initial weights."""
    def sq(x: dict, y: dict) -> float:
        return math.fsum(((comparable(k, x[k]) - comparable(k, y[k])).double() ** 2).sum().item() for k in y)
    return math.sqrt(sq(a, b) / sq(b, init))


def key_bias_gap(a: dict, b: dict) -> float:
    """Largest |a - b| of the key biases, in units of LR."""
    return max((a[k][HIDDEN:2 * HIDDEN] - b[k][HIDDEN:2 * HIDDEN]).abs().max().item() / LR
               for k in b if k.endswith("qkv.bias"))


def every_rank(values: list[int], device: torch.device) -> list[list[int]]:
    """Each rank's numbers, on every rank (after training, not counted)."""
    t = torch.tensor(values, dtype=torch.int64, device=device)
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [o.tolist() for o in out]


def main() -> None:
    parser = argparse.ArgumentParser(description="ZeRO stages 1-3 by hand, ZeroRedundancyOptimizer and FSDP2.")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if args.steps < 3:  # DDP rebuilds its buckets in step 2 (two broadcasts of bucket indices)
        raise SystemExit("--steps must be 3 or more: the collectives are counted in the last step, "
                         "and DDP's second step is not a steady one")
    if GLOBAL_BATCH % world:
        raise SystemExit(f"the global batch of {GLOBAL_BATCH} sequences must split evenly over {world} ranks")

    data = batches(args.steps, device)
    model = build(device)
    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    shapes = [p.shape for p in model.parameters()]
    psi = sum(p.numel() for p in model.parameters())
    root = sum(p.numel() for n, p in model.named_parameters() if not n.startswith("blocks."))
    block = sum(p.numel() for p in model.blocks[0].parameters())

    def pad(n: int) -> int:  # a unit's size, padded to N equal chunks
        return -(-n // world) * world

    padded = pad(root) + LAYERS * pad(block)
    units = LAYERS + 1
    low, high = torch.finfo(LOW).bits // 8, torch.finfo(HIGH).bits // 8
    k = 3 * high  # fp32 master + momentum + variance: K = 12
    ring = (world - 1) / world  # each rank sends (N-1)/N of an all-gather's or reduce-scatter's buffer

    runs = {s: train_zero(s, data, rank, world, device) for s in (1, 2, 3)}
    zro = train_zero_redundancy(data, rank, world, device)
    fsdp = train_fsdp2(data, rank, world, device)
    kinds = ("weights", "grads", "optimizer")
    held = {s: every_rank([r["held"][kind] for kind in kinds], device) for s, r in runs.items()}
    owned = every_rank([zro["owned"], zro["moment_bytes"]], device)
    fsdp_held = every_rank([fsdp["held"][kind] for kind in kinds] + [fsdp["local"]], device)
    mixed = one_process(data, device, mixed=True) if rank == 0 else None
    fp32 = one_process(data, device, mixed=False) if rank == 0 else None

    checks: list[tuple[str, float, float, str]] = [("parameters", psi, VOCAB * HIDDEN + SEQ_LEN * HIDDEN
                                                     + LAYERS * (12 * HIDDEN**2 + 13 * HIDDEN) + 2 * HIDDEN, "==")]

    def per_rank(name: str, values: list, expected: float | list) -> None:
        """One figure on every rank: measured is the largest, ok only if every rank's equals
        its expected value (one for all ranks, or a list with one per rank)."""
        each = expected if isinstance(expected, list) else [expected] * len(values)
        checks.append((name, max(values), max(each), "==" if values == each else "!= (ranks differ)"))

    # The paper's state per rank (Sec. 5, Fig. 1): weights 2Ψ (stage 3: /N), gradients 2Ψ
    # (stages 2, 3: /N), optimizer KΨ/N.
    for s, r in runs.items():
        for i, kind in enumerate(kinds):
            per_byte = (low, low, k)[i]
            sharded = s >= (3, 2, 1)[i]
            per_rank(f"stage {s}: bytes of {kind} per rank", [h[i] for h in held[s]],
                     per_byte * padded / (world if sharded else 1))
        c = r["count"]
        checks.append((f"stage {s}: collectives per step", c.get_total_counts(), (3 if s == 3 else 2) * units, "=="))
        moved = c.elements["all_gather"] + c.elements["reduce_scatter"]
        checks.append((f"stage {s}: elements sent per rank per step (ring)", ring * moved,
                       ring * (3 if s == 3 else 2) * padded, "=="))
        if rank == 0:
            checks.append((f"stage {s}: distance to one process", distance(r["masters"], mixed, init),
                           REL_TOLERANCE, "<="))
        if s > 1 and rank == 0:
            diff = max((r["masters"][n] - runs[1]["masters"][n]).abs().max().item() for n in init)
            checks.append((f"stage {s}: max |master - stage 1|", diff, 0.0, "=="))
    checks.append(("stage 3: most parameter elements unsharded at once", runs[3]["peak"], pad(root) + pad(block), "=="))

    # ZeroRedundancyOptimizer: whole tensors, largest first, each to the least-loaded rank.
    greedy, sizes = [0] * world, sorted((math.prod(s) for s in shapes), reverse=True)
    for n in sizes:
        greedy[greedy.index(min(greedy))] += n
    for r_ in range(world):
        checks.append((f"zero_redundancy_optimizer: parameters whose Adam state rank {r_} holds",
                       owned[r_][0], greedy[r_], "=="))
        checks.append((f"zero_redundancy_optimizer: bytes of Adam moments on rank {r_}", owned[r_][1],
                       2 * high * greedy[r_], "=="))
    checks.append(("zero_redundancy_optimizer: largest shard over Psi/N", max(o[0] for o in owned) / (psi / world),
                   max(greedy) / (psi / world), "=="))
    c = zro["count"]
    checks += [
        ("zero_redundancy_optimizer: all-reduces per step", c.calls["all_reduce"],
         math.ceil(high * psi / DDP_BUCKET_BYTES), "=="),  # DDP's buckets: one here
        ("zero_redundancy_optimizer: elements all-reduced per step", c.elements["all_reduce"], psi, "=="),
        ("zero_redundancy_optimizer: broadcasts per step (one per tensor)", c.calls["broadcast"], len(shapes), "=="),
        ("zero_redundancy_optimizer: elements broadcast per step", c.elements["broadcast"], psi, "=="),
    ]
    if rank == 0:
        checks.append(("zero_redundancy_optimizer: distance to one process (fp32)",
                       distance(zro["masters"], fp32, init), REL_TOLERANCE_FP32, "<="))

    # FSDP2: each tensor sharded on dim 0, padded to a multiple of N; fp32 shards (the
    # masters), fp32 sharded gradients, fp32 moments: 4 + 4 + 8 = 16 bytes, as ZeRO's 2 + 2 + 12.
    def dim0_padded(group: list) -> int:  # elements of a group's all-gather, FSDP2's padding included
        return sum(-(-s[0] // world) * world * math.prod(s[1:]) for s in group)

    def dim0_local(r: int) -> int:  # elements rank r's shards really hold: whole rows of ceil(d0/N), the last ranks fewer
        return sum(max(0, min(-(-s[0] // world), s[0] - r * -(-s[0] // world))) * math.prod(s[1:]) for s in shapes)

    fsdp_shard = dim0_padded(shapes) // world
    local = [dim0_local(r) for r in range(world)]  # Ψ/N each when every dim 0 divides by N
    per_rank("fsdp2: parameter elements per rank (dim 0 padded)", [h[0] // high for h in fsdp_held], fsdp_shard)
    per_rank("fsdp2: padding elements per rank", [h[0] // high - h[3] for h in fsdp_held], [fsdp_shard - n for n in local])
    per_rank("fsdp2: bytes of weights per rank (fp32 shards)", [h[0] for h in fsdp_held], high * fsdp_shard)
    per_rank("fsdp2: bytes of grads per rank (fp32 shards)", [h[1] for h in fsdp_held], high * fsdp_shard)
    # Adam's moments are shaped like each rank's local shard: no padding in them.
    per_rank("fsdp2: bytes of optimizer per rank (Adam moments)", [h[2] for h in fsdp_held], [2 * high * n for n in local])
    per_rank("fsdp2: bytes of model state per rank", [sum(h[:3]) for h in fsdp_held],
             [2 * high * fsdp_shard + 2 * high * n for n in local])
    root_shapes = [p.shape for n, p in model.named_parameters() if not n.startswith("blocks.")]
    block_shapes = [p.shape for p in model.blocks[0].parameters()]
    c = fsdp["count"]
    checks += [  # the root is not resharded after forward: gathered once, the blocks twice
        ("fsdp2: all-gathers per step", c.calls["all_gather"], 2 * LAYERS + 1, "=="),
        ("fsdp2: elements all-gathered per step", c.elements["all_gather"],
         2 * LAYERS * dim0_padded(block_shapes) + dim0_padded(root_shapes), "=="),
        ("fsdp2: reduce-scatters per step", c.calls["reduce_scatter"], units, "=="),
        ("fsdp2: elements reduce-scattered per step", c.elements["reduce_scatter"], dim0_padded(shapes), "=="),
        ("fsdp2: collectives per step", c.get_total_counts(), 3 * LAYERS + 2, "=="),
    ]
    if rank == 0:
        checks.append(("fsdp2: distance to one process", distance(fsdp["masters"], mixed, init), REL_TOLERANCE, "<="))

    results = []
    for name, measured, expected, relation in checks:
        ok = measured <= expected if relation == "<=" else (relation == "==" and measured == expected)
        results.append({"name": name, "measured": measured, "expected": expected, "ok": bool(ok)})

    if rank == 0:
        print(f"ZeRO on {world} ranks ({dist.get_backend()}), {args.steps} steps, global batch {GLOBAL_BATCH} x "
              f"{SEQ_LEN} tokens, {psi:,} parameters in {units} units ({root:,} root + {LAYERS} x {block:,}); "
              f"{LOW} weights and gradients, {HIGH} masters and Adam moments (K = {k})")
        for r, (_, _, _, relation) in zip(results, checks):
            rel = "<= " if relation == "<=" else ""
            note = ", the ranks differ" if relation.startswith("!=") else ""
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {r['measured']:g} (expected {rel}{r['expected']:g}{note})")
        print(f"  zero_redundancy_optimizer shards: {[o[0] for o in owned]} parameters (Psi/N = {psi / world:g})")
        print(f"  key biases (left out of the distances), largest |difference| / LR: stage 1 "
              f"{key_bias_gap(runs[1]['masters'], mixed):.2f}, fsdp2 {key_bias_gap(fsdp['masters'], mixed):.2f}, "
              f"zero_redundancy_optimizer (fp32) {key_bias_gap(zro['masters'], fp32):.2f}")
        if args.json:
            report = {"lab": "zero", "world_size": world, "backend": dist.get_backend(),
                      "config": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "vocab": VOCAB,
                                 "seq_len": SEQ_LEN, "global_batch": GLOBAL_BATCH, "steps": args.steps, "lr": LR,
                                 "weight_bytes": low, "grad_bytes": low, "optimizer_bytes": k,
                                 "rel_tolerance": REL_TOLERANCE, "rel_tolerance_fp32": REL_TOLERANCE_FP32,
                                 "ddp_bucket_bytes": DDP_BUCKET_BYTES},
                      "checks": results}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
