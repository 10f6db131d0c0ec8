"""The schema: SQLAlchemy 2.0 typed models.

Every table lives here so that one Alembic history describes the whole store.
Texts are `Text`; uniqueness of a pair inside a dataset goes through a hash column,
because PostgreSQL cannot index arbitrarily long text in a b-tree.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from db.limits import KEPT_KEY_LENGTH, NAME_LENGTH


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Dataset(Base):
    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    source_format: Mapped[str] = mapped_column(String(40), default="")
    # "binary" (0/1), "score" (a numeric similarity, label_min..label_max) or None (no gold labels)
    label_kind: Mapped[Optional[str]] = mapped_column(String(20))
    label_min: Mapped[Optional[float]] = mapped_column(Float)
    label_max: Mapped[Optional[float]] = mapped_column(Float)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # a benchmark's dataset (PARAPHRASUS scorecard): "Classify!", "Minimize!" or "Maximize!", and
    # the benchmark it is part of (None: not in a benchmark)
    challenge: Mapped[Optional[str]] = mapped_column(String(20))
    benchmark: Mapped[Optional[str]] = mapped_column(String(200))
    # a large import is written in short transactions out of sight (db.datasets): "importing" until its
    # last one, None for a dataset everyone sees; import_seen: when it last wrote (a crash's leftover is
    # removed once it is stale); import_target: the dataset an append's pairs move into at the end
    import_state: Mapped[Optional[str]] = mapped_column(String(20))
    import_seen: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)
    import_target: Mapped[Optional[int]] = mapped_column(Integer)
    created_by: Mapped[str] = mapped_column(String(NAME_LENGTH), default="", server_default="")  # who imported it

    pairs: Mapped[list["Pair"]] = relationship(
        back_populates="dataset", cascade="all, delete-orphan", passive_deletes=True
    )


class Pair(Base):
    __tablename__ = "pairs"
    __table_args__ = (UniqueConstraint("dataset_id", "text_hash", name="uq_pairs_dataset_text"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    external_id: Mapped[Optional[str]] = mapped_column(String(NAME_LENGTH))
    source: Mapped[str] = mapped_column(Text)
    hypothesis: Mapped[str] = mapped_column(Text)
    # sha1 of source + "\x00" + hypothesis: the identity of a pair inside its dataset
    text_hash: Mapped[str] = mapped_column(String(40))
    gold_label: Mapped[Optional[float]] = mapped_column(Float)
    meta: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)

    dataset: Mapped[Dataset] = relationship(back_populates="pairs")


class Campaign(Base):
    __tablename__ = "campaigns"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    quota: Mapped[int] = mapped_column(Integer, default=50)  # pairs per annotator, training excluded
    overlap: Mapped[int] = mapped_column(Integer, default=1)  # annotators per pair (adaptive: the minimum)
    # adaptive overlap (db.adaptive): a pair gets one more annotator, up to overlap_max,
    # while the vote share of its binarised majority is below `confidence`; None: a fixed overlap
    overlap_max: Mapped[Optional[int]] = mapped_column(Integer)
    confidence: Mapped[Optional[float]] = mapped_column(Float)
    # how the campaign's final labels are aggregated (pluie_core.aggregation.METHODS); None: majority, the default
    aggregation: Mapped[Optional[str]] = mapped_column(String(20))
    n_training: Mapped[int] = mapped_column(Integer, default=5)
    guidelines: Mapped[str] = mapped_column(Text, default="")
    # "random" (seeded), "least_labelled" or "informative"
    pair_order: Mapped[str] = mapped_column(String(20), default="random")
    seed: Mapped[int] = mapped_column(Integer, default=0)
    # the score run whose values drive the "informative" order
    informative_run_id: Mapped[Optional[int]] = mapped_column(ForeignKey("score_runs.id", ondelete="SET NULL"))
    # which pairs of its datasets it takes (pluie_core.pair_selection); None = every pair, and later imports
    selection: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    # "share": every pair gets its first annotator before any gets a second; "overlap": each pair's
    # overlap is filled before the next pair is served (annotators label the same pairs)
    distribution: Mapped[str] = mapped_column(String(20), default="share", server_default="share")
    # quality checks (db.quality): gold checks mixed in per queue pair, and when an annotator is flagged
    gold_rate: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    gold_min_accuracy: Mapped[float] = mapped_column(Float, default=0.7, server_default="0.7")
    fast_fraction: Mapped[float] = mapped_column(Float, default=1 / 3, server_default="0.3333333333333333")
    streak_length: Mapped[int] = mapped_column(Integer, default=10, server_default="10")
    # flags that rest on the labels themselves (pluie_core.quality.annotator_flags): κ against the others
    # below kappa_min, the campaign's reliability estimate below reliability_min; a gold accuracy resting on
    # fewer than min_gold_checks answered checks reads "too few checks", not a verdict
    kappa_min: Mapped[float] = mapped_column(Float, default=0.2, server_default="0.2")
    reliability_min: Mapped[float] = mapped_column(Float, default=0.5, server_default="0.5")
    min_gold_checks: Mapped[int] = mapped_column(Integer, default=5, server_default="5")
    # adaptive overlap's model (db.adaptive): the last background fit of Dawid–Skene over the binarised
    # labels (class priors, each annotator's confusion matrix, how many labels it saw); None: not fitted yet,
    # the vote share decides
    # (deferred: serving loads the campaign row on every pair; only an answer to an adaptive campaign reads it)
    adaptive_fit: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON, deferred=True)
    # raised by every save of the quality settings / the guidelines: a save from a form drawn at an older
    # revision is refused (two organisers never silently undo each other's changes)
    settings_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    guidelines_revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_by: Mapped[str] = mapped_column(String(NAME_LENGTH), default="", server_default="")
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class CampaignDataset(Base):
    __tablename__ = "campaign_datasets"

    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True)


class TrainingPair(Base):
    """The training trial of a campaign: the same pairs, in the same order, for everyone."""

    __tablename__ = "training_pairs"

    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"))
    # the feedback an annotator sees after answering it: the level the organiser expects (0-3; None:
    # none given) and a short explanation
    expected_level: Mapped[Optional[int]] = mapped_column(Integer)
    explanation: Mapped[Optional[str]] = mapped_column(Text)


class GoldPair(Base):
    """A gold / attention-check pair of a campaign: its known answer. Served to each annotator at most
    once, mixed into the queue at the campaign's gold_rate, never counted in the quota."""

    __tablename__ = "gold_pairs"

    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), primary_key=True)
    level: Mapped[Optional[int]] = mapped_column(Integer)  # 0-3; None when only the side is known
    binary_label: Mapped[int] = mapped_column(Integer)  # 1 paraphrase, 0 not
    # the key also accepts the level next to its own (pluie_core.quality.accepted)
    accept_adjacent: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    reference_score: Mapped[Optional[float]] = mapped_column(Float)  # the graded gold score it came from
    derivation: Mapped[str] = mapped_column(
        String(300), default="set by id", server_default="set before keys recorded their origin"
    )
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class CampaignPair(Base):
    """The queue of a campaign: its pairs (training pairs excluded) in serving order, with the
    number of annotators each has been assigned to. The counter is what lets a reservation be one
    conditional UPDATE (n_assigned < overlap) instead of a count over every assignment."""

    __tablename__ = "campaign_pairs"
    __table_args__ = (
        # covering indexes: finding the next free pair reads the index only
        Index("ix_campaign_pairs_rank", "campaign_id", "rank", "n_assigned", "pair_id", "n_wanted"),
        Index("ix_campaign_pairs_fill", "campaign_id", "n_assigned", "rank", "pair_id", "n_wanted"),
    )

    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"), primary_key=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), primary_key=True)
    rank: Mapped[int] = mapped_column(Integer)  # 0 = served first
    n_assigned: Mapped[int] = mapped_column(Integer, default=0)
    # adaptive overlap: the annotators this pair wants now (from the minimum up to the maximum);
    # None in a campaign with a fixed overlap
    n_wanted: Mapped[Optional[int]] = mapped_column(Integer)
    # adaptive overlap: the probability of the pair's binary label as last computed (from the campaign's
    # fitted model once there is one, else the vote share); None before its first answer
    posterior: Mapped[Optional[float]] = mapped_column(Float)


