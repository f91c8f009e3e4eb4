"""The tensor-parallel lab (examples/tensor_parallel.py) under torchrun, tied to calc.

Four gloo processes, one tensor-parallel group of t = 4: Megatron's split by hand
(f and g), its sequence-parallel variant (all-gather and reduce-scatter) and
torch.distributed.tensor.parallel (counted under CommDebugMode) each give the output and
gradients of the unsharded layers; their collectives per layer and the bytes a rank sends
per layer are the figures of `widgets.labs.tensor_parallel`, i.e. of
calc.tensor.sent_per_gpu_layer_bytes (fp16 there, scaled to the lab's fp32).
"""

from __future__ import annotations

import importlib.util

import pytest
from labrun import file_constants, EXAMPLES, WORLD, assert_page_quotes_the_report, checks_of, lab_report, torchrun

from widgets.labs import figures
from widgets.labs import tensor_parallel as lab

EXPECTED = figures("tensor_parallel")


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("tensor_parallel.py", (), WORLD)]


@pytest.fixture(scope="module")
def tp_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("tp") / "tp.json"
    script, args, world = LAB_RUNS[0]
    done = torchrun(script, *args, "--json", str(path), world=world)
    return lab_report(path, "tensor_parallel", WORLD), done.stdout


def test_every_check_passes_on_gloo(tp_run: tuple[dict, str]) -> None:
    report, stdout = tp_run
    assert report["backend"] == "gloo"
    assert all(check["ok"] for check in report["checks"]), stdout
    assert len(report["checks"]) == 26


def test_config_is_the_widgets_and_the_files_constants(tp_run: tuple[dict, str]) -> None:
    report, _ = tp_run
    assert lab.CONFIG["world_size"] == WORLD == report["world_size"]
    assert {key: report["config"][key] for key in lab.CONFIG if key != "world_size"} == {
        key: value for key, value in lab.CONFIG.items() if key != "world_size"}
    constants = {k.lower(): v for k, v in file_constants(EXAMPLES / "tensor_parallel.py").items()}
    shared = set(constants) & set(lab.CONFIG)
    assert shared == set(lab.CONFIG) - {"world_size"}
    assert all(constants[key] == lab.CONFIG[key] for key in shared)


def test_outputs_and_gradients_equal_one_process_within_the_tolerance(tp_run: tuple[dict, str]) -> None:
    """fp32; only the order of the sums differs (the row-parallel partial sums are added
    by the all-reduce), so the differences are a few float32 ulps, not zero."""
    checks = checks_of(tp_run[0])
    differences = {name: c["measured"] for name, c in checks.items() if "max |" in name}
    assert len(differences) == 9
    assert all(0 <= d <= lab.CONFIG["tolerance"] for d in differences.values()), differences


def test_collectives_per_layer_are_megatrons(tp_run: tuple[dict, str]) -> None:
    """Shoeybi et al. Fig. 4 (f, g: 2 all-reduces each way) and Korthikanti et al. Sec. 4.2.2
    (2 all-gathers and 2 reduce-scatters each way), for the hand-written layers and for
    DTensor, whose ColwiseParallel/RowwiseParallel make the same all-reduces."""
    checks = checks_of(tp_run[0])

    def measured(name: str) -> float:
        return checks[name]["measured"]

    for way in ("tp", "dtensor"):
        assert measured(f"{way}: all-reduces per layer, forward" + (" (g)" if way == "tp" else "")) == EXPECTED["all_reduces_forward"]
        assert measured(f"{way}: all-reduces per layer, backward" + (" (f)" if way == "tp" else "")) == EXPECTED["all_reduces_backward"]
        assert measured(f"{way}: collectives per layer") == EXPECTED["collectives_per_layer"] == 4
    for phase in ("forward", "backward"):
        assert measured(f"sp: all-gathers per layer, {phase}") == EXPECTED[f"sp_all_gathers_{phase}"] == 2
        assert measured(f"sp: reduce-scatters per layer, {phase}") == EXPECTED[f"sp_reduce_scatters_{phase}"] == 2
    assert measured("sp: collectives per layer") == EXPECTED["sp_collectives_per_layer"] == 8


