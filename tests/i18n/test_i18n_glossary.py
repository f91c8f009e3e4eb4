"""i18n/glossary.yml: one source for the glossary page, the hover definitions and the
terms each chapter must use; i18n/tooltips.py: how the definitions reach the reader."""

from __future__ import annotations

import json
import subprocess
import sys
import re
from pathlib import Path

import markdown
import pytest

from i18n.glossary import (
    GlossaryError,
    abbreviation_lines,
    abbreviations,
    check_glossary,
    avoided_forms,
    check_terms,
    load_glossary,
    load_usage,
    render_glossary,
    term_pattern,
)

PROJECT = Path(__file__).resolve().parents[2]
GLOSSARY = PROJECT / "i18n" / "glossary.yml"

#: Concepts the issue asked for by name (English terms).
REQUIRED = (
    "all-reduce", "reduce-scatter", "all-gather", "broadcast", "rank", "world size", "data parallelism", "ZeRO",
    "FSDP", "shard", "optimizer state", "mixed precision", "gradient", "activation", "activation checkpointing",
    "tensor parallelism", "pipeline parallelism", "pipeline bubble", "micro-batch", "1F1B", "interleaved schedule",
    "global batch", "critical batch size", "NVLink", "InfiniBand", "NCCL", "RDMA", "MFU", "FLOP", "throughput",
)


# --- the file ----------------------------------------------------------------------------------


def test_the_glossary_has_at_least_60_complete_entries_in_both_languages() -> None:
    glossary = load_glossary(GLOSSARY)

    assert len(glossary) >= 60
    for term in glossary.terms:
        assert term.en.strip(), term.name
        for lang in ("id", "zh"):
            sense = term.senses[lang]
            assert sense.term.strip() and sense.definition.strip(), (term.name, lang)
            assert "\n" not in sense.definition and len(sense.definition) <= 260, (term.name, lang)
    assert check_glossary(GLOSSARY, ["id", "zh"]) == []


def test_the_glossary_covers_the_core_vocabulary() -> None:
    english = {term.en for term in load_glossary(GLOSSARY).terms}
    assert [term for term in REQUIRED if term not in english] == []


def test_the_chapters_use_the_glossarys_terms_consistently() -> None:
    """No page of the book writes a variant the glossary lists under ``avoid``."""
    glossary = load_glossary(GLOSSARY)
    usage = load_usage(PROJECT / "i18n" / "usage.yml")
    problems = check_terms(PROJECT / "docs", glossary, ["id", "zh"], catalog_dir=PROJECT / "i18n", usage=usage)
    assert [str(problem) for problem in problems] == []


def test_the_usage_list_names_the_forms_the_editors_chose() -> None:
    """The word forms the book settled on (KBBI's spellings, one measure word for GPUs)."""
    usage = load_usage(PROJECT / "i18n" / "usage.yml")
    rules = {lang: {rule.write: rule.avoid for rule in found} for lang, found in usage.items()}
    assert "algoritma" in rules["id"]["algoritme"] and "kluster" in rules["id"]["klaster"]
    assert {"张 GPU", "个 GPU"} <= set(rules["zh"]["块 GPU"])
    glossary = load_glossary(GLOSSARY)
    avoided = {lang: {a.variant for a in avoided_forms(glossary, usage, lang).values()} for lang in ("id", "zh")}
    assert {"aktivasi", "latensi", "mantissa", "algoritma"} <= avoided["id"]
    assert {"micro-batch", "流水线阶段", "全局 batch", "ring all-reduce", "个 GPU"} <= avoided["zh"]


