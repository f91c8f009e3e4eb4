"""What a reader sees in both colour schemes, measured on computed colours: a keyboard focus
ring on every kind of widget control (WCAG 2.2 2.4.13 and 1.4.11: at least 2 px, 3:1
against what lies next to it), faded widget text that still reads at 4.5:1 (1.4.3), the
zero widget's shards held elsewhere drawn as its legend says, and code tokens at 4.5:1 on
the code background.

Contrast is the WCAG ratio of relative luminances, computed here from the browser's
computed RGB(A) colours; a translucent colour (and any opacity on the way up) is composed
over the backgrounds behind it, down to the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from live import BOOT_MS, VIEWPORT, Recorder, root

Rgba = tuple[float, float, float, float]
SCHEMES = {"light": "default", "dark": "slate"}

# One control of each kind, on the chapter whose widget has it: (chapter, widget, fragment
# state that boots it, the control). Tab reaches a radio group at its checked radio.
CONTROLS = [
    ("zero/", "zero", "zero.gpus=16", 'input[type="range"]'),
    ("zero/", "zero", "zero.gpus=16", 'input[type="radio"]:checked'),
    ("zero/", "zero", "zero.gpus=16", "select"),
    ("zero/", "zero", "zero.gpus=16", ".w-details > summary"),
    ("collective-communication/", "bandwidth", "bandwidth.ranks=16", 'input[type="text"]'),
    ("3d-parallelism/", "parallel3d", "parallel3d.dp=4", 'input[type="checkbox"]'),
    ("3d-parallelism/", "parallel3d", "parallel3d.dp=4", "a.w-preset"),
]
# The exercise under a chapter's widget: its answer field and its buttons.
EXERCISE_CONTROLS = [".w-exercise-input", ".w-exercise-check", ".w-exercise-show"]
MAX_TABS = 80

# Each element with text of its own in `root`: its colour, the opacity it is drawn with
# (fill-opacity and every opacity up to the page) and the backgrounds behind it.
TEXTS = """(root) => {
    const out = [];
    for (const el of root.querySelectorAll('*')) {
        if (el.closest('option, noscript')) continue;
        if (!Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim())) continue;
        const s = getComputedStyle(el);
        const box = el.getBoundingClientRect();
        if (s.display === 'none' || s.visibility === 'hidden' || box.width === 0 || box.height === 0) continue;
        const svg = el instanceof SVGElement;
        let opacity = svg ? parseFloat(s.fillOpacity) : 1;
        for (let e = el; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
        const backgrounds = [];
        for (let e = el; e; e = e.parentElement) backgrounds.push(getComputedStyle(e).backgroundColor);
        out.push({cls: el.getAttribute('class') || el.tagName.toLowerCase(), text: el.textContent.trim().slice(0, 30),
                  color: svg ? s.fill : s.color, opacity, backgrounds, italic: s.fontStyle === 'italic',
                  weight: parseFloat(s.fontWeight)});
    }
    return out;
}"""
BACKGROUNDS = "(el) => { const out = []; for (let e = el; e; e = e.parentElement) out.push(getComputedStyle(e).backgroundColor); return out; }"
SWATCH = "(el) => [getComputedStyle(el).backgroundColor, parseFloat(getComputedStyle(el).opacity)]"
RING = """(el) => { const s = getComputedStyle(el);
    return {style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor,
            offset: parseFloat(s.outlineOffset), shadow: s.boxShadow}; }"""


# --- colour arithmetic (WCAG 2.2) ---------------------------------------------------------

def parse_color(css: str) -> Rgba:
    """A computed colour, `rgb()`, `rgba()` or `color(srgb ...)`, as (r, g, b in 0-255, alpha)."""
    css = css.strip()
    if css == "transparent" or css == "none":
        return (0.0, 0.0, 0.0, 0.0)
    numbers = [float(x) for x in re.findall(r"-?[\d.]+(?:e-?\d+)?", css)]
    if css.startswith("color(srgb"):
        r, g, b = (c * 255 for c in numbers[:3])
        return (r, g, b, numbers[3] if len(numbers) > 3 else 1.0)
    assert css.startswith("rgb") and len(numbers) in (3, 4), f"unexpected colour {css!r}"
    return (numbers[0], numbers[1], numbers[2], numbers[3] if len(numbers) == 4 else 1.0)


def over(top: Rgba, bottom: Rgba) -> Rgba:
    """`top` composed over an opaque `bottom` (source-over)."""
    a = top[3]
    return (*(top[i] * a + bottom[i] * (1 - a) for i in range(3)), 1.0)  # type: ignore[return-value]


def backdrop(backgrounds: list[str]) -> Rgba:
    """The opaque colour behind an element: its ancestors' backgrounds (innermost first)
    composed from the page's white canvas upwards."""
    colour: Rgba = (255.0, 255.0, 255.0, 1.0)
    for css in reversed(backgrounds):
        colour = over(parse_color(css), colour)
    return colour


