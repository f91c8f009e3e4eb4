"""i18n/pages.py: a translation asks the same typed-answer exercises as its source, in the
same order (answer, unit and tolerance), and says where it does not. Each test adds an
exercise to a copy of a real chapter the way a writer would, then breaks the translation."""

from __future__ import annotations

from pathlib import Path

from i18n.pages import check_pages, exercise_spec, parse_page, stamp

ID_EXERCISE = '''
!!! question "Latihan uji — all-reduce"
    Berapa detik? Jawab dalam detik.

    ```exercise
    answer: dp.comm_time gpus=64
    unit: s
    tolerance: 2%
    ```

    ??? success "Pembahasan"
        {{ dp.comm_time gpus=64 }}.
'''
ZH_EXERCISE = '''
!!! question "练习 — all-reduce"
    需要多少秒？以秒作答。

    ```exercise
    answer: dp.comm_time gpus=64
    unit: s
    tolerance: 2%
    ```

    ??? success "解答"
        {{ dp.comm_time gpus=64 }}。
'''
PAGE = "tensor-parallelism.md"


def add(docs: Path, lang: str, text: str) -> Path:
    """Append `text` to the page in `lang`; stamp the translation as a translator would."""
    path = docs / lang / PAGE
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n" + text, encoding="utf-8")
    return path


def restamp(docs: Path) -> None:
    stamp(docs / "zh" / PAGE, docs)


def line_of(path: Path, text: str, occurrence: int = -1) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [n for n, line in enumerate(lines, start=1) if text in line][occurrence]


def messages(docs: Path) -> list[str]:
    return [str(problem) for problem in check_pages(docs)]


def test_the_same_exercise_in_both_languages_is_no_problem(book_copy: Path) -> None:
    add(book_copy, "id", ID_EXERCISE)
    add(book_copy, "zh", ZH_EXERCISE)
    restamp(book_copy)
    assert messages(book_copy) == []
    exercises = parse_page(book_copy / "zh" / PAGE).exercises
    assert exercises[-1].value == "answer: dp.comm_time gpus=64, unit: s, tolerance: 2%"


def test_an_exercise_with_another_answer_is_reported_on_its_line(book_copy: Path) -> None:
    source = add(book_copy, "id", ID_EXERCISE)
    translation = add(book_copy, "zh", ZH_EXERCISE.replace("gpus=64", "gpus=32"))
    restamp(book_copy)
    assert messages(book_copy) == [
        f"docs/zh/{PAGE}:{line_of(translation, '```exercise')}: exercises: exercise "
        f"(answer: dp.comm_time gpus=32, unit: s, tolerance: 2%) here, where docs/id/{PAGE} line "
        f"{line_of(source, '```exercise')} has an exercise (answer: dp.comm_time gpus=64, unit: s, tolerance: 2%)",
    ]


def test_a_different_unit_or_tolerance_is_a_different_exercise(book_copy: Path) -> None:
    add(book_copy, "id", ID_EXERCISE)
    add(book_copy, "zh", ZH_EXERCISE.replace("unit: s", "unit: ms").replace("tolerance: 2%", "tolerance: 1%"))
    restamp(book_copy)
    [problem] = messages(book_copy)
    assert "unit: ms, tolerance: 1%" in problem and "unit: s, tolerance: 2%" in problem


def test_a_missing_exercise_is_reported_at_its_section(book_copy: Path) -> None:
    source = add(book_copy, "id", ID_EXERCISE)
    restamp(book_copy)
    [problem] = messages(book_copy)
    assert problem.startswith(f"docs/zh/{PAGE}:")
    assert (f"exercises: missing exercise (answer: dp.comm_time gpus=64, unit: s, tolerance: 2%) "
            f"(docs/id/{PAGE} line {line_of(source, '```exercise')};") in problem
    assert "code block" not in problem  # an exercise fence is not counted as a code block


def test_exercises_in_another_order_are_one_problem(book_copy: Path) -> None:
    second_id = ID_EXERCISE.replace("dp.comm_time gpus=64", "dp.seqs_per_gpu").replace("unit: s\n", "")
    second_zh = ZH_EXERCISE.replace("dp.comm_time gpus=64", "dp.seqs_per_gpu").replace("unit: s\n", "")
    add(book_copy, "id", ID_EXERCISE + second_id)
    add(book_copy, "zh", second_zh + ZH_EXERCISE)
    restamp(book_copy)
    [problem] = messages(book_copy)
    assert "exercises: exercises in a different order" in problem


def test_the_same_exercise_written_differently_is_the_same() -> None:
    plain = exercise_spec(["answer: dp.comm_time gpus=64 model=llama2-13b", "unit: s"])
    assert plain == "answer: dp.comm_time gpus=64 model=llama2-13b, unit: s, tolerance: 1%"
    assert exercise_spec(["# comment", "answer: {{ dp.comm_time model=llama2-13b gpus=64 }}", "unit: s",
                          "tolerance: 1 %"]) == plain
    assert exercise_spec(["answer: why.params", "tolerance: 0"]) == "answer: why.params, unit: none, tolerance: 0"
