"""Quality checks (issue 11): gold pairs mixed into each queue at the chosen share, scored per annotator,
the flags, and the live campaign view — on real SQLite files, values checked against sklearn /
krippendorff or counted independently here."""

from __future__ import annotations

import math
import random
from collections import Counter

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import func, select, update

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.engine import read_session, write_session
from db.models import Assignment, CampaignPair, GoldPair, Label, TrainingPair
from pluie_core import quality
from pluie_core.agreement import agreement_figures, count_patterns, level_counts
from tests.annotation_fixtures import label_at_once, make_dataset, numbered_pairs
from tests.store_fixtures import sentence_pairs


def gold_campaign(engine, *, quota=20, rate=0.2, n_gold=10, n_pairs=80, overlap=2, n_training=2, **flags):
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(n_pairs))
    gds, gold_ids = make_dataset(
        engine, "checks", numbered_pairs(n_gold, "Check "), label_kind="binary", gold=[i % 2 for i in range(n_gold)]
    )
    # the checks are a dataset of the campaign's own (issue 35: a campaign's checks come from its datasets);
    # marked gold, they leave its queue
    cid = camp.create_campaign(engine, "Pilot", [ds, gds], quota=quota, overlap=overlap, n_training=n_training, seed=3)
    settings = {"gold_min_accuracy": 0.7, "fast_fraction": 1 / 3, "streak_length": 10, **flags}
    qual.set_quality_settings(engine, cid, gold_rate=rate, **settings)
    assert qual.gold_from_dataset(engine, cid, gds) == n_gold
    return cid, pairs, gold_ids


def label_all(engine, aid, answer=lambda item: 2, seconds=lambda item: 3.0) -> list:
    served = []
    while (item := serving.serve_next(engine, aid)) is not None:
        served.append(item)
        serving.record_label(engine, aid, item.position, answer(item), seconds(item))
    return served


def test_gold_checks_are_mixed_at_the_chosen_share_once_each_outside_the_quota(engine):
    cid, pairs, gold_ids = gold_campaign(engine, quota=20, rate=0.2, n_gold=10)
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(3)]
    for aid in people:
        served = label_all(engine, aid)
        after_training = [s for s in served if not s.is_training]
        checks = [s for s in after_training if s.pair_id in gold_ids]
        # share 0.2 of the pairs served after training: 20 * 0.2 / 0.8 = 5 checks beside the 20 of the quota
        assert len(after_training) == 25 and len(checks) == 5
        assert len({s.pair_id for s in served}) == len(served)  # never twice to one person
        # invisible: numbered like the others, out of quota + checks
        assert [s.number for s in after_training] == list(range(1, 26)) and {s.out_of for s in after_training} == {25}
        progress = serving.progress(engine, aid)
        assert (progress.done, progress.quota) == (25, 25)
    rows = {r["id"]: r["labelled"] for r in annotators.annotator_rows(engine, cid)}
    assert set(rows.values()) == {"25 / 25"}  # the organiser's count: the annotator's own (issue 35)
    with read_session(engine) as s:
        flagged = Counter(s.execute(select(Assignment.annotator_id, Assignment.is_gold)).all())
        queued = set(s.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == cid)))
        per_pair = Counter(
            s.scalars(select(Assignment.pair_id).where(Assignment.is_gold.is_(False), Assignment.pair_id.in_(queued)))
        )
    assert all(flagged[(aid, True)] == 5 for aid in people)
    assert not queued & set(gold_ids) and max(per_pair.values()) <= 2  # checks never fill the overlap
    # checks fall at different steps for different people
    with read_session(engine) as s:
        steps = {
            aid: tuple(
                s.scalars(
                    select(Assignment.position)
                    .where(Assignment.annotator_id == aid, Assignment.is_gold.is_(True))
                    .order_by(Assignment.position)
                )
            )
            for aid in people
        }
    assert len(set(steps.values())) > 1


