"""Widget `dp` reproduces the seed explainer's step 2 (WIDGETS.md, row `dp`): every GPU
keeps the whole state, computes 1/N of the batch, and sends about twice the gradient."""

from __future__ import annotations

import re

import pytest

from calc.models import MODELS
from widgets.figures import dp
from widgets.framework.core import evaluate, format_value, render_output
from widgets.build.native import locale

# WIDGETS.md, row `dp`: the seed's figures at the default state (8 GPUs, Llama 2 7B).
SEED = {
    "state_per_gpu_bytes": 107.84e9,
    "seqs_per_gpu": 128,
    "sent_per_gpu_bytes": 23.59e9,
    "compute_time": 141.3,
    "comm_time": 0.4718,
}
GPU_COUNTS = range(1, 65)


def sentence_of(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


@pytest.mark.parametrize("key", SEED)
def test_default_state_reproduces_the_seed_within_a_tenth_of_a_percent(key: str) -> None:
    _, values = evaluate("dp", {})
    assert values[key] == pytest.approx(SEED[key], rel=1e-3)


def test_the_default_does_not_fit_in_one_80_gb_gpu() -> None:
    _, values = evaluate("dp", {})
    assert values["gpu_memory_bytes"] == 80e9 and values["fits"] == 0


@pytest.mark.parametrize("model", MODELS)
def test_memory_per_gpu_does_not_change_with_the_number_of_gpus(model: str) -> None:
    memory = {evaluate("dp", {"gpus": n, "model": model})[1]["state_per_gpu_bytes"] for n in GPU_COUNTS}
    assert len(memory) == 1


@pytest.mark.parametrize("model", MODELS)
def test_sent_bytes_grow_with_n_but_stay_below_twice_the_gradient(model: str) -> None:
    runs = [evaluate("dp", {"gpus": n, "model": model})[1] for n in GPU_COUNTS]
    sent = [v["sent_per_gpu_bytes"] for v in runs]
    assert sent[0] == 0  # one GPU has nothing to all-reduce
    assert all(a < b for a, b in zip(sent, sent[1:]))
    assert all(s < 2 * v["gradient_bytes"] for s, v in zip(sent, runs))


def test_compute_per_step_shrinks_as_one_over_n() -> None:
    one = evaluate("dp", {"gpus": 1})[1]
    for n in (2, 8, 64):
        v = evaluate("dp", {"gpus": n})[1]
        assert v["compute_time"] == pytest.approx(one["compute_time"] / n)
        assert v["seqs_per_gpu"] * n == v["global_batch_seqs"] == 1024


def test_default_numbers_in_both_languages() -> None:
    assert format_value("dp", "sent_per_gpu_bytes", {}, locale("id")) == "23,6 GB"
    assert format_value("dp", "state_per_gpu_bytes", {}, locale("zh")) == "107.8 GB"
    assert format_value("dp", "global_batch_seqs", {}, locale("id")) == "1.024"


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("state", [{}, {"gpus": 64, "model": "llama2-70b"}, {"gpus": 2, "model": "gpt3-175b"}])
def test_sentence_states_the_current_numbers(lang: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("dp", state, loc)
    sentence = sentence_of(out.html)
    for key in ("seqs_per_gpu", "compute_time", "sent_per_gpu_bytes", "gradient_bytes", "comm_time",
                "link_bytes_per_s", "state_per_gpu_bytes", "gpu_memory_bytes"):
        assert loc.format(dp.OUTPUTS[key], out.values[key]) in sentence, key
    assert loc.integer(int(out.state["gpus"])) in sentence


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_one_gpu_gets_its_own_sentence_without_an_all_reduce(lang: str) -> None:
    loc = locale(lang)
    one, eight = (sentence_of(render_output("dp", {"gpus": n}, loc).html) for n in (1, 8))
    assert one != eight
    v = evaluate("dp", {"gpus": 1})[1]
    for key in ("global_batch_seqs", "compute_time", "state_per_gpu_bytes", "gpu_memory_bytes"):
        assert loc.format(dp.OUTPUTS[key], v[key]) in one
    assert "all-reduce" in one


@pytest.mark.parametrize("n", [1, 2, 8, 13, 33, 64])
def test_figure_draws_every_replica_and_a_closed_ring(n: int) -> None:
    html = render_output("dp", {"gpus": n}, locale("id")).html
    assert html.count('class="w-dp-gpu"') == n
    assert html.count('class="w-limit w-dp-limit"') == n  # each GPU's 80 GB line
    assert html.count('class="w-dp-overfill"') == n  # 107.8 GB is above 80 GB on every GPU
    # N − 1 hops between neighbours plus the way back to GPU 0, one arrowhead each.
    assert html.count('class="w-dp-arrow"') == (n if n > 1 else 0)


def test_figure_is_an_accessible_svg_with_the_numbers_in_its_description() -> None:
    html = render_output("dp", {}, locale("id")).html
    assert re.search(r'<desc id="w-dp-ring-d">[^<]*128 sequence[^<]*107,8 GB[^<]*13,5 GB[^<]*23,6 GB', html)
    assert re.search(r'<desc id="w-dp-time-d">[^<]*2,36 menit[^<]*471,7 ms', html)
    assert ">GPU 7</text>" in html and ">GPU 8</text>" not in html


@pytest.mark.parametrize(("machine", "seqs", "flops_per_byte"),
                         [("book", 1, 3_000), ("dgx-a100", 3, 12_480), ("dgx-h100", 5, 19_780),
                          ("dgx-h200", 5, 19_780), ("dgx-b200", 10, 45_000)])
def test_the_machine_decides_whether_one_sequence_hides_the_all_reduce(machine: str, seqs: int,
                                                                       flops_per_byte: int) -> None:
    """The chapter's conclusion per preset (8 GPUs, 4,096 tokens, peak X): only the seed's
    mixed machine hides the gradient all-reduce behind one sequence; every real server
    needs several, and the sentence says how many in both languages."""
    _, values = evaluate("dp", {"machine": machine})
    assert values["flops_per_byte"] == pytest.approx(flops_per_byte)
    assert values["overlap_min_micro_batch"] == seqs
    for lang, enough, more in (("id", "sudah cukup", f"perlu {seqs} sequence"), ("zh", "就够了", f"需要 {seqs} 条")):
        sentence = sentence_of(render_output("dp", {"machine": machine}, locale(lang)).html)
        assert (enough in sentence) == (seqs == 1) and (more in sentence) == (seqs > 1)


def test_a_real_machine_changes_memory_compute_and_network_together() -> None:
    _, book = evaluate("dp", {})
    _, h200 = evaluate("dp", {"machine": "dgx-h200"})
    assert h200["gpu_memory_bytes"] == 141e9 and h200["fits"] == 1  # 107.8 GB of state fits in 141 GB
    assert h200["compute_time"] == pytest.approx(book["compute_time"] * 150 / 989)
    assert h200["comm_time"] == pytest.approx(book["comm_time"])  # both networks are 50 GB/s
    _, a100 = evaluate("dp", {"machine": "dgx-a100"})
    assert a100["comm_time"] == pytest.approx(2 * book["comm_time"])  # HDR: half of NDR


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_only_the_books_own_machine_is_called_illustrative(lang: str) -> None:
    """The time chart's heading: the seed's mixed machine is illustrative; a preset is a
    real server and is named."""
    mark = {"id": "ilustratif", "zh": "示意"}[lang]
    book = render_output("dp", {}, locale(lang)).html
    h100 = render_output("dp", {"machine": "dgx-h100"}, locale(lang)).html
    heading = re.compile(r'<title id="w-dp-time-t">([^<]*)</title>')
    assert mark in heading.search(book).group(1)
    assert mark not in heading.search(h100).group(1) and "DGX H100" in heading.search(h100).group(1)


def test_the_chapter_says_in_words_that_the_state_does_not_fit() -> None:
    """docs/{id,zh}/data-parallelism.md say in words, not with the `fits` flag, that plain
    data parallelism never fits Llama 2 7B or 70B in the illustrative 80 GB GPU, and that
    the communication-to-compute ratio is the same for both. A failure names the sentence."""
    failures: list[str] = []

    def claim(text: str, ok: bool) -> None:
        if not ok:
            failures.append(text)

    def v(**kw: object) -> dict[str, float]:
        return evaluate("dp", {k: str(x) for k, x in kw.items()})[1]

    claim("Contoh 1 / 例 1: 7B does not fit, whatever the number of GPUs",
          all(v(gpus=n)["fits"] == 0 for n in GPU_COUNTS))
    seventy = v(gpus=32, model="llama2-70b")
    claim("Latihan 3 / 练习 3: 70B on 32 GPUs does not fit, far above the GPU's memory",
          seventy["fits"] == 0 and seventy["state_per_gpu_bytes"] > 10 * seventy["gpu_memory_bytes"])
    loc = locale("zh")
    claim("zh: on 64 GPUs the ratio of 7B and 70B is the same (都是 …)",
          format_value("dp", "comm_over_compute", {"gpus": "64"}, loc)
          == format_value("dp", "comm_over_compute", {"gpus": "64", "model": "llama2-70b"}, loc))
    assert not failures, "sentences of data-parallelism.md no longer true:\n" + "\n".join(failures)
