"""Labelling campaigns, the organiser's side: every query and write that sets up and runs a campaign.

Creating one (its datasets, selection, training pairs and queue in serving order), changing it
(guidelines, open or closed, aggregation, a new serving order), what the admin pages count and
offer (datasets, score runs, overview, labels as every page counts them), the training pairs'
feedback the organiser writes, and the campaign's activity. CampaignError, the one sentence a
refused request gives, is defined here for every campaign module (db.serving, db.annotators,
db.quality). Serving pairs and storing answers: db.serving; annotators and their links: db.annotators.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import pandas as pd
from sqlalchemy import Engine, exists, func, insert, select, update
from sqlalchemy.orm import Session

from db import access
from db.analysis import counted_label
from db.engine import read_session, write_session
from db.limits import INT_MAX, check_whole, clean_name
from db.models import (
    Activity,
    Assignment,
    Campaign,
    CampaignDataset,
    CampaignPair,
    Dataset,
    Label,
    Pair,
    Score,
    ScoreRun,
    TrainingPair,
)
from pluie_core.aggregation import DEFAULT_METHOD as DEFAULT_AGGREGATION
from pluie_core.aggregation import METHOD_NAMES as AGGREGATION_NAMES
from pluie_core.aggregation import METHODS as AGGREGATION_METHODS
from pluie_core.guidelines import (
    DISTRIBUTIONS,
    PAIR_ORDERS,
    GuidelinesError,
    check_guidelines,
    default_guidelines,
    guidelines_change,
    pick_training_pairs,
    serving_order,
)
from pluie_core.labels import LEVELS, majority_binary
from pluie_core.pair_selection import SelectionError, clean_selection, select_pairs
from pluie_core.run_kinds import PLUIE

ADAPTIVE_CONFIDENCE = 0.9  # the vote share a pair's binarised label needs before adaptive overlap stops it
# the bounds of a campaign's numbers (the store's INTEGER holds 2**31 - 1; these are what makes sense)
MAX_QUOTA = 1_000_000  # pairs per annotator
MAX_OVERLAP = 1_000  # annotators per pair, the least and the most
MAX_TRAINING = 10_000  # training pairs


class CampaignError(ValueError):
    """Something a user asked for that cannot be done; the message says why, in a sentence."""


class StaleFormError(CampaignError):
    """A form drawn at an older revision of what it saves (a campaign's quality settings, its guidelines):
    another organiser saved since. Nothing was written; the message says what changed."""


# ---------------------------------------------------------------- campaigns (admin)


def dataset_choices(engine: Engine, campaign_id: Optional[int] = None) -> list[tuple[int, str, int]]:
    """(id, name, number of pairs) of every dataset, or only of a campaign's datasets."""
    query = (
        select(Dataset.id, Dataset.name, func.count(Pair.id))
        .outerjoin(Pair, Pair.dataset_id == Dataset.id)
        .where(Dataset.import_state.is_(None))
        .group_by(Dataset.id, Dataset.name)
        .order_by(Dataset.name)
    )
    if campaign_id is not None:
        query = query.where(
            Dataset.id.in_(select(CampaignDataset.dataset_id).where(CampaignDataset.campaign_id == campaign_id))
        )
    with read_session(engine) as session:
        return [(i, n, c) for i, n, c in session.execute(query)]


def campaigns_of_dataset(engine: Engine, dataset_id: int) -> list[tuple[int, str]]:
    """(id, name) of the campaigns that label this dataset (its pairs may be their gold checks), newest first."""
    with read_session(engine) as session:
        return [
            tuple(r)
            for r in session.execute(
                select(Campaign.id, Campaign.name)
                .join(CampaignDataset, CampaignDataset.campaign_id == Campaign.id)
                .where(CampaignDataset.dataset_id == dataset_id)
                .order_by(Campaign.created_at.desc(), Campaign.id.desc())
            )
        ]


def score_run_choices(engine: Engine, kind: Optional[str] = PLUIE) -> list[tuple[int, str]]:
    """Runs (of one kind: PLUIE runs drive the "informative" order; None = any) with at least one
    score: a run that failed before scoring anything has nothing to order or filter by."""
    query = select(ScoreRun.id, ScoreRun.name).where(_has_scores(ScoreRun.id)).order_by(ScoreRun.name)
    if kind is not None:
        query = query.where(ScoreRun.kind == kind)
    with read_session(engine) as session:
        return [tuple(r) for r in session.execute(query)]


def _has_scores(run_id):
    return exists().where(Score.run_id == run_id)


def list_campaigns(engine: Engine) -> list[Campaign]:
    with read_session(engine) as session:
        return list(session.scalars(select(Campaign).order_by(Campaign.created_at.desc(), Campaign.id.desc())))


def campaign_aggregation(campaign: Campaign) -> str:
    """The aggregation method a campaign's final labels use by default (majority until it chooses)."""
    return campaign.aggregation or DEFAULT_AGGREGATION


def get_campaign(engine: Engine, campaign_id: int) -> Campaign:
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            raise CampaignError("This campaign does not exist (any more).")
        return campaign


def create_campaign(
    engine: Engine,
    name: str,
    dataset_ids: Sequence[int],
    *,
    quota: int = 50,
    overlap: int = 1,
    n_training: int = 5,
    guidelines: Optional[str] = None,
    pair_order: str = "random",
    seed: int = 0,
    informative_run_id: Optional[int] = None,
    selection: Optional[Mapping[str, Any]] = None,
    distribution: str = "share",
    overlap_max: Optional[int] = None,
    confidence: float = ADAPTIVE_CONFIDENCE,
) -> int:
    """Create a campaign, draw its training pairs and lay out its queue. Returns its id.

    ``overlap_max`` makes the overlap adaptive: every pair gets ``overlap`` annotators (the minimum),
    then one more at a time, up to ``overlap_max``, while the vote share of its binarised majority is
    below ``confidence`` (pluie_core.aggregation.wants_another); None keeps the overlap fixed.

    ``selection`` (pluie_core.pair_selection) takes part of the datasets: a range, gold-label and
    score filters, a random sample drawn with ``seed``; None takes every pair, and the pairs imported
    into the datasets later. ``distribution`` says how the queue is shared (DISTRIBUTIONS).
    Organisers only (db.access); the campaign records who created it."""
    access.require("organise", "create a campaign")
    if not (name or "").strip():
        raise CampaignError("Give the campaign a name.")
    name = clean_name("The campaign name", name, CampaignError)
    if not dataset_ids:
        raise CampaignError("Choose at least one dataset.")
    quota = check_whole("Pairs per annotator", quota, CampaignError, 1, MAX_QUOTA)
    overlap = check_whole("Annotators per pair", overlap, CampaignError, 1, MAX_OVERLAP)
    n_training = check_whole("Training pairs", n_training, CampaignError, 0, MAX_TRAINING)
    seed = check_whole("The seed", seed, CampaignError, 0, INT_MAX)
    if overlap_max is not None:
        overlap_max = check_whole("The most annotators per pair", overlap_max, CampaignError, 1, MAX_OVERLAP)
        if overlap_max < overlap:
            raise CampaignError("The most annotators per pair cannot be fewer than the least.")
        if not 0.5 < float(confidence) <= 1.0:
            raise CampaignError(
                "The confidence asked of a pair's label must be above 50% and at most 100% "
                "(a majority of two sides is always at least 50%)."
            )
        overlap_max, confidence = int(overlap_max), float(confidence)
    if pair_order not in PAIR_ORDERS:
        raise CampaignError(f"Unknown pair order {pair_order!r}.")
    if pair_order == "informative" and informative_run_id is None:
        raise CampaignError("The “most informative” order needs a PLUIE score run to read the scores from.")
    if distribution not in DISTRIBUTIONS:
        raise CampaignError(f"Unknown way of sharing the pairs {distribution!r}.")
    selection = dict(selection) if selection else selection
    for key, what, low in (("start", "The first pair", 1), ("end", "The last pair", 0), ("sample", "The sample", 0)):
        if selection and selection.get(key) is not None:
            selection[key] = check_whole(what, selection[key], CampaignError, low, INT_MAX)
    try:
        selection = clean_selection(selection)
    except SelectionError as exc:
        raise CampaignError(str(exc)) from None
    if selection and "sample" in selection:
        selection["seed"] = seed
    with write_session(engine) as session:
        if session.scalar(select(Campaign.id).where(Campaign.name == name)) is not None:
            raise CampaignError(f"A campaign called “{name}” already exists.")
        known = set(
            session.scalars(select(Dataset.id).where(Dataset.id.in_(dataset_ids), Dataset.import_state.is_(None)))
        )
        if known != set(dataset_ids):
            raise CampaignError("One of the chosen datasets no longer exists; reload the page and choose again.")
        if informative_run_id is not None and session.get(ScoreRun, informative_run_id) is None:
            raise CampaignError("The chosen score run no longer exists.")
        if informative_run_id is not None and not session.scalar(select(_has_scores(informative_run_id))):
            raise CampaignError("The chosen score run has no scores yet: choose a run that has scored some pairs.")
        pair_ids = _selected_pairs(session, dataset_ids, selection)
        if len(pair_ids) <= n_training:
            held = "The chosen datasets hold" if selection is None else "The selection keeps"
            raise CampaignError(
                f"{held} {len(pair_ids):,} pairs: not enough for {n_training} training pairs and a queue."
            )
        campaign = Campaign(
            name=name,
            quota=quota,
            overlap=overlap,
            n_training=n_training,
            guidelines=default_guidelines() if guidelines is None else _checked_guidelines(guidelines),
            pair_order=pair_order,
            seed=seed,
            informative_run_id=informative_run_id,
            active=True,
            selection=selection,
            distribution=distribution,
            overlap_max=overlap_max,
            confidence=confidence if overlap_max is not None else None,
            created_by=access.actor_name(),
        )
        session.add(campaign)
        session.flush()
        session.execute(
            insert(CampaignDataset), [{"campaign_id": campaign.id, "dataset_id": d} for d in set(dataset_ids)]
        )
        training = pick_training_pairs(pair_ids, n_training, seed)
        if training:
            session.execute(
                insert(TrainingPair),
                [{"campaign_id": campaign.id, "position": i, "pair_id": p} for i, p in enumerate(training)],
            )
        queue = sorted(set(pair_ids) - set(training))
        ranks = _serving_ranks(session, campaign, queue)
        session.execute(
            insert(CampaignPair),
            [
                {
                    "campaign_id": campaign.id,
                    "pair_id": p,
                    "rank": ranks[p],
                    "n_assigned": 0,
                    "n_wanted": _first_wanted(campaign),
                }
                for p in queue
            ],
        )
        access.record(
            session,
            "create",
            "campaign",
            campaign.id,
            f"Created the campaign: {len(queue):,} pairs in the queue, {len(training):,} training pairs.",
        )
        return campaign.id


def _first_wanted(campaign: Campaign) -> Optional[int]:
    """The annotators a new queue pair wants: the minimum under adaptive overlap, None (the campaign's
    fixed overlap) otherwise."""
    return campaign.overlap if campaign.overlap_max is not None else None


def _selected_pairs(session: Session, dataset_ids: Sequence[int], selection: Optional[dict]) -> list[int]:
    """The ids of the pairs a selection keeps from the datasets, taken in import order."""
    pairs = pd.DataFrame(
        session.execute(
            select(Pair.id, Pair.gold_label).where(Pair.dataset_id.in_(dataset_ids)).order_by(Pair.dataset_id, Pair.id)
        ).all(),
        columns=["pair_id", "gold_label"],
    )
    pairs["gold_label"] = pd.to_numeric(pairs["gold_label"], errors="coerce")
    if selection and ("score_min" in selection or "score_max" in selection):
        run_id = selection["score_run"]
        if session.get(ScoreRun, run_id) is None or not session.scalar(select(_has_scores(run_id))):
            raise CampaignError("The score run of the filter has no scores (any more): choose another.")
        scores = dict(
            session.execute(
                select(Score.pair_id, Score.value).where(
                    Score.run_id == run_id, Score.pair_id.in_(pairs["pair_id"].tolist())
                )
            ).all()
        )
        pairs["score"] = pairs["pair_id"].map(scores).astype(float)
    return select_pairs(pairs, selection)


def _serving_ranks(session: Session, campaign: Campaign, pair_ids: list[int]) -> dict[int, int]:
    dataset_ids = select(CampaignDataset.dataset_id).where(CampaignDataset.campaign_id == campaign.id)
    label_counts: dict[int, int] = {}
    human_binary: dict[int, int] = {}
    scores: dict[int, float] = {}
    if campaign.pair_order in ("least_labelled", "informative"):
        levels: dict[int, list[int]] = {}
        for pair_id, level in session.execute(
            select(Label.pair_id, Label.level)
            .join(Pair, Pair.id == Label.pair_id)
            .where(Pair.dataset_id.in_(dataset_ids), Label.is_training.is_(False))
        ):
            label_counts[pair_id] = label_counts.get(pair_id, 0) + 1
            levels.setdefault(pair_id, []).append(level)
        human_binary = {p: b for p, ls in levels.items() if (b := majority_binary(ls)) is not None}
    if campaign.pair_order == "informative":
        scores = dict(
            session.execute(
                select(Score.pair_id, Score.value)
                .join(Pair, Pair.id == Score.pair_id)
                .where(Score.run_id == campaign.informative_run_id, Pair.dataset_id.in_(dataset_ids))
            ).all()
        )
        # binary gold labels count as existing labels where no one has labelled the pair yet
        for pair_id, gold in session.execute(
            select(Pair.id, Pair.gold_label)
            .join(Dataset, Dataset.id == Pair.dataset_id)
            .where(Pair.dataset_id.in_(dataset_ids), Dataset.label_kind == "binary", Pair.gold_label.is_not(None))
        ):
            human_binary.setdefault(pair_id, int(gold >= 0.5))
    order = serving_order(
        pair_ids,
        campaign.pair_order,
        campaign.seed,
        label_counts=label_counts,
        scores=scores,
        human_binary=human_binary,
    )
    return {pair_id: rank for rank, pair_id in enumerate(order)}


def add_pairs_to_campaigns(session: Session, dataset_id: int, pair_ids: Sequence[int]) -> int:
    """Queue pairs newly imported into a dataset for every open campaign that labels the whole of
    that dataset (not those that chose some of its pairs), after the pairs already queued (in the
    campaign's own order among themselves). Called by the import inside its transaction. Returns the
    number of queue entries added."""
    campaign_ids = session.scalars(
        select(CampaignDataset.campaign_id)
        .join(Campaign, Campaign.id == CampaignDataset.campaign_id)
        .where(CampaignDataset.dataset_id == dataset_id, Campaign.active.is_(True))
    ).all()
    added = 0
    for campaign_id in campaign_ids:
        campaign = session.get(Campaign, campaign_id)
        if campaign.selection:
            continue  # a campaign that chose some pairs keeps the pairs it chose
        start = (
            session.scalar(select(func.max(CampaignPair.rank)).where(CampaignPair.campaign_id == campaign_id)) or 0
        ) + 1
        ranks = _serving_ranks(session, campaign, sorted(pair_ids))
        session.execute(
            insert(CampaignPair),
            [
                {
                    "campaign_id": campaign_id,
                    "pair_id": p,
                    "rank": start + r,
                    "n_assigned": 0,
                    "n_wanted": _first_wanted(campaign),
                }
                for p, r in ranks.items()
            ],
        )
        added += len(ranks)
    return added


def reorder_campaign(engine: Engine, campaign_id: int) -> None:
    """Recompute the serving order, e.g. once the informative run has scored more pairs.
    Pairs already served keep their assignments; only what comes next changes."""
    access.require("organise", "reorder a campaign's queue")
    with write_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            raise CampaignError("This campaign does not exist (any more).")
        pair_ids = list(session.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == campaign_id)))
        ranks = _serving_ranks(session, campaign, sorted(pair_ids))
        session.execute(
            update(CampaignPair),
            [{"campaign_id": campaign_id, "pair_id": p, "rank": r} for p, r in ranks.items()],
        )
        access.record(
            session, "reorder", "campaign", campaign_id, "Recomputed the serving order from the latest scores."
        )


