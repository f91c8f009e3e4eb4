"""MkDocs plugin: pre-render every widget, compute every number macro, ship the runtime.

* ```` ```widget NAME ```` fences (optionally with `key: value` lines of control
  overrides) become the widget's complete HTML, rendered natively in the page language.
* `{{ NAME.OUTPUT key=value ... }}` macros become the formatted output value.
* ```` ```exercise ```` fences (`answer:`, `unit:`, `tolerance:`) become a typed-answer
  form whose answer calc computes (`widgets.framework.exercise`); the browser checks what the
  reader types with the same code.
* The glossary (`i18n/glossary.yml`) becomes hover and focus definitions of its terms
  in every page (as `*[term]: definition` abbreviations in the page's language, made
  focusable by `i18n.tooltips`) and fills the `<!-- glossary -->` marker of the glossary
  page.
* A page served from the source language because its translation is missing
  (mkdocs-static-i18n's `fallback_to_default`) gets a banner in the reader's language
  that links to the Translate page.
* After the build, the browser runtime (`assets/widgets/`), the Pyodide core copied from
  the pinned npm package, the project wheel (a PEP 517 build) and the strings as JSON are
  written once, at the root of the site, and shared by every language.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.config import base
from mkdocs.config import config_options as opt
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority, get_plugin_logger
from mkdocs.utils import get_relative_url

from .. import REGISTRY
from ..framework.core import format_value, render_widget
from ..framework.exercise import ExerciseError, parse as parse_exercise, render_form, validate as validate_exercise
from .headers import UnknownScript, write_headers
from .lazysearch import defer_search_index
from .searchindex import split_search_index
from .native import locale

log = get_plugin_logger(__name__)
PROJECT = Path(__file__).resolve().parents[2]
ASSETS = Path(__file__).resolve().parents[1] / "browser" / "assets"  # the browser runtime
# The Pyodide core files the runtime needs (PITFALLS.md); nothing else from the package.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")

# A fence's body is the lines up to its closing ``` (none of them a fence line itself, so
# a fence left open is found at its own line instead of swallowing the next code block).
_BODY = r"(?P<body>(?:^(?![ \t]*```).*\n)*?)"
FENCE = re.compile(r"^(?P<indent>[ \t]*)```widget[ \t]+(?P<name>[\w-]+)[ \t]*\n" + _BODY + r"^(?P=indent)```[ \t]*$", re.M)
EXERCISE = re.compile(r"^(?P<indent>[ \t]*)```exercise[ \t]*\n" + _BODY + r"^(?P=indent)```[ \t]*$", re.M)
SOLUTION = re.compile(r"(?:[ \t]*\n)*(?P<indent>[ \t]*)\?\?\?\+?[ \t]+success\b")
MACRO = re.compile(r"\{\{\s*(?P<name>[\w-]+)\.(?P<key>\w+)(?P<args>(?:\s+[\w-]+=[^\s}]+)*)\s*\}\}")
SLOT = "WIDGETSLOT{:04d}X"
# What i18n.tooltips never marks: fenced code, inline code, headings, front matter.
PROSE_ONLY = re.compile(r"^```.*?^```|`[^`\n]*`|^#+ [^\n]*$|\A---\n.*?^---$", re.M | re.S)
GLOSSARY_MARKER = re.compile(r"^[ \t]*<!--[ \t]*glossary[ \t]*-->[ \t]*$", re.M)
TRANSLATE_PAGE = "translate.md"  # where the "not translated yet" banner sends readers
NOTFOUND_HEADING = "<h1>404 - Not found</h1>"  # the content of Material's 404.html
ALTERNATE = re.compile(r'<link rel="alternate" href="[^"]*" hreflang="[^"]*">\s*')
_WHEELS: dict[str, Path] = {}  # source hash -> built wheel, for this process
PACKAGES = ("calc", "widgets", "i18n", "markdown_math")  # as in pyproject.toml
# Why the runtime may fail to start (worker.js), each a `runtime.reasons.*` string.
RUNTIME_REASONS = ("timeout", "network", "http", "mime", "corrupt", "other")


class WidgetsConfig(base.Config):
    enabled = opt.Type(bool, default=True)
    pyodide_dir = opt.Type(str, default="node_modules/pyodide")
    i18n_dir = opt.Type(str, default="i18n")
    # The boot fails when no byte of the runtime arrived and no reply came for this long
    # (not after a total time: a slow link that keeps downloading still goes live).
    stall_timeout_ms = opt.Type(int, default=30000)


class WidgetsPlugin(BasePlugin[WidgetsConfig]):
    def __init__(self) -> None:
        self._slots: dict[str, dict[str, str]] = {}
        self._glossary: Any = None
        self._fallback: dict[str, str] = {}  # src_uri -> the language the page is written in
        self._notfound_page: str | None = None  # the default language's 404 page, this build

    # Why: translators' mistakes must stop the build with file, key and line.
    def on_config(self, config: Any) -> Any:
        if not self.config.enabled:
            return config
        from i18n.check import check
        from i18n.pages import page_mistakes

        self._wheel_rel: tuple[Path, str] | None = None  # built once per build (see _wheel_path)
        problems = check(PROJECT / self.config.i18n_dir)
        if problems:
            raise PluginError("i18n check failed:\n" + "\n".join(str(p) for p in problems))
        # The pages' own mistakes, at their lines, before any page is rendered.
        problems = page_mistakes(Path(config.docs_dir))
        if problems:
            raise PluginError("page check failed:\n" + "\n".join(str(p) for p in problems))
        self._glossary = self._load_glossary()
        if self._glossary is not None:
            for name in ("abbr", "i18n.tooltips"):  # tooltips replaces abbr's processor
                if name not in config.markdown_extensions:
                    config.markdown_extensions.append(name)
        return config

    def _load_glossary(self) -> Any:
        from i18n.glossary import GlossaryError, load_glossary

        path = PROJECT / self.config.i18n_dir / "glossary.yml"
        if not path.is_file():
            return None
        try:
            return load_glossary(path)
        except GlossaryError as error:
            raise PluginError(f"the glossary cannot be read:\n{error}") from None

    # Why: a page must be complete without JavaScript, so widgets and numbers render here.
    def on_page_markdown(self, markdown: str, page: Any, config: Any, files: Any) -> str:
        if not self.config.enabled:
            return markdown
        lang = self._language(config)
        loc = locale(lang, str(PROJECT / self.config.i18n_dir))
        where = page.file.src_uri
        slots: dict[str, str] = {}
        seen: set[str] = set()
        front = _front_lines(page)  # error messages count lines in the file as written

        def widget(match: re.Match[str]) -> str:
            name = match["name"]
            line = front + markdown.count("\n", 0, match.start()) + 1
            if name not in REGISTRY:
                raise PluginError(f"{where}:{line}: unknown widget {name!r}; known: {', '.join(REGISTRY)}")
            if name in seen:
                raise PluginError(f"{where}:{line}: widget {name!r} appears twice on one page")
            seen.add(name)
            overrides = _options(match["body"], where, line)
            try:
                html = render_widget(name, overrides, loc)
            except ValueError as error:
                raise PluginError(f"{where}:{line}: {error}") from None
            token = SLOT.format(len(slots))
            slots[token] = html
            # Keep the number of lines, so that later messages name the right line.
            return f"{match['indent']}{token}" + "\n" * match.group(0).count("\n")

        def macro(match: re.Match[str]) -> str:
            line = front + markdown.count("\n", 0, match.start()) + 1
            overrides = dict(arg.split("=", 1) for arg in match["args"].split())
            try:
                return markdown_text(format_value(match["name"], match["key"], overrides, loc))
            except ValueError as error:
                raise PluginError(f"{where}:{line}: {{{{ {match['name']}.{match['key']} }}}}: {error}") from None

        # Exercises first, on the text as written, so their errors name the right line.
        markdown = replace_exercises(markdown, where, _page_slug(where, lang), loc, slots, front)
        markdown = FENCE.sub(widget, markdown)
        unclosed = OPEN_FENCE.search(markdown)
        if unclosed:
            line = front + markdown.count("\n", 0, unclosed.start()) + 1
            raise PluginError(f"{where}:{line}: the ```{unclosed['kind']} fence opened here is never closed: "
                              f"end it with a line ``` at the same indentation")
        markdown = MACRO.sub(macro, markdown)
        if "{{" in markdown.replace("\\{{", ""):
            line = front + markdown.count("\n", 0, markdown.index("{{")) + 1
            raise PluginError(f"{where}:{line}: '{{{{' that is not a widget macro: write {{{{ widget.output }}}}, "
                              f"e.g. {{{{ zero.reduction }}}}")
        self._slots[page.file.src_uri] = slots
        written_in = getattr(page.file, "locale", None) or lang
        if written_in != lang:
            self._fallback[page.file.src_uri] = written_in
        return self._glossary_markdown(markdown, page, written_in, config)

    # Why: a term is a keyboard stop only in the chapter about it (i18n.tooltips).
    def on_nav(self, nav: Any, config: Any, files: Any) -> Any:
        self._nav_order = [p.file for p in nav.pages]
        self._main_page: dict[str, dict[str, str]] = {}
        return nav

    def _focusable_here(self, page: Any, lang: str) -> list[str]:
        """The definitions whose terms this page uses more often than any other page (the
        earlier page in the navigation on a tie; the home page, which names every idea in
        passing, never), counted in the Markdown without code and headings, as
        i18n.tooltips marks them. The first chapter names nearly every term once, so
        "the first page that uses it" would put all the keyboard stops there."""
        from collections import Counter

        from i18n.glossary import abbreviations, term_pattern

        if lang not in self._main_page:
            abbrs = abbreviations(self._glossary, lang)
            pattern = term_pattern(abbrs)
            best: dict[str, tuple[int, str]] = {}
            for file in getattr(self, "_nav_order", [])[1:]:
                text = PROSE_ONLY.sub(" ", Path(file.abs_src_path).read_text(encoding="utf-8"))
                uses = Counter(abbrs[m.group(0)] for m in pattern.finditer(text) if m.group(0) in abbrs)
                for title, count in uses.items():
                    if count > best.get(title, (0, ""))[0]:
                        best[title] = (count, file.src_uri)
            self._main_page[lang] = {title: uri for title, (_, uri) in best.items()}
        return [title for title, uri in self._main_page[lang].items() if uri == page.file.src_uri]

    def _glossary_markdown(self, markdown: str, page: Any, lang: str, config: Any) -> str:
        """Fill the glossary page's marker, or append the glossary's abbreviations."""
        from i18n.glossary import abbreviation_lines, render_glossary

        if GLOSSARY_MARKER.search(markdown):
            if self._glossary is None:
                raise PluginError(f"{page.file.src_uri}: <!-- glossary --> but there is no i18n/glossary.yml")
            table = render_glossary(self._glossary, lang)
            return GLOSSARY_MARKER.sub(lambda _: f"\n{table}\n", markdown)
        if self._glossary is None:
            return markdown
        if any(file.src_uri == page.file.src_uri for file in getattr(self, "_nav_order", [])):
            # MkDocs makes each page's Markdown instance from mdx_configs when it renders it.
            config.mdx_configs["i18n.tooltips"] = {"focusable": self._focusable_here(page, lang)}
        else:
            config.mdx_configs.pop("i18n.tooltips", None)
        return f"{markdown.rstrip()}\n\n{abbreviation_lines(self._glossary, lang)}\n"

    def on_page_content(self, html: str, page: Any, config: Any, files: Any) -> str:
        slots = self._slots.get(page.file.src_uri, {})
        for token, widget_html in slots.items():
            html = html.replace(f"<p>{token}</p>", widget_html)
        anchors = getattr(page, "present_anchor_ids", None)
        if isinstance(anchors, set):  # links to a widget or an exercise are valid anchors
            anchors.update(ELEMENT_ID.findall("".join(slots.values())))
        written_in = self._fallback.pop(page.file.src_uri, None)
        if written_in is not None:
            html = self._untranslated(html, page, config, files, written_in)
        return html

    # Why: a reader who gets the source text instead of a translation should know why,
    # and where to help.
    def _untranslated(self, html: str, page: Any, config: Any, files: Any, written_in: str) -> str:
        lang = self._language(config)
        directory = str(PROJECT / self.config.i18n_dir)
        loc = locale(lang, directory)
        source = locale(written_in, directory).t("meta.name")
        translate = files.get_file_from_path(TRANSLATE_PAGE) if files is not None else None
        link = ""
        if translate is not None:
            href = get_relative_url(translate.url, page.url)
            link = f' <a href="{href}">{loc.h("translation.help")}</a>'
        banner = (f'<div class="admonition info translation-missing" lang="{lang}" role="note">'
                  f'<p>{loc.h("translation.missing", source=source)}{link}</p></div>')
        title = re.match(r"\s*<h1\b.*?</h1>", html, re.S)
        at = title.end() if title else 0
        return f'<div lang="{written_in}">{html[:at]}{banner}{html[at:]}</div>'

    # Why: the 404 page is a template, not a page, and needs the same stylesheets and
    # accessibility fixes; MkDocs writes its links from the site root (it may be served
    # at any depth), so these are too. A host serves this one page for any missing
    # address, to a reader of either language: it says so in every language (the
    # `notfound.*` strings), links each home page and opens its search. Every language's build
    # writes it at the root, the last one winning: the default language's is kept (its
    # chrome, at its root).
    def on_post_template(self, output: str, template_name: str, config: Any) -> str:
        if template_name != "404.html" or not self.config.enabled:
            return output
        if self._prefix(config) and self._notfound_page is not None:
            return self._notfound_page
        if output.count(NOTFOUND_HEADING) != 1:
            raise PluginError(f"Material's 404.html changed (no `{NOTFOUND_HEADING}`): "
                              "update WidgetsPlugin.on_post_template for this Material version")
        messages = self._notfound(config)
        output = output.replace(NOTFOUND_HEADING, messages, 1)
        title = locale(self._language(config), str(PROJECT / self.config.i18n_dir)).h("notfound.title")
        output = re.sub(r"<title>", f"<title>{title} - ", output, count=1)
        self._notfound_page = _site_chrome(output, _site_root_url(config))
        return self._notfound_page

    def _notfound(self, config: Any) -> str:
        """The 404 page's content: one section per language, the page's own first."""
        i18n, current = self._i18n(config), self._language(config)
        default = i18n.default_language if i18n is not None else current
        root, directory = _site_root_url(config), str(PROJECT / self.config.i18n_dir)
        sections = []
        for code in dict.fromkeys([current, default, *self._other_languages(config)]):
            loc, home = locale(code, directory), root if code == default else f"{root}{code}/"
            heading = "h1" if not sections else "h2"
            # The page's own search box searches the page language's index only: the other
            # languages' readers search from their home page.
            search = "" if sections else f' <label class="md-button" for="__search">{loc.h("notfound.search")}</label>'
            sections.append(
                f'<section class="w-notfound" lang="{code}"><{heading}>{loc.h("notfound.title")}</{heading}>'
                f'<p>{loc.h("notfound.text")}</p><p>'
                f'<a class="md-button md-button--primary" href="{home}">{loc.h("notfound.home")}</a>{search}</p></section>')
        return "".join(sections)

    # Why: the stylesheet belongs in <head>, the runtime's settings and module at the end.
    def on_post_page(self, output: str, page: Any, config: Any) -> str:
        root = self._root_prefix(page, config)
        output = _site_chrome(output, root)
        if not self._slots.pop(page.file.src_uri, None):
            return output
        lang = self._language(config)
        loc = locale(lang, str(PROJECT / self.config.i18n_dir))
        reasons = {k: loc.t(f"runtime.reasons.{k}") for k in RUNTIME_REASONS}
        # {seconds} is filled in here, so the page's script formats no number.
        reasons["timeout"] = loc.t("runtime.reasons.timeout", seconds=loc.integer(self.config.stall_timeout_ms / 1000))
        settings = {
            "lang": lang,
            "wheel": f"{root}{self._wheel_path()}",
            "pyodide": f"{root}{self._pyodide_path()}",
            "stdlib": f"{root}{self._pyodide_path()}{self._stdlib().name}",
            "stallTimeoutMs": self.config.stall_timeout_ms,
            "files": self._runtime_files(),
            "strings": {**{k: loc.t(f"runtime.{k}") for k in ("loading", "progress", "pending", "error")},
                        "reasons": reasons},
            "exercise": {k: loc.t(f"exercise.{k}") for k in ("checking", "unavailable")},
        }
        tail = (f'<script type="application/json" id="widgets-config">{json_for_script(settings)}</script>'
                f'<script type="module" src="{root}assets/widgets/widgets.js"></script>')
        return output.replace("</body>", f"{tail}</body>", 1)

    # Why: the runtime is shared by every language, so it lives once at the site root.
    # After mkdocs-static-i18n (-100), whose post-build builds the other languages and then
    # merges their search entries: this runs last, when every page and the index exist.
    @event_priority(-110)
    def on_post_build(self, config: Any) -> None:
        if not self.config.enabled:
            return
        root = self._site_root(config)
        _sync_dir(ASSETS, root / "assets" / "widgets")
        pyodide = PROJECT / self.config.pyodide_dir
        missing = [f for f in PYODIDE_FILES if not (pyodide / f).is_file()]
        if missing:
            raise PluginError(f"Pyodide runtime not found in {pyodide} ({', '.join(missing)}); run `npm ci`")
        pyodide_dir = root / self._pyodide_path()
        if pyodide_dir.parent.exists():  # drop other versions' folders
            for old in pyodide_dir.parent.iterdir():
                if old != pyodide_dir:
                    shutil.rmtree(old) if old.is_dir() else old.unlink()
        for name in PYODIDE_FILES:
            if name != "python_stdlib.zip":  # the site ships the trimmed one instead
                _copy(pyodide / name, pyodide_dir / name)
        stdlib = self._stdlib()
        _copy(stdlib, pyodide_dir / stdlib.name)
        wheel, rel = self._wheel()
        wheels = root / "assets" / "wheels"
        if wheels.exists():
            shutil.rmtree(wheels)
        _copy(wheel, root / rel)
        from i18n.export import export_json

        export_json(PROJECT / self.config.i18n_dir, root / "assets" / "i18n")
        # One search index per language (after mkdocs-static-i18n merged them).
        split_search_index(root, self._other_languages(config))
        # Material builds its search index when the search box is first opened.
        try:
            defer_search_index(root)
        except ValueError as error:
            raise PluginError(str(error)) from error
        # Last: the CSP hashes the theme's inline scripts in the pages written so far (the
        # last language's build sees them all); any other inline script stops the build.
        try:
            write_headers(root)
        except UnknownScript as error:
            raise PluginError(str(error)) from None
        # After every file is final: the .br/.gz copies that hosts serve as they are.
        from .compress import compress_site

        compress_site(root, PROJECT / "build" / "compress-cache")

    # -- helpers ---------------------------------------------------------------------------
    def _i18n(self, config: Any) -> Any:
        return config.plugins.get("i18n")

    def _other_languages(self, config: Any) -> list[str]:
        """The built languages other than the default one (their folders in the site)."""
        i18n = self._i18n(config)
        if i18n is None:
            return []
        return [lang.locale for lang in i18n.config.languages if not lang.default and lang.build]

    def _language(self, config: Any) -> str:
        i18n = self._i18n(config)
        if i18n is not None and i18n.current_language:
            return i18n.current_language
        return config.theme.get("language") or "id"

    def _prefix(self, config: Any) -> str:
        """The language folder of the current build ('' for the default language)."""
        i18n = self._i18n(config)
        if i18n is None or i18n.is_default_language_build:
            return ""
        return i18n.current_language

    def _site_root(self, config: Any) -> Path:
        site = Path(config.site_dir)
        prefix = self._prefix(config)
        return site.parent if prefix and site.name == prefix else site

    def _root_prefix(self, page: Any, config: Any) -> str:
        """The relative URL from `page` to the site root (works under any sub-path)."""
        return "../" * page.url.count("/")  # page.url already starts with "zh/" for zh pages

    def _source_key(self) -> str:
        digest = hashlib.sha256()
        for folder in PACKAGES:
            for path in sorted((PROJECT / folder).rglob("*.py")):
                digest.update(path.relative_to(PROJECT).as_posix().encode())
                digest.update(path.read_bytes())
        digest.update((PROJECT / "pyproject.toml").read_bytes())
        return digest.hexdigest()

    def _runtime_files(self) -> dict[str, int]:
        """The files the runtime downloads with their sizes in bytes, so the page can show
        how much has arrived: Pyodide's wasm, standard library and lock file, the wheel."""
        pyodide = PROJECT / self.config.pyodide_dir
        files = {name: (pyodide / name).stat().st_size for name in ("pyodide.asm.wasm", "pyodide-lock.json")}
        stdlib = self._stdlib()
        files[stdlib.name] = stdlib.stat().st_size
        wheel, _ = self._wheel()
        files[wheel.name] = wheel.stat().st_size
        return files

    def _pyodide_path(self) -> str:
        """Where Pyodide lives in the site: a folder named after the pinned version, so a
        host may cache it for a year and an upgrade gets new URLs."""
        package = json.loads((PROJECT / self.config.pyodide_dir / "package.json").read_text(encoding="utf-8"))
        return f"assets/pyodide/{package['version']}/"

    def _wheel(self) -> tuple[Path, str]:
        """The built wheel and where it lives in the site; the folder is its content hash,
        so a new build gets a new URL and the old one can be cached for as long as a host
        likes. Built once per build: every page then names the same wheel, even if a
        source file changes while the build runs."""
        if getattr(self, "_wheel_rel", None) is None:
            wheel = self._build_wheel()
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
            self._wheel_rel = (wheel, f"assets/wheels/{digest}/{wheel.name}")
        return self._wheel_rel

    def _stdlib(self) -> Path:
        """Pyodide's standard library trimmed to what the widgets import (traced and
        verified in Pyodide under Node; `widgets.build.stdlib`), once per build."""
        if getattr(self, "_stdlib_zip", None) is None:
            from i18n.export import export_json

            from .stdlib import StdlibError, trimmed_stdlib

            wheel, _ = self._wheel()
            with tempfile.TemporaryDirectory(prefix="dtbook-strings-") as tmp:
                export_json(PROJECT / self.config.i18n_dir, Path(tmp))
                try:
                    self._stdlib_zip = trimmed_stdlib(PROJECT / self.config.pyodide_dir, wheel, Path(tmp))
                except StdlibError as error:
                    raise PluginError(f"trimmed standard library: {error}") from error
        return self._stdlib_zip

    def _wheel_path(self) -> str:
        return self._wheel()[1]

    def _build_wheel(self) -> Path:
        """The project wheel, from a standard PEP 517 build (rebuilt when sources change)."""
        key = self._source_key()
        cached = _WHEELS.get(key)
        if cached is not None and cached.exists():
            return cached
        out = Path(tempfile.mkdtemp(prefix="dtbook-wheel-"))
        env = {**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "315532800")}
        with tempfile.TemporaryDirectory(prefix="dtbook-src-") as tmp:
            # Build from a clean copy so no build/ or *.egg-info lands in the work tree.
            src = Path(tmp) / "src"
            src.mkdir()
            for name in ("pyproject.toml", "README.md"):
                shutil.copy2(PROJECT / name, src / name)
            for folder in PACKAGES:
                shutil.copytree(PROJECT / folder, src / folder,
                                ignore=shutil.ignore_patterns("__pycache__", "assets", "*.yml"))
            result = subprocess.run(
                [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)],
                capture_output=True, text=True, env=env,
            )
        if result.returncode != 0:
            raise PluginError(f"building the wheel failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
        wheels = sorted(out.glob("*-py3-none-any.whl"))
        if len(wheels) != 1:
            raise PluginError(f"expected one py3-none-any wheel in {out}, found {wheels}")
        _store_entries(wheels[0])
        _WHEELS[key] = wheels[0]
        log.info(f"built {wheels[0].name}")
        return wheels[0]


def _site_root_url(config: Any) -> str:
    """The site root as a URL path (`/`, or site_url's path): where the 404 page links from."""
    from urllib.parse import urlsplit

    root = urlsplit(config.site_url or "/").path or "/"
    return root if root.endswith("/") else root + "/"


def _site_chrome(output: str, root: str) -> str:
    """What every page gets (`root`: the URL of the site root from the page): the site and
    print stylesheets, the run-time accessibility fixes, an accessible name for the search
    dialog (its input's placeholder), and no <link rel=alternate>: Material fetches
    `sitemap.xml` beside each, and the i18n plugin's alternates are pages, not site roots,
    so each fetch would be a 404 (the language switcher's own <a hreflang> links stay)."""
    output = ALTERNATE.sub("", output)
    output = output.replace("</head>", f'<link rel="stylesheet" href="{root}assets/widgets/widgets.css">'
                            f'<link rel="stylesheet" href="{root}assets/widgets/print.css" media="print"></head>', 1)
    output = output.replace("</body>", f'<script type="module" src="{root}assets/widgets/site.js"></script></body>', 1)
    placeholder = re.search(r'class="md-search__input"[^>]*placeholder="([^"]*)"', output)
    if placeholder:
        output = output.replace('<div class="md-search" data-md-component="search" role="dialog">',
                                f'<div class="md-search" data-md-component="search" role="dialog" aria-label="{placeholder.group(1)}">', 1)
    return output


# -- what a page may hold ----------------------------------------------------------------------
OPEN_FENCE = re.compile(r"^[ \t]*```(?P<kind>widget|exercise)\b.*$", re.M)
ELEMENT_ID = re.compile(r'\bid="([^"]+)"')
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]])")


