"""calc and the widgets run on CPython 3.11 natively and 3.14 in Pyodide; both must give
the same bits. sum() of floats became compensated (Neumaier) in Python 3.12, so a float
sum must use math.fsum, which is correctly rounded on every version."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The one allowed sum(): collectives._sum adds integers only (exact on every version).
ALLOWED = {("calc/collectives.py", "sum(col) if all(isinstance(x, int) for x in col) else math.fsum(col)")}


def test_no_float_sum_in_code_that_runs_in_the_browser() -> None:
    found = set()
    for folder in ("calc", "widgets"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line in path.read_text(encoding="utf-8").splitlines():
                code = line.split("#", 1)[0]
                if re.search(r"(?<![\w.])sum\(", code):
                    found.add((path.relative_to(ROOT).as_posix(), code.strip()))
    assert found <= ALLOWED, f"use math.fsum for floats: {sorted(found - ALLOWED)}"
