"""Campaigns, annotators, serving and labels against a real SQLite file (db.campaigns, db.annotators, db.serving)."""

from __future__ import annotations

import threading
from collections import Counter

import bcrypt
import pandas as pd
import pytest
from sqlalchemy import select

from db import annotators, init_db, serving
from db import campaigns as camp
from db.engine import read_session, write_session
from db.models import Annotator, Assignment, Campaign, CampaignPair, Label, Score, ScoreRun, TrainingPair
from db.queue import fail_run
from db.runs import create_run, pause_run
from lab.auth import check_admin_password, hash_token
from pluie_core.guidelines import WORKED_EXAMPLES, default_guidelines, serving_order
from tests.annotation_fixtures import make_dataset, numbered_pairs, queue_of
from tests.store_fixtures import add_pairs, open_page, score_everything, sentence_pairs, widget


@pytest.fixture
def dataset(engine):
    return make_dataset(engine, "demo", numbered_pairs(30))


def label_everything(engine, annotator_id, level=2, limit=1000):
    """Answer whatever is served until the annotator is done; returns the pair ids served."""
    served = []
    for _ in range(limit):
        item = serving.serve_next(engine, annotator_id)
        if item is None:
            return served
        served.append(item.pair_id)
        try:
            serving.record_label(engine, annotator_id, item.position, level, 1.5)
        except serving.StaleAnswerError:  # the same link in a second tab answered this pair first
            pass
    raise AssertionError("serving never ended")


def test_campaign_validation_gives_sentences(engine, dataset):
    ds_id, _ = dataset
    with pytest.raises(camp.CampaignError, match="name"):
        camp.create_campaign(engine, "  ", [ds_id])
    with pytest.raises(camp.CampaignError, match="dataset"):
        camp.create_campaign(engine, "c", [])
    with pytest.raises(camp.CampaignError, match="score run"):
        camp.create_campaign(engine, "c", [ds_id], pair_order="informative")
    with pytest.raises(camp.CampaignError, match="30 pairs"):
        camp.create_campaign(engine, "c", [ds_id], n_training=30)
    with pytest.raises(camp.CampaignError, match="no longer exists"):
        camp.create_campaign(engine, "c", [ds_id, ds_id + 1])
    with pytest.raises(camp.CampaignError, match="score run"):
        camp.create_campaign(engine, "c", [ds_id], pair_order="informative", informative_run_id=99)
    camp.create_campaign(engine, "c", [ds_id])
    with pytest.raises(camp.CampaignError, match="already exists"):
        camp.create_campaign(engine, "c", [ds_id])


def test_default_guidelines_hold_the_five_worked_examples(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]])
    text = camp.get_campaign(engine, cid).guidelines
    assert text == default_guidelines()
    assert "share a common meaning" in text
    for example, level in zip(
        WORKED_EXAMPLES, ["Very different", "Slightly similar", "Mostly similar", "Same meaning", "Don't know"]
    ):
        assert example.explanation in text
        assert f"**{level}**" in text
    assert "tomato soup" in text and "kibble" in text


def test_training_is_the_same_for_everyone_first_and_not_in_the_queue(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]], quota=4, overlap=2, n_training=5, seed=3)
    with read_session(engine) as s:
        training = list(
            s.scalars(
                select(TrainingPair.pair_id).where(TrainingPair.campaign_id == cid).order_by(TrainingPair.position)
            )
        )
        queue = set(s.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == cid)))
    assert len(training) == 5 and not set(training) & queue and len(queue) == 25
    seen = []
    for name in ("a", "b"):
        aid, _ = annotators.create_annotator(engine, cid, name)
        served = label_everything(engine, aid)
        assert served[:5] == training
        assert len(served) == 9  # 5 training + quota 4
        seen.append(served)
        p = serving.progress(engine, aid)
        assert (p.training_done, p.training_total, p.done, p.quota) == (5, 5, 4, 4)
    with read_session(engine) as s:
        flags = Counter(s.scalars(select(Label.is_training)))
    assert flags == {True: 10, False: 8}


