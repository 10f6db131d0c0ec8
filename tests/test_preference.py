"""Preference agreement (*-PLUIE section 3.2) on a hand-made preference file whose answers are worked
out below by hand, ties included; the import into a real SQLite store (pairs scored by ordinary
runs, preferences linking them, all or nothing); and the Preferences page through AppTest."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db.analysis import add_score_run, pairs_frame
from db.datasets import ImportRejected
from db.engine import read_session
from db.evaluation_reads import preferences_frame
from db.models import Dataset, Pair, Preference, WorkItem
from db.preferences import import_preference_file, import_preferences
from db.runs import create_run
from pluie_core.evaluation.preference import (
    load_preferences,
    metric_decisions,
    preference_agreement,
    tie_calibration,
)
from pluie_core.io import PairFileError
from tests.paths import DATASETS, REPO

# human choice, score of (source, A), score of (source, B); worked out by hand:
#   differences A - B: .8, .1, -.5, .1, 0, -.03, .05, .02
#   ε = 0:    right on items 1 2 3 5 8            -> 5/8
#   ε = .02:  item 8 becomes a (wrong) tie         -> 4/8
#   ε = .03:  item 6 becomes a (right) tie         -> 5/8
#   ε = .05:  item 7 becomes a (right) tie         -> 6/8   <- the best
#   ε = .1:   item 2 becomes a (wrong) tie         -> 5/8, and worse beyond
ITEMS = [
    ("A", 0.9, 0.1),
    ("A", 0.6, 0.5),
    ("B", 0.2, 0.7),
    ("B", 0.5, 0.4),
    ("tie", 0.5, 0.5),
    ("tie", 0.30, 0.33),
    ("tie", 0.8, 0.75),
    ("A", 0.7, 0.68),
]
HUMAN = [h for h, _, _ in ITEMS]
SCORE_A = np.array([a for _, a, _ in ITEMS])
SCORE_B = np.array([b for _, _, b in ITEMS])
# at ε = .05: A A B A tie tie tie tie; agreement 6/8; marginals human A3 B2 tie3, metric A3 B1 tie4
KAPPA = (6 / 8 - (3 * 3 + 2 * 1 + 3 * 4) / 64) / (1 - (3 * 3 + 2 * 1 + 3 * 4) / 64)  # 25/41


def preference_csv(path, preferred=None):
    rows = [
        {
            "source": f"Source sentence {i}.",
            "candidate_a": f"Candidate A of {i}.",
            "candidate_b": f"Candidate B of {i}.",
            "preferred": h,
            "system_a": "sysA",
            "system_b": "sysB",
        }
        for i, h in enumerate(preferred or HUMAN, start=1)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_tie_calibration_finds_the_hand_worked_epsilon():
    found = tie_calibration(HUMAN, SCORE_A, SCORE_B)
    assert found["epsilon"] == pytest.approx(0.05)
    assert found["accuracy"] == 6 / 8 and found["accuracy_no_ties"] == 5 / 8 and found["n"] == 8
    assert list(metric_decisions(SCORE_A, SCORE_B, epsilon=0.0)) == ["A", "A", "B", "A", "tie", "B", "A", "A"]


def test_agreement_figures_match_hand_and_library_values():
    found = preference_agreement(HUMAN, SCORE_A, SCORE_B)
    decisions = ["A", "A", "B", "A", "tie", "tie", "tie", "tie"]
    assert list(metric_decisions(SCORE_A, SCORE_B, epsilon=found["epsilon"])) == decisions
    assert found["kappa"] == pytest.approx(KAPPA) == pytest.approx(cohen_kappa_score(HUMAN, decisions))
    table = pd.crosstab(pd.Series(HUMAN), pd.Series(decisions)).to_numpy()
    chi2 = chi2_contingency(table, correction=False)[0]
    assert found["cramers_v"] == pytest.approx(np.sqrt(chi2 / (8 * (min(table.shape) - 1))))
    assert found["metric_ties"] == 4 and found["accuracy_calibrated"] == 0.75


def test_a_distance_prefers_the_lower_score():
    as_distance = preference_agreement(HUMAN, -SCORE_A, -SCORE_B, higher_is_similar=False)
    assert as_distance == preference_agreement(HUMAN, SCORE_A, SCORE_B)


def test_a_metric_that_never_ties_on_a_tie_free_set():
    found = preference_agreement(["A", "B", "A"], [0.9, 0.1, 0.8], [0.2, 0.5, 0.3])
    assert found["accuracy"] == found["accuracy_calibrated"] == 1.0 and found["epsilon"] == 0.0
    assert found["kappa"] == 1.0


def test_load_preferences_reads_columns_and_parareval(tmp_path):
    items = load_preferences(preference_csv(tmp_path / "prefs.csv"))
    assert items["preferred"].tolist() == HUMAN and items["system_a"].eq("sysA").all()
    parareval = load_preferences(DATASETS / "parareval" / "parareval_second_annotation.jsonl")
    assert len(parareval) == 129 and set(parareval["preferred"]) == {"A", "B", "tie"}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"preferred": ["maybe"] * 8}, "Row 1: the preference must be A, B or tie; found 'maybe'."),
        ({"candidate_b": [""] + ["x"] * 7}, "Row 1: the candidate b is empty."),
    ],
)
def test_bad_preference_files_get_one_sentence(tmp_path, change, message):
    frame = pd.read_csv(preference_csv(tmp_path / "p.csv"), keep_default_na=False)
    for column, values in change.items():
        frame[column] = values
    frame.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(PairFileError) as error:
        load_preferences(tmp_path / "bad.csv")
    assert str(error.value) == message


def _score_by_text(engine, items):
    """{pair_id: score} from the hand-made scores, looked up by the pair's text."""
    pairs = pairs_frame(engine, texts=True)
    value = {}
    for i, (_, a, b) in enumerate(items, start=1):
        value[(f"Source sentence {i}.", f"Candidate A of {i}.")] = a
        value[(f"Source sentence {i}.", f"Candidate B of {i}.")] = b
    return {pid: value[(row.source, row.hypothesis)] for pid, row in pairs.iterrows()}


