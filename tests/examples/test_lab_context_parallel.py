"""The context-parallel lab (examples/context_parallel.py) under torchrun, tied to calc.

Four gloo processes, one context-parallel group of cp = 4, each holding s/cp tokens of one
causal grouped-query attention: ring attention by hand (point-to-point K/V blocks, online
softmax, a ring backward that brings dK/dV home) with Llama 3's balanced split and with the
contiguous one, and DeepSpeed-Ulysses by hand (all-to-all to whole heads and back) each give
the output and gradients of one process; the bytes each rank sends per pass are
calc.context's ring_sent_per_gpu_layer_bytes and ulysses_sent_per_gpu_layer_bytes (16-bit
there, scaled to the lab's fp32), and the work of each rank at each ring step is
calc.context.ring_step_work's, through `widgets.labs.context_parallel`.
"""

from __future__ import annotations

import importlib.util

import pytest
from labrun import EXAMPLES, WORLD, assert_page_quotes_the_report, checks_of, file_constants, lab_report, torchrun

from calc.context import rank_chunks
from widgets.labs import context_parallel as lab
from widgets.labs import figures

EXPECTED = figures("context_parallel")
SPLITS = ("balanced", "contiguous")


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("context_parallel.py", (), WORLD)]


@pytest.fixture(scope="module")
def cp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("cp") / "cp.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "context_parallel", WORLD), done.stdout


def measured(run: tuple[dict, str], name: str) -> float:
    return checks_of(run[0])[name]["measured"]


def test_every_check_passes_on_gloo(cp_run: tuple[dict, str]) -> None:
    report, stdout = cp_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    # per split 4 differences + 2 byte counts + cp ranks' work + 2 step figures; Ulysses 4 + 4
    assert len(report["checks"]) == 2 * (4 + 2 + WORLD + 2) + 8


def test_config_is_the_widgets_and_the_files_constants(cp_run: tuple[dict, str]) -> None:
    report, _ = cp_run
    assert lab.CONFIG["world_size"] == WORLD == report["world_size"]
    assert {key: report["config"][key] for key in lab.CONFIG if key != "world_size"} == {
        key: value for key, value in lab.CONFIG.items() if key != "world_size"}
    constants = {k.lower(): v for k, v in file_constants(EXAMPLES / "context_parallel.py").items()}
    shared = set(constants) & set(lab.CONFIG)
    assert shared == set(lab.CONFIG) - {"world_size"}
    assert all(constants[key] == lab.CONFIG[key] for key in shared)


def test_outputs_and_gradients_equal_one_process_within_the_tolerance(cp_run: tuple[dict, str]) -> None:
    """fp32: the ring adds the blocks' softmax shares in another order than one process,
    so its differences are a few ulps; Ulysses runs the very same attention per head."""
    checks = checks_of(cp_run[0])
    differences = {name: c["measured"] for name, c in checks.items() if "max |" in name}
    assert len(differences) == 12
    assert {name.split(": ")[1] for name in differences} == {
        f"max |{g} - one process|" for g in ("output", "dQ", "dK", "dV")}
    assert all(0 <= d <= lab.CONFIG["tolerance"] for d in differences.values()), differences


@pytest.mark.parametrize("split", SPLITS)
def test_ring_bytes_per_rank_are_calcs(cp_run: tuple[dict, str], split: str) -> None:
    """A K/V block is 2 · (s/cp) · b · h_kv numbers: 2 · 16 · 2 · 64 · 4 = 16,384 bytes in
    fp32. Forward cp - 1 = 3 blocks; backward the blocks again and dK/dV, 6 blocks. The
    split changes who holds which tokens, not how many: the bytes are the same."""
    assert EXPECTED["block_bytes"] == 16_384
    assert measured(cp_run, f"ring {split}: bytes sent per rank, forward (K/V blocks)") \
        == EXPECTED["ring_forward_bytes"] == 3 * EXPECTED["block_bytes"] == 49_152
    assert measured(cp_run, f"ring {split}: bytes sent per rank, backward (K/V and dK/dV)") \
        == EXPECTED["ring_backward_bytes"] == 6 * EXPECTED["block_bytes"] == 98_304