@pytest.mark.parametrize(
    "distribution, expected",
    [
        ("overlap", [10, 10, 10, 10, 5, 5, 0]),  # each pair filled before the next: pairs go two by two
        ("share", [10, 10, 10, 10, 10, 0, 0]),  # every pair's first annotator, then the second ones
    ],
)
def test_never_the_same_pair_twice_and_overlap_is_exact(engine, dataset, distribution, expected):
    # 25 queue pairs x overlap 2 = 50 slots, 7 annotators x quota 10 = 70 wanted: the queue runs dry
    cid = camp.create_campaign(engine, "c", [dataset[0]], quota=10, overlap=2, n_training=5, distribution=distribution)
    per_annotator = []
    for i in range(7):
        aid, _ = annotators.create_annotator(engine, cid, f"a{i}")
        served = label_everything(engine, aid)[5:]
        assert len(served) == len(set(served))
        per_annotator.append(served)
    assert [len(s) for s in per_annotator] == expected
    counts = Counter(p for served in per_annotator for p in served)
    assert len(counts) == 25 and set(counts.values()) == {2}


def test_concurrent_annotators_never_over_assign(engine):
    _concurrent_serving_respects_overlap(engine)


def test_resume_serves_the_reserved_pair_again(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]], n_training=2)
    aid, _ = annotators.create_annotator(engine, cid, "a")
    first = serving.serve_next(engine, aid)
    again = serving.serve_next(engine, aid)  # e.g. the browser was closed and opened again
    assert again == first
    serving.record_label(engine, aid, first.position, 0, 2.0)
    second = serving.serve_next(engine, aid)
    assert second.position == first.position + 1
    with read_session(engine) as s:
        assert len(s.scalars(select(Assignment.id)).all()) == 2


def test_back_changes_the_answer_and_adds_time(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]], n_training=0, quota=3)
    aid, _ = annotators.create_annotator(engine, cid, "a")
    item = serving.serve_next(engine, aid)
    assert not item.is_training and (item.number, item.out_of) == (1, 3)
    serving.record_label(engine, aid, item.position, 1, 2.0)
    serving.serve_next(engine, aid)
    previous = serving.served_at(engine, aid, item.position)
    assert previous.level == 1 and previous.top == item.top  # same sentence on top as first shown
    serving.record_label(engine, aid, item.position, 3, 4.0, replacing=1)  # "back" showed answer 1
    with read_session(engine) as s:
        label = s.scalar(select(Label).where(Label.pair_id == item.pair_id))
    assert (label.level, label.seconds_spent, label.source_on_top) == (3, 6.0, item.source_on_top)
    assert serving.progress(engine, aid).done == 1


def test_top_sentence_is_drawn_and_recorded(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]], n_training=0, quota=25)
    aid, _ = annotators.create_annotator(engine, cid, "a")
    sides = []
    for _ in range(25):
        item = serving.serve_next(engine, aid)
        assert item.top.startswith("Source") == item.source_on_top
        sides.append(item.source_on_top)
        serving.record_label(engine, aid, item.position, 0, 1)
    assert 0 < sum(sides) < 25  # both orders occur (chance of failure 2 x 2^-25)


def test_record_label_refuses_foreign_positions_and_bad_levels(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]])
    a, _ = annotators.create_annotator(engine, cid, "a")
    b, _ = annotators.create_annotator(engine, cid, "b")
    item = serving.serve_next(engine, a)
    with pytest.raises(camp.CampaignError, match="not in your queue"):
        serving.record_label(engine, b, item.position, 0, 1)  # b was never served anything
    with pytest.raises(camp.CampaignError, match="scale"):
        serving.record_label(engine, a, item.position, 7, 1)


def test_tokens_are_hashed_and_revocation_closes_the_link(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]], n_training=0, overlap=1)
    aid, token = annotators.create_annotator(engine, cid, "a")
    assert len(token) >= 32
    with read_session(engine) as s:
        stored = s.get(Annotator, aid)
    assert stored.token_hash == hash_token(token) and token not in stored.token_hash
    assert annotators.annotator_for_token(engine, token).id == aid
    assert annotators.annotator_for_token(engine, token + "x") is None
    assert annotators.annotator_for_token(engine, "") is None
    reserved = serving.serve_next(engine, aid)
    annotators.revoke_annotator(engine, aid)
    assert annotators.annotator_for_token(engine, token) is None
    assert serving.serve_next(engine, aid) is None
    with pytest.raises(camp.CampaignError, match="revoked"):
        serving.record_label(engine, aid, reserved.position, 0, 1)
    with read_session(engine) as s:  # the reserved slot went back to the queue
        assert s.scalar(select(CampaignPair.n_assigned).where(CampaignPair.pair_id == reserved.pair_id)) == 0


