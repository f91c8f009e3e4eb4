"""Controls declared once: validation, canonical state and test sampling derive from them."""

from __future__ import annotations

import math

import pytest

from widgets.framework.spec import (
    Choice, Number, Range, StateError, Toggle, canonical, edge_states, parse_state, random_states,
)

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


# -- Number: a value the reader types, in the units nccl-tests prints ----------------------

SIZE = Number("size_bytes", "bytes", 1, 1e12, 10**9)
TIME = Number("time_us", "us", 0.01, 1e8, 10000.0, aliases={"time_s": 1e6})
RANKS = Number("ranks", "count", 2, 65536, 8)
TYPED = (SIZE, TIME, RANKS)


@pytest.mark.parametrize(("text", "value"), [
    ("8G", 8 * 2**30), ("512M", 512 * 2**20), ("4K", 4096), ("123456", 123456), ("1T", None),
    ("8g", 8 * 2**30), (" 8 G ", 8 * 2**30), ("8GiB", 8 * 2**30), ("1.5G", 3 * 2**29), ("1e9", 10**9),
    ("25MB", 25 * 10**6), ("1kB", 1000), ("64B", 64), ("8589934592", 8 * 2**30),
])
def test_sizes_read_as_nccl_tests_writes_them(text: str, value: int | None) -> None:
    if value is None:  # 1T = 2^40 bytes is above this control's 1e12
        with pytest.raises(StateError):
            SIZE.parse(text)
        return
    assert SIZE.parse(text) == value and isinstance(SIZE.parse(text), int)


@pytest.mark.parametrize(("text", "value"), [
    ("47535", 47535.0), ("12.5", 12.5), ("47.5 ms", 47500.0), ("0.05 s", 50000.0), ("47535us", 47535.0),
    ("47535 µs", 47535.0), ("10ns", 0.01), ("1e3", 1000.0),
])
def test_times_are_microseconds_unless_a_unit_says_otherwise(text: str, value: float) -> None:
    assert TIME.parse(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize(("control", "text", "key"), [
    (SIZE, "8X", "errors.bytes"), (SIZE, "-4K", "errors.bytes"), (SIZE, "", "errors.bytes"), (SIZE, "0x10", "errors.bytes"),
    (SIZE, "1.1K", "errors.integer"), (SIZE, "0", "errors.range"), (SIZE, "2e12", "errors.range"),
    (SIZE, "<b>8G</b>", "errors.bytes"), (SIZE, "9" * 60, "errors.bytes"), (SIZE, "1e400", "errors.number"),
    (TIME, "47535 h", "errors.microseconds"), (TIME, "NaN", "errors.microseconds"), (TIME, "0", "errors.range"),
    (TIME, "1e9", "errors.range"), (RANKS, "8.5", "errors.integer"), (RANKS, "1", "errors.range"),
    (RANKS, "16 GPUs", "errors.number"), (RANKS, True, "errors.number"), (RANKS, None, "errors.number"),
])
def test_bad_typed_numbers_raise_a_state_error(control: Number, text: object, key: str) -> None:
    with pytest.raises(StateError) as info:
        control.parse(text)
    assert info.value.key == key and info.value.params["control"] == control.name
    assert len(info.value.params["value"]) <= 40


def test_an_older_name_still_reads_in_its_own_unit() -> None:
    """`time_s=1e-2` (seconds, the select this control replaced) is 10000 µs."""
    assert parse_state(TYPED, {"time_s": "1e-2"})["time_us"] == 10000.0
    assert parse_state(TYPED, {"time_s": "0.05"})["time_us"] == 50000.0
    assert parse_state(TYPED, {"time_us": "5", "time_s": "1"})["time_us"] == 5.0  # the new name wins
    with pytest.raises(StateError) as info:
        parse_state(TYPED, {"time_s": "200"})
    assert info.value.key == "errors.range"


def test_canonical_text_is_the_shortest_that_reads_back() -> None:
    state = parse_state(TYPED, {"size_bytes": "8589934592", "time_us": "47535", "ranks": "16.0"})
    assert canonical(TYPED, state) == {"size_bytes": "8G", "time_us": "47535", "ranks": "16"}
    assert canonical(TYPED, parse_state(TYPED, {})) == {"size_bytes": "1e9", "time_us": "10000", "ranks": "8"}
    assert SIZE.text(25 * 2**20) == "25M" and SIZE.text(1000) == "1e3" and SIZE.text(1234) == "1234"
    for state in random_states(TYPED, 200, seed=11):
        assert parse_state(TYPED, canonical(TYPED, state)) == state


def test_typed_numbers_are_sampled_within_their_range_and_at_both_ends() -> None:
    states = list(edge_states(TYPED))
    assert {s["size_bytes"] for s in states} == {1, 10**9, 1e12}
    for state in random_states(TYPED, 100, seed=5):
        assert 1 <= state["size_bytes"] <= 1e12 and isinstance(state["size_bytes"], int)
        assert 0.01 <= state["time_us"] <= 1e8 and 2 <= state["ranks"] <= 65536


def test_a_typed_number_is_a_labelled_text_field_with_its_reading_beside_it() -> None:
    from widgets.build.native import locale
    from widgets.framework.html import controls_html

    html = controls_html("bandwidth", TYPED, parse_state(TYPED, {"size_bytes": "8G"}), locale("id"))
    assert ('<input type="text" id="w-bandwidth-size_bytes" name="size_bytes" value="8G" inputmode="text"'
            in html)
    assert 'name="time_us" value="10000" inputmode="decimal"' in html and 'inputmode="numeric"' in html
    assert '<output for="w-bandwidth-size_bytes" data-label="size_bytes">8,59 GB</output>' in html
    assert '<label for="w-bandwidth-time_us">' in html and html.count(" disabled") == 3