@pytest.fixture
def preference_store(engine, tmp_path):
    run = create_run(engine, model="chrf", kind="baseline", name="chrF queued")
    done = import_preference_file(engine, preference_csv(tmp_path / "prefs.csv"), "hand-made")
    assert (done.n_preferences, done.n_pairs, done.n_queued) == (8, 16, 16)
    add_score_run(engine, "hand score", _score_by_text(engine, ITEMS))
    add_score_run(
        engine, "hand distance", {k: -v for k, v in _score_by_text(engine, ITEMS).items()}, higher_is_similar=False
    )
    return run


def test_import_links_ordinary_pairs_queued_for_the_ordinary_runs(engine, preference_store):
    links = preferences_frame(engine)
    assert links["preferred"].tolist() == HUMAN
    pairs = pairs_frame(engine, texts=True)
    assert (pairs.loc[links["pair_a_id"], "hypothesis"].str.startswith("Candidate A")).all()
    assert (pairs.loc[links["pair_b_id"], "hypothesis"].str.startswith("Candidate B")).all()
    with read_session(engine) as session:
        assert session.scalar(select(func.count(WorkItem.id)).where(WorkItem.run_id == preference_store)) == 16
        meta = session.scalar(select(Pair.meta).where(Pair.id == int(links["pair_b_id"].iloc[0])))
    assert meta["candidate"] == "B" and meta["system"] == "sysB"


def test_a_refused_import_leaves_the_store_as_it_was(engine, tmp_path):
    import_preference_file(engine, preference_csv(tmp_path / "p.csv"), "first")
    items = load_preferences(tmp_path / "p.csv")
    with pytest.raises(ImportRejected, match="already exists"):
        import_preferences(engine, "first", items)
    items.loc[3, "preferred"] = "C"
    with pytest.raises(ImportRejected, match="Item 4"):
        import_preferences(engine, "second", items)
    with read_session(engine) as session:
        assert session.scalar(select(func.count(Dataset.id))) == 1
        assert session.scalar(select(func.count(Preference.id))) == 8
        assert session.scalar(select(func.count(Pair.id))) == 16


@pytest.fixture
def open_preferences(db_url, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")

    def open_():
        at = AppTest.from_file(str(REPO / "pages" / "preferences.py"), default_timeout=60)
        at.run()
        assert not at.exception, at.exception
        return at

    return open_


def test_preferences_page_invites_an_import_when_empty(engine, open_preferences):
    at = open_preferences()
    assert "No preference data yet" in " ".join(str(i.value) for i in at.info)


def test_preferences_page_shows_the_hand_worked_figures(engine, preference_store, open_preferences):
    at = open_preferences()
    at.multiselect(key="preference_runs").set_value(["hand distance", "hand score"])
    at.run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value.set_index("metric")
    assert "8 human choices: A 38%, B 25%, tie 38%" in " ".join(str(c.value) for c in at.caption)
    for name in ("hand score", "hand distance"):
        row = table.loc[name]
        assert row["n"] == 8 and row["accuracy"] == 5 / 8 and row["accuracy_calibrated"] == 6 / 8
        assert row["epsilon"] == pytest.approx(0.05) and row["kappa"] == pytest.approx(KAPPA)
    # the queued chrF run has no score yet: it is not offered (runs with scores only)
    assert "chrF queued" not in at.multiselect(key="preference_runs").options


def _upload_and_import(at, path):
    at.file_uploader(key="preference_upload").set_value((path.name, path.read_bytes(), "text/csv"))
    at.run()
    at.button(key="preference_import").click().run()
    assert not at.exception, at.exception
    return at


def test_preferences_page_imports_a_file(engine, open_preferences, tmp_path):
    at = _upload_and_import(open_preferences(), preference_csv(tmp_path / "mine.csv"))
    assert [s.value for s in at.success] == ["Imported 8 preferences as 16 pairs in 'mine'; 0 scores queued."]
    assert preferences_frame(engine)["preferred"].tolist() == HUMAN


def test_preferences_page_refuses_a_bad_file_in_one_sentence(engine, open_preferences, tmp_path):
    path = preference_csv(tmp_path / "bad.csv", preferred=["A", "B", "maybe"])
    at = _upload_and_import(open_preferences(), path)
    assert [e.value for e in at.error] == ["Row 3: the preference must be A, B or tie; found 'maybe'."]
    with read_session(engine) as session:
        assert session.scalar(select(func.count(Dataset.id))) == 0


@pytest.mark.parametrize("name", ["correlation", "preferences"])
def test_the_new_pages_refuse_visitors_on_their_own(name, engine, db_url, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "s3cret")
    page = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=60).run()
    assert [t.label for t in page.text_input] == ["Account", "Password"]  # the sign-in form, and nothing else
    assert not page.dataframe and not page.file_uploader


