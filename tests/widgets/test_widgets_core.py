"""The DOM contract of DESIGN.md, localized errors, and the worker entry point."""

from __future__ import annotations

import re

import pytest

from widgets.framework.core import handle, render_widget
from widgets.build.native import locale


def test_prerendered_widget_follows_the_dom_contract() -> None:
    html = render_widget("why", {}, locale("id"))
    assert html.startswith('<div class="w-widget" id="widget-why" data-widget="why" data-status="static" data-revision="0"')
    assert re.search(r'<input type="range" id="w-why-tokens" name="tokens" min="50000000000" max="15000000000000" step="10000000000" value="2000000000000" disabled>', html)
    assert '<label for="w-why-tokens">Token training</label>' in html
    assert re.search(r'<select id="w-why-model" name="model" disabled><option value="llama2-7b" selected>Llama 2 7B</option>', html)
    # Only the sentence that states the result is read out at each change, not the figure.
    assert 'data-region="output">' in html and 'data-region="live" aria-live="polite"' in html
    assert html.count("aria-live") == 1
    assert 'data-defaults="tokens=2000000000000&amp;model=llama2-7b&amp;gpu=a100-80gb&amp;mfu=0.4&amp;recipe=zero-paper"' in html


@pytest.mark.parametrize("lang", ["id", "zh"])
def test_without_the_runtime_the_controls_are_disabled_and_a_note_says_why(lang: str) -> None:
    """A page read without JavaScript must not offer sliders that change nothing: every
    control is pre-rendered disabled (the runtime enables them) and <noscript> says so."""
    html = render_widget("parallel3d", {}, locale(lang))
    controls = re.findall(r"<(?:input|select)\b[^>]*>", html)
    assert controls and all(re.search(r"\sdisabled(?:[\s>=])", c) for c in controls)
    note = locale(lang).t("runtime.noscript")
    assert f'<noscript><p class="w-noscript">{note}</p></noscript>' in html


def test_overrides_in_the_fence_set_the_initial_state() -> None:
    html = render_widget("why", {"model": "llama2-70b"}, locale("zh"))
    assert '<option value="llama2-70b" selected>' in html


def test_invalid_fence_options_fail_the_build() -> None:
    with pytest.raises(Exception):
        render_widget("why", {"tokens": "1"}, locale("id"))


@pytest.mark.parametrize(
    ("lang", "state", "expected"),
    [
        ("id", {"tokens": "1"}, "Token training harus antara 50 miliar dan 15 triliun, bukan 1."),
        ("zh", {"tokens": "1"}, "训练 token 数 必须在 500 亿 到 15 万亿 之间，而不是 1。"),
        ("id", {"model": "gpt-5"}, "Model harus salah satu dari llama2-7b, llama2-13b, llama2-70b, gpt3-175b, bukan “gpt-5”."),
        ("zh", {"tokens": "NaN"}, "训练 token 数 必须是数字，而不是“NaN”。"),
        ("id", {"evil": "1"}, "Tidak ada kontrol bernama “evil” di gambar ini."),
    ],
)
def test_bad_state_gives_a_localized_error(lang: str, state: dict, expected: str) -> None:
    reply = handle({"widget": "why", "state": state}, locale(lang))
    assert reply["ok"] is False
    assert 'role="alert"' in reply["html"]
    assert expected in reply["html"]


def test_markup_in_a_tampered_state_is_escaped_never_injected() -> None:
    reply = handle({"widget": "why", "state": {"model": "<img src=x onerror=alert(1)>"}}, locale("id"))
    assert "<img" not in reply["html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in reply["html"]
    reply = handle({"widget": "why", "state": {"<b>": "1"}}, locale("id"))
    assert "<b>" not in reply["html"] and "&lt;b&gt;" in reply["html"]


def test_a_state_that_is_not_a_mapping_is_an_error_not_a_crash() -> None:
    assert handle({"widget": "why", "state": "tokens=1"}, locale("id"))["ok"] is False
    assert handle({"widget": "nope", "state": {}}, locale("id"))["ok"] is False


def test_worker_reply_carries_canonical_state_and_control_labels() -> None:
    reply = handle({"widget": "why", "state": {"tokens": "5e10", "model": "gpt3-175b"}}, locale("id"))
    assert reply["ok"] is True
    assert reply["state"] == {"tokens": "50000000000", "model": "gpt3-175b", "gpu": "a100-80gb", "mfu": "0.4",
                              "recipe": "zero-paper"}
    assert reply["labels"] == {"tokens": "50 miliar", "model": "GPT-3 175B", "gpu": "NVIDIA A100 80GB SXM",
                               "mfu": "40,0%", "recipe": "Paper ZeRO: fp16, master dan Adam fp32 (16 B)"}


def test_a_link_state_keeps_what_is_valid_and_names_every_problem() -> None:
    from widgets.framework.core import render_output
    from widgets.figures import why

    out = render_output("why", {"tokens": "123456789012", "mfu": "2", "bogus": "1", "model": "llama2-13b"},
                        locale("zh"), link=True)
    assert out.ok and out.state["model"] == "llama2-13b"
    assert out.state["tokens"] == str(int(why.CONTROLS[0].default)) and out.state["mfu"] == "0.4"
    assert re.findall(r'<li data-error="([\w.]+)"', out.problems) == ["errors.unknown", "errors.step", "errors.range"]
    assert locale("zh").t("errors.link_heading") in out.problems
    # the same state from a form (not a link) is one error, and no figure
    assert not render_output("why", {"mfu": "2"}, locale("zh")).ok
    clean = render_output("why", {"tokens": "1230000000000", "mfu": "0.15"}, locale("id"), link=True)
    assert clean.ok and clean.problems == "" and clean.state["mfu"] == "0.15"


def test_a_slider_value_is_on_its_steps_to_within_rounding() -> None:
    from widgets.framework.spec import Range, on_step

    mfu = Range("mfu", lo=0.1, hi=0.7, step=0.01, default=0.4)
    assert on_step(mfu, 0.1 + 14 * 0.01) and on_step(mfu, 0.7) and on_step(mfu, 0.1)
    assert not on_step(mfu, 0.155) and not on_step(mfu, 0.1001)
    tokens = Range("tokens", lo=50e9, hi=15e12, step=10e9, default=2e12)
    assert on_step(tokens, 2e12) and not on_step(tokens, 123456789012)


def test_the_worker_reply_carries_the_controls_rules() -> None:
    reply = handle({"widget": "pp", "state": {"schedule": "gpipe"}}, locale("id"))
    assert reply["inactive"] == ["chunks"] and reply["limits"] == {} and reply["problems"] == ""
    assert handle({"widget": "pp", "state": {"schedule": "interleaved"}}, locale("id"))["inactive"] == []
    html = render_widget("pp", {}, locale("id"))
    assert re.search(r'<input type="range" id="w-pp-chunks"[^>]* disabled data-inactive>', html)
