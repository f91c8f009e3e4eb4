"""Whole-site checks in Chromium, over every page of every language (new pages are
picked up from the built site): offline and private, no console errors, no sideways
scrolling on a phone, complete without JavaScript, and no serious accessibility problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PHONE = 375  # px, the width of the phone the pages are checked on


def site_pages(site: Path) -> list[str]:
    """URL paths (relative to the site root) of every page, both languages."""
    pages = []
    for path in sorted(site.rglob("index.html")):
        rel = path.parent.relative_to(site).as_posix()
        if rel.startswith(("assets", "search", "bench-bare")):
            continue
        pages.append("" if rel == "." else rel + "/")
    return pages


@pytest.fixture(scope="module")
def pages(built_site: Path) -> list[str]:
    found = site_pages(built_site)
    assert len(found) >= 20, found
    return found


def test_without_javascript_every_widget_page_is_complete(browser: Any, site_url: str, pages: list[str]) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        seen = 0
        for path in pages:
            page.goto(site_url + path)
            for root in page.locator("[data-widget]").all():
                seen += 1
                assert root.get_attribute("data-status") == "static"
                values = root.locator("[data-out]")
                assert values.count() > 0, f"{path}: widget has no pre-rendered values"
                assert all((v.text_content() or "").strip() for v in values.all()), f"{path}: empty value"
        assert seen >= 2 * 6
    finally:
        context.close()


LIVE = ("() => Array.from(document.querySelectorAll('[data-widget]'))"
        ".every(w => w.dataset.status === 'ready' && Number(w.dataset.revision) > 0)")
# Serious and critical violations on the page, as "rule: first targets".
VIOLATIONS = """async () => {
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
        .map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
}"""


def axe_context(browser: Any, **options: Any) -> Any:
    """A context whose every page gets axe-core from npm (vendored, never a CDN) before its
    own scripts: an init script, so the page keeps its Content-Security-Policy (no bypass
    to inject it) and axe needs no request of its own."""
    context = browser.new_context(**options)
    context.add_init_script(path=str(AXE))
    return context


def test_axe_finds_no_serious_or_critical_problem_on_any_page_on_a_desktop(browser: Any, site_url: str,
                                                                           pages: list[str]) -> None:
    """Every page as a desktop reader first sees it, the figures pre-rendered."""
    context = axe_context(browser, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    found = []
    try:
        for path in pages:
            page.goto(site_url + path)
            found += [f"{path} {v}" for v in page.evaluate(VIOLATIONS)]
    finally:
        context.close()
    assert found == [], "\n".join(found)


def test_every_page_on_a_phone_is_private_error_free_accessible_and_never_scrolls_sideways(
        browser: Any, site_url: str, pages: list[str], recorder: Any) -> None:
    """Every page on a 375 px phone, its CSP in force: the page language, no request off the
    host, no console error, no sideways scrolling; and on every page with a widget, all its
    widgets live, no sideways scrolling still and no serious or critical axe problem (what
    only the phone adds to the desktop run: wide formulas, tables and code scroll sideways
    there, and the live figures)."""
    context = axe_context(browser, viewport={"width": PHONE, "height": 812}, is_mobile=True, has_touch=True)
    page = context.new_page()
    recorder.watch(page, label=True)
    # Against the phone's width, not innerWidth: a mobile layout viewport widens to fit
    # content that overflows, and would hide the overflow it measures.
    overflow = f"document.documentElement.scrollWidth - {PHONE}"
    problems, found, checked = [], [], 0
    try:
        for path in pages:
            page.goto(site_url + path, wait_until="load")
            lang = page.get_attribute("html", "lang")
            expected = "zh" if path.startswith("zh/") else "id"
            if lang != expected:
                problems.append(f"{path}: lang={lang}")
            if (excess := page.evaluate(overflow)) > 1:
                problems.append(f"{path}: scrolls sideways by {excess}px")
            if not page.locator("[data-widget]").count():
                continue  # a page without a widget: the desktop run checks it with axe
            checked += 1
            page.evaluate("document.querySelectorAll('[data-widget]').forEach(w => w.scrollIntoView())")
            page.wait_for_function(LIVE, timeout=90_000)
            page.evaluate("window.scrollTo(0, 0)")
            if (excess := page.evaluate(overflow)) > 1:
                problems.append(f"{path}: scrolls sideways by {excess}px with its widgets live")
            found += [f"{path} {v}" for v in page.evaluate(VIOLATIONS)]
    finally:
        context.close()
    assert problems == []
    assert checked >= 2 * 10, checked  # ten chapters with widgets per language
    assert found == [], "\n".join(found)
    assert recorder.outside() == [], recorder.outside()
    assert recorder.errors == [], recorder.errors


def test_the_404_page_is_accessible_and_fits_a_phone(browser: Any, built_site: Path) -> None:
    """The 404 page is a template that MkDocs links from the site root, so it is checked
    served at a root, as a host serves it for any missing URL."""
    from serve import start

    server, base = start(built_site, "/")
    context = axe_context(browser, viewport={"width": PHONE, "height": 812}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(base + "404.html")
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
        assert page.get_attribute(".md-search", "aria-label")
        assert page.evaluate(VIOLATIONS) == []
    finally:
        context.close()
        server.shutdown()
        server.server_close()
