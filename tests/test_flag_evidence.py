"""Flags that catch the careless annotator (issue 36, item 1): κ against the others and the campaign's
reliability estimate flag too, each with its threshold and the evidence it rests on; a gold accuracy on
fewer checks than the campaign needs reads "too few checks", not a verdict — in pluie_core.quality, in
db.quality.campaign_live on a real SQLite store served through db.serving, and on the Live campaign
page (AppTest)."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from pluie_core import quality
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_pages import APP, store  # noqa: F401 (store: the pages' store fixture)

SETTINGS = dict(
    gold_min_accuracy=0.7,
    fast_fraction=1 / 3,
    streak_length=10,
    kappa_min=0.2,
    reliability_min=0.5,
    min_gold_checks=5,
    method="Dawid–Skene",
)


def evidence_table(**rows) -> pd.DataFrame:
    columns = ["κ vs others", "shared labels", "reliability", "labels in fit", "gold answered", "gold accuracy"]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=columns)
    return table.assign(**{"median s per pair": 8.0, "longest streak": 2})


def test_random_annotator_flagged_by_kappa_and_reliability_careful_one_not_by_one_miss():
    table = evidence_table(
        random=[-0.39, 48, 0.36, 50, 1, 1.0],
        careful=[0.71, 48, 0.77, 50, 2, 0.5],
        sloppy=[0.65, 48, 0.70, 50, 5, 0.4],
        newcomer=[-0.6, 12, 0.2, 12, 0, math.nan],
    )
    checks = quality.annotator_checks(table, 8.0, **SETTINGS)
    # the random one: one gold check right is no alibi; each flag says its value, threshold and evidence
    assert checks.loc["random", "flags"] == (
        "κ vs others −0.39 < 0.20 (on 48 shared labels); reliability 0.36 < 0.50 (Dawid–Skene, on 50 labels)"
    )
    assert checks.loc["random", "not judged yet"] == "gold 1 of 1 right: too few checks (1 of 5 needed)"
    # the careful one: one miss out of two checks is not a verdict
    assert checks.loc["careful", "flags"] == ""
    assert checks.loc["careful", "not judged yet"] == "gold 1 of 2 right: too few checks (2 of 5 needed)"
    # enough checks: gold accuracy judges, with its threshold
    assert checks.loc["sloppy", "flags"] == "gold accuracy 40% < 70% (2 of 5 checks right)"
    # κ and reliability on too little: said, never a flag
    assert checks.loc["newcomer", "flags"] == ""
    assert checks.loc["newcomer", "not judged yet"] == (
        f"κ vs others: too few shared labels (12 of {quality.MIN_KAPPA_LABELS} needed); "
        f"reliability: too few labels in the fit (12 of {quality.MIN_RELIABILITY_LABELS} needed)"
    )
    assert quality.annotator_flags(table, 8.0, **SETTINGS).equals(checks["flags"])
    # the thresholds are the campaign's
    looser = quality.annotator_checks(
        table, 8.0, **{**SETTINGS, "kappa_min": -0.5, "reliability_min": 0.3, "min_gold_checks": 1}
    )
    assert looser.loc["random", "flags"] == ""
    assert looser.loc["careful", "flags"] == "gold accuracy 50% < 70% (1 of 2 checks right)"


def test_flag_thresholds_are_bounded_with_a_sentence():
    quality.check_settings(0.1, 0.7, 0.3, 10, kappa_min=-1, reliability_min=1, min_gold_checks=1)
    for kwargs, message in (
        ({"kappa_min": 1.5}, "κ against the others"),
        ({"reliability_min": -0.1}, "minimum reliability"),
        ({"min_gold_checks": 0}, "gold checks needed"),
        ({"min_gold_checks": 2.5}, "gold checks needed"),
    ):
        with pytest.raises(quality.QualityError, match=message):
            quality.check_settings(0.1, 0.7, 0.3, 10, **kwargs)


def careless_campaign(engine):
    """40 pairs, four annotators who each label all of them (overlap 4) and answer two gold checks, the
    campaign aggregated by Dawid–Skene: three careful people (carol misses one of her two checks) and
    randy, who answers at random but gets both his checks right."""
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(40))
    gds, _ = make_dataset(engine, "checks", numbered_pairs(2, "Check "), label_kind="binary", gold=[1, 0])
    # the checks: a dataset of the campaign's own (its checks come from its datasets); marked gold, they leave the queue
    cid = camp.create_campaign(engine, "Pilot", [ds, gds], quota=40, overlap=4, n_training=0, seed=3)
    camp.update_campaign(engine, cid, aggregation="dawid_skene")
    qual.set_quality_settings(
        engine, cid, gold_rate=0.05, gold_min_accuracy=0.7, fast_fraction=1 / 3, streak_length=10
    )  # the new thresholds at their defaults
    gold = dict(zip(*make_gold(engine, cid, gds)))
    rng = random.Random(7)
    truth = {p: rng.randrange(4) for p in pairs}
    people = {name: annotators.create_annotator(engine, cid, name)[0] for name in ("alice", "bob", "carol", "randy")}
    for name, aid in people.items():
        missed = []
        while (item := serving.serve_next(engine, aid)) is not None:
            if item.pair_id in gold:
                right = 3 if gold[item.pair_id] else 0
                level = (3 - right) if name == "carol" and not missed else right
                missed.append(level != right)
            elif name == "randy":
                level = rng.randrange(4)
            else:  # careful: the right level, now and then its neighbour on the same side
                level = truth[item.pair_id] ^ (rng.random() < 0.1)
            serving.record_label(engine, aid, item.position, level, 6.0 + rng.random())
    return cid, people


def make_gold(engine, cid, gds):
    assert qual.gold_from_dataset(engine, cid, gds) == 2
    frame = qual.gold_pairs(engine, cid)
    return frame["pair_id"].tolist(), frame["binary_label"].tolist()


def test_campaign_live_flags_the_random_annotator_not_the_careful_one(engine):
    cid, people = careless_campaign(engine)
    live = qual.campaign_live(engine, cid)
    table = live.annotators.set_index("annotator")
    assert (table["gold answered"] == 2).all() and table.loc["randy", "gold accuracy"] == 1.0
    assert table.loc["carol", "gold accuracy"] == 0.5
    # the reliability column is the campaign's method's, as db.quality.annotator_reliability fits it
    expected = qual.annotator_reliability(engine, cid, "dawid_skene")
    ids = {name: people[name] for name in table.index}
    assert table["reliability"].tolist() == pytest.approx(expected.reindex(list(ids.values())).tolist())
    assert (table["shared labels"] == 40).all() and (table["labels in fit"] == 42).all()
    assert table.loc["randy", "κ vs consensus"] < 0.2 and table.loc["randy", "reliability"] < 0.5
    # ranked by the evidence (issue 53): the flagged one first
    assert table.index[0] == "randy"
    randy = table.loc["randy", "flags"]
    kappa = f"{table.loc['randy', 'κ vs consensus']:.2f}".replace("-", "−")
    sure = table.loc["randy", "consensus labels"]
    assert 30 <= sure <= 40
    assert f"κ vs consensus {kappa} < 0.20 (on {sure} pairs where the others' consensus is sure)" in randy
    assert f"reliability {table.loc['randy', 'reliability']:.2f} < 0.50 (Dawid–Skene, on 42 labels)" in randy
    assert table.loc["carol", "flags"] == "" and table.loc["alice", "flags"] == table.loc["bob", "flags"] == ""
    assert table.loc["carol", "not judged yet"] == "gold 1 of 2 right: too few checks (2 of 5 needed)"
    assert live.figures["annotators flagged"] == 1
    # one check needed is a verdict on carol's miss
    qual.set_quality_settings(
        engine,
        cid,
        gold_rate=0.05,
        gold_min_accuracy=0.7,
        fast_fraction=1 / 3,
        streak_length=10,
        kappa_min=-1.0,
        reliability_min=0.0,
        min_gold_checks=2,
    )
    table = qual.campaign_live(engine, cid).annotators.set_index("annotator")
    assert table.loc["carol", "flags"] == "gold accuracy 50% < 70% (1 of 2 checks right)"
    assert table.loc["randy", "flags"] == ""
    with pytest.raises(camp.CampaignError, match="gold checks needed"):
        qual.set_quality_settings(
            engine, cid, gold_rate=0.05, gold_min_accuracy=0.7, fast_fraction=1 / 3, streak_length=10, min_gold_checks=0
        )


def test_live_campaign_page_shows_what_a_flag_rests_on(store):
    cid, people = careless_campaign(store)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception
    warning = next(w.value for w in at.warning if w.value.startswith("Flagged:"))
    assert (
        warning.startswith("Flagged: randy (κ vs consensus ")
        and "pairs where the others' consensus is sure)" in warning
    )
    assert "< 0.50 (Dawid–Skene, on 42 labels)" in warning and "carol" not in warning
    table = at.dataframe[0].value.set_index("annotator")
    assert table.loc["carol", "not judged yet"] == "gold 1 of 2 right: too few checks (2 of 5 needed)"
    # the settings form holds the three thresholds; saving them flags carol's miss
    numbers = {n.label: n for n in at.number_input}
    numbers["Minimum gold checks to judge"].set_value(2)
    numbers["Minimum κ vs consensus"].set_value(-1.0)
    numbers["Minimum reliability"].set_value(0.0)
    next(b for b in at.button if b.label == "Save the quality settings").click().run()
    assert not at.exception
    campaign = camp.get_campaign(store, cid)
    assert (campaign.min_gold_checks, campaign.kappa_min, campaign.reliability_min) == (2, -1.0, 0.0)
    at.switch_page("pages/live_campaign.py").run()
    warning = next(w.value for w in at.warning if w.value.startswith("Flagged:"))
    assert warning == "Flagged: carol (gold accuracy 50% < 70% (1 of 2 checks right))"
