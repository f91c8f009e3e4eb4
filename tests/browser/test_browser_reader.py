"""A reader's place and the controls' honesty, in Chromium: a shared link opens at the
widget it names, a language switch comes back to the widget the reader was on, Back undoes
a preset, controls that do nothing are disabled and stay out of the URL, a slider ends
where the figure does, a screen reader hears the result's sentence (not the figure), and a
control moved while Python loads says so and is applied once Python is there.

Every wait is on the DOM contract (`data-status`, `data-revision`) or the URL, never a sleep.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from live import BOOT_MS, READ_STATE, assert_matches_native, root, set_control, wait_revision_above
from widgets import REGISTRY
from widgets.build.native import locale
from widgets.framework.core import render_output
from widgets.framework.spec import canonical, defaults

CONTROLS = {name: {c.name: c for c in module.CONTROLS} for name, module in REGISTRY.items()}


def open_live(page: Any, url: str, name: str) -> None:
    page.goto(url)
    page.wait_for_selector(f'{root(name)}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, name, 0, BOOT_MS)


def top_of(page: Any, name: str) -> float:
    return page.locator(root(name)).evaluate("el => el.getBoundingClientRect().top")


def hash_with(page: Any, text: str) -> str:
    """The URL fragment once the page has written one that holds `text` (the page writes
    the URL 150 ms after the last update, everything of one update at once)."""
    page.wait_for_function("(t) => decodeURIComponent(location.hash).includes(t)", arg=text, timeout=10_000)
    return unquote(page.evaluate("location.hash"))


def test_controls_that_do_nothing_are_disabled_and_left_out_of_the_url(warm_page: Any, site_url: str) -> None:
    page = warm_page
    pp = CONTROLS["pp"]
    open_live(page, site_url + "pipeline-parallelism/#pp.schedule=interleaved&pp.chunks=3", "pp")
    chunks = page.locator(f'{root("pp")} [name="chunks"]')
    assert chunks.is_enabled() and chunks.input_value() == "3"
    hash_with(page, "pp.chunks=3")
    # v belongs to interleaving only: under 1F1B it is disabled, and the URL forgets it.
    set_control(page, "pp", pp["schedule"], "1f1b")
    assert chunks.is_disabled()
    assert page.locator(f'{root("pp")} .w-control[data-inactive]').count() == 1
    assert "chunks" not in hash_with(page, "pp.schedule=1f1b")
    set_control(page, "pp", pp["schedule"], "interleaved")
    assert chunks.is_enabled()
    hash_with(page, "pp.chunks=3")


def test_the_ring_step_slider_ends_at_the_last_step_and_rests_outside_all_reduce(warm_page: Any, site_url: str) -> None:
    page = warm_page
    controls = CONTROLS["collectives"]
    open_live(page, site_url + "collective-communication/#collectives.ranks=8&collectives.step=14", "collectives")
    step = page.locator(f'{root("collectives")} [name="step"]')
    assert step.get_attribute("max") == "14" and step.input_value() == "14"
    set_control(page, "collectives", controls["ranks"], "4")
    # 2(n − 1) = 6 steps for 4 ranks: the slider ends there and holds the last step.
    assert step.evaluate("el => [el.max, el.value]") == ["6", "6"]
    assert_matches_native(page, "collectives", {"ranks": "4", "step": "6"}, "id")
    set_control(page, "collectives", controls["op"], "all_gather")
    assert step.is_disabled() and "collectives.step" not in hash_with(page, "collectives.op=all_gather")


def test_a_shared_link_opens_at_the_widget_it_names(page: Any, site_url: str) -> None:
    url = site_url + "collective-communication/"
    page.goto(url)
    far = top_of(page, "bandwidth")
    assert far > page.viewport_size["height"], "the widget is in view anyway: the test proves nothing"
    page = page.context.new_page()  # a new document, as a shared link opens one
    page.goto(url + "#bandwidth.ranks=16")
    top = top_of(page, "bandwidth")
    header = page.locator(".md-header").evaluate("el => el.getBoundingClientRect().bottom")
    assert header <= top <= header + 40, (header, top)


def test_a_language_switch_comes_back_to_the_widget_the_reader_was_on(warm_page: Any, site_url: str) -> None:
    page = warm_page
    open_live(page, site_url + "collective-communication/#hardware.size_bytes=1e8", "hardware")
    page.locator(root("bandwidth")).evaluate("el => window.scrollTo(0, scrollY + el.getBoundingClientRect().top - 200)")
    before = top_of(page, "bandwidth")
    assert abs(before - 200) < 5
    link = page.locator('a.md-select__link[hreflang="zh"]')
    link.dispatch_event("pointerdown")
    link.dispatch_event("click")
    page.wait_for_url("**/zh/collective-communication/**")
    page.wait_for_selector(f'{root("bandwidth")}[data-status]')
    assert abs(top_of(page, "bandwidth") - before) < 5


def test_back_after_a_preset_brings_the_figure_back(warm_page: Any, site_url: str) -> None:
    page = warm_page
    open_live(page, site_url + "3d-parallelism/#parallel3d.dp=4", "parallel3d")
    widget = root("parallel3d")
    start = page.evaluate(READ_STATE, widget)
    before = int(page.get_attribute(widget, "data-revision"))
    page.locator(f"{widget} a.w-preset").first.click()
    wait_revision_above(page, "parallel3d", before)
    preset = page.evaluate(READ_STATE, widget)
    assert preset != start
    before = int(page.get_attribute(widget, "data-revision"))
    page.go_back()
    wait_revision_above(page, "parallel3d", before)
    assert page.evaluate(READ_STATE, widget) == start
    assert_matches_native(page, "parallel3d", start, "id")
    before = int(page.get_attribute(widget, "data-revision"))
    page.go_forward()
    wait_revision_above(page, "parallel3d", before)
    assert page.evaluate(READ_STATE, widget) == preset


def test_a_screen_reader_hears_the_sentence_that_states_the_result(warm_page: Any, site_url: str) -> None:
    page = warm_page
    open_live(page, site_url + "zero/#zero.gpus=16", "zero")
    widget = root("zero")
    assert page.locator(f'{widget} [data-region="output"]').get_attribute("aria-live") is None
    assert page.locator(f"{widget} [aria-live]").count() == 1
    live = page.locator(f'{widget} [data-region="live"]')
    assert live.inner_text() == ""  # the first render only repeats the page
    set_control(page, "zero", CONTROLS["zero"]["gpus"], "64")
    sentence = page.locator(f'{widget} [data-region="output"] .w-sentence').first.inner_text()
    assert live.inner_text() == sentence
    words = len(sentence.split())
    figure_words = len(page.locator(f'{widget} [data-region="output"]').inner_text().split())
    assert 0 < words < 120 and words < figure_words / 2, (words, figure_words)


def test_a_control_moved_while_python_loads_says_so_and_is_applied(page: Any, site_url: str) -> None:
    """5 Mbit/s with 150 ms round trips (DevTools throttling, which also holds back the
    worker's downloads): seconds of loading in which the reader moves the slider."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": 150, "downloadThroughput": 5e6 / 8, "uploadThroughput": 5e6 / 8})
    page.goto(site_url + "zh/why-distributed-training/")
    widget = root("why")
    page.locator(widget).scroll_into_view_if_needed()
    page.wait_for_selector(f'{widget}[data-status="loading"]', timeout=30_000)
    page.locator(f'{widget} [name="tokens"]').evaluate(
        "el => { el.value = '600000000000'; el.dispatchEvent(new Event('input', { bubbles: true })); }")
    label = page.locator(f'{widget} output[data-label="tokens"]')
    assert page.get_attribute(widget, "data-status") == "loading", "Python was there already: the test proves nothing"
    pending = locale("zh").t("runtime.pending", percent="").strip()
    assert label.inner_text().startswith(pending) and page.get_attribute(widget, "data-pending") == "1"
    page.wait_for_selector(f'{widget}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, "why", 0, BOOT_MS)
    state = canonical(REGISTRY["why"].CONTROLS, {**defaults(REGISTRY["why"].CONTROLS), "tokens": 600e9})
    assert page.get_attribute(widget, "data-pending") is None
    assert label.inner_text() == render_output("why", state, locale("zh")).labels["tokens"]
    assert_matches_native(page, "why", state, "zh")
