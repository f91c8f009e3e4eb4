"""The validators every public calc function uses (STYLE.md §5: actionable messages)."""

from __future__ import annotations

import math

import pytest

from calc._check import check_choice, check_int, check_real


def test_check_int_message_names_argument_and_range() -> None:
    """The message a reader sees: "dp must be an integer from 1 to 65536, got 0"."""
    with pytest.raises(ValueError, match=r"^dp must be an integer from 1 to 65536, got 0$"):
        check_int("dp", 0, 1, 65536)


def test_check_choice_message_lists_choices() -> None:
    """"zero_stage must be one of 0, 1, 2, 3, got 4"."""
    with pytest.raises(ValueError, match=r"^zero_stage must be one of 0, 1, 2, 3, got 4$"):
        check_choice("zero_stage", 4, (0, 1, 2, 3))


def test_check_real_message() -> None:
    with pytest.raises(ValueError, match=r"^tokens must be a number from 0 to 100, got nan$"):
        check_real("tokens", math.nan, 0, 100)


@pytest.mark.parametrize("bad", [True, False, "8", None, 1.5, math.nan, math.inf, [8]])
def test_check_int_rejects_non_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="^dp must be an integer"):
        check_int("dp", bad, 1, 64)


def test_check_int_accepts_integral_floats_and_returns_int() -> None:
    assert check_int("dp", 8.0, 1, 64) == 8
    assert type(check_int("dp", 8.0, 1, 64)) is int


@pytest.mark.parametrize("bad", [True, "1e12", None, math.nan, math.inf, -math.inf, 1j])
def test_check_real_rejects_non_numbers(bad: object) -> None:
    with pytest.raises(ValueError, match="^tokens must be a number"):
        check_real("tokens", bad, 0, 1e16)


def test_check_real_open_lower_bound() -> None:
    assert check_real("flops_per_gpu", 1, 0, 10, lo_inclusive=False) == 1.0
    with pytest.raises(ValueError, match="greater than 0"):
        check_real("flops_per_gpu", 0, 0, 10, lo_inclusive=False)


def test_check_real_bounds_inclusive() -> None:
    assert check_real("x", 0, 0, 1) == 0.0
    assert check_real("x", 1, 0, 1) == 1.0
    with pytest.raises(ValueError):
        check_real("x", 1.0000001, 0, 1)


def test_check_choice_does_not_confuse_bool_with_int() -> None:
    with pytest.raises(ValueError):
        check_choice("zero_stage", True, (0, 1, 2, 3))
    assert check_choice("sequence_parallel", True, (False, True)) is True
    with pytest.raises(ValueError):
        check_choice("sequence_parallel", 1, (False, True))


def test_check_choice_returns_the_canonical_member() -> None:
    assert check_choice("zero_stage", 1.0, (0, 1, 2, 3)) == 1
    assert check_choice("schedule", "1f1b", ("gpipe", "1f1b")) == "1f1b"
    with pytest.raises(ValueError, match="got '2'"):
        check_choice("zero_stage", "2", (0, 1, 2, 3))