def _checked_guidelines(text: str) -> str:
    try:
        return check_guidelines(text)
    except GuidelinesError as exc:
        raise CampaignError(str(exc)) from None


def update_campaign(
    engine: Engine,
    campaign_id: int,
    *,
    guidelines: Optional[str] = None,
    active: Optional[bool] = None,
    aggregation: Optional[str] = None,
    guidelines_revision: Optional[int] = None,
    seen_guidelines: Optional[str] = None,
) -> int:
    """Change a campaign's guidelines, whether it is open, or ``aggregation``: the method of
    pluie_core.aggregation its final labels use by default (Export, publish, Live campaign).

    Each save of the guidelines raises their revision by one. ``guidelines_revision`` is the revision the
    organiser's editor was drawn at: when another save came since, nothing is written and StaleFormError
    says what changed (from ``seen_guidelines``, the text the editor was drawn with, when given). None (the
    CLI, scripts) saves without that check. Guidelines over MAX_GUIDELINES characters, or holding a NUL, are
    refused with a sentence. Returns the guidelines' revision after the call. Organisers only (db.access);
    each change is a line of the campaign's activity."""
    access.require("organise", "change a campaign's settings")
    if aggregation is not None and aggregation not in AGGREGATION_METHODS:
        raise CampaignError(
            f"{aggregation!r} is not an aggregation method; choose one of {', '.join(AGGREGATION_METHODS)}."
        )
    if guidelines is not None:
        guidelines = _checked_guidelines(guidelines)
    with write_session(engine) as session:
        # locked (PostgreSQL; SQLite locks at BEGIN): a concurrent save waits, then reads this one's revision
        campaign = session.get(Campaign, campaign_id, with_for_update=guidelines is not None)
        if campaign is None:
            raise CampaignError("This campaign does not exist (any more).")
        if guidelines is not None:
            if guidelines_revision is not None and int(guidelines_revision) != campaign.guidelines_revision:
                what = (
                    guidelines_change(seen_guidelines, campaign.guidelines)
                    if seen_guidelines is not None
                    else f"now {len(campaign.guidelines or ''):,} characters"
                )
                raise StaleFormError(
                    f"Another organiser saved these guidelines since you opened them ({what}). "
                    "Your changes were not saved; the editor now shows theirs: make your changes again."
                )
            access.record(
                session,
                "guidelines",
                "campaign",
                campaign_id,
                f"Saved the guidelines: {guidelines_change(campaign.guidelines, guidelines)}.",
            )
            campaign.guidelines = guidelines
            campaign.guidelines_revision += 1
        if active is not None and bool(active) != campaign.active:
            access.record(
                session,
                "open" if active else "close",
                "campaign",
                campaign_id,
                "Opened the campaign to annotators." if active else "Closed the campaign to annotators.",
            )
        if active is not None:
            campaign.active = active
        if aggregation is not None and aggregation != campaign_aggregation(campaign):
            access.record(
                session,
                "aggregation",
                "campaign",
                campaign_id,
                f"Final labels by {AGGREGATION_NAMES[aggregation]} "
                f"(was {AGGREGATION_NAMES[campaign_aggregation(campaign)]}).",
            )
        if aggregation is not None:
            campaign.aggregation = None if aggregation == DEFAULT_AGGREGATION else aggregation
        return campaign.guidelines_revision