def test_ulysses_bytes_and_all_to_alls_are_calcs(cp_run: tuple[dict, str]) -> None:
    """Four all-to-alls each way (Q, K, V, O), each keeping 1/cp: (cp - 1)/cp · (s/cp) · b ·
    (2h + 2h_kv) = 3/4 · 16 · 2 · 384 numbers = 36,864 bytes per pass, fewer than the ring's
    49,152 forward, and the same backward where the ring sends twice its forward."""
    for phase in ("forward", "backward"):
        assert measured(cp_run, f"ulysses: bytes sent per rank, {phase}") == EXPECTED[f"ulysses_{phase}_bytes"] == 36_864
    assert measured(cp_run, "ulysses: all-to-alls, forward (Q, K, V, O)") == EXPECTED["ulysses_all_to_alls_forward"] == 4
    assert measured(cp_run, "ulysses: all-to-alls, backward") == EXPECTED["ulysses_all_to_alls_backward"] == 4
    assert EXPECTED["ulysses_bytes"] < EXPECTED["ring_bytes"]


@pytest.mark.parametrize("split", SPLITS)
def test_each_ranks_work_is_ring_step_work(cp_run: tuple[dict, str], split: str) -> None:
    """calc.context.ring_step_work summed over the steps for each rank: balanced, 2 blocks
    each (1/2 at every step); contiguous, rank r does r + 1/2 (the last cp - 1/2)."""
    per_rank = lab.rank_work(lab.CONFIG, split)
    for r in range(WORLD):
        assert measured(cp_run, f"ring {split}: rank {r}'s work over the {WORLD} steps (blocks)") == per_rank[r]
    if split == "balanced":
        assert per_rank == [EXPECTED["balanced_work_per_rank"]] * WORLD == [2.0] * WORLD
    else:
        assert (per_rank[0], per_rank[-1]) == (EXPECTED["contiguous_work_first"], EXPECTED["contiguous_work_last"]) == (0.5, 3.5)


def test_the_balanced_split_shortens_the_ring(cp_run: tuple[dict, str]) -> None:
    """A step lasts as long as its busiest rank: balanced, 1/2 block at every step, 2 in
    all; contiguous, a whole block from step 1 on, 1/2 + 3 = 3.5: 1.75 times as long."""
    assert measured(cp_run, "ring balanced: most work of a rank in one step (blocks)") == EXPECTED["balanced_work_per_step"] == 0.5
    assert measured(cp_run, "ring contiguous: most work of a rank in one step (blocks)") == EXPECTED["contiguous_busiest_step"] == 1
    balanced = measured(cp_run, "ring balanced: sum over steps of the busiest rank's work (blocks)")
    contiguous = measured(cp_run, "ring contiguous: sum over steps of the busiest rank's work (blocks)")
    assert (balanced, contiguous) == (EXPECTED["balanced_busiest_sum"], EXPECTED["contiguous_busiest_sum"]) == (2, 3.5)
    assert contiguous / balanced == EXPECTED["work_imbalance"] == 1.75
    assert EXPECTED["contiguous_attention_flops"] / EXPECTED["balanced_attention_flops"] == 1.75


def test_the_labs_chunks_are_calcs_and_cover_the_sequence_once() -> None:
    """In-process, no torchrun: the lab's rank_chunks is calc.context.rank_chunks for
    cp = 1 ... 8, and the ranks' shards put side by side hold every token exactly once."""
    spec = importlib.util.spec_from_file_location("lab_context_parallel", EXAMPLES / "context_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch = module.torch
    for cp in range(1, 9):
        for split in SPLITS:
            assert tuple(map(tuple, module.rank_chunks(cp, split))) == rank_chunks(cp, split), (cp, split)
    layout = module.rank_chunks(4, "balanced")
    tokens = torch.arange(64.0).view(1, 1, 64, 1)
    held = torch.cat([module.shard(tokens, chunks, 8) for chunks in layout], dim=2).flatten()
    assert sorted(held.tolist()) == list(range(64))
    assert held[:16].tolist() == list(range(8)) + list(range(56, 64))  # rank 0: chunks 0 and 7


def test_the_page_exercises_follow_the_overrides() -> None:
    """Two ranks: the ring sends 1 block forward and 2 backward; with as many K/V heads as
    query heads (no grouped-query attention) a block is twice as large."""
    two = figures("context_parallel", {"world_size": 2})
    assert (two["ring_forward_blocks"], two["ring_backward_blocks"]) == (1, 2)
    assert two["ring_backward_bytes"] == 2 * two["block_bytes"] == 65_536
    assert two["work_imbalance"] == 1.5
    assert figures("context_parallel", {"kv_heads": 8})["ring_forward_bytes"] == 2 * EXPECTED["ring_forward_bytes"]


def test_the_page_quotes_what_the_lab_prints(cp_run: tuple[dict, str]) -> None:
    """The report on the lab's page (docs/*/lab-context-parallel.md) is this run's, check by check."""
    assert_page_quotes_the_report("lab-context-parallel", cp_run[1])
