"""What the analysis pages share: the sidebar (the scope — a campaign or datasets, pages.scope —, score
run, reference, one reference scale at a time), reads cached per store URL, the model threshold input and
CSV downloads."""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
import pandas as pd
import streamlit as st

from db import analysis, evaluation, evaluation_reads, review
from db import datasets as dataset_reads
from db.engine import database_url
from pluie_core import analysis as core
from pages import charts, scope as scopes
from pages.shared import get_engine, user_text
from pluie_core.export_format import to_csv_bytes
from pluie_core.agreement import N_BOOT, count_patterns, level_counts
from pluie_core.evaluation.correlation import METHODS, compare_correlations, correlate, graded_reference, system_level
from pluie_core.evaluation.paraphrasus import in_paper_order
from pluie_core.evaluation.preference import agreement_table
from pluie_core.agreement import agreement_figures as level_agreement
from pluie_core.stats import (
    StatsError, best_threshold, category_counts, fleiss_kappa, human_vs_model_by_annotator, item_slots,
    krippendorff_alpha_ci, levels_to_matrix, metrics_at, pairwise_kappa, roc_auc, threshold_curve,
)

# Cached reads are keyed on the store's state (store_key): new labels, scores, decisions and runs
# show up at once. The time limit covers what the key does not see (an answer changed in place, a
# dataset renamed); "Reload data" reads everything again at once.
CACHE_SECONDS = 600
CACHE_ENTRIES = 8  # per read: a campaign that runs makes a new key with every label
# The large frames (labels, their matrices, pairs, scores) are kept as they are (st.cache_resource), one
# object shared by every run and session: st.cache_data pickles a frame when it stores it and unpickles it
# on every hit (3 s and a second per run of Agreement at 300,000 labels). Read-only, then: a page that
# changes one works on a copy (scored_frame copies the pairs), as every function of pluie_core does.
shared_frame = st.cache_resource(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
REFERENCES = {"gold": "Gold labels", "majority": "Human majority", "annotator": "One annotator"}


def store_url() -> str:
    return get_engine().url.render_as_string(hide_password=False)


def store_key() -> str:
    """What every cached read takes first: the store's URL (the cache is per process, and tests and
    users may point the app at different stores) and its state (db.analysis.store_version), so that
    a cached figure is never one the store has outgrown. Read once per run of a page."""
    return f"{store_url()}#{analysis.store_version(get_engine())}"


# Every cached read takes store_key() first.
@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def choices(url: str, preference_runs: bool = False) -> analysis.AnalysisChoices:
    """The sidebars' choices. The pair-level views leave out LLM-choice runs: their 1 / 0 says which
    candidate of a preference item won, not whether a pair is a paraphrase, so they have no threshold
    to read; the Preferences page (``preference_runs=True``) lists them with every other run."""
    found = analysis.analysis_choices(get_engine())
    if not preference_runs:
        found.runs = found.runs[~found.runs["kind"].isin(core.PREFERENCE_ONLY_KINDS)].reset_index(drop=True)
    return found


def labels(url: str, dataset_ids: tuple[int, ...], campaign_id: Optional[int] = None) -> pd.DataFrame:
    """The labels of the datasets (db.analysis.labels_long), with ``campaign_id`` those given in that
    campaign only; read-only. One cache entry however it is called (campaign_id left out or None)."""
    return _labels(url, tuple(dataset_ids), None if campaign_id is None else int(campaign_id))


@shared_frame
def _labels(url: str, dataset_ids: tuple[int, ...], campaign_id: Optional[int]) -> pd.DataFrame:
    return analysis.labels_long(get_engine(), dataset_ids, annotators=choices(url).annotators, campaign_id=campaign_id)


labels.clear = _labels.clear  # as the cached reads: labels.clear() empties its cache


@shared_frame
def hover_labels(url: str, dataset_ids: tuple[int, ...], campaign_id: Optional[int] = None) -> pd.Series:
    """pair_id -> every label of the pair as the scatters' hover names them (charts.labels_text), read-only."""
    return charts.labels_text(labels(url, dataset_ids, campaign_id))


@shared_frame
def label_views(url: str, dataset_ids: tuple[int, ...], scale: str,
                campaign_id: Optional[int] = None) -> tuple[pd.DataFrame, pd.DataFrame, Optional[pd.DataFrame]]:
    """The labels on one scale (of a campaign, with ``campaign_id``), their values as the agreement
    statistics take them and (five-level scale) binarised, as rows (``pluie_core.analysis.agreement_values``: pair_id, annotator, value). Rows, not
    an items x annotators matrix: a campaign of thousands of annotators would make that matrix billions
    of cells. Half a second at 300,000 labels, on every run of the Agreement page before it was shared."""
    rows = core.labels_on_scale(labels(url, dataset_ids, campaign_id), scale)
    return (rows, core.agreement_values(rows, scale),
            core.agreement_values(rows, scale, binarised=True) if scale == "levels" else None)


def pairs(url: str, dataset_ids: tuple[int, ...], texts: bool = False, campaign_id: Optional[int] = None) -> pd.DataFrame:
    """The pairs of the datasets (db.analysis.pairs_frame; with ``campaign_id`` that campaign's pairs
    only), read-only. One cache entry however it is called: Streamlit keys a cached function on its
    arguments as passed, so pairs(url, ids) and pairs(url, ids, texts=False) would each read a million pairs."""
    return _pairs(url, tuple(dataset_ids), bool(texts), None if campaign_id is None else int(campaign_id))


@shared_frame
def _pairs(url: str, dataset_ids: tuple[int, ...], texts: bool, campaign_id: Optional[int]) -> pd.DataFrame:
    return analysis.pairs_frame(get_engine(), dataset_ids, texts=texts, campaign_id=campaign_id)


@shared_frame
def scores(url: str, run_ids: tuple[int, ...], dataset_ids: tuple[int, ...]) -> pd.DataFrame:
    return analysis.scores_wide(get_engine(), run_ids, dataset_ids)


ALPHA_LEVELS = ("nominal", "ordinal", "interval")
# Cohen's κ for every pair of annotators, up to this many (those with the most labels): 1,225 pairs. A
# campaign of 6,000 annotators has 18,000,000 pairs, nearly all with no pair labelled in common.
PAIRWISE_ANNOTATORS = 50


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES,
               show_spinner="Computing Fleiss' κ, Krippendorff's α with its bootstrap intervals and the pairwise κ…")
