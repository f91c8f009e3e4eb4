"""The DOM contract of DESIGN.md, localized errors, and the worker entry point."""

from __future__ import annotations

import re

import pytest

from widgets.framework.core import handle, render_widget
from widgets.build.native import locale


def test_prerendered_widget_follows_the_dom_contract() -> None:
    html = render_widget("why", {}, locale("id"))
    assert html.startswith('<div class="w-widget" id="widget-why" data-widget="why" data-status="static" data-revision="0"')
    assert re.search(r'<input type="range" id="w-why-tokens" name="tokens" min="50000000000" max="2000000000000" step="10000000000" value="2000000000000" disabled>', html)
    assert '<label for="w-why-tokens">Token training</label>' in html
    assert re.search(r'<select id="w-why-model" name="model" disabled><option value="llama2-7b" selected>Llama 2 7B</option>', html)
    assert 'data-region="output" aria-live="polite"' in html
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
        ("id", {"tokens": "1"}, "Token training harus antara 50 miliar dan 2 triliun, bukan 1."),
        ("zh", {"tokens": "1"}, "训练 token 数 必须在 500 亿 到 2 万亿 之间，而不是 1。"),
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
