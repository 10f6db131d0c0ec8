"""Quality checks and the live view of a campaign: gold pairs (writes, all or nothing) and the figures
the organiser watches while people label. The statistics are pluie_core.quality's; serving the checks
is db.serving's (_reserve)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pandas as pd
from sqlalchemy import Engine, delete, func, select
from sqlalchemy.orm import Session

from db import access
from db.analysis import counted_label
from db.campaigns import CampaignError, StaleFormError, campaign_aggregation, campaign_label_counts
from db.engine import read_session, write_session
from db.export import pair_aggregation
from db.limits import check_whole
from db.models import (
    Annotator,
    Assignment,
    Campaign,
    CampaignDataset,
    CampaignPair,
    Dataset,
    GoldPair,
    Label,
    Pair,
    TrainingPair,
    utcnow,
)
from db.queries import number_frame
from db.serving import annotator_progress
from pluie_core import quality
from pluie_core.aggregation import METHOD_NAMES, fit_decides
from pluie_core.agreement import agreement_figures, count_patterns, level_counts
from pluie_core.labels import DONT_KNOW, LEVELS


@dataclass(frozen=True)
class LiveCampaign:
    annotators: pd.DataFrame  # one row per annotator (see campaign_live)
    figures: dict  # the campaign's own figures
    campaign_median_seconds: float


def _campaign(session: Session, campaign_id: int, lock: bool = False) -> Campaign:
    campaign = session.get(Campaign, campaign_id, with_for_update=lock)
    if campaign is None:
        raise CampaignError("This campaign does not exist (any more).")
    return campaign


# the quality settings a campaign keeps (Campaign's columns), and how a sentence names and writes each
QUALITY_SETTINGS: dict[str, tuple[str, Callable[[float], str]]] = {
    "gold_rate": ("share of gold checks", lambda v: f"{v * 100:.3g}%"),
    "gold_min_accuracy": ("minimum gold accuracy", lambda v: f"{v:.3g}"),
    "fast_fraction": ("“too fast” fraction", lambda v: f"{v:.3g}"),
    "streak_length": ("streak length", lambda v: f"{v:d}"),
    "kappa_min": ("minimum κ vs others", lambda v: f"{v:.3g}"),
    "reliability_min": ("minimum reliability", lambda v: f"{v:.3g}"),
    "min_gold_checks": ("gold checks needed to judge", lambda v: f"{v:d}"),
}
MAX_STREAK_LENGTH = 1000  # the page's bound: a streak longer than any quota flags no one


def quality_settings(campaign: Campaign) -> dict:
    """The campaign's quality settings as stored, by QUALITY_SETTINGS's names: what a form is drawn with."""
    return {name: getattr(campaign, name) for name in QUALITY_SETTINGS}


def _number(what: str, value) -> float:
    """``value`` as a finite float, or CampaignError with a sentence (a range is check_settings's)."""
    try:
        number = float("nan") if isinstance(value, bool) or value is None else float(value)
    except (TypeError, ValueError, OverflowError):
        number = float("nan")
    if not math.isfinite(number):
        raise CampaignError(f"{what} must be a number; got {value[:40] if isinstance(value, str) else value!r}.")
    return number


def _settings_changes(seen: dict, now: dict) -> str:
    """ "share of gold checks 10% → 20%, minimum gold accuracy 0.7 → 0.8": the settings that differ."""
    return ", ".join(
        f"{label} {shown(seen[name])} → {shown(now[name])}"
        for name, (label, shown) in QUALITY_SETTINGS.items()
        if name in seen and seen[name] != now[name]
    )


def set_quality_settings(
    engine: Engine,
    campaign_id: int,
    *,
    gold_rate: float,
    gold_min_accuracy: float,
    fast_fraction: float,
    streak_length: int,
    kappa_min: Optional[float] = None,
    reliability_min: Optional[float] = None,
    min_gold_checks: Optional[int] = None,
    revision: Optional[int] = None,
    seen: Optional[dict] = None,
) -> int:
    """The share of gold checks in each queue and the flag thresholds (pluie_core.quality.check_settings):
    minimum gold accuracy, "too fast" fraction, streak length, minimum κ against the others, minimum
    reliability (the campaign's aggregation method) and the gold checks needed before gold accuracy
    judges. The last three left out (None) keep the campaign's values. A value that is not a number, or
    out of bounds, is refused with a sentence (CampaignError) and nothing changes.

    Each save raises the campaign's settings_revision by one. ``revision`` is the revision the organiser's
    form was drawn at: when another save came since, nothing is written and StaleFormError says which
    settings changed (from ``seen``, the values the form was drawn with: quality_settings). None (the CLI,
    scripts) saves without that check. Returns the settings' revision after the save. Organisers only
    (db.access); the save is a line of the campaign's activity, naming what changed."""
    access.require("organise", "change a campaign's quality settings")
    gold_rate = _number("The share of gold checks", gold_rate)
    gold_min_accuracy = _number("The minimum gold accuracy", gold_min_accuracy)
    fast_fraction = _number("The “too fast” fraction of the median time", fast_fraction)
    streak_length = check_whole("The streak length", streak_length, CampaignError, low=2, high=MAX_STREAK_LENGTH)
    kappa_min = None if kappa_min is None else _number("The minimum κ against the others", kappa_min)
    reliability_min = None if reliability_min is None else _number("The minimum reliability", reliability_min)
    if min_gold_checks is not None:
        min_gold_checks = check_whole(
            "The number of gold checks needed to judge gold accuracy",
            min_gold_checks,
            CampaignError,
            low=1,
            high=quality.MAX_MIN_GOLD_CHECKS,
        )
    with write_session(engine) as session:
        # locked (PostgreSQL; SQLite locks at BEGIN): a concurrent save waits, then reads this one's revision
        campaign = _campaign(session, campaign_id, lock=True)
        if revision is not None and int(revision) != campaign.settings_revision:
            changes = _settings_changes(seen or {}, quality_settings(campaign))
            raise StaleFormError(
                "Another organiser saved these settings since you opened them"
                + (f": {changes}." if changes else ".")
                + " Your changes were not saved; the form now shows theirs: make your changes again."
            )
        kappa_min = campaign.kappa_min if kappa_min is None else kappa_min
        reliability_min = campaign.reliability_min if reliability_min is None else reliability_min
        min_gold_checks = campaign.min_gold_checks if min_gold_checks is None else min_gold_checks
        try:
            quality.check_settings(
                gold_rate, gold_min_accuracy, fast_fraction, streak_length, kappa_min, reliability_min, min_gold_checks
            )
        except quality.QualityError as exc:
            raise CampaignError(str(exc)) from None
        before = quality_settings(campaign)
        campaign.gold_rate, campaign.gold_min_accuracy = float(gold_rate), float(gold_min_accuracy)
        campaign.fast_fraction, campaign.streak_length = float(fast_fraction), int(streak_length)
        campaign.kappa_min, campaign.reliability_min = float(kappa_min), float(reliability_min)
        campaign.min_gold_checks = int(min_gold_checks)
        changes = _settings_changes(before, quality_settings(campaign))
        access.record(
            session,
            "quality",
            "campaign",
            campaign.id,
            f"Quality settings: {changes}." if changes else "Saved the quality settings, unchanged.",
        )
        campaign.settings_revision += 1
        return campaign.settings_revision


def add_gold_pairs(engine: Engine, campaign_id: int, answers: pd.DataFrame) -> int:
    """Mark pairs as gold checks of the campaign with their known answer. ``answers``: columns pair_id
    (or ``pair``: what the organiser typed, a pair id or the file's own id, resolve_pair_refs)
    and level (0-3, or a level's name) and/or binary_label (1 paraphrase, 0 not) where only the side is
    known. All or nothing: an unknown pair, a training pair of the campaign, a pair already served to
    someone as an ordinary pair, or an answer off the scale refuses the whole list. A pair already gold
    gets the new answer. Gold pairs leave the campaign's queue (they are served as checks only).
    Returns the number of pairs marked. Organisers only (db.access)."""
    access.require("organise", "add gold checks")
    if "pair" not in answers:
        rows = _gold_rows(answers)
    with write_session(engine) as session:
        campaign = _campaign(session, campaign_id, lock=True)
        if "pair" in answers:
            rows = _gold_rows(
                answers.drop(columns="pair").assign(
                    pair_id=resolve_pair_refs(session, campaign.id, answers["pair"].tolist())
                )
            )
        added = _add_gold(session, campaign, rows)
        marked = added.marked + added.updated
        access.record(
            session,
            "gold",
            "campaign",
            campaign.id,
            f"Marked {marked:,} pair{'' if marked == 1 else 's'} as gold checks by id.",
        )
        return marked


def resolve_pair_refs(session: Session, campaign_id: int, refs: list) -> list[int]:
    """Pair ids of what an organiser typed, line by line: a pair id (the store's), or the file's own
    id (external_id) of a pair of the campaign's datasets; ``pair:12`` or ``id:12`` says which
    when a number is both (then refused without the prefix). An id that names no pair, or several
    pairs, is refused with its line."""
    typed = []
    for i, ref in enumerate(refs, start=1):
        text = "" if ref is None or (isinstance(ref, float) and np.isnan(ref)) else str(ref).strip()
        kind = None
        for prefix, name in (("pair:", "pair"), ("id:", "external")):
            if text.casefold().startswith(prefix):
                kind, text = name, text[len(prefix) :].strip()
        if not text:
            raise CampaignError(f"Line {i}: give a pair id or the file's id of the pair.")
        if "\x00" in text:  # no store compares it alike (PostgreSQL refuses it)
            raise CampaignError(f"Line {i}: an id cannot hold a NUL character (U+0000).")
        typed.append((i, kind, text))
    # a pair id is ASCII digits within an INTEGER (2**31 - 1, db.limits.INT_MAX); past it, no pair has it
    number = {
        t: int(t) for _, kind, t in typed if kind != "external" and t.isascii() and t.isdigit() and int(t) < 2**31
    }
    numbers = set(number.values())
    known = set(session.scalars(select(Pair.id).where(Pair.id.in_(numbers)))) if numbers else set()
    in_campaign = select(CampaignDataset.dataset_id).where(CampaignDataset.campaign_id == campaign_id)
    external: dict[str, list[int]] = {}
    wanted = {t for _, kind, t in typed if kind != "pair"}
    if wanted:
        for pair_id, external_id in session.execute(
            select(Pair.id, Pair.external_id)
            .where(Pair.dataset_id.in_(in_campaign), Pair.external_id.in_(wanted))
            .order_by(Pair.id)
        ):
            external.setdefault(external_id, []).append(pair_id)
    resolved = []
    for i, kind, text in typed:
        by_id = number[text] if kind != "external" and number.get(text) in known else None
        by_file = external.get(text, []) if kind != "pair" else []
        if kind == "pair" and by_id is None:
            raise CampaignError(f"Line {i}: there is no pair {text} in the store.")
        if len(by_file) > 1 and by_id is None:
            raise CampaignError(
                f"Line {i}: the file's id “{text}” names {len(by_file)} pairs of this campaign's "
                f"datasets (pairs {', '.join(map(str, by_file[:5]))}): give the pair id instead."
            )
        if by_id is not None and by_file and by_file != [by_id]:
            raise CampaignError(
                f"Line {i}: “{text}” is pair {text} and also the file's id of pair {by_file[0]}: "
                f"write pair:{text} or id:{text}."
            )
        if by_id is None and not by_file:
            raise CampaignError(
                f"Line {i}: “{text}” is neither a pair id nor the file's id of a pair of this campaign's datasets."
            )
        resolved.append(by_id if by_id is not None else by_file[0])
    return resolved


def _gold_rows(answers: pd.DataFrame) -> list[dict]:
    if "pair_id" not in answers or not ({"level", "binary_label"} & set(answers.columns)):
        raise CampaignError("Gold answers need a pair id and a known level (or a 1 / 0 side) for each pair.")
    names = {name.casefold(): i for i, name in enumerate(LEVELS)}
    rows, seen = [], set()
    for i, row in enumerate(answers.to_dict("records"), start=1):
        try:
            pair_id = int(row["pair_id"])
        except (TypeError, ValueError):
            raise CampaignError(f"Line {i}: {row['pair_id']!r} is not a pair id.") from None
        level = row.get("level")
        if isinstance(level, str):
            level = names.get(level.strip().casefold(), level.strip())
            level = int(level) if isinstance(level, str) and level.isdigit() else level
        if level is pd.NA or (isinstance(level, float) and np.isnan(level)):
            level = None
        elif isinstance(level, float) and level.is_integer():
            level = int(level)
        binary = row.get("binary_label")
        binary = (
            None if binary is None or binary is pd.NA or (isinstance(binary, float) and np.isnan(binary)) else binary
        )
        try:
            level, binary = quality.gold_answer(level, binary=None if binary is None else int(binary))
        except (quality.QualityError, ValueError) as exc:
            raise CampaignError(f"Line {i} (pair {pair_id}): {exc}") from None
        if pair_id in seen:
            raise CampaignError(f"Pair {pair_id} is in the list twice.")
        seen.add(pair_id)
        adjacent = row.get("accept_adjacent")
        adjacent = bool(adjacent) if adjacent is not None and not pd.isna(adjacent) else False
        if adjacent and level is None:
            raise CampaignError(
                f"Line {i} (pair {pair_id}): a key that knows only the side has no adjacent level to accept."
            )
        score = row.get("reference_score")
        rows.append(
            {
                "pair_id": pair_id,
                "level": level,
                "binary_label": binary,
                "accept_adjacent": adjacent,
                "reference_score": None if score is None or pd.isna(score) else float(score),
                "derivation": str(row.get("derivation") or "set by id")[:300],
            }
        )
    if not rows:
        raise CampaignError("The list of gold pairs is empty.")
    return rows


def _campaign_datasets(session: Session, campaign: Campaign) -> dict[int, str]:
    """The campaign's datasets, id: name."""
    return dict(
        session.execute(
            select(Dataset.id, Dataset.name)
            .join(CampaignDataset, CampaignDataset.dataset_id == Dataset.id)
            .where(CampaignDataset.campaign_id == campaign.id)
            .order_by(Dataset.name)
        ).all()
    )


def _not_the_campaigns(campaign: Campaign, own: dict[int, str]) -> str:
    return f"not one of the datasets of “{campaign.name}” ({', '.join(own.values()) or 'none any more'})"


def _add_gold(session: Session, campaign: Campaign, rows: list[dict]) -> int:
    ids = [r["pair_id"] for r in rows]
    known = dict(session.execute(select(Pair.id, Pair.dataset_id).where(Pair.id.in_(ids))).all())
    missing = [p for p in ids if p not in known]
    if missing:
        raise CampaignError(f"There is no pair {missing[0]} in the store: no gold pair was marked.")
    own = _campaign_datasets(session, campaign)
    outside = [p for p in ids if known[p] not in own]
    if outside:  # a check belongs to the campaign: a pair of its own datasets, in their language and kind
        name = session.get(Dataset, known[outside[0]]).name
        raise CampaignError(
            f"Pair {outside[0]} is in “{name}”, {_not_the_campaigns(campaign, own)}: it cannot be a "
            "check of this campaign. No gold pair was marked."
        )
    training = set(
        session.scalars(
            select(TrainingPair.pair_id).where(TrainingPair.campaign_id == campaign.id, TrainingPair.pair_id.in_(ids))
        )
    )
    if training:
        raise CampaignError(
            f"Pair {min(training)} is a training pair of this campaign (served to everyone): "
            "it cannot be a gold check. No gold pair was marked."
        )
    gold_now = set(
        session.scalars(select(GoldPair.pair_id).where(GoldPair.campaign_id == campaign.id, GoldPair.pair_id.in_(ids)))
    )
    served = set(
        session.scalars(
            select(Assignment.pair_id).where(
                Assignment.campaign_id == campaign.id, Assignment.pair_id.in_(ids), Assignment.is_gold.is_(False)
            )
        )
    )
    if served:
        raise CampaignError(
            f"Pair {min(served)} has already been served as an ordinary pair in this campaign: "
            "it cannot become a hidden check. No gold pair was marked."
        )
    for row in rows:
        if row["pair_id"] in gold_now:
            gold = session.get(GoldPair, (campaign.id, row["pair_id"]))
            for name, value in row.items():
                setattr(gold, name, value)
        else:
            session.add(GoldPair(campaign_id=campaign.id, **row))
    left = sorted(
        session.scalars(
            select(CampaignPair.pair_id).where(CampaignPair.campaign_id == campaign.id, CampaignPair.pair_id.in_(ids))
        )
    )
    session.execute(delete(CampaignPair).where(CampaignPair.campaign_id == campaign.id, CampaignPair.pair_id.in_(ids)))
    return GoldAdded(
        marked=len(rows) - len(gold_now),
        updated=len(gold_now),
        left_queue=left,
        queue_after=_queue_size(session, campaign.id),
    )


@dataclass(frozen=True)
class GoldAdded:
    """What marking gold pairs did: keys new and keys whose answer was set again, the queue's pairs that
    left it (now served as checks only) and the queue's size after."""

    marked: int
    updated: int
    left_queue: list
    queue_after: int

    def text(self) -> str:
        """ "10 gold pairs added; 4 of them left the queue (pairs 3, 8, 12, 40): it now holds 56 pairs." """
        said = f"{self.marked:,} gold pair{'' if self.marked == 1 else 's'} added"
        if self.updated:
            said += f", {self.updated:,} already gold (answer set again)"
        if self.left_queue:
            shown = ", ".join(map(str, self.left_queue[:12])) + (" …" if len(self.left_queue) > 12 else "")
            said += (
                f"; {len(self.left_queue):,} of them left the queue (pair{'' if len(self.left_queue) == 1 else 's'}"
                f" {shown}), served as checks only: it now holds {self.queue_after:,} pairs"
            )
        else:
            said += "; none was in the queue"
        return said + "."


def _queue_size(session: Session, campaign_id: int) -> int:
    return int(
        session.scalar(select(func.count()).select_from(CampaignPair).where(CampaignPair.campaign_id == campaign_id))
    )


@dataclass(frozen=True)
class GoldPlan:
    """The gold keys a dataset's gold labels give a campaign, before they are added (plan_gold_from_dataset):
    what the Live campaign page shows, and what add_gold_plan adds, exactly."""

    campaign_id: int
    dataset_id: int
    dataset: str
    keys: pd.DataFrame  # pair_id, external_id, source, hypothesis, score, level, binary_label, known answer,
    #                     accept_adjacent, in queue, derivation: one row per key to add
    rule: str  # how the keys are derived, in words
    candidates: int  # gold-labelled pairs that could be checks (not training, served or gold already)
    eligible: dict  # known answer -> candidates that make keys
    left_out: dict  # why a candidate is no key -> how many
    balance: str  # the balance of the campaign's keys once these are added (pluie_core.quality.balance_text)
    accept_adjacent: bool = False

    def text(self) -> str:
        """What the plan takes, in two sentences."""
        counts = self.keys["known answer"].value_counts()
        taken = ", ".join(f"{int(k):,} {name}" for name, k in counts.items()) or "none"
        left = "; ".join(f"{k:,} {why}" for why, k in self.left_out.items())
        queue = int(self.keys["in queue"].sum()) if len(self.keys) else 0
        return (
            f"{len(self.keys):,} key{'' if len(self.keys) == 1 else 's'} from “{self.dataset}” ({taken}) of "
            f"{self.candidates:,} gold-labelled pairs free to use"
            + (f" (not keys: {left})" if left else "")
            + f"; {queue:,} of them will leave the queue. Rule: {self.rule}. Balance: {self.balance}"
        )


def plan_gold_from_dataset(
    engine: Engine,
    campaign_id: int,
    dataset_id: int,
    n: int = 0,
    seed: int = 0,
    *,
    levels=quality.KEY_LEVELS,
    margin: float = quality.KEY_MARGIN,
    cuts=None,
    accept_adjacent: bool = False,
) -> GoldPlan:
    """The gold keys ``dataset_id`` (one of the campaign's datasets, refused with a sentence otherwise) gives
    the campaign, from its pairs with a gold label that are neither training pairs of the campaign, already
    served in it, nor gold already; nothing is written.

    A graded gold score (label kind "score") gives a key only at a clear level (pluie_core.quality.gold_keys:
    by default the ends of the scale, Very different and Same meaning, away from the band edges; ``levels``,
    ``margin`` and ``cuts`` are the organiser's mapping); a binary label gives the side. ``n`` keys (0 = every
    candidate key) are drawn with ``seed``, balanced across the two sides counting the keys the campaign
    has (pluie_core.quality.balanced_keys), so that no constant answer scores more than the candidates
    force; ``balance`` says how even the campaign's keys then are. ``accept_adjacent``: the graded keys accept the level next to theirs.
    Organisers only (db.access)."""
    access.require("organise", "plan gold checks")
    if isinstance(n, bool) or not float(n).is_integer() or n < 0:
        raise CampaignError("How many gold pairs to take must be a whole number, 0 or more.")
    with read_session(engine) as session:
        campaign = _campaign(session, campaign_id)
        dataset = session.get(Dataset, dataset_id)
        if dataset is None:
            raise CampaignError("This dataset does not exist (any more).")
        own = _campaign_datasets(session, campaign)
        if dataset.id not in own:
            raise CampaignError(
                f"“{dataset.name}” is {_not_the_campaigns(campaign, own)}: no gold pair was marked. "
                "A campaign's gold checks come from its own datasets."
            )
        free = session.execute(
            select(Pair.id, Pair.gold_label, Pair.external_id, Pair.source, Pair.hypothesis).where(
                Pair.dataset_id == dataset_id,
                Pair.gold_label.is_not(None),
                Pair.id.not_in(select(TrainingPair.pair_id).where(TrainingPair.campaign_id == campaign_id)),
                Pair.id.not_in(select(Assignment.pair_id).where(Assignment.campaign_id == campaign_id)),
                Pair.id.not_in(select(GoldPair.pair_id).where(GoldPair.campaign_id == campaign_id)),
            )
        ).all()
        if not free:
            raise CampaignError(
                f"“{dataset.name}” has no gold-labelled pair left to use as a check "
                "(training pairs and pairs already served or gold are left out)."
            )
        low, high = _score_range(session, dataset)
        have = pd.DataFrame(
            session.execute(
                select(GoldPair.level, GoldPair.binary_label, GoldPair.accept_adjacent).where(
                    GoldPair.campaign_id == campaign_id
                )
            ).all(),
            columns=["level", "binary_label", "accept_adjacent"],
        )
        queue = set(session.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == campaign_id)))
        minimum = campaign.gold_min_accuracy
    pairs = pd.DataFrame(free, columns=["pair_id", "score", "external_id", "source", "hypothesis"]).set_index("pair_id")
    if dataset.label_kind == "score":
        try:
            derived = quality.gold_keys(pairs["score"], low, high, levels=levels, margin=margin, cuts=cuts)
            rule = quality.key_rule_text(low, high, levels=levels, margin=margin, cuts=cuts)
        except quality.QualityError as exc:
            raise CampaignError(str(exc)) from None
        left_out = derived.loc[~derived["is_key"], "why"].value_counts().to_dict()
        derived = derived[derived["is_key"]]
        levels_of = pd.array(derived["level"], dtype="Int64")
    elif dataset.label_kind == "binary":
        if accept_adjacent:
            raise CampaignError("A binary gold label gives only a side: there is no adjacent level to accept.")
        derived = pd.DataFrame({"score": pairs["score"], "binary_label": (pairs["score"] >= 0.5).astype(int)})
        rule, left_out = "a binary gold label gives the side only (1 paraphrase, 0 not)", {}
        levels_of = pd.array([pd.NA] * len(derived), dtype="Int64")
    else:
        raise CampaignError("This dataset has no gold labels to take known answers from.")
    derived = derived.assign(level=levels_of)
    derived["known answer"] = _known_answer_names(derived["level"], derived["binary_label"])
    eligible = derived["known answer"].value_counts().to_dict()
    sides = (int((have["binary_label"] == 0).sum()), int((have["binary_label"] == 1).sum()))
    taken = quality.balanced_keys(derived, int(n), seed=int(seed), have=sides).sort_index()
    adjacent = bool(accept_adjacent) and dataset.label_kind == "score"
    keys = taken.join(pairs[["external_id", "source", "hypothesis"]]).rename_axis("pair_id").reset_index()
    keys["accept_adjacent"] = adjacent
    keys["in queue"] = keys["pair_id"].isin(queue)
    keys["derivation"] = [
        (
            f"“{dataset.name}” gold score {score:g}: {answer}"
            if dataset.label_kind == "score"
            else f"“{dataset.name}” binary gold label {score:g}: {answer}"
        )
        + (" (the adjacent level accepted)" if adjacent else "")
        + f"; rule: {rule}"
        for score, answer in zip(keys["score"], keys["known answer"])
    ]
    after = pd.concat([have, keys[["level", "binary_label", "accept_adjacent"]]], ignore_index=True)
    return GoldPlan(
        int(campaign_id),
        int(dataset.id),
        dataset.name,
        keys,
        rule,
        len(pairs),
        eligible,
        left_out,
        quality.balance_text(after, minimum),
        adjacent,
    )


