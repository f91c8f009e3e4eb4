"""Lab: expert parallelism by hand, a mixture-of-experts layer whose experts live on different ranks.

    torchrun --nproc_per_node=4 examples/expert_parallel.py [--json out.json]

A mixture-of-experts (MoE) layer replaces one MLP by E expert MLPs and a router
(Shazeer et al. 2017, Sec. 2.1): a linear map without bias gives each token E logits,
softmax and top-k pick its k experts, and the layer's output is the sum of those
experts' outputs weighted by their (renormalized, as in Mixtral) probabilities. Experts
are SwiGLU MLPs (gate, up, down, no biases; Shazeer 2020).

Expert parallelism (GShard, Lepikhin et al. 2020, Sec. 3; Switch Transformer, Fedus et
al. 2021, Fig. 3): the ep = world-size ranks each hold E/ep experts (rank g holds
experts g·E/ep ... (g+1)·E/ep - 1) and T tokens of their own; the router is replicated.
Each rank sorts its token copies (one row per token and chosen expert) by expert, hence
by destination rank, tells every rank how many rows of each expert it will get (an
all-to-all of the counts), sends them (dispatch: all_to_all_single with uneven splits),
runs its experts on what arrived, and sends the results back (combine: the reverse
all-to-all), where each token adds its k results weighted by its gates. In the backward
pass each all-to-all runs reversed: dispatch's backward sends gradients the combine way
and combine's the dispatch way (an autograd.Function around all_to_all_single).

Three runs of the same layer: the router's own routing (a seeded, untrained router
standing in for a trained one); a fixed balanced routing (token i to experts
(i·k + j) mod E, j < k, the same load on every expert); and the router's routing with
expert capacity C = ⌈k·T_total/E · capacity factor⌉ (Switch Sec. 2.2): an expert keeps
the first C copies in token order and drops the rest (their rows go back as zeros).

Checks (printed, and written by rank 0 with --json): every run's output, input gradient,
router gradient and expert gradients equal those of one process computing the whole
MoE layer (at most 1e-5 in fp32); the routing equals one process's; the token copies
each rank sends each rank (the dispatch matrix), the bytes each rank sends forward and
backward, the tokens per expert, the copies kept and dropped under capacity; the
balanced run's bytes per rank, T·k·h·(ep-1)/ep elements per all-to-all, four of them;
the parameters a rank holds. The JSON report also carries the routings ("routing": each
token's experts, in rank order) so the book's test can recompute the counts and bytes
with its own formulas. Exits 1 if a check fails. PyTorch only: gloo on a CPU, NCCL on GPUs.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# One MoE layer in the layout of Mixtral and DeepSeek-V3: a bias-free linear router,
# top-k of its softmax, SwiGLU experts. TOKENS is one rank's tokens (micro-batch ×
# sequence, flattened: the MoE layer sees every token on its own).
HIDDEN, MOE_FFN = 32, 64
EXPERTS, TOP_K = 8, 2
TOKENS = 32  # per rank; TOKENS · TOP_K must be a multiple of EXPERTS for the balanced routing
CAPACITY_FACTOR = 1.0  # expert capacity C = ceil(TOP_K · all tokens / EXPERTS · CAPACITY_FACTOR)
DTYPE_BYTES = 4  # fp32 activations and gradients
INIT_SEED, DATA_SEED = 1234, 99
TOLERANCE = 1e-5  # largest |difference| from one process (fp32, summation order)


# --8<-- [start:moe]
class Expert(nn.Module):
    """A SwiGLU MLP: down(silu(gate(x)) * up(x)), no biases; 3·h·f parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(HIDDEN, MOE_FFN, bias=False)
        self.up = nn.Linear(HIDDEN, MOE_FFN, bias=False)
        self.down = nn.Linear(MOE_FFN, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class MoE(nn.Module):
    """The whole layer on one process: the reference."""

    def __init__(self) -> None:
        super().__init__()
        self.router = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(EXPERTS))

    def forward(self, x: torch.Tensor, fixed: torch.Tensor | None = None,
                capacity: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        chosen, gates = route(self.router, x, fixed)
        y = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)  # the copies of expert e, in token order
            if capacity is not None:
                token, slot = token[:capacity], slot[:capacity]  # the first C are kept, the rest dropped
            y = y.index_add(0, token, gates[token, slot, None] * expert(x[token]))
        return y, chosen


