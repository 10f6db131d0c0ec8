"""Every read the analysis pages make (agreement, thresholds, distributions, disagreements), as
DataFrames; what is computed from them (references, label matrices, the per-annotator summary) is
in pluie_core.analysis.

Reads fetch ids and numbers in one query per table and join the few names (datasets, runs,
annotators) in pandas; nothing loops over rows in Python, so 300,000 labels load in about half a
second of CPU (bench/analysis.py). Training-trial labels are never part of an analysis.

Annotators are keyed by a display name unique across the store ("A", or "A (BIOSSES)" when two
datasets both have an annotator A), the column names of every label matrix.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import numpy as np
import pandas as pd
from sqlalchemy import Engine, case, exists, func, insert, select, union

from db.engine import read_session, write_session
from db.models import Annotator, Campaign, CampaignDataset, Dataset, GoldPair, Label, Pair, Score, ScoreRun
from db.queries import as_ids, campaign_pairs, number_frame, query_frame
from pluie_core.labels import LEVELS
from pluie_core.run_kinds import BASELINE
from pluie_core.stats import cell_table

__all__ = [
    "AnalysisChoices",
    "analysis_choices",
    "campaign_choices",
    "labels_long",
    "pairs_frame",
    "scores_wide",
    "pair_detail",
    "pairs_detail",
    "add_score_run",
    "add_labels",
    "counted_label",
    "LABELS_COUNTED",
]

# The one definition of "labels" behind every count, rate and α of every page and the dataset card.
LABELS_COUNTED = (
    "every answer given, Don't know and answers to gold checks included; the training trial's answers are left out"
)


def counted_label():
    """The labels every figure counts (LABELS_COUNTED): all but the training trial's. Answers to gold
    checks are labels of their pair like any other (they are exported and published with it)."""
    return Label.is_training.is_(False)


LABEL_COLUMNS = [
    "pair_id",
    "annotator_id",
    "annotator",
    "level",
    "value",
    "english_level",
    "seconds_spent",
    "dataset_id",
    "dataset",
]


def pair_datasets(session, dataset_ids: Optional[list[int]]) -> pd.Series:
    """dataset_id of every pair (of the given datasets), indexed by pair_id. Read from the
    dataset_id index alone: joining labels or scores to the pairs table instead reads the pairs'
    texts, page by page, and costs three times as much."""
    query = select(Pair.id, Pair.dataset_id)
    if dataset_ids is not None:
        query = query.where(Pair.dataset_id.in_(dataset_ids))
    else:  # not a large import still being written (db.datasets.import_pair_chunks)
        query = query.where(Pair.dataset_id.not_in(select(Dataset.id).where(Dataset.import_state.is_not(None))))
    frame = number_frame(session, query, ["pair_id", "dataset_id"], integers=["pair_id", "dataset_id"])
    return pd.Series(frame["dataset_id"].to_numpy(), index=frame["pair_id"].to_numpy())


# --------------------------------------------------------------------------- what there is to analyse


@dataclass
class AnalysisChoices:
    datasets: pd.DataFrame  # id, name, label_kind, label_min, label_max, n_pairs, n_gold, n_gold_other
    runs: pd.DataFrame  # id, name, kind, model, higher_is_similar, status, n_scores (runs with scores only)
    annotators: pd.DataFrame  # id, annotator (unique key), name, dataset_id, campaign_id, english_level, has_labels


def _annotator_keys(annotators: pd.DataFrame) -> pd.Series:
    """Display names unique across the store: the name, then "name (dataset or campaign)", then "#id"."""
    keys = annotators["name"].astype(str)
    shared = keys.duplicated(keep=False)
    keys = keys.where(~shared, keys + " (" + annotators["scope"].fillna("?").astype(str) + ")")
    shared = keys.duplicated(keep=False)
    return keys.where(~shared, keys + " #" + annotators["id"].astype(str))


def analysis_choices(engine: Engine) -> AnalysisChoices:
    """The datasets, score runs (those with at least one score) and annotators the sidebars offer."""
    with read_session(engine) as session:
        datasets = query_frame(
            session,
            select(
                Dataset.id,
                Dataset.name,
                Dataset.label_kind,
                Dataset.label_min,
                Dataset.label_max,
                func.count(Pair.id),
                func.count(Pair.gold_label),
                # gold labels other than 0 and 1: a dataset of unknown kind with none is binary
                func.count(case((Pair.gold_label.not_in([0.0, 1.0]), 1))),
            )
            .outerjoin(Pair, Pair.dataset_id == Dataset.id)
            .where(Dataset.import_state.is_(None))
            .group_by(Dataset.id)
            .order_by(Dataset.name),
            ["id", "name", "label_kind", "label_min", "label_max", "n_pairs", "n_gold", "n_gold_other"],
        )
        runs = query_frame(
            session,
            select(
                ScoreRun.id,
                ScoreRun.name,
                ScoreRun.kind,
                ScoreRun.model,
                ScoreRun.higher_is_similar,
                ScoreRun.status,
                func.count(Score.id),
            )
            .join(Score, Score.run_id == ScoreRun.id)
            .group_by(ScoreRun.id)
            .order_by(ScoreRun.name),
            ["id", "name", "kind", "model", "higher_is_similar", "status", "n_scores"],
        )
    return AnalysisChoices(datasets, runs, annotator_choices(engine))


def annotator_choices(engine: Engine) -> pd.DataFrame:
    """The annotators (AnalysisChoices.annotators) alone: what naming the people of a pair's labels
    needs, without counting every pair of each dataset and every score of each run (0.4 s at
    1,000,000 pairs, on every run of the Review page)."""
    with read_session(engine) as session:
        annotators = query_frame(
            session,
            select(
                Annotator.id,
                Annotator.name,
                Annotator.display_name,
                Annotator.dataset_id,
                Annotator.campaign_id,
                Annotator.english_level,
                func.coalesce(Dataset.name, Campaign.name),
                # EXISTS stops at the first label (indexed by annotator): no scan of every label
                exists().where(Label.annotator_id == Annotator.id, Label.is_training.is_(False)),
            )
            .outerjoin(Dataset, Dataset.id == Annotator.dataset_id)
            .outerjoin(Campaign, Campaign.id == Annotator.campaign_id)
            .where(Dataset.import_state.is_(None))  # not those of a large import still being written
            .order_by(Annotator.name, Annotator.id),
            ["id", "name", "display_name", "dataset_id", "campaign_id", "english_level", "scope", "has_labels"],
        )
    annotators["has_labels"] = annotators["has_labels"].astype(bool)
    annotators["name"] = annotators["display_name"].fillna(annotators["name"])
    annotators.insert(1, "annotator", _annotator_keys(annotators))
    return annotators.drop(columns=["display_name", "scope"])


def campaign_choices(engine: Engine) -> pd.DataFrame:
    """The campaigns a page can be scoped to, the campaign in progress first: id, name, active,
    last_label (the id of its latest label, training answers too: labels are numbered as they are given,
    so the highest is its latest activity; None when it has none) and dataset_ids (a tuple: its datasets
    and those of its gold pairs). Ordered by latest activity, then the newest created. Each campaign's
    latest label is a seek on the labels' campaign index, not a scan of its labels."""
    latest = select(func.max(Label.id)).where(Label.campaign_id == Campaign.id).correlate(Campaign).scalar_subquery()
    with read_session(engine) as session:
        rows = session.execute(
            select(Campaign.id, Campaign.name, Campaign.active, latest).order_by(
                latest.is_(None), latest.desc(), Campaign.created_at.desc(), Campaign.id.desc()
            )
        ).all()
        members = session.execute(
            union(
                select(CampaignDataset.campaign_id, CampaignDataset.dataset_id),
                select(GoldPair.campaign_id, Pair.dataset_id).join(Pair, Pair.id == GoldPair.pair_id),
            )
        ).all()
    datasets: dict[int, list[int]] = {}
    for campaign_id, dataset_id in members:
        datasets.setdefault(int(campaign_id), []).append(int(dataset_id))
    return pd.DataFrame(
        {
            "id": [int(r[0]) for r in rows],
            "name": [r[1] for r in rows],
            "active": [bool(r[2]) for r in rows],
            "last_label": [None if r[3] is None else int(r[3]) for r in rows],
            "dataset_ids": [tuple(sorted(datasets.get(int(r[0]), []))) for r in rows],
        },
        columns=["id", "name", "active", "last_label", "dataset_ids"],
    )