def _known_answer_names(levels, sides) -> list[str]:
    return [
        LEVELS[int(lv)] if pd.notna(lv) else ("paraphrase (side only)" if b else "not a paraphrase (side only)")
        for lv, b in zip(levels, sides)
    ]


def add_gold_plan(engine: Engine, plan: GoldPlan) -> GoldAdded:
    """Add exactly the keys of ``plan`` (plan_gold_from_dataset) to its campaign, all or nothing, with
    _add_gold's checks made again (a pair served meanwhile refuses the list). Adding a plan twice adds
    nothing the second time: its pairs are gold already (``updated``). Organisers only (db.access)."""
    access.require("organise", "add gold checks")
    if plan.keys.empty:
        raise CampaignError("These settings give no gold key: nothing was added.")
    rows = _gold_rows(
        plan.keys[["pair_id", "level", "binary_label", "accept_adjacent", "score", "derivation"]]
        .rename(columns={"score": "reference_score"})
        .astype(object)
    )
    with write_session(engine) as session:
        campaign = _campaign(session, plan.campaign_id, lock=True)
        added = _add_gold(session, campaign, rows)
        if added.marked:
            access.record(
                session,
                "gold",
                "campaign",
                campaign.id,
                f"Took {added.marked:,} gold check{'' if added.marked == 1 else 's'} from “{plan.dataset}” "
                f"({plan.rule}).",
            )
        return added


