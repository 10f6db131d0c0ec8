"""Labelling campaigns: every query and write for campaigns, annotators, serving and labels.

Serving follows the protocol of ParaPLUIE appendix A.3: the training pairs first (the same for
everyone, in the same order, not counted), then the campaign's queue up to the annotator's quota.
A pair is reserved (an Assignment row, and one more on its CampaignPair counter) before it is
shown, in the same transaction, so that overlap targets hold when several people label at once;
an annotator's place is the store, so closing the browser and coming back resumes.
"""
from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import pandas as pd
from sqlalchemy import Engine, and_, case, exists, func, insert, select, update
from sqlalchemy.orm import Session

from db import access
from db.analysis import counted_label
from db.engine import read_session, retry_when_busy, write_session
from db.limits import NAME_LENGTH as NAME_LENGTH  # re-exported: the pages read ann.NAME_LENGTH
from db.limits import INT_MAX, check_whole, clean_name, invisible
from db.models import (
    Activity,
    Annotator,
    Assignment,
    Campaign,
    CampaignDataset,
    CampaignPair,
    Dataset,
    GoldPair,
    Label,
    Pair,
    Score,
    ScoreRun,
    TrainingPair,
    utcnow,
)
from pluie_core.aggregation import DEFAULT_METHOD as DEFAULT_AGGREGATION
from pluie_core.aggregation import METHOD_NAMES as AGGREGATION_NAMES
from pluie_core.aggregation import METHODS as AGGREGATION_METHODS
from pluie_core.aggregation import pair_posterior, wants_another
from pluie_core.auth import hash_token, new_token
from pluie_core.guidelines import (
    DISTRIBUTIONS, PAIR_ORDERS, GuidelinesError, check_guidelines, default_guidelines, guidelines_change,
    pick_training_pairs, serving_order,
)
from pluie_core.pair_selection import SelectionError, clean_selection, select_pairs
from pluie_core.labels import ENGLISH_LEVELS, LEVELS, majority_binary
from pluie_core.quality import gold_check_count, serve_check_now


ADAPTIVE_CONFIDENCE = 0.9  # the vote share a pair's binarised label needs before adaptive overlap stops it
# the bounds of a campaign's numbers (the store's INTEGER holds 2**31 - 1; these are what makes sense)
MAX_QUOTA = 1_000_000  # pairs per annotator
MAX_OVERLAP = 1_000  # annotators per pair, the least and the most
MAX_TRAINING = 10_000  # training pairs


class CampaignError(ValueError):
    """Something a user asked for that cannot be done; the message says why, in a sentence."""


class StaleAnswerError(CampaignError):
    """The answer stored for a pair is no longer the one the page showed (another tab or window)."""


class StaleFormError(CampaignError):
    """A form drawn at an older revision of what it saves (a campaign's quality settings, its guidelines):
    another organiser saved since. Nothing was written; the message says what changed."""


@dataclass(frozen=True)
class ServedPair:
    """One pair as an annotator sees it: which sentence is on top was drawn when it was served."""

    position: int  # 0-based over the whole session, training first
    pair_id: int
    top: str
    bottom: str
    source_on_top: bool
    is_training: bool
    number: int  # 1-based, within the training trial or within the quota
    out_of: int  # training size, or quota
    level: Optional[int]  # the annotator's current answer, when revisiting
    comment: Optional[str] = None  # and the comment and flag given with it
    flagged: bool = False


@dataclass(frozen=True)
class TrainingFeedback:
    """What an annotator sees once they have answered a training pair: their answer, the level the
    organiser expects (None when none was given) and the organiser's explanation ("" when none)."""

    position: int
    number: int
    out_of: int
    top: str
    bottom: str
    answer: int
    expected_level: Optional[int]
    explanation: str


@dataclass(frozen=True)
class Progress:
    """An annotator's counter, as they and the organiser see it (progress, annotator_progress)."""

    training_done: int
    training_total: int
    done: int  # answered pairs after the training trial, gold checks included (invisible as such)
    # out of: the quota and the gold checks planned; once finished, what was served (= done: the counter is full)
    quota: int
    finished: bool = False  # nothing left to serve them now: their quota and its checks, or all they could reach
    queue_ran_out: bool = False  # finished before the quota: the queue had no more pairs for them


@dataclass(frozen=True)
class AnnotatorView:
    """What the labelling page may know about its annotator: nothing about scores or others."""

    annotator_id: int
    display_name: Optional[str]
    english_level: Optional[str]
    campaign_name: str
    guidelines: str
    campaign_active: bool

    @property
    def needs_profile(self) -> bool:
        return not self.display_name or self.english_level not in ENGLISH_LEVELS


# ---------------------------------------------------------------- campaigns (admin)

def dataset_choices(engine: Engine, campaign_id: Optional[int] = None) -> list[tuple[int, str, int]]:
    """(id, name, number of pairs) of every dataset, or only of a campaign's datasets."""
    query = (select(Dataset.id, Dataset.name, func.count(Pair.id)).outerjoin(Pair, Pair.dataset_id == Dataset.id)
             .where(Dataset.import_state.is_(None)).group_by(Dataset.id, Dataset.name).order_by(Dataset.name))
    if campaign_id is not None:
        query = query.where(Dataset.id.in_(select(CampaignDataset.dataset_id).where(
            CampaignDataset.campaign_id == campaign_id)))
    with read_session(engine) as session:
        return [(i, n, c) for i, n, c in session.execute(query)]


def campaigns_of_dataset(engine: Engine, dataset_id: int) -> list[tuple[int, str]]:
    """(id, name) of the campaigns that label this dataset (its pairs may be their gold checks), newest first."""
    with read_session(engine) as session:
        return [tuple(r) for r in session.execute(
            select(Campaign.id, Campaign.name).join(CampaignDataset, CampaignDataset.campaign_id == Campaign.id)
            .where(CampaignDataset.dataset_id == dataset_id).order_by(Campaign.created_at.desc(), Campaign.id.desc()))]


