"""A reader on the keyboard sees where the focus is: every kind of widget control shows a
focus ring (the theme clears the outline of inputs), at least 3:1 against the widget's
background (WCAG 2.2, 1.4.11 non-text contrast), in the light and the dark scheme."""

from __future__ import annotations

import re
from typing import Any

import pytest

from live import BOOT_MS


def luminance(rgb: tuple[float, float, float]) -> float:
    """Relative luminance of an sRGB colour (WCAG 2.2 definition)."""
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def parse(css: str) -> tuple[float, float, float]:
    numbers = [float(x) for x in re.findall(r"[\d.]+", css)[:3]]
    assert len(numbers) == 3, css
    return numbers[0], numbers[1], numbers[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(parse(a)), luminance(parse(b))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


# One control of each kind: a slider, a select, a radio group and a checkbox (the
# activation chapter's widget has all four).
KINDS = ['input[type="range"]', "select", 'input[type="radio"]:checked', 'input[type="checkbox"]']


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_kind_of_control_shows_a_focus_ring_with_contrast(browser: Any, site_url: str, scheme: str) -> None:
    # A context of its own: Material keeps the scheme it first applied in localStorage, so
    # a shared context would show the light scheme whatever the system prefers.
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(site_url + "activation-memory/")
        assert page.get_attribute("body", "data-md-color-scheme") == {"light": "default", "dark": "slate"}[scheme]
        widget = page.locator('[data-widget="activations"]')
        widget.scroll_into_view_if_needed()
        page.wait_for_selector('[data-widget="activations"][data-status="ready"]', timeout=BOOT_MS)  # controls enabled
        for kind in KINDS:
            control = widget.locator(kind).first
            assert control.count() == 1, f"no {kind} in the activations widget"
            control.focus()
            page.keyboard.press("Shift+Tab")  # focus by keyboard, so :focus-visible applies
            page.keyboard.press("Tab")
            assert control.evaluate("el => el === document.activeElement"), kind
            style = control.evaluate("""el => { const s = getComputedStyle(el);
                return {style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor}; }""")
            background = widget.evaluate("el => getComputedStyle(el).backgroundColor")
            assert style["style"] not in ("none", "hidden") and style["width"] >= 2, (scheme, kind, style)
            ratio = contrast(style["color"], background)
            assert ratio >= 3, f"{scheme} {kind}: focus ring {style['color']} on {background} is {ratio:.2f}:1"
    finally:
        context.close()
