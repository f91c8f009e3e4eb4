#!/usr/bin/env python3
"""Measure a collective the way NVIDIA's nccl-tests do: time, algbw and busbw.

    torchrun --nproc_per_node=4 examples/bandwidth.py                      # all_reduce
    torchrun --nproc_per_node=4 examples/bandwidth.py --op all_gather -e 64M
    torchrun --nproc_per_node=8 examples/bandwidth.py --op all -b 1M -e 1G --json bw.json

For every message size S (bytes: from --min-bytes to --max-bytes, multiplied by
--factor each row, or the list --sizes), each rank

  1. runs --warmup untimed iterations (connections, buffers, algorithm choice),
  2. waits for its GPU (torch.cuda.synchronize) and for every rank (barrier),
  3. times --iters back-to-back iterations, waits for its GPU again, and divides,
  4. shares its mean: the reported time t is the SLOWEST rank's mean (all_reduce
     with MAX), because a collective is done only when its last rank is done
     (nccl-tests reports the mean over ranks by default, `-a 1`; `-a 3` is MAX).

and rank 0 prints algbw = S / t and busbw = algbw × the bus factor of the operation
(see bus_factor below). busbw is what can be compared with a link's one-way speed.
Without CUDA the processes use gloo on the CPU: the numbers then measure memory
copies and local sockets, not NVLink or InfiniBand. Needs only PyTorch (tested
with 2.13).

The size S means what it means in nccl-tests: the all_reduce/broadcast/reduce
buffer, the all_gather OUTPUT, the reduce_scatter INPUT, the per-rank all_to_all
buffer, the scatter root's buffer and the gather root's output. It is rounded down
to a whole number of elements divisible by the number of ranks (as nccl-tests do);
the table shows the size actually used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
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


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw for ``op`` on ``n`` ranks, as NVIDIA nccl-tests define it.

    Source: nccl-tests doc/PERFORMANCE.md (all_reduce 2(n-1)/n; reduce_scatter and
    all_gather (n-1)/n; broadcast and reduce 1) and the *GetBw functions in its
    src/alltoall.cu, src/scatter.cu, src/gather.cu ((n-1)/n). The factor is the
    bytes each rank must send (or receive) per byte of S with an optimal (ring)
    algorithm, so busbw is the bytes per second through each rank's link."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("broadcast", "reduce"):
        return 1.0
    if op in ("all_gather", "reduce_scatter", "all_to_all", "scatter", "gather"):
        return (n - 1) / n
    raise ValueError(f"unknown op {op!r}")


DTYPES = {"float32": torch.float32, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "float64": torch.float64}


def parse_size(text: str) -> int:
    """'4096', '64K', '16M', '1G' -> bytes (K = 1024, as in nccl-tests)."""
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    t = text.strip().upper().removesuffix("B")
    mult = units.get(t[-1:], 1)
    value = int(float(t[:-1] if t[-1:] in units else t) * mult)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return value


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", default="all_reduce",
                   help="a collective, a comma-separated list, or 'all' (default all_reduce); "
                        "one of " + ", ".join(OPS))
    p.add_argument("-b", "--min-bytes", type=parse_size, default=parse_size("1K"))
    p.add_argument("-e", "--max-bytes", type=parse_size, default=parse_size("16M"))
    p.add_argument("-f", "--factor", type=int, default=4,
                   help="multiply the size by this from one row to the next (default 4)")
    p.add_argument("--sizes", help="explicit comma-separated sizes, e.g. 4K,1M (overrides -b/-e/-f)")
    p.add_argument("-w", "--warmup", type=int, default=5, help="untimed iterations (default 5)")
    p.add_argument("-n", "--iters", type=int, default=20, help="timed iterations (default 20)")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    p.add_argument("--json", metavar="PATH", help="rank 0 writes the rows to PATH")
    a = p.parse_args()
    a.ops = list(OPS) if a.op == "all" else [o.strip() for o in a.op.split(",")]
    for o in a.ops:
        if o not in OPS:
            p.error(f"unknown --op {o!r}; choose from {', '.join(OPS)} or 'all'")
    if a.sizes:
        a.size_list = [parse_size(s) for s in a.sizes.split(",")]
    else:
        if a.factor < 2 or a.min_bytes > a.max_bytes:
            p.error("need --factor >= 2 and --min-bytes <= --max-bytes")
        a.size_list, s = [], a.min_bytes
        while s <= a.max_bytes:
            a.size_list.append(s)
            s *= a.factor
    if a.warmup < 0 or a.iters < 1:
        p.error("need --warmup >= 0 and --iters >= 1")
    return a


def setup() -> tuple[int, int, torch.device]:
    """Join the process group; rank, world size and local rank come from torchrun."""
    try:
        rank = int(os.environ["RANK"])
        world_size = int(os.environ["WORLD_SIZE"])
        local_rank = int(os.environ["LOCAL_RANK"])
    except KeyError:
        sys.exit("Start this script with torchrun, e.g.: "
                 "torchrun --nproc_per_node=4 examples/bandwidth.py")
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)  # one process per GPU
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", rank=rank, world_size=world_size, device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
    return rank, world_size, device


# The single-tensor all-gather and reduce-scatter were renamed in PyTorch 2.13
# (all_gather_into_tensor -> all_gather_single, reduce_scatter_tensor ->
# reduce_scatter_single); use whichever this PyTorch has.
ALL_GATHER_1 = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
REDUCE_SCATTER_1 = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def make_step(op: str, count: int, dtype: torch.dtype, device: torch.device):
    """Allocate the buffers once and return (step, call): step() runs one collective.

    ``count`` elements = S bytes, divisible by the number of ranks. The buffers hold
    zeros: repeated in-place sums stay finite, and neither NCCL nor gloo is faster
    on zeros (they do not compress)."""
    rank, n = dist.get_rank(), dist.get_world_size()
    full = torch.zeros(count, dtype=dtype, device=device)
    part = torch.zeros(count // n, dtype=dtype, device=device)
    root = 0
    if op == "all_reduce":
        return (lambda: dist.all_reduce(full)), "dist.all_reduce"
    if op == "broadcast":
        return (lambda: dist.broadcast(full, src=root)), "dist.broadcast"
    if op == "reduce":
        return (lambda: dist.reduce(full, dst=root)), "dist.reduce"
    if op == "all_gather":
        return (lambda: ALL_GATHER_1(full, part)), f"dist.{ALL_GATHER_1.__name__}"
    if op == "reduce_scatter":
        return (lambda: REDUCE_SCATTER_1(part, full)), f"dist.{REDUCE_SCATTER_1.__name__}"
    if op == "all_to_all":
        out = torch.zeros_like(full)
        return (lambda: dist.all_to_all_single(out, full)), "dist.all_to_all_single"
    if op == "scatter":
        chunks = list(full.chunk(n)) if rank == root else None
        return (lambda: dist.scatter(part, scatter_list=chunks, src=root)), "dist.scatter"
    if op == "gather":
        bufs = list(full.chunk(n)) if rank == root else None
        return (lambda: dist.gather(part, gather_list=bufs, dst=root)), "dist.gather"
    raise ValueError(f"unknown op {op!r}")


def sync(device: torch.device) -> None:
    """Wait until this rank's GPU has finished everything queued (a no-op on CPU:
    gloo calls return only when their data has moved)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def supported(step) -> bool:
    """Try one (untimed) call. Older PyTorch versions of gloo lack some collectives
    (reduce-scatter, for one); they raise before any data moves, on every rank alike.
    This benchmark times only native calls, so it skips such an operation."""
    try:
        step()
    except (RuntimeError, NotImplementedError):
        if dist.get_backend() != "gloo":
            raise
        return False
    return True


