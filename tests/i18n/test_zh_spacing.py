"""Chinese text puts a space between Latin letters or digits and a CJK character
("t = 8 时", "184,320 个"), except after a value that itself ends in a Chinese unit or
scale word ("3.2 毫秒的计算", "67.4 亿个参数"). These tests scan the real zh catalog and
the zh pages' macros, so a "t = 8时" cannot come back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from i18n import load_catalog
from widgets.build.native import locale
from widgets.build.plugin import MACRO
from widgets.framework.core import format_value

ROOT = Path(__file__).resolve().parents[2]
ZH = load_catalog(ROOT / "i18n" / "zh.yml")
CJK = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
#: A placeholder or an ASCII letter or digit, then straight a CJK character.
JAMMED = re.compile(r"(\{(?P<name>[A-Za-z_]\w*)\}|[A-Za-z0-9])(?=" + CJK + ")")
#: Where a value may end, with no space needed before CJK: CJK or full-width punctuation.
ENDS_WIDE = re.compile(CJK + r"$|[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\u201d\u2019]$")

#: What fills a placeholder that may touch the next CJK character, and why it may.
COUNT = "a count (params): from 10⁴ up it ends in a scale word, 亿 or 万"
DURATION = "a duration: every zh time unit is a word, 秒 … 年"
ROWS = "activations.rows_long"  # every phrase of this family ends in CJK or a full-width mark

#: (catalog key, placeholder) -> what fills it. Each entry must still be needed.
ALLOWED: dict[tuple[str, str], str] = {
    ("why.figure.memory", "params"): COUNT,
    ("zero.ds.why_3_none", "layer"): COUNT,
    ("zero.ds.why_3_optimizer", "layer"): COUNT,
    ("zero.ds.why_3_optimizer_params", "layer"): COUNT,
    ("tp.sentence_single", "weights"): COUNT,
    ("tp.sentence_split", "weights"): COUNT,
    ("tp.sentence_slower", "weights"): COUNT,
    ("moe.sentence_intro", "total"): COUNT,
    ("moe.sentence_intro_shared", "total"): COUNT,
    ("tp.sentence_slower", "compute"): DURATION,
    ("cp.sentence.ring_hidden", "compute"): DURATION,
    ("cp.sentence.ring_exposed", "compute"): DURATION,
    ("moe.sentence_comm_single", "compute"): DURATION,
    ("moe.sentence_comm_cheap", "compute"): DURATION,
    ("moe.sentence_comm_slower", "compute"): DURATION,
    ("activations.sentence_layer", "row"): ROWS,
}
TIME_UNITS = ("nanosecond", "microsecond", "millisecond", "second", "minute", "hour", "day", "year")


def _strings() -> dict[str, str]:
    return {key: entry.value for key, entry in ZH.entries.items() if isinstance(entry.value, str)}


def _jammed(key: str, text: str) -> list[str]:
    """Each place in `text` where Latin, a digit or a placeholder runs into CJK, unless allowed."""
    return [f"i18n/zh.yml:{ZH.entries[key].line}: {key}: …{text[max(0, m.start() - 12):m.end() + 2]}…"
            for m in JAMMED.finditer(text) if (key, m["name"]) not in ALLOWED]


def test_no_latin_digit_or_placeholder_runs_straight_into_chinese() -> None:
    problems = [problem for key, text in _strings().items() for problem in _jammed(key, text)]
    assert not problems, "write a space between Latin/digits and CJK:\n" + "\n".join(problems)


def test_the_check_sees_the_mistakes_it_is_for() -> None:
    assert _jammed("tp.figure.mlp_desc", "{t} 份部分和{link}做 all-reduce")  # a link ends in GB/s
    assert _jammed("activations.rows_long.tp", "张量并行 t = 8时")
    assert not _jammed("tp.sentence_split", "t = {t} 时，每块 GPU 存每层 {weights}参数")


@pytest.mark.parametrize(("key", "name"), sorted(ALLOWED))
def test_each_exception_is_still_in_the_catalog(key: str, name: str) -> None:
    assert re.search(r"\{" + name + r"\}" + CJK, _strings()[key]), f"{key}: drop ({key!r}, {name!r}) from ALLOWED"


def test_what_the_exceptions_stand_on() -> None:
    loc = locale("zh")
    assert all(re.fullmatch(CJK + "+", word) for _, word in loc.count_scales)
    assert loc.count(2.6e8).endswith("亿") and loc.count(5.06e7).endswith("万")
    for unit in TIME_UNITS:
        assert ENDS_WIDE.search(loc.t(f"units.{unit}", value="1")), unit
    rows = {key: text for key, text in _strings().items() if key.startswith(ROWS + ".")}
    assert len(rows) >= 5
    for key, text in rows.items():
        assert ENDS_WIDE.search(text.replace("{t}", "8")), f"{key}: {text!r} ends in Latin or a digit, before 时"


def _page_macros() -> list[tuple[str, int, re.Match[str]]]:
    found = []
    for page in sorted((ROOT / "docs" / "zh").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(MACRO.pattern + "(?=" + CJK + ")", text):
            found.append((page.name, text.count("\n", 0, match.start()) + 1, match))
    return found


def test_a_zh_page_macro_before_chinese_ends_in_a_chinese_unit() -> None:
    """`{{ why.llama2_7b_gpu_hours }}个` printed 184,320个: a macro that prints digits or
    Latin (an integer, GB, FLOP) needs a space before the CJK text that follows it."""
    loc = locale("zh")
    macros = _page_macros()
    assert len(macros) > 20  # counts and durations before 个, 的, 更 …
    problems = []
    for page, line, match in macros:
        args = dict(arg.split("=", 1) for arg in match["args"].split())
        shown = format_value(match["name"], match["key"], args, loc)
        if not ENDS_WIDE.search(shown):
            problems.append(f"docs/zh/{page}:{line}: {match.group(0)} prints {shown!r}")
    assert not problems, "write a space after these macros:\n" + "\n".join(problems)
