"""Agreement, threshold and distribution statistics for the app's views.

Pure functions on arrays and DataFrames; no Streamlit, no database.

Conventions
- The agreement statistics take plain values: NaN is missing, every other value is a label (BIOSSES'
  4, Krippendorff's worked example's 4 ...). The rules of the app's five-level scale ("Don't know" is
  missing, the paraphrase binarisation) are applied where those labels are read, by
  ``pluie_core.labels.ordinal_levels`` / ``binarise_levels`` (``pluie_core.analysis.agreement_matrix``).
- Binary labels: 1 = paraphrase, 0 = non-paraphrase (``binarise_matrix`` cuts plain values).
- A pair is predicted a paraphrase when its score is at or above the threshold; with
  ``higher_is_positive=False`` (distances such as normalised Levenshtein) at or below it.
- Matrices of labels: ``levels_to_matrix`` gives items x annotators (the layout of the pages and of
  Cohen/Fleiss); ``krippendorff_alpha`` takes annotators x items, the krippendorff library's layout.
- Errors a user can cause (no shared items, a single class, ...) raise ``StatsError`` with a sentence
  meant for the page. Tables over many groups put NaN and say why in a ``note`` column instead.

Modules, each on one concern (a module imports only those above it):
- ``errors``: ``StatsError``, ``StatsWarning``;
- ``matrices``: label rows as matrices, binarisation, majority, category counts;
- ``reliability``: percent agreement, Cohen's and Fleiss' κ, Krippendorff's α and its interval;
- ``versus``: humans versus the metric at a threshold;
- ``thresholds``: threshold curve, best threshold, figures at a threshold, ROC AUC;
- ``balanced_draw``: the paper's mixed balanced draw;
- ``per_class``: per-class means and standard deviations, correlation with the edit distance;
- ``disagreeing_pairs``: pairs where the metric and the reference, or the annotators, disagree.
Every public name is also importable from ``pluie_core.stats`` itself, as it was when this was one module.
"""

from __future__ import annotations

from pluie_core.stats.balanced_draw import PAPER_PER_CLASS, PerScore, mixed_balanced_draw
from pluie_core.stats.disagreeing_pairs import disagreements, human_disagreements
from pluie_core.stats.errors import StatsError, StatsWarning
from pluie_core.stats.matrices import (
    binarise_matrix,
    category_counts,
    cell_table,
    item_slots,
    levels_to_matrix,
    majority_binary_vector,
)
from pluie_core.stats.per_class import class_summary, edit_distance_correlation, format_p
from pluie_core.stats.reliability import (
    PairwiseAgreement,
    cohen_kappa,
    fleiss_kappa,
    kappa_from_confusion,
    krippendorff_alpha,
    krippendorff_alpha_ci,
    krippendorff_alpha_ci_from_patterns,
    pairwise_kappa,
    percent_agreement,
)
from pluie_core.stats.thresholds import best_threshold, metrics_at, roc_auc, threshold_curve
from pluie_core.stats.versus import human_vs_model, human_vs_model_by_annotator, human_vs_model_table, positions_by

__all__ = [
    "StatsError",
    "StatsWarning",
    "levels_to_matrix",
    "item_slots",
    "binarise_matrix",
    "majority_binary_vector",
    "category_counts",
    "percent_agreement",
    "cohen_kappa",
    "PairwiseAgreement",
    "pairwise_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "krippendorff_alpha_ci_from_patterns",
    "human_vs_model",
    "human_vs_model_table",
    "human_vs_model_by_annotator",
    "positions_by",
    "threshold_curve",
    "best_threshold",
    "metrics_at",
    "roc_auc",
    "PAPER_PER_CLASS",
    "mixed_balanced_draw",
    "class_summary",
    "edit_distance_correlation",
    "disagreements",
    "human_disagreements",
    # public before the split, used by name (db.analysis, pluie_core.evaluation.preference, the pages)
    "cell_table",
    "kappa_from_confusion",
    "format_p",
    "PerScore",
]
