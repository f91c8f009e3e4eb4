"""The activations lab (examples/activations.py), one process, tied to calc.

One GPT layer in bf16 runs three times under saved_tensors_hooks (no, selective and full
recomputation); every tensor autograd saves is mapped to a term of Korthikanti et al.
2022, Sec. 4.1. The test recomputes each term and each mode's total from
calc.activations and checks that the lab found exactly the terms calc keeps per mode.
"""

from __future__ import annotations

import ast

import pytest
from labrun import EXAMPLES, checks_of, lab_report, python_run

from calc.activations import RECOMPUTE_MODES, activation_terms_per_layer, attention_score_bytes_per_layer
from widgets.labs import figures
from widgets.labs.activations import CONFIG, TERMS


# The one launch of the lab (conftest.py starts it early, in the background).
LAB_RUNS = [("activations.py", (), None)]


@pytest.fixture(scope="module")
def activations_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    path = tmp_path_factory.mktemp("activations") / "activations.json"
    script, args, world = LAB_RUNS[0]
    done = python_run(script, *args, "--json", str(path))
    return lab_report(path, "activations", 1), done.stdout


def lab_constants() -> dict:
    """The lab's module-level UPPERCASE constants with a literal value (`A, B = 1, 2` too),
    lowercased: read with ast, without running the file."""
    found = {}
    for node in ast.parse((EXAMPLES / "activations.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            pairs = (zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                     else [(target, value)])
            for name, literal in pairs:
                if isinstance(name, ast.Name) and name.id.isupper() and isinstance(literal, ast.Constant):
                    found[name.id.lower()] = literal.value
    return found


def shape(config: dict) -> dict:
    return dict(hidden=config["hidden"], heads=config["heads"], seq_len=config["seq_len"],
                micro_batch=config["micro_batch"])


def test_every_check_passes_on_the_cpu(activations_run: tuple[dict, str]) -> None:
    report, stdout = activations_run
    assert report["backend"] == "cpu"
    assert all(check["ok"] for check in report["checks"]), stdout
    assert "FAIL" not in stdout and "UNNAMED" not in stdout


def test_the_config_and_the_lab_constants_are_the_widgets(activations_run: tuple[dict, str]) -> None:
    report, _ = activations_run
    shared = set(report["config"]) & set(CONFIG)
    assert shared == set(CONFIG) - {"world_size"}
    assert {key: report["config"][key] for key in shared} == {key: CONFIG[key] for key in shared}
    assert lab_constants() == {key: value for key, value in CONFIG.items() if key != "world_size"}


@pytest.mark.parametrize("mode", RECOMPUTE_MODES)
def test_each_mode_keeps_exactly_calcs_terms_with_calcs_bytes(activations_run: tuple[dict, str], mode: str) -> None:
    """Every term the mode keeps has a check whose measured bytes equal calc's term
    (activation_terms_per_layer); no other term has one; nothing else is saved under a
    paper term's name."""
    report, _ = activations_run
    checks = checks_of(report)
    kept = [t.key for t in activation_terms_per_layer(**shape(report["config"]), recompute=mode)]
    measured = {key: checks[f"{mode}: {key}"] for key in TERMS if f"{mode}: {key}" in checks}
    assert list(measured) == kept
    values = figures("activations")
    for key, check in measured.items():
        assert check["measured"] == check["expected"] == values[f"{key}_bytes"], key
    if mode != "none":
        assert checks[f"{mode}: bytes of the terms it does not keep"]["measured"] == 0


@pytest.mark.parametrize("mode", RECOMPUTE_MODES)
def test_each_modes_total_is_calcs_bytes_per_layer(activations_run: tuple[dict, str], mode: str) -> None:
    """34sbh + 5as²b without recomputation, 34sbh with selective, 2sbh with full."""
    report, _ = activations_run
    total = checks_of(report)[f"{mode}: the paper's terms in all"]
    values = figures("activations")
    assert total["measured"] == total["expected"] == values[f"{mode}_bytes"]
    sbh, as2b = values["sbh"], values["as2b"]
    assert values[f"{mode}_bytes"] == {"none": 34 * sbh + 5 * as2b, "selective": 34 * sbh, "full": 2 * sbh}[mode]


def test_selective_recomputation_drops_the_attention_scores_and_changes_no_gradient(
        activations_run: tuple[dict, str]) -> None:
    report, _ = activations_run
    checks = checks_of(report)
    saved = {mode: checks[f"{mode}: the paper's terms in all"]["measured"] for mode in RECOMPUTE_MODES}
    assert saved["none"] - saved["selective"] == attention_score_bytes_per_layer(**shape(report["config"]))
    for mode in ("selective", "full"):
        assert checks[f"{mode}: max |gradient - no recomputation|"]["measured"] == 0


def test_what_pytorch_keeps_beyond_the_paper_on_the_cpu(activations_run: tuple[dict, str]) -> None:
    """The extras the lab lists on a CPU (PyTorch 2.x): each LayerNorm keeps its mean and
    rstd, b·s values each in bf16; CPU dropout keeps its scaled mask as a bf16 tensor (2
    bytes per element where the paper counts 1). Every saved storage is the paper's terms
    plus these, and full recomputation keeps nothing extra."""
    report, _ = activations_run
    checks = checks_of(report)
    c = report["config"]
    values = figures("activations")
    stats = 2 * 2 * c["micro_batch"] * c["seq_len"] * 2  # two LayerNorms, mean and rstd, bf16
    for mode in RECOMPUTE_MODES:
        extras = {name.removeprefix(f"{mode}: extra: "): check["measured"] for name, check in checks.items()
                  if name.startswith(f"{mode}: extra: ")}
        masks = [t.key for t in activation_terms_per_layer(**shape(c), recompute=mode) if t.key.endswith("_mask")]
        expected = {f"{key} kept as bfloat16, 2 bytes per element (the paper counts 1)": values[f"{key}_bytes"]
                    for key in masks}
        if mode != "full":
            expected["LayerNorm mean and rstd"] = stats
        assert extras == expected, mode
        assert checks[f"{mode}: every saved storage"]["measured"] == values[f"{mode}_bytes"] + sum(expected.values())