def test_profile_requires_a_name_and_a_known_english_level(engine, dataset):
    cid = camp.create_campaign(engine, "c", [dataset[0]])
    aid, _ = annotators.create_annotator(engine, cid, "a")
    assert annotators.annotator_view(engine, aid).needs_profile
    with pytest.raises(camp.CampaignError, match="English"):
        annotators.set_annotator_profile(engine, aid, "Ann", "fluent")
    with pytest.raises(camp.CampaignError, match="name"):
        annotators.set_annotator_profile(engine, aid, " ", "good")
    annotators.set_annotator_profile(engine, aid, "Ann", "native")
    view = annotators.annotator_view(engine, aid)
    assert (view.display_name, view.english_level, view.needs_profile) == ("Ann", "native", False)


def test_least_labelled_spreads_and_informative_puts_uncertain_first(engine):
    ds, pairs = make_dataset(engine, "gold", numbered_pairs(8), label_kind="binary", gold=[1, 0] * 4)
    with write_session(engine) as s:
        run = ScoreRun(name="pluie", kind="pluie")
        s.add(run)
        s.flush()
        values = [5.0, -0.1, 0.3, -9.0, 2.0, -2.0, 0.05, 7.0]  # the last pair: gold 0, score > 0
        for pid, v in zip(pairs, values):
            s.add(Score(run_id=run.id, pair_id=pid, value=v))
        run_id = run.id
    informative = camp.create_campaign(
        engine, "i", [ds], n_training=0, quota=8, pair_order="informative", informative_run_id=run_id
    )
    aid, _ = annotators.create_annotator(engine, informative, "a")
    served = label_everything(engine, aid)
    # model and gold disagree first, then closest to 0
    assert served[:4] == [pairs[7], pairs[6], pairs[1], pairs[2]] and served[-1] == pairs[3]

    spread = camp.create_campaign(engine, "l", [ds], n_training=0, quota=4, overlap=2, pair_order="least_labelled")
    a1, _ = annotators.create_annotator(engine, spread, "a1")
    a2, _ = annotators.create_annotator(engine, spread, "a2")
    assert set(label_everything(engine, a1)).isdisjoint(label_everything(engine, a2))


def test_serving_order_is_reproducible_from_the_seed():
    ids = list(range(100))
    assert serving_order(ids, "random", 1) == serving_order(reversed(ids), "random", 1)
    assert serving_order(ids, "random", 1) != serving_order(ids, "random", 2)
    counts = {i: (i % 3) for i in ids}
    order = serving_order(ids, "least_labelled", 1, label_counts=counts)
    assert [counts[i] for i in order] == sorted(counts.values())
    with pytest.raises(ValueError):
        serving_order(ids, "alphabetical", 1)


def test_admin_password_from_the_configuration(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    assert check_admin_password("")  # none configured: open
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "s3cret")
    assert check_admin_password("s3cret") and not check_admin_password("S3cret") and not check_admin_password("")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD")
    hashed = bcrypt.hashpw(b"from-toml", bcrypt.gensalt(4)).decode()
    (tmp_path / "pluie_lab.toml").write_text(f'[admin]\npassword_hash = "{hashed}"\n')
    assert check_admin_password("from-toml") and not check_admin_password("s3cret")
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD_HASH", "not-a-bcrypt-hash")
    assert not check_admin_password("from-toml")


def test_the_serving_bench_builds_the_store_it_describes(tmp_path):
    from bench.serving import OVERLAP, build_store, time_serving

    url = f"sqlite:///{tmp_path / 'bench.db'}"
    campaign_id, _ = build_store(url, n_pairs=2_000, n_labels=4_000)
    engine = init_db(url)
    with read_session(engine) as s:
        queue_labels = Counter(s.scalars(select(Label.pair_id).where(Label.is_training.is_(False))))
        assert sum(queue_labels.values()) == 4_000 and set(queue_labels.values()) == {OVERLAP}
    assert camp.campaign_overview(engine, campaign_id)["pairs fully labelled"] == 1_000
    timings = time_serving(url, campaign_id, n_annotators=3)
    assert all(len(v) == 9 for v in timings.values())
    with read_session(engine) as s:  # the timed annotators got fresh pairs, never a full one
        counts = Counter(s.scalars(select(Label.pair_id).where(Label.is_training.is_(False))))
    assert max(counts.values()) == OVERLAP and sum(counts.values()) == 4_009


