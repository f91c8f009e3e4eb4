"""Controls declared once: validation, canonical state and test sampling derive from them."""

from __future__ import annotations

import math

import pytest

from widgets.framework.spec import Choice, Range, StateError, Toggle, canonical, edge_states, parse_state, random_states

CONTROLS = (
    Range("gpus", lo=1, hi=64, step=1, default=8, integer=True),
    Range("tokens", lo=50e9, hi=2e12, step=10e9, default=2e12),
    Choice("stage", ("0", "1", "2", "3"), "1", radio=True),
    Toggle("zero_on", True),
)


def test_missing_controls_take_their_defaults() -> None:
    assert parse_state(CONTROLS, {}) == {"gpus": 8, "tokens": 2e12, "stage": "1", "zero_on": True}


def test_strings_from_a_form_are_parsed() -> None:
    state = parse_state(CONTROLS, {"gpus": "64", "tokens": "5e10", "stage": "3", "zero_on": "0"})
    assert state == {"gpus": 64, "tokens": 50e9, "stage": "3", "zero_on": False}


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"gpus": "0"}, "errors.range"),
        ({"gpus": "65"}, "errors.range"),
        ({"gpus": "8.5"}, "errors.integer"),
        ({"gpus": "NaN"}, "errors.number"),
        ({"gpus": "inf"}, "errors.number"),
        ({"gpus": "-Infinity"}, "errors.number"),
        ({"gpus": ""}, "errors.number"),
        ({"gpus": "1e999"}, "errors.number"),
        ({"gpus": "<script>alert(1)</script>"}, "errors.number"),
        ({"gpus": True}, "errors.number"),
        ({"gpus": None}, "errors.number"),
        ({"gpus": ["8"]}, "errors.number"),
        ({"tokens": "3e12"}, "errors.range"),
        ({"tokens": "9" * 500}, "errors.number"),
        ({"stage": "4"}, "errors.choice"),
        ({"stage": 1.0}, "errors.choice"),
        ({"zero_on": "maybe"}, "errors.toggle"),
        ({"gpu": "8"}, "errors.unknown"),
    ],
)
def test_bad_values_raise_a_state_error_naming_the_control(raw: dict, key: str) -> None:
    with pytest.raises(StateError) as info:
        parse_state(CONTROLS, raw)
    assert info.value.key == key
    assert info.value.params["control"] in {"gpus", "tokens", "stage", "zero_on", "gpu"}
    assert len(info.value.params.get("value", "")) <= 40


def test_canonical_state_is_what_a_form_holds() -> None:
    state = parse_state(CONTROLS, {"gpus": 16, "tokens": 1e12, "zero_on": False})
    assert canonical(CONTROLS, state) == {"gpus": "16", "tokens": "1000000000000", "stage": "1", "zero_on": "0"}


def test_edge_states_cover_both_ends_of_every_control() -> None:
    states = list(edge_states(CONTROLS))
    assert states[0] == parse_state(CONTROLS, {})
    assert {s["gpus"] for s in states} == {1, 8, 64}
    assert {s["tokens"] for s in states} == {50e9, 2e12}
    assert {s["stage"] for s in states} == {"0", "1", "2", "3"}
    assert {s["zero_on"] for s in states} == {True, False}


def test_random_states_are_reproducible_and_valid() -> None:
    first, second = random_states(CONTROLS, 20, seed=7), random_states(CONTROLS, 20, seed=7)
    assert first == second
    for state in first:
        assert parse_state(CONTROLS, state) == state
        assert math.isclose((state["tokens"] - 50e9) / 10e9, round((state["tokens"] - 50e9) / 10e9))