def measure(step, device: torch.device, warmup: int, iters: int) -> float:
    """Seconds per call: the mean over ``iters`` calls, of the slowest rank."""
    for _ in range(warmup):
        step()
    sync(device)
    dist.barrier()  # every rank starts the clock together
    sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        step()
    sync(device)  # NCCL calls return before the GPU is done: wait for it
    # A host clock around a synchronized loop, as nccl-tests time it; without the
    # synchronize it would measure only how fast the CPU queues kernels.
    mean = (time.perf_counter() - start) / iters
    t = torch.tensor([mean], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank decides
    dist.barrier()  # nobody starts the next size while others still finish
    return t.item()


def main() -> None:
    args = parse_args()
    rank, n, device = setup()
    dtype = DTYPES[args.dtype]
    esize = torch.empty((), dtype=dtype).element_size()
    backend = dist.get_backend()
    rows = []
    for op in args.ops:
        factor = bus_factor(op, n)
        if rank == 0:
            rooted = ", root 0" if op in ("broadcast", "scatter", "gather", "reduce") else ""
            print(f"\n# {op} on {n} ranks, backend {backend}, device {device.type}, {args.dtype}, "
                  f"warm-up {args.warmup}, iterations {args.iters}{rooted}")
            print(f"# bus factor {factor:.4g}; time = the slowest rank's mean")
            print(f"# {'size':>12} {'count':>12} {'time':>10} {'algbw':>8} {'busbw':>8}")
            print(f"# {'(B)':>12} {'(elements)':>12} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}")
        skipped = False
        for size in args.size_list:
            count = max(n, size // esize // n * n)  # whole elements, divisible by n
            step, call = make_step(op, count, dtype, device)
            if size == args.size_list[0] and not supported(step):
                skipped = True
                if rank == 0:
                    print(f"# skipped: {backend} in PyTorch {torch.__version__} has no {call}")
                break
            t = measure(step, device, args.warmup, args.iters)
            s_bytes = count * esize
            algbw = s_bytes / t           # bytes/s
            busbw = algbw * factor        # bytes/s
            rows.append({"op": op, "ranks": n, "size_bytes": s_bytes, "count": count,
                         "dtype": args.dtype, "time_s": t, "algbw_bytes_per_s": algbw,
                         "busbw_bytes_per_s": busbw, "bus_factor": factor, "call": call,
                         "backend": backend, "device": device.type,
                         "warmup": args.warmup, "iters": args.iters})
            if rank == 0:
                print(f"  {s_bytes:>12} {count:>12} {t * 1e6:>10.1f} "
                      f"{algbw / 1e9:>8.4f} {busbw / 1e9:>8.4f}", flush=True)
        if rank == 0 and not skipped:
            print(f"# ran {call} (native {backend} call)")
    if rank == 0 and args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {"torch": torch.__version__, "backend": backend, "device": device.type,
                "ranks": n, "time": "slowest rank's mean over iters (all_reduce MAX)",
                "units": "bytes, seconds, bytes per second"}
        path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n",
                        encoding="utf-8")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
