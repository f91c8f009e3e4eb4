"""The runnable examples (examples/collectives.py, examples/bandwidth.py) under torchrun.

Four real processes on the gloo backend (127.0.0.1): every rank's result of every
collective must equal calc's simulation of it, and every benchmark row must satisfy
busbw = algbw × calc's bus factor. Skipped when PyTorch is not installed.

Cost: two torchrun launches of four processes; on 2 idle cores each takes ~15 s,
most of it importing torch in five processes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # A torch wheel without numpy warns once at import ("Failed to initialize NumPy:
    # No module named 'numpy'"); the examples do not need numpy, so that warning is
    # the one ignored here (the project's pytest turns every warning into an error).
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch  # noqa: F401  (`make test` installs it: a missing torch fails, never skips)

import torch.distributed as dist  # noqa: E402

from calc import collectives as calc  # noqa: E402

assert dist.is_available() and dist.is_gloo_available(), "this torch build has no torch.distributed with gloo"

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WORLD = 4
TIMEOUT_S = 240
NATIVE_ROOT = 1  # a root other than 0, so a src/dst mix-up would show


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m torch.distributed.run --nproc_per_node=4 examples/<script> <args>` on
    the CPU: gloo, loopback, one OpenMP thread per process. Deprecated torch APIs
    (FutureWarning) are errors in the children, so the examples stay on current APIs."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",  # CPU and gloo even on a machine with GPUs
        "PYTHONWARNINGS": "error::FutureWarning",
    }
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"  # gloo on 127.0.0.1, not the host's address
    cmd = [
        sys.executable, "-m", "torch.distributed.run",
        f"--nproc_per_node={WORLD}", "--master_addr=127.0.0.1", f"--master_port={free_port()}",
        str(EXAMPLES / script), *args,
    ]
    # A session of its own, so a hung run is killed with all four workers.
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, text=True, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{script} did not finish in {TIMEOUT_S} s\n{out[-3000:]}\n{err[-3000:]}")
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited {proc.returncode}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-6000:]}"
    )
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def load_ranks(prefix: Path) -> list[dict]:
    return [json.loads(Path(f"{prefix}.rank{r}.json").read_text(encoding="utf-8"))
            for r in range(WORLD)]


@pytest.fixture(scope="module")
def collectives_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], str]:
    """One launch: the eight native calls, plus (--emulate) the emulations beside them."""
    prefix = tmp_path_factory.mktemp("collectives") / "coll.json"
    done = torchrun("collectives.py", "--root", str(NATIVE_ROOT), "--emulate", "--json", str(prefix))
    return load_ranks(prefix), done.stdout


@pytest.fixture(scope="module")
def bandwidth_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("bandwidth") / "bw.json"
    done = torchrun("bandwidth.py", "--op", "all", "--sizes", "4K,64K",
                    "--warmup", "1", "--iters", "3", "--json", str(path))
    return json.loads(path.read_text(encoding="utf-8")), done.stdout


def check_against_calc(ranks: list[dict], op: str, kind: str = "ops") -> None:
    """Every rank's real result equals calc.collectives.run(op, inputs, root)[rank]."""
    root = ranks[0]["root"]
    inputs = [rec[kind][op]["input"] for rec in ranks]
    assert inputs == [[10 * r + i for i in range(WORLD)] for r in range(WORLD)]
    expected = calc.run(op, inputs, root)
    for r, rec in enumerate(ranks):
        assert rec["rank"] == r and rec["world_size"] == WORLD and rec["root"] == root
        assert rec[kind][op]["result"] == list(expected[r]), f"{kind} {op}: rank {r} (root {root})"


# ---------------------------------------------------------------- collectives.py


@pytest.mark.parametrize("op", calc.OPS)
def test_every_rank_matches_calc(collectives_run: tuple[list[dict], str], op: str) -> None:
    ranks, _ = collectives_run
    assert all(rec["backend"] == "gloo" and rec["device"] == "cpu" for rec in ranks)
    check_against_calc(ranks, op)


EMULATIONS = ("all_gather", "reduce_scatter", "all_to_all")


