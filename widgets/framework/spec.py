"""Controls declared once, and everything derived from them.

A widget module lists its controls as `Range`, `Choice`, `Number` and `Toggle` values. From that one
table come: validation of an incoming state (`parse_state`), the canonical text of a state
for URLs (`canonical`), the HTML of the controls (`widgets.framework.html.controls_html`) and the
states the tests sample (`edge_states`, `random_states`).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Iterator, Mapping, Union

from .locale import plain_number

OUTPUT_KINDS = (
    "bytes", "seconds", "flops", "flops_per_s", "bytes_per_s",
    "count", "integer", "number", "scientific", "exact", "exact_scientific", "ratio", "fraction", "yesno",
)


class StateError(ValueError):
    """An invalid widget state; `key` names the i18n message, `params` fill it in."""

    def __init__(self, key: str, **params: str) -> None:
        super().__init__(f"{key}: {params}")
        self.key = key
        self.params = params


@dataclass(frozen=True)
class Range:
    """A number from `lo` to `hi`, shown as a slider; `display` is how its value reads."""

    name: str
    lo: float
    hi: float
    step: float
    default: float
    integer: bool = False
    display: str = "integer"

    def parse(self, raw: Any) -> float | int:
        value = _number(self.name, raw)
        if self.integer:
            if not float(value).is_integer():
                raise StateError("errors.integer", control=self.name, value=_show(raw))
            value = int(value)
        if not self.lo <= value <= self.hi:
            raise StateError("errors.range", control=self.name, value=_show(raw),
                             lo=plain_number(self.lo), hi=plain_number(self.hi))
        return value

    def samples(self, rng: random.Random) -> float | int:
        steps = round((self.hi - self.lo) / self.step)
        # Rounded to the step's grid, so a sample is a value the slider itself can hold
        # (0.01 + 14 × 0.01 is 0.15000000000000002 in binary, the slider's 0.15).
        value = round(self.lo + rng.randint(0, steps) * self.step, 10)
        return int(round(value)) if self.integer else value


@dataclass(frozen=True)
class Choice:
    """One of a few values, shown as a select (`radio=False`) or radio buttons.

    `labels` gives fixed option labels (model names); otherwise they are looked up as
    `<widget>.controls.<name>.options.<value>` in the catalog.
    """

    name: str
    options: tuple[str, ...]
    default: str
    radio: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)

    def parse(self, raw: Any) -> str:
        value = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) else None
        if value not in self.options:
            raise StateError("errors.choice", control=self.name, value=_show(raw),
                             choices=", ".join(self.options))
        return value

    def samples(self, rng: random.Random) -> str:
        return rng.choice(self.options)


@dataclass(frozen=True)
class NumberChoice(Choice):
    """A choice among numbers: any spelling of an option's value selects it, so
    `size_bytes=1e10`, `10000000000` and `1.0e10` all mean the option "1e10"."""

    def parse(self, raw: Any) -> str:
        if isinstance(raw, str) and raw in self.options:
            return raw
        if isinstance(raw, (int, float, str)) and not isinstance(raw, bool):
            try:
                value = float(raw)
            except (ValueError, OverflowError):
                value = math.nan
            for option in self.options:
                if value == float(option):
                    return option
        return super().parse(raw)


@dataclass(frozen=True)
class Toggle:
    """On or off, shown as a checkbox; canonical text is 1 or 0."""

    name: str
    default: bool

    def parse(self, raw: Any) -> bool:
        text = str(raw).strip().lower()
        if raw is True or text in ("1", "true", "on"):
            return True
        if raw is False or text in ("0", "false", "off"):
            return False
        raise StateError("errors.toggle", control=self.name, value=_show(raw))

    def samples(self, rng: random.Random) -> bool:
        return rng.random() < 0.5


# What a typed number may carry after it, per unit, and what that suffix multiplies it by.
# Bytes: K, M, G, T are powers of 1024, as nccl-tests reads `-b 8G` and prints sizes;
# KiB… say the same; kB, MB, GB, TB are powers of 1000, as this book writes sizes.
# Time: a plain number is µs, nccl-tests' `time` column.
_SUFFIXES: dict[str, dict[str, int | Decimal]] = {
    "bytes": {"": 1, "b": 1,
              **{p: 1024 ** (i + 1) for i, p in enumerate("kmgt")},
              **{f"{p}ib": 1024 ** (i + 1) for i, p in enumerate("kmgt")},
              **{f"{p}b": 1000 ** (i + 1) for i, p in enumerate("kmgt")}},
    "us": {"": 1, "us": 1, "µs": 1, "μs": 1, "ns": Decimal("0.001"), "ms": 1000, "s": 1000000},
    "count": {"": 1},
}
_TYPED_NUMBER = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]{1,3}))?\s*(\S*)")
# How a value of each unit reads beside its field (an output kind) and its factor to SI.
_DISPLAY = {"bytes": ("bytes", 1.0), "us": ("seconds", 1e-6), "count": ("integer", 1.0)}
_ERROR = {"bytes": "errors.bytes", "us": "errors.microseconds", "count": "errors.number"}
_INPUTMODE = {"bytes": "text", "us": "decimal", "count": "numeric"}


@dataclass(frozen=True)
class Number:
    """A number the reader types into a text field, in `unit`:

    * `bytes`: `123456`, `4K`, `512M`, `8G` (K, M, G, T = powers of 1024, as nccl-tests
      prints sizes), `1e9`, `25MB` (powers of 1000); a whole number of bytes.
    * `us`: microseconds, nccl-tests' `time` column: `47535`, `12.5`, or with a unit,
      `47.5 ms`, `0.05 s`.
    * `count`: a whole number (ranks).

    The value is held in the unit (bytes, µs, a count). `aliases` maps older control
    names to the factor that turns their plain numbers into this unit, so a link that
    still says `time_s=1e-2` means 10000 µs. Malformed text and values outside
    [`lo`, `hi`] raise `StateError` like `Range`; `text` is the canonical URL spelling.
    """

    name: str
    unit: str
    lo: float
    hi: float
    default: float
    aliases: Mapping[str, float] = field(default_factory=dict)

    @property
    def integer(self) -> bool:
        return self.unit in ("bytes", "count")

    @property
    def display(self) -> str:
        """The output kind the value reads as beside the field (in SI units)."""
        return _DISPLAY[self.unit][0]

    @property
    def inputmode(self) -> str:
        return _INPUTMODE[self.unit]

    def to_si(self, value: float) -> float:
        """The value in SI units (bytes, seconds, a count) for display."""
        return value * _DISPLAY[self.unit][1]

    def parse(self, raw: Any) -> float | int:
        return self._check(self._read(raw), raw)

    def parse_alias(self, alias: str, raw: Any) -> float | int:
        """A value given under an older name: a plain number times that name's factor."""
        value = _number(self.name, raw)
        exact = Decimal(repr(value)) * Decimal(repr(self.aliases[alias]))
        return self._check(float(exact), raw)

    def _read(self, raw: Any) -> float:
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return _number(self.name, raw)
        text = raw.strip() if isinstance(raw, str) and len(raw) <= 40 else ""
        match = _TYPED_NUMBER.fullmatch(text)
        factor = _SUFFIXES[self.unit].get(match.group(3).lower() if match else "\0")
        if match is None or factor is None:
            raise StateError(_ERROR[self.unit], control=self.name, value=_show(raw))
        try:
            exact = Decimal(match.group(1) + (f"e{match.group(2)}" if match.group(2) else "")) * factor
            return float(exact)
        except (InvalidOperation, OverflowError):  # pragma: no cover - the pattern bounds the exponent
            raise StateError(_ERROR[self.unit], control=self.name, value=_show(raw)) from None

    def _check(self, value: float, raw: Any) -> float | int:
        if not math.isfinite(value):
            raise StateError("errors.number", control=self.name, value=_show(raw))
        if self.integer:
            if not value.is_integer():
                raise StateError("errors.integer", control=self.name, value=_show(raw))
        if not self.lo <= value <= self.hi:
            raise StateError("errors.range", control=self.name, value=_show(raw),
                             lo=plain_number(self.lo), hi=plain_number(self.hi))
        return int(value) if self.integer else value

    def text(self, value: float | int) -> str:
        """The shortest spelling that reads back as `value`: `8G`, `25M`, `1e9`, `47535`."""
        if self.unit != "bytes":
            return plain_number(int(value) if self.integer else float(value))
        whole = int(value)
        spellings = [str(whole)]
        for power, suffix in ((4, "T"), (3, "G"), (2, "M"), (1, "K")):
            if whole and whole % 1024 ** power == 0:
                spellings.append(f"{whole // 1024 ** power}{suffix}")
                break
        mantissa, exponent = whole, 0
        while mantissa and mantissa % 10 == 0:
            mantissa, exponent = mantissa // 10, exponent + 1
        if exponent >= 3:
            spellings.append(f"{mantissa}e{exponent}")
        return min(spellings, key=len)

    def samples(self, rng: random.Random) -> float | int:
        """Log-uniform over the range (sizes and times span decades); bytes are a power
        of two half the time, as nccl-tests steps them; times have two decimals, as it
        prints them."""
        lo = max(self.lo, 1e-9)
        value = math.exp(rng.uniform(math.log(lo), math.log(self.hi)))
        if self.unit == "bytes" and rng.random() < 0.5:
            value = 2.0 ** round(math.log2(value))
        value = round(value) if self.integer else round(value, 2)
        value = min(max(value, self.lo), self.hi)
        return int(value) if self.integer else float(value)


