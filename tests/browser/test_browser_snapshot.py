"""The next chapter of a visit boots Python from the memory snapshot the first chapter
stored in Cache Storage (worker.js), and shows exactly what native Python computes; a
snapshot the runtime cannot use is dropped and the page boots normally."""

from __future__ import annotations

import time
from typing import Any

from live import BOOT_MS, assert_matches_native, root, set_control, wait_revision_above
from test_browser_exercises import assert_native_message, pick, submit
from widgets.figures import zero
from widgets.framework.spec import canonical

SNAPSHOTS = "dtbook-pyodide-snapshots"
KEYS = f"async () => (await (await caches.open('{SNAPSHOTS}')).keys()).map(r => r.url)"
SIZE = f"async (k) => {{ const r = await (await caches.open('{SNAPSHOTS}')).match(k); return r ? (await r.arrayBuffer()).byteLength : 0; }}"


def open_live(page: Any, url: str, name: str) -> str:
    """Open `url` (its fragment boots at once); returns how Python started."""
    page.goto(url)
    page.wait_for_selector(f'{root(name)}[data-status="ready"]', timeout=BOOT_MS)
    wait_revision_above(page, name, 0, BOOT_MS)
    return page.evaluate("document.documentElement.dataset.pyodideBoot")


def stored_snapshots(page: Any, timeout_s: float = 30) -> list[str]:
    """The snapshot keys once the worker has stored a whole one (it waits 1.5 s after the
    boot; a snapshot is ~31 MB, anything under 1 MB is a broken one)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        keys = page.evaluate(KEYS)
        if keys and all(page.evaluate(SIZE, key) > 1_000_000 for key in keys):
            return keys
        page.wait_for_timeout(100)  # polling Cache Storage, which has no event to wait on
    raise AssertionError("no snapshot was stored")


def zero_state(**values: object) -> dict[str, str]:
    return canonical(zero.CONTROLS, {**{c.name: c.default for c in zero.CONTROLS}, **values})


def test_the_next_chapter_boots_from_the_snapshot_and_matches_native(page: Any, site_url: str) -> None:
    assert open_live(page, site_url + "why-distributed-training/#why.tokens=2000000000000", "why") == "fresh"
    (key,) = stored_snapshots(page)
    assert "/assets/pyodide/" in key and "wheel=" in key
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
    assert page.evaluate(KEYS) == [key]  # one snapshot per origin, not one per page


def test_an_unusable_snapshot_is_dropped_and_the_page_boots_normally(page: Any, site_url: str) -> None:
    open_live(page, site_url + "why-distributed-training/#why.tokens=2000000000000", "why")
    (key,) = stored_snapshots(page)
    page.evaluate(f"async (k) => (await caches.open('{SNAPSHOTS}')).put(k, new Response(new Uint8Array(4096)))", key)
    assert open_live(page, site_url + "zero/#zero.gpus=16", "zero") == "fresh"
    assert_matches_native(page, "zero", zero_state(gpus=16), "id")
    # The broken entry was deleted and a good one stored again: the next page uses it.
    assert stored_snapshots(page) == [key]
    assert open_live(page, site_url + "tensor-parallelism/#tp.tp=2", "tp") == "snapshot"
