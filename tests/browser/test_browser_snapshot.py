"""The next chapter of a visit boots Python from the memory snapshot the first chapter
stored in Cache Storage (worker.js), and shows exactly what native Python computes; a
snapshot the runtime cannot use is dropped and the page boots normally.

Both tests continue one visit: its first chapter, booted from scratch, stores the
snapshot once for the module (the fresh boot and the store are the slow part)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from live import (BOOT_MS, KEYS, SNAPSHOTS, VIEWPORT, Recorder, assert_matches_native, root, set_control,
                  stored_snapshots, wait_revision_above)
from test_browser_exercises import assert_native_message, pick, submit
from widgets.figures import zero
from widgets.framework.spec import canonical


def open_live(page: Any, url: str, name: str) -> str:
    """Open `url` (its fragment boots at once); returns how Python started."""
    page.goto(url)
    page.wait_for_selector(f'{root(name)}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, name, 0, BOOT_MS)
    return page.evaluate("document.documentElement.dataset.pyodideBoot")


def zero_state(**values: object) -> dict[str, str]:
    return canonical(zero.CONTROLS, {**{c.name: c.default for c in zero.CONTROLS}, **values})


@dataclass
class Visit:
    context: Any
    first: Any  # the first chapter's page, left open
    booted: str  # how it started Python
    key: str  # the snapshot it stored


@pytest.fixture(scope="module")
def visit(browser: Any, site_url: str) -> Iterator[Visit]:
    """A reader's visit: chapter 1 opened in a new context (nothing cached), and the
    snapshot it stores."""
    recorder = Recorder.of(site_url)
    context = browser.new_context(viewport=VIEWPORT)
    try:
        first = context.new_page()
        recorder.watch(first)
        booted = open_live(first, site_url + "why-distributed-training/#why.tokens=2000000000000", "why")
        (key,) = stored_snapshots(first)
        yield Visit(context, first, booted, key)
    finally:
        context.close()
    recorder.check()


@pytest.fixture()
def next_page(visit: Visit, recorder: Any) -> Iterator[Any]:
    """A new page of the visit (a chapter opened in another tab: same origin, same cache)."""
    page = visit.context.new_page()
    recorder.watch(page)
    yield page
    page.close()
    recorder.check()


def test_the_next_chapter_boots_from_the_snapshot_and_matches_native(visit: Visit, next_page: Any, site_url: str) -> None:
    page = next_page
    assert visit.booted == "fresh"
    assert "/assets/pyodide/" in visit.key and "wheel=" in visit.key
    # Another chapter, in the other language: the page's own strings, modules imported
    # after the snapshot (zero), a control change and an exercise check all work.
    assert open_live(page, site_url + "zh/zero/#zero.gpus=16&zero.stage=3", "zero") == "snapshot"
    assert_matches_native(page, "zero", zero_state(gpus=16, stage="3"), "zh")
    set_control(page, "zero", next(c for c in zero.CONTROLS if c.name == "stage"), "2")
    assert_matches_native(page, "zero", zero_state(gpus=16, stage="2"), "zh")
    form = pick(page)
    page.wait_for_selector(f'{form}[data-status="idle"]')
    submit(page, form, "1")
    assert_native_message(page, form, "1", "zh")
    assert page.evaluate(KEYS) == [visit.key]  # one snapshot per origin, not one per page


def test_an_unusable_snapshot_is_dropped_and_the_page_boots_normally(visit: Visit, next_page: Any, site_url: str) -> None:
    page = next_page
    key = visit.key
    visit.first.evaluate(f"async (k) => (await caches.open('{SNAPSHOTS}')).put(k, new Response(new Uint8Array(4096)))", key)
    assert open_live(page, site_url + "zero/#zero.gpus=16", "zero") == "fresh"
    assert_matches_native(page, "zero", zero_state(gpus=16), "id")
    # The broken entry was deleted and a good one stored again: the next page uses it.
    assert stored_snapshots(page) == [key]
    assert open_live(page, site_url + "tensor-parallelism/#tp.tp=2", "tp") == "snapshot"
