"""Review and adjudication (issue 11, item 1) on real stores: the queue's order, the decision kept
apart from the labels, the export's final columns, all-or-nothing writes, a stale reviewer and two
reviewers writing at the same moment (SQLite and PostgreSQL), and the page through AppTest."""

from __future__ import annotations

import json
import threading

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from db import init_db
from db.analysis import add_score_run
from db.datasets import import_pairs
from db.engine import read_session
from db.export import export_frame
from db.models import Adjudication, Label
from db.review import ReviewError, StaleReviewError, adjudicate, review_item, review_queue
from pluie_core.labels import LEVELS, binarise, majority_level
from tests.paths import REPO

# (external id, levels of ann / bob / cy / dee; None = not labelled, 4 = Don't know)
PAIRS = [
    ("agree", (3, 3, None, None)),  # no disagreement
    ("same-side", (2, 3, 3, None)),  # disagree, one side, spread 1
    ("cross-1", (1, 2, None, 4)),  # across the boundary, spread 1, tie across -> no majority
    ("cross-3", (0, 3, 3, None)),  # across, spread 3, minority 1/3
    ("cross-2", (0, 2, 2, 1)),  # across, spread 2, minority 1/2
    ("dont-know", (4, 2, None, None)),  # Don't know aside, one level only: no disagreement
    ("wide-same", (0, 1, None, None)),  # one side, spread 1
    ("alone", (None, None, None, None)),
]
EXPECTED_ORDER = ["cross-3", "cross-2", "cross-1", "same-side", "wide-same"]


def build(engine):
    frame = pd.DataFrame(
        {
            "external_id": [p[0] for p in PAIRS],
            "source": [f"The cat {p[0]} drinks water." for p in PAIRS],
            "hypothesis": [f"The dog {p[0]} drinks milk." for p in PAIRS],
            "label": [1, 1, 0, 1, 0, 1, 0, None],
            **{f"annotator:{name}": [p[1][i] for p in PAIRS] for i, name in enumerate(["ann", "bob", "cy", "dee"])},
        }
    )
    import_pairs(engine, "toy", frame, annotator_scale="levels")
    ids = pair_ids(engine)
    add_score_run(engine, "lev", {ids[name]: 0.1 * i for i, name in enumerate(ids)})
    return ids