# --------------------------------------------------------------------------- reads


def labels_long(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    annotator_ids: Optional[Iterable[int]] = None,
    annotators: Optional[pd.DataFrame] = None,
    campaign_id: Optional[int] = None,
) -> pd.DataFrame:
    """One row per (non-training) label: pair_id, annotator_id, annotator (unique key), level (0-4
    float, NaN for an imported value on its own scale), value (the raw imported value, NaN for
    labels given in the app), english_level, seconds_spent, dataset_id, dataset.
    ``annotators`` (from ``analysis_choices``) saves the query that names them. ``campaign_id``: only
    the labels given in that campaign (another campaign on the same pairs, a pilot, is never mixed in)."""
    dataset_ids, annotator_ids = as_ids(dataset_ids), as_ids(annotator_ids)
    query = select(Label.pair_id, Label.annotator_id, Label.level, Label.value, Label.seconds_spent).where(
        counted_label()
    )
    if annotator_ids is not None:
        query = query.where(Label.annotator_id.in_(annotator_ids))
    if campaign_id is not None:
        query = query.where(Label.campaign_id == int(campaign_id))
    with read_session(engine) as session:
        labels = number_frame(
            session,
            query,
            ["pair_id", "annotator_id", "level", "value", "seconds_spent"],
            integers=["pair_id", "annotator_id"],
        )
        dataset_of_pair = pair_datasets(session, dataset_ids)
        dataset_names = dict(session.execute(select(Dataset.id, Dataset.name)).all())
    labels["dataset_id"] = dataset_of_pair.reindex(labels["pair_id"]).to_numpy()
    labels = labels[labels["dataset_id"].notna()].reset_index(drop=True)
    labels["dataset_id"] = labels["dataset_id"].astype(int)
    if annotators is None:
        annotators = annotator_choices(engine)
    people = annotators.set_index("id")
    labels["annotator"] = labels["annotator_id"].map(people["annotator"])
    labels["english_level"] = labels["annotator_id"].map(people["english_level"])
    labels["dataset"] = labels["dataset_id"].map(dataset_names)
    for column in ("level", "value", "seconds_spent"):
        labels[column] = pd.to_numeric(labels[column], errors="coerce").astype(float)
    return labels[LABEL_COLUMNS]