def test_fewer_gold_pairs_than_checks_each_served_once_per_person(engine):
    cid, _, gold_ids = gold_campaign(engine, quota=10, rate=0.5, n_gold=3, n_pairs=40)
    aid = annotators.create_annotator(engine, cid, "p")[0]
    served = label_all(engine, aid)
    checks = [s.pair_id for s in served if s.pair_id in gold_ids]
    assert sorted(checks) == sorted(gold_ids)  # min(10 * 0.5 / 0.5, 3) = 3, each once
    assert len(served) == 2 + 10 + 3 and serving.progress(engine, aid).quota == 13


def test_no_gold_rate_serves_as_before(engine):
    cid, _, gold_ids = gold_campaign(engine, quota=5, rate=0.0, n_gold=4, n_pairs=30)
    aid = annotators.create_annotator(engine, cid, "p")[0]
    served = label_all(engine, aid)
    assert len(served) == 7 and not {s.pair_id for s in served} & set(gold_ids)


def test_gold_accuracy_per_annotator_binarised_and_exact(engine):
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(60))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=12, overlap=1, n_training=0, seed=1)
    qual.set_quality_settings(
        engine, cid, gold_rate=0.25, gold_min_accuracy=0.6, fast_fraction=1 / 3, streak_length=50, min_gold_checks=4
    )  # each answers 4 checks: enough to judge
    checks = dict(zip(pairs[40:48], [0, 1, 2, 3, 3, 2, 1, 0]))
    qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair_id": list(checks), "level": list(checks.values())}))
    good, sloppy = (annotators.create_annotator(engine, cid, name)[0] for name in ("good", "sloppy"))
    label_all(engine, good, answer=lambda it: checks.get(it.pair_id, 1))
    # sloppy: the right side but one level off where possible, except Don't know on two checks
    rng = random.Random(0)
    sloppy_answers = {}

    def sloppy_answer(item):
        if item.pair_id not in checks:
            return 1
        level = rng.choice([4, {0: 1, 1: 0, 2: 3, 3: 2}[checks[item.pair_id]]])
        sloppy_answers[item.pair_id] = level
        return level

    label_all(engine, sloppy, answer=sloppy_answer)
    live = qual.campaign_live(engine, cid).annotators.set_index("annotator")
    assert live.loc["good", "gold answered"] == 4 and live.loc["good", "gold accuracy"] == 1.0
    assert live.loc["good", "gold exact accuracy"] == 1.0 and live.loc["good", "flags"] == ""
    side = [(lv != 4) and (lv >= 2) == (checks[p] >= 2) for p, lv in sloppy_answers.items()]
    assert live.loc["sloppy", "gold answered"] == len(sloppy_answers) == 4
    assert live.loc["sloppy", "gold accuracy"] == pytest.approx(np.mean(side))
    assert live.loc["sloppy", "gold exact accuracy"] == 0.0
    assert live.loc["sloppy", "flags"] == (
        f"gold accuracy {np.mean(side):.0%} < 60% ({sum(side)} of 4 checks right)" if np.mean(side) < 0.6 else ""
    )
    assert list(live["progress"]) == ["16 / 16", "16 / 16"]  # the annotator's counter: 12 + 4 checks


