"""The scoring page in real Streamlit (AppTest) on a real SQLite store, with a real worker process."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import init_db, queue
from db.engine import read_session
from db.models import ScoreRun, Worker
from db.runs import RunError, create_run, ensure_default_runs, latest_scores, pause_run
from tests.store_fixtures import add_pairs, score_everything, sentence_pairs
from tests.store_fixtures import open_page as open_app_page
from tests.store_fixtures import texts as app_texts
from tests.test_worker import start_worker
from worker import Metric, ScoringWorker

REPO = Path(__file__).resolve().parents[1]
PAGE = str(REPO / "pages" / "scoring.py")


@pytest.fixture
def store(tmp_path, monkeypatch, migrated_copy):
    url = migrated_copy(f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("PLUIE_DB_URL", url)
    st.cache_resource.clear()  # the page's engine is cached per process: open this test's store
    engine = init_db(url)
    yield url, engine
    engine.dispose()
    st.cache_resource.clear()


def open_page() -> AppTest:
    page = AppTest.from_file(PAGE, default_timeout=60)
    page.run()
    assert not page.exception, page.exception
    return page


def widget(elements, label):
    return next(w for w in elements if w.label == label)


def texts(page) -> str:
    parts = [e.value for e in page.error] + [e.value for e in page.success] + [e.value for e in page.warning]
    parts += [str(getattr(p, "proto", "")) for p in page.get("progress")]
    return "\n".join(parts)


def test_unloadable_model_shows_a_failed_run_with_its_reason_while_others_are_scored(store, tmp_path):
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(12))
    create_run(engine, name="broken model", model=str(tmp_path / "missing-model"), template="direct")
    create_run(engine, name="lev", kind="baseline", model="levenshtein")
    log = tmp_path / "worker.log"
    worker = start_worker(url, "--exit-when-idle", "--device", "cpu", log=log)
    assert worker.wait(timeout=180) == 0, log.read_text()[-3000:]
    with read_session(engine) as session:
        assert session.scalar(select(ScoreRun.status).where(ScoreRun.name == "broken model")) == "failed"
        assert "missing-model" in session.scalar(select(Worker.last_error))

    page = open_page()
    errors = [e.value for e in page.error]
    assert any("broken model" in e and "failed" in e and "missing-model" in e for e in errors), errors
    assert not any("Traceback" in e for e in errors)
    assert "12 / 12 scored" in texts(page)  # the other run was served


def test_create_a_run_from_the_form_and_see_its_pairs_queued(store, tiny_model_path):
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(5))
    page = open_page()
    widget(page.text_input, "Model").input(str(tiny_model_path))
    widget(page.radio, "Direction").set_value("symmetric")
    assert widget(page.selectbox, "Precision").value.startswith("auto")
    widget(page.selectbox, "Precision").set_value("float32")  # Why this score's small numbers kept exact
    widget(page.text_input, "Run name (optional)").input("my run")
    widget(page.button, "Create run").click()
    page.run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    with read_session(engine) as session:
        run = session.scalar(select(ScoreRun).where(ScoreRun.name == "my run"))
    assert (run.model, run.direction, run.template, run.status) == (
        str(tiny_model_path),
        "symmetric",
        "fs-direct",
        "active",
    )
    assert run.dtype == "float32"
    with pytest.raises(RunError, match="Precision must be one of float32, bfloat16, float16, not 'int8'"):
        create_run(engine, model=str(tiny_model_path), name="eight bits", dtype="int8")
    with read_session(engine) as session:
        assert session.scalar(select(ScoreRun).where(ScoreRun.name == "eight bits")) is None
    half = create_run(engine, model=str(tiny_model_path), name="half", dtype="bf16")  # the CLI's short names too
    with read_session(engine) as session:
        assert session.get(ScoreRun, half).dtype == "bfloat16"  # stored by its own name
    assert "0 / 5 scored" in texts(page)
    assert widget(page.selectbox, "Run").value == run.id  # the new run is selected


def test_a_pasted_custom_template_is_stored_with_the_run(store, tiny_model_path):
    url, engine = store
    page = open_page()
    widget(page.text_input, "Model").input(str(tiny_model_path))
    widget(page.selectbox, "Template").set_value("custom (paste or upload)")
    widget(page.text_area, "Custom template (YAML or JSON)").input(
        "name: mine\nanswers: ['Oui', 'Non']\nturns:\n  - {role: user, content: 'Same meaning? {source} / {hypothesis}'}\n"
    )
    widget(page.button, "Create run").click()
    page.run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    with read_session(engine) as session:
        run = session.scalar(select(ScoreRun))
    assert run.template == "custom" and run.template_spec["answers"] == ["Oui", "Non"]
    assert run.template_spec["turns"][0]["content"].startswith("Same meaning?")


def test_mistakes_in_the_form_are_shown_as_sentences(store):
    page = open_page()
    widget(page.button, "Create run").click()
    page.run()
    assert not page.exception
    assert any("Give a model" in e.value for e in page.error)

    widget(page.text_input, "Model").input("m")
    widget(page.selectbox, "Template").set_value("custom (paste or upload)")
    widget(page.text_area, "Custom template (YAML or JSON)").input("turns: [unclosed")
    widget(page.button, "Create run").click()
    page.run()
    assert not page.exception
    assert any("not valid YAML or JSON" in e.value for e in page.error), [e.value for e in page.error]


def test_pause_resume_cancel_retry_buttons(store):
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(3))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")

    def status():
        with read_session(engine) as session:
            return session.get(ScoreRun, run).status

    page = open_page()
    assert widget(page.button, "Resume").disabled and widget(page.button, "Retry").disabled
    for label, expected in (("Pause", "paused"), ("Resume", "active"), ("Cancel", "cancelled"), ("Retry", "active")):
        widget(page.button, label).click()
        page.run()
        assert not page.exception
        assert status() == expected, label


def test_latest_scores_and_workers_are_shown(store):
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(4))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    ScoringWorker(engine, device="cpu", run_ids=[run], poll_seconds=0.1).run(exit_when_idle=True)
    pause_run(engine, run)
    page = open_page()
    tables = [t.value for t in page.dataframe]
    latest = next(t for t in tables if "score" in t.columns)
    assert len(latest) == 4 and latest["score"].between(0, 1).all()  # normalised edit distances
    # the worker has exited: the page says no worker is alive
    assert any("No worker is running" in w.value for w in page.warning)


def test_start_a_worker_from_the_page(store, monkeypatch, tmp_path):
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(3))
    for baseline in ensure_default_runs(engine):
        pause_run(engine, baseline)  # keep this test to one cheap run
    shown = texts(open_page())  # each baseline run says what it computes: which BLEU is which
    assert "BLEU (paper)" in shown and "as in the ParaPLUIE paper" in shown and "sacreBLEU defaults" in shown
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    monkeypatch.setenv("PLUIE_WORKER_LOG", str(tmp_path / "worker.log"))
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    page = open_page()
    widget(page.button, "Start a worker").click()
    page.run()
    assert any("PLUIE_NO_WORKER" in i.value for i in page.info)

    monkeypatch.delenv("PLUIE_NO_WORKER")
    widget(page.button, "Start a worker").click()
    page.run()
    assert any("Worker started" in s.value for s in page.success)
    deadline = time.monotonic() + 120
    while not (alive := queue.alive_workers(engine)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive, "the worker started from the page never reported"
    try:
        while time.monotonic() < deadline and len(latest_scores(engine, run)) < 3:
            time.sleep(0.2)
        page.run()
        assert not any("No worker is running" in w.value for w in page.warning)
        assert len(latest_scores(engine, run)) == 3
    finally:
        os.kill(alive[0].pid, signal.SIGTERM)  # the worker this test started, by its id
        while time.monotonic() < deadline + 60 and any(w.pid == alive[0].pid for w in queue.alive_workers(engine)):
            time.sleep(0.2)
    assert not queue.alive_workers(engine), "the worker should record its stop on SIGTERM"


def test_a_run_reads_loading_the_model_and_workers_show_the_current_runs_rate(store, monkeypatch):
    """A worker scores a fast baseline, then takes a PLUIE run: while it loads that model, the run says
    "loading the model" (not "0 scored") and the worker's row its state, with no rate; once it scores,
    its pairs / s is that run's rate, not an average that still holds the baseline's thousands."""
    from db.queue import workers_overview
    from db.runs import runs_progress

    url, engine = store
    add_pairs(engine, "d", sentence_pairs(12))
    create_run(engine, name="lev", kind="baseline", model="levenshtein")
    pluie = create_run(engine, name="big model", model="some/hub-model", template="direct")
    worker = ScoringWorker(engine, device="cpu", claim_size=6, overlap=False, poll_seconds=0.1)
    seen = []

    def slow_scores(sources, hypotheses):
        time.sleep(0.1)
        return [0.5] * len(sources), None

    real_metric = worker._metric

    def metric(run_id):  # the first call for the PLUIE run is its model loading: look at the page then
        if run_id == pluie:
            overview = workers_overview(engine).iloc[0]
            progress = next(r for r in runs_progress(engine) if r.id == pluie)
            seen.append(
                (overview["state"], overview["pairs / s"], progress.starting, texts(open_page()) if not seen else "")
            )
            worker._metrics[run_id] = Metric(slow_scores)  # loaded: kept, as the real one keeps it
            return slow_scores
        return real_metric(run_id)

    monkeypatch.setattr(worker, "_metric", metric)
    assert worker.run(exit_when_idle=True) == 24
    (state, rate, starting, page), (state_2, rate_2, _, _) = seen
    assert (state, starting) == ("loading the model", "loading the model") and pd.isna(rate)
    assert "big model** · loading the model · 0 / 12 scored" in page
    assert state_2 == "scoring" and 0 < rate_2 <= 60.5  # its own rate: 6 pairs in 0.1 s or more


def test_a_finished_run_says_it_is_up_to_date(app_store):
    engine = app_store
    add_pairs(engine, "d", sentence_pairs(4))
    lev = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    chrf = create_run(engine, name="chrf", kind="baseline", model="chrf")
    score_everything(engine, lev)
    shown = app_texts(open_app_page("scoring"))
    finished = next(line for line in shown.splitlines() if "**lev**" in line)
    assert "up to date" in finished and "waiting for new pairs" in finished and "time left" not in finished
    assert "4 / 4 scored" in finished
    waiting = next(line for line in shown.splitlines() if "**chrf**" in line)
    assert "active" in waiting and "0 / 4 scored" in waiting and "up to date" not in waiting
    assert chrf