def pairs_frame(
    engine: Engine, dataset_ids: Optional[Iterable[int]] = None, texts: bool = False, campaign_id: Optional[int] = None
) -> pd.DataFrame:
    """Pairs indexed by pair_id: dataset_id, dataset, label_kind, label_min, label_max, gold_label
    (float, NaN when none); with ``texts`` also external_id, source and hypothesis. ``campaign_id``:
    only that campaign's pairs (db.export.campaign_pairs: its queue, its gold pairs, the pairs labelled
    in it)."""
    dataset_ids = as_ids(dataset_ids)
    columns = [Pair.id, Pair.dataset_id, Pair.gold_label]
    names = ["pair_id", "dataset_id", "gold_label"]
    if texts:
        columns += [Pair.external_id, Pair.source, Pair.hypothesis]
        names += ["external_id", "source", "hypothesis"]
    query = select(*columns).order_by(Pair.id)
    if dataset_ids is not None:
        query = query.where(Pair.dataset_id.in_(dataset_ids))
    else:  # not a large import still being written
        query = query.where(Pair.dataset_id.not_in(select(Dataset.id).where(Dataset.import_state.is_not(None))))
    if campaign_id is not None:
        query = query.where(Pair.id.in_(campaign_pairs(campaign_id)))
    with read_session(engine) as session:
        pairs = (
            query_frame(session, query, names)
            if texts
            else number_frame(session, query, names, integers=["pair_id", "dataset_id"])
        )
        datasets = query_frame(
            session,
            select(Dataset.id, Dataset.name, Dataset.label_kind, Dataset.label_min, Dataset.label_max),
            ["dataset_id", "dataset", "label_kind", "label_min", "label_max"],
        )
    pairs["gold_label"] = pd.to_numeric(pairs["gold_label"], errors="coerce").astype(float)
    pairs = pairs.merge(datasets, on="dataset_id", how="left").set_index("pair_id")
    order = ["dataset_id", "dataset", "label_kind", "label_min", "label_max", "gold_label"]
    return pairs[order + [c for c in names[3:]]]


def scores_wide(engine: Engine, run_ids: Iterable[int], dataset_ids: Optional[Iterable[int]] = None) -> pd.DataFrame:
    """Scores indexed by pair_id, one float column per run (named after the run); only pairs with
    at least one of these scores."""
    run_ids, dataset_ids = as_ids(run_ids), as_ids(dataset_ids)
    query = select(Score.pair_id, Score.run_id, Score.value).where(Score.run_id.in_(run_ids))
    with read_session(engine) as session:
        scores = number_frame(session, query, ["pair_id", "run_id", "value"], integers=["pair_id", "run_id"])
        if dataset_ids is not None:
            scores = scores[scores["pair_id"].isin(pair_datasets(session, dataset_ids).index)]
        run_names = dict(session.execute(select(ScoreRun.id, ScoreRun.name).where(ScoreRun.id.in_(run_ids))).all())
    # pivot's table (pairs sorted, the runs in the order asked) without pivot's unstack (0.5 s at
    # 2,000,000 scores); a run scores a pair once (uq_scores_run_pair)
    runs = [r for r in run_ids if r in run_names]
    scores = scores[scores["run_id"].isin(runs)]
    rows, pair_ids = pd.factorize(scores["pair_id"], sort=True)
    columns = scores["run_id"].map({r: j for j, r in enumerate(runs)}).to_numpy(dtype=np.int64)
    return cell_table(
        rows,
        np.asarray(pair_ids, dtype=np.int64),
        columns,
        [run_names[r] for r in runs],
        scores["value"],
        index_name="pair_id",
    )


