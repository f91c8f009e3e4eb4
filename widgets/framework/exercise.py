"""Typed-answer exercises: the reader types a number, calc checks it.

A chapter's exercise holds a fenced block inside its `!!! question` box (CONTRIBUTING.md,
"How to write an exercise"):

    ```exercise
    answer: dp.comm_time gpus=64
    unit: s
    tolerance: 2%
    ```

`answer` is a macro expression (`widget.output key=value …`, evaluated exactly like a
`{{ … }}` macro), `unit` the unit the reader answers in (see `UNITS`), `tolerance` a
relative tolerance (`1%` by default; `0` means exact). The same functions run at build
time (`parse`, `expected`, `render_form`) and in the browser's Pyodide worker (`handle`,
which calls `check`): JavaScript neither reads nor compares numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .core import named_values
from .escape import escape
from .html import attrs, esc
from .locale import Locale, NumberError, Reading, SUPERSCRIPT, plain_number

#: Output kinds (widgets.framework.spec.OUTPUT_KINDS) that are plain numbers: counts, ratios, fractions.
DIMENSIONLESS = ("count", "integer", "number", "scientific", "exact", "exact_scientific", "ratio", "fraction")


@dataclass(frozen=True)
class Unit:
    """A unit the reader may answer in: how many SI base units one of it is, which
    output kinds it measures, and whether its name is a word to translate."""

    scale: float
    kinds: tuple[str, ...]
    word: bool = False


#: unit code (as written in the fence and in `data-unit`) -> Unit. Bytes are decimal
#: (1 GB = 1e9 B, as NVIDIA and the ZeRO paper count them).
UNITS: dict[str, Unit] = {
    "B": Unit(1.0, ("bytes",)),
    "KB": Unit(1e3, ("bytes",)),
    "kB": Unit(1e3, ("bytes",)),  # SI kilobyte, as the pages write it
    "MB": Unit(1e6, ("bytes",)),
    "GB": Unit(1e9, ("bytes",)),
    "TB": Unit(1e12, ("bytes",)),
    "s": Unit(1.0, ("seconds",), word=True),
    "ms": Unit(1e-3, ("seconds",), word=True),
    "min": Unit(60.0, ("seconds",), word=True),
    "h": Unit(3600.0, ("seconds",), word=True),
    "days": Unit(86400.0, ("seconds",), word=True),
    "%": Unit(0.01, DIMENSIONLESS),
    "x": Unit(1.0, DIMENSIONLESS),
    "": Unit(1.0, DIMENSIONLESS),
    "FLOP": Unit(1.0, ("flops",)),
    "PFLOP": Unit(1e15, ("flops",)),
    "EFLOP": Unit(1e18, ("flops",)),
    "ZFLOP": Unit(1e21, ("flops",)),
    "TFLOP/s": Unit(1e12, ("flops_per_s",)),
    "GB/s": Unit(1e9, ("bytes_per_s",)),
}
DEFAULT_TOLERANCE = 0.01
MAX_TOLERANCE = 0.25
#: "Exact" still forgives the last bits of floating point (0.1 + 0.2 is 0.3).
EXACT = 1e-9
KEYS = ("answer", "unit", "tolerance")
ANSWER = re.compile(r"(?:\{\{)?\s*(?P<name>[\w-]+)\.(?P<key>\w+)(?P<args>(?:\s+[\w-]+=[^\s}]+)*)\s*(?:\}\})?")
TYPED_CHARS = 40  # how much of an unreadable answer the message repeats


class ExerciseError(ValueError):
    """A fence the build cannot use; `offset` is the line inside the fence body (1-based),
    0 when the problem is not on one line."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Exercise:
    """One exercise: the output that answers it, the unit and the relative tolerance."""

    widget: str
    output: str
    overrides: tuple[tuple[str, str], ...]
    unit: str = ""
    tolerance: float = DEFAULT_TOLERANCE

    @property
    def spec(self) -> str:
        """The answer as a macro expression: `dp.comm_time gpus=64` (`data-spec`)."""
        args = "".join(f" {k}={v}" for k, v in self.overrides)
        return f"{self.widget}.{self.output}{args}"


@dataclass(frozen=True)
class Result:
    """What the reader sees after Check: `status` is correct, incorrect, invalid or
    error (the exercise itself cannot be checked); `html` is the localized message."""

    status: str
    html: str


# --- reading a fence ---------------------------------------------------------------------


