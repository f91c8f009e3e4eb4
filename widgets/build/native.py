"""Native-side helpers: a Locale from the YAML catalogs (build time and tests only)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..framework.locale import Locale

I18N_DIR = Path(__file__).resolve().parents[2] / "i18n"


@lru_cache(maxsize=None)
def locale(lang: str, directory: str = str(I18N_DIR)) -> Locale:
    """The Locale of `lang`, read from `i18n/<lang>.yml` (PyYAML is native-only)."""
    import yaml

    path = Path(directory) / f"{lang}.yml"
    return Locale(lang, yaml.safe_load(path.read_text(encoding="utf-8")))
