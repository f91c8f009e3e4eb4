"""Lab: context parallelism by hand: ring attention (with Llama 3's balanced split) and DeepSpeed-Ulysses.

    torchrun --nproc_per_node=4 examples/context_parallel.py [--seq-len 64] [--micro-batch 2] [--json out.json]

Every rank is one member of a context-parallel group of cp ranks and holds s/cp of the
sequence's tokens: their queries, keys and values (Q, K, V) of one causal self-attention
with grouped-query attention (HEADS query heads share KV_HEADS key/value heads, Ainslie
et al. 2023). Every other layer of a transformer works token by token and needs nothing
from the other ranks; attention needs every earlier token's K and V. Two ways to bring
them:

  ring attention (Liu, Zaharia and Abbeel 2023, Sec. 3, Fig. 2): the ranks form a ring;
     each keeps its queries and passes its K/V block to the next rank, cp - 1 times,
     computing attention against the block it holds while the next one travels; the
     partial results are merged exactly with the online softmax (log-sum-exp). The
     backward pass is a ring too: the K/V blocks travel again, and the gradients dK, dV
     travel with them and end at their owner. A rank keeps the gradient of its own block;
     the travelling one starts at the next rank, so it makes cp - 1 hops like the K/V
     (started at the owner it would need cp). Written as a torch.autograd.Function with
     dist.batch_isend_irecv.
  DeepSpeed-Ulysses (Jacobs et al. 2023, Sec. 3): an all-to-all turns "my s/cp tokens of
     every head" into "every token of my a/cp heads" for Q, K and V, attention runs
     locally and unchanged, and an all-to-all turns the output back; backward runs the
     transposed all-to-alls. cp must divide the K/V heads.

A causal mask gives the last tokens the most keys to attend to. With one contiguous
block per rank (the "contiguous" split) the last rank does cp - 1/2 blocks of work and
the first 1/2; Llama 3 (Dubey et al. 2024, Sec. 3.3.2) cuts the sequence into 2·cp
chunks and gives rank i chunks i and 2·cp - 1 - i (the "balanced" split): every rank
then does 1/2 block at every step. The ring runs with both splits; the mask is applied
chunk pair by chunk pair and the pairs it hides entirely are skipped.

Checks (printed, and written by rank 0 with --json), measured on every rank: the output
and the gradients dQ, dK, dV of each way equal full causal attention on one process
(F.scaled_dot_product_attention(..., is_causal=True) with the K/V heads repeated) within
TOLERANCE; the bytes each rank sent in each pass (numel() * element_size() of every
tensor it sent to another rank): ring forward (cp - 1) K/V blocks, backward 2·(cp - 1),
Ulysses (cp - 1)/cp of Q, K, V and O each way; the all-to-alls per pass; and the ring's
work per rank and per step, in blocks of s/cp queries against s/cp keys (a pair of
chunks under the diagonal counts whole, on the diagonal half). Exits 1 if a check fails.
PyTorch only: gloo on a CPU, NCCL on GPUs.

Not here: PyTorch's own torch.distributed.tensor.experimental.context_parallel. In
PyTorch 2.13 its ring is registered only for the flash, memory-efficient and cuDNN SDPA
kernels (GPU); on a CPU, SDPA calls aten._scaled_dot_product_flash_attention_for_cpu,
which has no DTensor sharding strategy (NotImplementedError).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator

import torch
import torch.distributed as dist
import torch.nn.functional as F

# One causal self-attention with grouped-query attention: HEADS query heads of HEAD_DIM,
# every HEADS // KV_HEADS of them sharing one K/V head, so K and V are half as wide as Q.
SEQ_LEN, MICRO_BATCH = 64, 2  # s must split into 2·cp chunks (Llama 3's split)
HEADS, KV_HEADS, HEAD_DIM = 8, 4, 16  # Ulysses needs cp to divide KV_HEADS
DTYPE_BYTES = 4  # fp32 Q, K, V and their gradients
DATA_SEED = 99
TOLERANCE = 1e-5  # largest |difference| from one process (fp32, summation order)
SCALE = HEAD_DIM ** -0.5


def data(seq_len: int, micro_batch: int, device: torch.device) -> dict[str, torch.Tensor]:
    """The same Q, K, V and upstream gradient dL/dO on every rank, [b, heads, s, d]."""
    g = torch.Generator().manual_seed(DATA_SEED)
    shapes = {"q": HEADS, "k": KV_HEADS, "v": KV_HEADS, "dout": HEADS}
    return {name: torch.randn(micro_batch, n, seq_len, HEAD_DIM, generator=g).to(device) for name, n in shapes.items()}


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain causal attention of [b, heads, s, d]; each K/V head serves HEADS // KV_HEADS
    query heads (query head i uses K/V head i // (HEADS // KV_HEADS))."""
    group = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1),
                                          is_causal=True)