def gold_from_dataset(engine: Engine, campaign_id: int, dataset_id: int, n: int = 0, seed: int = 0, **mapping) -> int:
    """plan_gold_from_dataset then add_gold_plan, in one call (the CLI, scripts): returns the number of
    pairs newly marked. ``mapping``: plan_gold_from_dataset's levels, margin, cuts, accept_adjacent."""
    return add_gold_plan(engine, plan_gold_from_dataset(engine, campaign_id, dataset_id, n, seed, **mapping)).marked


def _known_answers(session: Session, dataset: Dataset, gold_labels: pd.Series) -> pd.DataFrame:
    """pluie_core.quality.gold_from_labels on the dataset's own scale: a score is cut into four bands of
    its stated range, or else of the range of all its gold labels (so a pair's answer never depends on
    which others are taken). A dataset without gold labels is refused with a sentence (CampaignError)."""
    try:
        return quality.gold_from_labels(gold_labels, dataset.label_kind, *_score_range(session, dataset))
    except quality.QualityError as exc:
        raise CampaignError(str(exc)) from None


def _score_range(session: Session, dataset: Dataset) -> tuple:
    """(low, high) of a score dataset's scale: its stated range, or else that of all its gold labels."""
    low, high = dataset.label_min, dataset.label_max
    if dataset.label_kind == "score" and (low is None or high is None):
        lowest, highest = session.execute(
            select(func.min(Pair.gold_label), func.max(Pair.gold_label)).where(Pair.dataset_id == dataset.id)
        ).one()
        low, high = (lowest if low is None else low), (highest if high is None else high)
    return low, high


