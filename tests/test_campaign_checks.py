"""A campaign's gold checks (issue 35, items 3 and 4). They belong to the campaign: only pairs of its own
datasets become its checks (refused with a sentence otherwise), the Live campaign page offers only its
datasets and names each check, and the Pairs page starts "Known answer" from the pair's own gold label. Checks
are served within the pairs an annotator actually gets: when the queue empties before the quota, each person
gets the share of checks of what they got, spread among those pairs, and the counters (the annotator's, Live
campaign's, the card's) say what was served, the annotator's bar full at the end. Real SQLite files; the pages
through AppTest."""

from __future__ import annotations

import pandas as pd
import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.campaigns import CampaignError
from db.engine import read_session, write_session
from db.models import Assignment, Dataset, GoldPair
from db.publish import publish_dataset
from pluie_core import quality
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_pages import APP, store, texts  # noqa: F401 (store: the pages' store fixture)


def gold(engine) -> set[tuple[int, int]]:
    with read_session(engine) as s:
        return {(g.campaign_id, g.pair_id) for g in s.query(GoldPair)}


def english_and_german(engine):
    """An English STS-B-like dataset (scores 0-5), a German PAWS-X-like one (binary), a campaign on the first."""
    en, en_ids = make_dataset(
        engine, "STS-B en", numbered_pairs(30), label_kind="score", gold=[round(i * 5 / 29, 2) for i in range(30)]
    )
    de, de_ids = make_dataset(
        engine,
        "PAWS-X de",
        [(f"Der Satz {i}.", f"Ein Satz {i}.") for i in range(20)],
        label_kind="binary",
        gold=[i % 2 for i in range(20)],
    )
    with write_session(engine) as s:
        s.get(Dataset, en).label_min, s.get(Dataset, en).label_max = 0.0, 5.0
    cid = camp.create_campaign(engine, "English", [en], quota=5, overlap=1, n_training=0, seed=2)
    return cid, (en, en_ids), (de, de_ids)


# ---------------------------------------------------------------- item 3: checks belong to the campaign


def test_a_check_from_outside_the_campaigns_datasets_is_refused_with_a_sentence(engine):
    cid, (en, en_ids), (de, de_ids) = english_and_german(engine)
    with pytest.raises(
        CampaignError,
        match="“PAWS-X de” is not one of the datasets of “English” "
        r"\(STS-B en\): no gold pair was marked",
    ):
        qual.gold_from_dataset(engine, cid, de, 20)
    with pytest.raises(
        CampaignError, match=f"Pair {de_ids[3]} is in “PAWS-X de”, not one of the datasets of “English”"
    ):
        qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair_id": [en_ids[0], de_ids[3]], "level": [0, 3]}))
    assert gold(engine) == set()  # all or nothing
    assert qual.gold_from_dataset(engine, cid, en, 4) == 4  # the campaign's own dataset: taken
    assert {p for _, p in gold(engine)} <= set(en_ids)


def test_the_live_page_offers_only_the_campaigns_datasets_and_names_each_check(store):
    cid, (en, en_ids), (de, de_ids) = english_and_german(store)
    qual.add_gold_pairs(store, cid, pd.DataFrame({"pair_id": en_ids[:2], "level": [0, 1]}))
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception
    offered = next(s for s in at.selectbox if s.label.startswith("Take gold pairs"))
    assert offered.options == ["STS-B en"]  # not the German dataset
    stop = next(m for m in at.multiselect if m.label == "Stop using as checks")
    # each pair named: its dataset, its ids and the start of its sentences, not a bare number
    assert stop.options == [
        f"STS-B en · id {i} · pair {p} · Source sentence number {i}. / Hypothesis sentence {i} here."
        for i, p in enumerate(en_ids[:2])
    ]
    stop.set_value([en_ids[1]]).run()
    next(b for b in at.button if b.label == "Remove").click().run()
    assert not at.exception and gold(store) == {(cid, en_ids[0])}