def score_run_choices(engine: Engine, kind: Optional[str] = "pluie") -> list[tuple[int, str]]:
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
    access.require("organise")
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
            raise CampaignError("The confidence asked of a pair's label must be above 50% and at most 100% "
                                "(a majority of two sides is always at least 50%).")
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
        known = set(session.scalars(select(Dataset.id).where(Dataset.id.in_(dataset_ids), Dataset.import_state.is_(None))))
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
                f"{held} {len(pair_ids):,} pairs: not enough for {n_training} training pairs and a queue.")
        campaign = Campaign(
            name=name, quota=quota, overlap=overlap, n_training=n_training,
            guidelines=default_guidelines() if guidelines is None else _checked_guidelines(guidelines),
            pair_order=pair_order, seed=seed, informative_run_id=informative_run_id, active=True,
            selection=selection, distribution=distribution, overlap_max=overlap_max,
            confidence=confidence if overlap_max is not None else None, created_by=access.actor_name(),
        )
        session.add(campaign)
        session.flush()
        session.execute(insert(CampaignDataset), [{"campaign_id": campaign.id, "dataset_id": d} for d in set(dataset_ids)])
        training = pick_training_pairs(pair_ids, n_training, seed)
        if training:
            session.execute(insert(TrainingPair), [
                {"campaign_id": campaign.id, "position": i, "pair_id": p} for i, p in enumerate(training)])
        queue = sorted(set(pair_ids) - set(training))
        ranks = _serving_ranks(session, campaign, queue)
        session.execute(insert(CampaignPair), [
            {"campaign_id": campaign.id, "pair_id": p, "rank": ranks[p], "n_assigned": 0,
             "n_wanted": _first_wanted(campaign)} for p in queue])
        access.record(session, "create", "campaign", campaign.id,
                      f"Created the campaign: {len(queue):,} pairs in the queue, {len(training):,} training pairs.")
        return campaign.id


def _first_wanted(campaign: Campaign) -> Optional[int]:
    """The annotators a new queue pair wants: the minimum under adaptive overlap, None (the campaign's
    fixed overlap) otherwise."""
    return campaign.overlap if campaign.overlap_max is not None else None


def _selected_pairs(session: Session, dataset_ids: Sequence[int], selection: Optional[dict]) -> list[int]:
    """The ids of the pairs a selection keeps from the datasets, taken in import order."""
    pairs = pd.DataFrame(session.execute(
        select(Pair.id, Pair.gold_label).where(Pair.dataset_id.in_(dataset_ids)).order_by(Pair.dataset_id, Pair.id)
    ).all(), columns=["pair_id", "gold_label"])
    pairs["gold_label"] = pd.to_numeric(pairs["gold_label"], errors="coerce")
    if selection and ("score_min" in selection or "score_max" in selection):
        run_id = selection["score_run"]
        if session.get(ScoreRun, run_id) is None or not session.scalar(select(_has_scores(run_id))):
            raise CampaignError("The score run of the filter has no scores (any more): choose another.")
        scores = dict(session.execute(select(Score.pair_id, Score.value).where(
            Score.run_id == run_id, Score.pair_id.in_(pairs["pair_id"].tolist()))).all())
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
            select(Label.pair_id, Label.level).join(Pair, Pair.id == Label.pair_id)
            .where(Pair.dataset_id.in_(dataset_ids), Label.is_training.is_(False))
        ):
            label_counts[pair_id] = label_counts.get(pair_id, 0) + 1
            levels.setdefault(pair_id, []).append(level)
        human_binary = {p: b for p, ls in levels.items() if (b := majority_binary(ls)) is not None}
    if campaign.pair_order == "informative":
        scores = dict(session.execute(
            select(Score.pair_id, Score.value).join(Pair, Pair.id == Score.pair_id)
            .where(Score.run_id == campaign.informative_run_id, Pair.dataset_id.in_(dataset_ids))).all())
        # binary gold labels count as existing labels where no one has labelled the pair yet
        for pair_id, gold in session.execute(
            select(Pair.id, Pair.gold_label).join(Dataset, Dataset.id == Pair.dataset_id)
            .where(Pair.dataset_id.in_(dataset_ids), Dataset.label_kind == "binary", Pair.gold_label.is_not(None))
        ):
            human_binary.setdefault(pair_id, int(gold >= 0.5))
    order = serving_order(pair_ids, campaign.pair_order, campaign.seed,
                          label_counts=label_counts, scores=scores, human_binary=human_binary)
    return {pair_id: rank for rank, pair_id in enumerate(order)}


def add_pairs_to_campaigns(session: Session, dataset_id: int, pair_ids: Sequence[int]) -> int:
    """Queue pairs newly imported into a dataset for every open campaign that labels the whole of
    that dataset (not those that chose some of its pairs), after the pairs already queued (in the
    campaign's own order among themselves). Called by the import inside its transaction. Returns the
    number of queue entries added."""
    campaign_ids = session.scalars(
        select(CampaignDataset.campaign_id).join(Campaign, Campaign.id == CampaignDataset.campaign_id)
        .where(CampaignDataset.dataset_id == dataset_id, Campaign.active.is_(True))
    ).all()
    added = 0
    for campaign_id in campaign_ids:
        campaign = session.get(Campaign, campaign_id)
        if campaign.selection:
            continue  # a campaign that chose some pairs keeps the pairs it chose
        start = (session.scalar(select(func.max(CampaignPair.rank)).where(CampaignPair.campaign_id == campaign_id)) or 0) + 1
        ranks = _serving_ranks(session, campaign, sorted(pair_ids))
        session.execute(insert(CampaignPair), [
            {"campaign_id": campaign_id, "pair_id": p, "rank": start + r, "n_assigned": 0,
             "n_wanted": _first_wanted(campaign)} for p, r in ranks.items()])
        added += len(ranks)
    return added


def reorder_campaign(engine: Engine, campaign_id: int) -> None:
    """Recompute the serving order, e.g. once the informative run has scored more pairs.
    Pairs already served keep their assignments; only what comes next changes."""
    access.require("organise")
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
        access.record(session, "reorder", "campaign", campaign_id, "Recomputed the serving order from the latest scores.")


def _checked_guidelines(text: str) -> str:
    try:
        return check_guidelines(text)
    except GuidelinesError as exc:
        raise CampaignError(str(exc)) from None