@dataclass(frozen=True)
class KnownAnswer:
    """A pair's own gold label as a gold check's known answer (known_answer)."""

    level: Optional[int]  # 0-3, None where only the side is known (binary labels)
    binary_label: int
    text: str  # e.g. "Gold label 4.83 (a score on 0–5): Same meaning"


def known_answer(engine: Engine, pair_id: int) -> Optional[KnownAnswer]:
    """The known answer a pair's own gold label gives (as gold_from_dataset reads it), with the sentence
    saying so; None where the pair has no gold label, or its dataset none that maps to an answer."""
    with read_session(engine) as session:
        pair = session.get(Pair, int(pair_id))
        if pair is None or pair.gold_label is None:
            return None
        dataset = session.get(Dataset, pair.dataset_id)
        try:
            answer = _known_answers(session, dataset, pd.Series({pair.id: pair.gold_label}))
        except CampaignError:
            return None
        low, high = _score_range(session, dataset)
        kind = f"a score on {low:g}–{high:g}" if dataset.label_kind == "score" else "binary"
    if answer.empty:
        return None
    level, binary = answer["level"].iloc[0], int(answer["binary_label"].iloc[0])
    level = None if pd.isna(level) else int(level)
    said = (
        LEVELS[level] if level is not None else ("Paraphrase (side only)" if binary else "Not a paraphrase (side only)")
    )
    return KnownAnswer(level, binary, f"Gold label {pair.gold_label:g} ({kind}): {said}")


