"""The pipeline lab (examples/pipeline_parallel.py) under torchrun, tied to calc.

Four gloo processes, one stage each: GPipe and 1F1B by hand and with
torch.distributed.pipelining each end with the loss and gradients of one process; the
order of passes each stage ran is the order calc.pipeline.simulate_schedule gives it,
and the micro-batches each stage held at its peak are the simulator's peak_in_flight
(and in_flight_microbatches for the first stage).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from labrun import EXAMPLES, WORLD, assert_page_quotes_the_report, checks_of, lab_report, torchrun

from calc.pipeline import in_flight_microbatches
from widgets.labs import figures
from widgets.labs import pipeline_parallel as lab

RUNS = [(impl, schedule) for impl in ("hand", "torch") for schedule in ("gpipe", "1f1b")]
TOLERANCE = 1e-5  # the lab's: relative for the loss, absolute for a gradient (fp32)


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("pipeline_parallel.py", (), WORLD)]


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("pp") / "pp.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "pipeline_parallel", WORLD), done.stdout


@pytest.fixture(scope="module")
def config(pipeline_run: tuple[dict, str]) -> dict:
    """The lab's config as run, with the number of stages it ran on."""
    report, _ = pipeline_run
    return {**report["config"], "world_size": report["world_size"]}


def test_every_check_passes_on_gloo(pipeline_run: tuple[dict, str]) -> None:
    report, stdout = pipeline_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    # 4 block checks; per run 2 (loss, gradients) + p orders + p peaks + 1 (freed);
    # the hand runs also 2 byte counts.
    p = report["world_size"]
    assert len(report["checks"]) == p + 4 * (2 + 2 * p + 1) + 2 * 2