def campaign_label_counts(session: Session, campaign_id: int, since=None) -> dict[str, int]:
    """The campaign's labels as every page counts them (db.analysis.counted_label: all but the training
    trial's) and how many of them are answers to gold checks; ``since`` (UTC) counts only labels given
    from then on."""
    labels = select(func.count()).select_from(Label).where(Label.campaign_id == campaign_id, counted_label())
    # read from the gold assignments (few, indexed), not by testing every label
    checks = (
        select(func.count())
        .select_from(Assignment)
        .join(Label, (Label.annotator_id == Assignment.annotator_id) & (Label.pair_id == Assignment.pair_id))
        .where(
            Assignment.campaign_id == campaign_id,
            Assignment.is_gold.is_(True),
            Label.campaign_id == campaign_id,
            counted_label(),
        )
    )
    if since is not None:
        labels, checks = labels.where(Label.created_at >= since), checks.where(Label.created_at >= since)
    return {"labels": int(session.scalar(labels)), "answers to gold checks": int(session.scalar(checks))}


def fully_labelled_pairs(session: Session, campaign: Campaign) -> int:
    """Queue pairs with as many answers in this campaign as it wants annotators per pair (its overlap):
    answered, not only served (a pair served and not yet answered is not labelled). The campaign's
    labels lie on its queue pairs and on the pairs served as gold checks (a pair served as an ordinary
    one never becomes a check), so the checks' pairs are the ones left out."""
    checks = select(Assignment.pair_id).where(Assignment.campaign_id == campaign.id, Assignment.is_gold.is_(True))
    if campaign.overlap_max is not None:  # adaptive: answered as many times as the pair wants now
        answers = (
            select(Label.pair_id, func.count().label("n"))
            .where(Label.campaign_id == campaign.id, counted_label(), Label.pair_id.not_in(checks))
            .group_by(Label.pair_id)
            .subquery()
        )
        return int(
            session.scalar(
                select(func.count())
                .select_from(CampaignPair)
                .join(answers, answers.c.pair_id == CampaignPair.pair_id)
                .where(CampaignPair.campaign_id == campaign.id, answers.c.n >= CampaignPair.n_wanted)
            )
        )
    answered = (
        select(Label.pair_id)
        .where(Label.campaign_id == campaign.id, counted_label(), Label.pair_id.not_in(checks))
        .group_by(Label.pair_id)
        .having(func.count() >= campaign.overlap)
        .subquery()
    )
    return int(session.scalar(select(func.count()).select_from(answered)))