GLOSSARY_YML = """\
pipeline-bubble:
  en: "pipeline bubble"
  id:
    term: "pipeline bubble"
    avoid: ["gelembung pipa"]
    definition: "Waktu menganggur stage."
  zh:
    term: "流水线气泡"
    avoid: ["管线气泡"]
    definition: "流水线各级的空闲时间。"
rank:
  en: "rank"
  id:
    term: "rank"
    definition: "Nomor proses."
  zh:
    term: "rank"
    definition: "进程编号。"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_discouraged_variant_in_a_chapter_is_reported_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    glossary = load_glossary(write(tmp_path, "i18n/glossary.yml", GLOSSARY_YML))
    write(tmp_path, "docs/zh/pp.md", "# 流水线并行\n\n气泡也叫管线气泡。\n\n```text\n管线气泡\n```\n\n`管线气泡` {{ pp.管线气泡 }}\n")
    write(tmp_path, "docs/id/pp.md", "# Pipeline\n\nGelembung pipa, bukan gelembung pipanya.\n\n"
          "Pipeline bubble (gelembung pipa) dan gelembung pipa (pipeline bubble) memberi nama lokal di sampingnya.\n")

    assert [str(p) for p in check_terms(Path("docs"), glossary, ["id", "zh"])] == [
        "docs/id/pp.md:3: terms: 'Gelembung pipa' is a discouraged variant of 'pipeline bubble' "
        "(i18n/glossary.yml line 5): write 'pipeline bubble'",
        "docs/zh/pp.md:3: terms: '管线气泡' is a discouraged variant of 'pipeline bubble' "
        "(i18n/glossary.yml line 9): write '流水线气泡'",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(GLOSSARY_YML.replace('  en: "rank"\n', ""), 'i18n/glossary.yml:11: rank.en: the English term is missing: write en: "..."', id="no-english"),
        pytest.param(GLOSSARY_YML.replace('    definition: "Nomor proses."\n', ""),
                     'i18n/glossary.yml:13: rank.id.definition: missing definition: write definition: "..."', id="no-definition"),
        pytest.param(GLOSSARY_YML.replace("    definition: \"进程编号。\"\n", "    defintion: \"进程编号。\"\n"),
                     'i18n/glossary.yml:16: rank.zh.definition: missing definition: write definition: "..."\n'
                     "i18n/glossary.yml:18: rank.zh.defintion: unknown field 'defintion': expected one of term, definition, also, avoid",
                     id="typo-in-a-field"),
        pytest.param(GLOSSARY_YML.replace('    avoid: ["管线气泡"]', '    avoid: ["流水线气泡"]'),
                     "i18n/glossary.yml:9: pipeline-bubble.zh.avoid: '流水线气泡' is both accepted and avoided: delete it from one list",
                     id="avoid-the-term-itself"),
        pytest.param(GLOSSARY_YML.replace('    term: "rank"\n    definition: "进程编号。"', '    term: "流水线气泡"\n    definition: "进程编号。"'),
                     "i18n/glossary.yml:16: rank.zh: '流水线气泡' is also the zh term of pipeline-bubble (line 1): a term must name one concept",
                     id="one-term-two-concepts"),
        pytest.param(GLOSSARY_YML.replace('  zh:\n    term: "rank"\n    definition: "进程编号。"\n', ""),
                     "i18n/glossary.yml:11: rank.zh: no zh translation of 'rank': write zh: with term: and definition:",
                     id="not-translated"),
        pytest.param(GLOSSARY_YML + 'rank:\n  en: "rank"\n',
                     "i18n/glossary.yml:19: rank: duplicate key (first written on line 11)", id="duplicate"),
    ],
)
def test_glossary_mistakes_name_file_line_and_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "i18n/glossary.yml", text)
    assert [str(p) for p in check_glossary(Path("i18n/glossary.yml"), ["id", "zh"])] == expected.splitlines()


def test_a_language_without_glossary_blocks_falls_back_to_the_source(tmp_path: Path) -> None:
    glossary = load_glossary(write(tmp_path, "glossary.yml", GLOSSARY_YML))

    assert abbreviations(glossary, "ms")["pipeline bubble"] == "Waktu menganggur stage."
    page = render_glossary(glossary, "ms")
    assert '<dt id="pipeline-bubble" lang="id"><strong>pipeline bubble</strong></dt><dd lang="id">Waktu menganggur stage.</dd>' in page


def test_abbreviations_cover_the_local_term_the_english_term_and_a_capital_first_letter(tmp_path: Path) -> None:
    glossary = load_glossary(write(tmp_path, "glossary.yml", GLOSSARY_YML))

    assert abbreviations(glossary, "zh") == {
        "流水线气泡": "流水线各级的空闲时间。",
        "pipeline bubble": "流水线各级的空闲时间。",
        "Pipeline bubble": "流水线各级的空闲时间。",
        "rank": "进程编号。",
        "Rank": "进程编号。",
    }
    assert abbreviation_lines(glossary, "zh").splitlines()[0] == "*[流水线气泡]: 流水线各级的空闲时间。"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("用数据并行训练", ["数据并行"]),  # Chinese: no spaces, no word boundary needed
        ("每个rank都", ["rank"]),
        ("ranked, rank-nya, low-rank, (rank)", ["rank", "rank"]),
        ("ZeRO-3 and ZeROs", ["ZeRO"]),
        ("ring all-reduce and all-reduce", ["ring all-reduce", "all-reduce"]),
    ],
)
def test_terms_are_found_as_whole_words_in_spaced_and_unspaced_scripts(text: str, found: list[str]) -> None:
    pattern = term_pattern(["数据并行", "rank", "ZeRO", "all-reduce", "ring all-reduce"])
    assert [match.group(0) for match in pattern.finditer(text)] == found


# --- hover and focus -----------------------------------------------------------------------------


def render(text: str) -> str:
    return markdown.markdown(text, extensions=["abbr", "i18n.tooltips", "pymdownx.superfences", "admonition"])


def test_only_the_first_occurrence_in_a_page_becomes_a_focusable_abbr() -> None:
    html = render(
        "Satu rank, dua rank.\n\n## Bagian\n\nLagi rank: [rank](x.md) dan `rank`.\n\n"
        "```python\nrank = 0\n```\n\n### rank di judul\n\n*[rank]: Nomor proses.\n"
    )

    assert html.count('<abbr tabindex="0" title="Nomor proses.">rank</abbr>') == 1  # once per page
    assert "Satu <abbr" in html and ", dua rank." in html
    assert 'Lagi rank: <a href="x.md">rank</a> dan <code>rank</code>' in html
    assert "<h3>rank di judul</h3>" in html
    assert '<span class="n">rank</span>' in html  # the code block, highlighted, untouched


def test_chinese_terms_are_marked_inside_running_text() -> None:
    html = render("我们用流水线并行训练。\n\n*[流水线并行]: 按层切分模型。\n")
    assert html == '<p>我们用<abbr tabindex="0" title="按层切分模型。">流水线并行</abbr>训练。</p>'


# --- the built site (one build per session) ---------------------------------------------------------


def page(site: Path, lang: str, path: str) -> str:
    return (site / ("" if lang == "id" else lang) / path / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(("lang", "heading", "term", "english"), [
    ("id", "Glosarium", "pipeline bubble", None),
    ("zh", "术语表", "流水线气泡", "pipeline bubble"),
])
def test_the_glossary_page_is_built_from_the_yaml_in_both_languages(
    built_site: Path, lang: str, heading: str, term: str, english: str | None
) -> None:
    html = page(built_site, lang, "glossary")
    glossary = load_glossary(GLOSSARY)

    assert re.search(rf"<h1[^>]*>{heading}<", html)
    assert html.count("<dt id=") == len(glossary) >= 60
    sense = next(t for t in glossary.terms if t.name == "pipeline-bubble").senses[lang]
    entry = f'<dt id="pipeline-bubble"><strong>{term}</strong>'
    if english:
        entry += f' <span class="glossary-en" lang="en">({english})</span>'
    assert f"{entry}</dt><dd>{sense.definition}</dd>" in html
    assert "<!-- glossary -->" not in html


@pytest.mark.parametrize(("lang", "term"), [("id", "pipeline bubble"), ("zh", "流水线气泡")])
def test_chapters_show_the_definition_on_hover_and_focus(built_site: Path, lang: str, term: str) -> None:
    html = page(built_site, lang, "pipeline-parallelism")
    definition = load_glossary(GLOSSARY).terms
    sense = next(t for t in definition if t.name == "pipeline-bubble").senses[lang]

    # a hover definition here (a keyboard stop only in the chapter that uses it most)
    assert re.search(rf'<abbr (tabindex="0" )?title="{re.escape(sense.definition)}">{term}</abbr>', html)
    # Material's tooltips are on (they show the title on hover and on keyboard focus).
    config = json.loads(re.search(r'<script id="__config" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert "content.tooltips" in config["features"]
    # Never inside code, links or headings.
    assert not re.search(r"<(code|a|h[1-6])\b[^>]*>[^<]*<abbr", html)


@pytest.mark.parametrize(("lang", "titles"), [("id", ("Glosarium", "Bantu menerjemahkan")), ("zh", ("术语表", "参与翻译"))])
def test_the_glossary_and_translate_pages_are_in_the_navigation(built_site: Path, lang: str, titles: tuple[str, str]) -> None:
    html = page(built_site, lang, "why-distributed-training")
    for path, title in zip(("glossary/", "translate/"), titles):
        assert re.search(rf'href="\.\./{path}"[^>]*>\s*<span class="md-ellipsis">\s*{title}\s*</span>', html), (lang, title)


USAGE_YML = """\
# forms
id:
  "algoritme": ["algoritma"]
