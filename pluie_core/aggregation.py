"""Labels with error bars: the aggregated label of each pair, its posterior and its uncertainty, and
each annotator's estimated reliability, by one of four methods.

- ``majority``: today's rule (pluie_core.labels.majority_level / majority_binary; a tie across the
  paraphrase boundary gives no label). Its posterior is the vote share of the label. The default.
- ``dawid_skene`` (Dawid & Skene, 1979), ``glad`` (Whitehill et al., 2009), ``mace`` (Hovy et al., 2013):
  crowd-kit's implementations (``crowdkit.aggregation``), called with the settings in ``SETTINGS``;
  nothing here re-implements them (MACE is mended, see below).

MACE in crowd-kit 1.4.2 (``crowdkit/aggregation/classification/mace.py``) is not a function of the labels
alone. ``fit`` codes workers and labels by first appearance (``pd.factorize``), but ``_e_step`` sums the
strategy counts with ``groupby(["worker", "label"]).unstack()``, i.e. in sorted order, and the M-step reads
that table's ``.values`` as if by first appearance: one annotator's counts go to another, one level's to
another, so renaming the annotators or shuffling the rows changes levels and posteriors; and
``_initialize`` seeds every restart with ``random_state`` itself, so the 10 restarts are one run ten times.
``mace_class()`` is crowd-kit's MACE with three small overrides: it fits the labels in a canonical order
(``_canonical_order``: annotators coded by their sorted (pair, label) answers, rows sorted), reindexes the
counts by worker and label, and starts restart k > 0 from its own draw, seeded by (random_state, k);
restart 0 is crowd-kit's, and crowd-kit still keeps the restart with the best marginal likelihood.
Annotators with the same answers share a start, so they share an estimate. The results are mapped back to
the real pair and annotator ids.

Each runs over the five levels (scale ``levels``: classes 0-3) or over the binarised labels (scale
``binary``: 0 / 1). "Don't know" and missing labels are left out, as in every other figure.

Gold checks: only Dawid–Skene takes known labels (crowd-kit's ``DawidSkene.fit(data, true_labels)``
fixes those pairs' posteriors to the known label at every EM step), so the gold answers *anchor* its
estimate of each annotator's confusion matrix. GLAD and MACE take no known labels: the gold answers are
*held out* and measure the estimate instead (``Aggregation.gold_accuracy``, the share of gold pairs
whose aggregated label is the known one). For Dawid–Skene that figure is not a measure (the keys shaped
the fit) and is reported as NaN. A key is never reported as the model's reading of its pair: after the
anchored fit, each anchored pair's posterior is the E-step's from its labels alone (crowd-kit's
``_e_step`` with the fitted priors and confusion matrices), so a pair's posterior and level say what the
annotators' labels say under the fitted model. Where a key decides a pair's final label, that label's
source is ``gold`` (pluie_core.review.final_labels), never the method's.

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
from functools import lru_cache
from typing import Any, Optional, TypeGuard

import numpy as np
import pandas as pd

from pluie_core.labels import DONT_KNOW, ORDINAL_LEVELS, binarise_levels
from pluie_core.review import majority_levels

METHODS: tuple[str, ...] = ("majority", "dawid_skene", "glad", "mace")
METHOD_NAMES = {"majority": "Majority vote", "dawid_skene": "Dawid–Skene", "glad": "GLAD", "mace": "MACE"}
SCALES: tuple[str, ...] = ("levels", "binary")
DEFAULT_METHOD = "majority"
# crowd-kit's defaults, written out so the dataset card can name them
SETTINGS: dict[str, dict[str, Any]] = {
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
            text += (
                f"; annotator reliability {rel.min():.2f}–{rel.max():.2f} (median {rel.median():.2f},"
                f" {len(rel)} annotators)"
            )
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
    return pd.DataFrame(
        {
            "task": labels.loc[keep, "pair_id"].to_numpy(),
            "worker": labels.loc[keep, "annotator"].to_numpy(),
            "label": values.to_numpy(),
        }
    )


def _classes(scale: str) -> list[int]:
    return [0, 1] if scale == "binary" else list(ORDINAL_LEVELS)


def _pairs_table(probas: pd.DataFrame, label: pd.Series, counts: pd.Series) -> pd.DataFrame:
    values = pd.to_numeric(label.reindex(probas.index), errors="coerce").to_numpy(dtype=float)
    known = ~np.isnan(values)
    column = np.searchsorted(probas.columns.to_numpy(), np.where(known, values, probas.columns[0]))
    posterior = pd.Series(
        np.where(known, probas.to_numpy(dtype=float)[np.arange(len(values)), column], np.nan), index=probas.index
    )
    label = pd.Series(values, index=probas.index).astype("Float64").astype("Int64")
    return pd.DataFrame(
        {
            "label": label,
            "posterior": posterior,
            "uncertainty": 1.0 - probas.max(axis=1).astype(float),
            "n_labels": counts.reindex(probas.index).fillna(0).astype(int),
        },
        index=pd.Index(probas.index, name="pair_id"),
    )


def _majority(data: pd.DataFrame, scale: str):
    """The majority rule, vectorised (one bincount over (pair, class) cells; no loop over pairs)."""
    classes = _classes(scale)
    pair_ids, index = np.unique(data["task"].to_numpy(), return_inverse=True)
    counts = np.bincount(
        index * len(classes) + data["label"].to_numpy(dtype=np.int64), minlength=len(pair_ids) * len(classes)
    ).reshape(len(pair_ids), len(classes))
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
    assert errors is not None and priors is not None  # set by fit
    probas, labels = model.probas_, model.labels_
    assert probas is not None and labels is not None  # set by fit
    if gold is not None and len(gold):
        # the keys anchor the fit (the confusion matrices, the priors), but a key is not the model's reading of
        # its pair: the anchored pairs' posteriors are the E-step's, from their labels alone
        anchored = data[data["task"].isin(gold.index)]
        from_labels = model._e_step(anchored, priors, errors).reindex(columns=probas.columns, fill_value=0.0)
        from_labels = from_labels[from_labels.notna().all(axis=1)]  # every class impossible: keep crowd-kit's
        probas = probas.copy()
        probas.loc[from_labels.index] = from_labels.to_numpy()
        labels = probas.idxmax(axis=1).rename(labels.name)
    reliability = {}
    for worker in errors.index.get_level_values(0).unique():
        confusion = errors.loc[worker]
        reliability[worker] = float(
            sum(priors[k] * (confusion.at[k, k] if k in confusion.index else 0.0) for k in priors.index)
        )
    return probas, labels, pd.Series(reliability, dtype=float)


def _glad(data: pd.DataFrame, settings: dict):
    from crowdkit.aggregation import GLAD

    model = GLAD(**settings)
    with np.errstate(divide="ignore", invalid="ignore"):  # one class only: crowd-kit takes log(0), harmlessly
        model.fit(data)
    a = model.alphas_.reindex(data["worker"]).to_numpy() * np.exp(model.betas_.reindex(data["task"]).to_numpy())
    reliability = pd.Series(1.0 / (1.0 + np.exp(-a)), index=data["worker"].to_numpy()).groupby(level=0).mean()
    return model.probas_, model.labels_, reliability.astype(float)


def _canonical_order(data: pd.DataFrame):
    """``data`` (task, worker, label) in an order that owes nothing to the annotators' ids or the rows'
    order: each annotator coded 0..n-1 by their answers (the sorted (pair, label) list; annotators with the
    same answers are interchangeable), the rows sorted by (code, pair id, label). Returns that frame (worker:
    the code), the real id of each code, and per code the first code with the same answers."""
    tasks, _ = pd.factorize(data["task"], sort=True)
    labels, label_values = pd.factorize(data["label"], sort=True)
    workers, worker_ids = pd.factorize(data["worker"])
    answers = tasks.astype(np.int64) * len(label_values) + labels
    rows = np.lexsort((answers, workers))
    bounds = np.cumsum(np.bincount(workers, minlength=len(worker_ids)))[:-1]
    signatures = [tuple(a.tolist()) for a in np.split(answers[rows], bounds)]
    by_answers = sorted(range(len(worker_ids)), key=signatures.__getitem__)
    code = np.empty(len(worker_ids), dtype=np.int64)
    code[by_answers] = np.arange(len(worker_ids))
    ties = np.arange(len(worker_ids))
    for i in range(1, len(worker_ids)):
        if signatures[by_answers[i]] == signatures[by_answers[i - 1]]:
            ties[i] = ties[i - 1]
    rows = np.lexsort((answers, code[workers]))
    frame = pd.DataFrame(
        {"task": data["task"].to_numpy()[rows], "worker": code[workers][rows], "label": data["label"].to_numpy()[rows]}
    )
    return frame, worker_ids[by_answers], ties


@lru_cache(maxsize=None)
def mace_class():
    """crowd-kit's MACE with the two defects of 1.4.2 mended (see the module text): fitted on the labels in
    canonical order (_canonical_order), its expected counts read by worker and label, one random start per
    restart. Fitted attributes as crowd-kit's, in the order of ``data``, plus ``log_marginal_likelihood_``
    (of the restart kept). Built on first use: crowd-kit takes seconds to import. Its overrides of crowd-kit's
    private ``_initialize`` and ``_e_step`` are a coupling (pluie_core.private_api.CROWDKIT_MACE): on a
    crowd-kit whose MACE lacks them or calls them otherwise, AggregationError says so."""
    import scipy.stats as sps

    from pluie_core.private_api import CROWDKIT_MACE, crowdkit_mace

    MACE = crowdkit_mace()
    if MACE is None:  # the overrides below would not mend it, or would compute something else
        raise AggregationError(
            f"MACE cannot run on this crowd-kit: {CROWDKIT_MACE.reason} (MACE here mends "
            f"{CROWDKIT_MACE.name} as in {CROWDKIT_MACE.checked_on}, the version "
            "requirements.txt pins). Choose another method, or install that version."
        )

    class CanonicalMACE(MACE):  # type: ignore[valid-type, misc]  # a subclass of the crowd-kit MACE loaded
        def fit(self, data: pd.DataFrame) -> "CanonicalMACE":
            frame, worker_ids, self._ties = _canonical_order(data)
            self._restart = 0
            super().fit(frame)
            # back to crowd-kit's order: workers, labels and tasks by first appearance in ``data``
            rows = pd.Index(worker_ids).get_indexer(pd.factorize(data["worker"])[1])
            columns = pd.Index(pd.factorize(frame["label"])[1]).get_indexer(pd.factorize(data["label"])[1])
            self.spamming_, self.thetas_ = self.spamming_[rows], self.thetas_[np.ix_(rows, columns)]  # type: ignore[has-type]
            tasks, label_names = pd.unique(data["task"]), pd.factorize(data["label"])[1]
            self.probas_ = self.probas_.loc[tasks, label_names]  # type: ignore[has-type]
            self.labels_ = self.labels_.loc[tasks]  # type: ignore[has-type]
            return self

        def _initialize(self, n_workers: int, n_labels: int) -> None:
            super()._initialize(n_workers, n_labels)  # restart 0 keeps crowd-kit's start, seeded by random_state
            restart, self._restart = self._restart, self._restart + 1
            if restart and isinstance(self.random_state, (int, np.integer)):  # crowd-kit reuses that seed
                rng = np.random.default_rng([int(self.random_state), restart])
                draw = sps.uniform(1, 1 + self.default_noise)
                spamming = draw.rvs(size=(n_workers, 2), random_state=rng)
                thetas = draw.rvs(size=(n_workers, n_labels), random_state=rng)
                self.spamming_ = spamming / spamming.sum(axis=1, keepdims=True)
                self.thetas_ = thetas / thetas.sum(axis=1, keepdims=True)
            # annotators with the same answers start alike, so each ends with the same estimate whatever its id
            self.spamming_, self.thetas_ = self.spamming_[self._ties], self.thetas_[self._ties]

        def _e_step(self, annotation, task_names, worker_names, label_names, tasks, workers, labels):
            likelihood, marginals, strategy, knowing = super()._e_step(
                annotation, task_names, worker_names, label_names, tasks, workers, labels
            )
            # crowd-kit's counts come by sorted (worker, label); its M-step reads them by first appearance
            strategy = strategy.reindex(index=worker_names, columns=label_names, fill_value=0.0)
            self.log_marginal_likelihood_ = float(likelihood)
            return likelihood, marginals, strategy, knowing

    return CanonicalMACE


def _mace(data: pd.DataFrame, settings: dict):
    model = mace_class()(**settings)
    model.fit(data)
    _, worker_names = pd.factorize(data["worker"])
    reliability = pd.Series(1.0 - model.spamming_[:, 0], index=worker_names, dtype=float)
    return model.probas_, model.labels_, reliability


def aggregate(
    labels: pd.DataFrame,
    method: str = DEFAULT_METHOD,
    scale: str = "levels",
    gold: Optional[pd.Series] = None,
    settings: Optional[dict] = None,
) -> Aggregation:
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
        empty = pd.DataFrame(
            columns=["label", "posterior", "uncertainty", "n_labels"], index=pd.Index([], name="pair_id")
        )
        return Aggregation(
            method,
            scale,
            empty,
            pd.DataFrame(columns=classes),
            pd.DataFrame(columns=["reliability", "n_labels"], index=pd.Index([], name="annotator")),
            settings=settings,
        )
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
    annotators = pd.DataFrame({"reliability": reliability, "n_labels": data.groupby("worker").size()}).rename_axis(
        "annotator"
    )
    annotators["n_labels"] = annotators["n_labels"].fillna(0).astype(int)
    gold_accuracy = float("nan")
    if gold is not None and len(gold) and not anchored:
        held = pairs["label"].reindex(gold.index)
        known = held.notna()
        if known.any():
            gold_accuracy = float((held[known].astype(int) == gold[known]).mean())
    return Aggregation(method, scale, pairs, probas, annotators, anchored, gold_accuracy, settings)


# ---------------------------------------------------------------- when a model's level is final

# A model's level (Dawid–Skene, GLAD, MACE) becomes a pair's final level only where the model is sure of
# it and the fit had labels enough to learn the annotators from: the level's posterior is at least
# ``confidence`` (DEFAULT_CONFIDENCE) and the median annotator has at least ``min_labels``
# (DEFAULT_MIN_LABELS) labels in the fit. Elsewhere the majority rule decides, else no rule does; a
# reviewer's decision wins over all (pluie_core.review.final_labels). Both thresholds are the user's to
# change (Export page, export_frame / export_labels / publish_dataset). Why 20: over the five levels
# Dawid–Skene estimates a 4 x 4 confusion matrix per annotator; with fewer labels than its 16 cells the
# estimate rests on next to nothing, and its posteriors look surer than they are (a rule of thumb, a little
# over one label per cell, not a derived bound).
DEFAULT_CONFIDENCE = 0.8
DEFAULT_MIN_LABELS = 20
MODEL_METHODS: tuple[str, ...] = tuple(m for m in METHODS if m != "majority")


def check_thresholds(confidence: float, min_labels: int) -> tuple[float, int]:
    """The two thresholds of model_final_levels, checked: a confidence between 0 and 1, a whole number
    of labels, 0 or more."""
    try:
        confidence = float(confidence)
    except (TypeError, ValueError):
        confidence = float("nan")
    if not 0.0 <= confidence <= 1.0:
        raise AggregationError("The confidence a model's level needs is a probability between 0 and 1.")
    try:
        whole = not isinstance(min_labels, bool) and float(min_labels) == int(min_labels) >= 0
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise AggregationError("The labels the median annotator needs in the fit are a whole number, 0 or more.")
    return confidence, int(min_labels)


def median_labels(labels_per_annotator) -> float:
    """The median of the annotators' label counts in a fit (Aggregation.annotators["n_labels"]); 0 with none."""
    counts = pd.to_numeric(pd.Series(labels_per_annotator, dtype=float), errors="coerce").dropna()
    return float(counts.median()) if len(counts) else 0.0


