"""Widget `zero` reproduces the seed explainer's step 3 (WIDGETS.md, row `zero`) and the
ZeRO paper's claims: memory falls with every stage and every GPU added; stages 1–2
cost what data parallelism costs, stage 3 half as much again. Its offload control
follows ZeRO-Offload / ZeRO-Infinity and DeepSpeed's rules, and it prints DeepSpeed's
own estimator table for the run (calc.offload)."""

from __future__ import annotations

import re

import pytest

from calc import offload as ds
from calc.models import MODELS, param_count
from widgets.figures import zero
from widgets.framework.core import evaluate, format_value, render_output
from widgets.build.native import locale

# WIDGETS.md, row `zero`: the seed's figures at the default state (8 GPUs, ZeRO-1, Llama 2 7B).
SEED = {
    "state_per_gpu_bytes": 37.07e9,
    "reduction": 2.909,
    "sent_per_gpu_bytes": 23.59e9,
    "fits": 1,
}
STAGES = ("0", "1", "2", "3")
GPU_COUNTS = range(1, 65)


def sentence_of(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


def values(**state: object) -> dict[str, float]:
    return evaluate("zero", state)[1]


@pytest.mark.parametrize("key", SEED)
def test_default_state_reproduces_the_seed_within_a_tenth_of_a_percent(key: str) -> None:
    assert values()[key] == pytest.approx(SEED[key], rel=1e-3)


def test_stage_0_is_plain_data_parallelism() -> None:
    plain, dp = values(stage="0"), evaluate("dp", {})[1]
    assert plain["state_per_gpu_bytes"] == dp["state_per_gpu_bytes"] == plain["dp_state_per_gpu_bytes"]
    assert plain["sent_per_gpu_bytes"] == pytest.approx(dp["sent_per_gpu_bytes"])


@pytest.mark.parametrize("model", MODELS)
def test_memory_never_grows_with_the_stage_or_the_number_of_gpus(model: str) -> None:
    grid = {(n, s): values(gpus=n, stage=s, model=model)["state_per_gpu_bytes"] for n in GPU_COUNTS for s in STAGES}
    for n in GPU_COUNTS:
        by_stage = [grid[n, s] for s in STAGES]
        assert by_stage == sorted(by_stage, reverse=True)
    for s in STAGES:
        by_n = [grid[n, s] for n in GPU_COUNTS]
        assert by_n == sorted(by_n, reverse=True)
        if s != "0":
            assert by_n[-1] < by_n[0]


@pytest.mark.parametrize("n", [2, 8, 64])
def test_stage_3_sends_one_and_a_half_times_plain_dp_and_stages_1_2_the_same(n: int) -> None:
    plain = values(gpus=n, stage="0")["sent_per_gpu_bytes"]
    for s in ("1", "2"):
        v = values(gpus=n, stage=s)
        assert v["sent_per_gpu_bytes"] == pytest.approx(plain) and v["comm_over_dp"] == 1
    v = values(gpus=n, stage="3")
    assert v["sent_per_gpu_bytes"] == pytest.approx(1.5 * plain) and v["comm_over_dp"] == 1.5


def test_stage_3_on_64_gpus_divides_the_state_by_64() -> None:
    v = values(gpus=64, stage="3")
    assert v["reduction"] == pytest.approx(64)
    assert v["state_per_gpu_bytes"] == pytest.approx(v["dp_state_per_gpu_bytes"] / 64)


def test_parts_add_up_and_the_whole_model_is_16_bytes_per_parameter() -> None:
    v = values(stage="2")
    assert v["weights_per_gpu_bytes"] + v["grads_per_gpu_bytes"] + v["optimizer_per_gpu_bytes"] == pytest.approx(v["state_per_gpu_bytes"])
    assert v["weights_bytes"] + v["grads_bytes"] + v["optimizer_bytes"] == v["dp_state_per_gpu_bytes"]
    assert v["weights_per_gpu_bytes"] == v["weights_bytes"] and v["grads_per_gpu_bytes"] == v["grads_bytes"] / 8


def test_default_numbers_in_both_languages() -> None:
    assert format_value("zero", "state_per_gpu_bytes", {}, locale("id")) == "37,1 GB"
    assert format_value("zero", "fits", {}, locale("zh")) == "是"


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", [
    {}, {"stage": "0"}, {"stage": "2", "gpus": 3, "model": "llama2-70b"}, {"stage": "3", "gpus": 64},
    {"stage": "3", "model": "gpt3-175b"},
])
def test_sentence_states_the_current_numbers(lang: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("zero", state, loc)
    sentence = sentence_of(out.html)
    keys = ["state_per_gpu_bytes", "sent_per_gpu_bytes", "gpu_memory_bytes"]
    stage = out.state["stage"]
    keys += {"0": [], "1": ["reduction", "optimizer_bytes", "weights_per_gpu_bytes", "grads_per_gpu_bytes"],
             "2": ["reduction", "weights_per_gpu_bytes"], "3": ["reduction", "comm_over_dp"]}[stage]
    for key in keys:
        assert loc.format(zero.OUTPUTS[key], out.values[key]) in sentence, key
    assert loc.integer(int(out.state["gpus"])) in sentence


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_sentence_changes_with_the_stage_with_fitting_and_with_one_gpu(lang: str) -> None:
    loc = locale(lang)
    sentences = {sentence_of(render_output("zero", {"stage": s}, loc).html) for s in STAGES}
    assert len(sentences) == 4
    fits = sentence_of(render_output("zero", {"stage": "1"}, loc).html)
    over = sentence_of(render_output("zero", {"stage": "1", "model": "llama2-70b"}, loc).html)
    assert fits.rsplit(loc.format("bytes", 80e9), 1)[0] != over.rsplit(loc.format("bytes", 80e9), 1)[0]
    one = sentence_of(render_output("zero", {"gpus": 1}, loc).html)
    assert one not in sentences and loc.format("bytes", values(gpus=1)["state_per_gpu_bytes"]) in one


@pytest.mark.parametrize(("n", "stage", "rows", "owned"), [
    (1, "1", 1, 0),  # one GPU: nothing to shard
    (8, "0", 8, 0),
    (8, "1", 8, 8),  # the optimizer shard of each GPU
    (8, "2", 8, 16),
    (8, "3", 8, 24),
    (64, "3", 8, 24),  # GPU 0..6, an ellipsis, GPU 63
])
def test_figure_draws_a_row_per_gpu_and_highlights_its_shards(n: int, stage: str, rows: int, owned: int) -> None:
    html = render_output("zero", {"gpus": n, "stage": stage}, locale("id")).html
    svg_map = re.search(r'<svg[^>]*aria-labelledby="w-zero-map-t.*?</svg>', html).group(0)
    assert len(re.findall(r">GPU \d+</text>", svg_map)) == rows
    assert svg_map.count("w-zero-owned") == owned
    assert ("GPU 63" in svg_map and "56 GPU lainnya" in svg_map) == (n == 64)
    assert 'class="w-limit"' in html  # the 80 GB line


def test_figure_says_whether_it_fits() -> None:
    loc = locale("id")
    assert "37,1 GB: muat" in render_output("zero", {}, loc).html
    over = render_output("zero", {"stage": "0"}, loc).html
    assert "107,8 GB: tidak muat" in over and 'class="w-over"' in over
    assert re.search(r'<desc id="w-zero-mem-d">[^<]*37,1 GB[^<]*80 GB[^<]*107,8 GB', render_output("zero", {}, loc).html)


# -- offload and DeepSpeed's estimator --------------------------------------------------
PSI = param_count(MODELS["llama2-7b"])
LAYER = 32_000 * 4_096  # Llama 2 7B's largest module: the embedding (and the untied head)


def test_default_state_offloads_nothing() -> None:
    v = values()
    assert v["offload_applied"] == 1 and v["cpu_state_bytes"] == 0 and v["pcie_bytes"] == 0
    assert v["gpu_state_bytes"] == v["state_per_gpu_bytes"]


@pytest.mark.parametrize("stage", ["1", "2", "3"])
def test_optimizer_offload_leaves_the_fp16_weights_on_the_gpu(stage: str) -> None:
    """ZeRO-Offload (Ren et al. 2021, Sec. 4.1-4.2): fp16 weights stay, (2 + 12)Ψ/N goes to the CPU."""
    v = values(stage=stage, offload="optimizer")
    assert v["gpu_state_bytes"] == v["weights_per_gpu_bytes"]
    assert v["cpu_state_bytes"] == pytest.approx(14 * PSI / 8)
    assert v["cpu_node_bytes"] == pytest.approx(14 * PSI)  # one node of 8 GPUs
    assert v["pcie_bytes"] == pytest.approx(4 * PSI / 8)
    assert v["pcie_time"] == pytest.approx(v["pcie_bytes"] / v["pcie_bytes_per_s"])


def test_param_offload_empties_the_gpu_with_zero3_only() -> None:
    v = values(stage="3", offload="optimizer_params")
    assert v["gpu_state_bytes"] == 0 and v["cpu_state_bytes"] == pytest.approx(v["state_per_gpu_bytes"])
    assert v["pcie_bytes"] == pytest.approx(6 * PSI / 8)


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize(("state", "note"), [
    ({"stage": "0", "offload": "optimizer"}, "zero.offload.note_stage0"),
    ({"stage": "0", "offload": "optimizer_params"}, "zero.offload.note_stage0"),
    ({"stage": "1", "offload": "optimizer_params"}, "zero.offload.note_params"),
    ({"stage": "2", "offload": "optimizer_params"}, "zero.offload.note_params"),
])
def test_an_offload_deepspeed_refuses_is_not_applied_and_the_widget_says_why(state: dict, note: str, lang: str) -> None:
    """DeepSpeed's config rules (docs/_pages/config-json.md): CPU offload of the optimizer
    with stages 1-3, offload_param with stage 3 only."""
    loc = locale(lang)
    out = render_output("zero", state, loc)
    assert out.ok and out.values["offload_applied"] == 0
    assert loc.h(note, stage=loc.integer(int(state["stage"]))) in out.html
    fallback = values(stage=state["stage"], offload="none" if state["stage"] == "0" else "optimizer")
    assert {k: out.values[k] for k in fallback if k != "offload_applied"} == \
        {k: v for k, v in fallback.items() if k != "offload_applied"}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", [1, 8, 12, 64])
def test_offloading_never_raises_the_gpu_bytes(model: str, n: int) -> None:
    for stage in STAGES:
        base = values(gpus=n, stage=stage, model=model)["gpu_state_bytes"]
        for where in ds.OFFLOADS:
            v = values(gpus=n, stage=stage, model=model, offload=where)
            assert v["gpu_state_bytes"] <= base
            assert v["fits"] == (v["gpu_state_bytes"] <= v["gpu_memory_bytes"])


@pytest.mark.parametrize(("stage", "where", "row"), [
    ("3", "optimizer_params", 0), ("3", "optimizer", 2), ("3", "none", 4), ("2", "optimizer", 0), ("1", "none", 1),
])
def test_deepspeed_printout_is_the_estimators_table_with_the_run_marked(stage: str, where: str, row: int) -> None:
    html = render_output("zero", {"stage": stage, "offload": where}, locale("id")).html
    v = values(stage=stage, offload=where)
    if stage == "3":
        table = ds.zero3_table(params=PSI, largest_layer_params=LAYER, gpus_per_node=8, nodes=1)
        assert "SW: Model with 6738M total params, 131M largest layer params." in html
    else:
        table = ds.zero2_table(params=PSI, gpus_per_node=8, nodes=1)
    printout = re.search(r"<pre><code[^>]*>(.*?)</code></pre>", html, re.S).group(1)
    lines = printout.split("\n")
    assert lines[1] == "HW: Setup with 1 node, 8 GPUs per node." and lines[3] == "  per CPU  |  per GPU |   Options"
    for i, r in enumerate(table):
        text = r.printed().rstrip()
        assert lines[4 + i] == (f"<mark>{text}</mark>" if i == row else text)
    assert v["ds_gpu_gib"] == table[row].estimate.gpu_gib and v["ds_cpu_gib"] == table[row].estimate.cpu_gib


def test_deepspeed_zero3_on_64_gpus_is_eight_nodes() -> None:
    v = values(gpus=64, stage="3")
    est = ds.zero3_estimate(params=PSI, largest_layer_params=LAYER, gpus_per_node=8, nodes=8,
                            offload_optimizer=False, offload_param=False)
    assert (v["gpus_per_node"], v["nodes"]) == (8, 8)
    assert v["ds_gpu_gib"] == est.gpu_gib
    assert "HW: Setup with 8 nodes, 8 GPUs per node." in render_output("zero", {"gpus": 64, "stage": "3"}, locale("zh")).html


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", [
    {"stage": "2", "offload": "optimizer"}, {"stage": "3", "offload": "optimizer_params", "gpus": 16},
    {"stage": "3", "offload": "optimizer", "model": "llama2-70b", "gpus": 1},
])
def test_offload_sentence_and_comparison_state_the_current_numbers(lang: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("zero", state, loc)
    for key in ("gpu_state_bytes", "cpu_state_bytes", "cpu_node_bytes", "pcie_bytes", "pcie_time",
                "ds_gpu_gib", "ds_cpu_gib", "book_gpu_gib", "book_cpu_node_gib"):
        assert loc.format(zero.OUTPUTS[key], out.values[key]) in out.html, key
    if state["stage"] == "3":
        assert loc.format("count", out.values["largest_layer_params"]) in out.html


def test_stage_0_has_no_deepspeed_estimator() -> None:
    loc = locale("id")
    out = render_output("zero", {"stage": "0"}, loc)
    assert loc.h("zero.ds.stage0") in out.html and "<pre>" not in out.html


@pytest.mark.parametrize("gpus", [1, 8, 64])
def test_megatron_recipe_at_stage_1_is_the_distributed_optimizers_6_plus_12_over_d(gpus: int) -> None:
    """The recipe control: Megatron-LM's bf16 with fp32 gradients under ZeRO-1 is its
    distributed optimizer, 6 + 12/d bytes per parameter (Megatron-Core's
    dist_optimizer.md table); with the optimizer offloaded, the CPU takes (4 + 12)Ψ/d."""
    _, v = evaluate("zero", {"gpus": gpus, "stage": "1", "recipe": "megatron-bf16"})
    psi = v["weights_bytes"] / 2
    assert v["state_per_gpu_bytes"] == pytest.approx((6 + 12 / gpus) * psi)
    assert v["grads_bytes"] == 4 * psi and v["reduction"] == pytest.approx(18 / (6 + 12 / gpus))
    if gpus > 1:
        _, off = evaluate("zero", {"gpus": gpus, "stage": "1", "recipe": "megatron-bf16", "offload": "optimizer"})
        assert off["cpu_state_bytes"] == pytest.approx(16 * psi / gpus)
        assert off["pcie_bytes"] == pytest.approx((4 + 2) * psi / gpus)


def test_the_machine_sets_the_memory_the_state_must_fit_and_the_pcie_of_offload() -> None:
    """Llama 2 70B with ZeRO-3 over 8 GPUs keeps about 138 GB per GPU: too much for an
    80 GB GPU (the seed's, an A100's, an H100's), enough for an H200's 141 GB and a B200's
    180 GB. Offload over an A100's PCIe 4.0 takes twice as long as over PCIe 5.0."""
    from widgets.framework.core import evaluate

    state = {"model": "llama2-70b", "stage": "3", "gpus": 8}
    fits = {m: evaluate("zero", {**state, "machine": m})[1]["fits"]
            for m in ("book", "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200")}
    assert fits == {"book": 0, "dgx-a100": 0, "dgx-h100": 0, "dgx-h200": 1, "dgx-b200": 1}
    _, h200 = evaluate("zero", {**state, "machine": "dgx-h200"})
    assert 80e9 < h200["state_per_gpu_bytes"] <= h200["gpu_memory_bytes"] == 141e9
    offloaded = {**state, "stage": "2", "offload": "optimizer"}
    a100, h100 = (evaluate("zero", {**offloaded, "machine": m})[1] for m in ("dgx-a100", "dgx-h100"))
    assert a100["pcie_bytes"] == h100["pcie_bytes"] and a100["pcie_time"] == 2 * h100["pcie_time"]


def test_the_chapter_says_in_words_whether_the_state_fits() -> None:
    """docs/{id,zh}/zero.md say in words, not with the `fits` flag, whether a run's state
    fits and how much room it leaves for activations. A failure names the sentence to
    reword."""
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    def v(**kw: object) -> dict[str, float]:
        return evaluate("zero", {k: str(x) for k, x in kw.items()})[1]

    def room(x: dict[str, float]) -> float:
        return (x["gpu_memory_bytes"] - x["state_per_gpu_bytes"]) / x["gpu_memory_bytes"]

    claim("zh box: the default (7B, 8 GPUs, ZeRO-1) already fits one GPU", v()["fits"] == 1)
    seventy = dict(model="llama2-70b", stage=3)
    claim("id Contoh 1: 70B ZeRO-3 on d = 8 does not fit yet", v(**seventy, gpus=8)["fits"] == 0)
    d16 = v(**seventy, gpus=16)
    claim("id Contoh 1: d = 16 fits, hardly any room left (under 15%)", d16["fits"] == 1 and room(d16) < 0.15)
    claim("id Contoh 1: d = 32 leaves more than half the GPU", room(v(**seventy, gpus=32)) > 0.5)
    h200, b200 = (v(**seventy, gpus=8, machine=m) for m in ("dgx-h200", "dgx-b200"))
    claim("Contoh 1 / 练习 3: on a DGX H200, d = 8 fits but the memory is nearly full (under 5% left)",
          h200["fits"] == 1 and room(h200) < 0.05)
    claim("Contoh 1 / 练习 3: a DGX B200 leaves ample room for activations (over 20%)",
          b200["fits"] == 1 and room(b200) > 0.2)
    thirteen = v(model="llama2-13b", stage=1, gpus=8)
    claim("id Contoh 2 / zh 例 3: 13B ZeRO-1 on 8 GPUs fits with little room (under 15%)",
          thirteen["fits"] == 1 and room(thirteen) < 0.15)
    claim("Latihan / 练习 3: 70B ZeRO-3 fits on 14 GPUs, not on 13",
          v(**seventy, gpus=14)["fits"] == 1 and v(**seventy, gpus=13)["fits"] == 0)
    sixty_four = {s: v(model="llama2-70b", stage=s, gpus=64) for s in (1, 2, 3)}
    claim("zh 例 2: on 64 GPUs only ZeRO-3 fits 70B",
          (sixty_four[1]["fits"], sixty_four[2]["fits"], sixty_four[3]["fits"]) == (0, 0, 1))
    gpt3 = v(model="gpt3-175b", stage=3, gpus=64)
    claim("GPT-3 exercise: ZeRO-3 on 64 GPUs fits, less than half the GPU left",
          gpt3["fits"] == 1 and room(gpt3) < 0.5)
    assert not failures, "sentences of zero.md no longer true:\n" + "\n".join(failures)
