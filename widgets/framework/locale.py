"""Localized strings and number formats for widget rendering.

A `Locale` wraps one language's nested string catalog (``i18n/<lang>.yml`` natively, the
same data as JSON in the browser) and formats numbers the way that language writes them:
Indonesian ``107,8 GB`` and ``1.024``, Chinese ``107.8 GB`` and ``1,024``.
Everything here is standard library only, because it also runs in Pyodide.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .escape import escape

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# Duration units in seconds; a year is the Julian year, 365.25 days (IAU convention).
SECONDS_PER = {"year": 365.25 * 86400, "day": 86400.0, "hour": 3600.0, "minute": 60.0, "second": 1.0}


# What a reader may type in a number field besides ASCII: full-width digits and marks
# (Chinese input methods), typographic minus signs, superscript exponents (×10⁹).
_TYPED = str.maketrans({
    **{0xFF10 + d: str(d) for d in range(10)},
    0xFF0C: ",", 0xFF0E: ".", 0xFF0B: "+", 0xFF0D: "-", 0x2212: "-", 0x2013: "-",
    0xFF45: "e", 0xFF25: "E", 0x00D7: "x", 0x00B7: "x", 0x22C5: "x", 0x2A2F: "x", 0xFF58: "x", 0xFF0A: "*",
})
_SUPERSCRIPT_DIGITS = str.maketrans("⁺⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "+-0123456789")
_SUPERSCRIPT_RUN = re.compile("[⁺⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
_SPACES = " \t\n\r\u00a0\u2009\u202f\u2007\u3000'\u2019_"  # spaces and digit-group marks
_GROUPED = r"[0-9]{1,3}(?:%s[0-9]{3})+"


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill(template: str, params: Mapping[str, Any]) -> str:
    """`template` with each `{name}` replaced by `params[name]` (KeyError if absent)."""
    return _PLACEHOLDER.sub(lambda match: str(params[match.group(1)]), template)


class NumberError(ValueError):
    """Text that is not a number a reader could mean (empty, letters, markup, NaN, ∞)."""


@dataclass(frozen=True)
class Reading:
    """One way to read typed text: its value, and the number written so that it reads
    only this way in the locale (80860 or 80,860 for an Indonesian 80.860)."""

    value: float
    text: str


def plain_number(value: float) -> str:
    """The canonical, locale-free text of a number, as used in URLs and data-value."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(float(value))


