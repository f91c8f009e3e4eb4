"""widgets.framework.escape.escape is html.escape (kept out of the worker: `import html` imports
html.entities, ~26 ms of the first widget's start in Pyodide)."""

from __future__ import annotations

import html
import subprocess
import sys

import pytest

from widgets import NAMES
from widgets.framework.escape import escape

SAMPLES = ["", "plain", "a & b", "<script>alert('x')</script>", '"quoted" & \'single\'', "&amp; already",
           "1 < 2 > 0", "中文 <b>粗</b>", "\u00a0nbsp & émoji 🎉", "&&<<>>\"\"''"]


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("quote", [True, False])
def test_escape_is_html_escape(text: str, quote: bool) -> None:
    assert escape(text, quote) == html.escape(text, quote)


def test_the_worker_modules_do_not_import_the_html_module() -> None:
    modules = ", ".join(f"widgets.figures.{name}" for name in NAMES)
    code = f"import sys, widgets.browser, widgets.framework.exercise, {modules}; print(sorted(m for m in sys.modules if m == 'html' or m.startswith('html.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