def test_import_and_reads_give_the_same_answer_on_every_store(store_url, tmp_path):
    """The preference import and the Correlation page's reads (metadata through the database's JSON
    extraction, label means) on SQLite and PostgreSQL."""
    from db import init_db
    from db.analysis import add_labels
    from db.evaluation_reads import label_means, meta_column, meta_keys, preference_datasets

    engine = init_db(store_url)
    try:
        done = import_preference_file(engine, preference_csv(tmp_path / "prefs.csv"), "hand-made")
        links = preferences_frame(engine)
        assert links["preferred"].tolist() == HUMAN and done.n_pairs == 16
        assert preference_datasets(engine)["n_preferences"].tolist() == [8]
        assert meta_keys(engine) == ["candidate", "system"]
        systems = meta_column(engine, "system")
        assert systems.reindex(links["pair_a_id"]).eq("sysA").all()
        assert systems.reindex(links["pair_b_id"]).eq("sysB").all()
        first = int(links["pair_a_id"].iloc[0])
        add_labels(engine, pd.DataFrame({"pair_id": [first] * 3, "annotator": ["p", "q", "r"], "level": [1, 3, 4]}))
        assert label_means(engine).to_dict() == {first: 2.0}  # Don't know (4) left out
    finally:
        engine.dispose()


def test_preference_kappa_is_sklearns_on_random_choices_and_nan_where_it_is_undefined():
    """κ of the choices comes from a confusion matrix of their codes (sklearn validated 500,000 strings a
    run): it must be cohen_kappa_score with labels A, B, tie, NaN where sklearn's is undefined."""
    import warnings

    from pluie_core.evaluation.preference import CHOICES, _kappa

    rng = np.random.default_rng(0)
    undefined = 0
    for _ in range(300):
        n, kinds = int(rng.integers(1, 60)), int(rng.integers(1, 4))
        human = rng.choice(CHOICES[:kinds], n)
        metric = np.where(rng.random(n) < 0.5, human, rng.choice(CHOICES[:kinds], n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = cohen_kappa_score(human.astype(str), metric.astype(str), labels=list(CHOICES))
        if np.isnan(expected):
            assert np.isnan(_kappa(human, metric))
            undefined += 1
        else:
            assert _kappa(human, metric) == pytest.approx(expected, abs=1e-12)
    assert 10 < undefined < 200  # both kinds of case were met


def test_the_preferences_pages_first_view_is_read_ahead(engine, preference_store, open_preferences, monkeypatch):
    """The read-ahead computes the Preferences page's default table (every preference dataset, every
    run): the page then draws it without calibrating any run again."""
    from pluie_core import analysis_figures
    from ui.views import preferences_cache, store_reads
    from ui.views.read_ahead import read_ahead

    for cached in (
        preferences_cache.preference_datasets,
        preferences_cache.preferences,
        preferences_cache.preference_agreement,
        store_reads.choices,
    ):
        cached.clear()
    calibrated = []
    agreement_table = analysis_figures.agreement_table
    monkeypatch.setattr(
        analysis_figures, "agreement_table", lambda *args: calibrated.append(tuple(args[4])) or agreement_table(*args)
    )
    read_ahead().join(60)
    assert calibrated == [("hand distance", "hand score")]
    at = open_preferences()
    assert calibrated == [("hand distance", "hand score")]  # nothing computed again
    assert at.dataframe[0].value.set_index("metric").loc["hand score", "accuracy_calibrated"] == 6 / 8
    at.multiselect(key="preference_runs").set_value(["hand score"]).run()
    assert not at.exception and calibrated[-1] == ("hand score",)  # another choice is computed when asked