def pair_ids(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return dict(conn.exec_driver_sql("SELECT external_id, id FROM pairs ORDER BY id").all())


def labels_snapshot(engine):
    with read_session(engine) as session:
        return sorted(
            session.execute(sa.select(Label.pair_id, Label.annotator_id, Label.level, Label.updated_at)).all()
        )


def test_the_queue_puts_pairs_across_the_boundary_first_then_by_spread(engine):
    ids = build(engine)
    names = {v: k for k, v in ids.items()}
    queue = review_queue(engine, show="all")
    assert [names[i] for i in queue.index] == EXPECTED_ORDER
    # each figure recomputed from the test's own table
    for external, levels in PAIRS:
        if external not in EXPECTED_ORDER:
            continue
        row = queue.loc[ids[external]]
        ordinal = [x for x in levels if x is not None and x != 4]
        assert row["spread"] == max(ordinal) - min(ordinal)
        assert row["crosses_boundary"] == (len({binarise(x) for x in ordinal}) == 2)
        assert row["n_labels"] == sum(x is not None for x in levels)
        assert row["n_dont_know"] == sum(x == 4 for x in levels)
        expected = majority_level(levels)
        assert pd.isna(row["majority_level"]) if expected is None else row["majority_level"] == expected
    assert review_queue(engine, show="adjudicated").empty
    item = review_item(engine, ids["cross-2"])
    assert item["labels"]["annotator"].tolist() == ["ann", "bob", "cy", "dee"]
    assert item["labels"]["level"].tolist() == [0, 2, 2, 1]
    assert item["scores"]["run"].tolist() == ["lev"] and item["revision"] == 0 and item["adjudication"] is None


def test_a_decision_is_kept_apart_from_the_labels_and_becomes_the_final_label(engine):
    ids = build(engine)
    before = labels_snapshot(engine)
    assert adjudicate(engine, ids["cross-1"], 2, "Lena", "the dog is the cat's paraphrase here") == 1
    assert labels_snapshot(engine) == before  # never touches an annotator's label

    pending = review_queue(engine)  # the decided pair leaves the pending queue, the order holds
    assert ids["cross-1"] not in pending.index and len(pending) == len(EXPECTED_ORDER) - 1
    decided = review_queue(engine, show="adjudicated")
    assert decided.index.tolist() == [ids["cross-1"]]
    assert (decided.iloc[0]["final_level"], decided.iloc[0]["reviewer"], decided.iloc[0]["revision"]) == (2, "Lena", 1)

    out = export_frame(engine).set_index("external_id")
    for external, levels in PAIRS:  # every final column against the rule, computed here
        row = out.loc[external]
        if external == "cross-1":
            assert (row["final_level"], row["final_label"], row["final_binary"]) == (2, LEVELS[2], 1)
            assert (row["final_source"], row["adjudicated_by"]) == ("adjudicated", "Lena")
            assert row["adjudication_note"] == "the dog is the cat's paraphrase here"
            assert pd.isna(row["majority_level"])  # the majority rule still says what it says
            continue
        expected = majority_level(levels)
        if expected is None:
            assert pd.isna(row["final_level"]) and row["final_source"] == "none" and row["final_label"] == ""
        else:
            assert (row["final_level"], row["final_source"], row["final_label"]) == (
                expected,
                "majority",
                LEVELS[expected],
            )
            assert row["final_binary"] == binarise(expected)
        assert pd.isna(row["adjudicated_by"]) and pd.isna(row["adjudicated_at"])

    # a second decision is a new revision, the first stays in the history; withdrawing goes back to the majority
    assert adjudicate(engine, ids["cross-1"], 1, "Marc", seen_revision=1) == 2
    assert adjudicate(engine, ids["cross-1"], None, "Marc", "back to the annotators", seen_revision=2) == 3
    history = review_item(engine, ids["cross-1"])["history"]
    assert history["decision"].tolist() == ["withdrawn", LEVELS[1], LEVELS[2]]
    assert history["reviewer"].tolist() == ["Marc", "Marc", "Lena"]
    row = export_frame(engine).set_index("external_id").loc["cross-1"]
    assert row["final_source"] == "none" and pd.isna(row["final_level"])
    assert ids["cross-1"] in review_queue(engine).index  # pending again
    assert labels_snapshot(engine) == before


def test_refused_decisions_leave_the_store_as_it_was(engine):
    ids = build(engine)
    adjudicate(engine, ids["cross-3"], 3, "Lena")
    with engine.connect() as conn:
        rows_before = conn.exec_driver_sql("SELECT * FROM adjudications").all()
    cases = [
        (dict(pair_id=ids["cross-2"], level=4, reviewer="Lena"), "final level is one of"),
        (dict(pair_id=ids["cross-2"], level=7, reviewer="Lena"), "final level is one of"),
        (dict(pair_id=ids["cross-2"], level=2, reviewer="  "), "Give your name"),
        (dict(pair_id=ids["cross-2"], level=2, reviewer="Lena", note="x" * 2001), "at most 2,000"),
        (dict(pair_id=99999, level=2, reviewer="Lena"), "no longer exists"),
        (dict(pair_id=ids["cross-2"], level=None, reviewer="Lena"), "no final level to withdraw"),
        (
            dict(pair_id=ids["cross-3"], level=1, reviewer="Marc", seen_revision=0),
            "Lena decided on this pair meanwhile",
        ),
    ]
    for kwargs, message in cases:
        with pytest.raises(ReviewError, match=message):
            adjudicate(engine, **kwargs)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT * FROM adjudications").all() == rows_before
    with pytest.raises(StaleReviewError):  # a stale reviewer: their page showed no decision
        adjudicate(engine, ids["cross-3"], 0, "Marc")
    assert export_frame(engine).set_index("external_id").loc["cross-3", "final_level"] == 3


def test_two_reviewers_at_the_same_moment_never_overwrite_each_other(store_url):
    """Two reviewers, each with their own connection, decide on the same pairs at once, both over the
    state their page showed: for each pair exactly one decision is stored, the other is refused."""
    engine = init_db(store_url)
    ids = build(engine)
    other = init_db(store_url)
    rounds = [ids[name] for name in EXPECTED_ORDER]
    outcomes = {"Lena": [], "Marc": []}

    def reviewer(name, eng, level, barrier):
        for pair_id in rounds:
            barrier.wait(timeout=30)
            try:
                adjudicate(eng, pair_id, level, name, f"{name}'s call", seen_revision=0)
                outcomes[name].append((pair_id, "saved"))
            except StaleReviewError:
                outcomes[name].append((pair_id, "refused"))

    barrier = threading.Barrier(2)
    threads = [
        threading.Thread(target=reviewer, args=("Lena", engine, 3, barrier)),
        threading.Thread(target=reviewer, args=("Marc", other, 0, barrier)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    with read_session(engine) as session:
        stored = session.execute(
            sa.select(Adjudication.pair_id, Adjudication.revision, Adjudication.reviewer, Adjudication.level)
        ).all()
    assert sorted(p for p, *_ in stored) == sorted(rounds) and {r for _, r, *_ in stored} == {1}
    final = export_frame(engine).set_index("external_id")
    for pair_id in rounds:
        results = {name: dict(outcomes[name])[pair_id] for name in outcomes}
        assert sorted(results.values()) == ["refused", "saved"]
        winner = next(name for name, result in results.items() if result == "saved")
        row = next(s for s in stored if s[0] == pair_id)
        assert row[2] == winner and row[3] == (3 if winner == "Lena" else 0)
        external = next(k for k, v in ids.items() if v == pair_id)
        assert final.loc[external, "adjudicated_by"] == winner
    engine.dispose()
    other.dispose()


@pytest.fixture
def review_page(db_url, engine, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    ids = build(engine)
    at = AppTest.from_file(str(REPO / "pages" / "review.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at, ids


def run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def shown_pair(at) -> str:
    return next(str(c.value) for c in at.caption if str(c.value).startswith("Pair "))


def test_the_page_walks_the_queue_and_records_the_decision(review_page, engine):
    at, ids = review_page
    assert f"Pair {ids['cross-3']} ·" in shown_pair(at)  # the queue's first pair
    assert "across the paraphrase boundary" in shown_pair(at) and "spread 3" in shown_pair(at)
    assert at.dataframe[0].value["annotator"].tolist() == ["ann", "bob", "cy"]
    assert at.dataframe[1].value["run"].tolist() == ["lev"]
    # the columns as a person reads them, not the store's names; the run's name in a wide column (not cut)
    labels_config, scores_config = (json.loads(at.dataframe[i].proto.columns) for i in (0, 1))
    assert labels_config["level_name"]["label"] == "answer" and labels_config["english_level"]["label"] == "English"
    assert scores_config["run"]["width"] == "large" and scores_config["value"]["label"] == "score"
    assert [b.label for b in at.button][:4] == list(LEVELS[:4])

    at.button(key=f"final-3-{ids['cross-3']}").click()  # no reviewer name yet
    run(at)
    assert "Give your name" in at.error[0].value
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM adjudications").scalar() == 0

    at.sidebar.text_input(key="reviewer").set_value("Lena")
    note = at.text_input(key=f"note-{ids['cross-3']}")
    # keys typed in the note go into it: the page says how to leave the box so that 1-4 decide again
    assert "press Tab (or click outside the box) before the keys 1–4" in note.placeholder
    assert any("press Tab or click outside it" in str(c.value) for c in at.caption)
    note.set_value("two of three say same meaning")
    run(at)
    at.button(key=f"final-3-{ids['cross-3']}").click()
    run(at)
    assert "final level “Same meaning”" in at.success[0].value
    assert f"Pair {ids['cross-2']} ·" in shown_pair(at)  # the next pending pair
    row = export_frame(engine).set_index("external_id").loc["cross-3"]
    assert (row["final_level"], row["final_source"], row["adjudicated_by"]) == (3, "adjudicated", "Lena")
    assert row["adjudication_note"] == "two of three say same meaning"

    # a stale page: another reviewer decides on the pair shown here; this page's decision is refused
    adjudicate(engine, ids["cross-2"], 0, "Marc", "no")
    at.button(key=f"final-2-{ids['cross-2']}").click()
    run(at)
    assert "Marc decided on this pair meanwhile" in at.error[0].value
    with engine.connect() as conn:
        assert conn.exec_driver_sql(
            "SELECT reviewer, level FROM adjudications WHERE pair_id = ?", (ids["cross-2"],)
        ).all() == [("Marc", 0)]

    at.sidebar.radio(key="review-show").set_value("adjudicated")
    run(at)
    assert f"Pair {ids['cross-3']} ·" in shown_pair(at)
    assert any("decided by Lena" in str(m.value) for m in at.markdown)
    at.button(key=f"withdraw-{ids['cross-3']}").click()
    run(at)
    assert "withdrawn" in at.success[0].value
    assert export_frame(engine).set_index("external_id").loc["cross-3", "final_source"] == "majority"


def test_the_vectorised_majority_is_the_majority_rule():
    import numpy as np

    from pluie_core.review import majority_levels

    rng = np.random.default_rng(1)
    counts = rng.integers(0, 3, (3000, 4))
    counts[:20] = 0
    expected = [majority_level([v for v in range(4) for _ in range(row[v])]) for row in counts]
    assert np.array_equal(
        majority_levels(counts), np.array([np.nan if e is None else e for e in expected], float), equal_nan=True
    )


def test_the_page_says_when_there_is_nothing_to_review(db_url, engine, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    frame = pd.DataFrame(
        {"source": ["a", "b"], "hypothesis": ["c", "d"], "annotator:ann": [3, 0], "annotator:bob": [3, 0]}
    )
    import_pairs(engine, "agreed", frame, annotator_scale="levels")
    at = run(AppTest.from_file(str(REPO / "pages" / "review.py"), default_timeout=60))
    assert "no pair of these datasets has five-level labels that disagree" in at.info[0].value
    assert not at.button


def test_the_page_orders_the_queue_by_a_methods_uncertainty(review_page, engine):
    at, ids = review_page
    assert f"Pair {ids['cross-3']} ·" in shown_pair(at)  # review order by default
    at.sidebar.selectbox(key="review-order").set_value("majority")
    run(at)
    # vote shares: cross-1, cross-2 and wide-same split evenly (uncertainty 0.5), the lowest id first
    assert f"Pair {ids['cross-1']} ·" in shown_pair(at) and "uncertainty 0.50" in shown_pair(at)
    queue = review_queue(engine, aggregation="majority")
    assert [int(i) for i in queue.index] == sorted(
        [ids[k] for k in EXPECTED_ORDER], key=lambda p: (-queue.at[p, "uncertainty"], p)
    )


def test_queue_reads_flags_and_levels_of_the_chosen_datasets_only_training_aside(engine):
    """Issue 20: the queue reads the labels' pair and level and the flagged rows in one pass each;
    the chosen datasets, flags and training answers count as before."""
    ids = build(engine)
    other = pd.DataFrame(
        {
            "external_id": ["o1", "o2"],
            "source": ["A b.", "C d."],
            "hypothesis": ["B a.", "D c."],
            "annotator:ann": [0, 1],
            "annotator:bob": [3, 1],
        }
    )
    import_pairs(engine, "other", other, annotator_scale="levels")
    others = [pair_ids(engine)[name] for name in ("o1", "o2")]
    with engine.begin() as conn:
        flag = sa.update(Label).where(Label.pair_id.in_([ids["agree"], others[1]])).values(flagged=True)
        conn.execute(flag)
        # a training answer neither disagrees nor flags
        conn.execute(sa.update(Label).where(Label.pair_id == ids["wide-same"]).values(is_training=True, flagged=True))
    toy = review_queue(engine, [1], "all")
    assert list(toy.index) == [ids["agree"], *[ids[n] for n in EXPECTED_ORDER if n != "wide-same"]]
    assert toy.loc[ids["agree"], "n_flags"] == 2
    both = review_queue(engine, None, "all")
    assert set(both.index) == set(toy.index) | set(others)
    assert both.loc[others[1], "n_flags"] == 2 and both.loc[others[0], "n_flags"] == 0
    assert list(review_queue(engine, [2], "flagged").index) == [others[1]]
