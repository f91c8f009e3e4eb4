"""``python -m i18n``: what a translator runs, checked as a translator runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


def run_i18n(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "i18n", *args],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        timeout=60,
    )


def write(directory: Path, **files: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for lang, text in files.items():
        (directory / f"{lang}.yml").write_text(text, encoding="utf-8")
    return directory


def test_check_passes_good_catalogs_and_says_so(tmp_path: Path, id_yml: str, zh_yml: str) -> None:
    directory = write(tmp_path / "i18n", id=id_yml, zh=zh_yml)

    result = run_i18n("check", "--dir", str(directory))

    assert (result.returncode, result.stdout, result.stderr) == (
        0,
        "i18n: 2 languages, 6 keys each, no problems\n",
        "",
    )


def test_check_fails_with_file_line_key_problem_on_stderr(tmp_path: Path, id_yml: str) -> None:
    zh = """\
meta:
  name: no
number:
  decimal: "."
  group: ","
  scales: [[1.0e+8, "亿"], [1.0e+4, "万"]]
why:
  tokens:
    label: "训练 token 数"
  sentence: "用 {tokens} 个 token 训练需要 {flops}。"
"""
    directory = write(tmp_path / "i18n", id=id_yml, zh=zh)

    result = run_i18n("check", "--dir", str(directory))

    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f'{directory}/zh.yml:2: meta.name: unquoted no is read as a yes/no value (False), not a string: quote it: name: "no"',
        f"{directory}/zh.yml:10: why.sentence: placeholders differ from id.yml: {{flops}}, {{tokens}} here, "
        "{flops}, {time_1}, {tokens} in id.yml (missing {time_1})",
        "i18n: 2 problems in 1 file",
    ]


def test_check_reports_broken_yaml_with_its_line(tmp_path: Path, id_yml: str) -> None:
    directory = write(tmp_path / "i18n", id=id_yml, zh='meta:\n  name: "中文"\n  gpus: {n} GPU\n')

    result = run_i18n("check", "--dir", str(directory))

    assert result.returncode == 1
    assert result.stderr.splitlines()[0].startswith(f"{directory}/zh.yml:3: meta.gpus: broken YAML: ")


def test_a_missing_reference_catalog_is_a_usage_error(tmp_path: Path, zh_yml: str) -> None:
    directory = write(tmp_path / "i18n", zh=zh_yml)

    result = run_i18n("check", "--dir", str(directory))

    assert (result.returncode, result.stderr) == (2, f"i18n: {directory}/id.yml: the reference catalog is missing\n")


def test_export_writes_json_for_every_language(tmp_path: Path, id_yml: str, zh_yml: str) -> None:
    directory = write(tmp_path / "i18n", id=id_yml, zh=zh_yml, ms=id_yml)
    out = tmp_path / "site" / "i18n"

    result = run_i18n("export", "--dir", str(directory), "--out", str(out))

    assert (result.returncode, result.stdout, result.stderr) == (0, f"i18n: wrote id.json, ms.json, zh.json to {out}\n", "")
    assert sorted(path.name for path in out.iterdir()) == ["id.json", "ms.json", "zh.json"]
    assert (out / "ms.json").read_bytes() == (out / "id.json").read_bytes()


def test_export_refuses_catalogs_with_problems(tmp_path: Path, id_yml: str) -> None:
    directory = write(tmp_path / "i18n", id=id_yml, zh='meta:\n  name: "中文"\n')
    out = tmp_path / "out"

    result = run_i18n("export", "--dir", str(directory), "--out", str(out))

    assert result.returncode == 1
    assert f"{directory}/zh.yml:1: number.decimal: missing key" in result.stderr
    assert not out.exists()


def test_the_projects_own_catalogs_have_no_problems() -> None:
    if not (PROJECT / "i18n" / "id.yml").is_file():
        pytest.skip("i18n/id.yml is not written yet")

    result = run_i18n("check")

    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("keys each, no problems\n")
