"""pluie_core: the PLUIE metric, baselines, statistics and pair-file parsing.

No Streamlit and no database in here: every number the app shows can be
reproduced in a notebook with the same call.

The public API is the names of ``__all__``, each from the module ``_PUBLIC`` names::

    from pluie_core import PluieScorer, load_pairs

Static tools (mypy, pyright, an editor) read them from the ``if TYPE_CHECKING:`` imports below,
exactly as they would read eager imports. At run time the package imports none of them until one is
asked for (the module ``__getattr__``, PEP 562), so ``import pluie_core``, which every web page and the
worker do through its submodules, costs no pandas, numpy or torch: eager imports of these names took
about 0.5 s (pluie_core.io and pluie_core.labels import pandas). tests/test_public_api.py checks that the
two lists agree, that each name resolves to its module's object, and that the import stays cheap.

``__version__`` is the package's version, and pyproject.toml reads it from here (``dynamic``): one
place to change it, the same in the checkout and in an installed copy. The package is typed (py.typed).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # what static tools see; kept in step with _PUBLIC by tests/test_public_api.py
    from pluie_core.baselines import BASELINES
    from pluie_core.diff import diff_html
    from pluie_core.io import PairFileError, guess_columns, load_pairs, read_table
    from pluie_core.judges import LLMJudge
    from pluie_core.labels import LEVELS, binarise
    from pluie_core.scorer import PluieError, PluieScorer
    from pluie_core.templates import get_template

# each public name -> the module that defines it, imported the first time the name is read
_PUBLIC = {
    "load_pairs": "pluie_core.io",
    "read_table": "pluie_core.io",
    "guess_columns": "pluie_core.io",
    "PairFileError": "pluie_core.io",
    "PluieScorer": "pluie_core.scorer",
    "PluieError": "pluie_core.scorer",
    "LLMJudge": "pluie_core.judges",
    "get_template": "pluie_core.templates",
    "BASELINES": "pluie_core.baselines",
    "LEVELS": "pluie_core.labels",
    "binarise": "pluie_core.labels",
    "diff_html": "pluie_core.diff",
}

__all__ = [
    "BASELINES",
    "LEVELS",
    "LLMJudge",
    "PairFileError",
    "PluieError",
    "PluieScorer",
    "binarise",
    "diff_html",
    "get_template",
    "guess_columns",
    "load_pairs",
    "read_table",
]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pluie_core' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