def luminance(c: Rgba) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])


def contrast(a: Rgba, b: Rgba) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def seen(color: str, opacity: float, behind: Rgba) -> Rgba:
    """The colour a reader sees: `color` at `opacity` over `behind`."""
    r, g, b, a = parse_color(color)
    return over((r, g, b, a * opacity), behind)


def test_colour_arithmetic_matches_wcag() -> None:
    """The helpers against known WCAG values, so a wrong formula cannot pass the rest."""
    white, black = parse_color("rgb(255, 255, 255)"), parse_color("rgb(0, 0, 0)")
    assert contrast(white, black) == pytest.approx(21)
    assert contrast(parse_color("rgb(118, 118, 118)"), white) == pytest.approx(4.54, abs=0.01)
    assert seen("rgba(0, 0, 0, 0.5)", 1, white)[0] == pytest.approx(127.5)
    assert parse_color("color(srgb 1 0.5 0 / 0.25)") == (255, 127.5, 0, 0.25)
    assert backdrop(["rgba(0, 0, 0, 0)", "rgb(10, 20, 30)", "rgb(255, 255, 255)"])[:3] == (10, 20, 30)


# --- pages -------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(SCHEMES))
def scheme_context(request: pytest.FixtureRequest, browser: Any, site_url: str) -> Iterator[tuple[str, Any, Recorder]]:
    """A context in one colour scheme, shared by the module's tests in that scheme: Material
    keeps the scheme it first applied in localStorage, so a scheme needs a context of its
    own; the first chapter boots Python and stores the snapshot the others start from."""
    context = browser.new_context(color_scheme=request.param, viewport=VIEWPORT)
    recorder = Recorder.of(site_url)
    yield request.param, context, recorder
    context.close()
    recorder.check()


def open_page(scheme_context: tuple[str, Any, Recorder], site_url: str, path: str, boot: str | None = None) -> Any:
    """A new page at `path`, in the context's scheme; with `boot` (the widget's name and its
    fragment) once that widget is live."""
    scheme, context, recorder = scheme_context
    page = context.new_page()
    recorder.watch(page, label=True)
    fragment = f"#{boot.split(' ', 1)[1]}" if boot else ""
    page.goto(site_url + path + fragment)
    assert page.get_attribute("body", "data-md-color-scheme") == SCHEMES[scheme]
    if boot:
        name = boot.split(" ", 1)[0]
        page.wait_for_selector(f'{root(name)}[data-status="ready"]', timeout=BOOT_MS)
        page.wait_for_function("(sel) => Number(document.querySelector(sel).dataset.revision) > 0",
                               arg=root(name), timeout=BOOT_MS)
    return page