def parse(body: str) -> Exercise:
    """The exercise in a fence body (`key: value` lines); `ExerciseError` names the line."""
    found: dict[str, tuple[str, int]] = {}
    for offset, text in enumerate(body.splitlines(), start=1):
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        if ":" not in text:
            raise ExerciseError(f"expected `key: value` (keys: {', '.join(KEYS)}), got {text!r}", offset)
        key, value = (part.strip() for part in text.split(":", 1))
        if key not in KEYS:
            raise ExerciseError(f"unknown key {key!r}; an exercise has {', '.join(KEYS)}", offset)
        if key in found:
            raise ExerciseError(f"{key!r} is given twice", offset)
        found[key] = (value.strip("\"'"), offset)
    if "answer" not in found:
        raise ExerciseError("no `answer:` line, e.g. `answer: dp.comm_time gpus=64`")
    answer, line = found["answer"]
    widget, output, overrides = _answer(answer, line)
    unit, line = found.get("unit", ("", 0))
    if unit not in UNITS:
        raise ExerciseError(f"unknown unit {unit!r}; use one of {_unit_list()} or leave it out", line)
    tolerance, line = found.get("tolerance", ("1%", 0))
    return Exercise(widget, output, overrides, unit, _tolerance(tolerance, line))


def from_attributes(spec: str, unit: str, tolerance: str) -> Exercise:
    """The exercise a form's `data-spec`, `data-unit` and `data-tolerance` describe."""
    widget, output, overrides = _answer(str(spec), 0)
    if unit not in UNITS:
        raise ExerciseError(f"unknown unit {unit!r}")
    try:
        value = float(str(tolerance))
    except ValueError:
        raise ExerciseError(f"tolerance {tolerance!r} is not a number") from None
    if not 0 <= value <= MAX_TOLERANCE:  # also rejects NaN
        raise ExerciseError(f"tolerance {tolerance!r} is out of range")
    return Exercise(widget, output, overrides, str(unit), value)


def _answer(text: str, line: int) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    match = ANSWER.fullmatch(text.strip())
    if not match:
        raise ExerciseError(f"answer {text!r} is not a macro expression such as `dp.comm_time gpus=64`", line)
    pairs = [tuple(arg.split("=", 1)) for arg in match["args"].split()]
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ExerciseError(f"answer {text!r} sets {key!r} twice", line)
    # Sorted, so `data-spec` is canonical: the same exercise reads the same in every language.
    return match["name"], match["key"], tuple(sorted(pairs))  # type: ignore[return-value]


def _tolerance(text: str, line: int) -> float:
    plain = text.replace(" ", "")
    match = re.fullmatch(r"(?P<number>\d+(?:\.\d+)?)(?P<percent>%?)", plain)
    if not match or (not match["percent"] and float(match["number"]) != 0):
        raise ExerciseError(f"tolerance {text!r}: write a percentage such as `1%` or `0.5%`, or `0` for an exact answer", line)
    value = float(match["number"]) / 100
    if value > MAX_TOLERANCE:
        raise ExerciseError(f"tolerance {text!r} is more than {MAX_TOLERANCE:.0%}: is it a typo?", line)
    return value


def _unit_list() -> str:
    return ", ".join(f"`{code}`" for code in UNITS if code)


# --- the answer ---------------------------------------------------------------------------


def expected(ex: Exercise) -> float:
    """The answer in the exercise's unit, computed by calc through the widget or lab
    (exactly what `{{ widget.output … }}` shows, before formatting). ValueError if it cannot be."""
    try:
        kinds, values = named_values(ex.widget, dict(ex.overrides))
    except ValueError as error:
        raise ExerciseError(str(error)) from None
    kind = kinds.get(ex.output)
    if kind is None:
        raise ExerciseError(f"{'lab' if ex.widget.startswith('lab-') else 'widget'} {ex.widget} has no output {ex.output!r}; it has {', '.join(kinds)}")
    unit = UNITS[ex.unit]
    if kind not in unit.kinds:
        fits = [f"`{code}`" if code else "no unit" for code, u in UNITS.items() if kind in u.kinds]
        raise ExerciseError(f"{ex.widget}.{ex.output} is a {kind} value; unit {ex.unit or 'none'!r} does not measure it "
                            f"(use {', '.join(fits) or 'another output'})")
    return float(values[ex.output]) / unit.scale


