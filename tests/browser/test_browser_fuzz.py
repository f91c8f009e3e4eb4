"""Tampered URLs against every live widget in Chromium (bad input must never break one).

A reader can paste anything after `#`: every widget on every page is fed URL states with
values out of range, NaN, infinities, huge numbers, wrong types, unknown keys, and markup
or script fragments. The live output must be exactly what native Python renders for the
same state (so a localized error or a clamped value, never raw markup), nothing may run
(no dialog, no injected element), and the widget must keep working afterwards.

One page load per chapter; the languages alternate between chapters so both are covered
without booting Pyodide twice per page (the native fuzz in tests/widgets covers every
control × value in both languages).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from live import BOOT_MS, READ_STATE, assert_matches_native, root, set_control, wait_revision_above
from widgets import REGISTRY
from widgets.framework.core import handle
from widgets.build.native import locale
from widgets.framework.spec import Choice, Number, Range, Toggle, canonical, edge_states

DOCS = Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^\s*```widget\s+([\w-]+)\s*$", re.M)


@pytest.fixture()
def page(warm_page: Any) -> Any:
    """A page of the session's shared context (its boots come from the memory snapshot)."""
    return warm_page


# What a tampered link can carry (strings: a URL holds nothing else).
BAD = [
    "NaN", "Infinity", "-inf", "1e400", "9" * 40, "-1", "", "0x10", "1,5",
    "<img src=x onerror=alert(1)>", "\"><script>alert(1)</script>", "javascript:alert(1)",
    "\u202e1", "%E0%A4%A",
]


def pages() -> list[tuple[str, str, tuple[str, ...]]]:
    """(language, URL path, widgets on it) for every page with a widget; languages alternate."""
    found = []
    for path in sorted((DOCS / "id").rglob("*.md")):
        names = tuple(n for n in FENCE.findall(path.read_text(encoding="utf-8")) if n in REGISTRY)
        if names:
            rel = path.relative_to(DOCS / "id").with_suffix("")
            found.append(("" if rel.name == "index" else f"{rel.as_posix()}/", names))
    return [("id" if i % 2 == 0 else "zh", url, names) for i, (url, names) in enumerate(found)]


def test_every_registered_widget_is_fuzzed() -> None:
    covered = {name for _, _, names in pages() for name in names}
    assert covered == set(REGISTRY)


def fragment(name: str, state: dict[str, str]) -> str:
    return "&".join(f"{quote(name)}.{quote(k, safe='')}={quote(v, safe='')}" for k, v in state.items())


def tampered_states(name: str) -> list[dict[str, str]]:
    """Every control gets a bad value (rotating through BAD), then all at once, then keys
    that do not exist."""
    controls = REGISTRY[name].CONTROLS
    states = []
    for i, control in enumerate(controls):
        bad = BAD[i % len(BAD)]
        states.append({control.name: bad})
        if isinstance(control, (Range, Number)):  # out of range on both sides
            states.append({control.name: repr(control.hi * 10 + 1)})
        if isinstance(control, Number):  # a unit it does not know, and a negative size
            states.append({control.name: "8 GHz"})
            states.append({control.name: "-4K"})
        elif isinstance(control, (Choice, Toggle)):
            states.append({control.name: BAD[(i + 7) % len(BAD)]})
    states.append({c.name: BAD[-5] for c in controls})
    states.append({"no_such_control": "1"})
    states.append({"<svg onload=alert(1)>": "1"})
    return states


INJECTED = """(sel) => document.querySelector(sel).querySelectorAll(
    'script, img, iframe, object, embed, [onerror], [onload], [onmouseover], a[href^="javascript"]').length"""


def apply_fragment(page: Any, name: str, text: str) -> None:
    before = int(page.get_attribute(root(name), "data-revision"))
    page.evaluate("(h) => { location.hash = h; }", text)
    wait_revision_above(page, name, before)


@pytest.mark.parametrize(("lang", "url", "names"), pages(), ids=lambda v: v if isinstance(v, str) else "+".join(v))
def test_tampered_urls_never_break_a_widget(page: Any, site_url: str, lang: str, url: str, names: tuple[str, ...]) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    prefix = "" if lang == "id" else "zh/"
    first = names[0]
    # The first bad state arrives with the page itself (the boot applies it).
    opening = tampered_states(first)[-3]
    page.goto(site_url + prefix + url + "#" + fragment(first, opening))
    for name in names:
        page.wait_for_selector(f'{root(name)}[data-status="ready"]', timeout=BOOT_MS)
    page.wait_for_function(
        "(sel) => Number(document.querySelector(sel).dataset.revision) > 0", arg=root(first), timeout=BOOT_MS)
    loc = locale(lang)
    checked = [(first, opening)]
    for name in names:
        for state in tampered_states(name):
            apply_fragment(page, name, fragment(name, state))
            checked.append((name, state))
            # A link's state: Python keeps what is valid, lists what it left out.
            expected = handle({"widget": name, "state": state, "link": True}, loc)
            shown = {region: page.inner_html(f'{root(name)} [data-region="{region}"]') for region in ("output", "problem")}
            native = {region: page.evaluate(
                "(h) => { const t = document.createElement('template'); t.innerHTML = h; return t.innerHTML; }", html)
                for region, html in (("output", expected["html"] if expected["ok"] else None),
                                     ("problem", expected["problems"] if expected["ok"] else expected["html"])) if html is not None}
            for region, html in native.items():
                assert shown[region] == html, f"{name} {lang}: live {region} differs from native for {state!r}"
            assert page.evaluate(INJECTED, root(name)) == 0, f"{name}: injected markup for {state!r}"
            assert page.get_attribute(root(name), "data-status") == "ready"
            assert loc.t("errors.link_heading" if expected["ok"] else "errors.heading") in shown["problem"]
        # Still alive: a reader's moves after all that give the native figure.
        controls = {c.name: c for c in REGISTRY[name].CONTROLS}
        now = page.evaluate(READ_STATE, root(name))
        wanted = next(w for w in (canonical(REGISTRY[name].CONTROLS, e) for e in edge_states(REGISTRY[name].CONTROLS))
                      if w != now)
        for control_name, value in wanted.items():
            set_control(page, name, controls[control_name], value)
        assert_matches_native(page, name, wanted, lang)
    assert dialogs == []
    assert len(checked) > 3 * len(names)