def update_campaign(engine: Engine, campaign_id: int, *, guidelines: Optional[str] = None,
                    active: Optional[bool] = None, aggregation: Optional[str] = None,
                    guidelines_revision: Optional[int] = None, seen_guidelines: Optional[str] = None) -> int:
    """Change a campaign's guidelines, whether it is open, or ``aggregation``: the method of
    pluie_core.aggregation its final labels use by default (Export, publish, Live campaign).

    Each save of the guidelines raises their revision by one. ``guidelines_revision`` is the revision the
    organiser's editor was drawn at: when another save came since, nothing is written and StaleFormError
    says what changed (from ``seen_guidelines``, the text the editor was drawn with, when given). None (the
    CLI, scripts) saves without that check. Guidelines over MAX_GUIDELINES characters, or holding a NUL, are
    refused with a sentence. Returns the guidelines' revision after the call. Organisers only (db.access);
    each change is a line of the campaign's activity."""
    access.require("organise")
    if aggregation is not None and aggregation not in AGGREGATION_METHODS:
        raise CampaignError(f"{aggregation!r} is not an aggregation method; choose one of "
                            f"{', '.join(AGGREGATION_METHODS)}.")
    if guidelines is not None:
        guidelines = _checked_guidelines(guidelines)
    with write_session(engine) as session:
        # locked (PostgreSQL; SQLite locks at BEGIN): a concurrent save waits, then reads this one's revision
        campaign = session.get(Campaign, campaign_id, with_for_update=guidelines is not None)
        if campaign is None:
            raise CampaignError("This campaign does not exist (any more).")
        if guidelines is not None:
            if guidelines_revision is not None and int(guidelines_revision) != campaign.guidelines_revision:
                what = (guidelines_change(seen_guidelines, campaign.guidelines) if seen_guidelines is not None
                        else f"now {len(campaign.guidelines or ''):,} characters")
                raise StaleFormError(f"Another organiser saved these guidelines since you opened them ({what}). "
                                     "Your changes were not saved; the editor now shows theirs: make your changes again.")
            access.record(session, "guidelines", "campaign", campaign_id,
                          f"Saved the guidelines: {guidelines_change(campaign.guidelines, guidelines)}.")
            campaign.guidelines = guidelines
            campaign.guidelines_revision += 1
        if active is not None and bool(active) != campaign.active:
            access.record(session, "open" if active else "close", "campaign", campaign_id,
                          "Opened the campaign to annotators." if active else "Closed the campaign to annotators.")
        if active is not None:
            campaign.active = active
        if aggregation is not None and aggregation != campaign_aggregation(campaign):
            access.record(session, "aggregation", "campaign", campaign_id,
                          f"Final labels by {AGGREGATION_NAMES[aggregation]} "
                          f"(was {AGGREGATION_NAMES[campaign_aggregation(campaign)]}).")
        if aggregation is not None:
            campaign.aggregation = None if aggregation == DEFAULT_AGGREGATION else aggregation
        return campaign.guidelines_revision


def campaign_label_counts(session: Session, campaign_id: int, since=None) -> dict[str, int]:
    """The campaign's labels as every page counts them (db.analysis.counted_label: all but the training
    trial's) and how many of them are answers to gold checks; ``since`` (UTC) counts only labels given
    from then on."""
    labels = select(func.count()).select_from(Label).where(Label.campaign_id == campaign_id, counted_label())
    # read from the gold assignments (few, indexed), not by testing every label
    checks = (select(func.count()).select_from(Assignment)
              .join(Label, (Label.annotator_id == Assignment.annotator_id) & (Label.pair_id == Assignment.pair_id))
              .where(Assignment.campaign_id == campaign_id, Assignment.is_gold.is_(True),
                     Label.campaign_id == campaign_id, counted_label()))
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
        answers = (select(Label.pair_id, func.count().label("n")).where(
            Label.campaign_id == campaign.id, counted_label(), Label.pair_id.not_in(checks))
            .group_by(Label.pair_id).subquery())
        return int(session.scalar(select(func.count()).select_from(CampaignPair).join(
            answers, answers.c.pair_id == CampaignPair.pair_id).where(
            CampaignPair.campaign_id == campaign.id, answers.c.n >= CampaignPair.n_wanted)))
    answered = (select(Label.pair_id)
                .where(Label.campaign_id == campaign.id, counted_label(), Label.pair_id.not_in(checks))
                .group_by(Label.pair_id).having(func.count() >= campaign.overlap).subquery())
    return int(session.scalar(select(func.count()).select_from(answered)))


def campaign_overview(engine: Engine, campaign_id: int) -> dict[str, int]:
    """Counts for the admin: queue size, pairs fully labelled (answered by as many annotators as the
    overlap asks), labels given (as every page counts them) and training pairs."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        in_queue = session.scalar(select(func.count()).select_from(CampaignPair)
                                  .where(CampaignPair.campaign_id == campaign_id))
        return {"pairs in queue": int(in_queue), "pairs fully labelled": fully_labelled_pairs(session, campaign),
                "labels": campaign_label_counts(session, campaign_id)["labels"],
                "training pairs": session.scalar(select(func.count()).select_from(TrainingPair)
                                                 .where(TrainingPair.campaign_id == campaign_id))}


def annotator_rows(engine: Engine, campaign_id: int) -> list[dict]:
    """One row per annotator of the campaign, for the admin's table; ``labelled``: the annotator's own
    counter (annotator_progress: gold checks included, full once nothing is left for them)."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        ids = list(session.scalars(select(Annotator.id).where(Annotator.campaign_id == campaign_id)))
        counters = _progress(session, campaign, ids)
        last = dict(session.execute(
            select(Assignment.annotator_id, func.max(Assignment.done_at))
            .where(Assignment.campaign_id == campaign_id).group_by(Assignment.annotator_id)).all())
        rows = []
        for a in session.scalars(select(Annotator).where(Annotator.campaign_id == campaign_id).order_by(Annotator.id)):
            rows.append({
                "id": a.id, "name": a.name, "display name": a.display_name or "",
                "English": a.english_level or "", "labelled": f"{counters[a.id].done} / {counters[a.id].quota}",
                "last answer": last.get(a.id), "status": "revoked" if a.revoked_at else "active",
            })
        return rows


# ---------------------------------------------------------------- annotators and access

def _same_name(name: str) -> str:
    # "Alice", " alice " and "ALICE" are one name to the people reading the tables, and so are "Zoë" typed
    # two ways (NFC) and "s\u200bam" (invisible characters): a name stored before names were cleaned too
    name = unicodedata.normalize("NFC", "".join(c for c in name if not invisible(c)))
    return " ".join(name.split()).casefold()


def _shown(name: str) -> str:
    """The start of a refused name, for its sentence: control characters as U+FFFD, never sent on."""
    return "".join(c if c.isprintable() or c == " " else "\ufffd" for c in name[:30])


def person_name(what: str, name: Optional[str]) -> str:
    """A person's name as the store keeps it (db.limits.clean_name: NFC, invisible characters removed, no
    control character, at most 200 characters), with its spaces collapsed; CampaignError otherwise."""
    return " ".join(clean_name(what, " ".join(str(name or "").split()), CampaignError).split())