Control = Union[Range, Choice, Number, Toggle]


def _show(raw: Any) -> str:
    """A short, safe rendering of a bad value for an error message."""
    text = str(raw)
    return text if len(text) <= 40 else text[:39] + "…"


def _number(name: str, raw: Any) -> float:
    if isinstance(raw, bool):
        raise StateError("errors.number", control=name, value=_show(raw))
    if isinstance(raw, (int, float)):
        try:
            value = float(raw)
        except OverflowError:  # an int beyond float's range
            raise StateError("errors.number", control=name, value=_show(raw)) from None
    elif isinstance(raw, str) and 0 < len(raw.strip()) <= 40:
        try:
            value = float(raw.strip())
        except ValueError:
            raise StateError("errors.number", control=name, value=_show(raw)) from None
    else:
        raise StateError("errors.number", control=name, value=_show(raw))
    if not math.isfinite(value):
        raise StateError("errors.number", control=name, value=_show(raw))
    return value


def defaults(controls: tuple[Control, ...]) -> dict[str, Any]:
    return {c.name: c.default for c in controls}


def _names(controls: tuple[Control, ...]) -> tuple[dict[str, Number], set[str]]:
    """The older names a typed field still answers to (alias -> its control), and every
    key a state may carry."""
    aliases = {a: c for c in controls if isinstance(c, Number) for a in c.aliases}
    return aliases, {c.name for c in controls} | set(aliases)