@pytest.mark.parametrize("op", EMULATIONS)
def test_emulations_match_calc(collectives_run: tuple[list[dict], str], op: str) -> None:
    """The fallbacks built from other calls (--emulate runs them beside the native
    ones) give the same results, and are labelled as emulations."""
    ranks, stdout = collectives_run
    assert sorted(ranks[0]["emulated"]) == sorted(EMULATIONS)
    check_against_calc(ranks, op, kind="emulated")
    assert not any(rec["emulated"][op]["native"] for rec in ranks)
    assert f"{op}  [EMULATED] {ranks[0]['emulated'][op]['call']}" in stdout


def printed_blocks(stdout: str) -> list[tuple[str, str, list[list[int]]]]:
    """(op, native|EMULATED, [rank 0's list, rank 1's list, ...]) for each block the
    script printed: an `<op>  [native|EMULATED] <call>` heading, then `rank r: [...]`."""
    blocks: list[tuple[str, str, list[list[int]]]] = []
    for line in stdout.splitlines():
        head = re.match(r"^(\w+)  \[(native|EMULATED)\] ", line)
        if head:
            blocks.append((head.group(1), head.group(2), []))
            continue
        row = re.match(r"^  rank (\d+): (\[[-\d, ]*\])", line)
        if row and blocks:
            rows = blocks[-1][2]
            assert int(row.group(1)) == len(rows), f"ranks printed out of order:\n{stdout}"
            rows.append(json.loads(row.group(2)))
    return blocks


def test_output_shows_every_rank_and_how_each_call_ran(collectives_run: tuple[list[dict], str]) -> None:
    ranks, stdout = collectives_run
    assert f"backend gloo, {WORLD} ranks, root {NATIVE_ROOT}" in stdout
    expected = []
    for op in calc.OPS:
        for kind in ("ops", "emulated"):
            entry = ranks[0][kind].get(op)
            if entry is not None:
                how = "native" if entry["native"] else "EMULATED"
                assert f"{op}  [{how}] {entry['call']}" in stdout
                expected.append((op, how, [rec[kind][op]["result"] for rec in ranks]))
    assert printed_blocks(stdout) == expected
    emulated = [op for op in calc.OPS if not ranks[0]["ops"][op]["native"]]
    if emulated:  # an older torch: the output must say which calls had no native call
        assert f"emulated on gloo (no native call): {', '.join(emulated)}" in stdout
    else:
        assert "all eight ran natively on gloo" in stdout


# ------------------------------------------------------------------ bandwidth.py


def load_example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bus_factors_agree_with_calc() -> None:
    """The example defines its own bus factors (readers may have only torch); they
    must be calc's (nccl-tests PERFORMANCE.md)."""
    bw = load_example("bandwidth")
    assert tuple(bw.OPS) == tuple(calc.OPS)
    assert tuple(load_example("collectives").OPS) == tuple(calc.OPS)
    for op in calc.OPS:
        for n in range(1, 65):
            assert bw.bus_factor(op, n) == pytest.approx(calc.bus_factor(op, n), rel=1e-12), (op, n)


def test_bandwidth_rows(bandwidth_run: tuple[dict, str]) -> None:
    data, stdout = bandwidth_run
    rows = data["rows"]
    assert data["meta"]["ranks"] == WORLD and data["meta"]["backend"] == "gloo"
    for op in calc.OPS:
        op_rows = [row for row in rows if row["op"] == op]
        if not op_rows:  # an older torch whose gloo lacks the call: it must say so
            assert re.search(rf"# {op} on .*\n(#.*\n)*# skipped: gloo", stdout), op
            continue
        assert [row["size_bytes"] for row in op_rows] == [4096, 65536]
    assert rows, "no rows at all"
    for row in rows:
        n, op = row["ranks"], row["op"]
        assert n == WORLD and row["iters"] == 3 and row["warmup"] == 1
        assert row["count"] % n == 0 and row["size_bytes"] == 4 * row["count"]  # float32
        assert row["time_s"] > 0
        assert row["algbw_bytes_per_s"] == pytest.approx(
            calc.algbw(row["size_bytes"], row["time_s"]), rel=1e-9)
        assert row["busbw_bytes_per_s"] == pytest.approx(
            row["algbw_bytes_per_s"] * calc.bus_factor(op, n), rel=1e-9), row
        assert row["busbw_bytes_per_s"] == pytest.approx(
            calc.busbw(op, ranks=n, size_bytes=row["size_bytes"], time_s=row["time_s"]), rel=1e-9)