def test_bytes_sent_per_rank_per_layer_are_calcs(tp_run: tuple[dict, str]) -> None:
    """calc.tensor.sent_per_gpu_layer_bytes at s = 32, b = 2, h = 64, t = 4 in fp32:
    4 × 2·3/4 × 16,384 = 98,304 bytes; the sequence-parallel formula gives the same."""
    checks = checks_of(tp_run[0])
    assert checks["tp: bytes sent per rank per layer (ring)"]["measured"] == EXPECTED["sent_bytes"] == 98_304
    assert checks["dtensor: bytes sent per rank per layer (ring)"]["measured"] == EXPECTED["sent_bytes"]
    assert checks["sp: bytes sent per rank per layer (ring)"]["measured"] == EXPECTED["sp_sent_bytes"] == 98_304
    assert EXPECTED["message_bytes"] * EXPECTED["collectives_per_layer"] * 1.5 == EXPECTED["sent_bytes"]


def test_each_rank_holds_the_split_weights_over_t_and_the_norms_whole(tp_run: tuple[dict, str]) -> None:
    """(12h² + 7h)/t + 6h = 12,784 parameters of a layer per rank, by hand and in DTensor's
    local tensors; calc's weights_per_gpu_layer, which splits the norms too, says 12,496."""
    checks = checks_of(tp_run[0])
    for way in ("tp", "dtensor"):
        assert checks[f"{way}: parameters per rank per layer"]["measured"] == EXPECTED["params_per_rank_layer"] == 12_784
    assert EXPECTED["params_per_rank_layer"] - EXPECTED["params_per_rank_layer_approx"] == 6 * 64 * (1 - 1 / 4)


def test_sequence_parallel_sums_the_partial_norm_and_bias_gradients_once(tp_run: tuple[dict, str]) -> None:
    """On a sequence slice the LayerNorm and row-bias gradients are partial: one all-reduce
    of L·6h values after backward, 3,072 bytes, outside the per-layer collectives."""
    checks = checks_of(tp_run[0])
    name = "sp: bytes of LayerNorm and row-bias gradients all-reduced after backward"
    assert checks[name]["measured"] == EXPECTED["sp_replicated_grad_bytes"] == 3_072


def test_the_ranks_parts_put_back_together_are_the_whole_layer() -> None:
    """In-process, no torchrun: the t parts ParallelBlock cuts from a Block cover its weights
    exactly once (columns of QKV and fc1, rows of proj and fc2), and a part has the
    parameters the book counts."""
    spec = importlib.util.spec_from_file_location("lab_tensor_parallel", EXAMPLES / "tensor_parallel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch = module.torch
    full = module.build(torch.device("cpu"))[0]
    t = lab.CONFIG["world_size"]
    parts = [module.ParallelBlock(full, r, t, sequence_parallel=False) for r in range(t)]
    assert torch.equal(torch.cat([p.qkv_w for p in parts], 0), full.qkv.weight)
    assert torch.equal(torch.cat([p.proj_w for p in parts], 1), full.proj.weight)
    assert torch.equal(torch.cat([p.fc1_w for p in parts], 0), full.fc1.weight)
    assert torch.equal(torch.cat([p.fc2_w for p in parts], 1), full.fc2.weight)
    assert torch.equal(torch.cat([p.qkv_b for p in parts]), full.qkv.bias)
    assert all(torch.equal(p.proj_b, full.proj.bias) and torch.equal(p.ln1.weight, full.ln1.weight) for p in parts)
    assert sum(x.numel() for x in parts[0].parameters()) == EXPECTED["params_per_rank_layer"]


def test_the_page_quotes_what_the_lab_prints(tp_run: tuple[dict, str]) -> None:
    """The report on the lab's page (docs/*/lab-tensor-parallel.md) is this run's, check by check."""
    assert_page_quotes_the_report("lab-tensor-parallel", tp_run[1])