class Annotator(Base):
    """A person who labels. External annotators come with imported labels (e.g. BIOSSES A-E)
    and have no token; campaign annotators log in through their personal link."""

    __tablename__ = "annotators"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    display_name: Mapped[Optional[str]] = mapped_column(String(200))
    campaign_id: Mapped[Optional[int]] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"), index=True)
    dataset_id: Mapped[Optional[int]] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    # sha256 of the personal link's token: the token itself is never stored
    token_hash: Mapped[Optional[str]] = mapped_column(String(64), unique=True)
    english_level: Mapped[Optional[str]] = mapped_column(String(20))  # poor, good, advanced, native
    is_external: Mapped[bool] = mapped_column(Boolean, default=False)
    revoked_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Label(Base):
    __tablename__ = "labels"
    __table_args__ = (
        UniqueConstraint("annotator_id", "pair_id", name="uq_labels_annotator_pair"),
        Index("ix_labels_pair", "pair_id"),
        # db.analysis.store_version reads the latest updated_at on every page run: a seek, not a scan
        Index("ix_labels_updated_at", "updated_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    campaign_id: Mapped[Optional[int]] = mapped_column(ForeignKey("campaigns.id", ondelete="SET NULL"), index=True)
    # the five-level scale (pluie_core.labels): 0..3, 4 = Don't know; None for an external scale
    level: Mapped[Optional[int]] = mapped_column(Integer)
    # the raw value of an imported label on its own scale (e.g. BIOSSES 0-4)
    value: Mapped[Optional[float]] = mapped_column(Float)
    source_on_top: Mapped[Optional[bool]] = mapped_column(Boolean)
    is_training: Mapped[bool] = mapped_column(Boolean, default=False)
    seconds_spent: Mapped[Optional[float]] = mapped_column(Float)
    # the annotator's voice with their answer: an optional comment ("typo in B") and a flag that puts
    # the pair in Review's queue
    comment: Mapped[Optional[str]] = mapped_column(Text)
    flagged: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class Assignment(Base):
    """A pair served to an annotator in a campaign. Reserving the slot before serving is what keeps
    overlap targets exact when several annotators work at once."""

    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("campaign_id", "annotator_id", "pair_id", name="uq_assignments"),
        Index("ix_assignments_campaign_pair", "campaign_id", "pair_id"),
        Index("ix_assignments_annotator_position", "annotator_id", "position"),
        Index("ix_assignments_campaign_gold", "campaign_id", "is_gold", "annotator_id", "pair_id"),  # the gold checks
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaigns.id", ondelete="CASCADE"))
    annotator_id: Mapped[int] = mapped_column(ForeignKey("annotators.id", ondelete="CASCADE"), index=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    source_on_top: Mapped[bool] = mapped_column(Boolean, default=True)
    is_gold: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")  # a gold check, not the quota
    served_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    done_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class ScoreRun(Base):
    """A metric applied to every pair in scope: a PLUIE configuration or a baseline."""

    __tablename__ = "score_runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    kind: Mapped[str] = mapped_column(
        String(20)
    )  # "pluie", "baseline", or a judge's ("llm-yes-no", "llm-likert", "llm-choice")
    model: Mapped[str] = mapped_column(String(500), default="")  # hub id / local path, or the baseline name
    template: Mapped[str] = mapped_column(String(100), default="")
    template_spec: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)  # a custom template's turns
    answers: Mapped[Optional[list[Any]]] = mapped_column(JSON)
    direction: Mapped[str] = mapped_column(String(20), default="forward")  # forward, backward, symmetric
    device: Mapped[Optional[str]] = mapped_column(String(40))
    dtype: Mapped[Optional[str]] = mapped_column(String(20))
    batch_size: Mapped[Optional[int]] = mapped_column(Integer)
    # a baseline's options ({"model": ..., "beta": ...}); PLUIE's {"device_map": ..., "quantization": ...}
    options: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    higher_is_similar: Mapped[bool] = mapped_column(Boolean, default=True)
    # active, paused, cancelled, failed
    status: Mapped[str] = mapped_column(String(20), default="active", index=True)
    error: Mapped[Optional[str]] = mapped_column(Text)
    # seconds spent in the metric (model load and store excluded), summed over the batches written,
    # and the number of scores they cover: seconds per pair = compute_seconds / timed_pairs
    compute_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    timed_pairs: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
    created_by: Mapped[str] = mapped_column(String(NAME_LENGTH), default="", server_default="")


class RunDataset(Base):
    """Restricts a run to some datasets; a run with no rows here applies to every dataset."""

    __tablename__ = "run_datasets"

    run_id: Mapped[int] = mapped_column(ForeignKey("score_runs.id", ondelete="CASCADE"), primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), primary_key=True)


