"""The export: one row per pair with its gold label, every annotator's raw label, the aggregated
and binarised labels and every score — ready to publish as a dataset; and the long format, one
row per label with everything the app collected about it.

Annotators are named as on every analysis page (db.analysis.analysis_choices: the display name
they chose, else the name their link was made under; "name (dataset or campaign)" when two share
it)."""

from __future__ import annotations

from typing import Iterable, Optional

import numpy as np
import pandas as pd
from sqlalchemy import Engine, and_, func, select

from db.analysis import annotator_choices
from db.engine import read_session
from db.models import (
    Annotator,
    Assignment,
    Campaign,
    Dataset,
    GoldPair,
    Label,
    Pair,
    Score,
    ScoreRun,
)
from db.queries import (
    adjudications_in_force,
    campaign_pairs,
    current_adjudications,
    label_conditions,
    number_frame,
    query_frame,
)
from pluie_core.aggregation import (
    DEFAULT_CONFIDENCE,
    DEFAULT_METHOD,
    DEFAULT_MIN_LABELS,
    Aggregation,
    aggregate,
    check_method,
    check_thresholds,
    model_final_levels,
)
from pluie_core.labels import LEVELS, level_name
from pluie_core.review import final_labels, majority_levels

ANNOTATOR_PREFIX = "annotator:"
SCORE_PREFIX = "score:"
# which pairs an export takes, within its datasets (and campaign)
PAIR_SCOPES = {"all": "every pair", "labelled": "labelled pairs", "adjudicated": "adjudicated pairs"}


def pair_conditions(
    dataset_ids: Optional[Iterable[int]] = None,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    include_training: bool = False,
) -> list:
    """SQL conditions on Pair for the pairs an export takes: of the datasets (all when None), of a
    campaign (campaign_pairs), and ``pairs``: "all", "labelled" (at least one label the export
    takes, label_conditions) or "adjudicated" (a reviewer's final level in force)."""
    if pairs not in PAIR_SCOPES:
        raise ValueError("Export every pair, the labelled pairs or the adjudicated pairs.")
    conditions = []
    if dataset_ids is not None:
        conditions.append(Pair.dataset_id.in_([int(d) for d in dataset_ids]))
    else:  # not a large import still being written (db.datasets.import_pair_chunks)
        conditions.append(Pair.dataset_id.not_in(select(Dataset.id).where(Dataset.import_state.is_not(None))))
    if campaign_id is not None:
        conditions.append(Pair.id.in_(campaign_pairs(campaign_id, include_training)))
    if pairs == "labelled":
        # correlated with the pair only, also inside a query on labels
        conditions.append(
            select(Label.id)
            .where(Label.pair_id == Pair.id, *label_conditions(campaign_id, include_training))
            .correlate(Pair)
            .exists()
        )
    elif pairs == "adjudicated":
        decided = adjudications_in_force().subquery()
        conditions.append(Pair.id.in_(select(decided.c.pair_id).where(decided.c.level.is_not(None))))
    return conditions


def _annotator_names(engine: Engine) -> dict[int, str]:
    """Annotator id -> the name every page shows (unique across the store)."""
    people = annotator_choices(engine)
    return dict(zip(people["id"].astype(int), people["annotator"]))


def _whole_numbers(values: pd.Series) -> pd.Series:
    """A column of whole numbers as integers (2, not 2.0; missing stays missing); other columns as they are."""
    known = pd.to_numeric(values, errors="coerce").dropna()
    if len(known) and (known == known.round()).all():
        return pd.to_numeric(values, errors="coerce").round().astype("Int64")
    return values


