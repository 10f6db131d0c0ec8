"""Adaptive overlap (issue 24, item 3): a pair gets one more annotator only while its binarised label is
not yet confident, between the campaign's least and most annotators per pair, on a real store."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlalchemy import select

from db import adaptive, annotators, init_db, serving
from db import campaigns as camp
from db import quality as qual
from db.engine import read_session
from db.models import Assignment, Campaign, CampaignPair, Label
from pluie_core.aggregation import binary_vote_share, pair_posterior, wants_another
from tests.annotation_fixtures import label_at_once, make_dataset, numbered_pairs


def test_the_rule_reads_the_binarised_vote_share():
    assert binary_vote_share([]) == 0.0 and binary_vote_share([4, 4]) == 0.0  # Don't know is left out
    assert binary_vote_share([3, 2]) == 1.0 and binary_vote_share([0, 1, 4]) == 1.0
    assert binary_vote_share([3, 0]) == 0.5 and binary_vote_share([3, 2, 0]) == pytest.approx(2 / 3)
    assert not wants_another([3, 2], 2, 5, 0.9)  # agreed: stops at the least
    assert (
        wants_another([3, 0], 2, 5, 0.9) and wants_another([3, 4], 2, 5, 0.9) is False
    )  # 1 usable label agrees with itself
    assert not wants_another([3], 2, 5, 0.9)  # not all its answers in yet
    assert not wants_another([3, 0, 1, 2, 0], 5, 5, 0.9)  # at the most
    assert wants_another([3, 3, 3, 0], 4, 5, 0.8)  # 3/4 = 0.75 < 0.8


def campaign(engine, n_pairs=12, **kwargs):
    dataset_id, _ = make_dataset(engine, f"d{kwargs.get('seed', 0)}", numbered_pairs(n_pairs))
    options = dict(quota=n_pairs, overlap=2, overlap_max=4, confidence=0.9, n_training=0, distribution="overlap")
    options.update(kwargs)
    return camp.create_campaign(engine, f"c{kwargs.get('seed', 0)}", [dataset_id], **options)


def answer_all(engine, annotator_id, level_of) -> list[int]:
    """Label every pair served to this annotator with level_of(pair_id); returns the pairs answered."""
    done = []
    while (item := serving.serve_next(engine, annotator_id)) is not None:
        serving.record_label(engine, annotator_id, item.position, level_of(item.pair_id), 1.0)
        done.append(item.pair_id)
    return done


def wanted(engine, campaign_id) -> dict[int, int]:
    with read_session(engine) as s:
        return dict(
            s.execute(
                select(CampaignPair.pair_id, CampaignPair.n_wanted).where(CampaignPair.campaign_id == campaign_id)
            ).all()
        )


def test_confident_pairs_stop_at_the_least_and_disputed_ones_get_more(tmp_path):
    engine = init_db(f"sqlite:///{tmp_path / 's.db'}")
    cid = campaign(engine)
    pairs = sorted(wanted(engine, cid))
    disputed = set(pairs[:4])
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(6)]
    # two annotators: agree everywhere but on the disputed pairs
    answer_all(engine, people[0], lambda p: 3)
    answer_all(engine, people[1], lambda p: 0 if p in disputed else 3)
    assert wanted(engine, cid) == {p: 3 if p in disputed else 2 for p in pairs}
    assert camp.campaign_overview(engine, cid)["pairs fully labelled"] == len(pairs) - len(disputed)
    # the third annotator is served only the disputed pairs; Same meaning makes them 2 to 1 (67% < 90%)
    assert sorted(answer_all(engine, people[2], lambda p: 3)) == sorted(disputed)
    assert set(wanted(engine, cid).values()) == {2, 4}
    # the fourth settles two of them at 3 to 1 (75%, still < 90%: they are at the most, 4, and stop there)
    assert sorted(answer_all(engine, people[3], lambda p: 3)) == sorted(disputed)
    assert answer_all(engine, people[4], lambda p: 3) == []  # nothing left: no pair over its most
    with read_session(engine) as s:
        served = Counter(s.scalars(select(Assignment.pair_id).where(Assignment.campaign_id == cid)))
    assert served == Counter({p: 4 if p in disputed else 2 for p in pairs})
    live = qual.campaign_live(engine, cid).figures
    assert (
        live["pairs short of their overlap"] == 0 and camp.campaign_overview(engine, cid)["pairs fully labelled"] == 12
    )
    assert live["adaptive"] == {
        "given more annotators": 4,
        "at the maximum": 4,
        "annotators wanted": 8 * 2 + 4 * 4,
        "annotators at a fixed maximum": 12 * 4,
    }


def test_dont_know_is_missing_and_a_changed_answer_can_ask_for_more(tmp_path):
    engine = init_db(f"sqlite:///{tmp_path / 's.db'}")
    cid = campaign(engine, n_pairs=3, overlap_max=3)
    pairs = sorted(wanted(engine, cid))
    a, b, c = (annotators.create_annotator(engine, cid, n)[0] for n in "abc")
    answer_all(engine, a, lambda p: 4 if p == pairs[0] else 3)  # Don't know on the first pair
    answer_all(engine, b, lambda p: 3)
    # issue 36: Don't know never counts towards the least (2): the first pair holds one usable label and asks
    # for a third annotator (it used to stop on that one label); the others hold two agreeing labels and stop at 2
    assert wanted(engine, cid) == {pairs[0]: 3, pairs[1]: 2, pairs[2]: 2}
    # b goes back on the second pair and changes Same meaning to Very different: now 1 to 1, one more wanted
    position = next(i.position for i in (serving.served_at(engine, b, k) for k in range(3)) if i.pair_id == pairs[1])
    serving.record_label(engine, b, position, 0, 1.0, replacing=3)
    assert wanted(engine, cid) == {pairs[0]: 3, pairs[1]: 3, pairs[2]: 2}
    assert sorted(answer_all(engine, c, lambda p: 0)) == [pairs[0], pairs[1]]
    assert wanted(engine, cid) == {pairs[0]: 3, pairs[1]: 3, pairs[2]: 2}  # at the most (3): no fourth


def test_a_fixed_campaign_is_as_before_and_bad_settings_are_refused(tmp_path):
    engine = init_db(f"sqlite:///{tmp_path / 's.db'}")
    cid = campaign(engine, overlap_max=None)
    assert set(wanted(engine, cid).values()) == {None}
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(3)]
    answer_all(engine, people[0], lambda p: 3)
    answer_all(engine, people[1], lambda p: 0)
    assert answer_all(engine, people[2], lambda p: 0) == []  # disagreement asks for no one under a fixed overlap
    assert "adaptive" not in qual.campaign_live(engine, cid).figures
    dataset_id, _ = make_dataset(engine, "other", numbered_pairs(5))
    with pytest.raises(camp.CampaignError, match="cannot be fewer"):
        camp.create_campaign(engine, "x", [dataset_id], overlap=3, overlap_max=2)
    with pytest.raises(camp.CampaignError, match="above 50%"):
        camp.create_campaign(engine, "x", [dataset_id], overlap=2, overlap_max=3, confidence=0.5)
    assert [c.name for c in camp.list_campaigns(engine)] == ["c0"]  # nothing was written


def test_pairs_imported_later_join_an_adaptive_queue_at_the_least(tmp_path):
    from tests.store_fixtures import add_pairs

    engine = init_db(f"sqlite:///{tmp_path / 's.db'}")
    add_pairs(engine, "grows", numbered_pairs(4))
    from db.analysis import analysis_choices

    dataset_id = int(analysis_choices(engine).datasets["id"].iloc[0])
    cid = camp.create_campaign(engine, "grow", [dataset_id], overlap=2, overlap_max=3, n_training=0)
    add_pairs(engine, "grows", numbered_pairs(3, prefix="new "))
    assert sorted(wanted(engine, cid).values()) == [2] * 7


def test_adaptive_overlap_holds_with_annotators_at_once(store_url):
    """Eight annotators (two of them in two tabs) answer at once on SQLite and PostgreSQL: no pair is
    served over what it wants nor over the most, no answer is lost, and no pair is left waiting for an
    annotator it did not ask for, nor left unconfident below the most with all its answers in."""
    engine = init_db(store_url)
    cid = campaign(engine, n_pairs=30, overlap=2, overlap_max=5, confidence=0.9, distribution="share", quota=30)
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(8)]
    # the campaign's model is refitted while they answer, as the worker does (issue 36): its raises and
    # take-backs race the answers and the reservations
    stop, refits = threading.Event(), []

    def refit_in_background():
        while not stop.is_set():
            refits.extend(adaptive.refit_due(engine))
            stop.wait(0.05)

    refitter = threading.Thread(target=refit_in_background)
    refitter.start()
    try:
        # a pair's answers disagree often: by pair and person
        errors = label_at_once(engine, people, lambda pair_id, aid: (pair_id * 7 + aid * 3) % 5)
    finally:
        stop.set()
        refitter.join()
    assert not errors and refits
    adaptive.refit_campaign(engine, cid)  # the last answers' fit: each pair asks again where it must
    with read_session(engine) as s:
        fit = s.scalar(select(Campaign.adaptive_fit).where(Campaign.id == cid))
    want = wanted(engine, cid)
    with read_session(engine) as s:
        served = Counter(s.scalars(select(Assignment.pair_id).where(Assignment.campaign_id == cid)))
        levels, who = {}, {}
        for pair_id, aid, level in s.execute(
            select(Label.pair_id, Label.annotator_id, Label.level).where(Label.campaign_id == cid)
        ):
            levels.setdefault(pair_id, []).append(level)
            who.setdefault(pair_id, []).append(aid)
        n_assigned = dict(
            s.execute(
                select(CampaignPair.pair_id, CampaignPair.n_assigned).where(CampaignPair.campaign_id == cid)
            ).all()
        )
    assert all(2 <= n <= 5 for n in want.values()) and max(want.values()) > 2  # some pairs asked for more
    for pair_id, n in want.items():
        assert served[pair_id] == n_assigned[pair_id] <= n
        answers = levels.get(pair_id, [])
        assert len(answers) == served[pair_id]  # every served pair was answered (nobody stopped early)
        # not stuck: with every answer in, a pair below the most is confident under the campaign's model
        # (or it has asked for another annotator, whom a later visitor will be)
        posterior = pair_posterior(who.get(pair_id, []), answers, fit)
        assert len(answers) < n or not wants_another(answers, n, 5, 0.9, least=2, posterior=posterior)
    engine.dispose()


def test_the_organiser_asks_for_adaptive_overlap_and_sees_where_the_labels_went(db_url, engine, monkeypatch, tmp_path):
    """Campaigns page: the form creates an adaptive campaign; Campaigns and Live campaign say what it does
    and where the answers went; the published card names it."""
    from streamlit.testing.v1 import AppTest

    from db.publish import publish_dataset
    from tests.paths import REPO

    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    monkeypatch.chdir(REPO)
    make_dataset(engine, "demo", numbered_pairs(12))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30).run()
    at.switch_page("pages/campaigns.py").run()
    at.text_input[0].input("Adaptive pilot")
    at.multiselect[0].select(at.multiselect[0].options[0])
    number = {n.label: n for n in at.number_input}
    number["Annotators per pair"].set_value(2)
    number["Most annotators per pair"].set_value(3)
    number["Confidence"].set_value(0.8)
    number["Training pairs"].set_value(0)
    next(c for c in at.checkbox if c.label.startswith("Adaptive overlap")).check()
    next(b for b in at.button if b.label == "Create campaign").click().run()
    assert not at.exception
    (made,) = camp.list_campaigns(engine)
    assert (made.overlap, made.overlap_max, made.confidence) == (2, 3, 0.8)
    shown = "\n".join(m.value for m in at.markdown)
    assert "2–3 annotators per pair (adaptive: more while under 80% agreement)" in shown

    people = [annotators.create_annotator(engine, made.id, f"p{i}")[0] for i in range(3)]
    answer_all(engine, people[0], lambda p: 3)
    answer_all(engine, people[1], lambda p: 0 if p % 3 == 0 else 3)
    disputed = sum(1 for p in wanted(engine, made.id) if p % 3 == 0)
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception
    caption = next(c.value for c in at.caption if c.value.startswith("Adaptive overlap"))
    assert f"{disputed:,} pairs were given more than 2" in caption
    assert f"the queue wants {12 * 2 + disputed:,} answers now, against {12 * 3:,} at a fixed overlap of 3" in caption
    card = publish_dataset(engine, tmp_path / "card", licence="mit", campaign_id=made.id, n_boot=50).card
    assert (
        "adaptive overlap: 2 to 3 annotators per pair (one more while fewer than 80% of a pair's answers "
        "agreed on the binarised label)"
    ) in card


def test_a_campaign_chooses_its_aggregation_and_export_publish_and_live_follow(db_url, engine, monkeypatch, tmp_path):
    """Campaigns → Final labels by: stored on the campaign (majority until it chooses), then the default of the
    Export page for that campaign, of Live campaign's reliabilities and of `python -m db publish --campaign`."""
    from streamlit.testing.v1 import AppTest

    from db.cli import main as db_main
    from tests.paths import REPO

    cid = campaign(engine, n_pairs=6, overlap=2, overlap_max=None)
    people = [annotators.create_annotator(engine, cid, f"p{i}")[0] for i in range(3)]
    for i, person in enumerate(people):
        answer_all(engine, person, lambda p: (p + i) % 4)
    assert camp.campaign_aggregation(camp.get_campaign(engine, cid)) == "majority"
    with pytest.raises(camp.CampaignError, match="not an aggregation method"):
        camp.update_campaign(engine, cid, aggregation="mean")
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60).run()
    at.switch_page("pages/campaigns.py").run()
    at.selectbox(key=f"aggregation-{cid}").set_value("dawid_skene").run()
    assert not at.exception and camp.get_campaign(engine, cid).aggregation == "dawid_skene"
    at.switch_page("pages/export.py").run()
    next(s for s in at.selectbox if s.label == "Campaign").set_value(cid).run()
    assert at.selectbox(key=f"export-aggregation-{cid}").value == "dawid_skene"
    assert not at.exception and (at.dataframe[0].value["aggregation"] == "dawid_skene").all()
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception and at.selectbox(key=f"live-aggregation-{cid}").value == "dawid_skene"
    folder = tmp_path / "published"
    assert db_main(["publish", str(folder), "--licence", "mit", "--campaign", "c0", "--db", db_url]) == 0
    assert "Dawid–Skene over the five levels" in (folder / "README.md").read_text()
    import pandas as pd

    assert (pd.read_parquet(folder / "data")["aggregation"] == "dawid_skene").all()
