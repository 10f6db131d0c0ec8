"""Importing preference data (*-PLUIE section 3.2): each item's pairs (source, candidate A) and
(source, candidate B) become ordinary pairs of a new dataset, queued for every active run like any
import, and a ``preferences`` row links them with the human choice. One transaction: all or nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pandas as pd
from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import aliased

from db import access
from db.datasets import ImportRejected, text_hash
from db.engine import read_session, write_session
from db.limits import check_length, clean_name
from db.models import Dataset, Pair, Preference, RunDataset, ScoreRun
from db.queries import clean_value
from db.queue import CHOICE_RUN_KINDS, enqueue_missing, enqueue_pairs
from pluie_core.evaluation.preference import CHOICES, PREFERENCE_COLUMNS
from pluie_core.io import MAX_SENTENCE_CHARS

SOURCE_FORMAT = "preferences"


@dataclass
class PreferenceImport:
    dataset_id: int
    dataset_name: str
    n_preferences: int
    n_pairs: int
    n_queued: int


def import_preferences(engine: Engine, name: str, items: pd.DataFrame, description: str = "") -> PreferenceImport:
    """Store preference items (as ``pluie_core.evaluation.preference.load_preferences`` returns them)
    as a new dataset. A (source, candidate) met twice is one pair, linked from both items. Pair
    metadata: ``candidate`` (A or B, where first met), ``system`` (from system_a / system_b) and the
    item's other columns; the preference row keeps them too. An organiser's write (NotAllowed below,
    nothing written); the dataset records who imported it."""
    access.require("organise", "import preference data")
    if not (name or "").strip():
        raise ImportRejected("Give the dataset a name.")
    name = clean_name("The dataset name", name, ImportRejected)
    if "\x00" in (description or ""):  # PostgreSQL keeps no NUL in text
        raise ImportRejected("The description cannot hold a NUL character (U+0000): remove it, then import again.")
    missing = [c for c in PREFERENCE_COLUMNS if c not in items.columns]
    if missing:
        raise ImportRejected(f"The preference items have no {', '.join(missing)} column.")
    if items.empty:
        raise ImportRejected("There are no preferences to import.")
    wrong = ~items["preferred"].isin(CHOICES)
    if wrong.any():
        row = int(wrong.to_numpy().nonzero()[0][0]) + 1
        raise ImportRejected(f"Item {row}: the preference must be A, B or tie.")
    extra = [c for c in items.columns if c not in PREFERENCE_COLUMNS and c not in ("system_a", "system_b")]
    records = items.to_dict("records")

    pair_rows, index_of = [], {}  # (source, candidate) -> position in pair_rows
    links = []
    for number, item in enumerate(records, start=1):
        source = str(item["source"]).strip()
        ends = []
        for side in ("a", "b"):
            candidate = str(item[f"candidate_{side}"]).strip()
            if not source or not candidate:
                what = "source" if not source else f"candidate {side.upper()}"
                raise ImportRejected(f"Item {number}: the {what} is empty.")
            check_length(f"Item {number}: the source", source, ImportRejected, MAX_SENTENCE_CHARS)
            check_length(f"Item {number}: candidate {side.upper()}", candidate, ImportRejected, MAX_SENTENCE_CHARS)
            key = (source, candidate)
            if key not in index_of:
                meta = {"candidate": side.upper(), **{str(c): clean_value(item[c]) for c in extra}}
                system = clean_value(item.get(f"system_{side}"))
                if system is not None:
                    meta["system"] = str(system)
                index_of[key] = len(pair_rows)
                pair_rows.append(
                    {
                        "source": source,
                        "hypothesis": candidate,
                        "text_hash": text_hash(source, candidate),
                        "meta": {k: v for k, v in meta.items() if v is not None} or None,
                    }
                )
            ends.append(index_of[key])
        meta = {str(c): clean_value(item[c]) for c in extra + [c for c in ("system_a", "system_b") if c in item]}
        links.append((ends[0], ends[1], item["preferred"], {k: v for k, v in meta.items() if v is not None} or None))

    with write_session(engine) as session:
        if session.scalar(select(Dataset.id).where(Dataset.name == name)) is not None:
            raise ImportRejected(f"A dataset named {name!r} already exists: choose another name.")
        dataset = Dataset(
            name=name,
            description=description,
            source_format=SOURCE_FORMAT,
            label_kind=None,
            created_by=access.actor_name(),
        )
        session.add(dataset)
        session.flush()
        result = session.execute(
            insert(Pair).returning(Pair.id, sort_by_parameter_order=True),
            [{"dataset_id": dataset.id, "external_id": None, "gold_label": None, **row} for row in pair_rows],
        )
        pair_ids = [r[0] for r in result]
        session.execute(
            insert(Preference),
            [
                {
                    "dataset_id": dataset.id,
                    "pair_a_id": pair_ids[a],
                    "pair_b_id": pair_ids[b],
                    "preferred": preferred,
                    "meta": meta,
                }
                for a, b, preferred, meta in links
            ],
        )
        n_queued = enqueue_pairs(session, dataset.id, pair_ids)
        return PreferenceImport(dataset.id, name, len(links), len(pair_ids), n_queued)


def import_preference_file(
    engine: Engine, path_or_buffer, name: Optional[str] = None, description: str = ""
) -> PreferenceImport:
    """Read a preference file (``load_preferences``) and import it; named after the file unless a
    name is given. Raises PairFileError for a bad file, ImportRejected when the store refuses it,
    NotAllowed (before the file is read) below an organiser."""
    from pathlib import Path

    access.require("organise", "import preference data")

    from pluie_core.evaluation.preference import load_preferences

    items = load_preferences(path_or_buffer)
    if name is None:
        name = Path(str(getattr(path_or_buffer, "name", path_or_buffer))).stem
    return import_preferences(engine, name, items, description=description)


def add_preferences(engine: Engine, dataset_id: int, links: pd.DataFrame) -> int:
    """Preferences between pairs already stored (columns pair_a_id, pair_b_id, preferred), in one bulk
    insert: for the bench and tests; users import files (import_preferences)."""
    if not links["preferred"].isin(CHOICES).all():
        raise ImportRejected("Every preference must be A, B or tie.")
    rows = [
        {"dataset_id": int(dataset_id), "pair_a_id": int(a), "pair_b_id": int(b), "preferred": str(p)}
        for a, b, p in zip(links["pair_a_id"], links["pair_b_id"], links["preferred"])
    ]
    with write_session(engine) as session:
        if rows:
            session.execute(insert(Preference), rows)
            # the newly linked pairs now have something to be compared with: queue them for LLM-choice runs
            for run_id in session.scalars(
                select(ScoreRun.id).where(
                    ScoreRun.kind.in_(CHOICE_RUN_KINDS), ScoreRun.status.in_(("active", "paused"))
                )
            ):
                enqueue_missing(session, run_id)
    return len(rows)


def preference_partners(engine: Engine, run_id: int) -> dict[tuple[str, str], list[str]]:
    """For an LLM-choice run: (source, candidate) of every pair linked by a preference in the run's
    datasets (every dataset when it has none) -> the candidates it is compared with (its partners in
    those items, in item order, each once)."""
    side_a, side_b = aliased(Pair), aliased(Pair)
    query = (
        select(side_a.source, side_a.hypothesis, side_b.source, side_b.hypothesis)
        .select_from(Preference)
        .join(side_a, side_a.id == Preference.pair_a_id)
        .join(side_b, side_b.id == Preference.pair_b_id)
        .order_by(Preference.id)
    )
    with read_session(engine) as session:
        scope = select(RunDataset.dataset_id).where(RunDataset.run_id == run_id)
        if session.scalar(select(RunDataset.dataset_id).where(RunDataset.run_id == run_id).limit(1)) is not None:
            query = query.where(Preference.dataset_id.in_(scope))
        rows = session.execute(query).all()
    partners: dict[tuple[str, str], list[str]] = {}
    for source_a, candidate_a, source_b, candidate_b in rows:
        for key, other in (((source_a, candidate_a), candidate_b), ((source_b, candidate_b), candidate_a)):
            known = partners.setdefault(key, [])
            if other not in known:
                known.append(other)
    return partners