def test_speed_and_streak_flags(engine):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(80))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=15, overlap=1, n_training=0, seed=1)
    qual.set_quality_settings(engine, cid, gold_rate=0, gold_min_accuracy=0.7, fast_fraction=1 / 3, streak_length=6)
    careful, fast, stuck = (annotators.create_annotator(engine, cid, n)[0] for n in ("careful", "fast", "stuck"))
    label_all(engine, careful, answer=lambda it: it.number % 4, seconds=lambda it: 9.0 + it.number % 3)
    label_all(engine, fast, answer=lambda it: (it.number // 2) % 4, seconds=lambda it: 1.0)
    label_all(engine, stuck, answer=lambda it: 3 if 4 <= it.number < 11 else 0, seconds=lambda it: 8.0)
    live = qual.campaign_live(engine, cid)
    table = live.annotators.set_index("annotator")
    seconds = [9.0 + n % 3 for n in range(1, 16)] + [1.0] * 15 + [8.0] * 15
    assert live.campaign_median_seconds == np.median(seconds) == 8.0
    assert table.loc["fast", "median s per pair"] == 1.0 < 8.0 / 3
    assert table.loc["fast", "flags"] == "faster than 0.33 × median (1.0 s vs 8.0 s per pair)"
    assert table.loc["stuck", "longest streak"] == 7
    assert table.loc["stuck", "flags"] == "6+ same answers in a row (longest 7)"
    assert table.loc["careful", "flags"] == "" and table.loc["careful", "longest streak"] == 1
    assert live.figures["annotators flagged"] == 2


def test_kappa_against_others_and_alpha_match_the_libraries():
    rng = np.random.default_rng(5)
    rows = [(a, p, int(rng.integers(0, 5))) for p in range(40) for a in rng.choice(6, 3, replace=False)]
    labels = pd.DataFrame(rows, columns=["annotator", "pair_id", "level"])
    kappa = quality.kappa_against_others(labels)
    known = labels[labels["level"] != 4]
    for a in range(6):  # every (my label, another's label) on the same pair, binarised, through sklearn
        mine, theirs = [], []
        for _, row in known[known["annotator"] == a].iterrows():
            others = known[(known["pair_id"] == row["pair_id"]) & (known["annotator"] != a)]
            mine += [int(row["level"] >= 2)] * len(others)
            theirs += [int(v >= 2) for v in others["level"]]
        assert kappa[a] == pytest.approx(cohen_kappa_score(mine, theirs))
    matrix = known.pivot(index="annotator", columns="pair_id", values="level").reindex(range(6)).to_numpy(dtype=float)
    # the live view's α is pluie_core.agreement's, the Agreement page's and the card's
    found = agreement_figures(count_patterns(level_counts(labels["pair_id"], labels["level"])))
    assert found["ordinal"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    )
    assert found["binary"]["alpha"] == pytest.approx(
        krippendorff.alpha(
            reliability_data=np.where(np.isnan(matrix), np.nan, matrix >= 2), level_of_measurement="nominal"
        )
    )
    assert agreement_figures(count_patterns(level_counts([], [])))["ordinal"]["alpha"] is None


def test_rate_and_positions_rules():
    assert quality.gold_check_count(50, 0.1, 100) == 6 and quality.gold_check_count(20, 0.2, 100) == 5
    assert quality.gold_check_count(20, 0.2, 2) == 2 and quality.gold_check_count(20, 0.0, 9) == 0
    # a check now with the chance of the checks due among the steps left; with no pair left, every check due
    draws = [quality.serve_check_now(5, 20, f"3:7:{step}") for step in range(400)]
    assert draws == [quality.serve_check_now(5, 20, f"3:7:{step}") for step in range(400)]  # reproducible
    assert 0.12 < np.mean(draws) < 0.28  # 5 / 25 = 0.2
    assert quality.serve_check_now(2, 0, "x") and not quality.serve_check_now(0, 9, "x")
    assert quality.served_checks_text([4, 4]) == "4 to each of the 2 annotators"
    assert quality.served_checks_text([3, 5, 4]) == "3–5 per annotator (3 annotators, 12 in all)"
    scores = quality.gold_from_labels(pd.Series([0.0, 1.2, 2.6, 3.9, 5.0]), "score", 0, 5)
    assert list(scores["level"]) == [0, 0, 2, 3, 3] and list(scores["binary_label"]) == [0, 0, 1, 1, 1]


def test_gold_writes_are_all_or_nothing_with_a_sentence(engine):
    cid, pairs, gold_ids = gold_campaign(engine, quota=5, rate=0.2, n_gold=4, n_pairs=30)
    with read_session(engine) as s:
        training = s.scalars(select(TrainingPair.pair_id).where(TrainingPair.campaign_id == cid)).all()
        before = s.execute(select(GoldPair.pair_id, GoldPair.level, GoldPair.binary_label)).all()
        queued = s.scalar(select(func.count()).select_from(CampaignPair))
    free = [p for p in pairs if p not in training]
    cases = [
        (pd.DataFrame({"pair_id": [free[0], 999_999], "level": [1, 2]}), "There is no pair 999999"),
        (pd.DataFrame({"pair_id": [free[0], free[1]], "level": [1, 7]}), "not a level of the scale"),
        (pd.DataFrame({"pair_id": [free[0], free[1]], "level": [1, "Don't know"]}), "not a level of the scale"),
        (pd.DataFrame({"pair_id": [free[0], training[0]], "level": [1, 2]}), "is a training pair"),
        (pd.DataFrame({"pair_id": [free[0], free[0]], "level": [1, 2]}), "in the list twice"),
    ]
    for frame, message in cases:
        with pytest.raises(camp.CampaignError, match=message):
            qual.add_gold_pairs(engine, cid, frame)
    aid = annotators.create_annotator(engine, cid, "p")[0]
    item = serving.serve_next(engine, aid)  # a training pair; then an ordinary pair
    serving.record_label(engine, aid, item.position, 2, 1.0)
    serving.record_label(engine, aid, (item := serving.serve_next(engine, aid)).position, 2, 1.0)
    item = serving.serve_next(engine, aid)
    while item.pair_id in gold_ids:  # a check came first: answer it and take the next
        serving.record_label(engine, aid, item.position, 2, 1.0)
        item = serving.serve_next(engine, aid)
    free = [p for p in free if p != item.pair_id]  # the ordinary pair just served is not free any more
    with pytest.raises(camp.CampaignError, match="already been served as an ordinary pair"):
        qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair_id": [free[-1], item.pair_id], "level": [0, 3]}))
    with pytest.raises(camp.CampaignError, match="between 0 and 0.5"):
        qual.set_quality_settings(engine, cid, gold_rate=0.9, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=5)
    with read_session(engine) as s:
        assert s.execute(select(GoldPair.pair_id, GoldPair.level, GoldPair.binary_label)).all() == before
        assert s.scalar(select(func.count()).select_from(CampaignPair)) == queued
        assert camp.get_campaign(engine, cid).gold_rate == 0.2
    # a good list: names or numbers, the queue loses the new gold pairs
    assert (
        qual.add_gold_pairs(
            engine, cid, pd.DataFrame({"pair_id": [free[-1], free[-2]], "level": ["same meaning", "0"]})
        )
        == 2
    )
    with read_session(engine) as s:
        assert s.get(GoldPair, (cid, free[-1])).level == 3 and s.get(GoldPair, (cid, free[-2])).binary_label == 0
        assert s.scalar(select(func.count()).select_from(CampaignPair)) == queued - 2
    assert qual.remove_gold_pairs(engine, cid, [free[-1]]) == 1


def test_live_figures_count_labels_per_hour_and_pairs_short_of_overlap(engine):
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(12))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=4, overlap=2, n_training=0, seed=1)
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(3)]
    for aid in people:
        label_all(engine, aid)
    import datetime as dt

    from db.models import utcnow

    with write_session(engine) as s:  # four labels were given two hours ago
        old = s.scalars(select(Label.id).order_by(Label.id).limit(4)).all()
        s.execute(update(Label).where(Label.id.in_(old)).values(created_at=utcnow() - dt.timedelta(hours=2)))
    live = qual.campaign_live(engine, cid)
    with read_session(engine) as s:
        per_pair = Counter(s.scalars(select(Label.pair_id)))
    assert live.figures["labels"] == 12 and live.figures["labels in the last hour"] == 8
    assert live.figures["labels per hour (since the first)"] == pytest.approx(12 / 2, rel=0.01)
    # labels all given a moment ago make no rate: not 12 in 10 s = 4,320 an hour
    with write_session(engine) as s:
        s.execute(update(Label).values(created_at=utcnow() - dt.timedelta(seconds=10)))
    assert math.isnan(qual.campaign_live(engine, cid).figures["labels per hour (since the first)"])
    assert quality.labels_per_hour(40, 35 / 3600) != quality.labels_per_hour(40, 35 / 3600)  # NaN
    assert quality.labels_per_hour(40, 0.5) == 80
    assert live.figures["pairs short of their overlap"] == 12 - sum(1 for n in per_pair.values() if n >= 2)
    assert live.figures["pairs in queue"] == 12