def agreement_figures(url: str, dataset_ids: tuple, scale: str, binarised: bool, weights, campaign_id=None) -> dict:
    """The Agreement page's Fleiss' κ, Krippendorff's α with its interval (three levels) and pairwise κ
    of one view, cached: on a large campaign they take seconds (2 s at 3,000,000 labels), and other
    widgets of the page should not wait for them. Its default view is read ahead. Streamlit keys it
    on the arguments as passed: callers pass all six (``campaign_id``: the labels of that campaign only)."""
    # the scale's rules (Don't know is missing, the binarisation) applied once; the statistics take plain values
    view = label_views(url, dataset_ids, scale, campaign_id)[2 if binarised else 1]
    values = view["value"].to_numpy()
    figures, errors = [], {}
    slots = item_slots(view, level_col="value")  # each pair's values side by side: what Fleiss' κ and α count
    try:
        figures.append({"measure": "Fleiss' kappa", "value": fleiss_kappa(category_counts(slots))})
    except StatsError as error:
        errors["Fleiss' kappa"] = str(error)
    if scale == "levels":  # the five-level labels: pluie_core.agreement, as on Live campaign and the dataset card
        rows = label_views(url, dataset_ids, scale, campaign_id)[0]
        measures = ("binary",) if binarised else ALPHA_LEVELS
        found = level_agreement(count_patterns(level_counts(rows["pair_id"], rows["level"])), measures=measures)
        for measure in measures:
            figure = dict(found[measure])
            if figure.get("alpha") is None:
                errors[f"Krippendorff's alpha ({measure})"] = figure.get("why")
            else:
                figures.append({"measure": f"Krippendorff's alpha ({measure})", "value": figure.pop("alpha"), **figure})
    else:
        # values imported on their own scale: α counts the values of each pair, whoever gave them
        for level in ALPHA_LEVELS:
            try:
                found = krippendorff_alpha_ci(slots.T, level, n_boot=N_BOOT, seed=0)
                figures.append({"measure": f"Krippendorff's alpha ({level})", "value": found.pop("alpha"), **found})
            except StatsError as error:
                errors[f"Krippendorff's alpha ({level})"] = str(error)
    # five-level labels are whole by construction; values imported on their own scale may not be
    whole = scale == "levels" or bool(np.all(np.isnan(values) | (values == np.round(values))))
    annotators = view["annotator"].nunique()
    shown = core.most_labelled(view, PAIRWISE_ANNOTATORS)  # a heatmap a person can read
    pairwise = pairwise_kappa(levels_to_matrix(shown, level_col="value"), weights) if whole else None
    figures = pd.DataFrame(figures) if figures else pd.DataFrame(columns=["measure", "value"])  # every label missing
    return {"figures": figures, "errors": errors, "pairwise": pairwise, "annotators": annotators}


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES,
               show_spinner="Computing the curve, the best threshold, ROC AUC and each dataset's best threshold…")