def pair_detail(engine: Engine, pair_id: int, annotators: Optional[pd.DataFrame] = None) -> dict:
    """One pair with every label and every score: {"pair": dict (dataset, external_id, source,
    hypothesis, gold_label), "labels": DataFrame (annotator, level, level_name, value, english_level,
    seconds_spent, comment, flagged: the annotator's comment and flag), "scores": DataFrame (run,
    kind, value)}; None when the pair does not exist."""
    with read_session(engine) as session:
        row = session.execute(
            select(Dataset.name, Pair.external_id, Pair.source, Pair.hypothesis, Pair.gold_label)
            .join(Dataset, Dataset.id == Pair.dataset_id)
            .where(Pair.id == int(pair_id))
        ).first()
        if row is None:
            return None
        scores = query_frame(
            session,
            select(ScoreRun.name, ScoreRun.kind, Score.value)
            .join(ScoreRun, ScoreRun.id == Score.run_id)
            .where(Score.pair_id == int(pair_id))
            .order_by(ScoreRun.name),
            ["run", "kind", "value"],
        )
        labels = query_frame(
            session,
            select(
                Label.annotator_id, Label.level, Label.value, Label.seconds_spent, Label.comment, Label.flagged
            ).where(Label.pair_id == int(pair_id), Label.is_training.is_(False)),
            ["annotator_id", "level", "value", "seconds_spent", "comment", "flagged"],
        )
    if annotators is None:
        annotators = annotator_choices(engine)
    people = annotators.set_index("id")
    labels.insert(0, "annotator", labels["annotator_id"].map(people["annotator"]))
    labels["level_name"] = labels["level"].map(lambda level: LEVELS[int(level)] if pd.notna(level) else "")
    labels["english_level"] = labels["annotator_id"].map(people["english_level"])
    labels["comment"] = labels["comment"].fillna("").astype(str)
    labels["flagged"] = labels["flagged"].fillna(False).astype(bool)
    labels = labels.sort_values("annotator")[
        ["annotator", "level", "level_name", "value", "english_level", "seconds_spent", "comment", "flagged"]
    ]
    pair = dict(zip(("dataset", "external_id", "source", "hypothesis", "gold_label"), row))
    return {"pair": pair, "labels": labels.reset_index(drop=True), "scores": scores}


def pairs_detail(
    engine: Engine,
    pair_ids: Iterable[int],
    campaign_id: Optional[int] = None,
    annotators: Optional[pd.DataFrame] = None,
) -> dict:
    """Several pairs with every label and every score, in one read per table (the pairs a chart's
    selection lists): {"pairs": DataFrame indexed by pair_id in the order asked (dataset, external_id,
    source, hypothesis, gold_label; pairs that do not exist left out), "labels": DataFrame (pair_id,
    annotator, level, level_name, value), "scores": DataFrame (pair_id, run, value)}. ``campaign_id``:
    only the labels given in that campaign, as the analysis pages scoped to it count them."""
    pair_ids = list(dict.fromkeys(int(p) for p in pair_ids))
    with read_session(engine) as session:
        pairs = query_frame(
            session,
            select(Pair.id, Dataset.name, Pair.external_id, Pair.source, Pair.hypothesis, Pair.gold_label)
            .join(Dataset, Dataset.id == Pair.dataset_id)
            .where(Pair.id.in_(pair_ids)),
            ["pair_id", "dataset", "external_id", "source", "hypothesis", "gold_label"],
        )
        scores = query_frame(
            session,
            select(Score.pair_id, ScoreRun.name, Score.value)
            .join(ScoreRun, ScoreRun.id == Score.run_id)
            .where(Score.pair_id.in_(pair_ids))
            .order_by(Score.pair_id, ScoreRun.name),
            ["pair_id", "run", "value"],
        )
        query = select(Label.pair_id, Label.annotator_id, Label.level, Label.value).where(
            Label.pair_id.in_(pair_ids), counted_label()
        )
        if campaign_id is not None:
            query = query.where(Label.campaign_id == int(campaign_id))
        labels = query_frame(session, query, ["pair_id", "annotator_id", "level", "value"])
    if annotators is None:
        annotators = annotator_choices(engine)
    labels.insert(1, "annotator", labels["annotator_id"].map(annotators.set_index("id")["annotator"]))
    labels["level_name"] = labels["level"].map(lambda level: LEVELS[int(level)] if pd.notna(level) else "")
    labels = labels.sort_values(["pair_id", "annotator"])[["pair_id", "annotator", "level", "level_name", "value"]]
    pairs["gold_label"] = pd.to_numeric(pairs["gold_label"], errors="coerce").astype(float)
    pairs = pairs.set_index("pair_id").reindex([p for p in pair_ids if p in set(pairs["pair_id"])])
    return {"pairs": pairs, "labels": labels.reset_index(drop=True), "scores": scores}


