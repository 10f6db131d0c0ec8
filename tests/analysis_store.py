"""A store for the analysis tests: real MRPC test pairs (binary gold) with four simulated annotators
on the five-level scale, the real BIOSSES pairs with their five annotators' raw 0-4 scores, and two
score runs computed on the pairs (normalised Levenshtein similarity, and its log-odds standing in for
a PLUIE run so that the natural threshold 0 is exercised), and the normalised Levenshtein distance
as the worker's baseline stores it (lower = more similar)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import update

from db.analysis import add_score_run, pairs_frame
from db.datasets import import_pairs
from db.engine import write_session
from db.models import Annotator, Label
from pluie_core.analysis import edit_distances
from pluie_core.io import load_pairs
from tests.paths import DATASETS
from tests.store_fixtures import load_sqlite_copy

ANNOTATORS = {"ann1": "native", "ann2": "advanced", "ann3": "good", "ann4": "poor"}


def simulated_levels(gold: pd.Series, seed: int, flip: float, dont_know: float, missing: float) -> pd.Series:
    """Five-level labels that follow the binary gold with some errors (``flip``), some Don't know
    and some pairs left unlabelled; seeded."""
    rng = np.random.default_rng(seed)
    n = len(gold)
    side = np.where(rng.random(n) < flip, 1 - gold.to_numpy(), gold.to_numpy())
    levels = np.where(side == 1, 2 + rng.integers(0, 2, n), rng.integers(0, 2, n)).astype(float)
    levels[rng.random(n) < dont_know] = 4
    levels[rng.random(n) < missing] = np.nan
    return pd.Series(levels, index=gold.index)


def build_store(engine, n_mrpc: int = 200) -> dict:
    mrpc = load_pairs(DATASETS / "mrpc" / "msr_paraphrase_test.txt", "auto").head(n_mrpc).copy()
    for seed, (name, flip) in enumerate(zip(ANNOTATORS, (0.1, 0.15, 0.2, 0.35))):
        mrpc[f"annotator:{name}"] = simulated_levels(mrpc["label"], seed, flip, dont_know=0.05, missing=0.2)
    import_pairs(engine, "MRPC", mrpc, annotator_scale="levels")
    import_pairs(
        engine, "BIOSSES", load_pairs(DATASETS / "biosses" / "biosses_pairs_with_annotator_scores.tsv", "auto")
    )

    with write_session(engine) as session:
        for name, english in ANNOTATORS.items():
            session.execute(update(Annotator).where(Annotator.name == name).values(english_level=english))
        # seconds per label: a deterministic spread so medians differ per annotator
        session.execute(update(Label).values(seconds_spent=5 + (Label.id % 7) * Label.annotator_id))

    pairs = pairs_frame(engine, texts=True)
    similarity = 1 - edit_distances(pairs)
    clipped = similarity.clip(0.01, 0.99)
    lev = add_score_run(engine, "Levenshtein similarity", similarity, kind="baseline")
    pluie = add_score_run(engine, "PLUIE stand-in", np.log(clipped / (1 - clipped)) - 0.5, kind="pluie")
    # the baseline as the worker stores it: a distance, lower = more similar
    distance = add_score_run(engine, "levenshtein", 1 - similarity, kind="baseline", higher_is_similar=False)
    return {"mrpc": mrpc, "lev_run": lev, "pluie_run": pluie, "distance_run": distance, "pairs": pairs}


@pytest.fixture(scope="session")
def built_analysis_store(tmp_path_factory):
    """build_store's store, built once per session into a SQLite file: (its path, what build_store
    returned). The `store` fixtures of the analysis tests load a copy into each test's own store."""
    from db import init_db

    path = tmp_path_factory.mktemp("analysis") / "built.db"
    engine = init_db(f"sqlite:///{path}")
    built = build_store(engine)
    engine.dispose()  # the last connection closed: the WAL is checkpointed into the file
    return path, built


def load_built_store(engine, built_analysis_store) -> dict:
    """Copy the session's built store into this test's empty store (SQLite's online backup, page by
    page, through the engine's own connection): the same rows and ids as build_store(engine) would
    give, without reading the datasets and writing the labels again. Returns build_store's dict (a
    copy: a test may change it)."""
    path, built = built_analysis_store
    load_sqlite_copy(engine, path)
    return copy.deepcopy(built)