def threshold_figures(url: str, dataset_ids: tuple[int, ...], run_id: int, kind: str, annotator: Optional[str],
                      gold_cut: float, higher: bool, natural: Optional[float], campaign_id: Optional[int] = None):
    """The Thresholds page's figures of one run against one reference (core.Reference's kind,
    annotator and gold_cut): the curve, the best threshold, ROC AUC and, over several datasets,
    each one's best threshold, ROC AUC and accuracy at the ``natural`` threshold (None when the run
    has none); per_dataset is None for one dataset. Three seconds at 1,000,000 pairs: cached on the
    store's state and the choices, and the default (first run, gold labels) is read ahead. Streamlit
    keys it on the arguments as passed: callers pass all nine (``campaign_id``: that campaign's pairs and
    labels only)."""
    values = scores(url, (run_id,), dataset_ids).iloc[:, 0]
    data = pairs(url, dataset_ids, False, campaign_id)[["dataset"]].assign(
        score=values, reference=reference_labels(url, dataset_ids, kind, annotator, gold_cut, campaign_id))
    data = data.dropna(subset=["score", "reference"])
    curve = threshold_curve(data["score"], data["reference"], higher)
    best, auc = best_threshold(data["score"], data["reference"], higher), roc_auc(data["score"], data["reference"], higher)
    if data["dataset"].nunique() < 2:
        return curve, best, auc, None
    per_dataset = []
    for name, group in data.groupby("dataset"):
        row = {"dataset": name, "n": len(group)}
        try:
            found = best_threshold(group["score"], group["reference"], higher)
            row |= {"best threshold": found["threshold"], "tied from": found["tie_low"], "tied to": found["tie_high"],
                    "accuracy": found["accuracy"], "f1": found["f1"],
                    "precision": found["precision"], "recall": found["recall"],
                    "roc_auc": roc_auc(group["score"], group["reference"], higher)}
            if natural is not None:
                row["accuracy at natural"] = metrics_at(group["score"], group["reference"], natural, higher)["accuracy"]
        except StatsError as error:
            row["note"] = str(error)
        per_dataset.append(row)
    return curve, best, auc, pd.DataFrame(per_dataset)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def preference_datasets(url: str) -> pd.DataFrame:
    return evaluation_reads.preference_datasets(get_engine())


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def preferences(url: str, dataset_ids: tuple) -> pd.DataFrame:
    return evaluation_reads.preferences_frame(get_engine(), dataset_ids)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES,
               show_spinner="Calibrating each run's ties and comparing its choices with the people's…")
def preference_agreement(url: str, dataset_ids: tuple, run_ids: tuple, chosen: tuple, direction: dict) -> pd.DataFrame:
    """The Preferences page's table: every chosen run's agreement with the human choices (a second or
    more at 500,000 items, so cached: the key is the store's state, so a new score or choice shows at
    once). Its default (every preference dataset, every run) is read ahead. Streamlit keys it on the
    arguments as passed: callers pass all five."""
    items = preferences(url, dataset_ids)
    found = scores(url, run_ids, dataset_ids).reindex(columns=list(chosen))
    side_a = found.reindex(items["pair_a_id"]).reset_index(drop=True)
    side_b = found.reindex(items["pair_b_id"]).reset_index(drop=True)
    return agreement_table(items["preferred"].tolist(), side_a, side_b, direction, list(chosen))


@shared_frame
def scorecard_pairs(url: str, dataset_ids: tuple, run_ids: tuple) -> pd.DataFrame:
    """The Scorecard page's pairs and scores of a benchmark's datasets (db.evaluation.scorecard_frame),
    kept as they are (read-only; pluie_core's scorecard works on its own copy): st.cache_data pickled
    the million-row frame when it stored it and unpickled it on every run of the page. Its default
    (the first benchmark in the paper's order, every run) is read ahead."""
    return evaluation.scorecard_frame(get_engine(), dataset_ids, run_ids)


def _scorecard_defaults(url: str) -> None:
    """The Scorecard page's first view: the first benchmark (by name), every run."""
    table = evaluation.benchmark_datasets(get_engine())
    benchmarks = sorted(table["benchmark"].dropna().unique())
    runs = choices(url).runs
    if not benchmarks or runs.empty:
        return
    members = in_paper_order(table[table["benchmark"] == benchmarks[0]])
    scorecard_pairs(url, tuple(int(i) for i in members["id"]), tuple(int(i) for i in runs["id"]))


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner="Counting pairs, labels and scores…")
def store_overview(url: str):
    """The Datasets page's figures (the store's totals, each dataset's progress): seconds at 300,000 labels,
    read again when the store's state (the key) changes; read ahead."""
    return dataset_reads.store_totals(get_engine()), dataset_reads.datasets_overview(get_engine())


# The Correlation page's reads and figures (here, so that its first view is read ahead). The bootstraps
# (a second or more at 100,000 pairs) are cached on their inputs, so that a widget further down does not
# compute them again; the page shows the coefficients alone (n_boot 0) first, with a spinner meanwhile.
@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def graded_values(url: str, dataset_ids: tuple, kind: str, campaign_id, column) -> pd.Series:
    """The Correlation page's graded reference, as read: gold scores, a metadata column, or the mean of the
    labels (``levels``, of a campaign or all) or of imported annotators' values (``raw``); with a campaign,
    its pairs' and its labels' only."""
    if kind == "gold":
        return pairs(url, dataset_ids, False, campaign_id)["gold_label"].rename("reference")
    if kind == "meta":
        return evaluation_reads.meta_column(get_engine(), column, dataset_ids)
    return evaluation_reads.label_means(get_engine(), dataset_ids, kind, campaign_id)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def correlations(scores: pd.DataFrame, reference: pd.Series, systems, n_boot: int, coefficients=None) -> pd.DataFrame:
    """``coefficients``: the n_boot 0 table of the same data, whose r the bootstrap's table reuses."""
    if systems is None:
        return correlate(scores, reference, n_boot=n_boot, coefficients=coefficients)
    return system_level(scores, reference, systems, n_boot=n_boot)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES,
               show_spinner="Comparing the two runs (paired bootstrap)…")
