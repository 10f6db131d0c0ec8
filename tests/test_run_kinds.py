"""One record per run kind (pluie_core.run_kinds.RUN_KINDS), read by every layer: the store accepts
exactly its kinds, the worker builds each kind's metric through the record's loader, the Scoring page
offers the judges it lists, and a record added to it is accepted by create_run."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import init_db, queue
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
    return create_run(
        engine, kind=kind, name=f"{kind} run", model="levenshtein" if RUN_KINDS[kind].baseline else model, device="cpu"
    )


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
    assert (
        queue.CHOICE_RUN_KINDS
        == analysis.PREFERENCE_ONLY_KINDS
        == tuple(k.name for k in RUN_KINDS.values() if k.compares == PREFERENCE_ITEMS)
        == ("llm-choice",)
    )
    assert set(judges.JUDGES_BY_RUN_KIND) == {k.name for k in RUN_KINDS.values() if k.judge is not None}
    for record in RUN_KINDS.values():
        assert analysis.natural_threshold(record.name) == record.natural_threshold
        assert queue.uses_model(record.name, None) == record.needs_model
        assert record.template == (record.default_template is not None)
        judge = judges.judge_for_run_kind(record.name)
        if judge is not None:  # the judges' registry takes its shared facts from the record
            assert (judge.kind, judge.title, judge.default_template, judge.natural_threshold) == (
                record.judge,
                record.title,
                record.default_template,
                record.natural_threshold,
            )
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
            assert (
                values == [pytest.approx(BASELINES["levenshtein"].function([source], [candidate])[0])]
                and details is None
            )
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
    fake = RunKind(
        "llm-fake",
        "LLM-Fake",
        PAIRS,
        "judge",
        needs_model=True,
        default_template="yes-no",
        judge="yes-no",
        natural_threshold=0.5,
    )
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


# --------------------------------------------------------------------------- one name, one registry
# the code that reads run kinds: every layer but the tests (their data names kinds) and run_kinds.py itself
CODE = ("pluie_core", "db", "api", "pages", "lab", "worker.py", "worker_launch.py", "app.py", "server.py")


def _kind_literals(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, what) of every run kind named by a string where the code compares, passes or defaults a kind:
    ``x == "pluie"``, ``kind in ("baseline", ...)``, ``f(kind="pluie")``, ``def f(kind="pluie")``, ``kind: str = "pluie"``."""
    import ast

    def named(node) -> bool:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(e) for e in node.elts)
        return isinstance(node, ast.Constant) and node.value in names

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(named(n) for n in (node.left, *node.comparators)):
            # a record's loader ("pluie", "baseline", "judge": worker.LOADERS' keys) is a name of its own
            if not any(isinstance(n, ast.Attribute) and n.attr == "loader" for n in (node.left, *node.comparators)):
                found.append((node.lineno, "compared"))
        elif isinstance(node, ast.keyword) and node.arg == "kind" and named(node.value):
            found.append((node.value.lineno, "passed as kind="))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = arguments.posonlyargs + arguments.args
            pairs = list(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults))
            pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
            found += [(d.lineno, f"default of {a.arg}") for a, d in pairs if a.arg == "kind" and named(d)]
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "kind"
            and node.value is not None
            and named(node.value)
        ):
            found.append((node.lineno, "default of kind"))
    return sorted(found)


def test_the_code_names_run_kinds_through_the_registry():
    """One RUN_KINDS: pluie_core.judges' registry of judges by run kind has a name of its own, and the code
    names a kind through pluie_core.run_kinds (its constants or records), never by a string of its own."""
    from pluie_core import run_kinds

    assert judges.RUN_KINDS is run_kinds.RUN_KINDS  # imported, not a second dict of the same name
    assert set(judges.JUDGES_BY_RUN_KIND) == set(run_kinds.judge_kinds())
    constants = (run_kinds.PLUIE, run_kinds.BASELINE, run_kinds.LLM_YES_NO, run_kinds.LLM_LIKERT, run_kinds.LLM_CHOICE)
    assert list(constants) == list(RUN_KINDS)
    names = frozenset(RUN_KINDS)
    found = []
    for entry in CODE:
        paths = sorted((REPO / entry).rglob("*.py")) if (REPO / entry).is_dir() else [REPO / entry]
        for path in paths:
            if path.is_file() and path != REPO / "pluie_core" / "run_kinds.py":
                found += [
                    f"{path.relative_to(REPO)}:{line}: {what}"
                    for line, what in _kind_literals(path.read_text(encoding="utf-8"), names)
                ]
    assert not found, "run kinds named by a string (use pluie_core.run_kinds' constants):\n" + "\n".join(found)


def test_a_kind_named_by_a_string_is_found():
    names = frozenset(RUN_KINDS)
    planted = (
        'def f(run, kind="pluie"):\n'
        '    if run.kind == "llm-likert" or kind in ("baseline",):\n'
        '        return g(kind="llm-choice")\n'
        "class Body:\n"
        '    kind: str = "llm-yes-no"\n'
        'column = "pluie"\n'  # a column name, not a kind compared: not found
        'loaded = record.loader == "pluie"\n'
    )  # a loader's name: not found
    assert _kind_literals(planted, names) == [
        (1, "default of kind"),
        (2, "compared"),
        (2, "compared"),
        (3, "passed as kind="),
        (5, "default of kind"),
    ]