zh:
  "块 GPU": ["张 GPU", "个 GPU"]
"""


def test_a_discouraged_form_in_a_catalog_string_fails_the_check_with_file_line_and_key(tmp_path: Path) -> None:
    """``python -m i18n check`` reads catalog strings as a reader reads them: a glossary
    variant or a usage.yml form in one is a failing problem, named by file, line and key."""
    write(tmp_path, "i18n/glossary.yml", GLOSSARY_YML)
    write(tmp_path, "i18n/usage.yml", USAGE_YML)
    write(tmp_path, "i18n/id.yml", 'pp:\n  note: "Gelembung pipa dari algoritma ini"\n  ok: "pipeline bubble lewat {link}"\n')
    write(tmp_path, "i18n/zh.yml", 'pp:\n  note: "8 个 GPU 上的管线气泡"\n  ok: "经 {link} 的流水线气泡"\n')
    result = subprocess.run([sys.executable, "-m", "i18n", "check", "--dir", str(tmp_path / "i18n")],
                            cwd=PROJECT, capture_output=True, text=True, encoding="utf-8", check=False, timeout=60)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if ": pp.note: " in line]
    assert len(lines) == 4, result.stderr
    assert any(line.startswith(f"{tmp_path}/i18n/id.yml:2: pp.note: 'Gelembung pipa' is a discouraged variant")
               for line in lines)
    assert any("id.yml:2: pp.note: 'algoritma' is a discouraged form" in line and "write 'algoritme'" in line
               for line in lines)
    assert any("zh.yml:2: pp.note: '个 GPU' is a discouraged form" in line for line in lines)
    assert any("zh.yml:2: pp.note: '管线气泡' is a discouraged variant" in line for line in lines)
    assert "pp.ok" not in result.stderr


def test_a_broken_usage_list_is_named_by_line(tmp_path: Path) -> None:
    path = write(tmp_path, "usage.yml", 'id:\n  "algoritme": "algoritma"\n')
    with pytest.raises(GlossaryError, match=r"usage.yml:2: id: expected a form and a list"):
        load_usage(path)
    path.write_text('id:\n  "x": ["x"]\n', encoding="utf-8")
    with pytest.raises(GlossaryError, match="both written and avoided"):
        load_usage(path)


MAX_TERM_STOPS = 30  # per page; marking once per section gave 95–167 per chapter


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_a_term_is_a_tab_stop_only_in_the_chapter_about_it(built_site: Path, lang: str) -> None:
    """The keyboard stops on a term once in the book, in the chapter that uses it most;
    elsewhere it still has its hover definition. So a reader tabbing to the next widget
    passes a few terms, not dozens."""
    folder = built_site if lang == "id" else built_site / lang
    stops: dict[str, list[str]] = {}
    marked: dict[str, int] = {}
    for html_file in sorted(folder.glob("*/index.html")):
        if html_file.parent.name in ("glossary", "zh", "assets", "search"):
            continue
        text = html_file.read_text(encoding="utf-8")
        stops[html_file.parent.name] = re.findall(r'<abbr tabindex="0" title="([^"]*)"', text)
        marked[html_file.parent.name] = len(re.findall(r"<abbr title=", text)) + len(stops[html_file.parent.name])
    every = [title for titles in stops.values() for title in titles]
    assert len(every) == len(set(every)), "a term is a keyboard stop in two pages"
    assert max(len(t) for t in stops.values()) <= MAX_TERM_STOPS, {k: len(v) for k, v in stops.items()}
    assert len(stops["pipeline-parallelism"]) >= 3  # the chapters hold their own terms
    assert marked["why-distributed-training"] > 2 * len(stops["why-distributed-training"])  # and hover for the rest
    home = (folder / "index.html").read_text(encoding="utf-8")
    assert "<abbr title=" in home and '<abbr tabindex="0"' not in home