def parse_state(controls: tuple[Control, ...], raw: Mapping[str, Any]) -> dict[str, Any]:
    """Validate `raw` (strings from a form or URL, or plain values) against `controls`.

    Missing controls take their default; an unknown key or a bad value raises
    `StateError` naming the control, so the reader sees what to fix.
    """
    aliases, known = _names(controls)
    for key in raw:
        if key not in known:
            raise StateError("errors.unknown", control=_show(key))
    state = {}
    for c in controls:
        older = [a for a, target in aliases.items() if target is c and a in raw]
        if c.name in raw:
            state[c.name] = c.parse(raw[c.name])
        elif older:
            state[c.name] = c.parse_alias(older[0], raw[older[0]])
        else:
            state[c.name] = c.default
    return state


def parse_link_state(controls: tuple[Control, ...], raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[StateError]]:
    """A state from a link (the URL fragment), keeping what is valid: every key that is
    unknown, malformed, out of range or between a slider's steps is left out (its control
    keeps its default) and reported, all of them, not only the first. A value between
    steps is refused rather than rounded: the slider could not hold it, and a figure for a
    value the controls cannot show would disagree with them at the next move."""
    aliases, known = _names(controls)
    problems = [StateError("errors.unknown", control=_show(key)) for key in raw if key not in known]
    kept: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            continue
        control = aliases.get(key) or next(c for c in controls if c.name == key)
        try:
            parsed = control.parse_alias(key, value) if key in aliases else control.parse(value)
            if isinstance(control, Range) and not on_step(control, parsed):
                raise StateError("errors.step", control=control.name, value=_show(value),
                                 step=plain_number(control.step), lo=plain_number(control.lo))
        except StateError as error:
            problems.append(error)
            continue
        kept[control.name] = parsed
    return {**defaults(controls), **kept}, problems


def on_step(control: Range, value: float) -> bool:
    """Whether a slider can hold `value`: lo + k·step for a whole k (to 1e-9 of a step,
    so that 0.01 + 14 × 0.01 counts as 0.15)."""
    k = (value - control.lo) / control.step
    return abs(k - round(k)) <= 1e-9 * max(1.0, abs(k))


def canonical(controls: tuple[Control, ...], state: Mapping[str, Any]) -> dict[str, str]:
    """The state as the strings a form would hold: `2000000000000`, `llama2-7b`, `1`."""
    out = {}
    for c in controls:
        value = state[c.name]
        if isinstance(c, Toggle):
            out[c.name] = "1" if value else "0"
        elif isinstance(c, Number):
            out[c.name] = c.text(value)
        else:
            out[c.name] = value if isinstance(c, Choice) else plain_number(value)
    return out


def edge_states(controls: tuple[Control, ...]) -> Iterator[dict[str, Any]]:
    """The defaults, then each control at both ends of its range (others at default)."""
    base = defaults(controls)
    yield dict(base)
    for c in controls:
        if isinstance(c, (Range, Number)):
            ends = [c.lo, c.hi]
        elif isinstance(c, Choice):
            ends = list(c.options)
        else:
            ends = [True, False]
        for value in ends:
            if value != base[c.name]:
                yield {**base, c.name: value}


def random_states(controls: tuple[Control, ...], count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` reproducible random states, every control drawn from its own domain."""
    rng = random.Random(seed)
    return [{c.name: c.samples(rng) for c in controls} for _ in range(count)]
