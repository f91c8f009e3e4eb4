"""Widget `collectives` (WIDGETS.md, row `collectives`): the vectors it shows after an
operation are what calc computes and what the operation's definition says; ring
all-reduce walked step by step ends in the all-reduce; the bytes each rank sends and
the bus factors are nccl-tests' (doc/PERFORMANCE.md)."""

from __future__ import annotations

import re

import pytest

from calc import collectives as coll
from widgets.figures import collectives
from widgets.framework.core import evaluate, format_value, render_output, render_widget
from widgets.build.native import locale

OPS = coll.OPS
RANKS = range(2, 9)
SIZES = (1e6, 1e7, 1e8, 1e9, 1e10)


# -- reading the figure ------------------------------------------------------------------
def html_of(lang: str = "id", **state: object) -> str:
    out = render_output("collectives", state, locale(lang))
    assert out.ok, out.html
    return out.html


def figure_of(html: str) -> str:
    return re.search(r"<figure\b.*?</figure>", html, re.S).group(0)


def sentence_of(html: str) -> str:
    return re.search(r'<p class="w-sentence">(.*?)</p>', html).group(1)


def panel_svg(html: str, ident: str) -> str | None:
    found = re.search(rf'<svg[^>]*aria-labelledby="{ident}-t {ident}-d".*?</svg>', html, re.S)
    return found.group(0) if found else None


def rows_of(svg: str) -> list[list[int]]:
    """The numbers a reader sees in each rank's row, in rank order; each row's
    data-values agrees with its text."""
    rows = []
    for r, chunk in enumerate(svg.split('<g class="w-coll-row')[1:]):
        rank, data = re.match(r'[^"]*" data-rank="(\d+)" data-values="([^"]*)"', chunk).groups()
        assert int(rank) == r
        shown = [int(x) for x in re.findall(r'<text class="w-coll-num"[^>]*>(-?\d+)</text>', chunk)]
        assert shown == [int(x) for x in data.split(",")]
        rows.append(shown)
    return rows


def before_after(op: str, n: int, **state: object) -> tuple[list[list[int]], list[list[int]]]:
    html = html_of(op=op, ranks=n, **state)
    return rows_of(panel_svg(html, "w-coll-before")), rows_of(panel_svg(html, "w-coll-after"))


# -- the operations' definitions, written out independently of calc -------------------
def column_sums(rows: list[list[int]]) -> list[int]:
    return [sum(col) for col in zip(*rows)]


def split(vector: list[int], parts: int) -> list[list[int]]:
    size = len(vector) // parts
    assert size * parts == len(vector)
    return [vector[i * size:(i + 1) * size] for i in range(parts)]


def definition(op: str, d: list[list[int]], root: int = 0) -> list[list[int]]:
    n = len(d)
    joined = [x for row in d for x in row]
    if op == "broadcast":
        return [list(d[root]) for _ in d]
    if op == "scatter":
        return split(d[root], n)
    if op == "gather":
        return [joined if r == root else d[r] for r in range(n)]
    if op == "reduce":
        return [column_sums(d) if r == root else d[r] for r in range(n)]
    if op == "all_gather":
        return [joined for _ in d]
    if op == "reduce_scatter":
        return split(column_sums(d), n)
    if op == "all_reduce":
        return [column_sums(d) for _ in d]
    if op == "all_to_all":
        return [[x for i in range(n) for x in split(d[i], n)[j]] for j in range(n)]
    raise AssertionError(op)


NCCL_BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


# -- before and after ------------------------------------------------------------------
@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("op", OPS)
def test_after_is_what_calc_computes_and_what_the_definition_says(op: str, n: int) -> None:
    before, after = before_after(op, n)
    assert len(before) == len(after) == n
    assert after == [list(row) for row in coll.run(op, before, 0)]
    assert after == definition(op, before)


@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("op", OPS)
def test_rank_r_starts_with_ten_r_plus_position(op: str, n: int) -> None:
    before, _ = before_after(op, n)
    length = 1 if op in ("gather", "all_gather") else n  # one chunk each, n chunks gathered
    assert before == [[10 * r + i for i in range(length)] for r in range(n)]


def test_all_reduce_on_four_ranks_gives_every_rank_the_column_sums() -> None:
    _, after = before_after("all_reduce", 4)
    assert after == [[60, 64, 68, 72]] * 4


@pytest.mark.parametrize("op", ["broadcast", "scatter"])
def test_ignored_inputs_of_non_roots_are_faded_before(op: str) -> None:
    svg = panel_svg(html_of(op=op, ranks=4), "w-coll-before")
    faded = re.findall(r'<g class="w-coll-row( w-coll-faded)?" data-rank="(\d)"', svg)
    assert [(bool(f), int(r)) for f, r in faded] == [(False, 0), (True, 1), (True, 2), (True, 3)]


