"""Agreement of metrics with human preferences between two candidates for one source (*-PLUIE,
section 3.2 and table 2).

A preference item is (source, candidate A, candidate B, preferred = "A" / "B" / "tie"). The pairs
(source, A) and (source, B) are ordinary sentence pairs, scored by the ordinary runs; a metric
prefers the candidate it scores as more similar (higher, or lower for a distance), and calls a tie
when the two scores differ by at most ε. Per metric:

- pairwise accuracy with tie calibration (Deutsch, Foster & Freitag 2023, "Ties matter"): the share
  of items where the metric's decision (A, B or tie) equals the human one, at the ε that maximises
  it (ε = 0: ties only on equal scores, also reported);
- Cramér's V (scipy.stats.contingency.association) and Cohen's κ (scikit-learn) between the
  metric's decisions at that ε and the human preferences, over the three categories.

``load_preferences`` reads a preference file: any table ``pluie_core.io.read_table`` reads with
columns for the source, the two candidates and the preference, or a ParaReval JSONL file.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from pluie_core.formats.common import PairFileError
from pluie_core.stats.errors import StatsError
from pluie_core.stats.reliability import kappa_from_confusion

__all__ = [
    "CHOICES",
    "PREFERENCE_COLUMNS",
    "load_preferences",
    "preferences_from_table",
    "parse_preferred",
    "metric_decisions",
    "tie_calibration",
    "preference_agreement",
    "agreement_table",
]

CHOICES = ("A", "B", "tie")
PREFERENCE_COLUMNS = ["source", "candidate_a", "candidate_b", "preferred"]
AGREEMENT_COLUMNS = [
    "metric",
    "n",
    "accuracy",
    "epsilon",
    "accuracy_calibrated",
    "cramers_v",
    "kappa",
    "metric_ties",
    "note",
]
# recognised column names (lower-cased, spaces / dashes / dots as underscores), first match wins
NAMES = {
    "source": ["source", "src", "original", "original_paragraph", "original_sentence", "prompt", "context", "input"],
    "candidate_a": [
        "candidate_a",
        "a",
        "option_a",
        "hypothesis_a",
        "output_a",
        "response_a",
        "model_a_paragraph",
        "text_a",
        "candidate1",
        "candidate_1",
    ],
    "candidate_b": [
        "candidate_b",
        "b",
        "option_b",
        "hypothesis_b",
        "output_b",
        "response_b",
        "model_b_paragraph",
        "text_b",
        "candidate2",
        "candidate_2",
    ],
    "preferred": ["preferred", "preference", "winner", "choice", "extended_choice", "human_preference", "label"],
    "system_a": ["system_a", "model_a"],
    "system_b": ["system_b", "model_b"],
}
SYNONYMS = {
    "a": "A",
    "b": "B",
    "tie": "tie",
    "both": "tie",
    "neither": "tie",
    "none": "tie",
    "equal": "tie",
    "draw": "tie",
    "=": "tie",
}


def _normalised(column) -> str:
    import re

    return re.sub(r"[\s\-.]+", "_", str(column).strip().lower())


def _cell_text(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value).strip()


def parse_preferred(values) -> list[str]:
    """Preferences as "A", "B" or "tie" (any case; both / neither / none / equal / draw mean tie).
    Raises PairFileError naming the first row with anything else."""
    out = []
    for row, value in enumerate(values, start=1):
        key = _cell_text(value).lower()
        if key not in SYNONYMS:
            shown = repr(value) if key else "nothing"
            raise PairFileError(f"Row {row}: the preference must be A, B or tie; found {shown}.")
        out.append(SYNONYMS[key])
    return out


def preferences_from_table(table: pd.DataFrame, columns: Optional[Mapping[str, str]] = None) -> pd.DataFrame:
    """A table's rows as preference items: columns source, candidate_a, candidate_b, preferred
    ("A" / "B" / "tie"), system_a / system_b when the table names the candidates' systems, and every
    other column unchanged. ``columns`` maps those names to the table's; without it the usual names
    are recognised (NAMES)."""
    by_key: dict = {}
    for column in table.columns:
        by_key.setdefault(_normalised(column), column)
    mapping = {}
    for key, names in NAMES.items():
        if columns and columns.get(key):
            if columns[key] not in table.columns:
                raise PairFileError(
                    f"Column {columns[key]!r} is not in the file; its columns are: "
                    f"{', '.join(map(str, table.columns))}."
                )
            mapping[key] = columns[key]
            continue
        found = next((by_key[n] for n in names if n in by_key and by_key[n] not in mapping.values()), None)
        if found is not None:
            mapping[key] = found
    missing = [k for k in PREFERENCE_COLUMNS if k not in mapping]
    if missing:
        raise PairFileError(
            f"No {' / '.join(m.replace('_', ' ') for m in missing)} column: a preference file needs "
            f"columns source, candidate_a, candidate_b and preferred (A, B or tie). The file's "
            f"columns are: {', '.join(map(str, table.columns))}."
        )
    if table.empty:
        raise PairFileError("The file holds no preference.")
    out = pd.DataFrame(index=table.index)
    for key in ("source", "candidate_a", "candidate_b"):
        text = table[mapping[key]].map(_cell_text)
        empty = text.eq("").to_numpy()
        if empty.any():
            raise PairFileError(f"Row {int(np.argmax(empty)) + 1}: the {key.replace('_', ' ')} is empty.")
        out[key] = text
    out["preferred"] = parse_preferred(table[mapping["preferred"]].tolist())
    for key in ("system_a", "system_b"):
        if key in mapping:
            out[key] = table[mapping[key]].astype(object).where(table[mapping[key]].notna(), None)
    used = set(mapping.values())
    for column in table.columns:
        if column not in used and str(column) not in out.columns:
            out[str(column)] = table[column]
    return out.reset_index(drop=True)


def _from_parareval(table: pd.DataFrame) -> pd.DataFrame:
    """ParaReval as read_table gives it (two rows per record, revision A and B): one item per
    record, preferred from the annotator's extended choice (A, B or Tie)."""
    sides = {side: table[table["revision"] == side].reset_index(drop=True) for side in ("A", "B")}
    a, b = sides["A"], sides["B"]
    return preferences_from_table(
        pd.DataFrame(
            {
                "source": a["source"],
                "candidate_a": a["hypothesis"],
                "candidate_b": b["hypothesis"],
                "preferred": a["extended_choice"],
                "system_a": a["model"],
                "system_b": b["model"],
                "id_pairing": a["id_pairing"],
                "instruction": a["instruction"],
            }
        )
    )