def validate(ex: Exercise) -> float:
    """`expected`, plus what only the build checks: an exact answer must be one a reader
    can type (an integer or a short decimal, not 0.4718…)."""
    answer = expected(ex)
    if ex.tolerance == 0 and not _short(answer):
        raise ExerciseError(f"tolerance 0 (exact) but the answer is {answer!r} {ex.unit}; give a tolerance such as 1%")
    return answer


def _short(value: float) -> bool:
    return math.isfinite(value) and abs(float(f"{value:.6g}") - value) <= EXACT * abs(value)


# --- checking a typed answer --------------------------------------------------------------


def check(ex: Exercise, typed: str, loc: Locale) -> Result:
    """Compare what the reader typed with calc's answer, within the relative tolerance.

    The message never gives the answer away when it is wrong (only whether it is too
    high or too low); after a correct answer it shows calc's value in the page locale.
    Text that reads two ways (`Locale.readings`: Indonesian 80.860 is 80860 by the
    thousands rule, but most likely 80,86 typed with a point) is never silently read
    one way: if exactly one reading is right, it is accepted and the message says how
    the answer was read; otherwise the answer is invalid and the message names both.
    """
    text = str(typed).strip()
    if not text:
        return Result("invalid", _message("invalid", loc.h("exercise.empty")))
    shown = text if len(text) <= TYPED_CHARS else text[: TYPED_CHARS - 1] + "…"
    try:
        readings = loc.readings(_without_unit(text, ex.unit, loc))
    except NumberError:
        return Result("invalid", _message("invalid", loc.h("exercise.invalid", typed=shown)))
    try:
        answer = expected(ex)
    except ValueError:
        return Result("error", _message("error", loc.h("exercise.broken")))
    if len(readings) > 1:
        return _either(readings, answer, ex, shown, loc)
    value = readings[0].value
    if matches(value, answer, ex.tolerance):
        return Result("correct", _message("correct", _praise(answer, ex, loc)))
    key = "exercise.too_high" if value > answer else "exercise.too_low"
    return Result("incorrect", _message("incorrect", loc.h(key)))


def _either(readings: tuple[Reading, ...], answer: float, ex: Exercise, shown: str, loc: Locale) -> Result:
    """The verdict on text with a thousands and a decimal reading (see `check`)."""
    right = [r for r in readings if matches(r.value, answer, ex.tolerance)]
    if len(right) == 1:
        read = loc.h("exercise.read_as", typed=shown, reading=right[0].text)
        return Result("correct", _message("correct", _sentences(_praise(answer, ex, loc), read)))
    thousands, decimal = readings[0].text, readings[-1].text
    return Result("invalid", _message("invalid", loc.h("exercise.ambiguous", typed=shown, thousands=thousands,
                                                        decimal=decimal)))


def _praise(answer: float, ex: Exercise, loc: Locale) -> str:
    return loc.h("exercise.correct", value=quantity(answer, ex.unit, loc))


def _sentences(*parts: str) -> str:
    """Sentences in a row: a space after `.` or `!`, none after a full-width `。` (Chinese)."""
    out = ""
    for part in parts:
        out += part if not out or out.endswith(("。", "！", "？")) else " " + part
    return out


def matches(value: float, answer: float, tolerance: float) -> bool:
    """|value − answer| ≤ tolerance × |answer| (relative); tolerance 0 means exact."""
    return abs(value - answer) <= max(tolerance, EXACT) * abs(answer) * (1 + 1e-12) or value == answer


def _without_unit(text: str, unit: str, loc: Locale) -> str:
    """The typed text without a trailing unit the reader may add (`0,47 detik`, `25%`)."""
    names = {unit, unit.lower(), unit_label(unit, loc)}
    if unit == "x":
        names |= {"×", "X"}
    for name in sorted((n for n in names if n), key=len, reverse=True):
        if text.lower().endswith(name.lower()) and len(text) > len(name):
            return text[: -len(name)].strip()
    return text


def _message(status: str, text: str) -> str:
    return f'<span class="w-exercise-{status}">{text}</span>'


def handle(request: Mapping[str, Any], loc: Locale) -> dict[str, str]:
    """The worker's entry point: {spec, unit, tolerance, typed} in, {status, html} out."""
    try:
        ex = from_attributes(str(request.get("spec", "")), str(request.get("unit", "")), str(request.get("tolerance", "")))
    except ValueError:
        return {"status": "error", "html": _message("error", loc.h("exercise.broken"))}
    result = check(ex, str(request.get("typed", "")), loc)
    return {"status": result.status, "html": result.html}


