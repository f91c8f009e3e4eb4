"""The ZeRO lab (examples/zero.py) under torchrun, tied to calc.

Four gloo processes: ZeRO stages 1, 2 and 3 by hand, ZeroRedundancyOptimizer over DDP and
FSDP2. What each rank holds is calc.zero.state_per_gpu (ZeRO Sec. 5, Fig. 1: bf16 weights
and gradients, K = 12), what it sends is calc.zero.sent_per_gpu_elements (Sec. 7: stage 3
is 1.5x plain data parallelism); the stages agree bitwise with each other and stay close
to one process; PyTorch's shards are the sizes its partitioning rules give.
"""

from __future__ import annotations


import pytest
from labrun import file_constants, EXAMPLES, WORLD, assert_page_quotes_the_report, checks_of, lab_report, torchrun

from calc import zero as calc_zero
from widgets.labs import figures
from widgets.labs import zero as lab

EXPECTED = figures("zero")


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("zero.py", (), WORLD)]


@pytest.fixture(scope="module")
def zero_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("zero") / "zero.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "zero", WORLD), done.stdout


def measured(report: dict, name: str) -> float:
    return checks_of(report)[name]["measured"]


def test_every_check_passes_on_gloo(zero_run: tuple[dict, str]) -> None:
    report, stdout = zero_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    assert len(report["checks"]) == 48
    assert measured(report, "parameters") == EXPECTED["parameters"] == 110_336


def test_config_is_the_widgets_and_the_files_constants(zero_run: tuple[dict, str]) -> None:
    report, _ = zero_run
    assert lab.CONFIG["world_size"] == WORLD == report["world_size"]
    assert report["config"] == {key: value for key, value in lab.CONFIG.items() if key != "world_size"}
    constants = {k.lower(): v for k, v in file_constants(EXAMPLES / "zero.py").items()}
    # the dtypes' sizes are not literals in the file: the JSON (checked above) carries them
    shared = set(lab.CONFIG) - {"world_size", "weight_bytes", "grad_bytes", "optimizer_bytes"}
    assert shared <= set(constants)
    assert {key: constants[key] for key in shared} == {key: lab.CONFIG[key] for key in shared}


def test_the_recipe_is_zeros_mixed_precision_adam(zero_run: tuple[dict, str]) -> None:
    """bf16 weights and gradients, fp32 masters and moments: calc's 2 + 2 + K, K = 12."""
    from calc.memory import GRAD_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES

    c = zero_run[0]["config"]
    assert (c["weight_bytes"], c["grad_bytes"], c["optimizer_bytes"]) == (WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES)


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_bytes_each_rank_holds_are_zeros_figure_1(zero_run: tuple[dict, str], stage: int) -> None:
    """Weights 2Ψ (stage 3: 2Ψ/N), gradients 2Ψ (stages 2, 3: 2Ψ/N), optimizer 12Ψ/N,
    summed over the storages each rank really holds; the same on every rank."""
    report, _ = zero_run
    psi, n = EXPECTED["parameters"], WORLD
    state = calc_zero.state_per_gpu(params=psi, dp=n, zero_stage=stage)
    got = {kind: measured(report, f"stage {stage}: bytes of {kind} per rank") for kind in ("weights", "grads", "optimizer")}
    assert got == {"weights": state.weights, "grads": state.grads, "optimizer": state.optimizer}
    assert got["weights"] == EXPECTED[f"stage{stage}_weight_bytes"] and got["grads"] == EXPECTED[f"stage{stage}_grad_bytes"]
    assert sum(got.values()) == calc_zero.state_per_gpu_bytes(params=psi, dp=n, zero_stage=stage)