def load_preferences(path_or_buffer, columns: Optional[Mapping[str, str]] = None) -> pd.DataFrame:
    """Read a preference file (CSV, TSV, JSON, JSONL, Excel, or ParaReval's JSONL) into
    ``preferences_from_table``'s frame. Raises PairFileError with a sentence for any problem."""
    from pluie_core.io import read_table

    table = read_table(path_or_buffer)
    if table.attrs.get("format") == "parareval":
        return _from_parareval(table)
    return preferences_from_table(table, columns)


# --------------------------------------------------------------------------- agreement


def _oriented_difference(score_a, score_b, higher_is_similar: bool) -> np.ndarray:
    a, b = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    if a.shape != b.shape:
        raise StatsError("The scores of candidates A and B must have the same length (one of each per item).")
    return a - b if higher_is_similar else b - a  # > 0: the metric prefers A


def metric_decisions(score_a, score_b, higher_is_similar: bool = True, epsilon: float = 0.0) -> np.ndarray:
    """ "A", "B" or "tie" per item: the candidate the metric scores as more similar, a tie when the
    scores differ by at most ``epsilon``; None where a score is missing."""
    d = _oriented_difference(score_a, score_b, higher_is_similar)
    out = np.where(np.abs(d) <= epsilon, "tie", np.where(d > 0, "A", "B")).astype(object)
    out[np.isnan(d)] = None
    return out


def _human(preferred) -> np.ndarray:
    human = np.asarray(list(preferred), dtype=object)
    unknown = set(human.tolist()) - set(CHOICES)
    if unknown:
        raise StatsError(f"Human preferences must be A, B or tie; found {sorted(map(str, unknown))[0]!r}.")
    return human


def tie_calibration(preferred, score_a, score_b, higher_is_similar: bool = True) -> dict:
    """The ε that maximises pairwise accuracy counting ties (Deutsch et al. 2023): the metric calls
    a tie when |score difference| ≤ ε. Candidates are 0 and every |difference|; on equal accuracy
    the smallest ε wins. Returns {"epsilon", "accuracy", "accuracy_no_ties" (ε = 0), "n"}."""
    human = _human(preferred)
    d = _oriented_difference(score_a, score_b, higher_is_similar)
    kept = ~np.isnan(d)
    human, d = human[kept], d[kept]
    if len(d) == 0:
        raise StatsError("No preference item has scores for both candidates yet.")
    a = np.abs(d)
    is_tie = human == "tie"
    agrees = ((human == "A") & (d > 0)) | ((human == "B") & (d < 0))
    # at ε ≥ |d|: a human tie becomes right (+1), a sign that agreed becomes a (wrong) tie (-1)
    delta = np.where(is_tie, 1, np.where(agrees, -1, 0))
    order = np.argsort(a, kind="stable")
    sorted_a, gains = a[order], np.cumsum(delta[order])
    last = np.r_[sorted_a[1:] != sorted_a[:-1], True]  # the last item of each distinct |d|
    candidates, correct = sorted_a[last], agrees.sum() + gains[last]
    if candidates[0] > 0:  # ε = 0 with no equal scores: no metric tie at all
        candidates, correct = np.r_[0.0, candidates], np.r_[agrees.sum(), correct]
    best = int(np.argmax(correct))
    return {
        "epsilon": float(candidates[best]),
        "accuracy": float(correct[best] / len(d)),
        "accuracy_no_ties": float(correct[0] / len(d)),
        "n": int(len(d)),
    }


