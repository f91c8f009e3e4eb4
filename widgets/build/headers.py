"""The HTTP headers the built site needs, written next to it for the static host.

* `_headers` (Netlify / Cloudflare Pages format) and `nginx.conf.example`, which also say
  how a host serves the precompressed `.br`/`.gz` copies (`widgets/build/compress.py`);
* a Content-Security-Policy with no 'unsafe-inline' and no 'unsafe-eval': scripts only
  from the site itself plus the SHA-256 of each inline script the theme writes, and
  'wasm-unsafe-eval' so that Pyodide can compile WebAssembly;
* long-lived caching for content-addressed files (the wheel's folder is its hash, the
  Pyodide folder carries its version), revalidation for everything else.

`tools/serve.py` applies `_headers` itself, so every browser test runs under this policy.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)
DATA_TYPES = ("application/json", "application/ld+json", "text/template")
JINJA_EXPRESSION = re.compile(r"\{\{.*?\}\}")


class UnknownScript(ValueError):
    """An inline script in the built site that neither the theme nor the book ships."""


def theme_scripts(templates: Path | None = None) -> list[re.Pattern[str]]:
    """The inline scripts Material for MkDocs writes, read from its own templates: one
    pattern per `<script>` of `templates/**/*.html` without `src`, where each Jinja
    expression (a base URL, a page's redirect target) may be any text without quotes or
    tags. This is the fixed list the policy may hash; the book itself ships no inline
    script (its settings are a JSON block, its code files under assets/widgets/)."""
    if templates is None:
        import material

        templates = Path(material.__file__).resolve().parent / "templates"
    patterns = []
    for path in sorted(templates.rglob("*.html")):
        for match in INLINE_SCRIPT.finditer(path.read_text(encoding="utf-8")):
            if "src=" in match["attrs"] or "type=" in match["attrs"] or "{%" in match["body"]:
                continue
            parts = JINJA_EXPRESSION.split(match["body"].strip())
            patterns.append(re.compile(r"[^\"'<>\\]*".join(re.escape(part) for part in parts)))
    return patterns


def inline_script_hashes(site: Path, allowed: list[re.Pattern[str]] | None = None) -> list[str]:
    """'sha256-…' of every distinct inline executable script in the site's HTML, each of
    which must be one of the theme's (`theme_scripts`); any other raises `UnknownScript`
    naming the file and line, so a script in a page or a string stops the build."""
    allowed = theme_scripts() if allowed is None else allowed
    hashes = set()
    for path in sorted(site.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for match in INLINE_SCRIPT.finditer(text):
            attrs = match["attrs"]
            if "src=" in attrs or any(f'type="{t}"' in attrs for t in DATA_TYPES):
                continue
            if not any(pattern.fullmatch(match["body"].strip()) for pattern in allowed):
                line = text.count("\n", 0, match.start()) + 1
                shown = path.relative_to(site).as_posix()
                raise UnknownScript(f"{shown}:{line}: an inline script that neither the theme nor the book ships: "
                                    f"{match.group()[:80]!r}; the site's policy would refuse it")
            digest = hashlib.sha256(match["body"].encode("utf-8")).digest()
            hashes.add("'sha256-" + base64.b64encode(digest).decode("ascii") + "'")
    return sorted(hashes)


def content_security_policy(site: Path) -> str:
    scripts = " ".join(["'self'", "'wasm-unsafe-eval'", *inline_script_hashes(site)])
    return "; ".join([
        "default-src 'self'",
        f"script-src {scripts}",
        "worker-src 'self'",
        "connect-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ])


# `_headers` rules match paths, not statuses, and neither Netlify nor Cloudflare Pages
# documents that a path's rule is left off its 404: a host may send "immutable" with an
# error too. So the runtime retries a failed download once past the browser's cache
# (worker.js), nginx's add_header (without `always`) skips errors by itself, and
# tools/serve.py sends `no-store` with every error.
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# Paths under the site root; every one is content-addressed when marked immutable.
CACHE_RULES = (
    ("/assets/pyodide/*", IMMUTABLE),  # folder named after the pinned Pyodide version
    ("/assets/wheels/*", IMMUTABLE),  # folder named after the wheel's hash
    ("/assets/javascripts/*", IMMUTABLE),  # Material's bundles carry a hash in the name
    ("/assets/stylesheets/*", IMMUTABLE),
)


def write_headers(site: Path) -> str:
    """Write `_headers` and `nginx.conf.example`; returns the policy."""
    csp = content_security_policy(site)
    lines = ["# Netlify / Cloudflare Pages: these hosts compress responses themselves (Brotli or gzip,",
             "# negotiated per request), so nothing here asks for it; the build's .br/.gz",
             "# copies beside the large files are for nginx (gzip_static, brotli_static) and",
             "# tools/serve.py, and are harmless here: no page links to them.",
             "/*", f"  Content-Security-Policy: {csp}", "  X-Content-Type-Options: nosniff",
             "  Referrer-Policy: no-referrer", f"  Cache-Control: {REVALIDATE}", ""]
    for pattern, value in CACHE_RULES:
        lines += [pattern, f"  Cache-Control: {value}", ""]
    (site / "_headers").write_text("\n".join(lines), encoding="utf-8")
    nginx = [
        "# Include in the server block that serves the built site (any sub-path works).",
        "types { application/wasm wasm; text/javascript mjs; }",
        "gzip on; gzip_types text/css text/javascript application/javascript application/json application/wasm image/svg+xml;",
        "# The build writes <file>.br and <file>.gz beside every large file: serve them as they are",
        "# with `gzip_static on; brotli_static on; gzip_vary on;` (brotli_static needs the ngx_brotli",
        "# module); the source tree's nginx.conf.example is a whole server block that does.",
        f'add_header Content-Security-Policy "{csp}" always;',
        'add_header X-Content-Type-Options "nosniff" always;',
        'add_header Referrer-Policy "no-referrer" always;',
        *(f'location ~ {pattern.replace("/*", "/")} {{ add_header Cache-Control "{value}"; '
          f'add_header Content-Security-Policy "{csp}" always; }}' for pattern, value in CACHE_RULES),
    ]
    (site / "nginx.conf.example").write_text("\n".join(nginx) + "\n", encoding="utf-8")
    return csp


def parse_headers_file(text: str) -> list[tuple[str, dict[str, str]]]:
    """The rules of a `_headers` file: (path pattern, headers) in order."""
    rules: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):  # a comment, as the hosts read it
            continue
        if not line[0].isspace():
            rules.append((line.strip(), {}))
        elif rules and ":" in line:
            name, value = line.strip().split(":", 1)
            rules[-1][1][name.strip()] = value.strip()
    return rules


def headers_for(rules: list[tuple[str, dict[str, str]]], path: str) -> dict[str, str]:
    """Headers for a URL path (relative to the site root), later rules overriding."""
    out: dict[str, str] = {}
    for pattern, headers in rules:
        prefix = pattern[:-1] if pattern.endswith("*") else None
        if (prefix is not None and path.startswith(prefix)) or path == pattern:
            out.update(headers)
    return out
