"""The 2-D mesh lab (examples/mesh_2d.py) under torchrun, tied to calc.

Four gloo processes on a ("dp", "tp") mesh of 2 × 2: tensor parallelism on "tp", then
FSDP2 (fully_shard) on "dp", as torchtitan applies them. The losses and the parameters
after the steps equal one process's; what each rank holds is, byte for byte, the figure
of `widgets.labs.mesh_2d`, i.e. of calc.tensor.split_params_per_layer /
replicated_params_per_layer (what tensor parallelism splits), calc.tensor.shard_rows
(FSDP's dim-0 chunks and padding) and calc.zero.state_per_gpu (ZeRO-3's 1/N_d).
"""

from __future__ import annotations

import re

import pytest
from labrun import file_constants, EXAMPLES, WORLD, checks_of, lab_report, torchrun

from widgets.labs import figures
from widgets.labs import mesh_2d as lab

EXPECTED = figures("mesh_2d")
RANK = re.compile(r"^rank (\d) \(dp (\d), tp (\d)\): bytes of (TP-split parameters|TP-replicated parameters|storage)")


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("mesh_2d.py", (), WORLD)]


@pytest.fixture(scope="module")
def mesh_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("mesh") / "mesh.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "mesh_2d", WORLD), done.stdout


@pytest.fixture(scope="module")
def held(mesh_run: tuple[dict, str]) -> dict[int, dict]:
    """rank -> {"row", "col", "split", "replicated", "storage"} from the per-rank checks."""
    out: dict[int, dict] = {}
    for check in mesh_run[0]["checks"]:
        match = RANK.match(check["name"])
        if match:
            rank, row, col, what = match.groups()
            key = {"TP-split parameters": "split", "TP-replicated parameters": "replicated"}.get(what, "storage")
            out.setdefault(int(rank), {"row": int(row), "col": int(col)})[key] = check["measured"]
    return out


def test_every_check_passes_on_gloo(mesh_run: tuple[dict, str]) -> None:
    report, stdout = mesh_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    assert len(report["checks"]) == 2 + 3 * WORLD


def test_config_is_the_widgets_and_the_files_constants(mesh_run: tuple[dict, str]) -> None:
    report, _ = mesh_run
    assert lab.CONFIG["world_size"] == WORLD == report["world_size"]
    assert report["config"]["dp"] == EXPECTED["dp"] == 2
    assert {key: report["config"][key] for key in lab.CONFIG if key != "world_size"} == {
        key: value for key, value in lab.CONFIG.items() if key != "world_size"}
    constants = {k.lower(): v for k, v in file_constants(EXAMPLES / "mesh_2d.py").items()}
    shared = set(constants) & set(lab.CONFIG)
    assert shared == set(lab.CONFIG) - {"world_size"}
    assert all(constants[key] == lab.CONFIG[key] for key in shared)


def test_training_on_the_mesh_is_training_on_one_process(mesh_run: tuple[dict, str]) -> None:
    checks = checks_of(mesh_run[0])
    assert 0 <= checks["loss, every step: max |2-D - one process|"]["measured"] <= lab.CONFIG["tolerance"]
    assert 0 <= checks["max |parameter - one process| after the steps"]["measured"] <= lab.CONFIG["tolerance"]


def test_the_mesh_is_dp_rows_of_tp_ranks(held: dict[int, dict]) -> None:
    assert sorted(held) == list(range(WORLD))
    tp = lab.CONFIG["tp"]
    assert all((h["row"], h["col"]) == divmod(rank, tp) for rank, h in held.items())


def test_tp_split_weights_are_one_dp_tp_th_on_every_rank(held: dict[int, dict]) -> None:
    """12h² + 7h per layer, split over t and then over N_d: 99,200 bytes per rank in fp32."""
    for h in held.values():
        assert h["split"] == EXPECTED["split_bytes_first"] == EXPECTED["split_bytes_last"] == EXPECTED["split_bytes_even"]
    c = lab.CONFIG
    assert EXPECTED["split_bytes_even"] * WORLD == c["dtype_bytes"] * c["layers"] * (12 * c["hidden"] ** 2 + 7 * c["hidden"])


def test_tp_replicated_parameters_are_split_by_dp_only_with_fsdps_chunks(held: dict[int, dict]) -> None:
    """LayerNorms, row biases and the embeddings: FSDP's chunks of ceil(rows / N_d) give dp
    row 0 the 64 rows of the 127-row word embedding and row 1 the other 63; averaged over
    the rows that is ZeRO-3's Ψ/N_d exactly (the padding is storage, not parameters)."""
    dp = EXPECTED["dp"]
    for h in held.values():
        want = EXPECTED["replicated_bytes_first"] if h["row"] == 0 else EXPECTED["replicated_bytes_last"]
        assert h["row"] in (0, dp - 1) and h["replicated"] == want
    assert EXPECTED["replicated_bytes_first"] - EXPECTED["replicated_bytes_last"] == 64 * 4  # one embedding row
    rows = {h["row"]: h["replicated"] for h in held.values()}
    assert sum(rows.values()) / dp == EXPECTED["replicated_bytes_even"]


def test_every_rank_stores_whole_chunks_so_the_last_row_carries_the_padding(held: dict[int, dict]) -> None:
    dp = EXPECTED["dp"]
    for h in held.values():
        assert h["storage"] == EXPECTED["storage_bytes"] == 121_472
        padding = h["storage"] - h["split"] - h["replicated"]
        assert padding == (EXPECTED["padding_bytes_last"] if h["row"] == dp - 1 else 0)
    assert EXPECTED["padding_bytes_last"] == 256


def test_an_even_vocabulary_needs_no_padding() -> None:
    """The page's exercise: with 128 tokens (Megatron pads its vocabulary to a multiple of
    128 for this reason) every dp row holds the same and nothing is padded."""
    even = figures("mesh_2d", {"vocab": 128})
    assert even["padding_bytes_last"] == 0
    assert even["replicated_bytes_first"] == even["replicated_bytes_last"] == even["replicated_bytes_even"]
    assert even["storage_bytes"] == EXPECTED["storage_bytes"]  # 127 rows were stored as 128 anyway
