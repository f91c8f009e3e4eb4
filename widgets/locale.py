"""Localized strings and number formats for widget rendering.

A `Locale` wraps one language's nested string catalog (``i18n/<lang>.yml`` natively, the
same data as JSON in the browser) and formats numbers the way that language writes them:
Indonesian ``107,8 GB`` and ``1.024``, Chinese ``107.8 GB`` and ``1,024``.
Everything here is standard library only, because it also runs in Pyodide.
"""

from __future__ import annotations

import html
import math
from typing import Any, Mapping

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
SI_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
# Duration units in seconds; a year is the Julian year, 365.25 days (IAU convention).
SECONDS_PER = {"year": 365.25 * 86400, "day": 86400.0, "hour": 3600.0, "minute": 60.0, "second": 1.0}


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

    # -- strings -----------------------------------------------------------------------
    def raw(self, key: str) -> Any:
        node: Any = self.strings
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise KeyError(f"i18n/{self.lang}.yml has no key {key!r}")
            node = node[part]
        return node

    def t(self, key: str, **params: str) -> str:
        """The string `key` with `{name}` placeholders filled in (values are used as given)."""
        text = self.raw(key)
        if not isinstance(text, str):
            raise KeyError(f"i18n/{self.lang}.yml: {key!r} is not a string")
        return text.format_map(params) if params else text

    def h(self, key: str, **params: str) -> str:
        """Like `t`, HTML-escaped; the template and every parameter are escaped."""
        template = self.t(key)
        escaped = {k: html.escape(str(v), quote=False) for k, v in params.items()}
        return html.escape(template, quote=False).format_map(escaped) if params else html.escape(template, quote=False)

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
        """A large count with the locale's word scale: 6,74 miliar / 67.4 亿."""
        for scale, word in self.count_scales:
            if abs(value) >= scale:
                return f"{self._trim(self.sig(value / scale))} {word}"
        return self.integer(value)

    def ratio(self, value: float) -> str:
        """About three significant digits: 1,35× / 1,5× / 0,0534×."""
        return self.t("units.ratio", value=self.sig(value))

    def percent(self, fraction: float) -> str:
        return self.t("units.percent", value=self.fixed(fraction * 100, 1))

    def _trim(self, text: str) -> str:
        """Drop trailing zeros after the decimal mark: 2,00 → 2; 6,50 → 6,5."""
        if self.decimal in text:
            text = text.rstrip("0").rstrip(self.decimal)
        return text

    def format(self, kind: str, value: float) -> str:
        """Format an output of the given kind (see `widgets.spec.OUTPUT_KINDS`)."""
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
        if kind == "ratio":
            return self.ratio(value)
        if kind == "fraction":
            return self.percent(value)
        if kind == "yesno":
            return self.t("units.yes") if value else self.t("units.no")
        raise ValueError(f"unknown output kind {kind!r}")
