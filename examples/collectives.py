#!/usr/bin/env python3
"""The eight collectives of torch.distributed, on tensors small enough to read.

Run one process per rank with torchrun (4 processes; any number of ranks works):

    torchrun --nproc_per_node=4 examples/collectives.py
    torchrun --nproc_per_node=4 examples/collectives.py --root 1 --json out/coll.json

Without CUDA every process uses the gloo backend on the CPU; with CUDA each process
uses NCCL and the GPU cuda:LOCAL_RANK. Rank r starts every collective with the
vector [10·r + 0, 10·r + 1, …, 10·r + (n − 1)] (int64, length n = world size), so
every number in the output tells where it came from: 23 is element 3 of rank 2.

Every rank prints its own result of each collective, in rank order (the ranks
take turns between barriers, so four processes do not print over each other). With ``--json PATH`` each rank r also writes its own inputs
and results to ``PATH.rank{r}.json``.

Where the backend has no native call for a collective (older PyTorch versions of
gloo had no reduce-scatter, for example), the script builds the same result from
calls it does support and says so in the output ("EMULATED", with the reason).
``--emulate`` also runs those emulations (all_gather, reduce_scatter, all_to_all)
beside the native calls, to show how they are built and that they agree.
Needs only PyTorch (tested with 2.13).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

OPS = (
    "broadcast",
    "scatter",
    "gather",
    "reduce",
    "all_gather",
    "reduce_scatter",
    "all_reduce",
    "all_to_all",
)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=int, default=0,
                   help="root rank of broadcast, scatter, gather and reduce (default 0)")
    p.add_argument("--json", metavar="PATH",
                   help="each rank r writes its inputs and results to PATH.rank{r}.json")
    p.add_argument("--emulate", action="store_true",
                   help="also build all_gather, reduce_scatter and all_to_all from other "
                        "calls, beside the native ones")
    return p.parse_args()


def setup() -> tuple[int, int, torch.device]:
    """Join the process group; rank, world size and local rank come from torchrun."""
    try:
        rank = int(os.environ["RANK"])
        world_size = int(os.environ["WORLD_SIZE"])
        local_rank = int(os.environ["LOCAL_RANK"])
    except KeyError:
        sys.exit("Start this script with torchrun, e.g.: "
                 "torchrun --nproc_per_node=4 examples/collectives.py")
    if torch.cuda.is_available():
        # One process per GPU: LOCAL_RANK picks this process's GPU on its node.
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", rank=rank, world_size=world_size, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    # MASTER_ADDR and MASTER_PORT (also set by torchrun) tell every process where
    # rank 0 listens; init_process_group blocks until all world_size processes joined.
    return rank, world_size, device


class Unsupported(Exception):
    """The backend has no native call for this collective."""


def native(call, *args, **kwargs) -> None:
    """Run a native collective; turn "the backend does not have it" into Unsupported.

    Only for gloo: there an unsupported collective raises before any data moves, on
    every rank alike, so falling back is safe. With NCCL every error is real."""
    if call is None:
        raise Unsupported("this PyTorch version has no such function")
    try:
        call(*args, **kwargs)
    except (RuntimeError, NotImplementedError) as e:
        if dist.get_backend() != "gloo":
            raise
        raise Unsupported(str(e).splitlines()[0]) from e


# The single-tensor all-gather and reduce-scatter were renamed in PyTorch 2.13:
# all_gather_into_tensor -> all_gather_single, reduce_scatter_tensor ->
# reduce_scatter_single (the old names still work, with a FutureWarning).
ALL_GATHER_1 = getattr(dist, "all_gather_single", None) or getattr(dist, "all_gather_into_tensor", None)
REDUCE_SCATTER_1 = (getattr(dist, "reduce_scatter_single", None)
                    or getattr(dist, "reduce_scatter_tensor", None))


def name(call) -> str:
    return f"dist.{call.__name__}" if call is not None else "(missing)"


def run(op: str, x: torch.Tensor, root: int, emulate: bool) -> dict:
    """Run collective ``op`` on this rank's vector ``x``.

    Returns this rank's result (the vector this rank holds afterwards, as calc's
    simulations define it), the call that ran, and whether it was native."""
    rank, n = dist.get_rank(), dist.get_world_size()
    out: dict = {"native": True, "note": ""}

    if op == "broadcast":
        t = x.clone()  # the root sends t; every other rank overwrites its t
        dist.broadcast(t, src=root)
        out.update(result=t, call=f"dist.broadcast(t, src={root})")

    elif op == "scatter":
        # The root cuts its vector into n chunks; rank i receives chunk i.
        t = torch.empty(x.numel() // n, dtype=x.dtype, device=x.device)
        chunks = list(x.chunk(n)) if rank == root else None
        dist.scatter(t, scatter_list=chunks, src=root)
        out.update(result=t, call=f"dist.scatter(t, scatter_list, src={root})")

    elif op == "gather":
        # Only the root receives (every vector, in rank order); the others only send.
        bufs = [torch.empty_like(x) for _ in range(n)] if rank == root else None
        dist.gather(x, gather_list=bufs, dst=root)
        out.update(result=torch.cat(bufs) if rank == root else x,
                   call=f"dist.gather(x, gather_list, dst={root})")
        if rank != root:
            out["note"] = "not the root: receives nothing, keeps its own vector"

    elif op == "reduce":
        # Reduce works in place. Only the root's tensor holds a defined result: the
        # other ranks' tensors are left undefined (gloo uses them for partial sums),
        # so we reduce a copy and the other ranks keep x.
        t = x.clone()
        dist.reduce(t, dst=root, op=dist.ReduceOp.SUM)
        out.update(result=t if rank == root else x,
                   call=f"dist.reduce(t, dst={root}, op=SUM)")
        if rank != root:
            out["note"] = ("not the root: no result, keeps its own vector; "
                           f"its reduced copy t now holds {t.tolist()}, undefined")

    elif op == "all_gather":
        t = torch.empty(n * x.numel(), dtype=x.dtype, device=x.device)
        dist_call = ALL_GATHER_1
        try:
            if emulate:
                raise Unsupported("--emulate")
            native(dist_call, t, x)
            out.update(result=t, call=f"{name(dist_call)}(t, x)")
        except Unsupported as why:
            # Emulation: the list form of all_gather, then concatenate.
            parts = [torch.empty_like(x) for _ in range(n)]
            dist.all_gather(parts, x)
            out.update(result=torch.cat(parts), native=False,
                       call="dist.all_gather(list, x) + torch.cat",
                       note=f"emulated: {name(dist_call)} not used ({why})")

    elif op == "reduce_scatter":
        t = torch.empty(x.numel() // n, dtype=x.dtype, device=x.device)
        dist_call = REDUCE_SCATTER_1
        try:
            if emulate:
                raise Unsupported("--emulate")
            native(dist_call, t, x, op=dist.ReduceOp.SUM)
            out.update(result=t, call=f"{name(dist_call)}(t, x, op=SUM)")
        except Unsupported as why:
            # Emulation: all-reduce a copy, then keep chunk `rank` of the sum. Same
            # result, but it moves twice the bytes of a real reduce-scatter
            # (all-reduce = reduce-scatter + all-gather).
            s = x.clone()
            dist.all_reduce(s, op=dist.ReduceOp.SUM)
            t.copy_(s.chunk(n)[rank])
            out.update(result=t, native=False,
                       call="dist.all_reduce(copy, op=SUM), keep chunk [rank]",
                       note=f"emulated: {name(dist_call)} not used ({why}); "
                            "moves 2x the bytes of a real reduce-scatter")

    elif op == "all_reduce":
        t = x.clone()
        work = dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True)
        work.wait()  # async_op=True returns at once; wait() before reading t
        out.update(result=t, call="dist.all_reduce(t, op=SUM, async_op=True).wait()")

    elif op == "all_to_all":
        t = torch.empty_like(x)
        try:
            if emulate:
                raise Unsupported("--emulate")
            native(dist.all_to_all_single, t, x)
            out.update(result=t, call="dist.all_to_all_single(t, x)")
        except Unsupported as why:
            # Emulation with point-to-point messages: send chunk j to rank j and
            # receive rank i's chunk into slot i (our own chunk is a local copy).
            # Same bytes on the wire as a real all-to-all.
            send, recv = x.chunk(n), t.chunk(n)
            recv[rank].copy_(send[rank])
            ops = []
            for peer in range(n):
                if peer != rank:
                    ops.append(dist.P2POp(dist.isend, send[peer].contiguous(), peer))
                    ops.append(dist.P2POp(dist.irecv, recv[peer], peer))
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            out.update(result=t, native=False,
                       call="dist.batch_isend_irecv(isend chunk j to rank j, irecv from each rank)",
                       note=f"emulated: dist.all_to_all_single not used ({why})")
    else:
        raise ValueError(f"unknown op {op!r}")
    return out


EMULATIONS = ("all_gather", "reduce_scatter", "all_to_all")


def record(x: torch.Tensor, r: dict) -> dict:
    return {"input": x.tolist(), "result": r["result"].tolist(),
            "call": r["call"], "native": r["native"], "note": r["note"]}


def main() -> None:
    args = parse_args()
    rank, n, device = setup()
    if not 0 <= args.root < n:
        if rank == 0:
            print(f"--root must be between 0 and {n - 1}", file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    backend = dist.get_backend()

    # Rank r holds [10r + 0, ..., 10r + n-1]; length n so that it splits into n chunks.
    x = torch.arange(n, dtype=torch.int64, device=device) + 10 * rank
    mine = {"rank": rank, "world_size": n, "backend": backend, "device": str(device),
            "root": args.root, "torch": torch.__version__, "ops": {}, "emulated": {}}
    dist.barrier()  # everyone is here before the first collective
    for op in OPS:
        mine["ops"][op] = record(x, run(op, x, args.root, emulate=False))
        if args.emulate and op in EMULATIONS:
            mine["emulated"][op] = record(x, run(op, x, args.root, emulate=True))
    dist.barrier()

    if args.json:
        path = Path(f"{args.json}.rank{rank}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(mine, indent=1) + "\n", encoding="utf-8")

    report(mine)
    dist.barrier()
    dist.destroy_process_group()


def in_rank_order(text: str) -> None:
    """Every rank prints ``text`` in turn: rank 0 first, then rank 1, ...

    The processes share torchrun's stdout; a rank prints (and flushes) only after
    the ranks before it have passed the barrier, so the lines come out in order."""
    for r in range(dist.get_world_size()):
        if r == dist.get_rank() and text:
            print(text, flush=True)
        dist.barrier()


def report(mine: dict) -> None:
    rank, n = mine["rank"], mine["world_size"]
    lead = rank == 0
    in_rank_order(f"torch {mine['torch']}, backend {mine['backend']}, {n} ranks, "
                  f"root {mine['root']}\nrank r starts with [10r + 0, ..., 10r + {n - 1}]:"
                  if lead else "")
    in_rank_order(f"  rank {rank} ({mine['device']}): {mine['ops']['broadcast']['input']}")
    for op in OPS:
        for o in (mine["ops"][op], mine["emulated"].get(op)):
            if o is None:
                continue
            how = "native" if o["native"] else "EMULATED"
            head = f"\n{op}  [{how}] {o['call']}"
            if not o["native"]:
                head += f"\n  note: {o['note']}"
            in_rank_order(head if lead else "")
            note = f"   ({o['note']})" if o["note"] and o["native"] else ""
            in_rank_order(f"  rank {rank}: {o['result']}{note}")
    emulated = [op for op in OPS if not mine["ops"][op]["native"]]
    in_rank_order(("\nall eight ran natively on " + mine["backend"] if not emulated
                   else f"\nemulated on {mine['backend']} (no native call): "
                        f"{', '.join(emulated)} (see the notes above)") if lead else "")


if __name__ == "__main__":
    main()