@pytest.mark.parametrize("op", ["gather", "reduce"])
def test_unchanged_non_roots_are_faded_after(op: str) -> None:
    svg = panel_svg(html_of(op=op, ranks=3), "w-coll-after")
    assert svg.count("w-coll-row w-coll-faded") == 2 and "rank 0 · root" in svg


# -- ring all-reduce, step by step -------------------------------------------------------
@pytest.mark.parametrize("n", RANKS)
def test_ring_walk_starts_before_and_its_last_step_is_the_all_reduce(n: int) -> None:
    before, after = before_after("all_reduce", n)
    last = 2 * (n - 1)
    assert evaluate("collectives", {"ranks": n})[1]["steps"] == last
    assert rows_of(panel_svg(html_of(ranks=n, step=0), "w-coll-ring")) == before
    assert rows_of(panel_svg(html_of(ranks=n, step=last), "w-coll-ring")) == after == definition("all_reduce", before)


@pytest.mark.parametrize("n", RANKS)
def test_every_ring_step_shows_calcs_state_and_frames_one_sent_chunk_per_rank(n: int) -> None:
    walk = coll.ring_all_reduce_steps([[10 * r + i for i in range(n)] for r in range(n)])
    for k, step in enumerate(walk):
        svg = panel_svg(html_of(ranks=n, step=k), "w-coll-ring")
        assert rows_of(svg) == [list(row) for row in step.state]
        assert svg.count('class="w-coll-send"') == svg.count('class="w-coll-recv"') == (n if k else 0)
        assert svg.count('class="w-coll-head"') == (n if k else 0)


@pytest.mark.parametrize("n", RANKS)
def test_after_reduce_scatter_each_rank_holds_one_complete_chunk_and_at_the_end_all(n: int) -> None:
    def complete_per_row(step: int) -> list[int]:
        svg = panel_svg(html_of(ranks=n, step=step), "w-coll-ring")
        return [chunk.count("w-coll-cell w-coll-mix w-coll-full") for chunk in svg.split('<g class="w-coll-row')[1:]]

    assert complete_per_row(0) == [0] * n
    assert complete_per_row(n - 1) == [1] * n
    assert complete_per_row(2 * (n - 1)) == [n] * n


def test_the_step_slider_ends_at_the_rings_last_step_and_a_step_past_it_is_that_step() -> None:
    for n in range(2, 9):
        last = 2 * (n - 1)  # n − 1 reduce-scatter steps, n − 1 all-gather steps
        out = render_output("collectives", {"ranks": n, "step": 14}, locale("id"))
        assert out.limits == {"step": last} and out.state["step"] == str(last)
        assert rows_of(panel_svg(out.html, "w-coll-ring")) == rows_of(panel_svg(html_of(ranks=n, step=last), "w-coll-ring"))
    controls = render_widget("collectives", {"ranks": 4}, locale("zh"))
    assert 'name="step" min="0" max="6"' in controls


@pytest.mark.parametrize("op", [o for o in OPS if o != "all_reduce"])
def test_step_has_no_effect_except_on_all_reduce_and_a_note_says_so(op: str) -> None:
    for lang in ("id", "zh"):
        first = figure_of(html_of(lang, op=op, step=0))
        assert first == figure_of(html_of(lang, op=op, step=14)) == figure_of(html_of(lang, op=op, step=5))
        assert panel_svg(first, "w-coll-ring") is None
        label = locale(lang).t("collectives.controls.step.label")
        assert locale(lang).h("collectives.figure.step_idle", control=label) in first
        # ... so the page disables it and leaves it out of the URL
        assert render_output("collectives", {"op": op, "step": 3}, locale(lang)).inactive == ("step",)
    assert render_output("collectives", {"step": 3}, locale("id")).inactive == ()
    assert figure_of(html_of(step=0)) != figure_of(html_of(step=1))


# -- bytes and bus factors -------------------------------------------------------------
@pytest.mark.parametrize("n", RANKS)
@pytest.mark.parametrize("op", OPS)
def test_bus_factor_and_bytes_sent_follow_nccl_tests(op: str, n: int) -> None:
    for size in SIZES:
        _, v = evaluate("collectives", {"op": op, "ranks": n, "size_bytes": size})
        assert v["size_bytes"] == size
        assert v["bus_factor"] == pytest.approx(NCCL_BUS_FACTOR[op](n))
        assert v["sent_per_rank_bytes"] == pytest.approx(NCCL_BUS_FACTOR[op](n) * size)