def create_annotators(engine: Engine, campaign_id: int, names: Sequence[str]) -> list[tuple[int, str, str]]:
    """New annotators of the campaign: (id, name, personal-link token) each, in the given order.
    Tokens are returned once and never stored (only their hashes are). All or nothing: a name
    given twice, or already used in the campaign (letter case and spacing aside, revoked links
    included), refuses the whole list, so that no two rows of the results share a name; a lost
    link is replaced with new_link, which keeps the annotator and their labels. Organisers only (db.access)."""
    access.require("organise")
    names = [" ".join((n or "").split()) for n in names]
    names = [person_name(f"The annotator name “{_shown(n)}…”", n) for n in names if n]
    if not names:
        raise CampaignError("Give the annotator a name (for you; they choose their display name).")
    seen: dict[str, str] = {}
    for name in names:
        if _same_name(name) in seen:
            raise CampaignError(f"“{seen[_same_name(name)]}” is in the list twice: "
                                "give each annotator a name of their own.")
        seen[_same_name(name)] = name
    with write_session(engine) as session:
        # the campaign's row lock (PostgreSQL) keeps two admins from adding the same name at once
        if session.get(Campaign, campaign_id, with_for_update=True) is None:
            raise CampaignError("This campaign does not exist (any more).")
        existing = session.scalars(select(Annotator.name).where(Annotator.campaign_id == campaign_id))
        taken = {_same_name(n): n for n in existing}
        clash = next((n for n in names if _same_name(n) in taken), None)
        if clash is not None:
            raise CampaignError(
                f"This campaign already has an annotator called “{taken[_same_name(clash)]}”: no link was created. "
                "Choose another name, or give them a new link under “Replace a lost link”.")
        created = []
        for name in names:
            token = new_token()
            annotator = Annotator(name=name, campaign_id=campaign_id, token_hash=hash_token(token),
                                  is_external=False)
            session.add(annotator)
            session.flush()
            created.append((annotator.id, annotator.name, token))
        access.record(session, "links", "campaign", campaign_id,
                      f"Created {'a personal link' if len(created) == 1 else 'personal links'} for "
                      f"{', '.join(name for _, name, _ in created)}.")
        return created


def create_annotator(engine: Engine, campaign_id: int, name: str) -> tuple[int, str]:
    """One new annotator of the campaign and their personal-link token (see create_annotators)."""
    (annotator_id, _, token), = create_annotators(engine, campaign_id, [name])
    return annotator_id, token


def new_link(engine: Engine, annotator_id: int) -> str:
    """A new personal link for the same annotator, e.g. when theirs is lost: the old link stops
    working at once, the labels and the place in the queue stay theirs, and a revoked annotator
    can label again. Returns the new token (shown once, only its hash is stored). Organisers only."""
    access.require("organise")
    token = new_token()
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id, with_for_update=True)
        if annotator is None or annotator.campaign_id is None:
            raise CampaignError("This annotator does not exist (any more).")
        annotator.token_hash = hash_token(token)
        annotator.revoked_at = None
        access.record(session, "new link", "campaign", annotator.campaign_id,
                      f"Replaced the link of {annotator.name}: the old one no longer works.")
    return token


def revoke_annotator(engine: Engine, annotator_id: int) -> None:
    """The link stops working; a pair reserved but not answered goes back to the queue.
    Labels already given stay. Organisers only (db.access)."""
    access.require("organise")
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id, with_for_update=True)  # after an answer being stored
        if annotator is None:
            raise CampaignError("This annotator does not exist.")
        if annotator.revoked_at is None:
            annotator.revoked_at = utcnow()
            access.record(session, "revoke", "campaign", annotator.campaign_id, f"Revoked the link of {annotator.name}.")
        for assignment in session.scalars(select(Assignment).where(
                Assignment.annotator_id == annotator_id, Assignment.done_at.is_(None))):
            session.execute(update(CampaignPair).where(
                CampaignPair.campaign_id == assignment.campaign_id, CampaignPair.pair_id == assignment.pair_id,
            ).values(n_assigned=CampaignPair.n_assigned - 1))
            session.delete(assignment)


def annotator_for_token(engine: Engine, token: Optional[str]) -> Optional[Annotator]:
    """The annotator whose personal link carries this token; None for an unknown or revoked one."""
    if not token or len(token) > 200:
        return None
    with read_session(engine) as session:
        annotator = session.scalar(select(Annotator).where(Annotator.token_hash == hash_token(token)))
        if annotator is None or annotator.revoked_at is not None or annotator.campaign_id is None:
            return None
        return annotator


def annotator_view(engine: Engine, annotator_id: int) -> AnnotatorView:
    with read_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        campaign = session.get(Campaign, annotator.campaign_id)
        return AnnotatorView(annotator.id, annotator.display_name, annotator.english_level,
                             campaign.name, campaign.guidelines, campaign.active)


def set_annotator_profile(engine: Engine, annotator_id: int, display_name: str, english_level: str) -> None:
    if not (display_name or "").strip():
        raise CampaignError("Please enter a name to be shown with your labels.")
    display_name = person_name("Your name", display_name)
    if english_level not in ENGLISH_LEVELS:
        raise CampaignError("Please choose your English level: " + ", ".join(ENGLISH_LEVELS) + ".")
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        session.get(Campaign, annotator.campaign_id, with_for_update=True)  # one profile at a time (PostgreSQL)
        others = session.scalars(select(Annotator.display_name).where(
            Annotator.campaign_id == annotator.campaign_id, Annotator.id != annotator_id,
            Annotator.display_name.is_not(None)))
        if _same_name(display_name) in {_same_name(n) for n in others}:
            raise CampaignError(f"Someone else in this campaign already goes by “{display_name}”: "
                                "please add an initial or choose another name, so that your labels stay yours.")
        annotator.display_name = display_name
        annotator.english_level = english_level


# ---------------------------------------------------------------- serving and labels

def _training_size(session: Session, campaign_id: int) -> int:
    return session.scalar(select(func.count()).select_from(TrainingPair).where(TrainingPair.campaign_id == campaign_id))


def _gold_checks(session: Session, campaign: Campaign) -> int:
    """Gold checks planned for each annotator of the campaign: those of a full quota
    (pluie_core.quality.gold_check_count). A person whose queue runs out first gets the share of what
    they got (_checks_left)."""
    if not campaign.gold_rate:
        return 0
    n_gold = session.scalar(select(func.count()).select_from(GoldPair).where(GoldPair.campaign_id == campaign.id))
    return gold_check_count(campaign.quota, campaign.gold_rate, n_gold)


