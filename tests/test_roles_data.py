"""Roles in the write path of data, runs, benchmarks, publishing and explanations (issue 39): a viewer
and a reviewer are refused every write an organiser may do, with one sentence and the store as it was;
an organiser's writes go through and name them (created_by, the activity log); a store without accounts
(OPEN) works as before."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import access, init_db
from db import explanations as expl
from db.datasets import delete_dataset, import_pair_chunks, import_pairs, rename_dataset
from db.engine import read_session
from db.evaluation import assign_challenge, import_benchmark
from db.models import Activity, Base, Dataset, Pair, ScoreRun
from db.preferences import import_preference_file, import_preferences
from db.publish import publish_dataset
from db.runs import cancel_run, create_run, pause_run, resume_run, retry_run, runs_progress
from lab.roles import Actor, NotAllowed
from tests.store_fixtures import sentence_pairs

VIEWER, REVIEWER, ORGANISER = Actor("vera", "viewer", 1), Actor("rey", "reviewer", 2), Actor("olga", "organiser", 3)
ORGANISE = "only an organiser or above can"


def frame(n: int = 4, seed: int = 0, labels: bool = True) -> pd.DataFrame:
    pairs = pd.DataFrame(sentence_pairs(n, seed), columns=["source", "hypothesis"])
    if labels:
        pairs["label"] = [float(i % 2) for i in range(n)]
    return pairs


def preference_items() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "source": ["a cat", "a dog"],
            "candidate_a": ["one cat", "one dog"],
            "candidate_b": ["the cat", "the dog"],
            "preferred": ["A", "B"],
        }
    )


def snapshot(engine) -> dict:
    """Every table's row count, and what a refused write could have changed in place."""
    with read_session(engine) as session:
        counts = {
            table.name: session.scalar(select(func.count()).select_from(table)) for table in Base.metadata.sorted_tables
        }
        datasets = session.execute(
            select(Dataset.id, Dataset.name, Dataset.challenge, Dataset.benchmark, Dataset.description).order_by(
                Dataset.id
            )
        ).all()
        runs = session.execute(select(ScoreRun.id, ScoreRun.status).order_by(ScoreRun.id)).all()
    return {"counts": counts, "datasets": [tuple(d) for d in datasets], "runs": [tuple(r) for r in runs]}


@pytest.fixture
def store(store_url, tmp_path):
    engine = init_db(store_url)
    dataset_id = import_pairs(engine, "base", frame(6)).dataset_id
    active = create_run(engine, name="active", model="some/model", template="direct")
    paused = create_run(engine, name="paused", kind="baseline", model="levenshtein")
    pause_run(engine, paused)
    cancelled = create_run(engine, name="cancelled", kind="baseline", model="bleu")
    cancel_run(engine, cancelled)
    with read_session(engine) as session:
        pair_id = session.scalar(select(func.min(Pair.id)).where(Pair.dataset_id == dataset_id))
    yield {
        "engine": engine,
        "dataset": dataset_id,
        "active": active,
        "paused": paused,
        "cancelled": cancelled,
        "pair": pair_id,
        "tmp": tmp_path,
    }
    engine.dispose()


def organiser_writes(s: dict) -> dict:
    """Each write an organiser may do and a viewer or reviewer may not, by name."""
    engine = s["engine"]
    return {
        "import": lambda: import_pairs(engine, "new", frame(3, 1)),
        "append": lambda: import_pairs(engine, "base", frame(3, 2), append=True),
        "import in chunks": lambda: import_pair_chunks(engine, "chunked", [frame(2, 3), frame(2, 4)]),
        "rename": lambda: rename_dataset(engine, s["dataset"], "renamed"),
        "delete": lambda: delete_dataset(engine, s["dataset"]),
        "create run": lambda: create_run(engine, name="another", kind="baseline", model="levenshtein"),
        "pause": lambda: pause_run(engine, s["active"]),
        "resume": lambda: resume_run(engine, s["paused"]),
        "cancel": lambda: cancel_run(engine, s["active"]),
        "retry": lambda: retry_run(engine, s["cancelled"]),
        "benchmark": lambda: import_benchmark(engine, {"pawsx": frame(4, 5)}, benchmark="bench", prefix="bench"),
        "challenge": lambda: assign_challenge(engine, s["dataset"], "Classify!", "custom"),
        "preferences": lambda: import_preferences(engine, "prefs", preference_items()),
        "preference file": lambda: import_preference_file(
            engine, io.BytesIO(preference_items().to_csv(index=False).encode()), name="prefs-file"
        ),
        "publish": lambda: publish_dataset(engine, s["tmp"] / "published", licence="cc-by-4.0", n_boot=10),
    }


WRITES = [
    "import",
    "append",
    "import in chunks",
    "rename",
    "delete",
    "create run",
    "pause",
    "resume",
    "cancel",
    "retry",
    "benchmark",
    "challenge",
    "preferences",
    "preference file",
    "publish",
]
# what each refusal names (issue 56, item 5: the action refused, not the role's whole list)
REFUSED = {
    "import": "import pairs",
    "append": "import pairs",
    "import in chunks": "import pairs",
    "rename": "rename a dataset",
    "delete": "delete a dataset",
    "create run": "create a score run",
    "pause": "pause a score run",
    "resume": "resume a score run",
    "cancel": "cancel a score run",
    "retry": "retry a score run",
    "benchmark": "import a benchmark",
    "challenge": "put a dataset in a challenge",
    "preferences": "import preference data",
    "preference file": "import preference data",
    "publish": "publish a dataset",
}