@pytest.mark.postgres
def test_concurrent_serving_on_postgresql_respects_overlap(postgres_server):
    """Same as the SQLite test, on PostgreSQL, where transactions really run side by side and the
    conditional UPDATE and the annotator row lock are what keep the counts exact."""
    from tests.store_fixtures import drop_postgres_database, fresh_postgres_database

    url = fresh_postgres_database(postgres_server)
    try:
        _concurrent_serving_respects_overlap(init_db(url))
    finally:
        drop_postgres_database(postgres_server, url)


def _concurrent_serving_respects_overlap(engine):
    """Six annotators (two of them in two tabs at once) label everything they are served, in
    parallel: 30 pairs x overlap 2, no pair over its overlap, no one served a pair twice."""
    ds, _ = make_dataset(engine, "demo", numbered_pairs(30))
    cid = camp.create_campaign(engine, "c", [ds], quota=12, overlap=2, n_training=0)
    ids = [annotators.create_annotator(engine, cid, f"a{i}")[0] for i in range(6)]
    results: list[list[int]] = []
    errors = []

    def work(aid):
        try:
            results.append(label_everything(engine, aid))
        except Exception as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(aid,)) for aid in ids + ids[:2]]  # two tabs for two people
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with read_session(engine) as s:
        counts = Counter(s.scalars(select(Label.pair_id)))
        positions = Counter(s.execute(select(Assignment.annotator_id, Assignment.position)).all())
        per_annotator = Counter(s.execute(select(Label.annotator_id, Label.pair_id)).all())
        assert s.scalar(select(Label.id).where(Label.level != 2)) is None
    assert sum(counts.values()) == 60 and set(counts.values()) == {2}  # 30 pairs x 2, none over
    assert set(positions.values()) == {1} and set(per_annotator.values()) == {1}
    engine.dispose()


def test_pairs_added_to_a_dataset_later_join_its_open_campaigns(engine):
    import pandas as pd

    from db.datasets import import_pairs

    texts = numbered_pairs(12)
    first = import_pairs(engine, "growing", pd.DataFrame(texts, columns=["source", "hypothesis"]))
    campaign_id = camp.create_campaign(engine, "grows", [first.dataset_id], quota=20, overlap=1, n_training=2)
    assert camp.campaign_overview(engine, campaign_id)["pairs in queue"] == 10
    later = numbered_pairs(4, prefix="Later: ")
    import_pairs(engine, "growing", pd.DataFrame(later, columns=["source", "hypothesis"]), append=True)
    assert camp.campaign_overview(engine, campaign_id)["pairs in queue"] == 14
    annotator_id, _ = annotators.create_annotator(engine, campaign_id, "ann")
    annotators.set_annotator_profile(engine, annotator_id, "Ann", "native")
    served = []
    while (item := serving.serve_next(engine, annotator_id)) is not None:
        served.append(item.pair_id)
        serving.record_label(engine, annotator_id, item.position, 2, 1.0)
    with read_session(engine) as s:
        queued_last = s.scalars(
            select(CampaignPair.pair_id)
            .where(CampaignPair.campaign_id == campaign_id)
            .order_by(CampaignPair.rank.desc())
            .limit(4)
        ).all()
    # 2 training pairs, then the 10 first queued pairs, then the 4 new ones, each once
    assert len(served) == 16 and len(set(served)) == 16
    assert set(served[-4:]) == set(queued_last)