def model_final_levels(
    majority: pd.Series,
    levels: pd.Series,
    posterior: pd.Series,
    labels_per_annotator,
    method: Optional[str],
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
) -> pd.DataFrame:
    """Each pair's level before review, and the rule that gave it. ``majority``: the majority levels
    (pluie_core.labels.majority_level, NaN when none), indexed by pair; ``levels`` and ``posterior``: the
    method's level of each pair and its probability (Aggregation.pairs' label and posterior, reindexed
    like ``majority``); ``labels_per_annotator``: the fit's labels per annotator
    (Aggregation.annotators["n_labels"]). The method's level is taken where its posterior is at least
    ``confidence`` and the median of ``labels_per_annotator`` is at least ``min_labels``; elsewhere the
    majority level, else none. ``method`` None or "majority": the majority rule throughout.
    Returns a frame indexed like ``majority``: level (Int64), source (the method's name, "majority" or
    "none"); pluie_core.review.final_labels(level, adjudicated, source) then lets a reviewer win."""
    confidence, min_labels = check_thresholds(confidence, min_labels)
    if method is not None:
        check_method(method)
    base = pd.to_numeric(majority, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    trusted = np.zeros(len(base), dtype=bool)
    model = np.full(len(base), np.nan)
    if method in MODEL_METHODS and median_labels(labels_per_annotator) >= min_labels:
        model = pd.to_numeric(levels.reindex(majority.index), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        sure = pd.to_numeric(posterior.reindex(majority.index), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            trusted = ~np.isnan(model) & (sure >= confidence)
    level = np.where(trusted, model, base)
    source = np.where(trusted, method or "", np.where(np.isnan(base), "none", "majority"))
    return pd.DataFrame(
        {
            "level": pd.array(level, dtype="Float64").astype("Int64"),
            "source": pd.Series(source, index=majority.index, dtype=object),
        },
        index=majority.index,
    )


def _share_text(value: float) -> str:
    return f"{value:.2f}" if round(value, 2) == value else f"{value:g}"


def final_rule_text(
    counts: dict,
    method: Optional[str],
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    median: float = 0.0,
) -> str:
    """Which rule decided how many pairs, in words, for the Export page and the dataset card. ``counts``:
    {final_source: pairs} (export_frame's final_source column counted); with a model method, the two
    thresholds and ``median``, the fit's median labels per annotator (median_labels), are said too."""

    def n(source: str) -> int:
        return int(counts.get(source, 0))

    def pairs(k: int) -> str:
        return f"{k:,} pair{'' if k == 1 else 's'}"

    keys = (
        f"a gold key {n('gold'):,} (the campaign's known answer, final_source gold; never the model's), "
        if n("gold")
        else ""
    )
    tail = f"{n('none'):,} undecided, {keys}a reviewer {n('adjudicated'):,}."
    if method not in MODEL_METHODS:
        return f"The majority rule decided {pairs(n('majority'))}, {tail}"
    name, share = METHOD_NAMES[method], _share_text(float(confidence))
    rule = (
        f"{name}'s level is final where its posterior is at least {share} and the median annotator has at "
        f"least {int(min_labels):,} labels in the fit (here {float(median):g}"
    )
    rule += (
        "); elsewhere the majority rule decides, and a reviewer's decision wins over both. "
        if median >= min_labels
        else f": too few, so {name} decides no pair); the majority rule decides, and a reviewer's decision wins. "
    )
    return rule + (
        f"{name} decided {pairs(n(method))} (posterior ≥ {share}), the majority rule {n('majority'):,}, " + tail
    )


# ---------------------------------------------------------------- adaptive overlap

# The fitted model adaptive overlap reads (fit_adaptive_model): Dawid–Skene over the binarised labels.
# Its confusion matrices are smoothed by ADAPTIVE_PSEUDOCOUNT per cell (crowd-kit's own M-step has no
# prior: an annotator who has agreed with every pair so far would get an error rate of 1e-8 and settle any
# pair alone); an annotator the fit has not seen reads the pooled matrix of everyone. The fit decides only
# once the median annotator in it has ADAPTIVE_MIN_LABELS labels; before that, the vote share does.
ADAPTIVE_PSEUDOCOUNT = 1.0
ADAPTIVE_MIN_LABELS = 10


def binary_vote_share(levels) -> float:
    """The posterior adaptive overlap reads per pair before the campaign's model is fitted: the majority
    method's posterior on the binarised scale, i.e. the share of the pair's usable labels on the larger
    side (0.5-1). "Don't know" and missing labels are left out, as everywhere; a pair with no usable label
    has nothing to be confident about: 0."""
    binary = np.asarray(binarise_levels(list(levels)), dtype=float)
    binary = binary[~np.isnan(binary)]
    if not len(binary):
        return 0.0
    yes = float(binary.mean())
    return max(yes, 1.0 - yes)


def usable_count(levels) -> int:
    """How many of a pair's answers say something: its labels other than "Don't know" (and missing)."""
    return int(np.isin(np.asarray(list(levels), dtype=float), ORDINAL_LEVELS).sum())


def fit_adaptive_model(labels: pd.DataFrame, gold: Optional[pd.Series] = None) -> Optional[dict]:
    """Adaptive overlap's model of a campaign: Dawid–Skene over the binarised labels (crowd-kit's fit),
    from one row per label (pair_id, annotator, level 0-4); ``gold``: known sides (pair_id -> 0 / 1) that
    anchor the fit (the quality checks' consensus, pluie_core.quality.consensus_checks, passes the
    campaign's gold keys). Returns a JSON-ready dict: ``priors`` [p(0),
    p(1)], ``confusion`` {annotator (as text): [[p(0|0), p(1|0)], [p(0|1), p(1|1)]]} (row: the true class,
    column: the label given; each annotator's expected counts under the fit's posteriors plus
    ADAPTIVE_PSEUDOCOUNT per cell), ``pooled`` (the same over every annotator, for one the fit has not
    seen), ``n_labels`` and ``median_labels`` (labels per annotator, the median). None when no usable label."""
    data = crowd_frame(labels, "binary")
    if data.empty:
        return None
    result = aggregate(labels, "dawid_skene", "binary", gold=gold)
    probas = result.probabilities.reindex(columns=[0, 1], fill_value=0.0)
    if gold is not None and len(gold):  # the keys' pairs count at their known side, as they anchored the fit
        keys = pd.to_numeric(gold, errors="coerce").dropna().astype(int)
        keys = keys[keys.index.isin(probas.index)]
        probas = probas.copy()
        probas.loc[keys.index] = np.eye(2)[keys.to_numpy()]
    p_true = probas.reindex(data["task"]).to_numpy(dtype=float)  # labels x true class
    given = data["label"].to_numpy(dtype=int)
    # expected counts: true class k, label given l, per annotator
    cells = pd.DataFrame(
        {
            "worker": data["worker"].astype(str).to_numpy(),
            "k0_l0": p_true[:, 0] * (given == 0),
            "k0_l1": p_true[:, 0] * (given == 1),
            "k1_l0": p_true[:, 1] * (given == 0),
            "k1_l1": p_true[:, 1] * (given == 1),
        }
    )
    counts = cells.groupby("worker").sum()

    def confusion(row) -> list[list[float]]:
        c = np.asarray(row, dtype=float).reshape(2, 2) + ADAPTIVE_PSEUDOCOUNT
        return (c / c.sum(axis=1, keepdims=True)).tolist()

    per_annotator = data.groupby("worker").size()
    return {
        "priors": [float(v) for v in probas.mean().clip(1e-6, 1 - 1e-6)],
        "confusion": {str(w): confusion(row) for w, row in counts.iterrows()},
        "pooled": confusion(counts.sum()),
        "n_labels": int(len(data)),
        "median_labels": float(per_annotator.median()),
    }


def model_posterior(fit: dict, annotators, levels) -> float:
    """The probability of a pair's more probable binary label under a fitted model (fit_adaptive_model),
    from its answers (``annotators`` and ``levels`` side by side; Don't know left out): the Dawid–Skene
    E-step for one pair. 0 when no answer is usable."""
    log_p = np.log(np.asarray(fit["priors"], dtype=float))
    usable = 0
    for annotator, level in zip(annotators, levels):
        if level is None or (isinstance(level, float) and np.isnan(level)) or int(level) not in ORDINAL_LEVELS:
            continue
        given = int(int(level) >= 2)
        matrix = np.asarray(fit["confusion"].get(str(annotator), fit["pooled"]), dtype=float)
        log_p = log_p + np.log(matrix[:, given])
        usable += 1
    if not usable:
        return 0.0
    p = np.exp(log_p - log_p.max())
    return float(p.max() / p.sum())


def fit_decides(fit: Optional[dict]) -> TypeGuard[dict]:
    """Whether a fitted model is trusted to decide adaptive overlap: it exists and the median annotator
    in it has at least ADAPTIVE_MIN_LABELS labels."""
    return fit is not None and fit.get("median_labels", 0) >= ADAPTIVE_MIN_LABELS


def pair_posterior(annotators, levels, fit: Optional[dict] = None) -> float:
    """What adaptive overlap reads per pair: the fitted model's posterior once it decides (fit_decides),
    else the binarised vote share."""
    return model_posterior(fit, annotators, levels) if fit_decides(fit) else binary_vote_share(levels)


def pair_posteriors(labels: pd.DataFrame, fit: Optional[dict] = None) -> pd.DataFrame:
    """pair_posterior and usable_count for many pairs at once, from one row per label (pair_id,
    annotator, level 0-4): a frame indexed by pair_id with ``posterior``, ``n_answers`` (Don't know
    included) and ``n_usable``. The same values as the per-pair functions (tests/test_adaptive_model.py)."""
    levels = pd.to_numeric(labels["level"], errors="coerce").to_numpy(dtype=float)
    pair_ids = labels["pair_id"].to_numpy()
    usable = np.isin(levels, ORDINAL_LEVELS)
    given = (levels >= 2).astype(int)
    frame = pd.DataFrame({"pair_id": pair_ids, "usable": usable.astype(int), "one": usable & (given == 1)})
    if fit_decides(fit):
        names = labels["annotator"].astype(str).to_numpy()
        known = {name: np.log(np.asarray(m, dtype=float)) for name, m in fit["confusion"].items()}
        pooled = np.log(np.asarray(fit["pooled"], dtype=float))
        matrices = np.stack([known.get(name, pooled) for name in names]) if len(names) else np.zeros((0, 2, 2))
        rows = np.arange(len(names))
        frame["l0"] = np.where(usable, matrices[rows, 0, given] if len(names) else 0.0, 0.0)
        frame["l1"] = np.where(usable, matrices[rows, 1, given] if len(names) else 0.0, 0.0)
    grouped = frame.groupby("pair_id")
    out = pd.DataFrame({"n_answers": grouped.size(), "n_usable": grouped["usable"].sum()})
    if fit_decides(fit):
        log_p = grouped[["l0", "l1"]].sum().to_numpy() + np.log(np.asarray(fit["priors"], dtype=float))
        p = np.exp(log_p - log_p.max(axis=1, keepdims=True))
        posterior = p.max(axis=1) / p.sum(axis=1)
    else:
        ones = grouped["one"].sum().to_numpy(dtype=float)
        n = out["n_usable"].to_numpy(dtype=float)
        share = np.divide(ones, n, out=np.zeros(len(n)), where=n > 0)
        posterior = np.maximum(share, 1.0 - share)
    out["posterior"] = np.where(out["n_usable"].to_numpy() > 0, posterior, 0.0)
    return out


def wants_another(
    levels, n_wanted: int, overlap_max: int, confidence: float, least: int = 1, posterior: Optional[float] = None
) -> bool:
    """Adaptive overlap's rule for one pair: once it holds the answers it asked for (``levels``, one per
    annotator, "Don't know" included), it asks for one more annotator while it is under ``overlap_max``
    and either holds fewer than ``least`` usable answers ("Don't know" never counts towards the least) or
    its ``posterior`` (pair_posterior; by default the binarised vote share) is below ``confidence``."""
    levels = list(levels)
    if len(levels) < n_wanted or n_wanted >= overlap_max:
        return False
    if usable_count(levels) < least:
        return True
    return (binary_vote_share(levels) if posterior is None else posterior) < confidence
