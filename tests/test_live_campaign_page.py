"""The live campaign page (AppTest, real SQLite file): figures and per-annotator rows as the store has
them, the quality settings and gold pairs set through it, user errors as sentences; and a gold check is
invisible on the annotator's page."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.engine import read_session
from db.models import GoldPair
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_pages import APP, store, texts  # noqa: F401 (store: the pages' store fixture)


def live_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception
    return at


def test_live_page_shows_the_store_and_sets_the_checks(store):
    ds, pairs = make_dataset(store, "demo", numbered_pairs(40))
    gds, gold_ids = make_dataset(store, "checks", numbered_pairs(6, "Check "), label_kind="binary", gold=[1, 0] * 3)
    # the checks: a dataset of the campaign's own (its checks come from its datasets); marked gold, they leave the queue
    cid = camp.create_campaign(store, "Pilot", [ds, gds], quota=6, overlap=2, n_training=1)
    people = [annotators.create_annotator(store, cid, name)[0] for name in ("alice", "bob")]
    annotators.set_annotator_profile(store, people[0], "Alice A.", "native")

    at = live_page()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Labels"] == "0" and metrics["α ordinal so far"] == "—"

    # the settings form: a share of checks, a streak length
    numbers = {n.label: n for n in at.number_input}
    numbers["Share of gold checks"].set_value(0.25)
    numbers["Streak length"].set_value(3)
    next(b for b in at.button if b.label == "Save the quality settings").click().run()
    assert not at.exception and "Saved" in texts(at)
    campaign = camp.get_campaign(store, cid)
    assert (campaign.gold_rate, campaign.streak_length) == (0.25, 3)

    # gold pairs by id: a bad line is a sentence and nothing is marked; then from the dataset's gold labels
    next(t for t in at.text_area if t.label.startswith("Or mark pairs by id")).input(
        f"{pairs[-1]}, 3\npair:{pairs[-2]}, 9"
    )
    next(b for b in at.button if b.label == "Mark as gold").click().run()
    assert not at.exception and "not a level of the scale" in texts(at)
    with read_session(store) as s:
        assert s.query(GoldPair).count() == 0
    dataset = next(s for s in at.selectbox if s.label.startswith("Take gold pairs"))
    dataset.set_value(next(d for d in camp.dataset_choices(store) if d[1] == "checks"))
    next(n for n in at.number_input if n.label.startswith("How many")).set_value(0)
    # the form shows the keys first (issue 53): nothing is added until its own button
    next(b for b in at.button if b.label == "Show the keys these settings give").click().run()
    assert not at.exception and "6 keys from “checks”" in texts(at) and "Gold pairs: 0" in texts(at)
    next(b for b in at.button if b.label == "Add these 6 gold pairs").click().run()
    # what was taken and which pairs left the queue (issue 53: they left it silently before)
    assert not at.exception and (
        f"6 gold pairs added; 6 of them left the queue (pairs {', '.join(map(str, gold_ids))}), "
        "served as checks only: it now holds 39 pairs."
    ) in texts(at)
    # the button is spent: one click added once, and a rerun adds nothing
    assert not [b for b in at.button if b.label.startswith("Add these")]
    at.run()
    assert not at.exception and "Gold pairs: 6" in texts(at)
    assert "Gold pairs: 6" in texts(at)  # the count and the list follow at once, without a reload
    assert "3 on the paraphrase side, 3 not" in texts(at)

    # people label; one always answers the same and quickly
    for aid, answer, seconds in ((people[0], lambda n: n % 4, 10.0), (people[1], lambda n: 3, 1.0)):
        while (item := serving.serve_next(store, aid)) is not None:
            serving.record_label(store, aid, item.position, answer(item.number), seconds)
    at = live_page()
    live = qual.campaign_live(store, cid)
    metrics = {m.label: m.value for m in at.metric}
    # 6 + 6 ordinary answers and 2 + 2 answers to gold checks: every page counts both
    assert (
        metrics["Labels"] == "16"
        and metrics["Pairs short of their overlap"] == f"{live.figures['pairs short of their overlap']} / 39"
    )
    assert metrics["Per hour (since the first)"] == "—"  # labels of the last seconds: too soon for a rate
    table = at.dataframe[0].value.set_index("annotator")
    # ranked by the evidence (issue 53): bob, flagged, first
    assert list(table.index) == ["bob", "Alice A."] and list(table["progress"]) == [
        "8 / 8",
        "8 / 8",
    ]  # 6 + 2 checks: their own counter
    # who is flagged and why: in a warning above the table, and the table's third column (not off-screen)
    assert list(at.dataframe[0].value.columns[:3]) == ["annotator", "progress", "flags"]
    assert f"Flagged: bob ({table.loc['bob', 'flags']})" in [w.value for w in at.warning]
    assert table.loc["bob", "gold answered"] == 2 and "3+ same answers in a row" in table.loc["bob", "flags"]
    assert "faster than" in table.loc["bob", "flags"] and table.loc["Alice A.", "flags"] == ""
    assert table.loc["bob", "gold accuracy"] == live.annotators.loc[people[1], "gold accuracy"]
    assert "Gold pairs: 6" in texts(at)
    # each annotator's estimated reliability beside gold accuracy and κ, by the method chosen
    assert table["reliability"].between(0, 1).all()
    next(s for s in at.selectbox if s.label == "Reliability by").set_value("dawid_skene").run()
    assert not at.exception
    table = at.dataframe[0].value.set_index("annotator")
    expected = qual.annotator_reliability(store, cid, "dawid_skene")
    assert table.loc["bob", "reliability"] == expected[people[1]]
    assert table.loc["Alice A.", "reliability"] == expected[people[0]]


def test_a_gold_check_looks_like_any_pair_to_the_annotator(store):
    ds, pairs = make_dataset(store, "demo", numbered_pairs(30))
    cid = camp.create_campaign(store, "Pilot", [ds], quota=3, overlap=1, n_training=0, seed=0)
    qual.set_quality_settings(store, cid, gold_rate=0.5, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=9)
    qual.add_gold_pairs(store, cid, pd.DataFrame({"pair_id": pairs[-3:], "level": [0, 1, 3]}))
    aid, token = annotators.create_annotator(store, cid, "p")
    annotators.set_annotator_profile(store, aid, "P", "good")
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = token
    at.run()
    seen = []
    for _ in range(6):
        assert not at.exception
        progress = at.get("progress")[0].proto.text
        item = serving.serve_next(store, aid)
        seen.append((item.pair_id in pairs[-3:], progress))
        assert "gold" not in texts(at).lower() and "check" not in texts(at).lower()
        at.button(key=f"answer-2-{item.position}").click().run()
    assert [p for _, p in seen] == [f"{i} / 6" for i in range(6)]  # checks counted like the others
    assert sum(g for g, _ in seen) == 3 and "Thank you" in texts(at)


def test_an_adaptive_campaign_without_answers_does_not_ask_about_the_worker(store):
    ds, _ = make_dataset(store, "demo", numbered_pairs(12))
    cid = camp.create_campaign(store, "Adaptive", [ds], quota=6, overlap=2, overlap_max=4, n_training=0)
    annotators.create_annotator(store, cid, "ana")
    at = live_page()
    said = " ".join(c.value for c in at.caption)
    assert "not fitted yet: it is fitted once answers arrive" in said and "is the worker running" not in said
    aid = annotators.annotator_rows(store, cid)[0]["id"]
    item = serving.serve_next(store, aid)
    serving.record_label(store, aid, item.position, 3, 5.0)
    said = " ".join(c.value for c in live_page().caption)
    assert "not fitted yet: is the worker running?" in said  # answers and still no fit: the worker is the question
