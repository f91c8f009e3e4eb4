"""The runnable examples (examples/collectives.py, examples/bandwidth.py) under torchrun.

Four real processes on the gloo backend (127.0.0.1): every rank's result of every
collective must equal calc's simulation of it, and every benchmark row must satisfy
busbw = algbw × calc's bus factor. `labrun.py` launches them.

Cost: two torchrun launches of four processes; on 2 idle cores each takes ~15 s,
most of it importing torch in five processes.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from labrun import EXAMPLES, WORLD, torchrun

from calc import collectives as calc

NATIVE_ROOT = 1  # a root other than 0, so a src/dst mix-up would show
# The two launches (conftest.py starts them early, in the background).
LAB_RUNS = [
    ("collectives.py", ("--root", str(NATIVE_ROOT), "--emulate"), WORLD),
    ("bandwidth.py", ("--op", "all", "--sizes", "4K,64K", "--warmup", "1", "--iters", "3"), WORLD),
]


def load_ranks(prefix: Path) -> list[dict]:
    return [json.loads(Path(f"{prefix}.rank{r}.json").read_text(encoding="utf-8"))
            for r in range(WORLD)]


@pytest.fixture(scope="module")
def collectives_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], str]:
    """One launch: the eight native calls, plus (--emulate) the emulations beside them."""
    prefix = tmp_path_factory.mktemp("collectives") / "coll.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(prefix), world=world)
    return load_ranks(prefix), done.stdout


@pytest.fixture(scope="module")
def bandwidth_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("bandwidth") / "bw.json"
    script, args, world = LAB_RUNS[1]
    done = torchrun(script, *args, "--json", str(path), world=world)
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