def correlation_difference(a: pd.Series, b: pd.Series, reference: pd.Series, method: str, n_boot: int,
                           max_resample: int = 1000) -> dict:
    return compare_correlations(a, b, reference, method, n_boot=n_boot, max_resample=max_resample)


CORRELATION_BOOT = 1000  # the Correlation page's default number of resamples
GRADED_REFERENCES = {"gold": "Gold scores", "levels": "Mean level of the labels",
                     "raw": "Mean of imported annotator values", "meta": "A metadata column"}


def graded(url: str, dataset_ids: tuple, kind: str, campaign_id, column) -> pd.Series:
    """The Correlation page's graded reference, checked and named (graded_reference: StatsError when it
    cannot be one)."""
    return graded_reference(graded_values(url, dataset_ids, kind, campaign_id, column),
                            column or GRADED_REFERENCES[kind].lower())


def oriented(data: pd.DataFrame, names, runs: pd.DataFrame) -> dict:
    """The runs' scores with a distance negated, so that every correlation measures agreement with the
    humans: name -> scores."""
    direction = runs.set_index("name")["higher_is_similar"]
    return {name: data[name] * (1 if direction.get(name, True) else -1) for name in names}


def _correlation_defaults(url: str, ds: analysis.AnalysisChoices, dataset_ids: tuple[int, ...],
                          campaign_id: Optional[int] = None) -> None:
    """The Correlation page's first view: gold scores against every run with scores (the datasets of the
    first gold scale), the coefficients and their bootstrap intervals, and the first two runs' paired
    test on the first coefficient."""
    if ds.runs.empty:
        return
    # as the page builds them: the pairs with every run's scores, then the reference
    dataset_ids = first_scale(Selection(url, ds, dataset_ids, None, None, campaign_id), "gold")
    data = scored_frame(Selection(url, ds, dataset_ids, None, None, campaign_id), ds.runs["name"].tolist())
    data["reference"] = graded(url, dataset_ids, "gold", campaign_id, None).reindex(data.index)
    names = [name for name in ds.runs["name"] if data[name].notna().sum() > 0]
    if not names or data["reference"].notna().sum() == 0:
        return
    first = correlations(data[names], data["reference"], None, 0)
    correlations(data[names], data["reference"], None, CORRELATION_BOOT, first)
    if len(names) >= 2:
        a, b = oriented(data, names[:2], ds.runs).values()
        correlation_difference(a, b, data["reference"], next(iter(METHODS)), CORRELATION_BOOT)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner="Finding the pairs to review…")
def review_queue(url: str, dataset_ids: tuple[int, ...], show: str = "pending", order: Optional[str] = None,
                 campaign_id: Optional[int] = None) -> pd.DataFrame:
    """The Review page's queue (db.review.review_queue; dataset ids sorted; with ``campaign_id`` the labels
    given in that campaign only): 3 s at 1,000,000 pairs and 3,000,000 labels, and asked again at every
    ← / →. Read again when the store's state changes (a decision, a new label, an answer changed in
    place); read ahead for the default scope. Streamlit keys it on the arguments as passed (a default left
    out is another key): callers pass all five."""
    return review.review_queue(get_engine(), list(dataset_ids), show, aggregation=order, campaign_id=campaign_id)


@shared_frame
def reference_labels(url: str, dataset_ids: tuple[int, ...], kind: str, annotator: Optional[str], gold_cut: float,
                     campaign_id: Optional[int] = None) -> pd.Series:
    """The reference labels (0 / 1, NaN where none) of every pair of the datasets (of a campaign, with
    ``campaign_id``: its pairs, its labels), indexed by pair_id: the gold labels cut, the human majority
    or one annotator. A third of a run of the Thresholds page at 1,000,000 pairs, where it was computed
    twice a run before. Callers pass all six. Gold labels read no label."""
    people = None if kind == "gold" else labels(url, dataset_ids, campaign_id)
    return core.reference_labels(pairs(url, dataset_ids, False, campaign_id), people, core.Reference(kind, annotator, gold_cut))


def reference_for(url: str, dataset_ids: tuple[int, ...], chosen: core.Reference,
                  campaign_id: Optional[int] = None) -> pd.Series:
    """reference_labels of a core.Reference (read-only, shared)."""
    return reference_labels(url, dataset_ids, chosen.kind, chosen.annotator, float(chosen.gold_cut), campaign_id)


@shared_frame
def edit_distances(url: str, dataset_ids: tuple[int, ...]) -> pd.Series:
    return core.edit_distances(pairs(url, dataset_ids, texts=True))


