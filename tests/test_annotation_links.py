"""Annotators' answers and links, against a real SQLite file (issue 14, points 2 and 8): an answer is written
only over what the annotator's tab showed (a stale tab is refused, the stored label kept), annotator names are
unique within a campaign, and a lost personal link is replaced for the same annotator."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db.engine import read_session
from db.models import Annotator, Assignment, Label
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.paths import REPO

APP = str(REPO / "app.py")


@pytest.fixture
def campaign(engine):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(20))
    return camp.create_campaign(engine, "Pilot", [ds], n_training=2, quota=3, overlap=1)


@pytest.fixture
def store(db_url, engine, monkeypatch, tmp_path):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    monkeypatch.chdir(REPO)
    return engine


def store_rows(engine) -> tuple[list, list]:
    with read_session(engine) as s:
        labels = s.execute(
            select(
                Label.id, Label.annotator_id, Label.pair_id, Label.level, Label.seconds_spent, Label.updated_at
            ).order_by(Label.id)
        ).all()
        assignments = s.execute(
            select(Assignment.id, Assignment.position, Assignment.done_at).order_by(Assignment.id)
        ).all()
    return labels, assignments


def texts(at: AppTest) -> str:
    return "\n".join(
        e.value
        for kind in ("markdown", "caption", "error", "success", "info", "warning", "code")
        for e in at.get(kind)
        if isinstance(getattr(e, "value", None), str)
    )


# ---------------------------------------------------------------- 2. a second tab never overwrites


def test_a_stale_tab_cannot_replace_an_answer(engine, campaign):
    aid, _ = annotators.create_annotator(engine, campaign, "a")
    shown_in_a = serving.serve_next(engine, aid)
    shown_in_b = serving.serve_next(engine, aid)  # the same link open in a second tab: the same pair
    assert shown_in_a == shown_in_b and shown_in_b.level is None
    serving.record_label(engine, aid, shown_in_a.position, 1, 2.0)  # tab A answers
    before = store_rows(engine)
    with pytest.raises(serving.StaleAnswerError, match="already answered in another tab.*“Slightly similar”"):
        serving.record_label(engine, aid, shown_in_b.position, 3, 5.0)  # then tab B, on what it showed
    assert store_rows(engine) == before  # nothing written: level 1, 2.0 s, one label

    # "back" is the one way to change it, and only over the answer that "back" showed
    back_in_a = serving.served_at(engine, aid, shown_in_a.position)
    back_in_b = serving.served_at(engine, aid, shown_in_a.position)
    assert back_in_a.level == back_in_b.level == 1
    serving.record_label(engine, aid, back_in_a.position, 2, 1.0, replacing=back_in_a.level)
    before = store_rows(engine)
    with pytest.raises(serving.StaleAnswerError, match="changed in another tab.*now “Mostly similar”"):
        serving.record_label(engine, aid, back_in_b.position, 0, 1.0, replacing=back_in_b.level)
    assert store_rows(engine) == before
    with read_session(engine) as s:
        assert s.execute(select(Label.level, Label.seconds_spent)).all() == [(2, 3.0)]
    # a "change" of a pair never answered is refused as well: it is not what that tab showed
    current = serving.serve_next(engine, aid)
    with pytest.raises(serving.StaleAnswerError):
        serving.record_label(engine, aid, current.position, 0, 1.0, replacing=2)
    assert serving.progress(engine, aid).training_done == 1


def test_two_tabs_of_one_link_in_the_app(store, campaign):
    """Two AppTest sessions on one personal link stand for two tabs: B's answer to the pair that
    A has just answered is refused with a sentence, A's label stays, and B is shown the current pair."""
    aid, token = annotators.create_annotator(store, campaign, "a")
    annotators.set_annotator_profile(store, aid, "Ann", "good")
    tabs = []
    for _ in range(2):
        at = AppTest.from_file(APP, default_timeout=30)
        at.query_params["token"] = token
        tabs.append(at.run())
    tab_a, tab_b = tabs
    assert tab_a.button(key="answer-1-0") and tab_b.button(key="answer-3-0")
    tab_a.button(key="answer-1-0").click().run()
    tab_b.button(key="answer-3-0").click().run()
    assert not tab_b.exception
    assert [e.value for e in tab_b.error] == [
        "This pair was already answered in another tab or window (“Slightly similar”): "
        "the answer you just gave was not saved. Here is your current pair."
    ]
    assert "Training 2 / 2" in tab_b.get("progress")[0].proto.text  # the pair tab A is on now
    assert [b.key for b in tab_b.button if (b.key or "").startswith("answer-0-")] == ["answer-0-1"]
    with read_session(store) as s:
        assert s.execute(select(Label.level)).scalars().all() == [1]


