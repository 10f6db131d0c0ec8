"""pluie_core: the PLUIE metric, baselines, statistics and pair-file parsing.

No Streamlit and no database in here: every number the app shows can be
reproduced in a notebook with the same call.

Heavy modules (torch, transformers) are imported lazily, so ``import pluie_core``
stays cheap for the web pages.
"""
from importlib import import_module

_LAZY = {
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
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pluie_core' has no attribute {name!r}")
