"""Lab: pipeline parallelism by hand (GPipe and 1F1B) and with torch.distributed.pipelining.

    torchrun --nproc_per_node=4 examples/pipeline_parallel.py [--microbatches 8] [--json out.json]

One process per stage (2 or 4 processes work): a small GPT in Megatron's layout is cut
into p stages of whole transformer blocks. The first stage also holds the embeddings,
the last the final LayerNorm, the output head and the loss. The global batch is split
into m micro-batches; activations go forward and their gradients go back with
`dist.isend` / `dist.irecv` between neighbouring stages.

The head is tied to the word embedding, which now lives on two processes (first and last
stage). As in Megatron-LM, each keeps a copy of the matrix and, after backward, the two
copies' gradients are all-reduced within a group of those two ranks, so both hold the
gradient one process would compute for the shared matrix.

Four runs of one training step, each compared with one process on the whole batch:

  hand gpipe    all m forwards, then all m backwards (Huang et al. 2018);
  hand 1f1b     stage s runs p - s - 1 warm-up forwards, then one forward and one
                backward in turn, then the remaining backwards (PipeDream-Flush,
                Narayanan et al. 2021, Sec. 2.2.1; Megatron's loop);
  torch gpipe   torch.distributed.pipelining: PipelineStage + ScheduleGPipe;
  torch 1f1b    PipelineStage + Schedule1F1B.

Checks (printed; rank 0 writes them with --json): the loss and every gradient equal one
process's on the whole batch; each stage's order of forward (F) and backward (B) passes
as it ran; the most micro-batches whose activations a stage's autograd graph held at
once (counted with saved-tensor hooks: a micro-batch counts while any tensor saved for
its backward is alive); the bytes each stage sent forward and back; and that every
micro-batch's activations are freed by the end of the step. Exits 1 if a check fails.

Beside the checks, a finding: the static action table each torch schedule publishes
(`schedule.pipeline_order`, used by its visualizer, not by these schedules' own loop),
next to the order that ran. In torch 2.13 the 1F1B table of the last stage numbers its
forwards 1..m instead of 0..m-1, while the schedule itself runs F0 B0 F1 B1 ... as it
should. PyTorch only: gloo on a CPU, NCCL on GPUs.
"""

from __future__ import annotations

import argparse
import copy
import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

# A small GPT in Megatron's layout (Shoeybi et al. 2019): learned positions, pre-LN
# blocks with one fused QKV projection, a 4h MLP with GELU, a final LayerNorm and an
# output head tied to the word embedding. Tiny, so four processes finish quickly.
LAYERS, HIDDEN, HEADS, VOCAB, SEQ_LEN = 4, 32, 4, 128, 16
GLOBAL_BATCH = 16  # sequences per step
MICROBATCHES = 8  # m: the global batch is cut into m micro-batches of GLOBAL_BATCH / m
INIT_SEED, DATA_SEED = 1234, 99
# Largest relative difference of the loss and largest |difference| of a gradient from one
# process. fp32 sums in another order: the loss (about 22 at PyTorch's default init)
# differs by 1.5e-7 of itself (one or two ulps), gradients (up to 0.93) by 3e-7.
TOLERANCE = 1e-5


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


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def build(device: torch.device) -> GPT:
    torch.manual_seed(INIT_SEED)
    return GPT().to(device)