def _cramers_v(human: np.ndarray, metric: np.ndarray) -> float:
    from scipy.stats.contingency import association

    table = pd.crosstab(human, metric).to_numpy()
    if min(table.shape) < 2:
        return float("nan")  # one side makes a single kind of choice: no association to measure
    return float(association(table, method="cramer"))


def _kappa(human: np.ndarray, metric: np.ndarray) -> float:
    """sklearn's cohen_kappa_score(human, metric, labels=CHOICES), NaN where undefined (a single category
    on both sides): the same formula on a confusion matrix of the choices' codes (pluie_core.stats),
    without sklearn's validation of every string (0.5 s a run at 500,000 items; the tests compare)."""
    codes = {choice: i for i, choice in enumerate(CHOICES)}
    a = pd.Series(np.asarray(human, dtype=object)).map(codes).to_numpy(dtype=float)
    b = pd.Series(np.asarray(metric, dtype=object)).map(codes).to_numpy(dtype=float)
    both = ~np.isnan(a) & ~np.isnan(b)  # sklearn leaves out what is not one of the labels too
    if not both.any():
        return float("nan")
    confusion = np.bincount(
        a[both].astype(int) * len(CHOICES) + b[both].astype(int), minlength=len(CHOICES) ** 2
    ).reshape(len(CHOICES), len(CHOICES))
    try:
        return kappa_from_confusion(confusion, None)
    except StatsError:
        return float("nan")


def preference_agreement(
    preferred, score_a, score_b, higher_is_similar: bool = True, epsilon: Optional[float] = None
) -> dict:
    """One metric against the human preferences: {"n", "accuracy" (ε = 0), "epsilon", "accuracy_calibrated",
    "cramers_v", "kappa", "metric_ties", "note"}; V and κ are computed on the metric's decisions at the
    calibrated ε (or at ``epsilon`` when given, which also sets accuracy_calibrated)."""
    calibration = tie_calibration(preferred, score_a, score_b, higher_is_similar)
    human = _human(preferred)
    decisions = metric_decisions(
        score_a, score_b, higher_is_similar, calibration["epsilon"] if epsilon is None else epsilon
    )
    kept = decisions != None  # noqa: E711 (an object array of strings and None)
    human, decisions = human[kept], decisions[kept].astype(str)
    accuracy = calibration["accuracy"] if epsilon is None else float((human == decisions).mean())
    notes = []
    v, kappa = _cramers_v(human, decisions), _kappa(human, decisions)
    if np.isnan(v):
        notes.append("Cramér's V is undefined: the metric or the people make a single kind of choice here.")
    if np.isnan(kappa):
        notes.append("κ is undefined: a single category on both sides.")
    return {
        "n": calibration["n"],
        "accuracy": calibration["accuracy_no_ties"],
        "epsilon": calibration["epsilon"] if epsilon is None else float(epsilon),
        "accuracy_calibrated": accuracy,
        "cramers_v": v,
        "kappa": kappa,
        "metric_ties": int((decisions == "tie").sum()),
        "note": " ".join(notes),
    }


def agreement_table(
    preferred,
    scores_a: pd.DataFrame,
    scores_b: pd.DataFrame,
    higher_is_similar: Mapping[str, bool] | None = None,
    metrics: Optional[Sequence[str]] = None,
) -> pd.DataFrame:
    """``preference_agreement`` per metric: ``scores_a`` / ``scores_b`` hold one column per metric,
    the scores of candidate A and B of each item (row order of ``preferred``). One row per metric
    with columns AGREEMENT_COLUMNS; a metric without any scored item gets a note instead of figures."""
    higher_is_similar = higher_is_similar or {}
    rows = []
    for metric in metrics or list(scores_a.columns):
        try:
            row = preference_agreement(
                preferred, scores_a[metric].to_numpy(), scores_b[metric].to_numpy(), higher_is_similar.get(metric, True)
            )
        except StatsError as error:
            row = {"n": 0, "note": str(error)}
        rows.append({"metric": metric, **row})
    return pd.DataFrame(rows).reindex(columns=AGREEMENT_COLUMNS)