# ---------------------------------------------------------------- 8. names and new links


def test_annotator_names_are_unique_within_a_campaign_all_or_nothing(engine, campaign):
    created = annotators.create_annotators(engine, campaign, ["Alice", "Bob"])
    assert [name for _, name, _ in created] == ["Alice", "Bob"]
    with pytest.raises(camp.CampaignError, match="already has an annotator called “Alice”"):
        annotators.create_annotator(engine, campaign, "  alice ")
    with pytest.raises(camp.CampaignError, match="already has an annotator called “Bob”"):
        annotators.create_annotators(engine, campaign, ["Carol", "BOB"])
    with pytest.raises(camp.CampaignError, match="“Dan” is in the list twice"):
        annotators.create_annotators(engine, campaign, ["Dan", "Eve", "dan"])
    with read_session(engine) as s:  # all or nothing: neither Carol nor Dan nor Eve was created
        assert s.scalars(select(Annotator.name).order_by(Annotator.id)).all() == ["Alice", "Bob"]
    annotators.revoke_annotator(engine, created[0][0])  # a revoked annotator keeps the name too
    with pytest.raises(camp.CampaignError, match="Replace a lost link"):
        annotators.create_annotator(engine, campaign, "Alice")
    other = camp.create_campaign(engine, "Other", [camp.dataset_choices(engine)[0][0]], n_training=0)
    annotators.create_annotator(engine, other, "Alice")  # another campaign is another list


def test_display_names_are_unique_within_a_campaign(engine, campaign):
    (a, _), (b, _) = (
        annotators.create_annotator(engine, campaign, "a"),
        annotators.create_annotator(engine, campaign, "b"),
    )
    annotators.set_annotator_profile(engine, a, "Marie  Curie", "native")
    with pytest.raises(camp.CampaignError, match="already goes by “marie curie”"):
        annotators.set_annotator_profile(engine, b, " marie curie", "good")
    assert annotators.annotator_view(engine, b).needs_profile
    annotators.set_annotator_profile(engine, a, "Marie Curie", "advanced")  # one's own name again is fine
    annotators.set_annotator_profile(engine, b, "Marie C.", "good")
    assert annotators.annotator_view(engine, a).display_name == "Marie Curie"


def test_a_new_link_keeps_the_annotator_and_their_labels(engine, campaign):
    aid, old = annotators.create_annotator(engine, campaign, "Alice")
    for level in (0, 1, 2):
        item = serving.serve_next(engine, aid)
        serving.record_label(engine, aid, item.position, level, 1.0)
    reserved = serving.serve_next(engine, aid)
    new = annotators.new_link(engine, aid)
    assert new != old and annotators.annotator_for_token(engine, old) is None
    assert annotators.annotator_for_token(engine, new).id == aid
    assert serving.serve_next(engine, aid) == reserved  # the same place in the queue
    annotators.revoke_annotator(engine, aid)
    again = annotators.new_link(engine, aid)  # a new link also reopens a revoked annotator
    assert (
        annotators.annotator_for_token(engine, new) is None and annotators.annotator_for_token(engine, again).id == aid
    )
    with read_session(engine) as s:
        assert s.scalars(select(Label.level).where(Label.annotator_id == aid).order_by(Label.id)).all() == [0, 1, 2]
        assert s.scalar(select(Annotator.name).where(Annotator.id == aid)) == "Alice"
        assert len(s.scalars(select(Annotator.id)).all()) == 1
    assert serving.progress(engine, aid).done == 1 and serving.progress(engine, aid).training_done == 2
    with pytest.raises(camp.CampaignError, match="does not exist"):
        annotators.new_link(engine, aid + 100)


def test_the_campaign_page_refuses_a_duplicate_and_issues_a_new_link(store, campaign):
    aid, old = annotators.create_annotator(store, campaign, "Alice")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/campaigns.py").run()
    next(t for t in at.text_area if t.label.startswith("New annotators")).input("Bob\nalice")
    next(b for b in at.button if b.label == "Create personal links").click().run()
    assert not at.exception
    assert any("already has an annotator called “Alice”" in e.value for e in at.error)
    assert [r["name"] for r in annotators.annotator_rows(store, campaign)] == ["Alice"]  # Bob neither

    lost = next(s for s in at.selectbox if s.label == "Replace a lost link")
    lost.select(aid)
    at.run()
    next(b for b in at.button if b.label == "New link").click().run()
    assert not at.exception
    links = at.code[0].value
    assert links.startswith("Alice: ") and "?token=" in links
    token = links.split("?token=")[1].strip()
    assert annotators.annotator_for_token(store, token).id == aid and annotators.annotator_for_token(store, old) is None
    assert "Alice's old link no longer works" in texts(at)