def one_process(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The reference: attention over the whole sequence, no communication."""
    q, k, v = (inputs[n].clone().requires_grad_() for n in ("q", "k", "v"))
    out = causal_attention(q, k, v)
    out.backward(inputs["dout"])
    return {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad}


# --8<-- [start:split]
def rank_chunks(cp: int, split: str) -> list[tuple[int, ...]]:
    """The chunks of the sequence each rank holds. "contiguous": cp chunks, rank i holds
    chunk i. "balanced" (Llama 3): 2·cp chunks, rank i holds chunks i and 2·cp - 1 - i,
    as many early tokens (few keys before them) as late ones (many)."""
    if split == "contiguous" or cp == 1:
        return [(i,) for i in range(cp)]
    return [(i, 2 * cp - 1 - i) for i in range(cp)]


def shard(x: torch.Tensor, chunks: tuple[int, ...], parts: int) -> torch.Tensor:
    """This rank's tokens of x [b, heads, s, d]: its chunks of s/parts tokens, side by side."""
    pieces = x.chunk(parts, dim=2)
    return torch.cat([pieces[c] for c in chunks], dim=2)
# --8<-- [end:split]


# --8<-- [start:blocks]
def grouped(q: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """[b, heads, c, d] -> [b, kv_heads, group, c, d]: the query heads that share a K/V head."""
    b, a, c, d = q.shape
    return q.reshape(b, kv_heads, a // kv_heads, c, d)


def scores(q: torch.Tensor, k: torch.Tensor, diagonal: bool) -> torch.Tensor:
    """A chunk of queries [b, kv, g, c, d] against a chunk of keys [b, kv, c, d]. On the
    diagonal (the same chunk) the causal mask hides each query's later keys; below it
    (earlier keys) nothing is hidden; above it everything is, and the pair is skipped."""
    s = torch.einsum("bkgqd,bksd->bkgqs", q, k) * SCALE
    if diagonal:
        c = q.shape[-2]
        s = s.masked_fill(torch.ones(c, c, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return s


def block_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, diagonal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of the queries over this chunk's keys only: (output, log-sum-exp of the scores)."""
    s = scores(q, k, diagonal)
    lse = torch.logsumexp(s, dim=-1)
    return torch.einsum("bkgqs,bksd->bkgqd", torch.exp(s - lse[..., None]), v), lse


def merge(partial: tuple | None, block: tuple) -> tuple[torch.Tensor, torch.Tensor]:
    """The online softmax: two attentions of the same queries over disjoint sets of keys
    -> their attention over the union, weighted by each one's share of exp(scores)."""
    if partial is None:
        return block
    (out, lse), (block_out, block_lse) = partial, block
    both = torch.logaddexp(lse, block_lse)
    return out * torch.exp(lse - both)[..., None] + block_out * torch.exp(block_lse - both)[..., None], both


def block_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lse: torch.Tensor, dout: torch.Tensor,
                   delta: torch.Tensor, diagonal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV of one chunk pair (FlashAttention-2's backward): the probabilities are
    recomputed from the scores and the final log-sum-exp; delta = rowsum(dO * O)."""
    p = torch.exp(scores(q, k, diagonal) - lse[..., None])
    dv = torch.einsum("bkgqs,bkgqd->bksd", p, dout)  # summed over the query heads of a group
    ds = p * (torch.einsum("bkgqd,bksd->bkgqs", dout, v) - delta[..., None]) * SCALE
    return torch.einsum("bkgqs,bksd->bkgqd", ds, k), torch.einsum("bkgqs,bkgqd->bksd", ds, q), dv


def unmasked_pairs(mine: tuple[int, ...], theirs: tuple[int, ...]) -> Iterator[tuple[int, int, bool]]:
    """(i, j, diagonal) for my query chunk i and their key chunk j that the causal mask
    does not hide entirely: key chunk before the query chunk (all), or the same (half)."""
    for i, qc in enumerate(mine):
        for j, kc in enumerate(theirs):
            if kc <= qc:
                yield i, j, kc == qc
# --8<-- [end:blocks]


# --8<-- [start:ring]
SENT = {"forward": 0, "backward": 0}  # bytes this rank sent to the next one, per pass
WORK: list[float] = []  # this rank's work at each ring step of the last forward, in blocks


def pass_on(t: torch.Tensor, phase: str, tag: int) -> tuple[list, torch.Tensor]:
    """Send t to the next rank of the ring and receive the previous rank's, without
    waiting: returns (requests to wait on, the tensor being received)."""
    rank, cp = dist.get_rank(), dist.get_world_size()
    received = torch.empty_like(t)
    requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, (rank + 1) % cp, tag=tag),
                                       dist.P2POp(dist.irecv, received, (rank - 1) % cp, tag=tag)])
    SENT[phase] += t.numel() * t.element_size()
    return requests, received


def wait(requests: list) -> None:
    for request in requests:
        request.wait()


class RingAttention(torch.autograd.Function):
    """Causal attention of this rank's queries over every rank's keys and values. At step
    k rank r holds the K/V block of rank (r - k) mod cp, and passes it on while it computes."""

    @staticmethod
    def forward(ctx, q, k, v, layout):
        rank, cp, kv_heads = dist.get_rank(), dist.get_world_size(), k.shape[1]
        mine = layout[rank]
        qs = [grouped(c, kv_heads) for c in q.chunk(len(mine), dim=2)]
        partial = [None] * len(mine)
        block = torch.stack((k, v))  # one message per step: [2, b, kv, s/cp, d]
        WORK.clear()
        for step in range(cp):
            if step < cp - 1:
                requests, incoming = pass_on(block, "forward", tag=0)  # the next block travels meanwhile
            theirs = layout[(rank - step) % cp]
            ks, vs = block[0].chunk(len(theirs), dim=2), block[1].chunk(len(theirs), dim=2)
            work = 0.0
            for i, j, diagonal in unmasked_pairs(mine, theirs):
                partial[i] = merge(partial[i], block_forward(qs[i], ks[j], vs[j], diagonal))
                work += 0.5 if diagonal else 1.0
            WORK.append(work / (len(mine) * len(theirs)))  # a block: s/cp queries by s/cp keys
            if step < cp - 1:
                wait(requests)
                block = incoming
        out = torch.cat([o for o, _ in partial], dim=3)
        lse = torch.cat([s for _, s in partial], dim=3)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.layout = layout
        return out.reshape(q.shape)

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        rank, cp, kv_heads = dist.get_rank(), dist.get_world_size(), k.shape[1]
        mine = ctx.layout[rank]
        n = len(mine)
        dout = grouped(dout, kv_heads)
        delta = (dout * out).sum(-1)
        qs, dos = grouped(q, kv_heads).chunk(n, dim=3), dout.chunk(n, dim=3)
        lses, deltas = lse.chunk(n, dim=3), delta.chunk(n, dim=3)
        dq = [torch.zeros_like(c) for c in qs]
        block = torch.stack((k, v))
        for step in range(cp):
            if step < cp - 1:
                requests, incoming = pass_on(block, "backward", tag=1)  # K/V go round again
            theirs = ctx.layout[(rank - step) % cp]
            ks, vs = block[0].chunk(len(theirs), dim=2), block[1].chunk(len(theirs), dim=2)
            grads = torch.zeros_like(block)  # this rank's share of dK, dV of the block it holds
            dks, dvs = grads[0].chunk(len(theirs), dim=2), grads[1].chunk(len(theirs), dim=2)
            for i, j, diagonal in unmasked_pairs(mine, theirs):
                dq_, dk_, dv_ = block_backward(qs[i], ks[j], vs[j], lses[i], dos[i], deltas[i], diagonal)
                dq[i] += dq_
                dks[j].add_(dk_)  # views of `grads`
                dvs[j].add_(dv_)
            if step == 0:
                own = grads  # the gradient of my own block: it stays here
            else:
                if step > 1:  # what the ranks before me added to this block's gradient
                    wait(grad_requests)
                    grads += grad_incoming
                # on to the next holder of this block; after the last step, to its owner
                grad_requests, grad_incoming = pass_on(grads, "backward", tag=2)
            if step < cp - 1:
                wait(requests)
                block = incoming
        if cp > 1:
            wait(grad_requests)
            own = own + grad_incoming  # every other rank's share of my block's gradient
        dq = torch.cat(dq, dim=3).reshape(q.shape)
        return dq, own[0], own[1], None
# --8<-- [end:ring]


def run_ring(inputs: dict[str, torch.Tensor], split: str) -> dict:
    rank, cp = dist.get_rank(), dist.get_world_size()
    layout = rank_chunks(cp, split)
    parts = sum(len(c) for c in layout)
    q, k, v = (shard(inputs[n], layout[rank], parts).requires_grad_() for n in ("q", "k", "v"))
    SENT.update(forward=0, backward=0)
    out = RingAttention.apply(q, k, v, layout)
    forward = SENT["forward"]
    out.backward(shard(inputs["dout"], layout[rank], parts))
    return {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad, "chunks": layout[rank], "parts": parts,
            "sent_forward": forward, "sent_backward": SENT["backward"], "work": list(WORK)}


def ring_checks(split: str, runs: list[dict], cp: int, seq_len: int, micro_batch: int) -> list[tuple]:
    """The ring's checks from every rank's run. A K/V block: 2 · (s/cp) · b · KV_HEADS · d
    numbers; forward cp - 1 blocks, backward the blocks again and their gradients."""
    block = 2 * seq_len // cp * micro_batch * KV_HEADS * HEAD_DIM * DTYPE_BYTES
    # Work in blocks: balanced 1/2 per step for every rank; contiguous, rank r 1/2 on its
    # own block and 1 on each of the r earlier ranks' blocks (cp - 1/2 for the last).
    per_rank = [cp / 2 if split == "balanced" else r + 0.5 for r in range(cp)]
    busiest_step = 0.5 if split == "balanced" or cp == 1 else 1.0
    checks = [(f"ring {split}: max |{name} - one process|", max(run[f"diff_{name}"] for run in runs), TOLERANCE)
              for name in ("output", "dQ", "dK", "dV")]
    checks += [
        (f"ring {split}: bytes sent per rank, forward (K/V blocks)", every(runs, "sent_forward"), (cp - 1) * block),
        (f"ring {split}: bytes sent per rank, backward (K/V and dK/dV)", every(runs, "sent_backward"), 2 * (cp - 1) * block),
    ]
    checks += [(f"ring {split}: rank {r}'s work over the {cp} steps (blocks)", sum(run["work"]), per_rank[r])
               for r, run in enumerate(runs)]
    checks += [
        (f"ring {split}: most work of a rank in one step (blocks)", max(max(run["work"]) for run in runs), busiest_step),
        (f"ring {split}: sum over steps of the busiest rank's work (blocks)",
         sum(max(run["work"][k] for run in runs) for k in range(cp)), max(per_rank)),
    ]
    return checks


# --8<-- [start:ulysses]
ALL_TO_ALL: list[tuple[str, int]] = []  # (pass, bytes sent to the other ranks) of each all-to-all


def all_to_all(parts: torch.Tensor, phase: str) -> torch.Tensor:
    """parts[j] goes to rank j; returns what every rank sent here, in rank order. The
    part a rank keeps for itself is not sent: cp - 1 parts leave."""
    parts = parts.contiguous()
    received = torch.empty_like(parts)
    dist.all_to_all_single(received, parts)
    ALL_TO_ALL.append((phase, (parts.shape[0] - 1) * parts[0].numel() * parts.element_size()))
    return received


def seq_to_heads(x: torch.Tensor, phase: str) -> torch.Tensor:
    """[b, heads, s/cp, d] (my tokens, every head) -> [b, heads/cp, s, d] (every token, my heads)."""
    cp, (b, n, t, d) = dist.get_world_size(), x.shape
    got = all_to_all(x.reshape(b, cp, n // cp, t, d).transpose(0, 1), phase)  # part j: rank j's heads
    return got.permute(1, 2, 0, 3, 4).reshape(b, n // cp, cp * t, d)  # got[j]: rank j's tokens, in order


def heads_to_seq(x: torch.Tensor, phase: str) -> torch.Tensor:
    """[b, heads/cp, s, d] (every token, my heads) -> [b, heads, s/cp, d] (my tokens, every head)."""
    cp, (b, m, s, d) = dist.get_world_size(), x.shape
    got = all_to_all(x.reshape(b, m, cp, s // cp, d).permute(2, 0, 1, 3, 4), phase)  # part j: rank j's tokens
    return got.transpose(0, 1).reshape(b, cp * m, s // cp, d)  # got[j]: my tokens of rank j's heads


class SeqToHeads(torch.autograd.Function):
    """All-to-all from sequence-sharded to head-sharded; backward, the way back."""

    @staticmethod
    def forward(ctx, x):
        return seq_to_heads(x, "forward")

    @staticmethod
    def backward(ctx, grad):
        return heads_to_seq(grad, "backward")


class HeadsToSeq(torch.autograd.Function):
    """All-to-all from head-sharded to sequence-sharded; backward, the way back."""

    @staticmethod
    def forward(ctx, x):
        return heads_to_seq(x, "forward")

    @staticmethod
    def backward(ctx, grad):
        return seq_to_heads(grad, "backward")


def ulysses_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal attention of my s/cp tokens: Q, K, V to whole heads, attention as on one
    process (every token of HEADS/cp query and KV_HEADS/cp K/V heads), the output back."""
    q, k, v = (SeqToHeads.apply(t) for t in (q, k, v))
    return HeadsToSeq.apply(causal_attention(q, k, v))
# --8<-- [end:ulysses]


def run_ulysses(inputs: dict[str, torch.Tensor]) -> dict:
    rank, cp = dist.get_rank(), dist.get_world_size()
    q, k, v = (shard(inputs[n], (rank,), cp).requires_grad_() for n in ("q", "k", "v"))
    ALL_TO_ALL.clear()
    out = ulysses_attention(q, k, v)
    out.backward(shard(inputs["dout"], (rank,), cp))
    sent = {phase: sum(b for p, b in ALL_TO_ALL if p == phase) for phase in ("forward", "backward")}
    calls = {phase: sum(1 for p, _ in ALL_TO_ALL if p == phase) for phase in ("forward", "backward")}
    return {"out": out.detach(), "dq": q.grad, "dk": k.grad, "dv": v.grad, "chunks": (rank,), "parts": cp,
            "sent_forward": sent["forward"], "sent_backward": sent["backward"],
            "calls_forward": calls["forward"], "calls_backward": calls["backward"]}


def ulysses_checks(runs: list[dict], cp: int, seq_len: int, micro_batch: int) -> list[tuple]:
    """Ulysses' checks: four all-to-alls each way (Q, K, V, then O), each sending
    (cp - 1)/cp of the local tensor: (cp - 1)/cp · (s/cp) · b · (2·a + 2·kv) · d numbers."""
    sent = (cp - 1) * (seq_len // cp) * micro_batch * (2 * HEADS + 2 * KV_HEADS) * HEAD_DIM * DTYPE_BYTES // cp
    checks = [(f"ulysses: max |{name} - one process|", max(run[f"diff_{name}"] for run in runs), TOLERANCE)
              for name in ("output", "dQ", "dK", "dV")]
    return checks + [
        ("ulysses: all-to-alls, forward (Q, K, V, O)", every(runs, "calls_forward"), 4),
        ("ulysses: all-to-alls, backward", every(runs, "calls_backward"), 4),
        ("ulysses: bytes sent per rank, forward", every(runs, "sent_forward"), sent),
        ("ulysses: bytes sent per rank, backward", every(runs, "sent_backward"), sent),
    ]


def every(runs: list[dict], key: str) -> float:
    """A count every rank should measure alike: the one value, or -1 if the ranks differ."""
    values = {run[key] for run in runs}
    return values.pop() if len(values) == 1 else -1


def differences(run: dict, reference: dict[str, torch.Tensor]) -> dict:
    """This rank's largest |difference| from the matching tokens of one process; the
    bulky tensors are dropped before the runs are gathered on rank 0."""
    names = {"out": "output", "dq": "dQ", "dk": "dK", "dv": "dV"}
    diffs = {f"diff_{label}": (run.pop(key) - shard(reference[key], run["chunks"], run["parts"])).abs().max().item()
             for key, label in names.items()}
    return {**run, **diffs}


def gathered(run: dict) -> list[dict]:
    runs = [None] * dist.get_world_size()
    dist.all_gather_object(runs, run)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description="Context parallelism by hand: ring attention and DeepSpeed-Ulysses.")
    parser.add_argument("--seq-len", type=int, default=SEQ_LEN, help="tokens of the sequence, a multiple of 2·cp")
    parser.add_argument("--micro-batch", type=int, default=MICRO_BATCH, help="sequences")
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, cp = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if args.seq_len % (2 * cp) or KV_HEADS % cp or HEADS % KV_HEADS:
        raise SystemExit(f"{cp} ranks: 2·cp must divide the {args.seq_len} tokens and cp the {KV_HEADS} K/V heads "
                         f"(which must divide the {HEADS} query heads)")

    inputs = data(args.seq_len, args.micro_batch, device)
    reference = one_process(inputs)
    checks = []
    for split in ("balanced", "contiguous"):
        runs = gathered(differences(run_ring(inputs, split), reference))
        checks += ring_checks(split, runs, cp, args.seq_len, args.micro_batch)
    runs = gathered(differences(run_ulysses(inputs), reference))
    checks += ulysses_checks(runs, cp, args.seq_len, args.micro_batch)
    results = [{"name": name, "measured": measured, "expected": expected,
                "ok": bool(measured <= expected if "max |" in name else measured == expected)}
               for name, measured, expected in checks]

    if rank == 0:
        print(f"context parallelism on {cp} ranks ({dist.get_backend()}): [b, s] = [{args.micro_batch}, {args.seq_len}], "
              f"{HEADS} query heads and {KV_HEADS} K/V heads of {HEAD_DIM}, {args.seq_len // cp} tokens per rank; "
              f"balanced chunks {rank_chunks(cp, 'balanced')}")
        for r in results:
            relation = "<= " if "max |" in r["name"] else ""
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {r['measured']:g} (expected {relation}{r['expected']:g})")
        if args.json:
            report = {"lab": "context_parallel", "world_size": cp, "backend": dist.get_backend(),
                      "config": {"seq_len": args.seq_len, "micro_batch": args.micro_batch, "heads": HEADS,
                                 "kv_heads": KV_HEADS, "head_dim": HEAD_DIM, "dtype_bytes": DTYPE_BYTES,
                                 "tolerance": TOLERANCE},
                      "checks": results}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