def test_all_reduce_sends_twice_what_reduce_scatter_or_all_gather_sends() -> None:
    for n in RANKS:
        sent = {op: evaluate("collectives", {"op": op, "ranks": n})[1]["sent_per_rank_bytes"] for op in OPS}
        assert sent["all_reduce"] == pytest.approx(sent["reduce_scatter"] + sent["all_gather"])
        assert sent["all_reduce"] < 2 * 1e9


def test_default_is_context4s_example_and_macros_format_per_language() -> None:
    _, v = evaluate("collectives", {})
    assert (v["ranks"], v["size_bytes"], v["steps"]) == (4, 1e9, 6)
    assert v["sent_per_rank_bytes"] == pytest.approx(1.5e9) and v["bus_factor"] == pytest.approx(1.5)
    assert format_value("collectives", "sent_per_rank_bytes", {}, locale("id")) == "1,5 GB"
    assert format_value("collectives", "sent_per_rank_bytes", {"ranks": "8"}, locale("zh")) == "1.75 GB"
    assert format_value("collectives", "bus_factor", {"op": "all_gather", "ranks": "8"}, locale("id")) == "0,875×"
    assert format_value("collectives", "bus_factor", {"op": "broadcast", "ranks": "8"}, locale("zh")) == "1×"


@pytest.mark.parametrize("spelling", ["1e10", "10000000000", 1e10, 10_000_000_000, " 1.0e10 "])
def test_the_size_accepts_any_spelling_of_its_values(spelling: object) -> None:
    state, v = evaluate("collectives", {"size_bytes": spelling})
    assert state["size_bytes"] == "1e10" and v["size_bytes"] == 1e10


@pytest.mark.parametrize("bad", ["5e9", "1e11", "lots", True, "nan"])
def test_a_size_not_offered_is_a_localized_error(bad: object) -> None:
    out = render_output("collectives", {"size_bytes": bad}, locale("zh"))
    assert not out.ok and 'data-error="errors.choice"' in out.html and "消息大小 S" in out.html


# -- words -------------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("state", [{}, {"ranks": 8, "size_bytes": "1e10"}, {"ranks": 3, "size_bytes": "1e6"}])
def test_sentence_states_the_current_numbers(lang: str, op: str, state: dict) -> None:
    loc = locale(lang)
    out = render_output("collectives", {**state, "op": op}, loc)
    sentence = sentence_of(out.html)
    for key in ("sent_per_rank_bytes", "bus_factor", "size_bytes", "ranks"):
        assert loc.format(collectives.OUTPUTS[key], out.values[key]) in sentence, key
    if op == "all_reduce":
        assert loc.integer(out.values["steps"]) in sentence
    assert loc.t(f"collectives.names.{op}").lower() in sentence.lower()


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_sentences_use_each_languages_decimal_mark(lang: str) -> None:
    sentence = sentence_of(html_of(lang, ranks=8))
    assert ("1,75 GB" if lang == "id" else "1.75 GB") in sentence


def test_every_svg_is_accessible_and_describes_the_vectors() -> None:
    html = html_of("zh", ranks=3, step=2)
    for ident in ("w-coll-before", "w-coll-ring", "w-coll-after", "w-coll-bytes"):
        svg = panel_svg(html, ident)
        assert svg and 'role="img"' in svg
        assert re.search(rf'<title id="{ident}-t">[^<]+</title><desc id="{ident}-d">[^<]+</desc>', svg)
    assert "rank 0 持有 0、1、2" in panel_svg(html, "w-coll-before")
    assert "rank 0 持有 30、33、36" in panel_svg(html, "w-coll-after")
    assert "rank 0 把第 2 块发给 rank 1" in panel_svg(html, "w-coll-ring")  # reduce-scatter step 2: chunk (0 − 1) mod 3


def test_chunk_and_bandwidth_terms_of_the_worked_examples() -> None:
    """ZeRO-3's all-gather of 1 GB on 8 ranks: 125 MB per rank; 7/8 GB over NVLink 4
    (450 GB/s) and over one InfiniBand NDR adapter (50 GB/s) per GPU."""
    _, v = evaluate("collectives", {"op": "all_gather", "ranks": 8})
    assert v["chunk_bytes"] == pytest.approx(125e6)
    assert v["nvlink_time_s"] == pytest.approx(0.875e9 / 450e9)
    assert v["ib_time_s"] == pytest.approx(0.875e9 / 50e9)
    assert format_value("collectives", "ib_time_s", {"op": "all_gather", "ranks": "8"}, locale("id")) == "17,5 ms"