def _checks_left(session: Session, campaign: Campaign, annotator_id: int, pairs: int, gold_served: int,
                 planned: int) -> int:
    """The gold checks still due to an annotator whose ordinary pairs, served and still reachable, number
    ``pairs``: the share of checks of those pairs (gold_check_count, never more than the ``planned`` of a
    full quota) less the checks served, and never more than the gold pairs they have not been served."""
    due = min(planned, gold_check_count(pairs, campaign.gold_rate, planned)) - gold_served
    if due <= 0:
        return 0
    unseen = session.scalar(select(func.count()).select_from(GoldPair).where(
        GoldPair.campaign_id == campaign.id,
        ~exists().where(Assignment.campaign_id == campaign.id, Assignment.annotator_id == annotator_id,
                        Assignment.pair_id == GoldPair.pair_id)))
    return min(due, int(unseen))


def _has_slot(campaign: Campaign):
    """A queue row of the campaign with a slot left: a fixed overlap is the campaign's; an adaptive one,
    each pair's own (its n_wanted, raised by record_label)."""
    wanted = CampaignPair.n_wanted if campaign.overlap_max is not None else campaign.overlap
    return and_(CampaignPair.campaign_id == campaign.id, CampaignPair.n_assigned < wanted)


def _already_mine(campaign: Campaign, annotator_id: int):
    return exists().where(Assignment.campaign_id == campaign.id, Assignment.annotator_id == annotator_id,
                          Assignment.pair_id == CampaignPair.pair_id)


def _reachable(session: Session, campaign: Campaign, annotator_id: int, limit: int) -> int:
    """How many queue pairs this annotator could be served now (a slot left, never served to them),
    counted up to ``limit`` (the quota left: reading further would not change what is served)."""
    if limit <= 0:
        return 0
    found = (select(CampaignPair.pair_id).where(_has_slot(campaign), ~_already_mine(campaign, annotator_id))
             .limit(int(limit)).subquery())
    return int(session.scalar(select(func.count()).select_from(found)))


def _served(session: Session, campaign: Campaign, n_training: int, assignment: Assignment,
            annotator_id: int) -> ServedPair:
    pair = session.get(Pair, assignment.pair_id)
    level, comment, flagged = session.execute(
        select(Label.level, Label.comment, Label.flagged)
        .where(Label.annotator_id == annotator_id, Label.pair_id == pair.id)).first() or (None, None, False)
    is_training = assignment.position < n_training
    top, bottom = (pair.source, pair.hypothesis) if assignment.source_on_top else (pair.hypothesis, pair.source)
    return ServedPair(
        position=assignment.position, pair_id=pair.id, top=top, bottom=bottom,
        source_on_top=assignment.source_on_top, is_training=is_training,
        number=assignment.position + 1 if is_training else assignment.position - n_training + 1,
        # gold checks are numbered like any pair (invisible as such): out of quota + checks planned
        out_of=n_training if is_training else campaign.quota + _gold_checks(session, campaign), level=level,
        comment=comment, flagged=bool(flagged),
    )


def progress(engine: Engine, annotator_id: int) -> Progress:
    """The annotator's counter (annotator_progress)."""
    with read_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        campaign = session.get(Campaign, annotator.campaign_id)
        return _progress(session, campaign, [annotator_id])[annotator_id]


def annotator_progress(engine: Engine, campaign_id: int) -> dict[int, Progress]:
    """Every annotator's counter, by annotator id, the same the annotator sees (the organiser's progress
    column): answered pairs after the training trial, gold checks included, out of the quota and the checks
    planned; once nothing is left to serve them (finished), out of what was served, so the counter is full."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        ids = list(session.scalars(select(Annotator.id).where(Annotator.campaign_id == campaign_id)))
        return _progress(session, campaign, ids)


def _progress(session: Session, campaign: Campaign, annotator_ids: Sequence[int]) -> dict[int, Progress]:
    """The counters of these annotators of the campaign, in a few grouped reads on covering indexes
    whatever their number (the Live campaign view reads thousands): finished is what _reserve would
    decide now (no pair open, the training trial done, no queue pair they could get within their quota,
    no check still due: _checks_left). Positions run 0, 1, 2... and a pair is reserved only when none
    is open, so only an annotator's last pair can be open."""
    ids = list(annotator_ids)
    n_training = _training_size(session, campaign.id)
    planned = _gold_checks(session, campaign)
    whose = (Assignment.annotator_id == ids[0] if len(ids) == 1 else  # the page's own counter, or the campaign's
             Assignment.annotator_id.in_(select(Annotator.id).where(Annotator.campaign_id == campaign.id)))
    last = (select(Assignment.annotator_id, func.count().label("n"), func.max(Assignment.position).label("p"))
            .where(whose).group_by(Assignment.annotator_id).subquery())
    served = {aid: (int(n), int(p), bool(is_open)) for aid, n, p, is_open in session.execute(
        select(last.c.annotator_id, last.c.n, last.c.p, Assignment.done_at.is_(None)).join(Assignment, and_(
            Assignment.annotator_id == last.c.annotator_id, Assignment.position == last.c.p)))}
    checks = select(Assignment.annotator_id, func.count()).where(
        Assignment.campaign_id == campaign.id, Assignment.is_gold.is_(True), whose).group_by(Assignment.annotator_id)
    gold_served = dict(session.execute(checks).all())
    rows = {}
    for aid in ids:
        n, _, is_open = served.get(aid, (0, -1, False))
        rows[aid] = (n, int(gold_served.get(aid, 0)), is_open)
    # who might have nothing left: no pair open, the training trial done, their quota not reached
    # (a queue pair to get?) or reached (only checks still due)
    waiting = [aid for aid, (n, _, is_open) in rows.items() if not is_open and n >= n_training]
    short = [aid for aid in waiting if rows[aid][0] - n_training - rows[aid][1] < campaign.quota]
    reachable: set[int] = set()
    if len(ids) == 1:
        reachable = {aid for aid in short if _reachable(session, campaign, aid, 1)}
    elif short:
        open_pairs = session.scalar(select(func.count()).select_from(CampaignPair).where(_has_slot(campaign)))
        # an annotator served fewer pairs than there are open ones can surely get one; the others are counted
        unsure = {aid for aid in short if rows[aid][0] >= open_pairs}
        reachable = set(short) - unsure
        if unsure and open_pairs:
            open_mine = dict(session.execute(select(Assignment.annotator_id, func.count()).join(CampaignPair, and_(
                CampaignPair.campaign_id == Assignment.campaign_id, CampaignPair.pair_id == Assignment.pair_id))
                .where(Assignment.campaign_id == campaign.id, _has_slot(campaign)).group_by(Assignment.annotator_id)).all())
            reachable |= {aid for aid in unsure if open_pairs - open_mine.get(aid, 0) > 0}
    candidates = {aid for aid in waiting if aid not in reachable}
    n_gold, gold_seen = 0, {}
    if planned and candidates:  # the checks still due can be served only from gold pairs not served to them yet
        n_gold = session.scalar(select(func.count()).select_from(GoldPair).where(GoldPair.campaign_id == campaign.id))
        gold_seen = dict(session.execute(checks.join(GoldPair, and_(
            GoldPair.campaign_id == Assignment.campaign_id, GoldPair.pair_id == Assignment.pair_id))).all())
    result = {}
    for aid, (n, gold, is_open) in rows.items():
        answered = n - int(is_open)  # all but the last, when it is open
        training_done = min(answered, n_training)
        done = answered - training_done  # answered after the training trial, checks included
        finished = ran_out = False
        if aid in candidates:
            ordinary = n - n_training - gold
            due = min(planned, gold_check_count(ordinary, campaign.gold_rate, planned)) - gold if planned else 0
            finished = due <= 0 or n_gold - gold_seen.get(aid, 0) <= 0
            ran_out = finished and ordinary < campaign.quota
        result[aid] = Progress(training_done, n_training, done, done if finished else campaign.quota + planned,
                               finished, ran_out)
    return result