def test_the_organisers_table_reads_the_counter_each_annotator_sees(engine, dataset):
    """db.annotators.annotator_rows reads the counters through db.serving.progress_counters, the one
    rule behind progress (the annotator's page) and annotator_progress (Live campaign)."""
    cid = camp.create_campaign(engine, "c", [dataset[0]], quota=3, overlap=1, n_training=2)
    busy, done, idle = (annotators.create_annotator(engine, cid, name)[0] for name in ("busy", "done", "idle"))
    label_everything(engine, done)
    for _ in range(3):  # two training pairs and one of the queue; the next one served and left open
        item = serving.serve_next(engine, busy)
        serving.record_label(engine, busy, item.position, 1, 1.0)
    serving.serve_next(engine, busy)
    with read_session(engine) as s:
        counters = serving.progress_counters(s, s.get(Campaign, cid), [busy, done, idle])
    assert counters == serving.annotator_progress(engine, cid)
    assert all(counters[a] == serving.progress(engine, a) for a in (busy, done, idle))
    assert [(c.training_done, c.done, c.quota, c.finished) for c in counters.values()] == [
        (2, 1, 3, False),
        (2, 3, 3, True),
        (0, 0, 3, False),
    ]
    rows = {r["id"]: r["labelled"] for r in annotators.annotator_rows(engine, cid)}
    assert rows == {busy: "1 / 3", done: "3 / 3", idle: "0 / 3"}


# -- the score runs a campaign's “most informative” order is offered (issue 14, point 3)


@pytest.fixture
def store(app_store):
    return app_store  # tests.store_fixtures: the app on this test's store


def test_failed_and_cancelled_runs_leave_the_progress_and_the_choices(store, tmp_path):
    engine = store
    add_pairs(engine, "d", sentence_pairs(5))
    lev = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    score_everything(engine, lev)
    broken = create_run(engine, name="broken", model=str(tmp_path / "no-model"))
    fail_run(engine, broken, "The model cannot be loaded.")
    cancelled = create_run(engine, name="chrf", kind="baseline", model="chrf")
    pause_run(engine, cancelled)
    from db.runs import cancel_run

    cancel_run(engine, cancelled)

    at = open_page("home")
    table = at.dataframe[0].value
    row = table[table["dataset"] == "d"].iloc[0]
    assert (row["scores"], row["scores queued"], row["scoring"]) == (5, 5, 1.0)  # was 5 of 10: "50 % scored"

    # the campaign's "most informative" order is offered only runs with scores: not the failed one
    assert camp.score_run_choices(engine) == []
    at = open_page("campaigns")
    picker = widget(at.selectbox, "PLUIE run for the “most informative” order")
    assert picker.options == []
    with pytest.raises(camp.CampaignError, match="no scores"):
        camp.create_campaign(engine, "c", [1], pair_order="informative", informative_run_id=broken, n_training=0)


def test_a_pluie_run_with_scores_is_offered_even_after_it_failed(store):
    from db.analysis import add_score_run

    engine = store
    add_pairs(engine, "d", sentence_pairs(4))
    run = add_score_run(engine, "pluie half", {1: 0.5, 2: -1.0}, kind="pluie")
    fail_run(engine, run, "out of memory")
    assert camp.score_run_choices(engine) == [(run, "pluie half")]


# -- which pairs a campaign takes, and how its annotators share them (issue 14, point 9)


def test_select_pairs_by_range_gold_score_and_seeded_sample():
    from pluie_core.pair_selection import SelectionError, clean_selection, select_pairs

    pairs = pd.DataFrame(
        {
            "pair_id": range(101, 121),
            "gold_label": [i % 2 for i in range(20)],
            "score": [float(i) - 10 for i in range(20)],
        }
    )
    pairs.loc[3, "gold_label"] = float("nan")
    assert select_pairs(pairs, None) == list(range(101, 121))
    assert select_pairs(pairs, {"start": 5, "end": 8}) == [105, 106, 107, 108]
    assert select_pairs(pairs, {"gold_min": 1, "gold_max": 1}) == [
        i for i in range(101, 121) if (i - 101) % 2 == 1 and i != 104
    ]
    assert select_pairs(pairs, {"score_run": 1, "score_min": -1.5, "score_max": 1}) == [110, 111, 112]
    sample = select_pairs(pairs, {"sample": 6, "seed": 3})
    assert len(sample) == 6 and sample == sorted(sample) and set(sample) <= set(range(101, 121))
    assert select_pairs(pairs, {"sample": 6, "seed": 3}) == sample != select_pairs(pairs, {"sample": 6, "seed": 4})
    combined = select_pairs(pairs, {"start": 2, "end": 15, "gold_min": 0, "gold_max": 0, "sample": 3, "seed": 0})
    assert len(combined) == 3 and all((i - 101) % 2 == 0 and 102 <= i <= 115 for i in combined)
    assert clean_selection({"start": 1, "end": 0, "sample": 0, "seed": 5}) is None
    with pytest.raises(SelectionError, match="reversed"):
        clean_selection({"gold_min": 3, "gold_max": 1})
    with pytest.raises(SelectionError, match="score run"):
        clean_selection({"score_min": 0})


