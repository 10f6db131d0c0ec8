"""The query helpers every db module shares, public in one place: rows of a select as a DataFrame
(query_frame, number_frame, raw_rows), ids as plain ints (as_ids), a pandas cell as a value the store keeps
(clean_value), and the selects several reads are built on: the labels and pairs of a campaign
(label_conditions, campaign_pairs) and each pair's reviewer decision in force
(adjudications_in_force, current_adjudications).

It imports no other module of db but the engine and the models, so any of them may import it:
db.analysis, db.export and db.review read through it without importing each other in a circle
(tests/test_layers.py).
"""

from __future__ import annotations

import datetime
import itertools
import math
from typing import Iterable, Optional, Union

import numpy as np
import pandas as pd
from sqlalchemy import Engine, Select, func, select, union

from db.engine import read_session
from db.models import Adjudication, CampaignPair, GoldPair, Label, Pair, TrainingPair

__all__ = [
    "raw_rows",
    "query_frame",
    "number_frame",
    "as_ids",
    "clean_value",
    "label_conditions",
    "campaign_pairs",
    "adjudications_in_force",
    "current_adjudications",
    "ADJUDICATION_COLUMNS",
]

ADJUDICATION_COLUMNS = ["pair_id", "revision", "level", "reviewer", "note", "created_at"]


def raw_rows(session, statement) -> list[tuple]:
    """The driver's plain tuples of a Core select, read straight from the cursor: SQLAlchemy's Row
    objects cost seconds at 3,000,000 rows. For columns the driver returns as they are (numbers, text)."""
    result = session.connection().execute(statement)
    return result.cursor.fetchall() if result.cursor is not None else [tuple(row) for row in result]


def query_frame(session, statement, columns: list[str]) -> pd.DataFrame:
    """Rows of a Core select as a DataFrame. The driver's plain tuples are read straight from the
    cursor: building a frame from 300,000 SQLAlchemy Row objects costs seconds, from tuples a tenth
    of that. Every column read here is a number or text the driver returns as is."""
    rows = raw_rows(session, statement)
    return pd.DataFrame.from_records(rows, columns=columns, nrows=len(rows))


def number_frame(session, statement, columns: list[str], integers: Iterable[str] = ()) -> pd.DataFrame:
    """Rows of a Core select of numbers only as a DataFrame, the fast way: every value into one float
    array (None -> NaN) without a Python object per cell, then ``integers`` (id columns, never
    missing) as int64. A third of query_frame's time at 3,000,000 labels (bench/analysis.py at 1M pairs)."""
    rows = raw_rows(session, statement)
    values = np.fromiter(itertools.chain.from_iterable(rows), dtype=float, count=len(rows) * len(columns))
    out = pd.DataFrame(values.reshape(len(rows), len(columns)), columns=columns)
    for column in integers:
        out[column] = out[column].astype("int64")
    return out


def as_ids(values: Optional[Iterable[int]]) -> Optional[list[int]]:
    """Ids as plain ints (numpy integers and numeric text included); None stays None (no filter)."""
    return None if values is None else [int(v) for v in values]


def clean_value(value):
    """A pandas cell as a JSON/SQL value: NaN/NA -> None, numpy scalars -> Python, dates and
    times -> ISO text (2024-01-05T10:30:00); lists and objects stay as they are (JSON)."""
    if value is None or isinstance(value, (dict, list, tuple)):
        return list(value) if isinstance(value, tuple) else value
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, (datetime.date, datetime.time)):  # pandas' Timestamp too
        return value.isoformat()
    if isinstance(value, (datetime.timedelta, pd.Timedelta)):
        return pd.Timedelta(value).isoformat()
    if hasattr(value, "item"):
        return clean_value(value.item())
    if isinstance(value, float) and math.isinf(value):
        return str(value)  # JSON has no infinity (PostgreSQL refuses it)
    return value


def label_conditions(campaign_id: Optional[int] = None, include_training: bool = False) -> list:
    """The labels an export takes: training-trial labels only with ``include_training``; with a
    campaign, only the labels given in it (gold-check answers included)."""
    conditions = [] if include_training else [Label.is_training.is_(False)]
    if campaign_id is not None:
        conditions.append(Label.campaign_id == int(campaign_id))
    return conditions


def campaign_pairs(campaign_id: int, include_training: bool = False):
    """The select of a campaign's pairs: its queue, its gold pairs, the pairs labelled in it (a gold
    pair no longer used keeps its answers) and, with ``include_training``, its training pairs."""
    campaign_id = int(campaign_id)
    parts = [
        select(CampaignPair.pair_id).where(CampaignPair.campaign_id == campaign_id),
        select(GoldPair.pair_id).where(GoldPair.campaign_id == campaign_id),
        select(Label.pair_id).where(*label_conditions(campaign_id, include_training)),
    ]
    if include_training:
        parts.append(select(TrainingPair.pair_id).where(TrainingPair.campaign_id == campaign_id))
    # never correlated with a query on labels that holds this condition
    return union(*(part.correlate(None) for part in parts))


def adjudications_in_force(dataset_ids: Optional[list[int]] = None, pair_ids=None):
    """The select of each pair's highest revision (withdrawn decisions included, level NULL); ``pair_ids`` a
    list of ids or a select of them."""
    latest = select(Adjudication.pair_id, func.max(Adjudication.revision).label("revision")).group_by(
        Adjudication.pair_id
    )
    if dataset_ids is not None:
        latest = latest.where(Adjudication.pair_id.in_(select(Pair.id).where(Pair.dataset_id.in_(dataset_ids))))
    if pair_ids is not None:
        latest = latest.where(Adjudication.pair_id.in_(pair_ids))
    latest = latest.subquery()
    return select(
        Adjudication.pair_id,
        Adjudication.revision,
        Adjudication.level,
        Adjudication.reviewer,
        Adjudication.note,
        Adjudication.created_at,
    ).join(latest, (latest.c.pair_id == Adjudication.pair_id) & (latest.c.revision == Adjudication.revision))


def current_adjudications(
    engine_or_session, dataset_ids: Optional[Iterable[int]] = None, pair_ids: Union[Iterable[int], Select, None] = None
) -> pd.DataFrame:
    """The decision in force on each adjudicated pair (of the given datasets / pairs), indexed by
    pair_id: revision, level (NaN when the last decision withdrew it), reviewer, note, created_at."""
    if pair_ids is not None and not isinstance(pair_ids, Select):  # a select of pair ids stays one (no list)
        pair_ids = as_ids(pair_ids)
    query = adjudications_in_force(as_ids(dataset_ids), pair_ids)
    if isinstance(engine_or_session, Engine):
        with read_session(engine_or_session) as session:
            rows = session.execute(query).all()
    else:
        rows = engine_or_session.execute(query).all()
    decided = pd.DataFrame(rows, columns=ADJUDICATION_COLUMNS)
    decided["level"] = pd.to_numeric(decided["level"], errors="coerce").astype("Float64")
    return decided.set_index("pair_id")
