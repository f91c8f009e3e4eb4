"""Only the Python the book runs: Pyodide's standard library trimmed to what it imports.

Pyodide ships CPython's whole standard library as one zip (`python_stdlib.zip`, 2.5 MB on
the wire, already deflated): `email`, `unittest`, `xml`, `http`, `multiprocessing`, … that
no widget imports. The site ships instead the files that a real run loads, found by
tracing, not by a hand list that rots: `stdlib_trace.mjs` boots the npm Pyodide in Node
exactly as the worker does, renders every widget (defaults, each control at both ends,
random states) in every language, checks an exercise answer, takes a memory snapshot, and
lists every module loaded from the standard library. The zip keeps those files, byte for
byte and in Pyodide's order, stored so that the host's Brotli compresses across files;
a second run on the trimmed zip proves it is enough (a module it lacks fails the build,
named). Pyodide loads it through `loadPyodide({stdLibURL})`.

The result is cached on disk under a key of everything it depends on (the wheel, the
Pyodide files, the strings, the trace script), so a rebuild of unchanged sources skips
the two Node runs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

TRACE = Path(__file__).with_name("stdlib_trace.mjs")
CACHE = Path(tempfile.gettempdir()) / "dtbook-stdlib"
FULL = "python_stdlib.zip"


class StdlibError(RuntimeError):
    """The trace failed or the trimmed library is not enough; the message says why."""


def trace(pyodide_dir: Path, wheel: Path, strings_dir: Path, stdlib: Path | None = None) -> list[str]:
    """The standard-library files (paths inside the zip) that a full run of the widgets
    loads in Pyodide; with `stdlib`, the run uses that zip and fails if it lacks one."""
    node = shutil.which("node")
    if node is None:
        raise StdlibError("node not found: the build traces the widgets' imports in Pyodide under Node (install Node.js)")
    with tempfile.TemporaryDirectory(prefix="dtbook-trace-") as tmp:
        out = Path(tmp) / "trace.json"
        args = [node, str(TRACE), str(pyodide_dir), str(wheel), str(strings_dir), str(out)]
        if stdlib is not None:
            args.append(str(stdlib))
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            raise StdlibError(_reason(run.stderr, stdlib))
        result = json.loads(out.read_text(encoding="utf-8"))
    if result["problems"]:
        raise StdlibError("widgets failed in Pyodide: " + "; ".join(result["problems"][:5]))
    return result["files"]


def _reason(stderr: str, stdlib: Path | None) -> str:
    lines = [line.strip()[:300] for line in stderr.splitlines() if line.strip()]
    missing = next((line for line in reversed(lines) if "ModuleNotFoundError" in line), None)
    if missing and stdlib is not None:
        return (f"the trimmed standard library {stdlib.name} lacks a module the widgets import ({missing}); "
                "the trace should have found it: import it at module level, not inside a function that "
                "no widget state reaches")
    return "tracing the widgets in Pyodide failed: " + " | ".join(lines[-6:])


def trim(full: Path, files: list[str], out: Path) -> None:
    """A copy of the zip `full` with only `files` (and nothing else), entries in the
    original order with their original bytes and dates: reproducible. Entries are stored,
    not deflated: the host's Brotli then compresses the whole archive at once, which
    finds the redundancy between files that per-file deflate cannot (0.83 MB deflated,
    0.60 MB stored and Brotli'd)."""
    keep = set(files)
    with zipfile.ZipFile(full) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename in keep:
                dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_STORED)
    with zipfile.ZipFile(out) as check:
        absent = sorted(keep - set(check.namelist()))
    if absent:
        raise StdlibError(f"{full.name} has no {', '.join(absent[:5])}: the trace and the zip disagree")


def _key(pyodide_dir: Path, wheel: Path, strings_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in (pyodide_dir / FULL, pyodide_dir / "package.json", wheel, TRACE, Path(__file__),
                 *sorted(strings_dir.glob("*.json"))):
        digest.update(path.name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def trimmed_stdlib(pyodide_dir: Path, wheel: Path, strings_dir: Path) -> Path:
    """The trimmed standard library for this wheel, named by its own content hash
    (`python_stdlib-<hash>.zip`, so a host may cache it forever), traced and verified."""
    key = _key(pyodide_dir, wheel, strings_dir)
    folder = CACHE / key
    found = sorted(folder.glob("python_stdlib-*.zip")) if folder.is_dir() else []
    if found:
        return found[0]
    files = trace(pyodide_dir, wheel, strings_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dtbook-stdlib-", dir=folder) as tmp:
        candidate = Path(tmp) / FULL
        trim(pyodide_dir / FULL, files, candidate)
        trace(pyodide_dir, wheel, strings_dir, stdlib=candidate)  # enough for every widget
        name = f"python_stdlib-{hashlib.sha256(candidate.read_bytes()).hexdigest()[:16]}.zip"
        final = folder / name
        candidate.replace(final)
    return final
