"""Run an example or lab the way a reader does, and read its report.

`torchrun(script, *args, world=4)` launches `python -m torch.distributed.run
--nproc_per_node=world examples/<script>` on the CPU (gloo on 127.0.0.1, one OpenMP
thread per process) and fails the test with the script's output when it exits non-zero
or hangs; `python_run(script, *args)` runs a one-process lab. `lab_report` reads the
JSON a lab writes with `--json`, and `checks_of` indexes its checks by name.

The tests recompute every expected figure from calc: a lab never imports calc (a
reader copies one file), so the test is what ties the lab to the book's formulas.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # A torch wheel without numpy warns once at import ("Failed to initialize NumPy:
    # No module named 'numpy'"); the examples do not need numpy, so that warning is
    # the one ignored here (the project's pytest turns every warning into an error).
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    import torch  # noqa: F401  (`make test` installs it: a missing torch fails, never skips)

import torch.distributed as dist  # noqa: E402

assert dist.is_available() and dist.is_gloo_available(), "this torch build has no torch.distributed with gloo"

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WORLD = 4
TIMEOUT_S = 240


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    """CPU and gloo even on a machine with GPUs; deprecated torch APIs (FutureWarning)
    are errors in the children, so the examples stay on current APIs."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "PYTHONWARNINGS": "error::FutureWarning",
    }
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"  # gloo on 127.0.0.1, not the host's address
    return env


def _execute(cmd: list[str]) -> tuple[int | None, str, str]:
    """Run `cmd` in a session of its own (a hung run is killed with all its workers):
    (exit code, or None after TIMEOUT_S; stdout; stderr)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), text=True, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err
    return proc.returncode, out, err


def _checked(cmd: list[str], label: str, code: int | None, out: str, err: str) -> subprocess.CompletedProcess[str]:
    if code is None:
        pytest.fail(f"{label} did not finish in {TIMEOUT_S} s\n{out[-3000:]}\n{err[-3000:]}")
    assert code == 0, f"{' '.join(cmd)} exited {code}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-6000:]}"
    return subprocess.CompletedProcess(cmd, code, out, err)


def _command(script: str, args: tuple[str, ...], world: int | None) -> list[str]:
    """torchrun with `world` processes, or (world None) one `python` process."""
    if world is None:
        return [sys.executable, str(EXAMPLES / script), *args]
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={world}",
            "--master_addr=127.0.0.1", f"--master_port={free_port()}", str(EXAMPLES / script), *args]


# Runs started early, in the background (see conftest.py): (script, args without --json,
# world) -> the run, with the --json path it wrote to.
_EARLY: dict[tuple[str, tuple[str, ...], int | None], Future] = {}


def _without_json(args: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    if "--json" not in args:
        return args, None
    i = args.index("--json")
    return args[:i] + args[i + 2:], args[i + 1]


def start_early(runs: list[tuple[str, tuple[str, ...], int | None]], folder: Path) -> None:
    """Start these runs now, one after another on a background thread, at a lower CPU
    priority than the tests running meanwhile (`nice`): most of `make test` is browser
    tests that leave a core idle, so the labs finish before their tests ask for them.
    Each writes its --json report into `folder`."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="labs")
    for n, (script, args, world) in enumerate(runs):
        report = folder / f"{n}-{Path(script).stem}.json"
        cmd = ["nice", "-n", "10", *_command(script, (*args, "--json", str(report)), world)]
        _EARLY[(script, tuple(args), world)] = pool.submit(lambda c=cmd, r=report: (c, r, _execute(c)))
    pool.shutdown(wait=False)


# A worker that dies by a signal (torchrun's "exitcode: -6") has not failed a check: a
# failed check exits with 1 and a report. PyTorch's gloo and FSDP threads can abort a
# worker at teardown on a loaded machine ("terminate called without an active exception",
# pytorch/pytorch#90549); such a run is repeated once, and the first crash is reported as
# a line of the test session's summary (tests/examples/conftest.py) so it stays visible.
_CRASHED = re.compile(r"exitcode\s*:\s*-(6|7|11)\b")  # SIGABRT, SIGBUS, SIGSEGV
RETRIED: list[str] = []


def _crashed(result: tuple[int | None, str, str]) -> bool:
    code, _, err = result
    return code not in (0, None) and bool(_CRASHED.search(err))


def _retried(cmd: list[str], script: str, result: tuple[int | None, str, str]) -> tuple[int | None, str, str]:
    if not _crashed(result):
        return result
    RETRIED.append(f"{script}: a worker died by a signal, so it ran once more; the crash's stderr ended with:\n"
                   f"{result[2][-1200:]}")
    return _execute(cmd)