def test_config_and_constants_are_the_widgets(config: dict) -> None:
    assert {k: config[k] for k in lab.CONFIG} == lab.CONFIG
    tree = ast.parse((EXAMPLES / "pipeline_parallel.py").read_text(encoding="utf-8"))
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names = [t for target in node.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for name, value in zip(names, values):
                if isinstance(name, ast.Name) and name.id.isupper() and isinstance(value, ast.Constant):
                    constants[name.id.lower()] = value.value
    shared = {k: v for k, v in lab.CONFIG.items() if k in constants}
    assert set(shared) == {"layers", "hidden", "heads", "vocab", "seq_len", "global_batch", "microbatches"}
    assert shared == {k: constants[k] for k in shared}


def test_loss_and_gradients_equal_one_process(pipeline_run: tuple[dict, str]) -> None:
    checks = checks_of(pipeline_run[0])
    for impl, schedule in RUNS:
        assert checks[f"{impl} {schedule}: |loss / one process - 1|"]["measured"] <= TOLERANCE
        assert checks[f"{impl} {schedule}: max |gradient - one process|"]["measured"] <= TOLERANCE


def test_stages_hold_calcs_blocks(pipeline_run: tuple[dict, str], config: dict) -> None:
    checks = checks_of(pipeline_run[0])
    split = lab.blocks(config)
    assert [tuple(checks[f"stage {s}: blocks (first, last)"]["measured"]) for s in range(len(split))] == list(split)
    assert max(last - first + 1 for first, last in split) == figures("pipeline_parallel", config)["layers_per_stage"]


def test_each_stage_runs_the_simulators_order(pipeline_run: tuple[dict, str], config: dict) -> None:
    """The order of F and B passes as they ran, by hand and in torch's schedules, is the
    order of calc.pipeline.simulate_schedule's events of that stage sorted by start."""
    checks = checks_of(pipeline_run[0])
    for impl, schedule in RUNS:
        expected = lab.stage_orders(config, schedule)
        ran = [checks[f"{impl} {schedule}: stage {s} order"]["measured"] for s in range(config["world_size"])]
        assert ran == expected, (impl, schedule)
    # 1F1B's stage 0 runs p forwards before its first backward (p - 1 warm-up + 1).
    first = checks["torch 1f1b: stage 0 order"]["measured"].split()
    before = next(i for i, e in enumerate(first) if e[0] == "B")
    assert before == figures("pipeline_parallel", config)["onef1b_forwards_before_backward"] == config["world_size"]


def test_peak_micro_batches_held_are_the_simulators(pipeline_run: tuple[dict, str], config: dict) -> None:
    """Counted at run time with saved-tensor hooks: GPipe holds all m on every stage,
    1F1B p - s on stage s, which is summarize_schedule's peak_in_flight; stage 0's is
    in_flight_microbatches (m for GPipe, min(p, m) for 1F1B)."""
    checks = checks_of(pipeline_run[0])
    p, m = config["world_size"], config["microbatches"]
    fig = figures("pipeline_parallel", config)
    for impl, schedule in RUNS:
        held = [checks[f"{impl} {schedule}: stage {s} peak micro-batches held"]["measured"] for s in range(p)]
        assert held == list(lab.peaks(config, schedule)), (impl, schedule)
        assert held[0] == in_flight_microbatches(pp=p, microbatches=m, schedule=schedule)
        assert checks[f"{impl} {schedule}: micro-batches still held after the step"]["measured"] == [0] * p
    gpipe = checks["torch gpipe: stage 0 peak micro-batches held"]["measured"]
    onef1b = checks["torch 1f1b: stage 0 peak micro-batches held"]["measured"]
    last = checks[f"torch 1f1b: stage {p - 1} peak micro-batches held"]["measured"]
    assert (gpipe, onef1b, last) == (fig["gpipe_in_flight"], fig["onef1b_in_flight"], fig["onef1b_in_flight_last"])
    assert onef1b / gpipe == fig["onef1b_memory_ratio"] < 1


def test_stages_send_calcs_activation_bytes(pipeline_run: tuple[dict, str], config: dict) -> None:
    """Each stage but the last sends m micro-batches of b·s·h fp32 hidden states forward
    and each but the first their gradients back: calc's activation_transfer_bytes × m."""
    checks = checks_of(pipeline_run[0])
    p, step = config["world_size"], figures("pipeline_parallel", config)["bytes_sent_per_step"]
    # m micro-batches of B/m sequences: the whole batch's hidden states, whatever m is.
    assert step == config["global_batch"] * config["seq_len"] * config["hidden"] * config["activation_dtype_bytes"]
    for schedule in ("gpipe", "1f1b"):
        assert checks[f"hand {schedule}: bytes sent forward per stage"]["measured"] == [step] * (p - 1) + [0]
        assert checks[f"hand {schedule}: bytes sent back per stage"]["measured"] == [0] + [step] * (p - 1)


def test_torch_tables_are_calcs_order_but_one(pipeline_run: tuple[dict, str], config: dict) -> None:
    """`schedule.pipeline_order` (the table torch's visualizer reads) is calc's order on
    every stage, except torch 2.13's 1F1B table of the last stage, which numbers its
    forwards 1..m (F1 B0 F2 B1 ... F8 B7) while the schedule runs F0 B0 F1 B1 ...; a
    torch that fixes it passes too."""
    findings = {f["name"]: f for f in pipeline_run[0]["findings"]}
    p = config["world_size"]
    assert len(findings) == 2 * p
    for schedule in ("gpipe", "1f1b"):
        expected = lab.stage_orders(config, schedule)
        for s in range(p):
            f = findings[f"torch {schedule}: stage {s} pipeline_order table"]
            assert f["ran"] == expected[s]
            if schedule == "1f1b" and s == p - 1 and not f["same"]:
                shifted = " ".join(f"F{int(e[1:]) + 1}" if e[0] == "F" else e for e in expected[s].split())
                assert f["table"] == shifted
            else:
                assert f["same"] and f["table"] == expected[s], (schedule, s)


def test_lab_file_has_its_snippet_sections() -> None:
    text = Path(EXAMPLES / "pipeline_parallel.py").read_text(encoding="utf-8")
    for name in ("stage", "held", "hand", "torch"):
        assert text.count(f"# --8<-- [start:{name}]") == text.count(f"# --8<-- [end:{name}]") == 1


def test_the_page_quotes_what_the_lab_prints(pipeline_run: tuple[dict, str]) -> None:
    """The report on the lab's page (docs/*/lab-pipeline-parallel.md) is this run's, check by check."""
    assert_page_quotes_the_report("lab-pipeline-parallel", pipeline_run[1])
