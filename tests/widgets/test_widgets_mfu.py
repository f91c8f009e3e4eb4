"""Widget `mfu`: each published run's utilization, the way its paper counts it and as
MFU (calc.utilization), in both languages."""

from __future__ import annotations

import pytest

from calc.utilization import RUNS, run_utilization
from widgets.build.native import locale
from widgets.framework.core import evaluate, render_widget


def test_default_is_palm_and_reproduces_its_46_2_percent() -> None:
    _, v = evaluate("mfu", {})
    assert round(v["mfu"], 3) == 0.462 and v["counted_utilization"] == v["mfu"]
    assert round(v["mfu_6n"], 3) == 0.457


def test_megatron_52_percent_is_hardware_flops() -> None:
    _, v = evaluate("mfu", {"run": "megatron-1t"})
    assert round(v["counted_utilization"], 2) == 0.52 and round(v["mfu"], 2) == 0.39
    assert v["counted_flops_per_token"] > v["model_flops_per_token"] > v["flops_per_token_6n"]


@pytest.mark.parametrize("run", RUNS)
def test_every_run_equals_calc(run: str) -> None:
    _, v = evaluate("mfu", {"run": run})
    r = run_utilization(run)
    assert (v["mfu"], v["mfu_6n"], v["tokens_per_gpu_s"]) == (r.mfu, r.mfu_6n, r.tokens_per_gpu_s)
    assert v["model_over_6n"] >= 1


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("run", RUNS)
def test_sentence_names_how_the_source_counts(run: str, lang: str) -> None:
    loc = locale(lang)
    html = render_widget("mfu", {"run": run}, loc)
    family = run.split("-")[0]
    _, v = evaluate("mfu", {"run": run})
    expected = loc.t(f"mfu.counted_{family}", counted=loc.format("fraction", v["counted_utilization"]),
                     mfu=loc.format("fraction", v["mfu"]))
    assert expected in html
    assert "HFU" in html if run == "megatron-1t" else True
