"""The store's side of benchmark scorecards (pluie_core.evaluation.paraphrasus): the PARAPHRASUS
benchmark imported in one transaction, a dataset assigned to a challenge by hand, and the frame a
scorecard is computed from. A dataset's challenge and benchmark are columns of ``datasets``
(migration 0004)."""

from __future__ import annotations

from typing import Iterable, Mapping, Optional

import pandas as pd
from sqlalchemy import Engine, func, select, update

from db import access
from db.analysis import scores_wide
from db.datasets import ImportRejected, ImportResult, import_pairs
from db.engine import read_session, write_session
from db.limits import NAME_LENGTH, clean_name
from db.models import Dataset, Pair
from db.queries import query_frame
from pluie_core.evaluation.paraphrasus import PARTS, check_dataset

__all__ = ["PARAPHRASUS", "import_benchmark", "assign_challenge", "benchmark_datasets", "scorecard_frame"]

PARAPHRASUS = "PARAPHRASUS"


def import_benchmark(
    engine: Engine, frames: Mapping[str, pd.DataFrame], *, benchmark: str = PARAPHRASUS, prefix: Optional[str] = None
) -> list[ImportResult]:
    """Store the datasets ``pluie_core.evaluation.paraphrasus.read_benchmark`` read, every row kept,
    one dataset per part named "<prefix>/<part>" (prefix: the benchmark's name in lower case), each
    with its challenge and the benchmark's name. All of them land, with their queued scores, or
    none does (ImportRejected, e.g. when a dataset of that name exists). An organiser's write (NotAllowed
    below, nothing written)."""
    access.require("organise", "import a benchmark")
    benchmark = (
        clean_name("The benchmark's name", benchmark, ImportRejected) if str(benchmark or "").strip() else PARAPHRASUS
    )
    prefix = clean_name("The datasets' prefix", prefix or benchmark.lower(), ImportRejected, NAME_LENGTH - 20)
    results = []
    with write_session(engine) as session:
        for part, frame in frames.items():
            files = ", ".join(pd.unique(frame["file"])) if "file" in frame.columns else ""
            description = f"{benchmark} {part} ({PARTS[part].challenge}): {PARTS[part].selection}." + (
                f" Files: {files}." if files else ""
            )
            result = import_pairs(
                engine,
                f"{prefix}/{part}",
                frame,
                description=description,
                source_format="paraphrasus",
                label_kind="binary",
                label_range=(0.0, 1.0),
                keep_duplicates=True,
                session=session,
            )
            session.execute(
                update(Dataset)
                .where(Dataset.id == result.dataset_id)
                .values(challenge=PARTS[part].challenge, benchmark=benchmark)
            )
            results.append(result)
    return results


def assign_challenge(engine: Engine, dataset_id: int, challenge: Optional[str], benchmark: str = PARAPHRASUS) -> None:
    """Put a dataset in a benchmark's challenge (``challenge`` None takes it out). Raises
    pluie_core's ScorecardError with one sentence when the dataset breaks the challenge's rule
    (positive gold labels in Minimize!, fewer than 3 pairs, ...); the store is then unchanged. An
    organiser's write (NotAllowed below)."""
    with write_session(engine) as session:
        access.require("organise", "put a dataset in a challenge")
        dataset = session.get(Dataset, int(dataset_id))
        if dataset is None:
            raise ValueError(f"There is no dataset with id {dataset_id}; reload the page.")
        if challenge is None:
            dataset.challenge, dataset.benchmark = None, None
            return
        if not str(benchmark or "").strip():
            raise ValueError("Give the benchmark a name.")
        benchmark = clean_name("The benchmark's name", benchmark, ValueError)
        labels = session.scalars(select(Pair.gold_label).where(Pair.dataset_id == dataset.id)).all()
        check_dataset(dataset.name, challenge, labels, dataset.label_kind)
        dataset.challenge, dataset.benchmark = challenge, benchmark


def benchmark_datasets(engine: Engine) -> pd.DataFrame:
    """Every dataset with its benchmark and challenge (None when it has none): id, name, benchmark,
    challenge, label_kind, n_pairs, n_gold."""
    with read_session(engine) as session:
        return query_frame(
            session,
            select(
                Dataset.id,
                Dataset.name,
                Dataset.benchmark,
                Dataset.challenge,
                Dataset.label_kind,
                func.count(Pair.id),
                func.count(Pair.gold_label),
            )
            .outerjoin(Pair, Pair.dataset_id == Dataset.id)
            .where(Dataset.import_state.is_(None))
            .group_by(Dataset.id)
            .order_by(Dataset.name),
            ["id", "name", "benchmark", "challenge", "label_kind", "n_pairs", "n_gold"],
        )


def scorecard_frame(engine: Engine, dataset_ids: Iterable[int], run_ids: Iterable[int]) -> pd.DataFrame:
    """The pairs of these datasets, indexed by pair_id: dataset, challenge, label (gold, NaN when
    none), language (the pair's "lang" or "language" field, None when it has neither) and one score
    column per run, named after the run (NaN where the run has not scored the pair yet)."""
    dataset_ids, run_ids = [int(i) for i in dataset_ids], [int(i) for i in run_ids]
    # the language field of the pair's metadata, read by the database's JSON functions (no JSON
    # decoding of every pair in Python)
    language = func.coalesce(Pair.meta["lang"].as_string(), Pair.meta["language"].as_string())
    with read_session(engine) as session:
        pairs = query_frame(
            session,
            select(Pair.id, Pair.dataset_id, Pair.gold_label, language)
            .where(Pair.dataset_id.in_(dataset_ids))
            .order_by(Pair.id),
            ["pair_id", "dataset_id", "label", "language"],
        )
        datasets = dict(session.execute(select(Dataset.id, Dataset.name).where(Dataset.id.in_(dataset_ids))).all())
        challenges = dict(
            session.execute(select(Dataset.id, Dataset.challenge).where(Dataset.id.in_(dataset_ids))).all()
        )
    pairs = pairs.set_index("pair_id")
    frame = pd.DataFrame(
        {
            "dataset": pairs["dataset_id"].map(datasets),
            "challenge": pairs["dataset_id"].map(challenges),
            "label": pd.to_numeric(pairs["label"], errors="coerce").astype(float),
            "language": pairs["language"],
        },
        index=pairs.index,
    )
    if run_ids:  # every score of the runs, then the benchmark's pairs: cheaper than filtering by dataset first
        frame = frame.join(scores_wide(engine, run_ids))
    return frame
