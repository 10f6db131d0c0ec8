"""Why this score in the app (issue 40, item 3): the request kept in the store (db.explanations, both
stores), computed by the worker with the run's own model, and drawn under a pair (Pairs page)."""

from __future__ import annotations

import html
import re
from dataclasses import replace

import numpy as np
import pytest
from sqlalchemy import delete, func, inspect, select
from streamlit.testing.v1 import AppTest

from db import explanations as expl
from db.engine import read_session, write_session
from db.models import Dataset, Explanation, Pair
from db.runs import create_run
from pluie_core.explain import (
    explanation_from_json,
    explanation_html,
    explanation_to_json,
    precision_note,
    word_contributions,
)
from tests.paths import REPO
from tests.store_fixtures import add_pairs

PAIRS = [("The cat drinks water, slowly.", "A cat drinks milk."), ("Hello <b>world</b>", "Hello there world")]


def n_explanations(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Explanation))


# ---------------------------------------------------------------- the store
def test_the_migration_builds_the_models_table(store_url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from db import init_db
    from db.models import Base

    engine = init_db(store_url)
    assert "explanations" in inspect(engine).get_table_names()
    with engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert [d for d in differences if "explanations" in repr(d)] == []
    engine.dispose()


def test_a_request_is_kept_once_refused_off_pluie_and_goes_with_its_pair(store_url):
    from db import init_db

    engine = init_db(store_url)
    first, second = add_pairs(engine, "d", PAIRS)
    add_pairs(engine, "other", [("x y", "y z")])
    pluie = create_run(engine, name="judge", model="some/model", template="direct")
    baseline = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    with read_session(engine) as session:
        other_dataset = session.scalar(select(Dataset.id).where(Dataset.name == "other"))
        other_pair = session.scalar(select(Pair.id).where(Pair.dataset_id == other_dataset))
    scoped = create_run(engine, name="scoped", model="some/model", dataset_ids=[other_dataset])

    state = expl.request_explanation(engine, pluie, first)
    again = expl.request_explanation(engine, pluie, first)
    assert state.status == again.status == "queued" and n_explanations(engine) == 1
    assert [r.id for r in expl.pluie_runs_for_pair(engine, first)] == [pluie]  # the scoped run does not cover it
    assert [r.id for r in expl.pluie_runs_for_pair(engine, other_pair)] == [pluie, scoped]

    with pytest.raises(expl.ExplanationError, match="needs a PLUIE run"):
        expl.request_explanation(engine, baseline, first)
    with pytest.raises(expl.ExplanationError, match="outside run"):
        expl.request_explanation(engine, scoped, first)
    with pytest.raises(expl.ExplanationError, match="no pair"):
        expl.request_explanation(engine, pluie, 10_000)
    assert n_explanations(engine) == 1  # refusals wrote nothing

    # claimed, failed, asked again: queued again (one row still); a second worker cannot take a held one
    claimed = expl.claim_explanation(engine, "w1", 60)
    assert (claimed.run_id, claimed.pair_id, claimed.source) == (pluie, first, PAIRS[0][0])
    assert expl.claim_explanation(engine, "w2", 60) is None
    assert expl.fail_explanation(engine, "w1", claimed.id, "The model ran out of memory.")
    assert expl.explanation(engine, pluie, first).error == "The model ran out of memory."
    assert expl.request_explanation(engine, pluie, first).status == "queued" and n_explanations(engine) == 1

    with write_session(engine) as session:  # a deleted pair takes its explanation with it
        session.execute(delete(Pair).where(Pair.id == first))
    assert n_explanations(engine) == 0 and expl.explanation(engine, pluie, first) is None
    expl.request_explanation(engine, pluie, second)
    assert expl.explanations_waiting(engine) == 1
    engine.dispose()


def test_stored_json_round_trips_and_the_drawing_escapes_and_colours():
    class Counting:  # score = number of characters: every word pushes by its own length (+ space)
        def score(self, sources, hypotheses, symmetric=False, fields=None):
            return np.array([len(s) + len(h) for s, h in zip(sources, hypotheses)], dtype=float)

    explanation = word_contributions(Counting(), *PAIRS[1])
    assert explanation_from_json(explanation_to_json(explanation)) == explanation
    assert explanation.precision is None and precision_note(explanation) is None  # a scorer without a dtype
    stored_before = {k: v for k, v in explanation_to_json(explanation).items() if k != "precision"}
    assert explanation_from_json(stored_before) == explanation  # kept before the precision was recorded
    source, hypothesis = explanation_html(explanation)
    # markup in a sentence is text: without our own spans, the drawing is the sentence escaped
    assert re.sub(r"<span[^>]*>|</span>", "", source) == html.escape(PAIRS[1][0], quote=True)
    assert 'class="pluie-why pluie-why-first"' in hypothesis and "light-dark(" in hypothesis
    assert 'title="+6.000: pushes the score towards “Yes”' in hypothesis  # "there " left out: 6 characters
    assert "text-decoration:underline" in hypothesis  # "there" is the diff's insert


# ---------------------------------------------------------------- the worker
@pytest.fixture(scope="module")
def tiny_model(tiny_model_builder):  # noqa: F811
    pytest.importorskip("pluie_core.scorer")
    return tiny_model_builder()


@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_the_worker_computes_a_requested_explanation_with_the_runs_model(tmp_path, tiny_model, direction):
    from db import init_db
    from pluie_core.scorer import PluieScorer
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    first, _ = add_pairs(engine, "d", PAIRS)
    run = create_run(engine, name="tiny", model=str(tiny_model), template="direct", direction=direction, device="cpu")
    expl.request_explanation(engine, run, first)
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, overlap=False).run(exit_when_idle=True)

    state = expl.explanation(engine, run, first)
    assert state is not None and state.status == "done", state
    scorer = PluieScorer(str(tiny_model), template="direct", device="cpu")
    if direction == "forward":
        direct = word_contributions(scorer, *PAIRS[0])
        source_tokens, hypothesis_tokens = direct.source_tokens, direct.hypothesis_tokens
    else:  # the run scores (hypothesis, source): the hypothesis is the model's "source"
        direct = word_contributions(scorer, PAIRS[0][1], PAIRS[0][0])
        source_tokens, hypothesis_tokens = direct.hypothesis_tokens, direct.source_tokens
    stored = state.explanation
    assert (stored.source, stored.hypothesis) == PAIRS[0]
    assert stored.score == pytest.approx(direct.score, abs=1e-5)
    for got, expected in ((stored.source_tokens, source_tokens), (stored.hypothesis_tokens, hypothesis_tokens)):
        assert [(t.token, t.start, t.end) for t in got] == [(t.token, t.start, t.end) for t in expected]
        assert [t.contribution is None for t in got] == [t.contribution is None for t in expected]
        np.testing.assert_allclose(
            [t.contribution for t in got if t.contribution is not None],
            [t.contribution for t in expected if t.contribution is not None],
            atol=1e-5,
        )
    engine.dispose()