def test_the_pairs_page_starts_the_known_answer_from_the_pairs_gold_label(store):
    cid, (en, en_ids), (de, de_ids) = english_and_german(store)
    camp.create_campaign(store, "German", [de], quota=5, overlap=1, n_training=0)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/pairs.py").run()
    at.selectbox(key="pairs-dataset").set_value(en).run()
    at.selectbox(key="pairs-pick-0").set_value(en_ids[28]).run()  # gold 4.83 of 0-5: the top quarter
    assert not at.exception
    answer = next(s for s in at.selectbox if s.label == "Known answer")
    assert answer.value == 3  # Same meaning, from the pair's own gold label
    assert "Gold label 4.83 (a score on 0–5): Same meaning" in texts(at)
    # only the campaigns that label this dataset are offered
    assert next(s for s in at.selectbox if s.label == "Mark as a gold check of").options == ["English"]
    next(b for b in at.button if b.label == "Mark as gold").click().run()
    assert not at.exception and gold(store) == {(cid, en_ids[28])}
    with read_session(store) as s:
        assert s.get(GoldPair, (cid, en_ids[28])).level == 3

    at.selectbox(key="pairs-dataset").set_value(de).run()
    at.selectbox(key="pairs-pick-0").set_value(de_ids[5]).run()  # binary gold 1: the side only
    answer = next(s for s in at.selectbox if s.label == "Known answer")
    assert answer.value == "side-1" and "Gold label 1 (binary): Paraphrase (side only)" in texts(at)
    assert next(s for s in at.selectbox if s.label == "Mark as a gold check of").options == ["German"]
    at.selectbox(key="pairs-pick-0").set_value(de_ids[4]).run()  # gold 0
    assert next(s for s in at.selectbox if s.label == "Known answer").value == "side-0"


# ---------------------------------------------------------------- item 4: checks served as planned, said as served


def shared_queue(engine, quota=30, rate=0.25, n_queue=26, n_gold=12, tokens: dict | None = None):
    """A campaign whose queue (26 pairs, one annotator each) empties long before two people reach their
    quota of 30: each gets about 13. 12 gold pairs of the campaign's own check dataset; 10 checks planned.
    ``tokens``: filled with each person's link token, by id."""
    ds, _ = make_dataset(engine, "demo", numbered_pairs(n_queue))
    gds, gold_ids = make_dataset(
        engine, "checks", numbered_pairs(n_gold, "Check "), label_kind="binary", gold=[i % 2 for i in range(n_gold)]
    )
    cid = camp.create_campaign(engine, "Pilot", [ds, gds], quota=quota, overlap=1, n_training=0, seed=5)
    qual.set_quality_settings(engine, cid, gold_rate=rate, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=50)
    assert qual.gold_from_dataset(engine, cid, gds) == n_gold
    made = [annotators.create_annotator(engine, cid, name) for name in ("ann", "bob")]
    people = [aid for aid, _ in made]
    if tokens is not None:
        tokens.update(made)
    for aid in people:
        annotators.set_annotator_profile(engine, aid, f"P{aid}", "good")
    return cid, people, set(gold_ids)


def take_turns(engine, people) -> dict[int, list]:
    """Each person answers one pair in turn until neither has one left."""
    served = {aid: [] for aid in people}
    active = list(people)
    while active:
        for aid in list(active):
            item = serving.serve_next(engine, aid)
            if item is None:
                active.remove(aid)
                continue
            served[aid].append(item)
            serving.record_label(engine, aid, item.position, 2, 4.0)
    return served


def test_checks_are_spread_within_the_pairs_each_person_gets(engine):
    cid, people, gold_ids = shared_queue(engine)
    assert quality.gold_check_count(30, 0.25, 12) == 10  # planned per person at a full quota
    served = take_turns(engine, people)
    for aid, items in served.items():
        kinds = [item.pair_id in gold_ids for item in items]
        ordinary, checks = kinds.count(False), kinds.count(True)
        # the share of checks of the pairs this person got (not the 10 of a full quota, nor what happened
        # to fall before the queue emptied), spread among them: not all at the end
        assert checks == quality.gold_check_count(ordinary, 0.25, 12) >= 3
        assert kinds.index(True) < len(kinds) - checks
        progress = serving.progress(engine, aid)
        # nothing left: the counter ends full, on what was served
        assert progress.finished and progress.queue_ran_out and progress.done == progress.quota == len(items)
    assert sum(item.pair_id not in gold_ids for items in served.values() for item in items) == 26  # the queue, once