@pytest.mark.parametrize("actor", [VIEWER, REVIEWER], ids=["viewer", "reviewer"])
def test_a_viewer_and_a_reviewer_are_refused_every_organiser_write(store, actor):
    writes = organiser_writes(store)
    assert sorted(writes) == sorted(WRITES)
    before = snapshot(store["engine"])
    for name in WRITES:
        with access.acting_as(actor), pytest.raises(NotAllowed) as refused:
            writes[name]()
        assert str(refused.value) == f"{actor.name} is a {actor.role}: {ORGANISE} {REFUSED[name]}.", name
        assert snapshot(store["engine"]) == before, name
    assert not (store["tmp"] / "published").exists()  # nothing written on disk either


def test_nobody_signed_in_is_asked_to_sign_in(store):
    before = snapshot(store["engine"])
    with access.acting_as(access.NOBODY), pytest.raises(NotAllowed, match="^Sign in to import pairs.$"):
        import_pairs(store["engine"], "new", frame(3, 1))
    assert snapshot(store["engine"]) == before


def test_why_this_score_needs_a_reviewer(store):
    engine = store["engine"]
    before = snapshot(engine)
    with access.acting_as(VIEWER), pytest.raises(NotAllowed) as refused:
        expl.request_explanation(engine, store["active"], store["pair"])
    assert str(refused.value) == "vera is a viewer: only a reviewer or above can ask why a score."
    assert snapshot(engine) == before
    with access.acting_as(REVIEWER):
        assert expl.request_explanation(engine, store["active"], store["pair"]).status == "queued"


def activity(engine) -> list[tuple]:
    with read_session(engine) as session:
        return [
            tuple(row)
            for row in session.execute(
                select(Activity.actor, Activity.action, Activity.subject, Activity.subject_id).order_by(Activity.id)
            )
        ]


def test_an_organisers_writes_go_through_and_name_them(store):
    engine, writes = store["engine"], organiser_writes(store)
    with access.acting_as(ORGANISER):
        new = writes["import"]().dataset_id
        chunked = writes["import in chunks"]().dataset_id
        writes["append"]()
        benchmark = writes["benchmark"]()[0].dataset_id
        preferences = writes["preferences"]().dataset_id
        run = writes["create run"]()
        for name in ("pause", "resume", "cancel", "retry", "rename", "challenge", "publish"):
            writes[name]()
    with read_session(engine) as session:
        made = dict(session.execute(select(Dataset.id, Dataset.created_by)).all())
        assert made[new] == made[chunked] == made[benchmark] == made[preferences] == "olga"
        assert made[store["dataset"]] == ""  # imported on the open store: nobody named; appending keeps that
        assert session.get(ScoreRun, run).created_by == "olga"
        assert session.get(ScoreRun, store["active"]).created_by == ""
    logged = activity(engine)
    assert ("olga", "pause run", "run", store["active"]) in logged
    assert ("olga", "cancel run", "run", store["active"]) in logged
    assert ("olga", "resume run", "run", store["paused"]) in logged
    assert ("olga", "retry run", "run", store["cancelled"]) in logged
    assert ("olga", "rename dataset", "dataset", store["dataset"]) in logged
    assert ("olga", "publish", "dataset", None) in logged
    card = (store["tmp"] / "published" / "README.md").read_text(encoding="utf-8")
    assert "imported by olga" in card
    with access.acting_as(ORGANISER):
        writes["delete"]()
    assert activity(engine)[-1] == ("olga", "delete dataset", "dataset", store["dataset"])
    assert {run.name: run.created_by for run in runs_progress(engine)}["another"] == "olga"


def test_the_open_store_works_as_before(store):
    engine, writes = store["engine"], organiser_writes(store)
    for name in (
        WRITES
    ):  # no acting_as, OPEN installed (as the worker and the command line do): everything allowed, nobody named
        if name != "delete":
            writes[name]()
    writes["delete"]()
    with read_session(engine) as session:
        assert set(session.scalars(select(Dataset.created_by))) == {""}
        assert set(session.scalars(select(ScoreRun.created_by))) == {""}
    assert {actor for actor, *_ in activity(engine)} == {""}


def test_the_scoring_page_says_who_created_a_run(engine, monkeypatch, db_url):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    st.cache_resource.clear()
    with access.acting_as(Actor("olga_*x*", "organiser", 3)):
        create_run(engine, name="by olga", kind="baseline", model="levenshtein")
    create_run(engine, name="by nobody", kind="baseline", model="bleu")
    try:
        page = AppTest.from_file(
            str(Path(__file__).resolve().parents[1] / "pages" / "scoring.py"), default_timeout=60
        ).run()
        assert not page.exception, page.exception
        texts = [bar.proto.text for bar in page.get("progress")]
        mine = next(text for text in texts if "by olga" in text)
        assert r"created by olga\_\*x\*" in mine  # through user_text: the name shows as typed
        assert all("created by" not in text for text in texts if "by nobody" in text)
    finally:
        st.cache_resource.clear()