def read_ahead() -> threading.Thread:
    """Read what the analysis pages draw first (the scope they open on — the campaign in progress, or
    every dataset —, the first score run and every run, gold labels of the first scale: the sidebars'
    defaults) into the shared caches on a thread of its own, in this order: the labels and
    their matrices, Agreement's first figures, the Review page's queue, the pairs, the gold reference,
    the first run's scores, Thresholds' first figures, every run's scores, the edit distances, the
    Preferences page's first table, the Scorecard page's pairs and Agreement's annotator tables.
    app.py starts it once, when the server's first admin page has run; the first visit to Agreement,
    Thresholds... then finds them (about 20 s of reading and computing at 1,000,000 pairs and 3,000,000
    labels, bench/pages.py). Each step stands
    alone: one that fails (no labels yet, a reference with one class) leaves the others to run, and the
    page that needs it says what is wrong, in its words. The thread runs at a lower priority than the
    pages where the system allows it (Linux: per thread); a store that changes meanwhile gives new keys,
    so nothing stale is ever shown; it stops when the app is pointed at another store; and the entries
    leave the cache as every entry does (CACHE_SECONDS, CACHE_ENTRIES)."""
    def read() -> None:
        try:
            if hasattr(os, "setpriority"):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except OSError:
            pass
        try:
            read_from = database_url()
            url = store_key()
            ds = choices(url)
        except Exception:  # noqa: BLE001
            logging.getLogger(__name__).debug("reading ahead failed", exc_info=True)
            return
        if ds.datasets.empty:
            return
        try:  # the scope the pages open on (pages.scope): the campaign in progress, or every dataset
            scope = scopes.resolve(scopes.campaigns(url), scopes.default(scopes.campaigns(url)), dataset_names(ds))
        except Exception:  # noqa: BLE001
            logging.getLogger(__name__).debug("reading ahead failed", exc_info=True)
            return
        dataset_ids, campaign = scope.dataset_ids, scope.campaign_id
        if not dataset_ids:
            return
        # the reference pages' first view: gold labels, of the first gold scale when the datasets have several
        gold_ids = first_scale(Selection(url, ds, dataset_ids, None, None, campaign), "gold")
        run_ids = tuple(int(i) for i in ds.runs["id"])
        first = ds.runs.iloc[0] if len(ds.runs) else None

        def label_frames() -> None:
            for scale in core.label_scales(labels(url, dataset_ids, campaign)):
                label_views(url, dataset_ids, scale, campaign)

        steps = [
            lambda: store_overview(url),  # the Datasets page, the first page opened
            label_frames,
            # the Agreement page's first view: the first scale, not binarised, unweighted κ
            lambda: agreement_figures(url, dataset_ids, core.label_scales(labels(url, dataset_ids, campaign))[0],
                                      False, None, campaign),
            lambda: review_queue(url, tuple(sorted(dataset_ids)), "pending", None, campaign),  # as the Review page asks
            lambda: pairs(url, gold_ids, False, campaign),
            lambda: reference_labels(url, gold_ids, "gold", None, 0.5, campaign),  # the sidebars' default reference
        ]
        if first is not None:
            steps += [
                lambda: scores(url, run_ids[:1], gold_ids),  # the first run (most pages)
                lambda: threshold_figures(url, gold_ids, int(first["id"]), "gold", None, 0.5,
                                          bool(first["higher_is_similar"]), core.natural_threshold(first["kind"]),
                                          campaign),
                lambda: scores(url, run_ids, gold_ids),  # every run (Correlation)
            ]
        steps.append(lambda: edit_distances(url, gold_ids))
        steps.append(lambda: _preference_defaults(url))
        steps.append(lambda: _scorecard_defaults(url))
        steps.append(lambda: _correlation_defaults(url, ds, dataset_ids, campaign))
        # last: a second or two at 1M labels, which would otherwise delay every step above
        steps.append(lambda: _agreement_people_defaults(url, ds, dataset_ids, campaign))
        for step in steps:
            if database_url() != read_from:  # the app now uses another store: nothing more to read of this one
                return
            try:
                step()
            except Exception:  # noqa: BLE001 - the page that reads it reports what is wrong, in its words
                logging.getLogger(__name__).debug("reading ahead failed", exc_info=True)


    thread = threading.Thread(target=read, name=READ_AHEAD_THREAD, daemon=True)
    thread.start()
    return thread


READ_AHEAD_THREAD = "pluie-read-ahead"