def export_frame(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    include_training: bool = False,
    *,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    pair_id_range: Optional[tuple[int, int]] = None,
    limit: Optional[int] = None,
    annotator_names: Optional[dict[int, str]] = None,
    aggregation: Optional[str] = None,
    fitted: Optional[Aggregation] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    annotator_columns: bool = True,
) -> pd.DataFrame:
    """Columns: dataset, pair_id (the store's id, as Review, Disagreements and gold marking name
    pairs), external_id (the file's own id), source, hypothesis, label (gold), `annotator:<name>` (the
    raw label: a level 0-4 of the five-level scale, or an imported value on its own scale),
    n_labels, majority_level, majority_label, binary_label, `score:<run>` per score run; with
    ``include_training``, n_training_labels (how many of the pair's labels come from a training
    trial). Levels are integers; an annotator column is named as on the analysis pages.

    majority_level follows pluie_core.labels.majority_level (Don't know ignored, ties across the
    binary boundary give no label); binary_label is the majority of the binarised labels (a tie
    gives none). Both are empty for pairs with no five-level labels.

    final_level / final_label / final_binary / final_source (db.review, pluie_core.review): a
    reviewer's decision where one is in force ("adjudicated"), else, with ``campaign_id``, the
    campaign's gold key where it knows the level ("gold": the organiser's known answer), else the
    majority level ("majority"), else none ("none"); adjudicated_by, adjudicated_at, adjudication_note say who,
    when and why. With a model ``aggregation`` (dawid_skene, glad, mace), its level where it is sure
    enough (final_source then names the method; pluie_core.aggregation.model_final_levels).

    n_flags, flagged_by, comments (VOICE_COLUMNS): how many annotators flagged the pair, who
    (names joined by "; "), and every comment given with a label, one "name: comment" per line.

    ``campaign_id`` takes a campaign's pairs (campaign_pairs) and only the labels given in it;
    ``pairs`` "labelled" or "adjudicated" keeps those pairs only (pair_conditions).
    ``pair_id_range`` (first, last, inclusive) restricts the pairs, for exports streamed in chunks
    (db.publish), which pass ``annotator_names`` (_annotator_names) once instead of per chunk.
    ``limit`` keeps the first pairs only (a preview: the annotator columns are those of these pairs).

    ``aggregation`` (a method of pluie_core.aggregation: majority, dawid_skene, glad, mace) adds
    AGGREGATION_COLUMNS after binary_label: the method, its level over the five levels, that level's
    posterior and the pair's uncertainty (1 - the largest probability), unrounded, fitted on every label
    the export takes (pair_aggregation). Where no reviewer decided, a model method's level is the final
    one only where its posterior is at least ``confidence`` and the fit's median annotator has at least
    ``min_labels`` labels (pluie_core.aggregation.model_final_levels, DEFAULT_CONFIDENCE and
    DEFAULT_MIN_LABELS); elsewhere the majority rule decides, and final_source says which rule did.
    With ``pair_id_range`` or ``limit``, pass ``fitted`` (pair_aggregation(...) over every pair in
    scope, the Aggregation), or it is fitted on every pair in scope first: a fit needs every label, not
    a chunk's.

    ``annotator_columns=False`` leaves the `annotator:<name>` columns out (every other column stays): a
    crowd's wide table would have one per annotator (export_annotator_count, WIDE_ANNOTATOR_COLUMNS).
    """
    if aggregation is not None and pair_id_range is not None and fitted is None:
        raise ValueError("An aggregation method is fitted on every label at once, not on a range of pairs.")
    if aggregation is not None:
        check_method(aggregation)
        confidence, min_labels = check_thresholds(confidence, min_labels)
    scope = pairs
    conditions = pair_conditions(dataset_ids, campaign_id, pairs, include_training)
    with read_session(engine) as session:
        pair_query = (
            select(Pair.id, Dataset.name, Pair.external_id, Pair.source, Pair.hypothesis, Pair.gold_label)
            .join(Dataset, Dataset.id == Pair.dataset_id)
            .where(*conditions)
        )
        if pair_id_range is not None:
            pair_query = pair_query.where(Pair.id.between(int(pair_id_range[0]), int(pair_id_range[1])))
        # plain tuples from the cursor (db.queries.query_frame): a frame of Row objects costs seconds per 100k pairs
        pair_query = pair_query.order_by(Pair.dataset_id, Pair.id)
        if limit is not None:
            pair_query = pair_query.limit(int(limit))
        pairs = query_frame(session, pair_query, ["pair_id", "dataset", "external_id", "source", "hypothesis", "label"])
        ids = pairs["pair_id"].tolist()
        # the labels, scores and decisions of these pairs: by the pairs' own select, not a list of their ids (a
        # million ids are a million bound parameters: past SQLite's and PostgreSQL's limits); a preview's few
        # ids (``limit``) as a list
        if limit is None:
            in_scope = select(Pair.id).where(*conditions)
            if pair_id_range is not None:
                in_scope = in_scope.where(Pair.id.between(int(pair_id_range[0]), int(pair_id_range[1])))
        else:
            in_scope = ids
        label_query = select(
            Label.pair_id, Label.annotator_id, Label.level, Label.value, Label.is_training, Label.comment, Label.flagged
        ).where(Label.pair_id.in_(in_scope), *label_conditions(campaign_id, include_training))
        labels = query_frame(
            session, label_query, ["pair_id", "annotator_id", "level", "value", "is_training", "comment", "flagged"]
        )
        scores = pd.DataFrame(
            session.execute(
                select(Score.pair_id, ScoreRun.name, Score.value)
                .join(ScoreRun, ScoreRun.id == Score.run_id)
                .where(Score.pair_id.in_(in_scope))
            ).all(),
            columns=["pair_id", "run", "value"],
        )
        decided = current_adjudications(session, pair_ids=in_scope)
        keys = gold_key_levels(session, campaign_id)

    out = pairs.set_index(pairs["pair_id"].rename(None))[
        ["dataset", "pair_id", "external_id", "source", "hypothesis", "label"]
    ]
    names: dict[int, str] = {}
    if not labels.empty:
        names = annotator_names if annotator_names is not None else _annotator_names(engine)
        labels["raw"] = labels["level"].where(labels["level"].notna(), labels["value"]).astype(float)
        labels["column"] = ANNOTATOR_PREFIX + labels["annotator_id"].map(names)
        if annotator_columns:
            wide = labels.pivot(index="pair_id", columns="column", values="raw")
            out = out.join(wide[sorted(wide.columns)].apply(_whole_numbers))
        out["n_labels"] = labels.groupby("pair_id").size().reindex(out.index).fillna(0).astype(int)
        majority, binary = _majorities(labels.dropna(subset=["level"]))
        out["majority_level"] = majority.reindex(out.index).astype("Int64")
        out["majority_label"] = out["majority_level"].map(lambda v: level_name(None if pd.isna(v) else int(v)))
        out["binary_label"] = binary.reindex(out.index).astype("Int64")
        if include_training:
            training = labels[labels["is_training"].astype(bool)].groupby("pair_id").size()
            out["n_training_labels"] = training.reindex(out.index).fillna(0).astype(int)
    else:
        out["n_labels"] = 0
        out["majority_level"] = pd.array([pd.NA] * len(out), dtype="Int64")
        out["majority_label"] = ""
        out["binary_label"] = pd.array([pd.NA] * len(out), dtype="Int64")
        if include_training:
            out["n_training_labels"] = 0
    if aggregation is not None:
        if fitted is None:
            fitted = pair_aggregation(
                engine, dataset_ids, include_training, campaign_id=campaign_id, pairs=scope, method=aggregation
            )
        out = out.join(aggregation_columns(fitted.pairs, aggregation, out.index))
    out = _with_final_labels(out, decided, aggregation, fitted, confidence, min_labels, keys)
    out = out.join(_voices(labels, names, out.index))
    if not scores.empty:
        wide_scores = scores.pivot(index="pair_id", columns="run", values="value")
        wide_scores.columns = [SCORE_PREFIX + str(c) for c in wide_scores.columns]
        out = out.join(wide_scores)
    return out.reset_index(drop=True)


