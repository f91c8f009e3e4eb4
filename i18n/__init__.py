"""Tools for translators: the widget strings (``i18n/<lang>.yml``), the pages
(``docs/<lang>/``) and the glossary (``i18n/glossary.yml``).

Run ``python -m i18n check`` after editing; every problem is printed as
``i18n/zh.yml:9: why.tokens.label: missing key (...)`` or
``docs/zh/zero.md:63: widgets: missing widget 'zero' (...)``. ``python -m i18n status``
prints how complete each language is; ``python -m i18n stamp docs/zh/X.md`` records that
a translation is up to date with its source. Modules: ``catalog`` (reading a catalog),
``check`` (catalogs against the reference), ``export`` (JSON for the browser), ``pages``
(page skeletons, staleness, stamping), ``glossary`` (the glossary and term checks),
``tooltips`` (the Markdown extension for hover definitions), ``status`` (the table).
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
