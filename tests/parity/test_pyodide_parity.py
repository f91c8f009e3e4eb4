"""Pyodide (CPython 3.14 in WebAssembly, run by Node) gives exactly what native Python
gives, for every registered widget, in both languages: the same wheel the site ships."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

from widgets import REGISTRY
from widgets.framework.core import handle
from widgets.framework.exercise import handle as handle_exercise
from widgets.build.native import locale
from widgets.framework.spec import canonical, edge_states, random_states

HERE = Path(__file__).resolve().parent
BAD_STATES = [{"tokens": "NaN"}, {"gpus": "<b>1</b>"}, {"model": "x" * 80}]


def requests() -> list[dict]:
    out = []
    for name, module in sorted(REGISTRY.items()):
        states = [*edge_states(module.CONTROLS), *random_states(module.CONTROLS, 12, seed=3)]
        for lang in ("id", "zh"):
            out += [{"widget": name, "state": canonical(module.CONTROLS, s), "lang": lang} for s in states]
            out += [{"widget": name, "state": s, "lang": lang} for s in BAD_STATES]
    return out


FORM = re.compile(r'<form class="w-exercise"[^>]*>')


def exercise_checks(site: Path) -> list[dict]:
    """Every exercise of the built book, answered right, wrong and with garbage."""
    out = []
    for lang, pages in (("id", site.glob("*/index.html")), ("zh", (site / "zh").glob("*/index.html"))):
        for page in sorted(pages):
            for form in FORM.findall(page.read_text(encoding="utf-8")):
                attrs = {k: unescape(v) for k, v in re.findall(r'data-(\w+)="([^"]*)"', form)}
                answer = float(attrs["answer"])
                right = f"{answer:.6g}".replace(".", "," if lang == "id" else ".")
                native = {"spec": attrs["spec"], "unit": attrs["unit"], "tolerance": attrs["tolerance"],
                          "typed": right}
                assert handle_exercise(native, locale(lang))["status"] == "correct", native
                for typed in (right, f"{answer * 1.5 + 1:.4g}", "abc", "<b>1</b>"):
                    out.append({"spec": attrs["spec"], "unit": attrs["unit"], "tolerance": attrs["tolerance"],
                                "typed": typed, "lang": lang})
    return out


def run_in_pyodide(site: Path | None, folder: Path) -> dict[str, Any]:
    """The Node run of every request (widgets and exercises) against the site's wheel and
    its trimmed standard library;
    the requests are kept in `folder`/requests.json for the test."""
    assert site is not None, "the parity run needs the built site"
    wheel = next((site / "assets" / "wheels").glob("*/*.whl"))
    (folder / "requests.json").write_text(json.dumps(requests() + exercise_checks(site)), encoding="utf-8")
    # The standard library the site ships: trimmed to what the widgets import.
    stdlib = next((site / "assets" / "pyodide").glob("*/python_stdlib-*.zip"))
    return {"args": ["node", str(HERE / "pyodide_run.mjs"), str(wheel), str(site / "assets" / "i18n"), str(stdlib)],
            "stdin": folder / "requests.json"}


EARLY = {"pyodide-parity": run_in_pyodide}  # started in the background once the site is built (tests/conftest.py)


def test_pyodide_replies_equal_native_replies(built_site: Path, early: Any) -> None:
    folder, result = early.result("pyodide-parity")
    assert result.returncode == 0, result.stderr[-3000:]
    sent = json.loads((folder / "requests.json").read_text(encoding="utf-8"))
    assert len([r for r in sent if "typed" in r]) >= 4 * 3 * 9 * 2  # >= 3 exercises in each of 9 chapters, 2 languages
    answer = json.loads(result.stdout)
    assert answer["python"].startswith("3.14")
    assert answer["trimmed"] is True  # the replies below come from the site's trimmed standard library
    assert len(answer["replies"]) == len(sent)
    for request, reply in zip(sent, answer["replies"]):
        loc = locale(request["lang"])
        expected = handle_exercise(request, loc) if "typed" in request else handle(request, loc)
        assert reply == expected, f"Pyodide differs from native for {request}"