def _majorities(labels: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """majority_level and majority_binary (pluie_core.labels) of every pair with five-level labels,
    indexed by pair_id, from the counts of each level per pair (vectorised: no loop over pairs)."""
    pair_ids, index = np.unique(labels["pair_id"].to_numpy(dtype=np.int64), return_inverse=True)
    n_levels = len(LEVELS)
    counts = np.bincount(
        index * n_levels + labels["level"].to_numpy(dtype=float).astype(np.int64), minlength=len(pair_ids) * n_levels
    ).reshape(len(pair_ids), n_levels)
    negative, positive = counts[:, :2].sum(axis=1), counts[:, 2:4].sum(axis=1)
    binary = np.where(positive > negative, 1.0, np.where(negative > positive, 0.0, np.nan))
    return pd.Series(majority_levels(counts[:, :4]), index=pair_ids), pd.Series(binary, index=pair_ids)


FINAL_COLUMNS = [
    "final_level",
    "final_label",
    "final_binary",
    "final_source",
    "adjudicated_by",
    "adjudicated_at",
    "adjudication_note",
]


def _final_table(
    majority: pd.Series,
    adjudicated: pd.Series,
    aggregation: Optional[str] = None,
    fitted: Optional[Aggregation] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    keys: Optional[pd.Series] = None,
) -> pd.DataFrame:
    """pluie_core.review.final_labels of the pairs of ``majority`` (their majority levels): the reviewer's
    level (``adjudicated``), else a campaign's gold key (``keys``, final_source gold), else a model method's
    sure level (pluie_core.aggregation.model_final_levels, from ``fitted``), else the majority level."""
    if aggregation is None or aggregation == DEFAULT_METHOD or fitted is None:
        return final_labels(majority, adjudicated, keys=keys)
    fit = fitted.pairs.reindex(majority.index)
    rule = model_final_levels(
        majority, fit["label"], fit["posterior"], fitted.annotators["n_labels"], aggregation, confidence, min_labels
    )
    return final_labels(rule["level"], adjudicated, rule["source"], keys=keys)


def gold_key_levels(session, campaign_id: Optional[int]) -> Optional[pd.Series]:
    """A campaign's gold keys with a known level (pair_id -> 0-3), which decide their pairs' final labels
    where no reviewer did (final_source gold); None without a campaign (a dataset's export takes no
    campaign's keys)."""
    if campaign_id is None:
        return None
    return pd.Series(
        dict(
            session.execute(
                select(GoldPair.pair_id, GoldPair.level).where(
                    GoldPair.campaign_id == int(campaign_id), GoldPair.level.is_not(None)
                )
            ).all()
        ),
        dtype=float,
    )


def _with_final_labels(
    out: pd.DataFrame,
    decided: pd.DataFrame,
    aggregation: Optional[str] = None,
    fitted: Optional[Aggregation] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    keys: Optional[pd.Series] = None,
) -> pd.DataFrame:
    """FINAL_COLUMNS after binary_label (or n_training_labels): the reviewer's decision, else the
    majority, or the ``aggregation`` method's level where it is sure enough (_final_table; final_source
    then names the method)."""
    in_force = decided[decided["level"].notna()].reindex(out.index)
    final = _final_table(out["majority_level"], in_force["level"], aggregation, fitted, confidence, min_labels, keys)
    final["adjudicated_by"] = in_force["reviewer"]
    final["adjudicated_at"] = pd.to_datetime(in_force["created_at"])
    final["adjudication_note"] = in_force["note"]
    return out.join(final[FINAL_COLUMNS])


AGGREGATION_COLUMNS = ["aggregation", "aggregated_level", "aggregated_label", "posterior", "uncertainty"]


def pair_aggregation(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    include_training: bool = False,
    *,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    method: str = DEFAULT_METHOD,
    scale: str = "levels",
) -> Aggregation:
    """pluie_core.aggregation.aggregate over the five-level labels an export takes (imported values
    aside). With a campaign, its gold pairs' known levels anchor Dawid–Skene (known binary answers
    when ``scale`` is binary) and are held out for the other methods."""
    with read_session(engine) as session:
        # numbers only, read as such: a frame of SQLAlchemy rows took 1.1 s of 1.9 at 300,000 labels
        labels = number_frame(
            session,
            select(Label.pair_id, Label.annotator_id, Label.level).where(
                Label.level.is_not(None),
                Label.pair_id.in_(
                    select(Pair.id).where(*pair_conditions(dataset_ids, campaign_id, pairs, include_training))
                ),
                *label_conditions(campaign_id, include_training),
            ),
            ["pair_id", "annotator", "level"],
            integers=("pair_id", "annotator", "level"),
        )
        gold = None
        if campaign_id is not None:
            known = session.execute(
                select(GoldPair.pair_id, GoldPair.level, GoldPair.binary_label).where(
                    GoldPair.campaign_id == int(campaign_id)
                )
            ).all()
            gold = pd.Series({p: (b if scale == "binary" else lv) for p, lv, b in known}, dtype=float).dropna()
    return aggregate(labels, method, scale, gold=gold)


def aggregation_columns(fitted: pd.DataFrame, method: str, index: pd.Index) -> pd.DataFrame:
    """AGGREGATION_COLUMNS of ``fitted`` (Aggregation.pairs) for the pairs of ``index`` (pair ids)."""
    fitted = fitted.reindex(index)
    level = pd.to_numeric(fitted["label"], errors="coerce").astype("Float64").astype("Int64")
    return pd.DataFrame(
        {
            "aggregation": method,
            "aggregated_level": level,
            "aggregated_label": level.map(lambda v: level_name(None if pd.isna(v) else int(v))),
            "posterior": fitted["posterior"].astype(float),
            "uncertainty": fitted["uncertainty"].astype(float),
        },
        index=index,
    )


def final_decisions(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    include_training: bool = False,
    *,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    aggregation: Optional[str] = None,
    fitted: Optional[Aggregation] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
) -> pd.DataFrame:
    """export_frame's final_level / final_label / final_binary / final_source of every pair it takes for
    the same choices, indexed by pair_id, from the labels' levels, the decisions in force and the fit
    (``fitted``, else fitted here) alone: no table of texts, annotators and scores is built."""
    dataset_ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    if aggregation is not None:
        check_method(aggregation)
        confidence, min_labels = check_thresholds(confidence, min_labels)
        if fitted is None:
            fitted = pair_aggregation(
                engine, dataset_ids, include_training, campaign_id=campaign_id, pairs=pairs, method=aggregation
            )
    conditions = pair_conditions(dataset_ids, campaign_id, pairs, include_training)
    with read_session(engine) as session:
        ids = number_frame(session, select(Pair.id).where(*conditions), ["pair_id"], integers=["pair_id"])["pair_id"]
        labels = number_frame(
            session,
            select(Label.pair_id, Label.level).where(
                Label.level.is_not(None),
                Label.pair_id.in_(select(Pair.id).where(*conditions)),
                *label_conditions(campaign_id, include_training),
            ),
            ["pair_id", "level"],
            integers=("pair_id",),
        )
        decided = current_adjudications(session, dataset_ids)
        keys = gold_key_levels(session, campaign_id)
    index = pd.Index(ids.to_numpy(), name="pair_id")
    majority = _majorities(labels)[0].reindex(index).astype("Float64")
    adjudicated = decided["level"][decided["level"].notna()].reindex(index)
    return _final_table(majority, adjudicated, aggregation, fitted, confidence, min_labels, keys)


def final_source_counts(
    engine: Engine, dataset_ids: Optional[Iterable[int]] = None, include_training: bool = False, **choice
) -> dict[str, int]:
    """How many pairs each rule decided ({final_source: pairs}, pluie_core.review.FINAL_SOURCES that
    occur) among those export_frame takes for the same choices (final_decisions' keywords: campaign_id,
    pairs, aggregation, fitted, confidence, min_labels): its final_source column, counted."""
    final = final_decisions(engine, dataset_ids, include_training, **choice)
    return {str(source): int(n) for source, n in final["final_source"].value_counts().items()}


VOICE_COLUMNS = ["n_flags", "flagged_by", "comments"]


def _voices(labels: pd.DataFrame, names: dict[int, str], index: pd.Index) -> pd.DataFrame:
    """VOICE_COLUMNS per pair (indexed like ``index``): the annotators' flags and comments."""
    out = pd.DataFrame(index=index)
    flagged = labels[labels["flagged"].fillna(False).astype(bool)]
    out["n_flags"] = flagged.groupby("pair_id").size().reindex(index).fillna(0).astype(int)
    who = flagged.assign(name=flagged["annotator_id"].map(names)).sort_values("name")
    out["flagged_by"] = who.groupby("pair_id")["name"].agg("; ".join).reindex(index)
    said = labels[labels["comment"].notna() & (labels["comment"].astype(str) != "")]
    said = said.assign(name=said["annotator_id"].map(names)).sort_values(["name"])
    lines = said["name"].astype(str) + ": " + said["comment"].astype(str)
    out["comments"] = lines.groupby(said["pair_id"]).agg("\n".join).reindex(index)
    return out


LONG_COLUMNS = [
    "dataset",
    "pair_id",
    "external_id",
    "source",
    "hypothesis",
    "annotator",
    "display_name",
    "link_name",
    "campaign",
    "english_level",
    "level",
    "level_name",
    "value",
    "is_training",
    "is_gold_check",
    "sentence_on_top",
    "seconds_spent",
    "comment",
    "flagged",
    "created_at",
    "updated_at",
]


def export_labels(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    include_training: bool = False,
    *,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    limit: Optional[int] = None,
    aggregation: Optional[str] = None,
    fitted: Optional[Aggregation] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    pair_id_range: Optional[tuple[int, int]] = None,
) -> pd.DataFrame:
    """The long format: one row per label. Columns: dataset, pair_id, external_id, source,
    hypothesis; annotator (the name every page shows), display_name (the one they chose),
    link_name (the one their personal link was made under), campaign, english_level; level (an
    integer 0-4 of the five-level scale, empty for an imported value), level_name, value (an
    imported value on its own scale), is_training (a label of the training trial), is_gold_check
    (an answer to a campaign's gold check), sentence_on_top ("source" or "hypothesis", as the
    labelling view showed the pair), seconds_spent, comment (the annotator's, empty when none),
    flagged (they flagged the pair for review), created_at, updated_at (UTC).
    ``campaign_id`` and ``pairs`` restrict the pairs and labels as in export_frame; ``limit`` keeps the
    first labels only (a preview); ``pair_id_range`` (first, last, inclusive) the labels of those pairs only
    (a download streamed in chunks, db.publish.export_chunks); ``aggregation`` adds export_frame's AGGREGATION_COLUMNS of the
    label's pair to every row, then the pair's final_level and final_source as export_frame gives them
    (``fitted``, ``confidence``, ``min_labels``: as there)."""
    dataset_ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    query = (
        select(
            Dataset.name,
            Pair.id,
            Pair.external_id,
            Pair.source,
            Pair.hypothesis,
            Label.annotator_id,
            Annotator.display_name,
            Annotator.name,
            Campaign.name,
            Annotator.english_level,
            Label.level,
            Label.value,
            Label.is_training,
            Assignment.is_gold,
            Label.source_on_top,
            Label.seconds_spent,
            Label.comment,
            Label.flagged,
            Label.created_at,
            Label.updated_at,
        )
        .join(Pair, Pair.id == Label.pair_id)
        .join(Dataset, Dataset.id == Pair.dataset_id)
        .join(Annotator, Annotator.id == Label.annotator_id)
        .outerjoin(Campaign, Campaign.id == Label.campaign_id)
        .outerjoin(
            Assignment,
            and_(
                Assignment.campaign_id == Label.campaign_id,  # unique: at most one row
                Assignment.annotator_id == Label.annotator_id,
                Assignment.pair_id == Label.pair_id,
            ),
        )
        .where(
            *pair_conditions(dataset_ids, campaign_id, pairs, include_training),
            *label_conditions(campaign_id, include_training),
        )
        .order_by(Pair.dataset_id, Pair.id, Label.annotator_id)
    )
    if pair_id_range is not None:
        query = query.where(Pair.id.between(int(pair_id_range[0]), int(pair_id_range[1])))
    if limit is not None:
        query = query.limit(int(limit))
    with read_session(engine) as session:
        rows = session.execute(query).all()
    columns = [
        "dataset",
        "pair_id",
        "external_id",
        "source",
        "hypothesis",
        "annotator_id",
        "display_name",
        "link_name",
        "campaign",
        "english_level",
        "level",
        "value",
        "is_training",
        "is_gold_check",
        "source_on_top",
        "seconds_spent",
        "comment",
        "flagged",
        "created_at",
        "updated_at",
    ]
    labels = pd.DataFrame(rows, columns=columns)
    labels["annotator"] = labels["annotator_id"].map(_annotator_names(engine))
    labels["level"] = pd.to_numeric(labels["level"], errors="coerce").astype("Int64")
    labels["level_name"] = labels["level"].map(lambda v: level_name(None if pd.isna(v) else int(v)))
    labels["value"] = _whole_numbers(labels["value"].astype(float))
    labels["is_training"] = labels["is_training"].astype(bool)
    labels["flagged"] = labels["flagged"].fillna(False).astype(bool)
    labels["is_gold_check"] = labels["is_gold_check"].fillna(False).astype(bool)
    on_top = labels["source_on_top"].map({True: "source", False: "hypothesis"})
    labels["sentence_on_top"] = on_top.where(labels["source_on_top"].notna(), None)
    if aggregation is None:
        return labels[LONG_COLUMNS]
    check_method(aggregation)
    if fitted is None:
        fitted = pair_aggregation(
            engine, dataset_ids, include_training, campaign_id=campaign_id, pairs=pairs, method=aggregation
        )
    on_pairs = pd.Index(labels["pair_id"])
    columns = aggregation_columns(fitted.pairs, aggregation, on_pairs)
    final = final_decisions(
        engine,
        dataset_ids,
        include_training,
        campaign_id=campaign_id,
        pairs=pairs,
        aggregation=aggregation,
        fitted=fitted,
        confidence=confidence,
        min_labels=min_labels,
    )
    for column in ("final_level", "final_source"):  # a pair's labels share its row of ``final``
        columns[column] = final[column].reindex(on_pairs).array
    return pd.concat([labels[LONG_COLUMNS], columns.reset_index(drop=True)], axis=1)


# Beyond this many annotators, the Export page's wide file leaves out their columns (the long one has every
# label): 6,030 annotators over 100,000 pairs made a table of 603,000,000 cells, 53 s and 13 GB to build.
WIDE_ANNOTATOR_COLUMNS = 200


def export_annotator_count(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    include_training: bool = False,
    *,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    above: Optional[int] = None,
) -> int:
    """How many annotators have a label in what export_frame takes for the same choices: the number of
    its `annotator:<name>` columns. With ``above``, a store whose annotators number at most that many in
    all answers that number, an upper bound, without reading a label (0.3 s at 300,000 labels)."""
    with read_session(engine) as session:
        if above is not None:
            everyone = int(session.execute(select(func.count(Annotator.id))).scalar_one())
            if everyone <= above:
                return everyone
        conditions = pair_conditions(dataset_ids, campaign_id, pairs, include_training)
        query = (
            select(func.count(func.distinct(Label.annotator_id)))
            .join(Pair, Pair.id == Label.pair_id)
            .where(*conditions, *label_conditions(campaign_id, include_training))
        )
        return int(session.execute(query).scalar_one())


def export_size(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    include_training: bool = False,
    *,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    layout: str = "wide",
) -> int:
    """How many rows export_frame (``layout`` "wide": pairs) or export_labels ("long": labels) returns for
    the same choices, counted in the store without building the table."""
    conditions = pair_conditions(dataset_ids, campaign_id, pairs, include_training)
    if layout == "wide":
        query = select(func.count(Pair.id)).where(*conditions)
    else:
        query = (
            select(func.count(Label.id))
            .join(Pair, Pair.id == Label.pair_id)
            .where(*conditions, *label_conditions(campaign_id, include_training))
        )
    with read_session(engine) as session:
        return int(session.execute(query).scalar_one())


def gold_check_answers(
    engine_or_session,
    dataset_ids: Optional[Iterable[int]] = None,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    include_training: bool = False,
) -> int:
    """How many of the labels an export takes answer a campaign's gold check (served as a check)."""
    query = (
        select(func.count())
        .select_from(Label)
        .join(Pair, Pair.id == Label.pair_id)
        .join(
            Assignment,
            and_(
                Assignment.campaign_id == Label.campaign_id,
                Assignment.annotator_id == Label.annotator_id,
                Assignment.pair_id == Label.pair_id,
            ),
        )
        .where(
            Assignment.is_gold.is_(True),
            *pair_conditions(dataset_ids, campaign_id, pairs, include_training),
            *label_conditions(campaign_id, include_training),
        )
    )
    if isinstance(engine_or_session, Engine):
        with read_session(engine_or_session) as session:
            return int(session.scalar(query))
    return int(engine_or_session.scalar(query))


LEVEL_LEGEND = {i: name for i, name in enumerate(LEVELS)}