def test_live_view_on_a_larger_campaign_matches_an_independent_count(engine):
    """Sixty pairs, five annotators who answer at random: the table's counts and rates recomputed here."""
    ds, pairs = make_dataset(engine, "demo", sentence_pairs(60))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=30, overlap=3, n_training=0, seed=2)
    rng = random.Random(1)
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(5)]
    for aid in people:
        label_all(engine, aid, answer=lambda it: rng.randrange(5), seconds=lambda it: rng.uniform(1, 20))
    with read_session(engine) as s:
        labels = pd.DataFrame(
            s.execute(select(Label.annotator_id, Label.pair_id, Label.level, Label.seconds_spent)).all(),
            columns=["annotator", "pair_id", "level", "seconds"],
        )
    table = qual.campaign_live(engine, cid).annotators
    for aid in people:
        mine = labels[labels["annotator"] == aid]
        row = table.loc[aid]
        assert row["labelled"] == len(mine) and row["median s per pair"] == pytest.approx(mine["seconds"].median())
        assert row["Don't know rate"] == pytest.approx((mine["level"] == 4).mean())
        assert row["last activity"] is not None and row["status"] == "active"


def test_the_load_test_counts_what_the_store_holds(tmp_path):
    """bench/annotators.py's person, run in this process for a moment, then its check of the store:
    nothing lost or duplicated; an acknowledged answer the store does not hold is counted as lost, a
    label nobody was acknowledged for as duplicated."""
    import queue
    import threading

    from bench.annotators import annotator, build_campaign, check_store

    url = f"sqlite:///{tmp_path / 'load.db'}"
    campaign_id, people = build_campaign(url, 2, 200, overlap=2, gold_rate=0.2)
    out = queue.Queue()
    ready = threading.Barrier(len(people), timeout=60)
    threads = [
        threading.Thread(target=annotator, args=(url, a, 1.5, 0.01, 0.3, i, out, ready)) for i, a in enumerate(people)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    messages = [out.get() for _ in range(out.qsize())]  # each annotator: "labelling" when it starts, then its result
    results = [m for m in messages if "annotator" in m]
    assert len(results) == len(people)
    assert all(r["locked"] == r["errors"] == r["stale"] == 0 for r in results) and sum(r["changes"] for r in results)
    figures = check_store(url, campaign_id, results)
    assert figures["lost"] == figures["duplicated"] == 0 and figures["stored"] == sum(r["sent"] for r in results)
    pair, level = next(iter(results[0]["expected"].items()))
    results[0]["expected"][pair] = (level + 1) % 5  # an answer acknowledged but not stored
    gone = results[1]["expected"].popitem()  # a stored label nobody was told about
    figures = check_store(url, campaign_id, results)
    assert (figures["lost"], figures["duplicated"]) == (1, 1) and gone


def test_gold_checks_under_concurrent_annotators(store_url):
    """Six annotators (two in two tabs at once) label in parallel threads on SQLite and PostgreSQL: each
    gets their checks, none twice, and the queue's overlap holds."""
    from db import init_db

    engine = init_db(store_url)
    cid, _, gold_ids = gold_campaign(engine, quota=8, rate=0.2, n_gold=3, n_pairs=40, overlap=2)
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(6)]
    errors = label_at_once(engine, people, lambda pair_id, aid: 2)
    assert not errors
    with read_session(engine) as s:
        rows = s.execute(select(Assignment.annotator_id, Assignment.pair_id, Assignment.is_gold)).all()
    assert len({(a, p) for a, p, _ in rows}) == len(rows)
    for aid in people:  # 8 * 0.2 / 0.8 = 2 checks each, from the 3 gold pairs
        mine = [(p, g) for a, p, g in rows if a == aid]
        assert sum(g for _, g in mine) == 2 and all(p in gold_ids for p, g in mine if g)
        assert sum(not g for _, g in mine) == 2 + 8
        training = set(s.scalars(select(TrainingPair.pair_id)))
    queue = Counter(p for _, p, g in rows if not g and p not in training)
    assert len(training) == 2 and max(queue.values()) == 2 and not set(queue) & set(gold_ids)
    engine.dispose()