# --- text in the page locale -----------------------------------------------------------------


def unit_label(unit: str, loc: Locale) -> str:
    """The unit as the reader sees it beside the field: `GB`, `detik`/`秒`, `%`, `×`."""
    if unit == "x":
        return "×"
    if UNITS[unit].word:
        return loc.t(f"exercise.units.{unit}")
    return unit


def exact_number(value: float, loc: Locale) -> str:
    """calc's value for a reader: whole numbers in full (4.194.304), others to four
    significant digits (0,4718), very large or small ones as 1,235 × 10¹⁸."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if value.is_integer() and magnitude < 1e15:
        return loc.fixed(value, 0)
    exponent = math.floor(math.log10(magnitude))
    if exponent >= 15 or exponent < -4:
        mantissa = value / 10**exponent
        return f"{_trim(loc.fixed(mantissa, 3), loc)} × 10{str(exponent).translate(SUPERSCRIPT)}"
    return _trim(loc.fixed(value, max(0, 3 - exponent)), loc)


def quantity(value: float, unit: str, loc: Locale) -> str:
    """A number with the exercise's unit: `0,4718 detik`, `42,86%`, `2,909×`, `128`."""
    number = exact_number(value, loc)
    if unit == "%":
        return loc.t("units.percent", value=number)
    if unit == "x":
        return loc.t("units.ratio", value=number)
    return f"{number} {unit_label(unit, loc)}" if unit else number


def tolerance_text(tolerance: float, loc: Locale) -> str:
    """`Toleransi ±1%` / `允许误差 ±1%`, or that the answer must be exact."""
    if tolerance == 0:
        return loc.t("exercise.exact")
    return loc.t("exercise.tolerance", tolerance=loc.t("units.percent", value=loc.number(tolerance * 100)))


def _trim(text: str, loc: Locale) -> str:
    if loc.decimal in text:
        text = text.rstrip("0").rstrip(loc.decimal)
    return text


# --- the pre-rendered form ------------------------------------------------------------------


def render_form(ex: Exercise, answer: float, ident: str, loc: Locale) -> str:
    """The exercise's form (the DOM contract in CONTRIBUTING.md). It is `hidden` until the
    runtime unhides it: without JavaScript a reader gets the question and the solution.
    Its labels are kept out of the search index (`data-search-exclude`)."""
    base = f"exercise-{ident}"
    unit = unit_label(ex.unit, loc) if ex.unit else ""
    described = " ".join(part for part in (f"{base}-unit" if unit else "", f"{base}-tolerance") if part)
    root = attrs(class_="w-exercise", id=base, data_exercise=ident, data_status="static", data_revision="0",
                 data_lang=loc.lang, data_answer=plain_number(answer), data_spec=ex.spec, data_unit=ex.unit,
                 data_tolerance=plain_number(ex.tolerance), data_search_exclude=True, hidden=True, novalidate=True,
                 autocomplete="off")
    field = attrs(id=f"{base}-answer", class_="w-exercise-input", name="answer", type="text", inputmode="decimal",
                  autocomplete="off", autocapitalize="off", spellcheck="false", aria_describedby=described)
    unit_html = f'<span class="w-exercise-unit" id="{base}-unit">{esc(unit)}</span>' if unit else ""
    return (
        f"<form{root}>"
        f'<div class="w-exercise-row">'
        f'<label class="w-exercise-label" for="{base}-answer">{loc.h("exercise.label")}</label>'
        f'<span class="w-exercise-field"><input{field}>{unit_html}</span>'
        f'<span class="w-exercise-actions">'
        f'<button type="submit" class="w-exercise-check">{loc.h("exercise.check")}</button>'
        f'<button type="button" class="w-exercise-show" data-action="solution">{loc.h("exercise.show")}</button>'
        f"</span></div>"
        f'<p class="w-exercise-tolerance" id="{base}-tolerance">{escape(tolerance_text(ex.tolerance, loc), quote=False)}</p>'
        f'<p class="w-exercise-feedback" data-region="feedback" role="status" aria-live="polite"></p>'
        f"</form>"
    )


__all__ = [
    "DEFAULT_TOLERANCE", "Exercise", "ExerciseError", "Result", "UNITS", "Unit", "check", "exact_number",
    "expected", "from_attributes", "handle", "matches", "parse", "quantity", "render_form", "tolerance_text",
    "unit_label", "validate",
]
