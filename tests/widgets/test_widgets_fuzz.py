"""Bad input never breaks a widget: every registered widget, every control, fed values a
tampered URL or a broken form could carry, gives a localized error and no markup."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from widgets import REGISTRY
from widgets.framework.core import handle
from widgets.build.native import locale

BAD_VALUES = [
    "NaN", "nan", "inf", "-Infinity", "1e400", "-1e309", "", " ", "0x10", "1,5", "½",
    "9" * 60, "-1", "1e-320", "<script>alert(1)</script>", "\" onmouseover=\"alert(1)",
    "'><img src=x onerror=alert(1)>", "%3Cb%3E", "\u0000", "\u202e", None, True, False,
    [], {}, ["1"], {"a": 1}, 1e400, float("nan"), -(10**400),
]


class Markup(HTMLParser):
    """The tags and attribute names of an HTML fragment, as a browser would parse them."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)


def assert_no_injected_markup(html: str) -> None:
    parsed = Markup(html)
    assert parsed.tags <= {"div", "strong"}, parsed.tags
    assert not any(a.startswith("on") for a in parsed.attributes), parsed.attributes


@pytest.mark.parametrize("lang", ["id", "zh"])
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_bad_values_give_a_localized_error_and_no_markup(name: str, lang: str) -> None:
    loc = locale(lang)
    for control in REGISTRY[name].CONTROLS:
        for bad in BAD_VALUES:
            reply = handle({"widget": name, "state": {control.name: bad}}, loc)
            if reply["ok"]:
                # A value that happens to be valid (e.g. "-1" nowhere is) must round-trip.
                assert control.name in reply["state"]
                continue
            html = reply["html"]
            assert 'role="alert"' in html and loc.t("errors.heading") in html
            assert_no_injected_markup(html)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_unknown_keys_and_non_mapping_states_are_errors(name: str) -> None:
    loc = locale("id")
    for state in ({"nope": "1"}, {"<svg onload=alert(1)>": "1"}, "tokens=1", None, 42, ["a"]):
        reply = handle({"widget": name, "state": state}, loc)
        assert reply["ok"] is False
        assert_no_injected_markup(reply["html"])
