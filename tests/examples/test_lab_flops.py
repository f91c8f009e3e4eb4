"""The FLOP-counting lab (examples/flops.py), one process, tied to calc.

FlopCounterMode's count of one training step of the lab's GPT is Narayanan et al.
2021's Eq. 3 and its term-by-term derivation (calc.models.megatron_forward_flops,
megatron_flops_per_iteration) exactly, per op and per pass; with recomputation it is
Eq. 3's "full" and "selective" once checkpoint's early stop is off; the step over 6ND
is calc.compute's ratio for both choices of N.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from labrun import checks_of, lab_report, python_run

from widgets.labs import figures
from widgets.labs.flops import CONFIG

LAB = Path(__file__).resolve().parents[2] / "examples" / "flops.py"
REL = 1e-12  # the ratios are floats; every FLOP and parameter count is compared exactly

# check name in the lab's report (after "s=<seq_len>: ") -> figure of widgets.labs.flops
SHORT = {
    "parameters": "parameters",
    "forward aten.addmm (qkv, proj, fc1, fc2; bias adds not counted)": "forward_addmm_flops",
    "forward aten.mm (tied output head)": "forward_mm_flops",
    "forward aten.bmm (QK^T and attention over V, full s x s)": "forward_bmm_flops",
    "forward total": "forward_flops",
    "backward aten.mm (input and weight gradients)": "backward_mm_flops",
    "backward aten.bmm (attention)": "backward_bmm_flops",
    "backward total": "backward_flops",
    "step, no recomputation (Eq. 3, 72)": "step_flops",
    "attention share of the step (bmm)": "attention_fraction",
    "step / 6ND, N = every parameter": "ratio_6nd",
    "step / 6ND, N = 12lh^2 (non-embedding)": "ratio_6nd_non_embedding",
    "step, full recomputation (Eq. 3, 96)": "full_flops",
    "step, full recomputation, checkpoint's default early stop": "full_early_stop_flops",
    "step, selective recomputation (attention core)": "selective_flops",
    "step, selective recomputation, checkpoint's default early stop": "selective_early_stop_flops",
    "step, fused sdpa kernel with torch's sdpa formula registered": "fused_flops",
}
LONG = {
    "parameters": "long_parameters",
    "step, no recomputation (Eq. 3, 72)": "long_step_flops",
    "attention share of the step (bmm)": "long_attention_fraction",
    "step / 6ND, N = every parameter": "long_ratio_6nd",
    "step / 6ND, N = 12lh^2 (non-embedding)": "long_ratio_6nd_non_embedding",
}


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("flops.py", (), None)]


@pytest.fixture(scope="module")
def flops_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("flops") / "flops.json"
    script, args, world = LAB_RUNS[0]
    done = python_run(script, *args, "--json", str(path))
    return lab_report(path, "flops", CONFIG["world_size"]), done.stdout


def measured(report: dict) -> dict[str, float]:
    """The lab's measured values, keyed by the widget's figure names."""
    checks = checks_of(report)
    short, long = report["config"]["seq_len"], report["config"]["long_seq_len"]
    out = {figure: checks[f"s={short}: {name}"]["measured"] for name, figure in SHORT.items()}
    out |= {figure: checks[f"s={long}: {name}"]["measured"] for name, figure in LONG.items()}
    return out


def test_every_check_passes_on_the_cpu(flops_run: tuple[dict, str]) -> None:
    report, stdout = flops_run
    assert report["device"] == "cpu" and report["backend"] == "none"
    assert all(check["ok"] for check in report["checks"]), stdout
    assert len(report["checks"]) == len(SHORT) + len(LONG)  # every check is tied to calc below


def test_config_is_the_widgets_and_the_files_constants(flops_run: tuple[dict, str]) -> None:
    report, _ = flops_run
    shared = set(report["config"]) & set(CONFIG)
    assert shared == set(CONFIG) - {"world_size"}
    assert {key: report["config"][key] for key in shared} == {key: CONFIG[key] for key in shared}
    constants = {}
    for node in ast.parse(LAB.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            for name, value in zip(node.targets[0].elts, node.value.elts):  # type: ignore[attr-defined]
                constants[name.id] = ast.literal_eval(value)  # type: ignore[attr-defined]
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper():
            try:
                constants[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass  # a computed constant (the fused-kernel formulas)
    for key in shared:
        assert constants[key.upper()] == CONFIG[key], key


def test_every_measured_figure_is_calcs(flops_run: tuple[dict, str]) -> None:
    """FLOP and parameter counts exactly (integers), ratios to 1e-12."""
    report, _ = flops_run
    expected = figures("flops", {k: v for k, v in report["config"].items() if k in CONFIG})
    for figure, value in measured(report).items():
        if isinstance(value, int):
            assert value == expected[figure], figure
        else:
            assert value == pytest.approx(expected[figure], rel=REL), figure


def test_the_step_is_eq3_and_three_forward_passes(flops_run: tuple[dict, str]) -> None:
    """72·B·s·l·h²·(1 + s/(6h) + V/(12lh)) without recomputation, 96·… with full
    recomputation (Narayanan et al. 2021, Eq. 3), and backward = 2 × forward."""
    from calc.models import megatron_flops_per_iteration

    report, _ = flops_run
    c, got = report["config"], measured(report)
    shape = dict(layers=c["layers"], hidden=c["hidden"], vocab=c["vocab"], global_batch=c["global_batch"])
    assert got["step_flops"] == megatron_flops_per_iteration(**shape, seq_len=c["seq_len"], recompute="none")
    assert got["long_step_flops"] == megatron_flops_per_iteration(**shape, seq_len=c["long_seq_len"], recompute="none")
    assert got["full_flops"] == megatron_flops_per_iteration(**shape, seq_len=c["seq_len"], recompute="full")
    assert got["selective_flops"] == megatron_flops_per_iteration(**shape, seq_len=c["seq_len"],
                                                                  recompute="selective")
    assert got["backward_flops"] == 2 * got["forward_flops"]
    assert got["forward_flops"] + got["backward_flops"] == got["step_flops"]


def test_recomputation_costs_what_calc_says_and_early_stop_less(flops_run: tuple[dict, str]) -> None:
    """Full recomputation reruns the layers' forward (calc.activations.recompute_overhead,
    about a third here); selective only the attention core; checkpoint's early stop skips
    the last matmul of each checkpointed region, so it costs less than either formula."""
    got = measured(flops_run[0])
    expected = figures("flops")
    assert got["full_flops"] / got["step_flops"] - 1 == pytest.approx(expected["full_overhead"], rel=REL)
    assert got["selective_flops"] / got["step_flops"] - 1 == pytest.approx(expected["selective_overhead"], rel=REL)
    assert got["step_flops"] < got["selective_early_stop_flops"] < got["selective_flops"] < got["full_flops"]
    assert got["full_early_stop_flops"] < got["full_flops"]


def test_the_fused_cpu_attention_kernel_is_missing_from_the_counters_table(flops_run: tuple[dict, str]) -> None:
    """On a CPU, SDPA runs aten._scaled_dot_product_flash_attention_for_cpu, which
    FlopCounterMode's table lacks: the step then counts no attention at all."""
    report, _ = flops_run
    notes = report["notes"]
    assert notes["fused_attention_ops"] == ["aten._scaled_dot_product_flash_attention_for_cpu",
                                            "aten._scaled_dot_product_flash_attention_for_cpu_backward"]
    assert notes["fused_step_flops_default_table"] == figures("flops")["fused_default_table_flops"]