class Locale:
    """One language: its strings (`t`) and its number formats (`bytes`, `seconds`, ...)."""

    def __init__(self, lang: str, strings: Mapping[str, Any]) -> None:
        self.lang = lang
        self.strings = strings
        number = strings["number"]
        self.decimal: str = number["decimal"]
        self.group: str = number["group"]
        self.count_scales: list[tuple[float, str]] = [(float(s), str(n)) for s, n in number["count_scales"]]
        self._texts: dict[str, str] = {}

    # -- strings -----------------------------------------------------------------------
    def raw(self, key: str) -> Any:
        node: Any = self.strings
        for part in key.split("."):
            if not isinstance(node, dict) and not isinstance(node, Mapping) or part not in node:
                raise KeyError(f"i18n/{self.lang}.yml has no key {key!r}")
            node = node[part]
        return node

    def t(self, key: str, **params: str) -> str:
        """The string `key` with `{name}` placeholders filled in (values are used as given).

        Only `{name}` is a placeholder: unlike `str.format`, nothing in a translation can
        read an attribute (`{value.__class__}`) or apply a format spec; the catalog check
        refuses such strings, and this keeps them inert if one ever gets through."""
        text = self._texts.get(key)
        if text is None:  # looked up once per key: widgets ask for the same keys on every move
            text = self.raw(key)
            if not isinstance(text, str):
                raise KeyError(f"i18n/{self.lang}.yml: {key!r} is not a string")
            self._texts[key] = text
        return fill(text, params) if params else text

    def h(self, key: str, **params: str) -> str:
        """Like `t`, HTML-escaped; the template and every parameter are escaped."""
        template = self.t(key)
        escaped = {k: escape(str(v), quote=False) for k, v in params.items()}
        return fill(escape(template, quote=False), escaped) if params else escape(template, quote=False)

    # -- reading numbers ---------------------------------------------------------------
    def parse_number(self, text: str) -> float:
        """The number a reader typed, read the way this locale writes numbers.

        Indonesian writes ``0,47`` and ``1.024``, Chinese ``0.47`` and ``1,024``. Spaces
        (also thin and non-breaking) are ignored, a leading sign and an exponent are
        allowed (``1,5e9``, ``1.5E-3``, ``1,5 × 10^9``, ``1,5×10⁹``). A lone separator
        followed by exactly three digits is this locale's thousands separator when it
        is the locale's group mark (``1.024`` is 1024 in Indonesian, 1.024 in Chinese);
        otherwise a lone separator is the decimal mark, so an Indonesian who types
        ``0.47`` still means 0.47. With both marks, the last one is the decimal mark and
        the other must group by threes (``1.234,5`` and ``1,234.5`` are both 1234.5).
        Raises `NumberError` for anything else, and for NaN and infinities.
        `readings` says when the three-digit rule may not be what the reader meant.
        """
        match = self._match(text)
        power = match["e"] or match["p"]
        mantissa = self._mantissa(match["mantissa"], text, scientific=power is not None)
        exponent = int(power or 0)
        try:
            value = float(f"{match['sign']}{mantissa}e{exponent}")
        except (ValueError, OverflowError):
            raise NumberError(f"not a number: {text!r}") from None
        if not math.isfinite(value):
            raise NumberError(f"not a finite number: {text!r}")
        return value

    def readings(self, text: str) -> tuple[Reading, ...]:
        """Every number the reader may have meant by `text`: one, as `parse_number` reads
        it, or two when a lone group mark is followed by exactly three digits (`1.024` or
        `80.860` in Indonesian, `80,860` in Chinese): the thousands reading first, then
        the decimal one, which the other languages' readers (or a slip) may have meant.
        Raises `NumberError` as `parse_number` does."""
        value = self.parse_number(text)
        match = self._match(text)
        mantissa = match["mantissa"]
        whole, _, fraction = mantissa.partition(self.group)
        grouped = [c for c in mantissa if c in ".,"] == [self.group] and not (match["e"] or match["p"])
        if not grouped or self._mantissa(mantissa, text) != whole + fraction:  # not read as thousands
            return (Reading(value, text.strip()),)
        sign = "-" if match["sign"] == "-" else ""
        return (Reading(value, f"{sign}{whole}{fraction}"),
                Reading(float(f"{sign}{whole}.{fraction}"), f"{sign}{whole}{self.decimal}{fraction}"))

    def _match(self, text: str) -> re.Match[str]:
        """`text` without spaces, in ASCII marks, split into sign, mantissa and exponent."""
        if not isinstance(text, str) or len(text) > 80:
            raise NumberError(f"not a number: {text!r}")
        plain = _SUPERSCRIPT_RUN.sub(lambda m: "^" + m.group().translate(_SUPERSCRIPT_DIGITS), text)
        plain = plain.translate(_TYPED)
        for space in _SPACES:
            plain = plain.replace(space, "")
        match = re.fullmatch(
            r"(?P<sign>[+-]?)(?P<mantissa>[0-9.,]+)"
            r"(?:[eE](?P<e>[+-]?[0-9]{1,4})|[xX*]10(?:\^|\*\*)(?P<p>[+-]?[0-9]{1,4}))?",
            plain,
        )
        if not match:
            raise NumberError(f"not a number: {text!r}")
        return match

    def _mantissa(self, text: str, original: str, scientific: bool = False) -> str:
        """``digits[.digits]`` from digits with this locale's (or the other) marks; before
        an exponent a lone mark is always the decimal one (``1.500e9`` is 1.5e9)."""
        if not re.search(r"[0-9]", text):
            raise NumberError(f"not a number: {original!r}")
        marks = [c for c in text if c in ".,"]
        if not marks:
            return text
        if len(set(marks)) == 2:  # both: the last mark is the decimal one
            decimal = marks[-1]
            group = "," if decimal == "." else "."
            whole, _, fraction = text.rpartition(decimal)
            if group in fraction or not re.fullmatch(_GROUPED % re.escape(group), whole):
                raise NumberError(f"misplaced separators: {original!r}")
            return f"{whole.replace(group, '')}.{fraction}"
        mark = marks[0]
        if len(marks) > 1:  # the same mark twice or more: only thousands groups
            if not re.fullmatch(_GROUPED % re.escape(mark), text):
                raise NumberError(f"misplaced separators: {original!r}")
            return text.replace(mark, "")
        whole, _, fraction = text.partition(mark)
        if mark == self.group and not scientific and len(fraction) == 3 and 1 <= len(whole) <= 3 and whole != "0":
            return whole + fraction  # 1.024 in Indonesian, 1,024 in Chinese
        return f"{whole or '0'}.{fraction or '0'}"

    # -- numbers -----------------------------------------------------------------------
    def fixed(self, value: float, decimals: int) -> str:
        """`value` with `decimals` decimals, grouped by thousands, in this locale's marks."""
        text = f"{value:,.{decimals}f}"
        return text.replace(",", "\0").replace(".", self.decimal).replace("\0", self.group)

    def sig(self, value: float) -> str:
        """About three significant digits, trailing zeros dropped: 107,8 / 80 / 6,09 / 0,472."""
        magnitude = abs(value)
        if magnitude >= 10:
            return self._trim(self.fixed(value, 1))
        if magnitude >= 1:
            return self._trim(self.fixed(value, 2))
        if magnitude == 0:
            return "0"
        decimals = min(12, 2 - math.floor(math.log10(magnitude)))
        return self._trim(self.fixed(value, decimals))

    def integer(self, value: float) -> str:
        return self.fixed(round(value), 0)

    def number(self, value: float) -> str:
        """A plain number with at most two decimals, trailing zeros dropped: 16,5 / 21."""
        return self._trim(self.fixed(value, 2))

    def bytes(self, value: float) -> str:
        """Decimal SI bytes (1 GB = 10⁹ B), as NVIDIA and the ZeRO paper count them."""
        for scale, prefix in SI_PREFIXES:
            if abs(value) >= scale:
                return f"{self.sig(value / scale)} {prefix}B"
        return f"{self.sig(value)} B"

    def rate(self, value: float, unit: str) -> str:
        """An SI-prefixed rate such as 150 TFLOP/s or 450 GB/s."""
        for scale, prefix in SI_PREFIXES:
            if abs(value) >= scale:
                return f"{self._trim(self.sig(value / scale))} {prefix}{unit}"
        return f"{self._trim(self.sig(value))} {unit}"

    def scientific(self, value: float, unit: str = "") -> str:
        """Two significant digits times a power of ten: 8,1 × 10²² FLOP."""
        if value == 0:
            return f"0 {unit}".strip()
        exponent = math.floor(math.log10(abs(value)))
        mantissa = value / 10**exponent
        if round(abs(mantissa), 1) >= 10:
            exponent += 1
            mantissa = value / 10**exponent
        if -3 <= exponent <= 3:
            return f"{self.sig(value)} {unit}".strip()
        text = f"{self.fixed(mantissa, 1)} × 10{str(exponent).translate(SUPERSCRIPT)}"
        return f"{text} {unit}".strip()

    def exact(self, value: float, *, scientific: bool = False) -> str:
        """Up to eight significant digits, trailing zeros dropped, so that a rounding shows
        (0,099975586 rather than 0,1) and a format's limit reads exactly (65.504).
        Plain notation from 10⁻³ up to 10⁷, otherwise (or always, if `scientific`, for a
        table column that must read one way) a power of ten: 5,9604645 × 10⁻⁸."""
        if value == 0:
            return "0"
        mantissa, _, power = f"{value:.7e}".partition("e")
        exponent = int(power)
        if not scientific and -3 <= exponent < 7:
            digits = max(0, 7 - exponent)
            return self._trim(self.fixed(float(f"{value:.7e}"), digits))
        return f"{self._trim(self.fixed(float(mantissa), 7))} × 10{str(exponent).translate(SUPERSCRIPT)}"

    def seconds(self, value: float) -> str:
        """A duration in the largest unit that keeps the number at least 1: 17,1 tahun."""
        for unit in ("year", "day", "hour", "minute"):
            if abs(value) >= SECONDS_PER[unit]:
                return self.t(f"units.{unit}", value=self.sig(value / SECONDS_PER[unit]))
        if abs(value) >= 1 or value == 0:
            return self.t("units.second", value=self.sig(value))
        if abs(value) >= 1e-3:
            return self.t("units.millisecond", value=self.sig(value * 1e3))
        if abs(value) >= 1e-6:
            return self.t("units.microsecond", value=self.sig(value * 1e6))
        return self.t("units.nanosecond", value=self.sig(value * 1e9))

    def duration_tick(self, value: float) -> str:
        """A whole-number duration for an axis tick: 1 hari, 10 tahun."""
        for unit in ("year", "day", "hour", "minute", "second"):
            if abs(value) >= SECONDS_PER[unit] * 0.999:
                return self.t(f"units.{unit}", value=self.integer(value / SECONDS_PER[unit]))
        return self.t("units.second", value=self.sig(value))

    def count(self, value: float) -> str:
        """A count with the locale's word scale, by one rule in every language.

        Below the smallest scale (Indonesian juta, 10⁶; Chinese 万, 10⁴) a count is exact
        and reads as `integer` writes it: 524.288, 8,192. From there on it has three
        significant digits, trailing zeros dropped, whatever its scale: 1,01 triliun /
        6,74 miliar / 50,6 juta / 202 juta, and 4.53 亿 / 67.4 亿 / 419 万 / 5060 万. The
        scaled number is never grouped: it has at most four integer digits (only 万 goes
        past 999), and four digits are not grouped (5060 万, as Chinese writes it, not
        5,060 万). A count that rounds up to the next scale takes it: 999,6 juta is
        1 miliar, 9996 万 is 1 亿.
        """
        smallest = self.count_scales[-1][0] if self.count_scales else math.inf
        if abs(round(value)) < smallest:
            return self.integer(value)
        rounded = float(f"{value:.3g}")
        for scale, word in self.count_scales:
            if abs(rounded) >= scale:
                return f"{self._significant3(rounded / scale)} {word}"
        return self.integer(value)  # unreachable: `rounded` is at least `smallest`

    def _significant3(self, value: float) -> str:
        """A number from 1 to 9999 already rounded to three significant digits, ungrouped:
        6,74 / 67,4 / 202 / 5060."""
        decimals = max(0, 2 - math.floor(math.log10(abs(value))))
        return self._trim(f"{value:.{decimals}f}".replace(".", self.decimal))

    def ratio(self, value: float) -> str:
        """About three significant digits: 1,35× / 1,5× / 0,0534×."""
        return self.t("units.ratio", value=self.sig(value))

    def percent(self, fraction: float) -> str:
        """A share with one decimal, 42,9%, that never rounds to a false 0 or 100: zero
        reads 0%, a nonzero share under 0,05% reads < 0,1% (> -0,1% below zero), one
        short of 100% that would round to it reads > 99,9%. The sign is joined to the
        number by a no-break space, so a line never ends in a bare < or >."""
        share = fraction * 100
        if share == 0:
            return self.t("units.percent", value="0")
        shown = f"{share:.1f}"  # what one decimal would print, to catch exactly its false 0 and 100
        if shown in ("0.0", "-0.0"):
            return self._bound("<" if share > 0 else ">", 0.1 if share > 0 else -0.1)
        if shown == "100.0" and share < 100:
            return self._bound(">", 99.9)
        return self.t("units.percent", value=self.fixed(share, 1))

    def _bound(self, sign: str, share: float) -> str:
        return f"{sign}\u00a0{self.t('units.percent', value=self.fixed(share, 1))}"

    def _trim(self, text: str) -> str:
        """Drop trailing zeros after the decimal mark: 2,00 → 2; 6,50 → 6,5."""
        if self.decimal in text:
            text = text.rstrip("0").rstrip(self.decimal)
        return text

    def format(self, kind: str, value: float) -> str:
        """Format an output of the given kind (see `widgets.framework.spec.OUTPUT_KINDS`)."""
        if kind == "bytes":
            return self.bytes(value)
        if kind == "seconds":
            return self.seconds(value)
        if kind == "flops":
            return self.scientific(value, "FLOP")
        if kind == "flops_per_s":
            return self.rate(value, "FLOP/s")
        if kind == "bytes_per_s":
            return self.rate(value, "B/s")
        if kind == "count":
            return self.count(value)
        if kind == "integer":
            return self.integer(value)
        if kind == "number":
            return self.number(value)
        if kind == "scientific":  # a small tolerance such as 1,0 × 10⁻⁵
            return self.scientific(value)
        if kind == "exact":  # a stored value whose rounding must show: 0,099975586
            return self.exact(value)
        if kind == "exact_scientific":  # the same, always × 10ⁿ: one notation per column
            return self.exact(value, scientific=True)
        if kind == "ratio":
            return self.ratio(value)
        if kind == "fraction":
            return self.percent(value)
        if kind == "yesno":
            return self.t("units.yes") if value else self.t("units.no")
        raise ValueError(f"unknown output kind {kind!r}")