def _open_assignment(session: Session, annotator_id: int) -> Optional[Assignment]:
    return session.scalar(select(Assignment).where(
        Assignment.annotator_id == annotator_id, Assignment.done_at.is_(None)).order_by(Assignment.position).limit(1))


def serve_next(engine: Engine, annotator_id: int) -> Optional[ServedPair]:
    """The pair this annotator should label now: the one already reserved for them (resume), or
    a newly reserved one. None when they are done: quota reached, queue exhausted, campaign closed
    or link revoked."""
    with read_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        if annotator is None or annotator.revoked_at is not None:
            return None
        campaign = session.get(Campaign, annotator.campaign_id)
        open_one = _open_assignment(session, annotator_id)
        if open_one is not None:
            return _served(session, campaign, _training_size(session, campaign.id), open_one, annotator_id)
        if not campaign.active:
            return None
    with write_session(engine) as session:  # BEGIN IMMEDIATE on SQLite: one reservation at a time
        # the row lock (PostgreSQL; SQLite's write lock already covers it) keeps two tabs of one
        # annotator from reserving two pairs at the same position
        annotator = session.get(Annotator, annotator_id, with_for_update=True)
        if annotator.revoked_at is not None:
            return None
        campaign = session.get(Campaign, annotator.campaign_id)
        n_training = _training_size(session, campaign.id)
        open_one = _open_assignment(session, annotator_id)  # a second tab may have reserved meanwhile
        if open_one is None:
            open_one = _reserve(session, campaign, annotator_id, n_training)
        if open_one is None:
            return None
        return _served(session, campaign, n_training, open_one, annotator_id)


def _reserve(session: Session, campaign: Campaign, annotator_id: int, n_training: int) -> Optional[Assignment]:
    """The next pair for this annotator. After the training trial: an ordinary pair of the queue up to the
    quota, and gold checks (outside the quota) served within the pairs they can actually get: at each step a
    check comes with the chance of the checks still due among the steps left (pluie_core.quality.
    serve_check_now), the checks due being the share of checks of the ordinary pairs served and still
    reachable (_checks_left). So a queue that empties before the quota gives fewer checks, spread over
    what the person got; those still due once it is empty are served at the end."""
    served, gold_served = session.execute(
        select(func.count(), func.coalesce(func.sum(case((Assignment.is_gold, 1), else_=0)), 0))
        .where(Assignment.annotator_id == annotator_id)).one()
    served, gold_served = int(served), int(gold_served)
    is_gold = False
    if served < n_training:
        pair_id = session.scalar(select(TrainingPair.pair_id).where(
            TrainingPair.campaign_id == campaign.id, TrainingPair.position == served))
    else:
        step = served - n_training
        ordinary = step - gold_served
        quota_left = campaign.quota - ordinary
        planned = _gold_checks(session, campaign)
        pair_id = None
        if not planned:
            pair_id = _reserve_queue_pair(session, campaign, annotator_id) if quota_left > 0 else None
        else:
            pairs_left = _reachable(session, campaign, annotator_id, quota_left)
            checks_left = _checks_left(session, campaign, annotator_id, ordinary + pairs_left, gold_served, planned)
            if serve_check_now(checks_left, pairs_left, f"check:{campaign.seed}:{annotator_id}:{step}"):
                pair_id = _reserve_gold_pair(session, campaign, annotator_id, step)
                is_gold = pair_id is not None
            elif pairs_left:
                pair_id = _reserve_queue_pair(session, campaign, annotator_id)
                if pair_id is None and _checks_left(session, campaign, annotator_id, ordinary, gold_served, planned):
                    # the pairs left were taken meanwhile (another annotator): a check still due instead
                    pair_id = _reserve_gold_pair(session, campaign, annotator_id, step)
                    is_gold = pair_id is not None
    if pair_id is None:
        return None
    assignment = Assignment(campaign_id=campaign.id, annotator_id=annotator_id, pair_id=pair_id,
                            position=served, source_on_top=random.random() < 0.5, is_gold=is_gold)
    session.add(assignment)
    session.flush()
    return assignment


def _reserve_gold_pair(session: Session, campaign: Campaign, annotator_id: int, step: int) -> Optional[int]:
    """A gold pair of the campaign this annotator has never been served (in any role), drawn at
    random; None when they have seen them all. The annotator's row lock makes this race-free."""
    unseen = sorted(session.scalars(select(GoldPair.pair_id).where(
        GoldPair.campaign_id == campaign.id,
        ~exists().where(Assignment.campaign_id == campaign.id, Assignment.annotator_id == annotator_id,
                        Assignment.pair_id == GoldPair.pair_id))))
    if not unseen:
        return None
    return random.Random(f"{campaign.seed}:{annotator_id}:{step}").choice(unseen)