def test_stage_3_holds_one_nth_of_plain_data_parallelism(zero_run: tuple[dict, str]) -> None:
    """ZeRO Fig. 1: stage 3 divides the 16Ψ of plain DP by N; stage 1 keeps 4Ψ whole."""
    report, _ = zero_run
    psi = EXPECTED["parameters"]
    total = {s: sum(measured(report, f"stage {s}: bytes of {k} per rank") for k in ("weights", "grads", "optimizer"))
             for s in (1, 2, 3)}
    assert total[3] * WORLD == 16 * psi
    assert total[1] == 4 * psi + 12 * psi / WORLD
    assert total[1] > total[2] > total[3]
    # never more than the root and one block unsharded at once
    peak = measured(report, "stage 3: most parameter elements unsharded at once")
    assert peak == EXPECTED["stage3_peak_unsharded"] == EXPECTED["root_params"] + EXPECTED["block_params"] < psi


def test_elements_sent_are_zeros_section_7(zero_run: tuple[dict, str]) -> None:
    """Per rank per step, ring: stages 1-2 2(N-1)/N·Ψ (reduce-scatter + all-gather, as
    plain DP's all-reduce), stage 3 3(N-1)/N·Ψ (a second all-gather): 1.5x."""
    report, _ = zero_run
    psi = EXPECTED["parameters"]
    sent = {s: measured(report, f"stage {s}: elements sent per rank per step (ring)") for s in (1, 2, 3)}
    for s in (1, 2, 3):
        assert sent[s] == calc_zero.sent_per_gpu_elements(params=psi, dp=WORLD, zero_stage=s) == EXPECTED[f"stage{s}_sent_elements"]
        assert measured(report, f"stage {s}: collectives per step") == EXPECTED[f"stage{s}_collectives"]
    assert sent[3] / sent[1] == calc_zero.comm_over_dp(3) == EXPECTED["stage3_comm_ratio"] == 1.5
    assert sent[1] == sent[2]


def test_stages_agree_bitwise_and_stay_close_to_one_process(zero_run: tuple[dict, str]) -> None:
    """The three stages run the same arithmetic on the same chunks: equal to the bit.
    Against one process (whole batch, same bf16 recipe) only the order of the gradient
    sums differs: a bf16-sized distance, not zero, below the tolerance."""
    report, _ = zero_run
    c = report["config"]
    assert measured(report, "stage 2: max |master - stage 1|") == 0
    assert measured(report, "stage 3: max |master - stage 1|") == 0
    for way in ("stage 1", "stage 2", "stage 3", "fsdp2"):
        assert 1e-4 < measured(report, f"{way}: distance to one process") <= c["rel_tolerance"]
    fp32 = measured(report, "zero_redundancy_optimizer: distance to one process (fp32)")
    assert 0 <= fp32 <= c["rel_tolerance_fp32"]


def test_zero_redundancy_optimizer_shards_whole_tensors_unequally(zero_run: tuple[dict, str]) -> None:
    """Its greedy partition (largest tensor first, to the least-loaded rank): not Ψ/N."""
    report, _ = zero_run
    shares = lab.zero_redundancy_partition(lab.CONFIG)
    got = [measured(report, f"zero_redundancy_optimizer: parameters whose Adam state rank {r} holds") for r in range(WORLD)]
    assert got == shares == [28_672, 28_672, 26_624, 26_368]
    assert sum(got) == EXPECTED["parameters"]
    assert [measured(report, f"zero_redundancy_optimizer: bytes of Adam moments on rank {r}") for r in range(WORLD)] == [
        8 * s for s in shares]  # fp32 momentum + variance
    imbalance = measured(report, "zero_redundancy_optimizer: largest shard over Psi/N")
    assert imbalance == pytest.approx(EXPECTED["zro_imbalance"], rel=1e-12)
    assert max(got) == EXPECTED["zro_shard_largest"] and min(got) == EXPECTED["zro_shard_smallest"]


