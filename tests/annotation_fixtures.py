"""Shared set-up for the annotation tests: a real SQLite file with datasets made through the models."""
from __future__ import annotations

import hashlib

from db.engine import write_session
from db.models import Dataset, Pair


def make_dataset(engine, name: str, texts: list[tuple[str, str]], label_kind=None, gold=None) -> tuple[int, list[int]]:
    with write_session(engine) as session:
        dataset = Dataset(name=name, label_kind=label_kind)
        session.add(dataset)
        session.flush()
        pairs = []
        for i, (source, hypothesis) in enumerate(texts):
            pair = Pair(dataset_id=dataset.id, external_id=str(i), source=source, hypothesis=hypothesis,
                        text_hash=hashlib.sha1(f"{source}\x00{hypothesis}".encode()).hexdigest(),
                        gold_label=None if gold is None else gold[i])
            session.add(pair)
            pairs.append(pair)
        session.flush()
        return dataset.id, [p.id for p in pairs]


def numbered_pairs(n: int, prefix: str = "") -> list[tuple[str, str]]:
    return [(f"{prefix}Source sentence number {i}.", f"{prefix}Hypothesis sentence {i} here.") for i in range(n)]