# --------------------------------------------------------------------------- bulk writes (tests, bench, scripts)


def add_score_run(
    engine: Engine,
    name: str,
    values: Mapping[int, float] | pd.Series,
    kind: str = BASELINE,
    higher_is_similar: bool = True,
    model: str = "",
) -> int:
    """A finished score run with one score per pair ({pair_id: value}), written in one bulk insert.
    For tests, the bench and the screenshot script; the worker writes its scores itself. The run is
    left "paused" so that no worker claims it."""
    values = pd.Series(values, dtype=float).dropna()
    with write_session(engine) as session:
        run = ScoreRun(name=name, kind=kind, model=model, higher_is_similar=higher_is_similar, status="paused")
        session.add(run)
        session.flush()
        if len(values):
            session.execute(
                insert(Score),
                [
                    {"run_id": run.id, "pair_id": int(pair_id), "value": float(value)}
                    for pair_id, value in values.items()
                ],
            )
        return run.id


def add_labels(engine: Engine, labels: pd.DataFrame, english_levels: Optional[Mapping[str, str]] = None) -> int:
    """Labels of new annotators in one bulk insert, for the bench and tests (the annotation pages
    write real labels). Columns: pair_id, annotator (name), level (0-4), optional value and
    seconds_spent. Returns the number of labels written."""
    english_levels = english_levels or {}
    with write_session(engine) as session:
        people = [
            Annotator(name=name, english_level=english_levels.get(name))
            for name in sorted(labels["annotator"].unique())
        ]
        session.add_all(people)
        session.flush()
        frame = pd.DataFrame(
            {
                "pair_id": labels["pair_id"].astype(int),
                "annotator_id": labels["annotator"].map({person.name: person.id for person in people}).astype(int),
                "level": labels["level"],
                "value": labels["value"] if "value" in labels else np.nan,
                "seconds_spent": labels["seconds_spent"] if "seconds_spent" in labels else np.nan,
            }
        )
        frame["is_training"] = False
        records = frame.astype(object).where(frame.notna(), None).to_dict("records")
        if records:
            session.execute(insert(Label), records)
        return len(records)


def store_version(engine: Engine) -> tuple:
    """A cheap fingerprint of what the analysis pages read (counts and last ids, ~25 ms at 300,000
    labels): it changes when pairs, labels, reviewers' decisions, scores, annotators, datasets,
    campaigns or preferences are added or removed, or a run changes, so a cache keyed on it shows them at once.
    A label changed in place (an answer changed through Back, with its comment and flag) moves
    labels' latest updated_at (a seek on ix_labels_updated_at). A dataset renamed changes none of
    those: the datasets' names (a few rows) are read whole and their checksum ends the tuple."""
    from db.models import Adjudication, Preference

    counted = [
        (Pair.id, None),
        (Label.id, Label.updated_at),
        (Score.id, None),
        (ScoreRun.id, ScoreRun.updated_at),
        (Annotator.id, None),
        (Dataset.id, None),
        (Adjudication.id, None),
        (Preference.id, None),
        (Campaign.id, None),
    ]
    columns = []
    for key, changed in counted:
        columns += [
            select(func.count()).select_from(key.table).scalar_subquery(),
            select(func.max(key)).scalar_subquery(),
        ]
        if changed is not None:
            columns.append(select(func.max(changed)).scalar_subquery())
    with read_session(engine) as session:
        figures = tuple(session.execute(select(*columns)).one())
        names = session.execute(select(Dataset.id, Dataset.name).order_by(Dataset.id)).all()
    return figures + (zlib.crc32(repr([tuple(row) for row in names]).encode("utf-8")),)