def route(router: nn.Linear, x: torch.Tensor, fixed: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k gating: each token's k most probable experts ([T, k], best first, or the
    experts `fixed` names) and their probabilities renormalized to sum to 1 (Mixtral)."""
    probs = F.softmax(router(x), dim=-1)
    chosen = probs.topk(TOP_K, dim=-1).indices if fixed is None else fixed
    gates = probs.gather(-1, chosen)
    return chosen, gates / gates.sum(-1, keepdim=True)
# --8<-- [end:moe]


def build(device: torch.device) -> MoE:
    torch.manual_seed(INIT_SEED)
    return MoE().to(device)


# --8<-- [start:all_to_all]
# Every all-to-all of a token's rows is logged here: (pass, which one, bytes this rank
# sends to other ranks). The rows a rank keeps for its own experts never leave it.
TRAFFIC: list[tuple[str, str, int]] = []


def _exchange(x: torch.Tensor, send: list[int], recv: list[int], phase: str, kind: str) -> torch.Tensor:
    """Rows x.split(send)[d] go to rank d; rows from rank s arrive as out.split(recv)[s]."""
    x = x.contiguous()
    me = dist.get_rank()
    TRAFFIC.append((phase, kind, sum(c.numel() * c.element_size() for d, c in enumerate(x.split(send)) if d != me)))
    out = x.new_empty((sum(recv), x.shape[1]))
    dist.all_to_all_single(out, x, output_split_sizes=recv, input_split_sizes=send)
    return out


class AllToAll(torch.autograd.Function):
    """all_to_all_single that autograd can go back through. A row's gradient must go back
    to the rank the row came from, so the backward pass is the same exchange reversed:
    the send and receive sizes swap (dispatch's backward moves the combine way)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, send: list[int], recv: list[int], kind: str) -> torch.Tensor:
        ctx.send, ctx.recv, ctx.kind = send, recv, kind
        return _exchange(x, send, recv, "forward", kind)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        return _exchange(grad, ctx.recv, ctx.send, "backward", ctx.kind), None, None, None
# --8<-- [end:all_to_all]


# --8<-- [start:expert_parallel]
class ExpertParallelMoE(nn.Module):
    """This rank's share of an MoE layer: the whole router, experts g·E/ep ... (g+1)·E/ep - 1.
    `stats` keeps what the last forward pass counted: token copies sent to and received
    from each rank, copies that arrived for each local expert (its load) and those kept."""

    def __init__(self, full: MoE, rank: int, ep: int) -> None:
        super().__init__()
        self.ep, self.per = ep, EXPERTS // ep
        self.router = copy.deepcopy(full.router)  # replicated: the same weights on every rank
        self.experts = nn.ModuleList(copy.deepcopy(full.experts[e]) for e in range(rank * self.per, (rank + 1) * self.per))
        self.stats: dict[str, list[int]] = {}

    def forward(self, x: torch.Tensor, fixed: torch.Tensor | None = None,
                capacity: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        chosen, gates = route(self.router, x, fixed)  # this rank's T tokens only
        # One row per token copy, sorted by expert and so by the rank that holds it;
        # a stable sort keeps each expert's copies in token order.
        order = chosen.reshape(-1).argsort(stable=True)
        token = order // TOP_K
        per_expert = torch.bincount(chosen.reshape(-1), minlength=EXPERTS)
        # First the counts: chunk d of per_expert (rank d's experts) goes to rank d.
        arriving = torch.empty_like(per_expert)
        dist.all_to_all_single(arriving, per_expert)
        arriving = arriving.view(self.ep, self.per)  # [source rank, my expert]
        send = per_expert.view(self.ep, self.per).sum(1).tolist()
        recv = arriving.sum(1).tolist()

        rows = AllToAll.apply(x[token], send, recv, "dispatch")
        # Rows arrive by source rank, then by expert, each group in token order.
        expert_of_row = torch.arange(self.per, device=x.device).repeat(self.ep).repeat_interleave(arriving.reshape(-1))
        out, kept = torch.zeros_like(rows), []
        for i, expert in enumerate(self.experts):
            index = (expert_of_row == i).nonzero().squeeze(1)  # source rank, then token: global token order
            if capacity is not None:
                index = index[:capacity]  # beyond C: dropped, the row goes back as zeros
            out = out.index_add(0, index, expert(rows[index]))
            kept.append(len(index))
        back = AllToAll.apply(out, recv, send, "combine")
        # Each copy is back on its token's rank: weight it by its gate and add.
        y = torch.zeros_like(x).index_add(0, token, back * gates.reshape(-1)[order, None])
        self.stats = {"send": send, "recv": recv, "load": arriving.sum(0).tolist(), "kept": kept}
        return y, chosen
# --8<-- [end:expert_parallel]


# --8<-- [start:balanced]
def balanced_routing(tokens: int, device: torch.device) -> torch.Tensor:
    """Token i goes to experts (i·k + j) mod E, j < k: when E divides T·k, every expert
    gets T·k/E copies from every rank, and every rank T·k/ep from every rank."""
    i = torch.arange(tokens, device=device)[:, None]
    return (i * TOP_K + torch.arange(TOP_K, device=device)) % EXPERTS
# --8<-- [end:balanced]


def data(tokens: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The same [T_total, h] input and upstream gradient dL/dy on every rank."""
    g = torch.Generator().manual_seed(DATA_SEED)
    x = torch.randn(tokens, HIDDEN, generator=g)
    return x.to(device), torch.randn(tokens, HIDDEN, generator=g).to(device)


def run(layer: nn.Module, x: torch.Tensor, dy: torch.Tensor, **routing) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward, then backward with dL/dy = dy; returns (y, dL/dx, the experts chosen)."""
    x = x.detach().clone().requires_grad_()
    y, chosen = layer(x, **routing)
    y.backward(dy)
    return y.detach(), x.grad, chosen


def gather(values: list[int], device: torch.device) -> list[list[int]]:
    """Every rank's list of integers (all the same length), in rank order."""
    mine = torch.tensor(values, dtype=torch.int64, device=device)
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(every, mine)
    return [t.tolist() for t in every]


def max_difference(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    return max((a - b).abs().max().item() for a, b in pairs)


def sent_bytes(phase: str, kind: str | None = None) -> int:
    return sum(b for p, k, b in TRAFFIC if p == phase and kind in (None, k))


def compare(x: torch.Tensor, dy: torch.Tensor, rank: int, ep: int, device: torch.device,
            fixed: torch.Tensor | None = None, capacity: int | None = None) -> dict:
    """The whole layer on one process (every token) and this rank's share (its T tokens),
    with the same routing rule; their largest differences, and what the share counted."""
    reference = build(device)
    y_ref, dx_ref, chosen_ref = run(reference, x, dy, fixed=fixed, capacity=capacity)
    layer = ExpertParallelMoE(build(device), rank, ep)
    mine, per = slice(rank * TOKENS, (rank + 1) * TOKENS), EXPERTS // ep  # this rank's tokens
    TRAFFIC.clear()
    y, dx, chosen = run(layer, x[mine], dy[mine], fixed=None if fixed is None else fixed[mine], capacity=capacity)
    # The router is replicated: each rank's gradient covers its own tokens only, so the
    # ranks sum them (one all-reduce of h·E values), as data parallelism would.
    router_grad = layer.router.weight.grad
    dist.all_reduce(router_grad, op=dist.ReduceOp.SUM)
    experts = [(p.grad, q.grad) for e, expert in enumerate(layer.experts)
               for p, q in zip(expert.parameters(), reference.experts[rank * per + e].parameters())]
    every = [c for r in gather(chosen.reshape(-1).tolist(), device) for c in r]
    return {
        "output": max_difference([(y, y_ref[mine])]),
        "input gradient": max_difference([(dx, dx_ref[mine])]),
        "router gradient": max_difference([(router_grad, reference.router.weight.grad)]),
        "expert gradient": max_difference(experts),
        "routing": [every[i:i + TOP_K] for i in range(0, len(every), TOP_K)],  # [token][k], rank order
        "reference routing": chosen_ref,
        **{key: gather(value, device) for key, value in layer.stats.items()},
        "sent": gather([sent_bytes("forward", "dispatch"), sent_bytes("forward", "combine"),
                        sent_bytes("backward")], device),  # per rank
        "router gradient bytes": router_grad.numel() * router_grad.element_size(),
        "held": gather([len(layer.experts), sum(p.numel() for p in layer.experts.parameters()),
                        layer.router.weight.numel()], device),
    }


def expected_counts(chosen: torch.Tensor, ep: int) -> list[list[int]]:
    """Token copies rank s sends rank d according to one process's routing, [s][d]."""
    return [torch.bincount(chosen[s * TOKENS:(s + 1) * TOKENS].reshape(-1) // (EXPERTS // ep), minlength=ep).tolist()
            for s in range(ep)]


def off_rank_bytes(counts: list[list[int]]) -> list[int]:
    """Bytes each rank sends in an all-to-all whose rows per destination are counts[s]:
    every row but those it keeps (the diagonal), h values each."""
    return [HIDDEN * DTYPE_BYTES * sum(n for d, n in enumerate(row) if d != s) for s, row in enumerate(counts)]


def flat(rows: list[list[int]]) -> list[int]:
    return [n for row in rows for n in row]


def main() -> None:
    parser = argparse.ArgumentParser(description="Expert parallelism by hand: all-to-all dispatch and combine.")
    parser.add_argument("--json", help="rank 0 writes the checks to this file")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, ep = dist.get_rank(), dist.get_world_size()
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}") if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if EXPERTS % ep or TOKENS * TOP_K % EXPERTS:
        raise SystemExit(f"{ep} ranks must divide the {EXPERTS} experts, and {EXPERTS} must divide "
                         f"{TOKENS} tokens × top-{TOP_K}")
    per, total = EXPERTS // ep, TOKENS * ep
    capacity = math.ceil(TOP_K * total / EXPERTS * CAPACITY_FACTOR)  # Switch Transformer Sec. 2.2
    x, dy = data(total, device)
    checks: list[tuple[str, object, object, bool]] = []

    def check(name: str, measured, expected) -> None:
        ok = measured <= expected if "max |" in name else measured == expected
        checks.append((name, measured, expected, ok))

    def same_as_one_process(tag: str, result: dict) -> None:
        for what in ("output", "input gradient", "router gradient", "expert gradient"):
            check(f"{tag}: max |{what} - one process|", result[what], TOLERANCE)

    # (a) The router's own routing: counts and bytes follow from the experts it picks.
    routed = compare(x, dy, rank, ep, device)
    same_as_one_process("router", routed)
    chosen = routed["reference routing"]
    check("router: tokens routed differently from one process",
          sum(a != b for a, b in zip(routed["routing"], chosen.tolist())), 0)
    counts = expected_counts(chosen, ep)
    load = torch.bincount(chosen.reshape(-1), minlength=EXPERTS).tolist()
    dispatch, combine = off_rank_bytes(counts), off_rank_bytes([list(c) for c in zip(*counts)])
    check("router: token copies each rank sends each rank (dispatch)", routed["send"], counts)
    check("router: token copies each rank receives from each rank", routed["recv"], [list(c) for c in zip(*counts)])
    check("router: token copies per expert", flat(routed["load"]), load)
    check("router: bytes sent per rank, dispatch", [d for d, _, _ in routed["sent"]], dispatch)
    check("router: bytes sent per rank, combine", [c for _, c, _ in routed["sent"]], combine)
    check("router: bytes sent per rank, backward", [b for _, _, b in routed["sent"]],
          [d + c for d, c in zip(dispatch, combine)])
    check("router gradient bytes all-reduced after backward", routed["router gradient bytes"],
          HIDDEN * EXPERTS * DTYPE_BYTES)

    # (b) A balanced routing: T·k/ep copies from every rank to every rank, (ep - 1)/ep of
    # them off-rank, in each of the four all-to-alls.
    balanced = compare(x, dy, rank, ep, device, fixed=balanced_routing(total, device))
    same_as_one_process("balanced", balanced)
    one = TOKENS * TOP_K * HIDDEN * DTYPE_BYTES * (ep - 1) // ep
    check("balanced: token copies each rank sends each rank", balanced["send"], [[TOKENS * TOP_K // ep] * ep] * ep)
    check("balanced: token copies per expert", flat(balanced["load"]), [TOP_K * total // EXPERTS] * EXPERTS)
    check("balanced: bytes sent per rank, forward (dispatch + combine)", [d + c for d, c, _ in balanced["sent"]],
          [2 * one] * ep)
    check("balanced: bytes sent per rank, backward", [b for _, _, b in balanced["sent"]], [2 * one] * ep)

    # (c) The router's routing again, with expert capacity: an expert keeps C copies.
    capped = compare(x, dy, rank, ep, device, capacity=capacity)
    same_as_one_process("capacity", capped)
    check("capacity: tokens routed differently from the router run",
          sum(a != b for a, b in zip(capped["routing"], routed["routing"])), 0)
    check("capacity: token copies each expert keeps", flat(capped["kept"]), [min(n, capacity) for n in load])
    check("capacity: token copies dropped", sum(flat(capped["load"])) - sum(flat(capped["kept"])),
          sum(max(0, n - capacity) for n in load))
    check("capacity: bytes sent per rank, forward (dropped copies still travel)",
          [d + c for d, c, _ in capped["sent"]], [d + c for d, c in zip(dispatch, combine)])

    # (d) What a rank holds: E/ep experts of 3·h·f parameters, and the whole router.
    check("experts per rank", [n for n, _, _ in routed["held"]], [per] * ep)
    check("expert parameters per rank", [n for _, n, _ in routed["held"]], [per * 3 * HIDDEN * MOE_FFN] * ep)
    check("router parameters per rank", [n for _, _, n in routed["held"]], [HIDDEN * EXPERTS] * ep)

    results = [{"name": n, "measured": m, "expected": e, "ok": bool(ok)} for n, m, e, ok in checks]
    if rank == 0:
        print(f"expert parallelism on {ep} ranks ({dist.get_backend()}): {EXPERTS} SwiGLU experts "
              f"(h {HIDDEN}, f {MOE_FFN}), {per} per rank, top-{TOP_K}, {TOKENS} tokens per rank, "
              f"capacity {capacity} per expert (factor {CAPACITY_FACTOR:g}), one token copy {HIDDEN * DTYPE_BYTES:,} bytes")
        for r in results:
            # A value equal to the expected one is printed once; a bound or a miss shows both.
            relation = "<= " if "max |" in r["name"] else ""
            expected = "" if r["measured"] == r["expected"] else f" (expected {relation}{show(r['expected'])})"
            print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['name']}: {show(r['measured'])}{expected}")
        if args.json:
            report = {"lab": "expert_parallel", "world_size": ep, "backend": dist.get_backend(),
                      "config": {"hidden": HIDDEN, "moe_ffn": MOE_FFN, "experts": EXPERTS, "top_k": TOP_K,
                                 "tokens": TOKENS, "capacity_factor": CAPACITY_FACTOR,
                                 "dtype_bytes": DTYPE_BYTES, "tolerance": TOLERANCE},
                      "checks": results,
                      # Each token's experts, tokens in rank order (rank g holds tokens g·T ... (g+1)·T - 1).
                      "routing": {"router": routed["routing"], "balanced": balanced["routing"]}}
            with open(args.json, "w", encoding="utf-8") as out:
                json.dump(report, out, indent=1)
    failed = sum(not r["ok"] for r in results)
    dist.destroy_process_group()
    raise SystemExit(1 if failed else 0)


def show(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    main()