def campaign_overview(engine: Engine, campaign_id: int) -> dict[str, int]:
    """Counts for the admin: queue size, pairs fully labelled (answered by as many annotators as the
    overlap asks), labels given (as every page counts them) and training pairs."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        in_queue = session.scalar(
            select(func.count()).select_from(CampaignPair).where(CampaignPair.campaign_id == campaign_id)
        )
        return {
            "pairs in queue": int(in_queue),
            "pairs fully labelled": fully_labelled_pairs(session, campaign),
            "labels": campaign_label_counts(session, campaign_id)["labels"],
            "training pairs": session.scalar(
                select(func.count()).select_from(TrainingPair).where(TrainingPair.campaign_id == campaign_id)
            ),
        }


# ---------------------------------------------------------------- training pairs (the organiser's feedback)

MAX_EXPLANATION = 1000


def training_pairs(engine: Engine, campaign_id: int) -> pd.DataFrame:
    """The campaign's training pairs in serving order, for the organiser: position, pair_id,
    source, hypothesis, expected_level (Int64, missing when none), explanation ("" when none)."""
    with read_session(engine) as session:
        rows = session.execute(
            select(
                TrainingPair.position,
                TrainingPair.pair_id,
                Pair.source,
                Pair.hypothesis,
                TrainingPair.expected_level,
                TrainingPair.explanation,
            )
            .join(Pair, Pair.id == TrainingPair.pair_id)
            .where(TrainingPair.campaign_id == campaign_id)
            .order_by(TrainingPair.position)
        ).all()
    frame = pd.DataFrame(rows, columns=["position", "pair_id", "source", "hypothesis", "expected_level", "explanation"])
    frame["expected_level"] = pd.to_numeric(frame["expected_level"], errors="coerce").astype("Int64")
    frame["explanation"] = frame["explanation"].fillna("").astype(str)
    return frame


def set_training_feedback(engine: Engine, campaign_id: int, feedback: Sequence[Mapping[str, Any]]) -> int:
    """Give training pairs the feedback annotators see once they have answered them: rows of
    position, expected_level (0-3 of the scale, or None) and explanation (at most MAX_EXPLANATION
    characters; "" or None for none). All or nothing: a row that names no training pair of the
    campaign, or a level off the scale, refuses the whole list. Returns the number of pairs updated.
    Feedback is never part of the results, so it may change while the campaign runs. Organisers only."""
    access.require("organise", "set a campaign's training feedback")
    cleaned = []
    for row in feedback:
        position = int(row["position"])
        level = row.get("expected_level")
        level = None if level is None or pd.isna(level) else level
        if level is not None and (isinstance(level, bool) or int(level) != level or int(level) not in range(4)):
            raise CampaignError(
                f"Training pair {position + 1}: the expected level must be one of {', '.join(LEVELS[:4])} (or none)."
            )
        explanation = row.get("explanation")
        explanation = "" if explanation is None or pd.isna(explanation) else str(explanation)
        explanation = explanation.replace("\x00", "").strip()
        if len(explanation) > MAX_EXPLANATION:
            raise CampaignError(
                f"Training pair {position + 1}: an explanation has at most {MAX_EXPLANATION:,} characters."
            )
        cleaned.append(
            {
                "position": position,
                "expected_level": None if level is None else int(level),
                "explanation": explanation or None,
            }
        )
    with write_session(engine) as session:
        if session.get(Campaign, campaign_id) is None:
            raise CampaignError("This campaign does not exist (any more).")
        known = set(session.scalars(select(TrainingPair.position).where(TrainingPair.campaign_id == campaign_id)))
        unknown = [r["position"] for r in cleaned if r["position"] not in known]
        if unknown:
            raise CampaignError(f"This campaign has no training pair {unknown[0] + 1}: nothing was saved.")
        for row in cleaned:
            session.execute(
                update(TrainingPair)
                .where(
                    TrainingPair.campaign_id == campaign_id,
                    TrainingPair.position == row["position"],
                )
                .values(expected_level=row["expected_level"], explanation=row["explanation"])
            )
        if cleaned:
            positions = ", ".join(str(r["position"] + 1) for r in cleaned)
            access.record(
                session,
                "training",
                "campaign",
                campaign_id,
                f"Saved the feedback of training pair{'s' if len(cleaned) > 1 else ''} {positions}.",
            )
        return len(cleaned)


def campaign_activity(engine: Engine, campaign_id: int, limit: int = 20) -> pd.DataFrame:
    """The campaign's latest activity, newest first: at (UTC), who (the account's name, "" where the store
    had no accounts) and what (a sentence, which may quote names people typed)."""
    limit = check_whole("The number of lines", limit, CampaignError, 1, 10_000)
    with read_session(engine) as session:
        rows = session.execute(
            select(Activity.at, Activity.actor, Activity.summary)
            .where(Activity.subject == "campaign", Activity.subject_id == campaign_id)
            .order_by(Activity.id.desc())
            .limit(limit)
        ).all()
    return pd.DataFrame(rows, columns=["at", "who", "what"])
