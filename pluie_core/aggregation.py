"""Labels with error bars: the aggregated label of each pair, its posterior and its uncertainty, and
each annotator's estimated reliability, by one of four methods.

- ``majority``: today's rule (pluie_core.labels.majority_level / majority_binary; a tie across the
  paraphrase boundary gives no label). Its posterior is the vote share of the label. The default.
- ``dawid_skene`` (Dawid & Skene, 1979), ``glad`` (Whitehill et al., 2009), ``mace`` (Hovy et al., 2013):
  crowd-kit's implementations (``crowdkit.aggregation``), called with the settings in ``SETTINGS``;
  nothing here re-implements them.

Each runs over the five levels (scale ``levels``: classes 0-3) or over the binarised labels (scale
``binary``: 0 / 1). "Don't know" and missing labels are left out, as in every other figure.

Gold checks: only Dawid–Skene takes known labels (crowd-kit's ``DawidSkene.fit(data, true_labels)``
fixes those pairs' posteriors to the known label at every EM step), so the gold answers *anchor* its
estimate of each annotator's confusion matrix. GLAD and MACE take no known labels: the gold answers are
*held out* and measure the estimate instead (``Aggregation.gold_accuracy``, the share of gold pairs
whose aggregated label is the known one). For Dawid–Skene that figure is not a measure (the anchored
pairs take their known label) and is reported as NaN.

A reviewer's decision always wins over any method: ``final_labels`` in pluie_core.review puts an
adjudicated level before the aggregated one; this module never sees decisions.

Per pair (``Aggregation.pairs``, indexed by pair_id): ``label`` (Int64, missing when there is none),
``posterior`` (the probability of that label), ``uncertainty`` (1 - the largest probability, 0 when every
label agrees under majority), ``n_labels`` (labels used). Per annotator (``Aggregation.annotators``):
``reliability`` in [0, 1], the method's estimate of the chance the annotator gives the true label:
majority: the share of their labels equal to the pair's majority label (pairs with no majority left out);
Dawid–Skene: the diagonal of their confusion matrix weighted by the class priors; GLAD: the mean over
their pairs of sigmoid(alpha * exp(beta)), the model's probability of a correct label; MACE: the
probability that they are not spamming (1 - crowd-kit's ``spamming_[:, 0]``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from pluie_core.labels import DONT_KNOW, ORDINAL_LEVELS, binarise_levels
from pluie_core.review import majority_levels

METHODS: tuple[str, ...] = ("majority", "dawid_skene", "glad", "mace")
METHOD_NAMES = {"majority": "Majority vote", "dawid_skene": "Dawid–Skene", "glad": "GLAD", "mace": "MACE"}
SCALES: tuple[str, ...] = ("levels", "binary")
DEFAULT_METHOD = "majority"
# crowd-kit's defaults, written out so the dataset card can name them
SETTINGS = {
    "majority": {},
    "dawid_skene": {"n_iter": 100, "tol": 1e-5},
    "glad": {"n_iter": 100, "tol": 1e-5},
    "mace": {"n_restarts": 10, "n_iter": 50, "method": "vb", "random_state": 0},
}


class AggregationError(ValueError):
    """A method or scale that does not exist; the message says so in a sentence."""


@dataclass(frozen=True)
class Aggregation:
    method: str
    scale: str
    pairs: pd.DataFrame
    probabilities: pd.DataFrame  # pair_id x classes
    annotators: pd.DataFrame
    anchored: bool = False  # gold answers were given to the method as known labels
    gold_accuracy: float = float("nan")
    settings: dict = field(default_factory=dict)

    def describe(self) -> str:
        """One sentence for the dataset card: the method, its settings and the reliabilities' spread."""
        name = METHOD_NAMES[self.method]
        scale = "the five levels" if self.scale == "levels" else "the binarised labels"
        text = f"{name} over {scale}"
        if self.settings:
            text += " (" + ", ".join(f"{k}={v}" for k, v in self.settings.items()) + ")"
        rel = self.annotators["reliability"].dropna() if len(self.annotators) else pd.Series(dtype=float)
        if len(rel):
            text += (f"; annotator reliability {rel.min():.2f}–{rel.max():.2f} (median {rel.median():.2f},"
                     f" {len(rel)} annotators)")
        if self.anchored:
            text += "; gold answers anchor the estimate"
        return text + "."


