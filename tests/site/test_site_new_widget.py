"""A new widget is one module in `widgets/figures/` and its strings in each catalog,
nothing else: a copy of the book gets `demo.py` (tests/site/fixtures/) and a `demo:`
section in both catalogs, and then checks, builds, pre-renders it, computes its macro
and ships it in the wheel, with no registry, list or plugin touched."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from minibook import build, mini_book

HERE = Path(__file__).resolve().parent
STRINGS = {
    "id": 'demo:\n  controls:\n    gpus:\n      label: "GPU"\n  outputs:\n    doubled: "Dua kali lipat"\n'
          '  sentence: "{gpus} GPU, dua kali lipat: {doubled}."\n',
    "zh": 'demo:\n  controls:\n    gpus:\n      label: "GPU 数"\n  outputs:\n    doubled: "两倍"\n'
          '  sentence: "{gpus} 块 GPU，两倍是 {doubled}。"\n',
}
PAGES = {
    "id": "# Beranda\n\n```widget demo\ngpus: 3\n```\n\nDua kali empat adalah {{ demo.doubled gpus=4 }}.\n",
    "zh": "---\nsource_hash: \"000000000000\"\n---\n# 首页\n\n```widget demo\ngpus: 3\n```\n\n四的两倍是 {{ demo.doubled gpus=4 }}。\n",
}


def test_a_widget_is_one_module_and_its_strings(tmp_path: Path) -> None:
    config = mini_book(tmp_path, PAGES, with_code=True)
    shutil.copy2(HERE / "fixtures" / "demo.py", tmp_path / "widgets" / "figures" / "demo.py")
    for lang, text in STRINGS.items():
        with (tmp_path / "i18n" / f"{lang}.yml").open("a", encoding="utf-8") as catalog:
            catalog.write(text)
    def i18n(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "i18n", *args], cwd=tmp_path, capture_output=True, text=True,
                              env={"PYTHONPATH": str(tmp_path)})

    i18n("stamp", "--docs", "docs", "docs/zh/index.md")
    check = i18n("check", "--dir", "i18n", "--docs", "docs")
    assert "no problems" in check.stdout, check.stderr
    result = build(config, with_code=True)
    assert result.returncode == 0, result.stderr[-3000:]
    for lang, prefix, text in (("id", "", "Dua kali empat adalah 8."), ("zh", "zh/", "四的两倍是 8。")):
        page = (tmp_path / "site" / prefix / "index.html").read_text(encoding="utf-8")
        assert 'data-widget="demo"' in page and 'data-out="doubled" data-value="6"' in page
        assert text in page
    [wheel] = (tmp_path / "site" / "assets" / "wheels").glob("*/*.whl")
    assert "widgets/figures/demo.py" in zipfile.ZipFile(wheel).namelist()
