"""Shared set-up for the annotation tests: a real SQLite file with datasets made through the models."""

from __future__ import annotations

import hashlib

from sqlalchemy import select

from db.engine import read_session, write_session
from db.models import Dataset, Pair


def make_dataset(engine, name: str, texts: list[tuple[str, str]], label_kind=None, gold=None) -> tuple[int, list[int]]:
    with write_session(engine) as session:
        dataset = Dataset(name=name, label_kind=label_kind)
        session.add(dataset)
        session.flush()
        pairs = []
        for i, (source, hypothesis) in enumerate(texts):
            pair = Pair(
                dataset_id=dataset.id,
                external_id=str(i),
                source=source,
                hypothesis=hypothesis,
                text_hash=hashlib.sha1(f"{source}\x00{hypothesis}".encode()).hexdigest(),
                gold_label=None if gold is None else gold[i],
            )
            session.add(pair)
            pairs.append(pair)
        session.flush()
        return dataset.id, [p.id for p in pairs]


def numbered_pairs(n: int, prefix: str = "") -> list[tuple[str, str]]:
    return [(f"{prefix}Source sentence number {i}.", f"{prefix}Hypothesis sentence {i} here.") for i in range(n)]


def label_at_once(engine, annotator_ids, level_of) -> list[Exception]:
    """Each annotator labels their whole queue in a thread of their own, the first two in a second tab too
    (another thread on the same link), answering level_of(pair_id, annotator_id); returns the errors raised
    (an answer the other tab gave first is not one)."""
    import threading

    from db import serving

    errors = []

    def work(aid):
        try:
            while (item := serving.serve_next(engine, aid)) is not None:
                try:
                    serving.record_label(engine, aid, item.position, level_of(item.pair_id, aid), 0.1)
                except serving.StaleAnswerError:
                    pass  # the other tab answered it first
        except Exception as exc:  # noqa: BLE001 - returned to the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(aid,)) for aid in list(annotator_ids) + list(annotator_ids)[:2]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def queue_of(engine, campaign_id) -> set[int]:
    """The pairs a campaign holds: its queue and its training pairs."""
    from db.models import CampaignPair, TrainingPair

    with read_session(engine) as session:
        queued = set(session.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == campaign_id)))
        training = set(session.scalars(select(TrainingPair.pair_id).where(TrainingPair.campaign_id == campaign_id)))
    return queued | training
