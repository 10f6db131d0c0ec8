"""The reads of the Correlation and Preferences pages: graded human references (the mean of the
labels per pair), the pairs' metadata columns (a system / model column for system-level
correlation) and the stored preferences. What is computed from them is in pluie_core.evaluation."""

from __future__ import annotations

from typing import Iterable, Optional

import pandas as pd
from sqlalchemy import Engine, func, select

from db.analysis import pair_datasets
from db.engine import read_session
from db.models import Campaign, Dataset, Label, Pair, Preference
from db.queries import as_ids, query_frame
from pluie_core.evaluation.correlation import mean_levels

__all__ = ["labelled_campaigns", "label_means", "meta_keys", "meta_column", "preference_datasets", "preferences_frame"]


def labelled_campaigns(engine: Engine) -> pd.DataFrame:
    """Campaigns with at least one (non-training) label: id, name, n_labels."""
    with read_session(engine) as session:
        return query_frame(
            session,
            select(Campaign.id, Campaign.name, func.count(Label.id))
            .join(Label, Label.campaign_id == Campaign.id)
            .where(Label.is_training.is_(False))
            .group_by(Campaign.id)
            .order_by(Campaign.name),
            ["id", "name", "n_labels"],
        )


def label_means(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    scale: str = "levels",
    campaign_id: Optional[int] = None,
) -> pd.Series:
    """The graded human reference per pair (index pair_id): on the five-level scale ("levels") the
    mean level, Don't know excluded (pluie_core.evaluation.correlation.mean_levels); for values
    imported on their own scale ("raw", e.g. BIOSSES' annotators) their mean. ``campaign_id``: only
    that campaign's labels. Training labels never count."""
    dataset_ids = as_ids(dataset_ids)
    column = Label.level if scale == "levels" else Label.value
    query = select(Label.pair_id, column).where(Label.is_training.is_(False), column.is_not(None))
    if scale != "levels":
        query = query.where(Label.level.is_(None))
    if campaign_id is not None:
        query = query.where(Label.campaign_id == int(campaign_id))
    with read_session(engine) as session:
        labels = query_frame(session, query, ["pair_id", "value"])
        if dataset_ids is not None:
            labels = labels[labels["pair_id"].isin(pair_datasets(session, dataset_ids).index)]
    labels["value"] = pd.to_numeric(labels["value"], errors="coerce").astype(float)
    if scale == "levels":
        return mean_levels(labels, level_col="value").rename("reference")
    return labels.groupby("pair_id")["value"].mean().rename("reference")


def meta_keys(engine: Engine, dataset_ids: Optional[Iterable[int]] = None, sample: int = 200) -> list[str]:
    """The metadata columns the pairs carry (the file's extra columns, kept by the import), read
    from the first ``sample`` pairs of each dataset."""
    dataset_ids = as_ids(dataset_ids)
    keys: dict[str, None] = {}
    with read_session(engine) as session:
        ids = (
            dataset_ids
            if dataset_ids is not None
            else list(session.scalars(select(Dataset.id).where(Dataset.import_state.is_(None))))
        )
        for dataset_id in ids:
            for meta in session.scalars(
                select(Pair.meta).where(Pair.dataset_id == dataset_id).order_by(Pair.id).limit(sample)
            ):
                keys.update(dict.fromkeys(str(k) for k in meta or ()))  # SQL NULL or JSON null: no metadata
    return sorted(keys)


def meta_column(engine: Engine, key: str, dataset_ids: Optional[Iterable[int]] = None) -> pd.Series:
    """One metadata column as text per pair (index pair_id; pairs without it are left out), read
    with the database's JSON extraction rather than by loading every pair's metadata."""
    dataset_ids = as_ids(dataset_ids)
    value = Pair.meta[key].as_string()
    query = select(Pair.id, value).where(value.is_not(None))
    if dataset_ids is not None:
        query = query.where(Pair.dataset_id.in_(dataset_ids))
    with read_session(engine) as session:
        frame = query_frame(session, query, ["pair_id", key])
    return pd.Series(frame[key].astype(str).to_numpy(), index=frame["pair_id"].to_numpy(), name=key)


def preference_datasets(engine: Engine) -> pd.DataFrame:
    """Datasets holding preferences: id, name, n_preferences."""
    with read_session(engine) as session:
        return query_frame(
            session,
            select(Dataset.id, Dataset.name, func.count(Preference.id))
            .join(Preference, Preference.dataset_id == Dataset.id)
            .group_by(Dataset.id)
            .order_by(Dataset.name),
            ["id", "name", "n_preferences"],
        )


def preferences_frame(engine: Engine, dataset_ids: Optional[Iterable[int]] = None) -> pd.DataFrame:
    """One row per preference: preference_id, dataset_id, pair_a_id, pair_b_id, preferred."""
    dataset_ids = as_ids(dataset_ids)
    query = select(
        Preference.id, Preference.dataset_id, Preference.pair_a_id, Preference.pair_b_id, Preference.preferred
    ).order_by(Preference.id)
    if dataset_ids is not None:
        query = query.where(Preference.dataset_id.in_(dataset_ids))
    with read_session(engine) as session:
        return query_frame(session, query, ["preference_id", "dataset_id", "pair_a_id", "pair_b_id", "preferred"])