def test_a_request_the_model_cannot_serve_stores_its_sentence(tmp_path):
    from db import init_db
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    first, _ = add_pairs(engine, "d", PAIRS)
    run = create_run(engine, name="gone", model=str(tmp_path / "no-model"), template="direct", device="cpu")
    expl.request_explanation(engine, run, first)
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, overlap=False).explain_requested()
    state = expl.explanation(engine, run, first)
    assert state.status == "failed" and state.error.startswith("No model found at")
    engine.dispose()


# ---------------------------------------------------------------- the page
def test_the_pairs_page_shows_the_coloured_words_once_the_worker_computed_them(app_store, tiny_model, monkeypatch):
    from ui.forms import explain_view
    from worker import ScoringWorker

    engine = app_store
    first, _ = add_pairs(engine, "d", PAIRS)
    run = create_run(engine, name="tiny judge", model=str(tiny_model), template="direct", device="cpu")
    monkeypatch.setattr(explain_view, "WAIT_SECONDS", 0.3)  # no worker yet: the page says so soon
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/pairs.py")
    at.run()
    assert not at.exception, at.exception
    at.button(key=f"pairs-why-{run}-{first}").click()
    at.run()
    assert not at.exception, at.exception
    assert any("No worker is running" in w.value for w in at.warning)
    assert expl.explanation(engine, run, first).status == "queued"

    ScoringWorker(engine, device="cpu", poll_seconds=0.1, overlap=False).run(exit_when_idle=True)
    at.run()
    assert not at.exception, at.exception
    body = next(h.proto.body for h in at.html if "why-this-score" in h.proto.body)
    stored = expl.explanation(engine, run, first).explanation
    assert body.count('class="pluie-why ') == len(stored.source_words) + len(stored.hypothesis_words)
    milk = next(t for t in stored.hypothesis_tokens if t.token == "milk")
    assert f'title="{milk.contribution:+.3f}: pushes' in body
    assert any(f"Score {stored.score:+.3f}" in m.value for m in at.markdown)
    assert stored.precision == "float32"  # the run's default on a CPU: no rounding note
    assert not any("rounding changes with the batch" in c.value for c in at.caption)


