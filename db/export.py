"""The export: one row per pair with its gold label, every annotator's raw label, the aggregated
and binarised labels and every score — ready to publish as a dataset."""
from __future__ import annotations

from typing import Iterable, Optional

import pandas as pd
from sqlalchemy import Engine, select

from db.engine import read_session
from db.models import Annotator, Dataset, Label, Pair, Score, ScoreRun
from pluie_core.labels import LEVELS, level_name, majority_binary, majority_level

ANNOTATOR_PREFIX = "annotator:"
SCORE_PREFIX = "score:"


def _annotator_columns(annotators: list[tuple[int, str]]) -> dict[int, str]:
    """Column name per annotator id; a name shared by several annotators gets its id appended."""
    counts: dict[str, int] = {}
    for _, name in annotators:
        counts[name] = counts.get(name, 0) + 1
    return {aid: ANNOTATOR_PREFIX + (name if counts[name] == 1 else f"{name}#{aid}") for aid, name in annotators}


def export_frame(engine: Engine, dataset_ids: Optional[Iterable[int]] = None, include_training: bool = False) -> pd.DataFrame:
    """Columns: dataset, external_id, source, hypothesis, label (gold), `annotator:<name>` (the
    raw label: a level 0-4 of the five-level scale, or an imported value on its own scale),
    n_labels, majority_level, majority_label, binary_label, `score:<run>` per score run.

    majority_level follows pluie_core.labels.majority_level (Don't know ignored, ties across the
    binary boundary give no label); binary_label is the majority of the binarised labels (a tie
    gives none). Both are empty for pairs with no five-level labels.
    """
    with read_session(engine) as session:
        pair_query = select(
            Pair.id, Dataset.name, Pair.external_id, Pair.source, Pair.hypothesis, Pair.gold_label
        ).join(Dataset, Dataset.id == Pair.dataset_id)
        if dataset_ids is not None:
            pair_query = pair_query.where(Pair.dataset_id.in_(list(dataset_ids)))
        pairs = pd.DataFrame(
            session.execute(pair_query.order_by(Pair.dataset_id, Pair.id)).all(),
            columns=["pair_id", "dataset", "external_id", "source", "hypothesis", "label"],
        )
        ids = pairs["pair_id"].tolist()
        label_query = select(Label.pair_id, Label.annotator_id, Label.level, Label.value).where(Label.pair_id.in_(ids))
        if not include_training:
            label_query = label_query.where(Label.is_training.is_(False))
        labels = pd.DataFrame(session.execute(label_query).all(), columns=["pair_id", "annotator_id", "level", "value"])
        annotators = session.execute(
            select(Annotator.id, Annotator.name).where(Annotator.id.in_(labels["annotator_id"].unique().tolist()))
        ).all()
        scores = pd.DataFrame(
            session.execute(
                select(Score.pair_id, ScoreRun.name, Score.value)
                .join(ScoreRun, ScoreRun.id == Score.run_id)
                .where(Score.pair_id.in_(ids))
            ).all(),
            columns=["pair_id", "run", "value"],
        )

    out = pairs.set_index("pair_id")
    if not labels.empty:
        names = _annotator_columns([(a, n) for a, n in annotators])
        labels["raw"] = labels["level"].where(labels["level"].notna(), labels["value"])
        labels["column"] = labels["annotator_id"].map(names)
        wide = labels.pivot(index="pair_id", columns="column", values="raw")
        out = out.join(wide[sorted(wide.columns)])
        levels = labels.dropna(subset=["level"]).groupby("pair_id")["level"].apply(list)
        out["n_labels"] = labels.groupby("pair_id").size().reindex(out.index).fillna(0).astype(int)
        majority = levels.map(lambda xs: majority_level(int(x) for x in xs))
        binary = levels.map(lambda xs: majority_binary(int(x) for x in xs))
        out["majority_level"] = majority.reindex(out.index).astype("Int64")
        out["majority_label"] = out["majority_level"].map(lambda v: level_name(None if pd.isna(v) else int(v)))
        out["binary_label"] = binary.reindex(out.index).astype("Int64")
    else:
        out["n_labels"] = 0
        out["majority_level"] = pd.array([pd.NA] * len(out), dtype="Int64")
        out["majority_label"] = ""
        out["binary_label"] = pd.array([pd.NA] * len(out), dtype="Int64")
    if not scores.empty:
        wide_scores = scores.pivot(index="pair_id", columns="run", values="value")
        wide_scores.columns = [SCORE_PREFIX + str(c) for c in wide_scores.columns]
        out = out.join(wide_scores)
    return out.reset_index(drop=True)


LEVEL_LEGEND = {i: name for i, name in enumerate(LEVELS)}