class _NotFromReadAhead(logging.Filter):
    """Streamlit warns of a "missing ScriptRunContext" for every cached read made off a page's run: the
    read-ahead thread's are made so on purpose (for no session), so that warning is left out of the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != READ_AHEAD_THREAD


logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_NotFromReadAhead())
_read_ahead_started: dict[str, threading.Thread] = {}
_read_ahead_lock = threading.Lock()


def read_ahead_once() -> threading.Thread:
    """:func:`read_ahead`, once per store in this server process, whoever asks first: scripts/serve.py as
    the server starts (`make run`: the first visits find their figures), or app.py after the first admin
    page has run (a server started with `streamlit run app.py`). The thread, running or done."""
    with _read_ahead_lock:
        url = database_url()
        if url not in _read_ahead_started:
            _read_ahead_started[url] = read_ahead()
        return _read_ahead_started[url]


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def people_tables(url: str, dataset_ids: tuple, scale: str, run_id, threshold, higher: bool, campaign_id=None):
    """The Agreement page's annotators' summary and, on the five-level scale with a run, each annotator's
    and the majority's agreement with the run at ``threshold``: a second a run at 3,000,000 labels, so
    cached on what they depend on (the store's state first). Its default view is read ahead. Streamlit
    keys it on the arguments as passed: callers pass all seven (``campaign_id``: its labels only)."""
    rows, _, binary = label_views(url, dataset_ids, scale, campaign_id)
    versus = None
    if run_id is not None and scale == "levels":
        run_scores = scores(url, (run_id,), dataset_ids).iloc[:, 0]
        # every annotator on the scale, those whose labels are all Don't know too (a row that says so)
        versus = human_vs_model_by_annotator(binary, run_scores, threshold, higher,
                                             annotators=sorted(rows["annotator"].unique()))
    return core.annotator_summary(rows, scale, versus, binary), versus


def _agreement_people_defaults(url: str, ds: analysis.AnalysisChoices, dataset_ids: tuple[int, ...],
                               campaign_id: Optional[int] = None) -> None:
    """The Agreement page's first tables: the first scale, the first run at its default threshold."""
    scale = core.label_scales(labels(url, dataset_ids, campaign_id))[0]
    if ds.runs.empty:
        people_tables(url, dataset_ids, scale, None, None, False, campaign_id)
        return
    run = ds.runs.iloc[0]
    if scores(url, (int(run["id"]),), dataset_ids).get(run["name"]) is None:
        return  # the page says there is no score yet and draws no run table
    rule = default_threshold_rule(Selection(url, ds, dataset_ids, run, None, campaign_id))
    people_tables(url, dataset_ids, scale, int(run["id"]), float(rule.value), bool(run["higher_is_similar"]), campaign_id)


def _preference_defaults(url: str) -> None:
    """The Preferences page's first view: every preference dataset, every run (LLM-choice runs too)."""
    available = preference_datasets(url)
    runs = choices(url, preference_runs=True).runs
    if available.empty or runs.empty:
        return
    dataset_ids = tuple(int(i) for i in available["id"])
    names = runs["name"].tolist()
    preferences(url, dataset_ids)
    preference_agreement(url, dataset_ids, tuple(int(i) for i in runs.set_index("name").loc[names, "id"]), tuple(names),
                         runs.set_index("name")["higher_is_similar"].astype(bool).to_dict())


@dataclass
class Selection:
    url: str
    choices: analysis.AnalysisChoices
    dataset_ids: tuple[int, ...]
    run: Optional[pd.Series]  # a row of choices.runs, None when no run is chosen
    reference: Optional[core.Reference]
    campaign_id: Optional[int] = None  # the scope's campaign (its pairs and labels only); None: whole datasets


def _reference_picker(ds: analysis.AnalysisChoices, dataset_ids: tuple[int, ...],
                      campaign_id: Optional[int] = None) -> core.Reference:
    kind = st.radio("Reference", list(REFERENCES), format_func=REFERENCES.get, key="analysis_reference",
                    help="What the metric is compared against: gold labels, the binarised majority of the "
                         "annotators (Don't know ignored, ties give none) or one annotator.")
    annotator = None
    if kind == "annotator":
        people = ds.annotators[ds.annotators["dataset_id"].isin(dataset_ids) | ds.annotators["dataset_id"].isna()]
        if campaign_id is not None:  # the campaign's own people
            people = people[people["campaign_id"] == campaign_id]
        people = people[people["has_labels"]]
        if people.empty:
            st.warning("No one has labelled these datasets yet.")
            st.stop()
        annotator = st.selectbox("Annotator", people["annotator"].tolist(), key="analysis_reference_annotator")
    cut = 0.5
    scored = ds.datasets[ds.datasets["id"].isin(dataset_ids) & ds.datasets["label_kind"].eq("score")]
    if kind == "gold" and not scored.empty:
        cut = st.slider("Gold paraphrase cut (share of the scale)", 0.0, 1.0, 0.5, 0.05, key="analysis_gold_cut",
                        help="Scored gold labels (STS-B 0–5, BIOSSES 0–4, …) count as paraphrase at or above this point.")
        cuts = scored["label_min"] + cut * (scored["label_max"] - scored["label_min"])
        st.caption("Paraphrase when gold ≥ " + ", ".join(f"{c:g} ({user_text(n)})" for n, c in zip(scored["name"], cuts)))
    return core.Reference(kind, annotator, cut)


def dataset_names(ds: analysis.AnalysisChoices) -> dict[int, str]:
    """id -> name of every dataset, in the sidebars' order (by name)."""
    return dict(zip(ds.datasets["id"].astype(int), ds.datasets["name"]))


def sidebar(run: str = "required", reference: bool = True) -> Selection:
    """Draws the shared filters — the scope (pages.scope: a campaign or whole datasets, the same on every
    page), the run, the reference — and stops the page with a sentence when there is nothing to show.
    With a reference, datasets whose references are on different scales are shown one scale at a time
    (one_scale). ``run``: "required", "optional" or "none"."""
    url = store_key()
    ds = choices(url)
    if ds.datasets.empty:
        st.info("No dataset yet: import sentence pairs on the Import page first.")
        st.stop()
    with st.sidebar:
        scope = scopes.pick(url, dataset_names(ds))
        if not scope.dataset_ids:
            st.warning("Choose at least one dataset." if scope.campaign_id is None else
                       "This campaign has no dataset any more: choose another campaign, or whole datasets.")
            st.stop()
        dataset_ids = scope.dataset_ids
        chosen_run = None
        if run != "none" and not ds.runs.empty:
            options = ds.runs["name"].tolist() + ([None] if run == "optional" else [])
            name = st.selectbox("Score run", options, key="analysis_run", format_func=lambda n: n or "None")
            chosen_run = ds.runs[ds.runs["name"] == name].iloc[0] if name else None
        chosen_reference = _reference_picker(ds, dataset_ids, scope.campaign_id) if reference else None
        charts.download_choice()
        if st.button("Reload data", help="Read the store again (new labels and scores show up within a minute anyway)."):
            st.cache_data.clear()
            for read in (_labels, label_views, hover_labels, _pairs, scores, reference_labels, edit_distances):
                read.clear()
    if run == "required" and chosen_run is None:
        st.info("No scores yet: start a score run (PLUIE or a baseline) and come back when some pairs are scored.")
        st.stop()
    selection = Selection(url, ds, dataset_ids, chosen_run, chosen_reference, scope.campaign_id)
    return one_scale(selection, chosen_reference.kind) if reference else selection


SCALE_WIDGET = "analysis_reference_scale"


def scale_groups(selection: Selection, kind: str, present=None) -> list:
    """The selection's datasets grouped by the scale of the reference ``kind`` (pluie_core.analysis.
    reference_scale_groups: gold, majority, annotator; levels, raw, meta). ``present``: the ids of the
    datasets that have the reference at all (the others are left out), when known."""
    chosen = selection.choices.datasets[selection.choices.datasets["id"].isin(selection.dataset_ids)]
    if present is not None and chosen["id"].isin(present).any():
        chosen = chosen[chosen["id"].isin(present)]
    return core.reference_scale_groups(chosen, kind)


def first_scale(selection: Selection, kind: str) -> tuple[int, ...]:
    """The dataset ids one_scale first shows (what the read-ahead reads)."""
    groups = scale_groups(selection, kind)
    return groups[0][1] if len(groups) > 1 else selection.dataset_ids


def one_scale(selection: Selection, kind: str, present=None) -> Selection:
    """The selection narrowed to datasets whose reference shares one scale: when the chosen datasets'
    references are on several (PAWS-X's 0/1 and STS-B's 0–5), the page says so in one sentence and
    shows one scale at a time (a choice above the figures), never one figure over them all. The
    selection as it is when they share one."""
    groups = scale_groups(selection, kind, present)
    if len(groups) < 2:
        return selection
    st.info(user_text(core.scales_sentence(groups, dataset_names(selection.choices))))
    options = [scale.describe() for scale, _ in groups]
    if st.session_state.get(SCALE_WIDGET) not in options:  # another reference's scales: start at the first
        st.session_state.pop(SCALE_WIDGET, None)
    shown = st.radio("Reference scale", options, horizontal=True, key=SCALE_WIDGET,
                     help="Figures are computed over pairs whose reference shares one scale.")
    return replace(selection, dataset_ids=groups[options.index(shown)][1])


def reference_or_stop(selection: Selection, pair_frame: pd.DataFrame) -> pd.Series:
    """The selection's reference labels, or a sentence saying why there are none (and the page stops)."""
    try:
        return reference_for(selection.url, selection.dataset_ids, selection.reference,
                             selection.campaign_id).reindex(pair_frame.index)
    except StatsError as error:
        st.info(user_text(error))
        st.stop()


def scored_frame(selection: Selection, run_names: Optional[list[str]] = None, texts: bool = False) -> pd.DataFrame:
    """Pairs of the chosen datasets with the reference (0/1) and the scores of the chosen run (or
    ``run_names``), one column per run."""
    frame = pairs(selection.url, selection.dataset_ids, texts, selection.campaign_id).copy()
    runs = selection.choices.runs
    names = run_names if run_names is not None else ([selection.run["name"]] if selection.run is not None else [])
    if names:
        run_ids = tuple(int(i) for i in runs.set_index("name").loc[names, "id"])
        frame = frame.join(scores(selection.url, run_ids, selection.dataset_ids))
        for name in names:
            if name not in frame.columns:
                frame[name] = float("nan")
    if selection.reference is not None:
        frame["reference"] = reference_or_stop(selection, frame)
    return frame


USER_THRESHOLDS = "analysis_user_thresholds"  # run id -> the threshold the user set, on any page


def _threshold_reference(selection: Selection) -> tuple[Optional[pd.Series], str]:
    """The reference the default threshold is found against: the page's own, or (on a page
    without a reference picker) the Thresholds page's default: gold labels when the chosen datasets
    have some (on datasets of several gold scales, those of the first scale, as Thresholds first shows
    them), else the human majority."""
    reference, dataset_ids, name = selection.reference, selection.dataset_ids, None
    if reference is None:
        chosen = selection.choices.datasets[selection.choices.datasets["id"].isin(selection.dataset_ids)]
        reference = core.Reference("gold" if chosen["n_gold"].sum() > 0 else "majority")
        groups = scale_groups(selection, reference.kind)
        if len(groups) > 1:
            dataset_ids, name = groups[0][1], f"{reference.describe()} ({groups[0][0].describe()})"
    name = name or reference.describe()
    try:
        return reference_for(selection.url, dataset_ids, reference, selection.campaign_id), name
    except StatsError:
        return None, name


def default_threshold_rule(selection: Selection):
    """The default threshold of the chosen run (pluie_core.analysis.default_threshold), before any the
    user set: what threshold_input shows, and what the read-ahead computes Agreement's tables at."""
    run = selection.run
    values = scores(selection.url, (int(run["id"]),), selection.dataset_ids).get(run["name"], pd.Series(dtype=float))
    reference, reference_name = _threshold_reference(selection) if core.natural_threshold(run["kind"]) is None else (None, "")
    return core.default_threshold(run["kind"], values, reference, bool(run["higher_is_similar"]), reference_name)


def threshold_input(selection: Selection, key: str) -> float:
    """The threshold at which the chosen run calls a pair a paraphrase, by one rule on every page
    (pluie_core.analysis.default_threshold): PLUIE's natural 0; for a metric without one, the
    a-posteriori best against the reference (the Thresholds page's); or the one the user set here
    or on another page. A caption says which."""
    run = selection.run
    run_id = int(run["id"])
    rule = default_threshold_rule(selection)
    user = st.session_state.setdefault(USER_THRESHOLDS, {})
    widget = f"{key}_{run_id}"  # one widget per run: a threshold typed for one run means nothing for another

    def remember() -> None:
        user[run_id] = float(st.session_state[widget])

    # the widget shows the rule's value, or the user's from any page (set before it is drawn)
    st.session_state[widget] = float(user.get(run_id, rule.value))
    threshold = st.sidebar.number_input(
        "Model threshold", key=widget, format="%.4f", on_change=remember,
        help="The same rule on every page: PLUIE's natural threshold 0, an LLM judge's its own (Yes/No 0.5, Likert 4); "
             "a metric without one uses its a-posteriori "
             "best threshold (the Thresholds page's); a threshold you set here holds on every page.",
    )
    if run_id in user and user[run_id] != rule.value:
        st.sidebar.caption(f"Threshold {threshold:.4g}: set by you (the default is {user_text(rule.describe())}, "
                           f"{rule.value:.4g}).")
        if st.sidebar.button("Back to the default threshold", key=f"{widget}_reset"):
            user.pop(run_id)
            st.session_state.pop(widget, None)
            st.rerun()
    else:
        st.sidebar.caption(f"Threshold {threshold:.4g}: {user_text(rule.describe())}.")  # may name an annotator
    return float(threshold)


SMALL_DOWNLOAD_ROWS = 1_000  # tables up to this size get their CSV with the page (download_csv)


def download_csv(frame: pd.DataFrame, file_name: str, label: str = "Download CSV", index: bool = False) -> None:
    """A CSV of the table (texts that a spreadsheet would run as formulas are marked, as in the export)."""
    data = frame.reset_index() if index else frame
    # a large table is encoded when the button is clicked (a callable): 100,000 rows took a second on every
    # run of the page; a small one with the page, as its file then outlives a rerun that races the click
    # (a deferred call goes with the run that made it; see pages/export.py)
    contents = to_csv_bytes(data) if len(data) <= SMALL_DOWNLOAD_ROWS else (lambda: to_csv_bytes(data))
    st.download_button(label, contents, file_name, "text/csv", key=f"csv_{file_name}",
                       on_click="ignore")  # a download reruns nothing


def file_stem(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower() or "table"


def plus_minus(centre: pd.Series, spread: pd.Series) -> pd.Series:
    """"0.812 ± 0.031" per row; "—" where a figure is undefined, so no NaN reaches the page."""
    def fmt(values: pd.Series) -> pd.Series:
        return values.map(lambda v: "—" if pd.isna(v) else f"{v:.3f}")
    return fmt(centre) + " ± " + fmt(spread)