def tab_to(page: Any, start: Any, control: Any) -> int:
    """Click an empty spot of `start` (a starting point for the keyboard, no focus) and press
    Tab until `control` has the focus; the number of presses."""
    start.click(position={"x": 2, "y": 2})
    for presses in range(1, MAX_TABS + 1):
        page.keyboard.press("Tab")
        if control.evaluate("el => el === document.activeElement"):
            return presses
    raise AssertionError(f"{MAX_TABS} presses of Tab never reached the control")


def ring_problem(page: Any, control: Any) -> str | None:
    """Why the focused `control`'s ring fails 2 px and 3:1 against what lies next to it
    (the background of its parent, where an outline drawn outside the control falls)."""
    assert control.evaluate("el => el.matches(':focus-visible')"), "focus is not keyboard focus"
    ring = control.evaluate(RING)
    behind = backdrop(control.evaluate(f"el => ({BACKGROUNDS})(el.parentElement)"))
    if ring["style"] not in ("none", "hidden") and ring["width"] > 0:
        width, colour = ring["width"], ring["color"]
    elif ring["shadow"] != "none":  # a box-shadow ring: its colour, then its spread
        colour = re.match(r"(rgba?\([^)]*\)|color\([^)]*\))", ring["shadow"]).group(1)
        width = float(re.findall(r"(-?[\d.]+)px", ring["shadow"])[-1])
    else:
        return f"no ring at all ({ring})"
    ratio = contrast(seen(colour, 1, behind), behind)
    if width < 2 or ratio < 3:
        return f"ring {width}px {colour} on {behind[:3]}: {ratio:.2f}:1"
    return None


def test_every_kind_of_control_shows_a_focus_ring_by_keyboard(scheme_context: tuple[str, Any, Recorder],
                                                              site_url: str) -> None:
    scheme = scheme_context[0]
    problems = []
    for path, name, state, selector in CONTROLS:
        page = open_page(scheme_context, site_url, path, f"{name} {state}")
        widget = page.locator(root(name))
        control = widget.locator(selector).first
        assert control.count() == 1, f"no {selector} in the {name} widget"
        assert control.is_enabled(), f"{name} {selector} is still disabled once ready"
        tab_to(page, widget, control)
        problem = ring_problem(page, control)
        if problem:
            problems.append(f"{scheme} {name} {selector}: {problem}")
        page.close()
    assert problems == [], "\n".join(problems)


def test_exercise_controls_show_a_focus_ring_by_keyboard(scheme_context: tuple[str, Any, Recorder],
                                                         site_url: str) -> None:
    scheme = scheme_context[0]
    page = open_page(scheme_context, site_url, "zero/")
    exercise = page.locator(".w-exercise:not([hidden])").first
    exercise.wait_for(timeout=BOOT_MS)  # the runtime unhides it
    problems = []
    for selector in EXERCISE_CONTROLS:
        control = exercise.locator(selector).first
        tab_to(page, exercise, control)
        problem = ring_problem(page, control)
        if problem:
            problems.append(f"{scheme} exercise {selector}: {problem}")
    assert problems == [], "\n".join(problems)


def text_ratio(item: dict[str, Any]) -> float:
    behind = backdrop(item["backgrounds"][1:])  # an element's own background lies under its text too
    behind = over(parse_color(item["backgrounds"][0]), behind)
    return contrast(seen(item["color"], item["opacity"], behind), behind)