def batch(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The same global batch on every rank: (inputs, next-token targets)."""
    seq = torch.randint(0, VOCAB, (GLOBAL_BATCH, SEQ_LEN + 1), generator=torch.Generator().manual_seed(DATA_SEED))
    return seq[:, :-1].to(device), seq[:, 1:].to(device)


def one_process(x: torch.Tensor, y: torch.Tensor, device: torch.device) -> tuple[float, dict[str, torch.Tensor]]:
    """The reference: the whole model on the whole batch, no communication."""
    model = build(device)
    loss = cross_entropy(model(x), y)
    loss.backward()
    return loss.item(), {name: p.grad for name, p in model.named_parameters()}


# --8<-- [start:stage]
def stage_layers(layers: int, stages: int) -> list[tuple[int, int]]:
    """(first, last) block of each stage: contiguous, the first L mod p stages one longer."""
    base, extra = divmod(layers, stages)
    out, first = [], 0
    for s in range(stages):
        count = base + (s < extra)
        out.append((first, first + count - 1))
        first += count
    return out


class Stage(nn.Module):
    """Stage s of p, cut out of a whole GPT (copies of its modules, so every stage starts
    from the weights one process would have). Parameter names stay the whole model's
    (blocks.2.qkv.weight), except the last stage's copy of the word embedding, head.weight."""

    def __init__(self, gpt: GPT, s: int, p: int) -> None:
        super().__init__()
        self.is_first, self.is_last = s == 0, s == p - 1
        first, last = stage_layers(LAYERS, p)[s]
        if self.is_first:
            self.wte, self.wpe = copy.deepcopy(gpt.wte), copy.deepcopy(gpt.wpe)
        self.blocks = nn.ModuleDict({str(i): copy.deepcopy(gpt.blocks[i]) for i in range(first, last + 1)})
        if self.is_last:
            self.ln_f = copy.deepcopy(gpt.ln_f)
            # The tied head needs the word embedding here too: a second copy, whose
            # gradient is summed with the first stage's after backward (tie_gradients).
            self.head = nn.Linear(HIDDEN, VOCAB, bias=False)
            self.head.weight = nn.Parameter(gpt.wte.weight.detach().clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.is_first:  # token ids in, hidden states out
            x = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks.values():
            x = block(x)
        return self.head(self.ln_f(x)) if self.is_last else x  # logits from the last stage


def tie_gradients(stage: Stage, group: dist.ProcessGroup) -> None:
    """Megatron's embedding group: the first and last stage all-reduce the gradient of
    their two copies of the word embedding, so both take the same step."""
    if stage.is_first:
        dist.all_reduce(stage.wte.weight.grad, group=group)
    if stage.is_last:
        dist.all_reduce(stage.head.weight.grad, group=group)
# --8<-- [end:stage]


# --8<-- [start:held]
class Held:
    """Counts the micro-batches whose activations autograd holds on this stage.

    Inside `forward_of(i)`, every tensor the forward saves for backward is packed with a
    Token of micro-batch i; autograd drops the tokens when that micro-batch's backward
    frees its graph. A micro-batch is held while any of its tokens is alive, so the
    count is what autograd really keeps, not what the schedule's code intends."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}  # micro-batch -> saved tensors still alive
        self.peak = 0

    def forward_of(self, i: int) -> torch.autograd.graph.saved_tensors_hooks:
        held = self

        class Token:
            def __init__(self) -> None:
                held.live[i] = held.live.get(i, 0) + 1
                held.peak = max(held.peak, len(held.live))

            def __del__(self) -> None:
                held.live[i] -= 1
                if held.live[i] == 0:
                    del held.live[i]

        return torch.autograd.graph.saved_tensors_hooks(lambda t: (Token(), t), lambda packed: packed[1])
# --8<-- [end:held]


def textbook_order(schedule: str, p: int, s: int, m: int) -> list[str]:
    """The order the papers give for stage s: GPipe all F then all B; 1F1B p - s - 1
    warm-up forwards, then F and B in turn, then the remaining Bs."""
    if schedule == "gpipe":
        return [f"F{i}" for i in range(m)] + [f"B{i}" for i in range(m)]
    warmup = min(p - s - 1, m)
    order = [f"F{i}" for i in range(warmup)]
    for i in range(m - warmup):
        order += [f"F{warmup + i}", f"B{i}"]
    return order + [f"B{i}" for i in range(m - warmup, m)]


# --8<-- [start:hand]
def hand_step(stage: Stage, schedule: str, x: torch.Tensor, y: torch.Tensor, m: int,
              held: Held) -> tuple[float | None, list[str], int, int]:
    """One training step of `schedule` ("gpipe" or "1f1b") on this rank's stage. Returns
    the loss (last stage), the order of passes, and the bytes sent forward and back."""
    s, p = dist.get_rank(), dist.get_world_size()
    xs, ys = x.chunk(m), y.chunk(m)
    shape = (GLOBAL_BATCH // m, SEQ_LEN, HIDDEN)
    saved: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # micro-batch -> (input, output)
    sends: list[tuple[dist.Work, torch.Tensor]] = []  # isend needs its tensor alive until wait()
    order, losses, sent = [], [], {"F": 0, "B": 0}

    def send(t: torch.Tensor, to: int, kind: str) -> None:
        # Non-blocking: in 1F1B two neighbours may both send before they receive.
        sends.append((dist.isend(t, dst=to), t))
        sent[kind] += t.numel() * t.element_size()

    def receive(frm: int) -> torch.Tensor:
        t = torch.empty(shape, device=x.device)
        dist.irecv(t, src=frm).wait()
        return t

    def forward(i: int) -> None:
        inp = xs[i] if stage.is_first else receive(s - 1).requires_grad_()
        with held.forward_of(i):
            out = stage(inp)
            if stage.is_last:
                loss = cross_entropy(out, ys[i])
                losses.append(loss.item())
                out = loss / m  # mean over micro-batches = the whole batch's mean
        if not stage.is_last:
            send(out.detach(), s + 1, "F")
        saved[i] = (inp, out)
        order.append(f"F{i}")

    def backward(i: int) -> None:
        inp, out = saved.pop(i)
        out.backward(None if stage.is_last else receive(s + 1))  # frees micro-batch i's graph
        if not stage.is_first:
            send(inp.grad, s - 1, "B")
        order.append(f"B{i}")

    if schedule == "gpipe":
        for i in range(m):
            forward(i)
        for i in range(m):
            backward(i)
    else:  # 1F1B as in Megatron's forward_backward_pipelining_without_interleaving
        warmup = min(p - s - 1, m)
        for i in range(warmup):
            forward(i)
        for i in range(m - warmup):  # steady state: one forward, one backward
            forward(warmup + i)
            backward(i)
        for i in range(m - warmup, m):  # cool-down
            backward(i)
    for work, _ in sends:
        work.wait()
    return (sum(losses) / m if stage.is_last else None), order, sent["F"], sent["B"]
# --8<-- [end:hand]


# --8<-- [start:torch]
def torch_step(stage: Stage, schedule: str, x: torch.Tensor, y: torch.Tensor, m: int, held: Held,
               device: torch.device) -> tuple[float | None, list[str], dict[int, list[str]]]:
    """The same step with torch.distributed.pipelining. Returns the loss (last stage), the
    order of passes as they ran, and the schedule's own action table of every rank."""
    s, p = dist.get_rank(), dist.get_world_size()
    # Static shapes: without input_args / output_args the stage infers them on the first
    # step, running one extra forward per stage and sending pickled metadata between
    # ranks (send_object_list, which needs numpy).
    mb = GLOBAL_BATCH // m
    # requires_grad on the hidden states: the stage then receives their gradient back.
    hidden = torch.empty(mb, SEQ_LEN, HIDDEN, device=device, requires_grad=True)
    inputs = torch.zeros(mb, SEQ_LEN, dtype=torch.long, device=device) if stage.is_first else hidden
    outputs = torch.empty(mb, SEQ_LEN, VOCAB, device=device, requires_grad=True) if stage.is_last else hidden
    pipe = PipelineStage(stage, stage_index=s, num_stages=p, device=device, input_args=inputs, output_args=outputs)
    cls = ScheduleGPipe if schedule == "gpipe" else Schedule1F1B
    # Each micro-batch's loss is a mean; scale_grads (the default) divides the summed
    # gradients by m, so they are the whole batch's mean, as in hand_step.
    sched = cls(pipe, n_microbatches=m, loss_fn=cross_entropy)
    order: list[str] = []
    forward_one_chunk, backward_one_chunk = pipe.forward_one_chunk, pipe.backward_one_chunk

    def recorded_forward(i, *args, **kwargs):  # the schedule calls these once per micro-batch
        with held.forward_of(i):
            out = forward_one_chunk(i, *args, **kwargs)
        order.append(f"F{i}")
        return out

    def recorded_backward(i, *args, **kwargs):
        out = backward_one_chunk(i, *args, **kwargs)
        order.append(f"B{i}")
        return out

    pipe.forward_one_chunk, pipe.backward_one_chunk = recorded_forward, recorded_backward
    losses: list[torch.Tensor] = []
    if stage.is_first:
        sched.step(x)
    elif stage.is_last:
        sched.step(target=y, losses=losses)
    else:
        sched.step()
    # The static table: None marks an idle slot, REDUCE_GRAD the gradient scaling.
    table = {rank: [f"{a.computation_type.value}{a.microbatch_index}" for a in actions
                    if a is not None and a.computation_type.value in ("F", "B")]
             for rank, actions in (sched.pipeline_order or {}).items()}
    loss = sum(t.item() for t in losses) / m if stage.is_last else None
    return loss, order, table
# --8<-- [end:torch]


def compare(stage: Stage, loss: float | None, reference_loss: float, reference_grads: dict) -> tuple[float, float]:
    """(|loss / one process - 1|, max |gradient - one process|) over all stages."""
    src = dist.get_world_size() - 1
    t = torch.tensor([loss if loss is not None else 0.0], dtype=torch.float64, device=reference_grads["wte.weight"].device)
    dist.broadcast(t, src=src)  # the loss lives on the last stage
    worst = torch.zeros(1, device=t.device)
    for name, param in stage.named_parameters():
        ref = reference_grads["wte.weight" if name == "head.weight" else name]
        worst = torch.maximum(worst, (param.grad - ref).abs().max().reshape(1))
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return abs(t.item() / reference_loss - 1), worst.item()


def gather(values: list[int]) -> list[list[int]]:
    """Every rank's list of integers (all the same length), in rank order. Tensors, not
    all_gather_object, which needs numpy."""
    mine = torch.tensor(values, dtype=torch.int64, device="cuda" if dist.get_backend() == "nccl" else "cpu")
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    return [t.tolist() for t in every]


def encode(order: list[str], m: int) -> list[int]:
    """F i -> i, B i -> m + i, padded to 2m with -1."""
    codes = [int(e[1:]) + (m if e[0] == "B" else 0) for e in order]
    return codes + [-1] * (2 * m - len(codes))


def decode(codes: list[int]) -> str:
    m = len(codes) // 2
    return " ".join(f"B{c - m}" if c >= m else f"F{c}" for c in codes if c >= 0)


def show(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description="GPipe and 1F1B by hand and with torch.distributed.pipelining.")
    parser.add_argument("--microbatches", type=int, default=MICROBATCHES, help="m; must divide the global batch")
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()
    m = args.microbatches

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, p = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)  # "cuda" below (gather) is then this rank's GPU
    if not 2 <= p <= LAYERS or GLOBAL_BATCH % m or m < p:
        # Schedule1F1B refuses fewer micro-batches than stages; each stage needs a block.
        raise SystemExit(f"needs 2 to {LAYERS} processes and p <= m, m dividing {GLOBAL_BATCH}: p={p}, m={m}")
    embedding_group = dist.new_group([0, p - 1])  # every rank calls new_group, even outside it

    x, y = batch(device)
    reference_loss, reference_grads = one_process(x, y, device)
    gpt = build(device)
    activation_bytes = (GLOBAL_BATCH // m) * SEQ_LEN * HIDDEN * 4  # one micro-batch's fp32 hidden states

    checks = []  # (name, measured, expected, ok)
    findings = []  # torch's published action tables beside the order that ran

    def check(name: str, measured, expected, ok=None) -> None:
        checks.append((name, measured, expected, measured == expected if ok is None else ok))

    mine = [int(k) for k in Stage(gpt, rank, p).blocks]
    blocks = gather([mine[0], mine[-1]])
    for s, (first, last) in enumerate(stage_layers(LAYERS, p)):
        check(f"stage {s}: blocks (first, last)", blocks[s], [first, last])

    for impl in ("hand", "torch"):
        for schedule in ("gpipe", "1f1b"):
            stage, held = Stage(gpt, rank, p), Held()
            if impl == "hand":
                loss, order, fwd_bytes, bwd_bytes = hand_step(stage, schedule, x, y, m, held)
            else:
                loss, order, table = torch_step(stage, schedule, x, y, m, held, device)
            if rank in (0, p - 1):  # only the group's members call its collective
                tie_gradients(stage, embedding_group)
            dloss, dgrad = compare(stage, loss, reference_loss, reference_grads)
            tag = f"{impl} {schedule}"
            check(f"{tag}: |loss / one process - 1|", dloss, TOLERANCE, dloss <= TOLERANCE)
            check(f"{tag}: max |gradient - one process|", dgrad, TOLERANCE, dgrad <= TOLERANCE)
            orders = [decode(o) for o in gather(encode(order, m))]
            for s in range(p):
                check(f"{tag}: stage {s} order", orders[s], " ".join(textbook_order(schedule, p, s, m)))
            peaks = gather([held.peak])
            for s in range(p):
                # GPipe holds all m; 1F1B at most p - s on stage s (its warm-up plus one).
                expected = m if schedule == "gpipe" else min(p - s, m)
                check(f"{tag}: stage {s} peak micro-batches held", peaks[s][0], expected)
            left = [n for n, in gather([len(held.live)])]
            check(f"{tag}: micro-batches still held after the step", left, [0] * p)
            if impl == "hand":
                sent = gather([fwd_bytes, bwd_bytes])
                check(f"{tag}: bytes sent forward per stage", [f for f, _ in sent],
                      [m * activation_bytes] * (p - 1) + [0])
                check(f"{tag}: bytes sent back per stage", [b for _, b in sent],
                      [0] + [m * activation_bytes] * (p - 1))
            else:
                # A finding, not a check: the table only describes the schedule (torch's
                # visualizer and runtime schedules read it); these two schedules run
                # their own loop, so a wrong table cannot make the step wrong.
                for s in range(p):
                    published = " ".join(table.get(s, []))
                    findings.append({"name": f"{tag}: stage {s} pipeline_order table", "table": published,
                                     "ran": orders[s], "same": published == orders[s]})

    results = [{"name": n, "measured": v, "expected": e, "ok": bool(ok)} for n, v, e, ok in checks]
    if rank == 0:
        print(f"pipeline parallelism on {p} stages ({dist.get_backend()}), {m} micro-batches of "
              f"{GLOBAL_BATCH // m} x {SEQ_LEN} tokens, {LAYERS} blocks, one training step per run; one process's loss {reference_loss:.4f}")
        for r in results:
            # Equal values are printed once; a bound or a difference shows the expected value.
            relation = "<= " if "|" in r["name"] else ""
            expected = "" if r["measured"] == r["expected"] else f" (expected {relation}{show(r['expected'])})"
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {show(r['measured'])}{expected}")
        print("  torch's static action tables (schedule.pipeline_order), beside the order that ran:")
        for f in findings:
            print(f"  {'same' if f['same'] else 'DIFF'} {f['name']}: "
                  + ("as ran" if f["same"] else f"{f['table']} (ran {f['ran']})"))
        if args.json:
            report = {"lab": "pipeline_parallel", "world_size": p, "backend": dist.get_backend(),
                      "config": {"layers": LAYERS, "hidden": HIDDEN, "heads": HEADS, "vocab": VOCAB,
                                 "seq_len": SEQ_LEN, "global_batch": GLOBAL_BATCH, "microbatches": m,
                                 "activation_dtype_bytes": 4},
                      "checks": results, "findings": findings}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
