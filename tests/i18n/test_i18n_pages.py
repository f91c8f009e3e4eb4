"""i18n/pages.py: a translated page has the same skeleton as its source, and says when
its source changed. Each test breaks a copy of real pages the way a translator might."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from i18n.pages import check_pages, parse_page, source_hash, stamp

PROJECT = Path(__file__).resolve().parents[2]


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= count, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, start=1) if text in line)


def messages(docs: Path) -> list[str]:
    return [str(problem) for problem in check_pages(docs)]


def test_a_faithful_copy_of_the_book_has_no_problems(book_copy: Path) -> None:
    assert check_pages(book_copy) == []


def test_a_missing_page_is_reported_with_what_to_translate(book_copy: Path) -> None:
    (book_copy / "zh" / "tensor-parallelism.md").unlink()

    assert messages(book_copy) == [
        "docs/zh/tensor-parallelism.md:1: pages: missing page: translate docs/id/tensor-parallelism.md into this "
        "file (readers of zh see the source with a 'not translated yet' banner meanwhile)",
    ]


def test_a_page_without_source_is_an_extra_page(book_copy: Path) -> None:
    (book_copy / "zh" / "draft.md").write_text("# 草稿\n", encoding="utf-8")

    assert messages(book_copy) == [
        "docs/zh/draft.md:1: pages: extra page: there is no docs/id/draft.md to translate it from; "
        "write the source first, or delete or rename this page",
    ]


def test_a_language_folder_that_does_not_exist_yet_is_one_problem(book_copy: Path) -> None:
    assert messages_for(book_copy, ["zh", "ms"]) == [
        "docs/ms/:1: pages: no translated pages yet (3 pages in docs/id/): create the folder and translate "
        "them, see the Translate page",
    ]


def messages_for(docs: Path, languages: list[str]) -> list[str]:
    return [str(problem) for problem in check_pages(docs, "id", languages)]


def restamp(docs: Path, name: str) -> None:
    """What a translator does after updating the page: only the skeleton is compared."""
    stamp(docs / "zh" / name, docs)


def test_widgets_in_a_different_order_are_one_problem(book_copy: Path) -> None:
    source, translation = book_copy / "id" / "tensor-parallelism.md", book_copy / "zh" / "tensor-parallelism.md"
    edit(source, "```widget tp\n```\n", "```widget tp\n```\n\n```widget dp\n```\n")
    edit(translation, "```widget tp\n```\n", "```widget dp\n```\n\n```widget tp\n```\n")
    restamp(book_copy, "tensor-parallelism.md")

    assert messages(book_copy) == [
        f"docs/zh/tensor-parallelism.md:{line_of(translation, '```widget dp')}: widgets: widgets in a different "
        "order: 'dp', 'tp' here, 'tp', 'dp' in docs/id/tensor-parallelism.md",
    ]


def test_a_missing_widget_points_at_the_section_it_belongs_to(book_copy: Path) -> None:
    translation = book_copy / "zh" / "tensor-parallelism.md"
    source_line = line_of(book_copy / "id" / "tensor-parallelism.md", "```widget tp")
    edit(translation, "```widget tp\n```\n", "")
    restamp(book_copy, "tensor-parallelism.md")

    # The source's widget is in the 4th H3 of the first H2; so is the place to put it back.
    assert messages(book_copy) == [
        f"docs/zh/tensor-parallelism.md:{line_of(translation, '### 省下多少，付出多少')}: widgets: missing widget "
        f"'tp' (docs/id/tensor-parallelism.md line {source_line}; 0 here, 1 in docs/id/tensor-parallelism.md)",
    ]


def test_a_section_turned_into_a_paragraph_is_named(book_copy: Path) -> None:
    translation = book_copy / "zh" / "tensor-parallelism.md"
    edit(translation, "### 注意力：按头切分\n", "**注意力：按头切分**\n")
    restamp(book_copy, "tensor-parallelism.md")

    [problem] = check_pages(book_copy)
    assert (problem.file, problem.line, problem.key) == (
        "docs/zh/tensor-parallelism.md", line_of(translation, "## 切分矩阵乘法"), "sections")
    assert problem.message.startswith("the outline differs: 7 H2 + 3 H3 here, 7 H2 + 4 H3 in docs/id/tensor-parallelism.md; ")
    assert '"## 切分矩阵乘法：先列后行" has 3 H3 here, but its counterpart "## Membagi perkalian matriks"' in problem.message
    assert '"### Attention: dibagi per head"' in problem.message


def test_fewer_h2_sections_list_the_sources_sections(book_copy: Path) -> None:
    translation = book_copy / "zh" / "tensor-parallelism.md"
    edit(translation, "## 例题\n", "**例题**\n")
    restamp(book_copy, "tensor-parallelism.md")

    [problem] = check_pages(book_copy)
    assert problem.key == "sections"
    assert problem.message.startswith("the outline differs: 6 H2 + 4 H3 here, 7 H2 + 4 H3 in docs/id/tensor-parallelism.md; "
                                      "the H2 sections of docs/id/tensor-parallelism.md: line 7 \"## Membagi perkalian matriks\"")
    assert '"## Contoh terhitung"' in problem.message


def test_code_blocks_must_have_the_same_count_and_languages(book_copy: Path) -> None:
    translation = book_copy / "zh" / "translate.md"
    edit(translation, "```bash\nmake check", "```shell\nmake check")
    restamp(book_copy, "translate.md")

    source_line = line_of(book_copy / "id" / "translate.md", "```bash")
    assert messages(book_copy) == [
        f"docs/zh/translate.md:{line_of(translation, '```shell')}: code blocks: code block (shell) here, "
        f"where docs/id/translate.md line {source_line} has a code block (bash)",
    ]


def test_a_deleted_code_block_is_missing(book_copy: Path) -> None:
    translation = book_copy / "zh" / "translate.md"
    edit(translation, "```yaml\n        - locale: ms\n          name: Bahasa Melayu\n          build: true\n```\n", "")
    restamp(book_copy, "translate.md")

    source_line = line_of(book_copy / "id" / "translate.md", "        - locale: ms") - 1
    assert messages(book_copy) == [
        f"docs/zh/translate.md:{line_of(translation, '## 增加一种语言')}: code blocks: missing code block (yaml) "
        f"(docs/id/translate.md line {source_line}; 5 here, 6 in docs/id/translate.md)",
    ]


def test_links_must_reach_the_same_pages(book_copy: Path) -> None:
    translation = book_copy / "zh" / "index.md"
    edit(translation, "[张量并行](tensor-parallelism.md)", "张量并行")
    edit(translation, "[全书要点](key-ideas.md)", "[全书要点](key-idea.md)")
    restamp(book_copy, "index.md")

    assert messages(book_copy) == [
        f"docs/zh/index.md:{line_of(translation, '## 全书路线')}: links: missing link to key-ideas.md "
        f"(docs/id/index.md line {line_of(book_copy / 'id' / 'index.md', '(key-ideas.md)')} links it)",
        f"docs/zh/index.md:{line_of(translation, '## 全书路线')}: links: missing link to tensor-parallelism.md "
        f"(docs/id/index.md line {line_of(book_copy / 'id' / 'index.md', '(tensor-parallelism.md)')} links it)",
        f"docs/zh/index.md:{line_of(translation, 'key-idea.md')}: links: extra link to key-idea.md: "
        "docs/id/index.md does not link it; check the target, or add the link to the source first",
    ]


def test_a_changed_source_makes_its_translation_stale_until_stamped(book_copy: Path) -> None:
    source, translation = book_copy / "id" / "index.md", book_copy / "zh" / "index.md"
    recorded = source_hash(source)
    with source.open("a", encoding="utf-8") as file:
        file.write("\nSatu kalimat baru.\n")
    current = hashlib.sha256(source.read_bytes()).hexdigest()[:12]

    assert messages(book_copy) == [
        f"docs/zh/index.md:2: stale: docs/id/index.md changed after this translation (source_hash {recorded} "
        f"recorded, the source is now {current}); bring the translation up to date, then run "
        "`python -m i18n stamp docs/zh/index.md`",
    ]

    assert stamp(translation, book_copy) == current
    assert check_pages(book_copy) == []
    assert translation.read_text(encoding="utf-8").startswith(f'---\nsource_hash: "{current}"\n---\n# ')


def test_a_translation_without_a_stamp_is_reported(book_copy: Path) -> None:
    translation = book_copy / "zh" / "index.md"
    text = translation.read_text(encoding="utf-8")
    translation.write_text(text.split("---\n", 2)[2], encoding="utf-8")

    assert messages(book_copy) == [
        "docs/zh/index.md:1: not stamped: the front matter has no source_hash, so a later change of "
        "docs/id/index.md would go unnoticed; when this page matches it, run `python -m i18n stamp docs/zh/index.md`",
    ]


def test_stamp_keeps_the_other_front_matter_and_the_text(book_copy: Path) -> None:
    translation = book_copy / "zh" / "index.md"
    body = translation.read_text(encoding="utf-8").split("---\n", 2)[2]
    translation.write_text(f'---\ntitle: 首页\nsource_hash: "000000000000"\nhide: [toc]\n---\n{body}', encoding="utf-8")

    digest = stamp(translation, book_copy)

    assert translation.read_text(encoding="utf-8") == f'---\ntitle: 首页\nsource_hash: "{digest}"\nhide: [toc]\n---\n{body}'
    assert parse_page(translation).front == {"title": "首页", "source_hash": digest, "hide": ["toc"]}


def test_the_skeleton_of_a_page(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "zh" / "guide" / "x.md"
    page.parent.mkdir(parents=True)
    page.write_text(
        '---\nsource_hash: "abc"\n---\n'  # 1-3
        "# 标题\n"  # 4
        "## 一 [链接](../zero.md#anchor) 与 ![图](img/ring.svg)\n"  # 5
        "`[不是链接](code.md)` 和 {{ why.params }} 和 [外部](https://arxiv.org) 和 [本页](#top)\n"  # 6
        "````markdown\n```python\n## 不是标题\n```\n````\n"  # 7-11
        "    ### 二\n"  # 12: inside an admonition
        "```widget why\nmodel: llama2-70b\n```\n"  # 13-15
        "~~~ {.python .numberlines}\nx = 1\n~~~\n"  # 16-18
        "```\nplain\n```\n"  # 19-21
        "<!-- glossary -->\n"  # 22
        '[ref]: ../faq.md "FAQ"\n',  # 23
        encoding="utf-8",
    )

    skeleton = parse_page(page, "guide/x.md")

    assert skeleton.front == {"source_hash": "abc"} and skeleton.front_lines == {"source_hash": 2}
    assert [(i.value, i.line, i.text) for i in skeleton.sections] == [("H2", 5, "一 [链接](../zero.md#anchor) 与 ![图](img/ring.svg)"), ("H3", 12, "二")]
    assert [(i.value, i.line) for i in skeleton.links] == [("zero.md", 5), ("faq.md", 23)]
    assert [(i.value, i.line) for i in skeleton.figures] == [("guide/img/ring.svg", 5)]
    assert [(i.value, i.line) for i in skeleton.code] == [("markdown", 7), ("python", 16), ("", 19)]
    assert [(i.value, i.line) for i in skeleton.widgets] == [("why", 13)]
    assert [(i.value, i.line) for i in skeleton.markers] == [("glossary", 22)]


# --- the command line ---------------------------------------------------------------------------


def run_i18n(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "i18n", *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", check=False, timeout=60, env={**os.environ, "PYTHONPATH": str(PROJECT)})


def test_check_reports_pages_as_file_line_problem_and_fails(book_copy: Path, tmp_path: Path) -> None:
    (book_copy / "zh" / "translate.md").unlink()
    edit(book_copy / "zh" / "index.md", "[张量并行](tensor-parallelism.md)", "张量并行")

    result = run_i18n("check", "--dir", str(PROJECT / "i18n"), "--docs", "docs", cwd=tmp_path)

    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert any(line.startswith("docs/zh/index.md:") and ": links: missing link to tensor-parallelism.md" in line for line in lines)
    assert "docs/zh/translate.md:1: pages: missing page: translate docs/id/translate.md into this file" in result.stderr
    assert lines[-1] == "i18n: 2 problems in 2 files"


def test_check_says_what_it_checked_when_all_is_well(book_copy: Path, tmp_path: Path) -> None:
    result = run_i18n("check", "--dir", str(PROJECT / "i18n"), "--docs", "docs", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.startswith("i18n: 3 pages in 2 languages, all translated and up to date; glossary: ")
    assert second.startswith("i18n: 2 languages, ") and second.endswith(" keys each, no problems")


def test_stamp_on_the_command_line(book_copy: Path, tmp_path: Path) -> None:
    with (book_copy / "id" / "index.md").open("a", encoding="utf-8") as file:
        file.write("\nTambahan.\n")
    digest = source_hash(book_copy / "id" / "index.md")

    result = run_i18n("stamp", "docs/zh/index.md", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, f"i18n: stamped docs/zh/index.md (source_hash: {digest})\n")

    result = run_i18n("stamp", "--all", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"i18n: stamped docs/zh/{name} (source_hash: {source_hash(book_copy / 'id' / name)})"
        for name in ("index.md", "tensor-parallelism.md", "translate.md")
    ]


@pytest.mark.parametrize(
    ("page", "error"),
    [
        ("docs/id/index.md", "i18n: docs/id/index.md: this is a source page (id); stamp its translations instead\n"),
        ("docs/zh/nothing.md", "i18n: docs/zh/nothing.md: no such page\n"),
        ("index.md", "i18n: index.md: not inside docs/\n"),
    ],
)
def test_stamp_refuses_what_is_not_a_translation(book_copy: Path, tmp_path: Path, page: str, error: str) -> None:
    (tmp_path / "index.md").write_text("# x\n", encoding="utf-8")
    result = run_i18n("stamp", page, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, error)


def test_the_books_pages_are_translated_and_up_to_date() -> None:
    """The real repository: every page in every language, same skeleton, none stale."""
    assert [str(problem) for problem in check_pages(PROJECT / "docs", "id", ["zh"])] == []