class WorkItem(Base):
    """One (run, pair) to score: the queue. Claimed with a lease; a lease that expires
    (its worker died) makes the item claimable again."""

    __tablename__ = "work_items"
    __table_args__ = (
        UniqueConstraint("run_id", "pair_id", name="uq_work_items_run_pair"),
        Index("ix_work_items_claim", "run_id", "status", "lease_expires_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("score_runs.id", ondelete="CASCADE"))
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(20), default="pending")  # pending, claimed, done, failed
    lease_owner: Mapped[Optional[str]] = mapped_column(String(100))
    lease_expires_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[Optional[str]] = mapped_column(Text)


class Score(Base):
    __tablename__ = "scores"
    __table_args__ = (UniqueConstraint("run_id", "pair_id", name="uq_scores_run_pair"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("score_runs.id", ondelete="CASCADE"), index=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), index=True)
    # None: an LLM judge's answer that could not be parsed (its raw text is in details)
    value: Mapped[Optional[float]] = mapped_column(Float)
    # e.g. log p(answer1), log p(answer2), the two directions of a symmetric run, a judge's answer
    details: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    worker_id: Mapped[Optional[str]] = mapped_column(String(100))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Worker(Base):
    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    hostname: Mapped[str] = mapped_column(String(200), default="")
    pid: Mapped[int] = mapped_column(Integer, default=0)
    device: Mapped[str] = mapped_column(String(40), default="cpu")
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    heartbeat_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    current_run_id: Mapped[Optional[int]] = mapped_column(ForeignKey("score_runs.id", ondelete="SET NULL"))
    pairs_done: Mapped[int] = mapped_column(Integer, default=0)
    pairs_per_second: Mapped[Optional[float]] = mapped_column(Float)
    last_error: Mapped[Optional[str]] = mapped_column(Text)
    stopped_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class Preference(Base):
    """A human choice between two candidates for one source (*-PLUIE section 3.2): the pairs
    (source, candidate A) and (source, candidate B) are ordinary pairs of the dataset, scored by the
    ordinary runs; this row links them and holds the choice."""

    __tablename__ = "preferences"

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"), index=True)
    pair_a_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), index=True)
    pair_b_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), index=True)
    preferred: Mapped[str] = mapped_column(String(4))  # "A", "B" or "tie"
    meta: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Adjudication(Base):
    """A reviewer's decision on a pair's final level, apart from the annotators' labels (which it
    never changes). Append-only: each decision on a pair is a new revision (1, 2, ...), the highest
    is in force, and level None withdraws the decision (back to the majority rule). The unique
    (pair, revision) is the guard against two reviewers at once: a reviewer writes revision n + 1
    over the revision n they saw, so a stale reviewer's write collides and is refused."""

    __tablename__ = "adjudications"
    __table_args__ = (UniqueConstraint("pair_id", "revision", name="uq_adjudications_pair_revision"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"))
    revision: Mapped[int] = mapped_column(Integer)
    level: Mapped[Optional[int]] = mapped_column(Integer)  # 0..3 of the five-level scale; None = withdrawn
    reviewer: Mapped[str] = mapped_column(String(NAME_LENGTH))
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Explanation(Base):
    """ "Why this score" of a pair under a PLUIE run (db.explanations): requested from a page ("queued"),
    computed by a worker with the run's model under a lease ("claimed"), then kept ("done": ``result`` is
    pluie_core.explain.explanation_to_json's dict) or "failed" (``error``: a sentence for the user)."""

    __tablename__ = "explanations"
    __table_args__ = (UniqueConstraint("run_id", "pair_id", name="uq_explanations_run_pair"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("score_runs.id", ondelete="CASCADE"))
    pair_id: Mapped[int] = mapped_column(ForeignKey("pairs.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)  # queued, claimed, done, failed
    result: Mapped[Optional[dict[str, Any]]] = mapped_column(JSON)
    error: Mapped[Optional[str]] = mapped_column(Text)
    lease_owner: Mapped[Optional[str]] = mapped_column(String(100))
    lease_expires_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)
    requested_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    done_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class Account(Base):
    """A person who signs in (db.accounts): a role (lab.roles), a bcrypt password hash and/or the
    identity provider's e-mail, an invitation (sha256 of a link's token, shown once) until a password is
    set. Raising ``session_epoch`` ends every session of the account (a changed password or role, logging
    out everywhere); ``disabled_at``: cannot sign in, and what it did keeps its name."""

    __tablename__ = "accounts"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True)
    email: Mapped[Optional[str]] = mapped_column(String(320), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    password_hash: Mapped[Optional[str]] = mapped_column(Text)
    invite_hash: Mapped[Optional[str]] = mapped_column(String(64), unique=True)
    invite_expires_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)
    session_epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    created_by: Mapped[str] = mapped_column(String(NAME_LENGTH), default="", server_default="")
    disabled_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class Activity(Base):
    """Who did what, when (db.access.record): a campaign's settings or guidelines saved, an account
    added or changed, a run paused... ``subject`` names the kind of thing ("campaign", "account", "run",
    "dataset") and ``subject_id`` its row; ``summary`` is the sentence the pages and the export show."""

    __tablename__ = "activity"
    __table_args__ = (Index("ix_activity_subject", "subject", "subject_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    actor: Mapped[str] = mapped_column(String(NAME_LENGTH))
    action: Mapped[str] = mapped_column(String(60))
    subject: Mapped[str] = mapped_column(String(40))
    subject_id: Mapped[Optional[int]] = mapped_column(Integer)
    summary: Mapped[str] = mapped_column(Text, default="", server_default="")


class ApiToken(Base):
    """A personal token for the HTTP API (db.api_tokens, api/): its sha256 only (the token is shown once),
    the first characters to tell tokens apart, a name the person chose. A request with it acts as its
    account, with that account's role at the time of the request; ``revoked_at`` ends it."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_used_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)
    revoked_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class Webhook(Base):
    """A URL told of events (db.webhooks): ``events`` a comma-separated list of db.webhooks.EVENTS;
    ``secret`` signs each delivery's body (HMAC-SHA256), shown once to whoever registered it."""

    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(primary_key=True)
    url: Mapped[str] = mapped_column(String(2000))
    events: Mapped[str] = mapped_column(String(400))
    secret: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    created_by: Mapped[str] = mapped_column(String(NAME_LENGTH), default="", server_default="")
    disabled_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class WebhookDelivery(Base):
    """One event to one webhook (an outbox row, written in the event's own transaction): ``state`` pending,
    delivered or failed (gave up after a day of retries); ``next_at`` when the sender tries next."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_due", "state", "next_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(40))
    subject: Mapped[str] = mapped_column(String(60), default="", server_default="")  # "campaign:12": once per subject
    body: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(12), default="pending", server_default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    next_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_status: Mapped[Optional[int]] = mapped_column(Integer)
    last_error: Mapped[str] = mapped_column(String(300), default="", server_default="")
    delivered_at: Mapped[Optional[dt.datetime]] = mapped_column(DateTime)


class KeptValue(Base):
    """What a signed-in person's pages keep for them (db.kept, ui.access.keep): the last value of a widget a
    page asked to keep (the reviewer's name, a half-typed note, the New campaign form), by widget ``key``,
    as JSON in ``value``. The person's own memory: it survives a restart, and goes with the account."""

    __tablename__ = "kept_values"
    __table_args__ = (UniqueConstraint("account_id", "key", name="uq_kept_values_account_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(KEPT_KEY_LENGTH))
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