def test_zero_redundancy_optimizer_all_reduces_then_broadcasts(zero_run: tuple[dict, str]) -> None:
    """DDP's all-reduce of every gradient, then one broadcast per tensor from its owner:
    Ψ elements each, as CommDebugMode sees them."""
    report, _ = zero_run
    assert measured(report, "zero_redundancy_optimizer: all-reduces per step") == EXPECTED["zro_all_reduces"] == 1
    assert measured(report, "zero_redundancy_optimizer: elements all-reduced per step") == EXPECTED["zro_all_reduced_elements"]
    assert measured(report, "zero_redundancy_optimizer: broadcasts per step (one per tensor)") == EXPECTED["zro_broadcasts"] == 28
    assert measured(report, "zero_redundancy_optimizer: elements broadcast per step") == EXPECTED["zro_broadcast_elements"]


def test_fsdp2_holds_zero_3s_sixteen_bytes_per_parameter_over_n(zero_run: tuple[dict, str]) -> None:
    """fp32 shards (4), fp32 sharded gradients (4) and fp32 moments (8): 16Ψ/N, the
    stage-3 total of calc, split differently; no dim-0 padding at these sizes."""
    report, _ = zero_run
    assert measured(report, "fsdp2: parameter elements per rank (dim 0 padded)") == EXPECTED["fsdp_shard_elements"]
    assert measured(report, "fsdp2: padding elements per rank") == EXPECTED["fsdp_padding_elements"] == 0
    assert measured(report, "fsdp2: bytes of weights per rank (fp32 shards)") == EXPECTED["fsdp_weight_bytes"]
    assert measured(report, "fsdp2: bytes of grads per rank (fp32 shards)") == EXPECTED["fsdp_grad_bytes"]
    assert measured(report, "fsdp2: bytes of optimizer per rank (Adam moments)") == EXPECTED["fsdp_optimizer_bytes"]
    total = measured(report, "fsdp2: bytes of model state per rank")
    assert total == EXPECTED["fsdp_state_bytes"] == calc_zero.state_per_gpu_bytes(
        params=EXPECTED["parameters"], dp=WORLD, zero_stage=3) == EXPECTED["stage3_state_bytes"]


def test_fsdp2_gathers_the_root_once(zero_run: tuple[dict, str]) -> None:
    """FSDP2 does not reshard the root after the forward: 2L + 1 all-gathers, L + 1
    reduce-scatters, so it moves less than ZeRO-3's 3Ψ by the root's Ψ_root."""
    report, _ = zero_run
    for key, name in (("fsdp_all_gathers", "all-gathers per step"), ("fsdp_reduce_scatters", "reduce-scatters per step"),
                      ("fsdp_all_gathered_elements", "elements all-gathered per step"),
                      ("fsdp_reduce_scattered_elements", "elements reduce-scattered per step"),
                      ("fsdp_collectives", "collectives per step")):
        assert measured(report, f"fsdp2: {name}") == EXPECTED[key], name
    moved = measured(report, "fsdp2: elements all-gathered per step") + measured(report, "fsdp2: elements reduce-scattered per step")
    assert moved == 3 * EXPECTED["parameters"] - EXPECTED["root_params"]


def test_a_smaller_world_or_odd_vocabulary_changes_the_figures() -> None:
    """The page's exercises: compute() follows an override (N = 2; a vocabulary FSDP2 must pad)."""
    two = figures("zero", {"world_size": 2})
    assert two["stage3_weight_bytes"] == 2 * EXPECTED["stage3_weight_bytes"]
    assert two["stage1_sent_elements"] == EXPECTED["parameters"]  # 2(N-1)/N = 1 at N = 2
    odd = figures("zero", {"vocab": 130, "world_size": 8})
    assert odd["fsdp_padding_elements"] == (136 - 130) * 64 / 8  # 130 rows padded to 136


def test_the_page_quotes_what_the_lab_prints(zero_run: tuple[dict, str]) -> None:
    """The report on the lab's page (docs/*/lab-zero.md) is this run's, check by check."""
    assert_page_quotes_the_report("lab-zero", zero_run[1])