def remove_gold_pairs(engine: Engine, campaign_id: int, pair_ids) -> int:
    """Stop serving these pairs as checks (answers already given stay, and no longer count).
    Organisers only (db.access)."""
    access.require("organise", "remove gold checks")
    with write_session(engine) as session:
        _campaign(session, campaign_id, lock=True)
        removed = session.execute(
            delete(GoldPair).where(
                GoldPair.campaign_id == campaign_id, GoldPair.pair_id.in_([int(p) for p in pair_ids])
            )
        ).rowcount
        if removed:
            access.record(
                session,
                "gold",
                "campaign",
                campaign_id,
                f"Stopped using {removed:,} pair{'' if removed == 1 else 's'} as gold checks.",
            )
        return removed


def gold_pairs(engine: Engine, campaign_id: int) -> pd.DataFrame:
    """The campaign's gold pairs: pair, dataset, the file's id (external_id), texts, known answer, how
    often served as a check, accept_adjacent, reference_score (the graded score it came from), derivation
    (how the key was made), ``accepts`` (the answers counted right, pluie_core.quality.accepted), and
    ``name``: the pair in a line (dataset, ids, the start of its sentences)."""
    with read_session(engine) as session:
        served = (
            select(Assignment.pair_id, func.count().label("n"))
            .where(Assignment.campaign_id == campaign_id, Assignment.is_gold.is_(True))
            .group_by(Assignment.pair_id)
            .subquery()
        )
        rows = session.execute(
            select(
                GoldPair.pair_id,
                Dataset.name,
                Pair.external_id,
                Pair.source,
                Pair.hypothesis,
                GoldPair.level,
                GoldPair.binary_label,
                func.coalesce(served.c.n, 0),
                GoldPair.accept_adjacent,
                GoldPair.reference_score,
                GoldPair.derivation,
            )
            .join(Pair, Pair.id == GoldPair.pair_id)
            .join(Dataset, Dataset.id == Pair.dataset_id)
            .outerjoin(served, served.c.pair_id == GoldPair.pair_id)
            .where(GoldPair.campaign_id == campaign_id)
            .order_by(GoldPair.pair_id)
        ).all()
    frame = pd.DataFrame(
        rows,
        columns=[
            "pair_id",
            "dataset",
            "external_id",
            "source",
            "hypothesis",
            "level",
            "binary_label",
            "served",
            "accept_adjacent",
            "reference_score",
            "derivation",
        ],
    )
    frame["accept_adjacent"] = frame["accept_adjacent"].fillna(False).astype(bool)
    frame["known answer"] = [
        LEVELS[int(lv)] if pd.notna(lv) else ("paraphrase" if b else "not a paraphrase")
        for lv, b in zip(frame["level"], frame["binary_label"])
    ]
    frame["accepts"] = [
        ", ".join(LEVELS[v] for v in range(4) if abs(v - int(lv)) <= int(a))
        if pd.notna(lv)
        else ("Mostly similar, Same meaning" if b else "Very different, Slightly similar")
        for lv, b, a in zip(frame["level"], frame["binary_label"], frame["accept_adjacent"])
    ]
    frame["name"] = [
        f"{d} · id {e or '—'} · pair {p} · {_start(s)} / {_start(h)}"
        for p, d, e, s, h in zip(
            frame["pair_id"], frame["dataset"], frame["external_id"], frame["source"], frame["hypothesis"]
        )
    ]
    return frame


