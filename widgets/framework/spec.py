"""Controls declared once, and everything derived from them.

A widget module lists its controls as `Range`, `Choice` and `Toggle` values. From that one
table come: validation of an incoming state (`parse_state`), the canonical text of a state
for URLs (`canonical`), the HTML of the controls (`widgets.framework.html.controls_html`) and the
states the tests sample (`edge_states`, `random_states`).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Union

from .locale import plain_number

OUTPUT_KINDS = (
    "bytes", "seconds", "flops", "flops_per_s", "bytes_per_s",
    "count", "integer", "number", "scientific", "ratio", "fraction", "yesno",
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
        value = self.lo + rng.randint(0, steps) * self.step
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


Control = Union[Range, Choice, Toggle]


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


def parse_state(controls: tuple[Control, ...], raw: Mapping[str, Any]) -> dict[str, Any]:
    """Validate `raw` (strings from a form or URL, or plain values) against `controls`.

    Missing controls take their default; an unknown key or a bad value raises
    `StateError` naming the control, so the reader sees what to fix.
    """
    known = {c.name for c in controls}
    for key in raw:
        if key not in known:
            raise StateError("errors.unknown", control=_show(key))
    return {c.name: c.parse(raw[c.name]) if c.name in raw else c.default for c in controls}


def canonical(controls: tuple[Control, ...], state: Mapping[str, Any]) -> dict[str, str]:
    """The state as the strings a form would hold: `2000000000000`, `llama2-7b`, `1`."""
    out = {}
    for c in controls:
        value = state[c.name]
        out[c.name] = ("1" if value else "0") if isinstance(c, Toggle) else (
            value if isinstance(c, Choice) else plain_number(value))
    return out


def edge_states(controls: tuple[Control, ...]) -> Iterator[dict[str, Any]]:
    """The defaults, then each control at both ends of its range (others at default)."""
    base = defaults(controls)
    yield dict(base)
    for c in controls:
        if isinstance(c, Range):
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