def _launch(script: str, args: tuple[str, ...], world: int | None) -> subprocess.CompletedProcess[str]:
    rest, wanted = _without_json(args)
    early = _EARLY.pop((script, rest, world), None)
    if early is None:
        cmd = _command(script, args, world)
        return _checked(cmd, script, *_retried(cmd, script, _execute(cmd)))
    cmd, report, result = early.result()
    result = _retried(cmd, script, result)
    if wanted is not None:  # the lab's files (a collectives run writes one per rank) where the test wants them
        for made in report.parent.glob(report.name + "*"):
            shutil.copy(made, Path(wanted + made.name[len(report.name):]))
    return _checked(cmd, script, *result)


def torchrun(script: str, *args: str, world: int = WORLD) -> subprocess.CompletedProcess[str]:
    """`torchrun --nproc_per_node=world examples/<script> <args>` on the CPU (or the run
    started early with the same arguments)."""
    return _launch(script, args, world)


def python_run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python examples/<script> <args>`: a one-process lab."""
    return _launch(script, args, None)


def lab_report(path: Path, lab: str, world: int) -> dict:
    """The lab's JSON report, after checking its envelope."""
    report = json.loads(path.read_text(encoding="utf-8"))
    assert report["lab"] == lab and report["world_size"] == world, report
    assert report["checks"] and all({"name", "measured", "expected", "ok"} <= set(c) for c in report["checks"])
    return report


def checks_of(report: dict) -> dict[str, dict]:
    names = [check["name"] for check in report["checks"]]
    assert len(names) == len(set(names)), f"two checks share a name: {names}"
    return {check["name"]: check for check in report["checks"]}


DOCS = ROOT / "docs"
_QUOTED = re.compile(r"^[ \t]*(?P<status>ok|FAIL)[ \t]+(?P<rest>\S.*?)[ \t]*$")
_CHECK = re.compile(r"^(?P<name>.+?): (?P<measured>\S+) \((?P<expected>expected .*)\)$")
_INTEGER = re.compile(r"^-?\d+$")


def quoted_report_lines(page: str) -> list[tuple[str, str, str]]:
    """(file, status, rest) for each `ok …`/`FAIL …` line a lab page quotes in a ```text
    block, in every language: the report a reader is shown as the lab's output."""
    found = []
    for path in sorted(DOCS.glob(f"*/{page}.md")):
        inside = False
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.match(r"^[ \t]*```", line):
                inside = line.strip() == "```text"
                continue
            match = _QUOTED.match(line) if inside else None
            if match:
                found.append((str(path.relative_to(ROOT)), match["status"], match["rest"]))
    return found


def assert_page_quotes_the_report(page: str, stdout: str) -> None:
    """Every report line the page quotes is what the lab prints now: the same check with
    the same status and expected value, and the same measured value where it is an
    integer (a float such as a largest difference varies with the CPU, its line need only
    pass); a line that is not a check (an order of passes) is printed verbatim."""
    printed: dict[str, tuple[str, str]] = {}
    for line in stdout.splitlines():
        match = _QUOTED.match(line)
        if match:
            check = _CHECK.match(match["rest"])
            printed[check["name"] if check else match["rest"]] = (match["status"], match["rest"])
    quoted = quoted_report_lines(page)
    assert quoted, f"docs/*/{page}.md quotes no report line"
    for where, status, rest in quoted:
        check = _CHECK.match(rest)
        key = check["name"] if check else rest
        assert key in printed, f"{where} quotes a line the lab does not print: {status} {rest}"
        now_status, now_rest = printed[key]
        assert now_status == status, f"{where}: {key!r} is {now_status} now"
        if check:
            now = _CHECK.match(now_rest)
            assert now["expected"] == check["expected"], f"{where}: {key!r} expects {now['expected']} now"
            if _INTEGER.match(check["measured"]):
                assert now["measured"] == check["measured"], f"{where}: {key!r} measures {now['measured']} now"


def file_constants(path: Path) -> dict[str, object]:
    """Module-level UPPERCASE names bound to literals (`A, B = 1, 2` included)."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = (zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                 else [(target, value)])
        for name, expr in pairs:
            if isinstance(name, ast.Name) and name.id.isupper():
                try:
                    found[name.id] = ast.literal_eval(expr)
                except ValueError:
                    pass  # not a literal (a computed constant)
    return found
