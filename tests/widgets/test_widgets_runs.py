"""Widget `runs`: the published layouts of real runs through the planner's model. Its
numbers are calc.runs' (themselves tested against the papers in tests/calc/test_runs.py);
here: every value reaches the page, the figures draw one row per step with the GPU's
line, the mesh names each group's link, and the sentence follows the meaning."""

from __future__ import annotations

import html
import re

import pytest

from calc import runs
from widgets.figures import runs as w
from widgets.framework.core import evaluate, render_output
from widgets.build.native import locale


def page(run: str, lang: str = "id") -> str:
    result = render_output("runs", {"run": run}, locale(lang))
    assert result.ok, result.html
    return result.html


@pytest.mark.parametrize("run", runs.RUNS)
def test_values_are_calc_runs(run: str) -> None:
    _, v = evaluate("runs", {"run": run})
    r = runs.RUNS[run]
    x = runs.evaluate(r)
    assert (v["gpus"], v["tp"], v["cp"], v["pp"], v["dp"], v["ep"]) == (r.gpus, r.tp, r.cp, r.pp, r.dp, r.ep)
    assert v["memory_bytes"] == x.memory_bytes and v["tokens_per_gpu"] == r.seq_len // r.cp
    shares = ("compute_share", "bubble_share", "tp_share", "cp_share", "ep_share", "pp_share", "dp_share")
    assert sum(v[k] for k in shares) == pytest.approx(1.0, rel=1e-12)  # a step is exactly these parts
    for step in runs.build_up(r):
        assert v[f"memory_after_{step.name}"] == step.memory_bytes
        assert v[f"fits_after_{step.name}"] == (step.memory_bytes <= r.memory_bytes)
    assert {k: bool(v[f"{k}_inside"]) for k in w.DIMENSIONS} == runs.links(r)


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("run", runs.RUNS)
def test_the_build_up_draws_a_bar_per_step_and_the_gpu_line(run: str, lang: str) -> None:
    text = page(run, lang)
    build = re.search(r'<svg[^>]*aria-labelledby="w-runs-build-t w-runs-build-d".*?</svg>', text, re.S).group(0)
    bars = re.findall(r'<rect class="(w-c3|w-runs-over)( w-runs-skip)?"', build)
    assert len(bars) == len(runs.BUILD_STEPS)
    r = runs.RUNS[run]
    skipped = [name for name in runs.BUILD_STEPS if not w._used(r, name)]
    assert sum(1 for _, skip in bars if skip) == len(skipped)
    assert build.count('class="w-runs-gpu"') == 1
    loc = locale(lang)
    for name in runs.BUILD_STEPS:
        assert html.escape(loc.t(f"runs.step.{name}"), quote=False) in build


@pytest.mark.parametrize("run", runs.RUNS)
def test_the_mesh_names_each_groups_link(run: str) -> None:
    loc = locale("id")
    text = page(run)
    mesh = re.search(r'<table class="w-runs-mesh">.*?</table>', text, re.S).group(0)
    r = runs.RUNS[run]
    inside = runs.links(r)
    for d in w.DIMENSIONS:
        row = re.search(rf'<th scope="row">{re.escape(loc.t(f"runs.dimension.{d}"))}</th>(.*?)</tr>', mesh).group(1)
        size = getattr(r, d)
        want = "link_none" if size == 1 else "link_inside" if inside[d] else "link_across"
        assert loc.t(f"runs.figure.{want}") in row and loc.integer(size) in row


def test_every_output_reaches_the_page() -> None:
    for run in runs.RUNS:
        _, v = evaluate("runs", {"run": run})
        text = page(run)
        for key in w.OUTPUTS:
            assert f'data-out="{key}"' in text, key


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_the_sentence_follows_the_meaning(lang: str) -> None:
    loc = locale(lang)

    def sentence(run: str) -> str:
        return html.unescape(re.search(r'<p class="w-sentence">(.*?)</p>', page(run, lang)).group(1))

    lead = lambda key: loc.t(f"runs.sentence.{key}").split("{")[0]  # noqa: E731
    long, short, deep = sentence("llama3-405b-128k"), sentence("llama3-405b-8k"), sentence("deepseek-v3")
    assert lead("cp") in long and lead("cp") not in short and lead("cp") not in deep
    assert lead("ep") in deep and lead("ep") not in long
    assert lead("over") in long and lead("fits") in deep
    _, v = evaluate("runs", {"run": "deepseek-v3"})
    assert loc.format("fraction", v["ep_share"]) in deep and loc.format("bytes", v["memory_bytes"]) in deep


def test_a_bad_run_is_a_localized_error() -> None:
    for lang in ("id", "zh"):
        result = render_output("runs", {"run": "gpt-5"}, locale(lang))
        assert not result.ok and 'data-error="errors.choice"' in result.html


@pytest.mark.parametrize("run", runs.RUNS)
def test_the_counts_the_solutions_quote_are_the_runs(run: str) -> None:
    """Chunks, layers per stage, micro-batches in flight and expert replicas come from calc.runs."""
    _, v = evaluate("runs", {"run": run})
    r = runs.RUNS[run]
    assert v["chunks"] * v["chunk_tokens"] == r.seq_len and v["chunk_tokens"] * 2 == v["tokens_per_gpu"]
    assert (v["layers"], v["layers_per_stage"], v["in_flight"], v["expert_replicas"]) == (
        r.layers, r.layers_per_stage, r.in_flight, r.expert_replicas)