# ---------------------------------------------------------------- issue 19.1: the link is checked where the answer is written


def test_an_answer_through_a_replaced_or_revoked_link_or_a_closed_campaign_stores_nothing(store_url):
    from db import init_db

    engine = init_db(store_url)
    ds, _ = make_dataset(engine, "demo", numbered_pairs(10))
    cid = camp.create_campaign(engine, "Pilot", [ds], n_training=0, quota=5)
    aid, old = annotators.create_annotator(engine, cid, "Alice")
    first = serving.serve_next(engine, aid)
    serving.record_label(engine, aid, first.position, 2, 1.0, token=old)  # its own link: stored
    shown = serving.serve_next(engine, aid)  # the tab shows the next pair...
    new = annotators.new_link(engine, aid)  # ...and the organiser replaces the link ("Replace a lost link")
    before = store_rows(engine)
    for position, replacing in ((shown.position, None), (first.position, 2)):  # a new answer, or a change via back
        with pytest.raises(camp.CampaignError) as refused:
            serving.record_label(engine, aid, position, 1, 1.0, replacing=replacing, token=old)
        assert str(refused.value) == serving.LINK_GONE
    assert store_rows(engine) == before  # nothing written, the reservation still open
    serving.record_label(engine, aid, shown.position, 1, 1.0, token=new)  # the new link answers the same pair

    reserved = serving.serve_next(engine, aid)
    annotators.revoke_annotator(engine, aid)
    before = store_rows(engine)
    with pytest.raises(camp.CampaignError, match="no longer valid"):
        serving.record_label(engine, aid, reserved.position, 0, 1.0, token=new)
    assert store_rows(engine) == before

    again = annotators.new_link(engine, aid)
    reserved = serving.serve_next(engine, aid)
    camp.update_campaign(engine, cid, active=False)  # the organiser closes the campaign
    before = store_rows(engine)
    with pytest.raises(camp.CampaignError) as refused:
        serving.record_label(engine, aid, reserved.position, 3, 1.0, token=again)
    assert str(refused.value) == serving.CAMPAIGN_CLOSED and store_rows(engine) == before
    camp.update_campaign(engine, cid, active=True)
    serving.record_label(engine, aid, reserved.position, 3, 1.0, token=again)
    with read_session(engine) as s:
        assert s.scalars(select(Label.level).where(Label.annotator_id == aid).order_by(Label.id)).all() == [2, 1, 3]
    engine.dispose()


def test_a_tab_open_on_a_replaced_link_cannot_answer_in_the_app(store, campaign):
    """The answer callback writes with what the page was drawn with: the annotator and the link. A tab
    still open on a link replaced meanwhile answers: one sentence, nothing stored."""
    aid, old = annotators.create_annotator(store, campaign, "a")
    annotators.set_annotator_profile(store, aid, "Ann", "good")
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["token"] = old
    at.run()
    at.button(key="answer-1-0").click().run()  # the first answer goes through
    new = annotators.new_link(store, aid)
    before = store_rows(store)
    at.button(key="answer-2-1").click().run()  # the tab still shows pair 2 of the old link
    assert not at.exception
    assert [e.value for e in at.error] == [serving.LINK_GONE]
    assert store_rows(store) == before
    fresh = AppTest.from_file(APP, default_timeout=30)
    fresh.query_params["token"] = new
    fresh.run()
    fresh.button(key="answer-2-1").click().run()  # the same pair through the new link
    assert not fresh.error and "Training 2 / 2" not in fresh.get("progress")[0].proto.text
    with read_session(store) as s:
        assert s.scalars(select(Label.level).where(Label.annotator_id == aid).order_by(Label.id)).all() == [1, 2]
    camp.update_campaign(store, campaign, active=False)  # closed while the tab is open: the same kind of refusal
    before = store_rows(store)
    fresh.button(key="answer-0-2").click().run()
    assert [e.value for e in fresh.error] == [serving.CAMPAIGN_CLOSED] and store_rows(store) == before
    # and no pair to answer while it is closed, the refusal the one sentence on the page
    assert not [b for b in fresh.button if (b.key or "").startswith("answer-")] and not fresh.info
