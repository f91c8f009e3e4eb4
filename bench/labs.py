"""Wall time of every lab in examples/, run the way a reader runs it; prints a table.

    python bench/labs.py [--labs zero,flops] [--nproc 4]

Each distributed lab runs under `torchrun --nproc_per_node=N` (gloo on 127.0.0.1, one
OpenMP thread per process), each one-process lab with `python`; a lab must exit 0 (all
its checks ok). Reported per lab: wall time, the CPU time of the whole process tree
(user + system, all workers included) and the machine's load average at the start.
Target: each lab under 30 s with 4 processes on 2 cores. Most of the time is importing
torch in every process (and, for FSDP2, DTensor and torch.distributed.pipelining, the
torch._dynamo they import); the labs' own work takes a few seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ONE_PROCESS = ("activations", "flops")
DISTRIBUTED = ("data_parallel", "zero", "tensor_parallel", "pipeline_parallel", "mesh_2d", "context_parallel",
               "expert_parallel")
TARGET_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(lab: str, nproc: int) -> tuple[float, float, int]:
    """(wall s, CPU s of the process tree, exit code) of one run of the lab."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"
    script = str(EXAMPLES / f"{lab}.py")
    cmd = ([sys.executable, script] if lab in ONE_PROCESS else
           [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
            "--master_addr=127.0.0.1", f"--master_port={free_port()}", script])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode:
        print(done.stdout[-2000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
    return wall, cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", default=",".join(DISTRIBUTED + ONE_PROCESS))
    parser.add_argument("--nproc", type=int, default=4)
    args = parser.parse_args()
    print(f"# {os.cpu_count()} cores; {args.nproc} processes per distributed lab; target < {TARGET_S:g} s each")
    print(f"# {'lab':18} {'procs':>5} {'wall s':>7} {'cpu s':>7} {'load':>5}  result")
    failed = 0
    for lab in args.labs.split(","):
        load = os.getloadavg()[0]
        wall, cpu, code = run(lab, args.nproc)
        procs = 1 if lab in ONE_PROCESS else args.nproc
        verdict = "checks ok" if code == 0 else f"exit {code}"
        verdict += "" if wall < TARGET_S else f", over {TARGET_S:g} s"
        failed += code != 0
        print(f"  {lab:18} {procs:>5} {wall:7.1f} {cpu:7.1f} {load:5.1f}  {verdict}")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