def test_the_counter_sees_only_matmuls(flops_run: tuple[dict, str]) -> None:
    """Only mm, addmm and bmm carry FLOPs; LayerNorm, GELU, softmax, the residual adds,
    the embedding (forward and backward) and the loss run but count 0."""
    notes = flops_run[0]["notes"]
    assert set(notes["per_op"]["forward"]) == {"aten.addmm", "aten.mm", "aten.bmm"}
    assert set(notes["per_op"]["backward"]) == {"aten.mm", "aten.bmm"}  # no addmm: no bias in a gradient matmul
    forward, backward = notes["uncounted_ops"]["forward"], notes["uncounted_ops"]["backward"]
    layers = CONFIG["layers"]
    assert forward["aten.native_layer_norm"] == backward["aten.native_layer_norm_backward"] == 2 * layers + 1
    assert forward["aten.gelu"] == backward["aten.gelu_backward"] == layers
    assert forward["aten._safe_softmax"] == backward["aten._softmax_backward_data"] == layers
    assert forward["aten.embedding"] == backward["aten.embedding_dense_backward"] == 2
    assert {"aten._log_softmax", "aten.nll_loss_forward"} <= set(forward)
    assert backward["aten.sum"] >= 4 * layers  # the four bias gradients of each layer


def test_6nd_undercounts_more_at_the_longer_sequence(flops_run: tuple[dict, str]) -> None:
    """With Kaplan's N = 12lh² the step over 6ND is Eq. 3's bracket 1 + s/(6h) + V/(12lh):
    the attention term s/(6h) grows from 1/12 to 2/3 of 6ND between s = 32 and 256."""
    report, _ = flops_run
    c, got = report["config"], measured(report)
    for prefix, s in (("", c["seq_len"]), ("long_", c["long_seq_len"])):
        bracket = 1 + s / (6 * c["hidden"]) + c["vocab"] / (12 * c["layers"] * c["hidden"])
        assert got[f"{prefix}ratio_6nd_non_embedding"] == pytest.approx(bracket, rel=REL)
        assert 1 < got[f"{prefix}ratio_6nd"] < got[f"{prefix}ratio_6nd_non_embedding"]
    assert got["long_ratio_6nd"] > got["ratio_6nd"] and got["long_attention_fraction"] > 5 * got["attention_fraction"]
    assert math.isclose(got["long_ratio_6nd_non_embedding"], 1.75, rel_tol=REL)
