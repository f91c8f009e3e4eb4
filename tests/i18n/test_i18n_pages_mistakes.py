"""i18n/pages.py: mistakes in a page that would ship broken are reported at their own
line, once, in every language: a macro in full-width braces, a widget fence left open,
a raw <script>, a link to an anchor that does not exist."""

from __future__ import annotations

from pathlib import Path

from i18n.pages import check_pages, parse_page

PAGE = "tensor-parallelism.md"


def edit(docs: Path, lang: str, old: str, new: str) -> int:
    """Replace `old` by `new` in docs/<lang>/PAGE; returns the line where `new` starts."""
    path = docs / lang / PAGE
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")
    return text[: text.index(new)].count("\n") + 1


def problems(docs: Path) -> list[str]:
    return [str(problem) for problem in check_pages(docs)]


def test_a_macro_in_full_width_braces_is_reported_at_its_line(book_copy: Path) -> None:
    line = edit(book_copy, "zh", "## 为什么张量并行留在节点之内", "## 为什么张量并行留在节点之内\n\n约 ｛｛ tp.comm_time ｝｝。")
    assert problems(book_copy) == [
        f"docs/zh/{PAGE}:{line + 2}: macro: a macro written with full-width braces ｛｛ ｝｝ ships as text: "
        "write it with ASCII braces, {{ widget.output }}"]


def test_half_width_mixed_with_full_width_is_reported_too(book_copy: Path) -> None:
    edit(book_copy, "zh", "## 为什么张量并行留在节点之内", "## 为什么张量并行留在节点之内\n\n约 {｛ tp.comm_time }}。")
    [problem] = problems(book_copy)
    assert ": macro: " in problem


def test_a_widget_fence_left_open_is_one_problem_at_the_fence(book_copy: Path) -> None:
    line = edit(book_copy, "zh", "```widget tp\n```\n", "```widget tp\n\n")
    assert problems(book_copy) == [
        f"docs/zh/{PAGE}:{line}: fence: the ```widget fence opened here is never closed: end it with a line ``` "
        "at the same indentation (until then the page would show its options as text)"]


def test_a_widget_fence_left_open_in_the_source_is_reported_there(book_copy: Path) -> None:
    line = edit(book_copy, "id", "```widget tp\n```\n", "```widget tp\n\n")
    found = problems(book_copy)
    assert f"docs/id/{PAGE}:{line}: fence: the ```widget fence opened here is never closed" in found[0]


def test_a_script_in_a_page_is_reported_at_its_line(book_copy: Path) -> None:
    line = edit(book_copy, "zh", "## 序列并行", "## 序列并行\n\n<script>alert(document.domain)</script>")
    assert problems(book_copy) == [
        f"docs/zh/{PAGE}:{line + 2}: script: a <script> in the page: the site's policy runs only the scripts the "
        "theme and the book ship; pages are text and figures"]


def test_a_script_in_a_code_block_or_span_is_text(book_copy: Path) -> None:
    edit(book_copy, "zh", "## 序列并行", "## 序列并行\n\n写成 `<script>` 的标签只是文字。")
    assert problems(book_copy) == []


def test_a_broken_anchor_is_reported_with_the_ids_there_are(book_copy: Path) -> None:
    line = edit(book_copy, "zh", "## 序列并行", "## 序列并行\n\n见[上文](#没有这一节)。")
    [problem] = problems(book_copy)
    assert problem.startswith(f"docs/zh/{PAGE}:{line + 2}: links: broken anchor #没有这一节: this page has no "
                              "heading or element with the id '没有这一节'")


def test_anchors_to_headings_widgets_and_exercises_are_valid(book_copy: Path) -> None:
    edit(book_copy, "zh", "## 序列并行", "## 序列并行\n\n见[上文](#序列并行)、[图](#widget-tp)、[练习](#exercise-tensor-parallelism-1)。")
    assert problems(book_copy) == []


def test_the_anchors_of_a_page_follow_the_sites_slugs(book_copy: Path) -> None:
    anchors = parse_page(book_copy / "zh" / PAGE, PAGE).anchors
    assert {"切分矩阵乘法先列后行", "mlp为什么先列后行", "widget-tp", "exercise-tensor-parallelism-1"} <= anchors
