"""Tools for translators: load, check and export the widget strings in ``i18n/<lang>.yml``.

Run ``python -m i18n check`` after editing a catalog; every problem is printed as
``i18n/zh.yml:9: why.tokens.label: missing key (...)``.
"""

from __future__ import annotations

from .catalog import Catalog, CatalogError, Entry, load_catalog
from .check import Problem, check
from .export import export_json, load_strings

__all__ = [
    "Catalog",
    "CatalogError",
    "Entry",
    "Problem",
    "check",
    "export_json",
    "load_catalog",
    "load_strings",
]
