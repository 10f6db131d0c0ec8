"""One record per run kind (pluie_core.run_kinds.RUN_KINDS), read by every layer: the store accepts
exactly its kinds, the worker builds each kind's metric through the record's loader, the Scoring page
offers the judges it lists, and a record added to it is accepted by create_run."""
from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import init_db
from db import queue
from db.engine import read_session
from db.models import ScoreRun
from db.preferences import import_preference_file
from db.runs import RunError, create_run
from pluie_core import analysis, judges
from pluie_core.baselines import BASELINES
from pluie_core.run_kinds import PAIRS, PREFERENCE_ITEMS, RUN_KINDS, RunKind
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.test_choice_runs import ITEMS, preference_file

REPO = Path(__file__).resolve().parents[1]


def make_run(engine, kind: str, model: str) -> int:
    """A run of ``kind`` as the Scoring page's forms would create it (a baseline names its metric)."""
    return create_run(engine, kind=kind, name=f"{kind} run", model="levenshtein" if RUN_KINDS[kind].baseline
                      else model, device="cpu")


def test_the_store_accepts_exactly_the_registry_kinds(engine):
    for kind in RUN_KINDS:
        run_id = make_run(engine, kind, "some/model")
        with read_session(engine) as session:
            assert session.get(ScoreRun, run_id).kind == kind
    with pytest.raises(RunError) as refused:
        create_run(engine, kind="llm-fake", model="some/model")
    assert str(refused.value) == f"Unknown run kind 'llm-fake': use one of {', '.join(RUN_KINDS)}."
    assert list(RUN_KINDS) == ["pluie", "baseline", "llm-yes-no", "llm-likert", "llm-choice"]  # declaration order


def test_every_layer_reads_the_records_facts():
    assert queue.CHOICE_RUN_KINDS == analysis.PREFERENCE_ONLY_KINDS == tuple(
        k.name for k in RUN_KINDS.values() if k.compares == PREFERENCE_ITEMS) == ("llm-choice",)
    assert set(judges.RUN_KINDS) == {k.name for k in RUN_KINDS.values() if k.judge is not None}
    for record in RUN_KINDS.values():
        assert analysis.natural_threshold(record.name) == record.natural_threshold
        assert queue.uses_model(record.name, None) == record.needs_model
        assert record.template == (record.default_template is not None)
        judge = judges.judge_for_run_kind(record.name)
        if judge is not None:  # the judges' registry takes its shared facts from the record
            assert (judge.kind, judge.title, judge.default_template, judge.natural_threshold) == (
                record.judge, record.title, record.default_template, record.natural_threshold)
            assert judge.default_template in judges.BUILTIN_JUDGE_TEMPLATES
    assert queue.uses_model("baseline", {"model": "roberta-large"})
    assert [analysis.natural_threshold(k) for k in RUN_KINDS] == [0.0, None, 0.5, 4.0, None]


def test_the_worker_builds_a_metric_for_every_kind(tmp_path, tiny_model_path):
    from worker import LOADERS, load_metric

    assert {k.loader for k in RUN_KINDS.values()} <= set(LOADERS)
    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    import_preference_file(engine, preference_file(tmp_path / "items.csv", ITEMS), "items")
    source, candidate, partner = ITEMS[0][:3]
    loaded = []
    for kind in RUN_KINDS:
        run = queue.run_config(engine, make_run(engine, kind, str(tiny_model_path)))
        metric = load_metric(run, "cpu", 4, loaded=loaded, engine=engine)
        values, details = metric.score([source], [candidate])
        assert len(values) == 1, kind
        if kind == "baseline":
            assert values == [pytest.approx(BASELINES["levenshtein"].function([source], [candidate])[0])] and details is None
        elif kind == "pluie":
            assert metric.scorer is not None and "logp Yes" in details[0]
        else:  # a judge: the generated text is kept, the model shared with the PLUIE run's
            assert metric.scorer is None and "answer" in details[0] and metric.weights == loaded[0].weights
            assert ("against" in details[0]) == (RUN_KINDS[kind].compares == PREFERENCE_ITEMS)
        if metric.weights is not None:
            loaded.append(metric)
    engine.dispose()


def test_a_record_added_to_the_registry_is_accepted_and_scored(engine, monkeypatch):
    from worker import load_metric

    fake = RunKind("fake-metric", "Fake", PAIRS, "baseline", needs_model=False, baseline=True, template=False)
    with pytest.raises(RunError, match="Unknown run kind 'fake-metric'"):
        create_run(engine, kind="fake-metric", model="levenshtein")
    monkeypatch.setitem(RUN_KINDS, "fake-metric", fake)
    run_id = create_run(engine, kind="fake-metric", model="levenshtein")
    add_pairs(engine, "d", sentence_pairs(3))
    with read_session(engine) as session:
        run = session.get(ScoreRun, run_id)
        assert (run.kind, run.template, run.name.startswith("Levenshtein")) == ("fake-metric", "", True), run.name
        assert session.scalar(select(ScoreRun.id).where(ScoreRun.kind == "fake-metric")) == run_id
    metric = load_metric(queue.run_config(engine, run_id), "cpu", None)  # the loader the record names
    assert metric.score(["a b"], ["a c"])[0] == [pytest.approx(BASELINES["levenshtein"].function(["a b"], ["a c"])[0])]
    assert not queue.uses_model("fake-metric", None)


def test_the_scoring_page_offers_the_registry_judges(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("PLUIE_DB_URL", url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    st.cache_resource.clear()
    init_db(url).dispose()
    fake = RunKind("llm-fake", "LLM-Fake", PAIRS, "judge", needs_model=True, default_template="yes-no",
                   judge="yes-no", natural_threshold=0.5)
    monkeypatch.setitem(RUN_KINDS, "llm-fake", fake)
    page = AppTest.from_file(str(REPO / "pages" / "scoring.py"), default_timeout=60)
    page.run()
    assert not page.exception, page.exception
    radio = page.radio(key="judge_kind")
    expected = [k.name for k in RUN_KINDS.values() if k.judge is not None]
    assert radio.options == [k.title for k in RUN_KINDS.values() if k.judge is not None]
    assert expected == ["llm-yes-no", "llm-likert", "llm-choice", "llm-fake"]
    assert "New LLM judge run (LLM-Yes/No, LLM-Likert, LLM-choice, LLM-Fake)" in [e.label for e in page.expander]
    st.cache_resource.clear()
