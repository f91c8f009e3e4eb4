"""Every lab's settings, as the book states them (widgets/labs/<lab>.py CONFIG), are the
lab file's own constants: the page's figures describe the file a reader runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from labrun import file_constants

from widgets.labs import LABS, figures

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_every_lab_module_has_its_file() -> None:
    assert "data_parallel" in LABS
    for lab in LABS:
        assert (EXAMPLES / f"{lab}.py").is_file(), lab


@pytest.mark.parametrize("lab", list(LABS))
def test_config_is_the_files_constants(lab: str) -> None:
    consts = file_constants(EXAMPLES / f"{lab}.py")
    config = LABS[lab].CONFIG
    shared = [key for key in config if key.upper() in consts]
    assert shared, f"{lab}: no CONFIG key is a constant of examples/{lab}.py"
    for key in shared:
        assert config[key] == consts[key.upper()], f"{lab}: CONFIG[{key!r}] = {config[key]!r}, the file says {consts[key.upper()]!r}"
    assert isinstance(config.get("world_size"), int) and config["world_size"] >= 1


@pytest.mark.parametrize("lab", list(LABS))
def test_figures_are_numbers_of_declared_kinds(lab: str) -> None:
    values = figures(lab)
    assert set(values) == set(LABS[lab].OUTPUTS)
    for key, value in values.items():
        assert isinstance(value, (int, float)) and value == value, (lab, key, value)


def test_a_bad_override_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no setting 'bucket'"):
        figures("data_parallel", {"bucket": "3"})
    with pytest.raises(ValueError, match="bucket_kb='x' is not a int"):
        figures("data_parallel", {"bucket_kb": "x"})
    with pytest.raises(ValueError, match="unknown lab"):
        figures("nope")