def check_method(method: str, scale: str = "levels") -> None:
    if method not in METHODS:
        raise AggregationError(f"{method!r} is not an aggregation method; choose one of {', '.join(METHODS)}.")
    if scale not in SCALES:
        raise AggregationError(f"{scale!r} is not a scale; choose levels or binary.")


def crowd_frame(labels: pd.DataFrame, scale: str = "levels") -> pd.DataFrame:
    """The labels as crowd-kit takes them: columns task (pair_id), worker (annotator), label; Don't know
    and missing labels left out, binarised when ``scale`` is binary. ``labels``: pair_id, annotator, level."""
    levels = pd.to_numeric(labels["level"], errors="coerce")
    keep = levels.notna() & (levels != DONT_KNOW)
    values = levels[keep].astype(int)
    if not values.isin(ORDINAL_LEVELS).all():
        raise AggregationError("Labels must be levels of the scale (0-4); found other values.")
    if scale == "binary":
        values = pd.Series(binarise_levels(values), index=values.index).astype(int)
    return pd.DataFrame({"task": labels.loc[keep, "pair_id"].to_numpy(),
                         "worker": labels.loc[keep, "annotator"].to_numpy(),
                         "label": values.to_numpy()})


def _classes(scale: str) -> list[int]:
    return [0, 1] if scale == "binary" else list(ORDINAL_LEVELS)


def _pairs_table(probas: pd.DataFrame, label: pd.Series, counts: pd.Series) -> pd.DataFrame:
    values = pd.to_numeric(label.reindex(probas.index), errors="coerce").to_numpy(dtype=float)
    known = ~np.isnan(values)
    column = np.searchsorted(probas.columns.to_numpy(), np.where(known, values, probas.columns[0]))
    posterior = pd.Series(np.where(known, probas.to_numpy(dtype=float)[np.arange(len(values)), column], np.nan),
                          index=probas.index)
    label = pd.Series(values, index=probas.index).astype("Float64").astype("Int64")
    return pd.DataFrame({"label": label, "posterior": posterior,
                         "uncertainty": 1.0 - probas.max(axis=1).astype(float),
                         "n_labels": counts.reindex(probas.index).fillna(0).astype(int)},
                        index=pd.Index(probas.index, name="pair_id"))


def _majority(data: pd.DataFrame, scale: str):
    """The majority rule, vectorised (one bincount over (pair, class) cells; no loop over pairs)."""
    classes = _classes(scale)
    pair_ids, index = np.unique(data["task"].to_numpy(), return_inverse=True)
    counts = np.bincount(index * len(classes) + data["label"].to_numpy(dtype=np.int64),
                         minlength=len(pair_ids) * len(classes)).reshape(len(pair_ids), len(classes))
    probas = pd.DataFrame(counts / counts.sum(axis=1, keepdims=True), index=pair_ids, columns=classes)
    if scale == "binary":  # pluie_core.labels.majority_binary: a tie gives none
        label = np.where(counts[:, 1] > counts[:, 0], 1.0, np.where(counts[:, 0] > counts[:, 1], 0.0, np.nan))
    else:  # pluie_core.labels.majority_level (pluie_core.review.majority_levels is its vectorised form)
        label = majority_levels(counts)
    label = pd.Series(label, index=pair_ids)
    per_label = label.to_numpy()[index]
    decided = ~np.isnan(per_label)
    agree = data["label"].to_numpy()[decided] == per_label[decided]
    reliability = pd.Series(agree, index=data["worker"].to_numpy()[decided]).groupby(level=0).mean()
    return probas, label, reliability.astype(float)


def _dawid_skene(data: pd.DataFrame, gold: Optional[pd.Series], settings: dict):
    from crowdkit.aggregation import DawidSkene
    model = DawidSkene(**settings)
    model.fit(data, true_labels=gold if gold is not None and len(gold) else None)
    errors, priors = model.errors_, model.priors_
    reliability = {}
    for worker in errors.index.get_level_values(0).unique():
        confusion = errors.loc[worker]
        reliability[worker] = float(sum(priors[k] * (confusion.at[k, k] if k in confusion.index else 0.0)
                                        for k in priors.index))
    return model.probas_, model.labels_, pd.Series(reliability, dtype=float)


def _glad(data: pd.DataFrame, settings: dict):
    from crowdkit.aggregation import GLAD
    model = GLAD(**settings)
    with np.errstate(divide="ignore", invalid="ignore"):  # one class only: crowd-kit takes log(0), harmlessly
        model.fit(data)
    a = model.alphas_.reindex(data["worker"]).to_numpy() * np.exp(model.betas_.reindex(data["task"]).to_numpy())
    reliability = pd.Series(1.0 / (1.0 + np.exp(-a)), index=data["worker"].to_numpy()).groupby(level=0).mean()
    return model.probas_, model.labels_, reliability.astype(float)