def _start(text: str, n: int = 40) -> str:
    """The start of a sentence, on one line."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _alpha_value(figure: dict) -> float:
    return float("nan") if figure.get("alpha") is None else float(figure["alpha"])


def campaign_live(
    engine: Engine,
    campaign_id: int,
    now: Optional[dt.datetime] = None,
    fit_reliability: Optional[Callable[[str, int], pd.DataFrame]] = None,
    consensus: Optional[Callable[..., pd.DataFrame]] = None,
) -> LiveCampaign:
    """What the live view shows. Per annotator: progress (the annotator's own counter, db.serving.
    annotator_progress: pairs answered after training, gold checks included, out of the quota and the
    checks planned, or out of what was served once nothing is left for them), median seconds
    per pair, Don't-know rate, κ against the others (binarised, pluie_core.quality.kappa_against_others)
    and the shared labels it rests on (pluie_core.quality.shared_labels), reliability by the campaign's
    aggregation method (db.campaigns.campaign_aggregation; ``reliability_fit``) and the labels in that
    fit, gold accuracy (binarised and exact), the gold checks planned (those of a full quota) and served,
    longest streak, last activity (UTC), flags and the checks
    not judged yet for too little evidence (pluie_core.quality.annotator_checks, with the campaign's
    thresholds). ``fit_reliability(method, n_labels)``: where the reliability comes from (the live page
    passes its cache, keyed by the count of labels, so one fit serves the flags and the reliability column);
    by default fitted here, after the reads. ``consensus``: pluie_core.quality.consensus_checks or a cache of
    it (the live page's: one Dawid–Skene fit per state of the labels, not one per refresh); its columns (κ vs
    consensus and what it rests on, the answers' spread) join the table and feed the flags. For the campaign:
    labels (db.analysis.counted_label: every label but the training trial's, answers to gold checks
    included, as on every page), in the last hour and per hour since the first, pairs still short of
    their overlap (answered: db.campaigns.fully_labelled_pairs' rule), and Krippendorff's α so far
    (pluie_core.agreement, over the same labels: ordinal levels, and binarised, with their intervals
    in ``figures["agreement"]``). Per annotator, progress, times, Don't-know rate and κ read their
    ordinary labels; answers to gold checks count in the gold figures."""
    now = now or utcnow()
    with read_session(engine) as session:
        campaign = _campaign(session, campaign_id)
        # numbers only, the ids as int64 (db.queries.number_frame)
        id_columns = ["annotator", "pair_id"]
        labels = number_frame(
            session,
            select(Label.id, Label.annotator_id, Label.pair_id, Label.level, Label.seconds_spent).where(
                Label.campaign_id == campaign_id, counted_label()
            ),
            ["id", "annotator", "pair_id", "level", "seconds"],
            integers=id_columns,
        )
        checks = number_frame(
            session,
            select(
                Assignment.annotator_id,
                Assignment.pair_id,
                GoldPair.level,
                GoldPair.binary_label,
                GoldPair.accept_adjacent,
            )
            .join(GoldPair, (GoldPair.campaign_id == Assignment.campaign_id) & (GoldPair.pair_id == Assignment.pair_id))
            .where(Assignment.campaign_id == campaign_id, Assignment.is_gold.is_(True)),
            ["annotator", "pair_id", "gold_level", "gold_binary", "gold_adjacent"],
            integers=id_columns,
        )
        keys = pd.Series(
            dict(
                session.execute(
                    select(GoldPair.pair_id, GoldPair.binary_label).where(GoldPair.campaign_id == campaign_id)
                ).all()
            ),
            dtype=float,
        )
        gold_served = number_frame(
            session,
            select(Assignment.annotator_id, Assignment.pair_id).where(
                Assignment.campaign_id == campaign_id, Assignment.is_gold.is_(True)
            ),
            ["annotator", "pair_id"],
            integers=id_columns,
        )
        people = session.execute(
            select(Annotator.id, Annotator.name, Annotator.display_name, Annotator.revoked_at)
            .where(Annotator.campaign_id == campaign_id)
            .order_by(Annotator.id)
        ).all()
        last = dict(
            session.execute(
                select(Label.annotator_id, func.max(Label.updated_at))
                .where(Label.campaign_id == campaign_id)
                .group_by(Label.annotator_id)
            ).all()
        )
        first_label = session.scalar(
            select(func.min(Label.created_at)).where(Label.campaign_id == campaign_id, counted_label())
        )
        last_hour = campaign_label_counts(session, campaign_id, since=now - dt.timedelta(hours=1))["labels"]
        queue_size = session.scalar(
            select(func.count()).select_from(CampaignPair).where(CampaignPair.campaign_id == campaign_id)
        )
        # adaptive overlap: how many annotators each pair wants now (its n_wanted)
        wanted = (
            pd.Series(
                dict(
                    session.execute(
                        select(CampaignPair.pair_id, CampaignPair.n_wanted).where(
                            CampaignPair.campaign_id == campaign_id
                        )
                    ).all()
                ),
                dtype=float,
            )
            if campaign.overlap_max is not None
            else None
        )
        fit = campaign.adaptive_fit if campaign.overlap_max is not None else None  # deferred: read here only
        n_checks = quality.gold_check_count(
            campaign.quota,
            campaign.gold_rate,
            session.scalar(select(func.count()).select_from(GoldPair).where(GoldPair.campaign_id == campaign_id)),
        )
        method = campaign_aggregation(campaign)

    labels = labels.sort_values("id", kind="stable")
    if not gold_served.empty:
        key = pd.MultiIndex.from_frame(labels[["annotator", "pair_id"]])
        is_check = key.isin(pd.MultiIndex.from_frame(gold_served))
    else:
        is_check = np.zeros(len(labels), dtype=bool)
    ordinary = labels[~is_check]
    answers = checks.assign(gold_adjacent=checks["gold_adjacent"].fillna(0).astype(bool)).merge(
        labels[["annotator", "pair_id", "level"]], on=["annotator", "pair_id"]
    )
    grouped = ordinary.assign(dont_know=(ordinary["level"] == DONT_KNOW).astype(float)).groupby("annotator")
    table = (
        pd.DataFrame(
            {
                "labelled": grouped.size(),
                "median s per pair": grouped["seconds"].median(),
                "Don't know rate": grouped["dont_know"].mean(),
                "κ vs others": quality.kappa_against_others(ordinary),
                "shared labels": quality.shared_labels(ordinary),
            }
        )
        .join((consensus or quality.consensus_checks)(labels[["annotator", "pair_id", "level"]], ~is_check, keys))
        .join(quality.gold_accuracy(answers))
        .join(
            quality.longest_streaks(labels["annotator"].to_numpy(), labels["level"].to_numpy()).rename("longest streak")
        )
    )
    ids = [p.id for p in people]
    table = table.reindex(ids)
    table["labelled"] = table["labelled"].fillna(0).astype(int)
    table["gold answered"] = table["gold answered"].fillna(0).astype(int)
    for count_column in ("shared labels", "consensus labels", "answers"):
        table[count_column] = table[count_column].fillna(0).astype(int)
    fitted = (fit_reliability or (lambda m, n: reliability_fit(engine, campaign_id, m)))(method, len(labels))
    table.insert(
        table.columns.get_loc("shared labels") + 1,
        "reliability",
        fitted["reliability"].reindex(table.index).astype(float),
    )
    table.insert(
        table.columns.get_loc("reliability") + 1,
        "labels in fit",
        fitted["n_labels"].reindex(table.index).fillna(0).astype(int),
    )
    table.insert(0, "annotator", [p.display_name or p.name for p in people])
    counters = annotator_progress(engine, campaign_id)  # the same counter the annotator sees
    table.insert(
        1, "progress", [f"{counters[i].done:,} / {counters[i].quota:,}" if i in counters else "—" for i in ids]
    )
    table["gold checks planned"] = n_checks
    table["gold checks served"] = gold_served.groupby("annotator").size().reindex(ids).fillna(0).astype(int).to_numpy()
    table["last activity"] = [last.get(i) for i in ids]
    table["status"] = ["revoked" if p.revoked_at else "active" for p in people]
    median = float(ordinary["seconds"].median()) if ordinary["seconds"].notna().any() else float("nan")
    checks = quality.annotator_checks(
        table,
        median,
        gold_min_accuracy=campaign.gold_min_accuracy,
        fast_fraction=campaign.fast_fraction,
        streak_length=campaign.streak_length,
        kappa_min=campaign.kappa_min,
        reliability_min=campaign.reliability_min,
        min_gold_checks=campaign.min_gold_checks,
        method=METHOD_NAMES[method],
        # majority vote's "reliability" is agreement with the raw pool: shown, but the consensus judges
        reliability_flags=method != "majority",
    )
    table = table.join(checks)
    table = table.loc[quality.evidence_rank(table)]  # who to look at first
    # who is flagged and why, next to the name: the last column of a wide table is off-screen
    first = ["annotator", "progress", *quality.FLAG_COLUMNS]
    table = table[first + [c for c in table.columns if c not in first]]
    table.index.name = "annotator id"

    # the rule of db.campaigns.fully_labelled_pairs (queue pairs answered `overlap` times), on the labels read
    # here: the ordinary ones are the queue pairs' (a pair served as an ordinary one never becomes a check)
    answered = ordinary.groupby("pair_id").size()
    full = int((answered >= (campaign.overlap if wanted is None else wanted.reindex(answered.index))).sum())
    hours = (now - first_label).total_seconds() / 3600 if first_label is not None else 0.0
    # α of every label counted (answers to gold checks included), as the Agreement page and the card compute it
    agreement = agreement_figures(count_patterns(level_counts(labels["pair_id"], labels["level"])))
    figures = {
        "labels": len(labels),
        "labels in the last hour": int(last_hour),
        "labels per hour (since the first)": quality.labels_per_hour(len(labels), hours),
        "pairs short of their overlap": int(queue_size - full),
        "pairs in queue": int(queue_size),
        "α ordinal (so far)": _alpha_value(agreement["ordinal"]),
        "α binarised (so far)": _alpha_value(agreement["binary"]),
        "agreement": agreement,
        "gold checks answered": len(answers),
        # per annotator who has started the queue (a pair answered after training, or a check served)
        "gold checks served": [
            int(n)
            for i, n in zip(table.index, table["gold checks served"])
            if n or (i in counters and counters[i].done)
        ],
        "annotators flagged": int((table["flags"] != "").sum()) if len(table) else 0,
    }
    if wanted is not None:  # where adaptive overlap sent the budget
        figures["adaptive"] = {
            "given more annotators": int((wanted > campaign.overlap).sum()),
            "at the maximum": int((wanted >= campaign.overlap_max).sum()),
            "annotators wanted": int(wanted.sum()),
            "annotators at a fixed maximum": int(queue_size * campaign.overlap_max),
        }
        # what decides "one more annotator" now (db.adaptive): the worker's last fit, or the vote share
        figures["adaptive model"] = {
            "fitted": fit is not None,
            "decides": fit_decides(fit),
            "n_labels": int(fit["n_labels"]) if fit else 0,
            "median labels per annotator": float(fit["median_labels"]) if fit else 0.0,
            "fitted at": fit.get("fitted_at") if fit else None,
        }
    return LiveCampaign(table, figures, median)


def reliability_fit(engine: Engine, campaign_id: int, method: str = "majority") -> pd.DataFrame:
    """Each annotator's estimated reliability (pluie_core.aggregation, ``method`` over the five levels)
    and the labels it rests on (``n_labels``: their labels in the fit, Don't know left out), from the
    labels given in the campaign (gold-check answers included; the gold pairs' known levels anchor
    Dawid–Skene), indexed by annotator id like campaign_live's table."""
    return pair_aggregation(engine, campaign_id=int(campaign_id), method=method).annotators[["reliability", "n_labels"]]


def annotator_reliability(engine: Engine, campaign_id: int, method: str = "majority") -> pd.Series:
    """reliability_fit's ``reliability`` alone."""
    return reliability_fit(engine, campaign_id, method)["reliability"]