def _reserve_queue_pair(session: Session, campaign: Campaign, annotator_id: int) -> Optional[int]:
    """Take one slot of the first pair in serving order that still has one and that this annotator
    has not seen. The conditional UPDATE is the guard: on PostgreSQL, where two transactions may
    pick the same pair, the loser updates no row and tries the next pair."""
    already_mine = _already_mine(campaign, annotator_id)
    # a fixed overlap is the campaign's; an adaptive one, each pair's own (its n_wanted, raised by record_label)
    has_slot = _has_slot(campaign)
    # "share": the pairs assigned fewest times first, so annotators get different pairs while there
    # are enough; "overlap": the serving order alone, so each pair is filled before the next
    order = ((CampaignPair.n_assigned, CampaignPair.rank) if campaign.distribution == "share"
             else (CampaignPair.rank,))
    candidate = select(CampaignPair.pair_id).where(has_slot, ~already_mine).order_by(*order).limit(1)
    # PostgreSQL: a candidate another annotator is reserving right now is skipped rather than waited
    # for (SKIP LOCKED), so concurrent reservations do not queue up behind one row; only when every
    # candidate is being reserved does it wait (the plain query), so no slot is ever missed (SQLite: no-op)
    skipping = candidate.with_for_update(skip_locked=True)
    for _ in range(100):
        pair_id = session.scalar(skipping)
        if pair_id is None:
            pair_id = session.scalar(candidate)
        if pair_id is None:
            return None
        taken = session.execute(update(CampaignPair).where(has_slot, CampaignPair.pair_id == pair_id)
                                .values(n_assigned=CampaignPair.n_assigned + 1))
        if taken.rowcount == 1:
            return pair_id
    return None


def served_at(engine: Engine, annotator_id: int, position: int) -> Optional[ServedPair]:
    """A pair this annotator has already been served (to go back and change the answer)."""
    with read_session(engine) as session:
        assignment = session.scalar(select(Assignment).where(
            Assignment.annotator_id == annotator_id, Assignment.position == position))
        if assignment is None:
            return None
        campaign = session.get(Campaign, assignment.campaign_id)
        return _served(session, campaign, _training_size(session, campaign.id), assignment, annotator_id)


MAX_COMMENT = 500


def clean_comment(comment: Optional[str]) -> Optional[str]:
    """An annotator's comment as stored: spaces trimmed, NUL characters removed (PostgreSQL cannot
    hold them in text), None when empty; longer than MAX_COMMENT characters is refused with a sentence."""
    comment = (comment or "").replace("\x00", "").strip()
    if len(comment) > MAX_COMMENT:
        raise CampaignError(f"A comment has at most {MAX_COMMENT} characters: your answer was not saved.")
    return comment or None


LINK_GONE = ("This link is no longer valid (it has been replaced or revoked): your answer was not saved. "
             "Ask the person who sent it to you for your current link.")
CAMPAIGN_CLOSED = ("This campaign is closed for now: your answer was not saved. "
                   "Your earlier answers are kept; come back to this link when it reopens.")


@retry_when_busy  # an answer waits for a busy store a little longer before the page says so
def record_label(engine: Engine, annotator_id: int, position: int, level: int, seconds_spent: float,
                 *, replacing: Optional[int] = None, token: Optional[str] = None, comment: Optional[str] = None,
                 flagged: bool = False) -> None:
    """Store an answer at once, over exactly what the page showed: a first answer to a pair shown
    unanswered (replacing=None), or a change of the answer `replacing` that the annotator went
    back to. When the stored answer is not that one (the same link open in another tab or window
    answered meanwhile), nothing is written and StaleAnswerError says so: no answer is ever
    replaced except through "back". A change adds the time spent, so seconds_spent is the total
    time the annotator looked at the pair.

    ``comment`` (optional, at most MAX_COMMENT characters) and ``flagged`` (the pair goes to
    Review's queue) are part of the answer: a change through "back" replaces them with the ones given.

    token: the personal link the page was opened with (the labelling page always gives it). Inside
    the transaction, under the annotator's row lock that new_link and revoke take too, the link
    must still be this annotator's, not revoked, and the campaign open: otherwise nothing is
    written and CampaignError says so in one sentence, whatever the timing."""
    if level not in range(len(LEVELS)):
        raise CampaignError("That answer is not on the scale.")
    comment, flagged = clean_comment(comment), bool(flagged)
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id, with_for_update=True)  # one answer at a time
        if annotator is None or annotator.revoked_at is not None:
            raise CampaignError(LINK_GONE)
        if token is not None and (len(token) > 200 or annotator.token_hash != hash_token(token)):
            raise CampaignError(LINK_GONE)  # replaced under "Replace a lost link" since the page opened
        if not session.scalar(select(Campaign.active).where(Campaign.id == annotator.campaign_id)):
            raise CampaignError(CAMPAIGN_CLOSED)
        assignment = session.scalar(select(Assignment).where(
            Assignment.annotator_id == annotator_id, Assignment.position == position))
        if assignment is None:
            raise CampaignError("This pair is not in your queue.")
        is_training = position < _training_size(session, assignment.campaign_id)
        seconds = max(0.0, float(seconds_spent))
        mine = and_(Label.annotator_id == annotator_id, Label.pair_id == assignment.pair_id)
        stored = session.scalar(select(Label.level).where(mine))
        if replacing is None:
            if stored is not None:
                raise StaleAnswerError(
                    f"This pair was already answered in another tab or window (“{LEVELS[stored]}”): "
                    "the answer you just gave was not saved. Here is your current pair.")
            # the conditional update is the guard: it takes the reservation only while still open
            done = session.execute(update(Assignment).where(
                Assignment.id == assignment.id, Assignment.done_at.is_(None)).values(done_at=utcnow()))
            if done.rowcount != 1:
                raise StaleAnswerError("This pair was already answered in another tab or window: "
                                       "the answer you just gave was not saved. Here is your current pair.")
            session.add(Label(
                pair_id=assignment.pair_id, annotator_id=annotator_id, campaign_id=assignment.campaign_id,
                level=level, source_on_top=assignment.source_on_top, is_training=is_training,
                seconds_spent=seconds, comment=comment, flagged=flagged))
        else:
            changed = session.execute(update(Label).where(mine, Label.level == replacing).values(
                level=level, seconds_spent=func.coalesce(Label.seconds_spent, 0.0) + seconds, updated_at=utcnow(),
                comment=comment, flagged=flagged))
            if changed.rowcount != 1:
                now = "no answer" if stored is None else f"“{LEVELS[stored]}”"
                raise StaleAnswerError(f"This answer was changed in another tab or window (it is now {now}): "
                                       "the answer you just gave was not saved.")
        if not is_training and not assignment.is_gold:
            _adapt_overlap(session, assignment.campaign_id, assignment.pair_id)