def test_an_annotator_whose_pairs_run_out_is_told_why_the_count_ended_early(store):
    """Issue 56 item 10: told "n / 40" (a quota of 30 and 10 checks), an annotator sharing a queue of 26 pairs
    finished at about 20 with only "there are no more pairs for you": now the page says fewer than the 40 first
    counted, and why."""
    tokens = {}
    cid, people, _ = shared_queue(store, tokens=tokens)
    served = take_turns(store, people)
    aid = people[0]
    progress = serving.progress(store, aid)
    assert progress.finished and progress.queue_ran_out and progress.planned == 40 > progress.done == len(served[aid])
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = tokens[aid]
    at.run()
    assert not at.exception
    said = at.success[0].value
    assert said.startswith(
        f"You have labelled {progress.done} pairs, fewer than the 40 first counted: every pair of "
        "the campaign already has the labels it needs, from you and the other annotators"
    ), said
    assert at.get("progress")[0].proto.text == f"{progress.done} / {progress.done}"
    # a person who got their whole count is thanked as before, with no reason
    assert quality.finished_text(40, 40, False).startswith("You have labelled your 40 pairs.")
    assert (
        "fewer than the 71 first counted: the count included pairs that check the labelling"
        in quality.finished_text(64, 71, False)
    )


def test_live_campaign_and_the_card_say_what_was_served(store, tmp_path):
    cid, people, gold_ids = shared_queue(store)
    served = take_turns(store, people)
    counts = {aid: sum(item.pair_id in gold_ids for item in items) for aid, items in served.items()}
    counters = {aid: f"{len(items)} / {len(items)}" for aid, items in served.items()}
    low, high = sorted(counts.values())
    served_text = f"{low} to each of the 2 annotators" if low == high else f"{low}–{high} per annotator (2 annotators"
    # Live campaign: the checks served beside those planned, and the annotator's own counter, full
    live = qual.campaign_live(store, cid).annotators
    assert live["gold checks served"].to_dict() == counts and set(live["gold checks planned"]) == {10}
    assert live["progress"].to_dict() == counters
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert table["progress"].tolist() == list(counters.values())
    assert table["gold checks served"].tolist() == list(counts.values())
    assert f"Gold checks: 10 planned per annotator (the share of a full quota); served so far: {served_text}" in texts(
        at
    )
    # the Campaigns page's count is the same counter
    assert [r["labelled"] for r in annotators.annotator_rows(store, cid)] == list(counters.values())
    # and the card: what was served per annotator, beside what was planned
    card = publish_dataset(store, tmp_path / "pilot", campaign_id=cid, licence="mit", n_boot=20).card
    assert "(10 planned per annotator besides their quota" in card and f"; served: {served_text}" in card, card


def test_a_full_quota_still_gets_the_planned_checks(engine):
    cid, people, gold_ids = shared_queue(engine, quota=8, n_queue=40)  # 40 pairs: both reach 8
    served = take_turns(engine, people)
    for aid, items in served.items():
        kinds = [item.pair_id in gold_ids for item in items]
        assert kinds.count(False) == 8 and kinds.count(True) == quality.gold_check_count(8, 0.25, 12) == 3
        assert [item.number for item in items] == list(range(1, 12)) and {i.out_of for i in items} == {11}
        assert serving.progress(engine, aid).finished


def test_the_annotators_bar_ends_full_when_the_queue_empties_early(store):
    ds, _ = make_dataset(store, "demo", numbered_pairs(6))
    gds, gold_ids = make_dataset(store, "checks", numbered_pairs(4, "Check "), label_kind="binary", gold=[1, 0, 1, 0])
    cid = camp.create_campaign(store, "Pilot", [ds, gds], quota=10, overlap=1, n_training=0, seed=1)
    qual.set_quality_settings(store, cid, gold_rate=0.2, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=50)
    qual.gold_from_dataset(store, cid, gds)
    aid, token = annotators.create_annotator(store, cid, "p")
    annotators.set_annotator_profile(store, aid, "P", "good")
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = token
    at.run()
    bars = []
    while (item := serving.serve_next(store, aid)) is not None:
        assert not at.exception
        bars.append(at.get("progress")[0].proto.text)
        at.button(key=f"answer-2-{item.position}").click().run()
    # 6 pairs and round(6 x 0.2 / 0.8) = 2 checks: 8 served; while pairs remain, out of 10 + 3 planned
    assert bars == [f"{i} / 13" for i in range(8)]
    bar = at.get("progress")[0].proto
    assert "Thank you!" in texts(at) and bar.text == "8 / 8" and bar.value == 100
    with read_session(store) as s:
        assert s.scalar(select(func.count()).select_from(Assignment).where(Assignment.is_gold.is_(True))) == 2
