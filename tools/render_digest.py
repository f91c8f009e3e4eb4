"""Print a digest of what every widget renders, to show that a change of structure
changed no figure: run it before and after, and compare.

    python tools/render_digest.py [--states 20]

For each widget, in both languages: the pre-rendered widget at its defaults (controls
included) and the output region of `--states` reproducible random states (seed 13),
each hashed with SHA-256; one line per widget and a total.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from widgets import REGISTRY  # noqa: E402
from widgets.framework.core import render_output, render_widget  # noqa: E402
from widgets.build.native import locale  # noqa: E402
from widgets.framework.spec import canonical, random_states  # noqa: E402

LANGS = ("id", "zh")


def widget_digest(name: str, states: int) -> str:
    module = REGISTRY[name]
    digest = hashlib.sha256()
    for lang in LANGS:
        loc = locale(lang)
        digest.update(render_widget(name, {}, loc).encode())
        for state in random_states(module.CONTROLS, states, seed=13):
            out = render_output(name, canonical(module.CONTROLS, state), loc)
            digest.update(out.html.encode())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=20)
    args = parser.parse_args()
    total = hashlib.sha256()
    for name in sorted(REGISTRY):
        line = widget_digest(name, args.states)
        total.update(line.encode())
        print(f"{name:12} {line[:16]}")
    print(f"{'total':12} {total.hexdigest()[:16]}  ({len(REGISTRY)} widgets x {args.states} states x {len(LANGS)} languages)")


if __name__ == "__main__":
    main()