def markdown_text(text: str) -> str:
    """A macro's value as Markdown that renders as exactly this text: catalog strings
    (units, number words) are text, never markup or emphasis."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def json_for_script(data: Any) -> str:
    """`data` as JSON that is safe inside `<script type="application/json">`: no `<`,
    `>` or `&` at all (so neither `</script>`, `<!--` nor `<script` can end or open a
    tag in the HTML parser), and no line separators."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


# -- exercises ---------------------------------------------------------------------------------
def replace_exercises(markdown: str, where: str, slug: str, loc: Any, slots: dict[str, str], offset: int = 0) -> str:
    """Replace every ```` ```exercise ```` fence by a slot for its form (`slots` maps the
    slot token to the form's HTML, as for widgets), keeping the number of lines. Errors
    name the file and the line (`offset`: lines of front matter above `markdown`)."""
    count = 0

    def exercise(match: re.Match[str]) -> str:
        nonlocal count
        line = offset + markdown.count("\n", 0, match.start()) + 1
        try:
            ex = parse_exercise(match["body"])
            answer = validate_exercise(ex)
        except ExerciseError as error:
            at = line + error.offset if error.offset else line
            raise PluginError(f"{where}:{at}: exercise: {error}") from None
        solution = SOLUTION.match(markdown, match.end() + 1)
        if solution is None or len(solution["indent"]) != len(match["indent"]):
            raise PluginError(f"{where}:{line}: exercise: the fence must be followed by its worked solution, a "
                              f'`??? success "…"` block at the same indentation')
        count += 1
        token = SLOT.format(len(slots))
        slots[token] = render_form(ex, answer, f"{slug}-{count}", loc)
        return f"{match['indent']}{token}" + "\n" * match.group(0).count("\n")

    return EXERCISE.sub(exercise, markdown)