def _adapt_overlap(session: Session, campaign_id: int, pair_id: int) -> None:
    """Adaptive overlap, in the transaction of the answer that may change it: a queue pair holding the
    answers it asked for gets one more annotator while it holds fewer usable answers than the campaign's
    least ("Don't know" never counts) or its posterior is below the campaign's confidence (wants_another;
    the posterior is the campaign's fitted model's, db.adaptive, once it decides, else the vote share).
    The pair's posterior is kept beside its queue row. The pair's row is locked before its answers are
    counted (PostgreSQL: two answers to one pair at once are counted one after the other, so neither
    misses the other's; SQLite's write lock already orders them). A raise is never taken back here:
    the slot may already be served (db.adaptive.refit_campaign may lower an unserved one)."""
    campaign = session.get(Campaign, campaign_id)
    if campaign.overlap_max is None:
        return
    row = session.execute(select(CampaignPair.n_wanted).where(
        CampaignPair.campaign_id == campaign_id, CampaignPair.pair_id == pair_id).with_for_update()).first()
    if row is None or row.n_wanted is None:
        return
    session.flush()  # the answer just added or changed is counted
    answers = session.execute(select(Label.annotator_id, Label.level).where(
        Label.campaign_id == campaign_id, Label.pair_id == pair_id, counted_label())).all()
    annotators, levels = [a for a, _ in answers], [lv for _, lv in answers]
    posterior = pair_posterior(annotators, levels, campaign.adaptive_fit)
    values: dict[str, Any] = {"posterior": posterior}
    if wants_another(levels, row.n_wanted, campaign.overlap_max, campaign.confidence, least=campaign.overlap,
                     posterior=posterior):
        values["n_wanted"] = row.n_wanted + 1
    session.execute(update(CampaignPair).where(
        CampaignPair.campaign_id == campaign_id, CampaignPair.pair_id == pair_id,
        CampaignPair.n_wanted == row.n_wanted).values(**values))


# ---------------------------------------------------------------- training feedback

MAX_EXPLANATION = 1000


def training_feedback(engine: Engine, annotator_id: int, position: int) -> Optional[TrainingFeedback]:
    """The feedback on a training pair this annotator has answered (TrainingFeedback); None when
    the position is not a training pair, is not answered, or the organiser gave the pair neither an
    expected level nor an explanation."""
    with read_session(engine) as session:
        row = session.execute(
            select(Assignment.campaign_id, Assignment.source_on_top, Pair.source, Pair.hypothesis,
                   TrainingPair.expected_level, TrainingPair.explanation, Label.level)
            .join(TrainingPair, and_(TrainingPair.campaign_id == Assignment.campaign_id,
                                     TrainingPair.position == Assignment.position,
                                     TrainingPair.pair_id == Assignment.pair_id))
            .join(Pair, Pair.id == Assignment.pair_id)
            .join(Label, and_(Label.annotator_id == Assignment.annotator_id, Label.pair_id == Assignment.pair_id))
            .where(Assignment.annotator_id == annotator_id, Assignment.position == int(position))).first()
        if row is None or row.level is None or (row.expected_level is None and not row.explanation):
            return None
        out_of = _training_size(session, row.campaign_id)
    top, bottom = (row.source, row.hypothesis) if row.source_on_top else (row.hypothesis, row.source)
    return TrainingFeedback(int(position), int(position) + 1, out_of, top, bottom, int(row.level),
                            row.expected_level, row.explanation or "")


def training_pairs(engine: Engine, campaign_id: int) -> pd.DataFrame:
    """The campaign's training pairs in serving order, for the organiser: position, pair_id,
    source, hypothesis, expected_level (Int64, missing when none), explanation ("" when none)."""
    with read_session(engine) as session:
        rows = session.execute(
            select(TrainingPair.position, TrainingPair.pair_id, Pair.source, Pair.hypothesis,
                   TrainingPair.expected_level, TrainingPair.explanation)
            .join(Pair, Pair.id == TrainingPair.pair_id)
            .where(TrainingPair.campaign_id == campaign_id).order_by(TrainingPair.position)).all()
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
    access.require("organise")
    cleaned = []
    for row in feedback:
        position = int(row["position"])
        level = row.get("expected_level")
        level = None if level is None or pd.isna(level) else level
        if level is not None and (isinstance(level, bool) or int(level) != level or int(level) not in range(4)):
            raise CampaignError(f"Training pair {position + 1}: the expected level must be one of "
                                f"{', '.join(LEVELS[:4])} (or none).")
        explanation = row.get("explanation")
        explanation = "" if explanation is None or pd.isna(explanation) else str(explanation)
        explanation = explanation.replace("\x00", "").strip()
        if len(explanation) > MAX_EXPLANATION:
            raise CampaignError(f"Training pair {position + 1}: an explanation has at most {MAX_EXPLANATION:,} characters.")
        cleaned.append({"position": position, "expected_level": None if level is None else int(level),
                        "explanation": explanation or None})
    with write_session(engine) as session:
        if session.get(Campaign, campaign_id) is None:
            raise CampaignError("This campaign does not exist (any more).")
        known = set(session.scalars(select(TrainingPair.position).where(TrainingPair.campaign_id == campaign_id)))
        unknown = [r["position"] for r in cleaned if r["position"] not in known]
        if unknown:
            raise CampaignError(f"This campaign has no training pair {unknown[0] + 1}: nothing was saved.")
        for row in cleaned:
            session.execute(update(TrainingPair).where(
                TrainingPair.campaign_id == campaign_id, TrainingPair.position == row["position"],
            ).values(expected_level=row["expected_level"], explanation=row["explanation"]))
        if cleaned:
            positions = ", ".join(str(r["position"] + 1) for r in cleaned)
            access.record(session, "training", "campaign", campaign_id,
                          f"Saved the feedback of training pair{'s' if len(cleaned) > 1 else ''} {positions}.")
        return len(cleaned)


def campaign_activity(engine: Engine, campaign_id: int, limit: int = 20) -> pd.DataFrame:
    """The campaign's latest activity, newest first: at (UTC), who (the account's name, "" where the store
    had no accounts) and what (a sentence, which may quote names people typed)."""
    limit = check_whole("The number of lines", limit, CampaignError, 1, 10_000)
    with read_session(engine) as session:
        rows = session.execute(
            select(Activity.at, Activity.actor, Activity.summary)
            .where(Activity.subject == "campaign", Activity.subject_id == campaign_id)
            .order_by(Activity.id.desc()).limit(limit)).all()
    return pd.DataFrame(rows, columns=["at", "who", "what"])