def test_a_campaign_takes_a_sample_a_range_or_filtered_pairs(store):
    from db.analysis import add_score_run
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    engine = store
    ds, pairs = make_dataset(engine, "gold", numbered_pairs(60), label_kind="binary", gold=[i % 2 for i in range(60)])
    sample = camp.create_campaign(engine, "sample", [ds], n_training=2, seed=7, selection={"sample": 12})
    again = camp.create_campaign(engine, "sample again", [ds], n_training=2, seed=7, selection={"sample": 12})
    other = camp.create_campaign(engine, "other seed", [ds], n_training=2, seed=8, selection={"sample": 12})
    assert len(queue_of(engine, sample)) == 12 and queue_of(engine, sample) == queue_of(engine, again)
    assert queue_of(engine, sample) != queue_of(engine, other)

    ranged = camp.create_campaign(engine, "range", [ds], n_training=1, selection={"start": 11, "end": 20})
    assert queue_of(engine, ranged) == set(pairs[10:20])
    gold = camp.create_campaign(engine, "paraphrases", [ds], n_training=1, selection={"gold_min": 1, "gold_max": 1})
    assert queue_of(engine, gold) == set(pairs[1::2])
    run = add_score_run(engine, "pluie", {p: float(i) for i, p in enumerate(pairs)}, kind="pluie")
    near = camp.create_campaign(
        engine, "near zero", [ds], n_training=0, selection={"score_run": run, "score_min": 5, "score_max": 9.5}
    )
    assert queue_of(engine, near) == set(pairs[5:10])
    with pytest.raises(camp.CampaignError, match="The selection keeps 5 pairs"):
        camp.create_campaign(engine, "too few", [ds], n_training=5, selection={"start": 1, "end": 5})
    assert camp.get_campaign(engine, sample).selection == {"sample": 12, "seed": 7}

    # a campaign of chosen pairs does not take later imports; one of whole datasets does
    whole = camp.create_campaign(engine, "whole", [ds], n_training=0)
    add_pairs(engine, "gold", sentence_pairs(3))
    assert len(queue_of(engine, whole)) == 63 and len(queue_of(engine, sample)) == 12


def test_annotators_share_the_work_by_default(store):
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    engine = store
    ds, _ = make_dataset(engine, "many", numbered_pairs(100))

    def served(campaign_id, n=2):
        people = [annotators.create_annotator(engine, campaign_id, f"p{i}")[0] for i in range(n)]
        orders = {aid: [] for aid in people}
        for _ in range(15):  # they take turns, as people working at once do
            for aid in people:
                item = serving.serve_next(engine, aid)
                orders[aid].append(item.pair_id)
                serving.record_label(engine, aid, item.position, 2, 1.0)
        return list(orders.values())

    first, second = served(camp.create_campaign(engine, "shared", [ds], quota=15, overlap=2, n_training=0))
    assert set(first).isdisjoint(second)  # the default: different pairs while the queue has enough
    first, second = served(
        camp.create_campaign(engine, "together", [ds], quota=15, overlap=2, n_training=0, distribution="overlap")
    )
    assert first == second  # overlap first: the same pairs in the same order (as every campaign did before)

    # a queue too short for everyone: every pair gets one annotator, then the rest get a second
    small, _ = make_dataset(engine, "small", numbered_pairs(20, "small "))
    first, second = served(camp.create_campaign(engine, "short", [small], quota=15, overlap=2, n_training=0))
    assert len(set(first) | set(second)) == 20 and len(set(first) & set(second)) == 10

    at = open_page("campaigns")
    assert widget(at.radio, "Share the pairs among annotators").value == "share"
