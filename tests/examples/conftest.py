"""The labs run early: each test module here declares its launches in `LAB_RUNS`
((script, args, world or None for one process)); once pytest has collected the session,
the launches of the collected modules start on a background thread at a lower priority
(tests/examples/labrun.py, `start_early`), and these modules run last, before only the
benchmark's quick run. Their fixtures then collect the finished runs instead of launching
them while the test session waits."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

from labrun import RETRIED, start_early

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    ours = [item for item in items if Path(str(item.fspath)).parent == HERE]
    if not ours:
        return
    # Ours last (their runs have had time), and only then the benchmark's quick run, which
    # times the browser and should not share the cores with the labs.
    bench = [item for item in items if Path(str(item.fspath)).parent.name == "bench"]
    items[:] = [item for item in items if item not in ours and item not in bench] + ours + bench
    runs, seen = [], set()
    for item in ours:
        module = item.module
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        runs += getattr(module, "LAB_RUNS", [])
    if runs and not config.option.collectonly:
        folder = Path(tempfile.mkdtemp(prefix="labs-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # after the pool's own exit join
        start_early(runs, folder)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say which lab had to be run twice (a worker killed by a signal, not a failed check)."""
    for line in RETRIED:
        terminalreporter.write_line(f"lab rerun: {line}", yellow=True)
