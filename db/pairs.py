"""The pairs browser: any pair of a dataset, found by its text or its ids (the store's pair_id or
the file's own external id), filtered by gold label, label state and a run's score, one page at a
time. Every filter is a condition in one SQL query, paged with LIMIT / OFFSET in pair id order, so a
page of a 100,000-pair dataset reads 50 rows (bench/pairs_browser.py); what the page shows of its
rows (labels, final level, gold checks) is read for those rows only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pandas as pd
from sqlalchemy import Engine, func, or_, select

from db.engine import read_session, unicode_lower
from db.limits import INT_MAX, check_length
from db.models import Campaign, GoldPair, Label, Pair, Score
from db.queries import adjudications_in_force, query_frame
from pluie_core.labels import LEVELS, ORDINAL_LEVELS

__all__ = [
    "LABEL_STATES",
    "GOLD_FILTERS",
    "PairSearch",
    "PairSearchError",
    "PairsPage",
    "browse_pairs",
    "PAGE_COLUMNS",
    "MAX_TEXT",
    "MAX_REF",
]

LABEL_STATES = {
    "any": "Any",
    "unlabelled": "Unlabelled",
    "labelled": "Labelled",
    "disagreement": "Labels disagree",
    "adjudicated": "Adjudicated",
}
GOLD_FILTERS = {"any": "Any", "with": "With a gold label", "without": "Without a gold label"}
MAX_TEXT = 1000  # characters of the text to find (SQLite refuses a LIKE pattern past 50,000 bytes)
MAX_REF = 200  # characters of an id: the file's own ids are at most this long (db.limits.NAME_LENGTH)
PAGE_COLUMNS = [
    "pair_id",
    "external_id",
    "source",
    "hypothesis",
    "gold_label",
    "labels",
    "state",
    "final_level",
    "score",
    "gold check in",
]


class PairSearchError(ValueError):
    """A search the store cannot run as typed (too long, a NUL character); the message says why, in a sentence."""


@dataclass(frozen=True)
class PairSearch:
    """What the organiser looks for. ``text``: a piece of either sentence, at most MAX_TEXT characters
    (case aside, for every letter: lower() on both sides, as PostgreSQL's ILIKE, on both stores);
    ``pair_ref``: a pair id or the file's own id (either matches; at most MAX_REF characters); ``gold``: GOLD_FILTERS, with optional bounds
    (which keep pairs with a gold label only); ``state``: LABEL_STATES, over labels outside training
    trials (disagreement: two different levels of 0-3, as Review's queue; adjudicated: a reviewer's
    final level in force); ``run_id``: the run whose score the page shows, with optional bounds."""

    text: str = ""
    pair_ref: str = ""
    gold: str = "any"
    gold_min: Optional[float] = None
    gold_max: Optional[float] = None
    state: str = "any"
    run_id: Optional[int] = None
    score_min: Optional[float] = None
    score_max: Optional[float] = None


@dataclass(frozen=True)
class PairsPage:
    rows: pd.DataFrame  # PAGE_COLUMNS, in pair id order
    total: int  # pairs that match, on every page
    page: int  # 0-based, within range
    n_pages: int


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _typed(what: str, value: Optional[str], limit: int) -> str:
    """What the organiser typed, spaces around it dropped, or PairSearchError: no store can hold a NUL
    in text (PostgreSQL refuses it as a parameter), and a text past ``limit`` is no search."""
    value = (value or "").strip()
    if "\x00" in value:
        raise PairSearchError(f"{what} cannot hold a NUL character (U+0000).")
    check_length(what, value, PairSearchError, limit)
    return value


def _conditions(dataset_id: int, search: PairSearch) -> list:
    if search.state not in LABEL_STATES or search.gold not in GOLD_FILTERS:
        raise ValueError("Unknown filter.")
    conditions = [Pair.dataset_id == int(dataset_id)]
    text = _typed("The text to find", search.text, MAX_TEXT)
    if text:
        pattern = unicode_lower(f"%{_escaped(text)}%")
        conditions.append(
            or_(*(unicode_lower(side).like(pattern, escape="\\") for side in (Pair.source, Pair.hypothesis)))
        )
    ref = _typed("The id", search.pair_ref, MAX_REF)
    if ref:
        matches = [Pair.external_id == ref]
        if ref.isascii() and ref.isdigit() and int(ref) <= INT_MAX:  # past it, no pair has that id
            matches.append(Pair.id == int(ref))
        conditions.append(or_(*matches))
    if search.gold == "without":
        conditions.append(Pair.gold_label.is_(None))
    elif search.gold == "with" or search.gold_min is not None or search.gold_max is not None:
        conditions.append(Pair.gold_label.is_not(None))
    if search.gold_min is not None:
        conditions.append(Pair.gold_label >= float(search.gold_min))
    if search.gold_max is not None:
        conditions.append(Pair.gold_label <= float(search.gold_max))
    labelled = select(Label.id).where(Label.pair_id == Pair.id, Label.is_training.is_(False)).correlate(Pair).exists()
    if search.state == "unlabelled":
        conditions.append(~labelled)
    elif search.state == "labelled":
        conditions.append(labelled)
    elif search.state == "disagreement":  # the pair's own labels, through the labels' pair index
        spread = (
            select(func.max(Label.level) - func.min(Label.level))
            .where(Label.pair_id == Pair.id, Label.is_training.is_(False), Label.level.between(0, 3))
            .correlate(Pair)
            .scalar_subquery()
        )
        conditions.append(spread > 0)
    elif search.state == "adjudicated":
        decided = adjudications_in_force().subquery()
        conditions.append(Pair.id.in_(select(decided.c.pair_id).where(decided.c.level.is_not(None))))
    if search.run_id is not None:
        for bound, compare in ((search.score_min, Score.value.__ge__), (search.score_max, Score.value.__le__)):
            if bound is not None:
                conditions.append(
                    Pair.id.in_(select(Score.pair_id).where(Score.run_id == int(search.run_id), compare(float(bound))))
                )
    return conditions


def browse_pairs(
    engine: Engine, dataset_id: int, search: PairSearch = PairSearch(), *, page: int = 0, page_size: int = 50
) -> PairsPage:
    """One page of the dataset's pairs that match ``search``, in pair id order: pair_id,
    external_id, source, hypothesis, gold_label, labels (outside training trials), state
    (unlabelled, labelled, disagreement, adjudicated), final_level (a reviewer's, as its name),
    score (in ``search.run_id``), gold check in (the campaigns where the pair is a gold check)."""
    conditions = _conditions(dataset_id, search)
    with read_session(engine) as session:
        total = int(session.scalar(select(func.count()).select_from(Pair).where(*conditions)))
        n_pages = max(1, -(-total // page_size))
        page = min(max(int(page), 0), n_pages - 1)
        rows = _page_rows(
            session,
            select(Pair.id, Pair.external_id, Pair.source, Pair.hypothesis, Pair.gold_label)
            .where(*conditions)
            .order_by(Pair.id)
            .limit(page_size)
            .offset(page * page_size),
            search,
        )
    return PairsPage(rows, total, page, n_pages)


def pairs_after(
    engine: Engine, dataset_id: int, search: PairSearch = PairSearch(), *, after: int = 0, limit: int = 100
) -> pd.DataFrame:
    """browse_pairs' rows for the matching pairs whose id is above ``after``, at most ``limit``, in id
    order: a page of a cursor (the last pair id read), which stays right while pairs are added and costs
    the same on the millionth pair as on the first (no offset)."""
    conditions = _conditions(dataset_id, search)
    with read_session(engine) as session:
        return _page_rows(
            session,
            select(Pair.id, Pair.external_id, Pair.source, Pair.hypothesis, Pair.gold_label)
            .where(*conditions, Pair.id > int(after))
            .order_by(Pair.id)
            .limit(int(limit)),
            search,
        )


def _page_rows(session, query, search: PairSearch) -> pd.DataFrame:
    """The pairs ``query`` selects (id, external id, texts, gold label), with what the Pairs page shows of each."""
    rows = query_frame(session, query, ["pair_id", "external_id", "source", "hypothesis", "gold_label"])
    ids = [int(i) for i in rows["pair_id"]]
    labels = query_frame(
        session,
        select(Label.pair_id, Label.level).where(Label.pair_id.in_(ids), Label.is_training.is_(False)),
        ["pair_id", "level"],
    )
    decided = adjudications_in_force(pair_ids=ids).subquery()
    final = dict(session.execute(select(decided.c.pair_id, decided.c.level).where(decided.c.level.is_not(None))).all())
    gold = query_frame(
        session,
        select(GoldPair.pair_id, Campaign.name)
        .join(Campaign, Campaign.id == GoldPair.campaign_id)
        .where(GoldPair.pair_id.in_(ids))
        .order_by(Campaign.name),
        ["pair_id", "campaign"],
    )
    scores = (
        {}
        if search.run_id is None
        else dict(
            session.execute(
                select(Score.pair_id, Score.value).where(Score.run_id == int(search.run_id), Score.pair_id.in_(ids))
            ).all()
        )
    )
    levels = pd.to_numeric(labels["level"], errors="coerce")
    ordinal = labels[levels.isin(ORDINAL_LEVELS)].assign(level=levels)
    spread = ordinal.groupby("pair_id")["level"].agg(lambda v: v.max() - v.min())
    counts = labels.groupby("pair_id").size()
    rows["gold_label"] = pd.to_numeric(rows["gold_label"], errors="coerce").astype(float)
    rows["labels"] = rows["pair_id"].map(counts).fillna(0).astype(int)
    rows["state"] = [
        "adjudicated"
        if pid in final
        else "disagreement"
        if spread.get(pid, 0) > 0
        else "labelled"
        if n
        else "unlabelled"
        for pid, n in zip(rows["pair_id"], rows["labels"])
    ]
    rows["final_level"] = rows["pair_id"].map(lambda pid: LEVELS[int(final[pid])] if pid in final else None)
    rows["score"] = rows["pair_id"].map(scores).astype(float)
    rows["gold check in"] = rows["pair_id"].map(gold.groupby("pair_id")["campaign"].agg(", ".join)).fillna("")
    return rows[PAGE_COLUMNS]


def run_scores_after(engine: Engine, run_id: int, *, after: int = 0, limit: int = 1000) -> pd.DataFrame:
    """A run's scores of the pairs whose id is above ``after``, at most ``limit``, in pair id order (a cursor's
    page): pair_id, dataset_id, external_id, score (None where the metric gave no value: an answer an LLM judge's
    parser could not read), scored_at."""
    with read_session(engine) as session:
        return query_frame(
            session,
            select(Score.pair_id, Pair.dataset_id, Pair.external_id, Score.value, Score.created_at)
            .join(Pair, Pair.id == Score.pair_id)
            .where(Score.run_id == int(run_id), Score.pair_id > int(after))
            .order_by(Score.pair_id)
            .limit(int(limit)),
            ["pair_id", "dataset_id", "external_id", "score", "scored_at"],
        )