def test_tp_faded_link_row_reads_at_4_5_and_as_secondary(scheme_context: tuple[str, Any, Recorder], site_url: str) -> None:
    scheme = scheme_context[0]
    page = open_page(scheme_context, site_url, "tensor-parallelism/", "tp tp.tp=8&tp.link=nvlink")
    widget = page.locator(root("tp"))
    faded = widget.locator(".w-tp-other")
    assert faded.count() == 1, "one link row is not chosen, so one row is faded"
    texts = faded.evaluate(TEXTS)
    assert len(texts) == 2, texts  # the link's name and its time
    chosen_weight = float(faded.locator("xpath=..").locator("text.w-fig-value").first.evaluate("el => getComputedStyle(el).fontWeight"))
    for item in texts:
        ratio = text_ratio(item)
        assert ratio >= 4.5, f"{scheme} tp faded {item['text']!r}: {item['color']} x {item['opacity']:.2f} is {ratio:.2f}:1"
        # Secondary by its style: italic, and no heavier than the chosen row's bold time.
        assert item["italic"] and item["weight"] < chosen_weight, (scheme, item)
    # Its bar is see-through (the note says so), its extent kept by an outline at 3:1.
    bar = faded.locator("rect")
    stroke, width = bar.evaluate("el => [getComputedStyle(el).stroke, parseFloat(getComputedStyle(el).strokeWidth)]")
    behind = backdrop(widget.evaluate(BACKGROUNDS))
    assert fill_seen(bar, behind) != seen(bar.evaluate("el => getComputedStyle(el).fill"), 1, behind), "the bar is not see-through"
    assert width >= 1 and contrast(seen(stroke, 1, behind), behind) >= 3, f"{scheme}: the faded bar's outline {stroke}"


def fill_seen(el: Any, behind: Rgba) -> Rgba:
    fill, opacity = el.evaluate("el => [getComputedStyle(el).fill, parseFloat(getComputedStyle(el).fillOpacity)]")
    return seen(fill, opacity, behind)


def test_zero_ghost_shards_are_faded_and_outlined_as_the_legend_says(scheme_context: tuple[str, Any, Recorder],
                                                                     site_url: str) -> None:
    """The shards other GPUs hold sit nearer the background than the owned ones (less
    prominent, whatever the scheme) and carry a dashed outline at 3:1, in the figure and in
    its legend swatch; the legend's words name no lightness."""
    scheme = scheme_context[0]
    page = open_page(scheme_context, site_url, "zero/", "zero zero.gpus=16&zero.stage=3")
    widget = page.locator(root("zero"))
    behind = backdrop(widget.evaluate(BACKGROUNDS))
    ghost, owned = widget.locator("rect.w-c3.w-zero-ghost").first, widget.locator("rect.w-c3.w-zero-owned").first
    ghost_fill, owned_fill = fill_seen(ghost, behind), fill_seen(owned, behind)
    assert contrast(ghost_fill, behind) < contrast(owned_fill, behind), f"{scheme}: the ghost shard stands out more"
    swatch = widget.locator(".w-zero-swatch-ghost")
    owned_swatch = widget.locator(".w-legend .w-swatch.w-c3").first
    ghost_bg, owned_bg = (seen(*s.evaluate(SWATCH), behind) for s in (swatch, owned_swatch))
    assert contrast(ghost_bg, behind) < contrast(owned_bg, behind), f"{scheme}: the ghost swatch stands out more"
    assert abs(contrast(ghost_bg, behind) - contrast(ghost_fill, behind)) < 0.25, "swatch and figure differ"
    line = ghost.evaluate("el => [getComputedStyle(el).stroke, getComputedStyle(el).strokeDasharray]")
    border = swatch.evaluate("el => { const s = getComputedStyle(el); return [s.borderTopColor, s.borderTopStyle, parseFloat(s.borderTopWidth)]; }")
    assert line[1] not in ("none", "") and border[1] == "dashed" and border[2] >= 1, (scheme, line, border)
    for colour in (line[0], border[0]):
        assert contrast(seen(colour, 1, behind), behind) >= 3, f"{scheme}: ghost outline {colour}"
    words = swatch.locator("xpath=..").inner_text().lower()
    assert not any(w in words for w in ("pucat", "terang", "gelap", "浅", "深", "亮", "暗")), words


# Every chapter with a widget, for the scan of faded text (prerendered: the same HTML the
# live widget renders, and what a reader sees before Python is up or without JavaScript).
def widget_chapters(site: Path) -> list[tuple[str, str]]:
    found = []
    for page in sorted(site.glob("*/index.html")):
        for name in re.findall(r'data-widget="(\w+)"', page.read_text(encoding="utf-8")):
            found.append((page.parent.name + "/", name))
    return found