def _mace(data: pd.DataFrame, settings: dict):
    from crowdkit.aggregation import MACE
    model = MACE(**settings)
    model.fit(data)
    _, worker_names = pd.factorize(data["worker"])
    reliability = pd.Series(1.0 - model.spamming_[:, 0], index=worker_names, dtype=float)
    return model.probas_, model.labels_, reliability


def aggregate(labels: pd.DataFrame, method: str = DEFAULT_METHOD, scale: str = "levels",
              gold: Optional[pd.Series] = None, settings: Optional[dict] = None) -> Aggregation:
    """Aggregate ``labels`` (one row per label: pair_id, annotator, level 0-4) by ``method`` on ``scale``.
    ``gold``: known labels of the gold-check pairs (pair_id -> level 0-3 on the five-level scale, or 0 / 1
    when ``scale`` is binary); anchors Dawid–Skene, is held out for the others (see the module text).
    ``settings``: crowd-kit parameters that replace those of ``SETTINGS`` (e.g. fewer MACE restarts)."""
    check_method(method, scale)
    settings = {**SETTINGS[method], **(settings or {})}
    if method == "majority" and settings:
        raise AggregationError("Majority vote takes no settings.")
    data = crowd_frame(labels, scale)
    classes = _classes(scale)
    gold = None if gold is None else pd.to_numeric(gold, errors="coerce").dropna().astype(int)
    if gold is not None and scale == "binary" and len(gold) and gold.max() > 1:
        raise AggregationError("Binary gold answers are 0 or 1.")
    if data.empty:
        empty = pd.DataFrame(columns=["label", "posterior", "uncertainty", "n_labels"],
                             index=pd.Index([], name="pair_id"))
        return Aggregation(method, scale, empty, pd.DataFrame(columns=classes),
                           pd.DataFrame(columns=["reliability", "n_labels"], index=pd.Index([], name="annotator")),
                           settings=settings)
    anchored = False
    if method == "majority":
        probas, label, reliability = _majority(data, scale)
    elif method == "dawid_skene":
        in_data = None if gold is None else gold[gold.index.isin(data["task"])]
        anchored = in_data is not None and len(in_data) > 0
        probas, label, reliability = _dawid_skene(data, in_data, settings)
    elif method == "glad":
        probas, label, reliability = _glad(data, settings)
    else:
        probas, label, reliability = _mace(data, settings)
    probas = probas.reindex(columns=classes, fill_value=0.0).astype(float)
    probas.index.name = "pair_id"
    pairs = _pairs_table(probas, label, data.groupby("task").size())
    annotators = pd.DataFrame({"reliability": reliability,
                               "n_labels": data.groupby("worker").size()}).rename_axis("annotator")
    annotators["n_labels"] = annotators["n_labels"].fillna(0).astype(int)
    gold_accuracy = float("nan")
    if gold is not None and len(gold) and not anchored:
        held = pairs["label"].reindex(gold.index)
        known = held.notna()
        if known.any():
            gold_accuracy = float((held[known].astype(int) == gold[known]).mean())
    return Aggregation(method, scale, pairs, probas, annotators, anchored, gold_accuracy, settings)


# ---------------------------------------------------------------- adaptive overlap

def binary_vote_share(levels) -> float:
    """The posterior adaptive overlap reads per pair: the majority method's posterior on the binarised
    scale, i.e. the share of the pair's usable labels on the larger side (0.5-1). "Don't know" and missing
    labels are left out, as everywhere; a pair with no usable label has nothing to be confident about: 0."""
    binary = np.asarray(binarise_levels(list(levels)), dtype=float)
    binary = binary[~np.isnan(binary)]
    if not len(binary):
        return 0.0
    yes = float(binary.mean())
    return max(yes, 1.0 - yes)


def wants_another(levels, n_wanted: int, overlap_max: int, confidence: float) -> bool:
    """Adaptive overlap's rule for one pair: once it holds the answers it asked for (``levels``, one per
    annotator, "Don't know" included), it asks for one more annotator while it is under ``overlap_max``
    and binary_vote_share is below ``confidence``."""
    levels = list(levels)
    return len(levels) >= n_wanted and n_wanted < overlap_max and binary_vote_share(levels) < confidence