def test_a_bfloat16_runs_explanation_says_how_far_its_rounding_reaches(app_store, tiny_model):
    """In bfloat16 a contribution agrees with re-scoring its variant alone only to a few tenths
    (bench/results/2026-11-26-gpu-h100.md): the worker records the precision it computed in and the page
    says so under the words; a float32 scorer's explanation carries no note."""
    from pluie_core.scorer import PluieScorer
    from worker import ScoringWorker

    engine = app_store
    first, _ = add_pairs(engine, "d", PAIRS)
    run = create_run(engine, name="half", model=str(tiny_model), template="direct", device="cpu", dtype="bfloat16")
    expl.request_explanation(engine, run, first)
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, overlap=False).run(exit_when_idle=True)
    stored = expl.explanation(engine, run, first).explanation
    assert stored.precision == "bfloat16"
    note = precision_note(stored)
    assert note.startswith("Computed in bfloat16") and "0.3" in note
    # the same pair in float32, by the library: the precision recorded, and no note
    full = word_contributions(PluieScorer(str(tiny_model), template="direct", device="cpu"), *PAIRS[0])
    assert full.precision == "float32" and precision_note(full) is None
    # float16 keeps three more bits than bfloat16: its note says hundredths (0.046 at most on a 7B model)
    assert "by a few hundredths (up to 0.05 measured" in precision_note(replace(full, precision="float16"))

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/pairs.py")
    at.run()
    assert not at.exception, at.exception
    assert any("why-this-score" in h.proto.body for h in at.html)  # kept: drawn at once, no button to press
    assert any(note in c.value for c in at.caption), [c.value for c in at.caption]


@pytest.mark.slow
def test_a_worker_killed_during_why_this_score_frees_it_after_its_own_lease(tmp_path, tiny_model):
    """Issue 56, item 4: the request was leased for 900 s whatever --lease-seconds said; it is leased like a
    claim, renewed while it is computed, and claimable again one lease after the worker dies."""
    import os
    import signal
    import time

    from db import init_db
    from db.models import Explanation
    from tests.test_worker import start_worker, wait_until

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    # the longest pair "why this score" computes (200 words a sentence: 400 passes, seconds on the tiny model), so
    # the worker is still computing when the lease is checked; 300 words were refused a second after the model
    # loaded, and on a quiet machine before the first renewal
    long_pair = (" ".join(f"word{i}" for i in range(200)), " ".join(f"term{i}" for i in range(200)))
    first, _ = add_pairs(engine, "d", [long_pair, PAIRS[1]])
    run = create_run(engine, name="tiny", model=str(tiny_model), template="direct", device="cpu")
    expl.request_explanation(engine, run, first)

    def lease():
        with read_session(engine) as session:
            row = session.execute(select(Explanation.status, Explanation.lease_expires_at)).one()
        return row

    worker = start_worker(
        url, "--runs", str(run), "--lease-seconds", "3", "--device", "cpu", log=tmp_path / "worker.log"
    )
    try:
        wait_until(lambda: lease()[0] == "claimed", 120, "the worker claims the request", tmp_path / "worker.log")
        from db.models import utcnow

        status, expires = lease()
        assert (expires - utcnow()).total_seconds() <= 4  # the worker's own lease, not 900 s
        # renewed by the lease keeper while the model loads and computes
        wait_until(
            lambda: (row := lease())[0] == "claimed" and row[1] > expires,
            5,
            "the lease is renewed",
            tmp_path / "worker.log",
        )
        assert lease()[0] == "claimed"
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert expl.claim_explanation(engine, "another-worker", 60) is None  # its lease still runs
    started = time.monotonic()
    wait_until(
        lambda: expl.claim_explanation(engine, "another-worker", 60) is not None, 6, "the request is claimable again"
    )
    assert time.monotonic() - started <= 4.5
    engine.dispose()