def test_bandwidth_table_printed(bandwidth_run: tuple[dict, str]) -> None:
    """Rank 0 prints one table per op; each row shows the JSON row's size, count and
    time (microseconds, one decimal)."""
    data, stdout = bandwidth_run
    tables = re.split(r"^# (\w+) on \d+ ranks", stdout, flags=re.M)[1:]
    tables = dict(zip(tables[::2], tables[1::2]))
    for op, text in tables.items():
        assert re.search(r"#\s+size\s+count\s+time\s+algbw\s+busbw", text), op
        assert "time = the slowest rank's mean" in text
    for row in data["rows"]:
        line = rf"^\s+{row['size_bytes']}\s+{row['count']}\s+{row['time_s'] * 1e6:.1f}\s"
        assert re.search(line, tables[row["op"]], re.M), (row, tables[row["op"]])


# ---------------------------------------------------------------- data_parallel.py


@pytest.fixture(scope="module")
def data_parallel_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("dp") / "dp.json"
    done = torchrun("data_parallel.py", "--steps", "3", "--json", str(path))
    return json.loads(path.read_text(encoding="utf-8")), done.stdout


def checks_of(report: dict) -> dict[str, dict]:
    return {check["name"]: check for check in report["checks"]}


def test_data_parallel_three_ways_equal_one_process(data_parallel_run: tuple[dict, str]) -> None:
    report, stdout = data_parallel_run
    assert report["lab"] == "data_parallel" and report["world_size"] == WORLD and report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    checks = checks_of(report)
    for way in ("naive", "buckets", "ddp"):
        assert checks[f"{way}: max |parameter - one process|"]["measured"] <= 1e-5


def test_data_parallel_model_has_megatrons_parameter_count(data_parallel_run: tuple[dict, str]) -> None:
    """The lab's GPT is Megatron's layout: calc's count (Narayanan et al. 2021, Eq. 2, which
    leaves out the final LayerNorm's 2h) plus that LayerNorm."""
    from calc.models import megatron_param_count

    report, _ = data_parallel_run
    c = report["config"]
    expected = megatron_param_count(layers=c["layers"], hidden=c["hidden"], vocab=c["vocab"], seq_len=c["seq_len"])
    assert checks_of(report)["parameters"]["measured"] == expected + 2 * c["hidden"]


def test_data_parallel_all_reduces_the_gradient_bytes_of_calc(data_parallel_run: tuple[dict, str]) -> None:
    """Each way all-reduces exactly the gradient per rank per step: calc's gradient_bytes
    (2 bytes per parameter, fp16) scaled to the lab's fp32 gradients."""
    from calc.data_parallel import gradient_bytes
    from calc.memory import GRAD_BYTES

    report, _ = data_parallel_run
    checks = checks_of(report)
    params = checks["parameters"]["measured"]
    expected = gradient_bytes(params) / GRAD_BYTES * report["config"]["grad_dtype_bytes"]
    for way in ("naive", "buckets", "ddp"):
        assert checks[f"{way}: bytes all-reduced per rank per step"]["measured"] == expected


def test_buckets_need_fewer_collectives_and_start_during_backward(data_parallel_run: tuple[dict, str]) -> None:
    checks = checks_of(data_parallel_run[0])
    naive = checks["naive: collectives per step (one per parameter tensor)"]["measured"]
    buckets = checks["buckets: collectives per step (one per bucket)"]["measured"]
    assert 1 < buckets < naive and checks["ddp: collectives per step"]["measured"] < naive
    ready = checks["buckets: gradients ready before the first bucket leaves"]
    assert ready["measured"] < ready["expected"]  # the first all-reduce overlaps backward