def test_faded_widget_text_reads_at_4_5(scheme_context: tuple[str, Any, Recorder], site_url: str, built_site: Path) -> None:
    """Every widget text drawn lighter on purpose (an opacity, a translucent colour below
    Material's body text) still reaches 4.5:1 on what lies behind it."""
    scheme = scheme_context[0]
    chapters = widget_chapters(built_site)
    assert len({name for _, name in chapters}) >= 15, chapters
    problems, faded_seen = [], 0
    for path in sorted({p for p, _ in chapters}):
        page = open_page(scheme_context, site_url, path)
        for name in [n for p, n in chapters if p == path]:
            for item in page.locator(root(name)).evaluate(TEXTS):
                alpha = parse_color(item["color"])[3] * item["opacity"]
                if alpha >= 0.8:  # Material's own body text is 0.87 (light) and 0.82 (dark)
                    continue
                faded_seen += 1
                ratio = text_ratio(item)
                if ratio < 4.5:
                    problems.append(f"{scheme} {path} {name} .{item['cls']} {item['text']!r}: {ratio:.2f}:1")
        page.close()
    assert faded_seen >= 50, f"only {faded_seen} faded texts found: the scan lost its way"
    assert problems == [], "\n".join(problems)


# --- code -------------------------------------------------------------------------------

def token_classes(site: Path) -> set[str]:
    """Every pygments token class in the code blocks of the built pages."""
    classes: set[str] = set()
    for page in site.rglob("*.html"):
        for block in re.findall(r'<div class="[^"]*highlight[^"]*">(.*?)</pre>', page.read_text(encoding="utf-8"), re.S):
            classes.update(re.findall(r'<span class="([^"]+)"', block))
    return classes


# Each token span in the page's code blocks, with the backgrounds behind it.
TOKENS = """() => Array.from(document.querySelectorAll('.md-typeset .highlight pre > code span[class]')).map(s => {
    const backgrounds = []; for (let e = s; e; e = e.parentElement) backgrounds.push(getComputedStyle(e).backgroundColor);
    return {cls: s.className, color: getComputedStyle(s).color, backgrounds}; })"""
# A span of every class, put into the page's first code block, for the colour of tokens the
# page itself does not use.
PROBES = """(classes) => { const code = document.querySelector('.md-typeset .highlight pre > code');
    return classes.map(cls => { const s = document.createElement('span');
        s.className = cls; s.textContent = 'x'; code.appendChild(s);
        const backgrounds = []; for (let e = s; e; e = e.parentElement) backgrounds.push(getComputedStyle(e).backgroundColor);
        const token = {cls, color: getComputedStyle(s).color, backgrounds}; s.remove(); return token; }); }"""


def token_ratio(token: dict[str, Any]) -> float:
    behind = backdrop(token["backgrounds"])
    return contrast(seen(token["color"], 1, behind), behind)


def test_code_tokens_read_at_4_5(scheme_context: tuple[str, Any, Recorder], site_url: str, built_site: Path) -> None:
    """Every token span of a lab's code, and a probe of every token class the built pages
    use, at 4.5:1 on the code block's background."""
    scheme = scheme_context[0]
    classes = token_classes(built_site)
    assert {"k", "n", "p", "o", "c1", "s2", "mi"} <= classes, classes
    page = open_page(scheme_context, site_url, "lab-zero/")
    tokens = page.evaluate(TOKENS)
    assert len(tokens) > 200 and {"k", "c1", "p"} <= {t["cls"] for t in tokens}, "the lab's code lost its highlighting"
    tokens += page.evaluate(PROBES, sorted(classes))
    problems = sorted({f"{scheme} .{t['cls']} {t['color']}: {token_ratio(t):.2f}:1" for t in tokens if token_ratio(t) < 4.5})
    assert problems == [], "\n".join(problems)