def _page_slug(src_uri: str, lang: str) -> str:
    """`data-parallelism` for `data-parallelism.md` (or `zh/data-parallelism.md`)."""
    from i18n.pages import page_slug

    prefix = f"{lang}/"
    return page_slug(src_uri[len(prefix):] if src_uri.startswith(prefix) else src_uri)


def _front_lines(page: Any) -> int:
    """How many lines of front matter MkDocs removed above `markdown` (for line numbers):
    the source's lines above the body that MkDocs's own front-matter reader returns."""
    from mkdocs.utils.meta import get_data

    try:
        source = Path(page.file.abs_src_path).read_text(encoding="utf-8-sig").replace("\r\n", "\n")
    except (AttributeError, OSError, TypeError):
        return 0
    body, _ = get_data(source)
    if not source.endswith(body):
        return 0
    return source[: len(source) - len(body)].count("\n")


def _options(body: str, where: str, line: int) -> dict[str, str]:
    """`key: value` lines inside a widget fence: overrides of the control defaults."""
    options = {}
    for offset, text in enumerate(body.splitlines(), start=1):
        text = text.strip()
        if not text or text.startswith("#"):
            continue
        if ":" not in text:
            raise PluginError(f"{where}:{line + offset}: expected `control: value` in the widget fence, got {text!r}")
        key, value = (part.strip().strip("\"'") for part in text.split(":", 1))
        options[key] = value
    return options


def _store_entries(archive: Path) -> None:
    """Rewrite a zip (the wheel) with its entries stored, not deflated, same names, bytes
    and dates: the host's Brotli then compresses the whole archive across files
    (0.31 MB deflated, 0.21 MB stored and Brotli'd), and the worker unpacks it as before."""
    import zipfile

    stored = archive.with_suffix(".stored")
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(stored, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_STORED)
    stored.replace(archive)


def _copy(source: Path, target: Path) -> None:
    if target.exists() and target.stat().st_size == source.stat().st_size and target.read_bytes() == source.read_bytes():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _sync_dir(source: Path, target: Path) -> None:
    for path in sorted(source.iterdir()):
        if path.is_file():
            _copy(path, target / path.name)
