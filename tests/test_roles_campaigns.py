"""Roles in the campaign, quality and review writes (issue 39, helper B): each write checked, and who made it
recorded — on SQLite and PostgreSQL, and the Review page through AppTest with someone signed in."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from db import access, annotators, init_db, review, serving
from db import campaigns as camp
from db import quality as qual
from db.engine import read_session
from db.models import Activity, Adjudication, Base
from lab.roles import OPEN, Actor, NotAllowed, with_article
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.paths import REPO

VIEWER, REVIEWER = Actor("vic", "viewer", 11), Actor("rita", "reviewer", 12)
ORGANISER = Actor("olga", "organiser", 13)


@pytest.fixture
def sign_in(db_url, engine, monkeypatch):
    """The Review page (AppTest) on this test's store, with ``sign_in(resolver)`` standing for the app's
    sign-in: the resolver gives the signed-in actor of a page's run (ui.access.signin.current_actor_or_none, which
    the app's writer asks: the app installs it itself, db.access.install); the app's own is put back afterwards."""
    import importlib

    import streamlit as st

    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    signin = importlib.import_module("ui.access.signin")
    st.cache_resource.clear()
    st.cache_data.clear()
    yield lambda resolver: monkeypatch.setattr(signin, "current_actor_or_none", resolver)
    st.cache_resource.clear()
    st.cache_data.clear()


def store_rows(engine) -> dict:
    """Every row of every table: what "the store stayed as it was" compares."""
    with read_session(engine) as session:
        return {
            table.name: sorted(map(tuple, session.execute(sa.select(table)).all()), key=repr)
            for table in Base.metadata.sorted_tables
        }


def campaign_with_gold(engine):
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(30))
    gds, gold = make_dataset(
        engine, "checks", numbered_pairs(6, "Check "), label_kind="binary", gold=[i % 2 for i in range(6)]
    )
    cid = camp.create_campaign(engine, "Pilot", [ds, gds], quota=5, n_training=2, seed=1)
    qual.gold_from_dataset(engine, cid, gds, n=2)
    ((aid, _, _),) = annotators.create_annotators(engine, cid, ["ann"])
    return cid, ds, gds, aid, pairs, gold


def organiser_writes(engine, cid, ds, gds, aid, pairs, gold):
    """(what, call) for each write a page makes on campaigns, links, guidelines, quality and training."""
    settings = dict(gold_rate=0.3, gold_min_accuracy=0.6, fast_fraction=0.2, streak_length=5)
    return [
        ("create a campaign", lambda: camp.create_campaign(engine, "Second", [ds], quota=5, n_training=1)),
        ("create links", lambda: annotators.create_annotators(engine, cid, ["bob"])),
        ("replace a link", lambda: annotators.new_link(engine, aid)),
        ("revoke a link", lambda: annotators.revoke_annotator(engine, aid)),
        ("save guidelines", lambda: camp.update_campaign(engine, cid, guidelines="# New")),
        ("close", lambda: camp.update_campaign(engine, cid, active=False)),
        ("aggregation", lambda: camp.update_campaign(engine, cid, aggregation="dawid_skene")),
        ("reorder", lambda: camp.reorder_campaign(engine, cid)),
        (
            "training feedback",
            lambda: camp.set_training_feedback(
                engine, cid, [{"position": 0, "expected_level": 2, "explanation": "close"}]
            ),
        ),
        ("quality settings", lambda: qual.set_quality_settings(engine, cid, **settings)),
        ("gold by id", lambda: qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair_id": [pairs[-1]], "level": [3]}))),
        ("gold from a dataset", lambda: qual.gold_from_dataset(engine, cid, gds)),
        ("remove gold", lambda: qual.remove_gold_pairs(engine, cid, gold)),
    ]


REFUSED = {
    "create a campaign": "create a campaign",
    "create links": "add annotators",
    "replace a link": "make a new labelling link",
    "revoke a link": "revoke an annotator's link",
    "save guidelines": "change a campaign's settings",
    "close": "change a campaign's settings",
    "aggregation": "change a campaign's settings",
    "reorder": "reorder a campaign's queue",
    "training feedback": "set a campaign's training feedback",
    "quality settings": "change a campaign's quality settings",
    "gold by id": "add gold checks",
    "gold from a dataset": "plan gold checks",
    "remove gold": "remove gold checks",
}


def test_viewers_and_reviewers_are_refused_every_organiser_write_and_the_store_stays(store_url):
    engine = init_db(store_url)
    fixture = campaign_with_gold(engine)
    before = store_rows(engine)
    for actor in (VIEWER, REVIEWER):
        for what, call in organiser_writes(engine, *fixture):
            with access.acting_as(actor), pytest.raises(NotAllowed) as refused:
                call()
            assert str(refused.value) == (
                f"{actor.name} is {with_article(actor.role)}: only an organiser or above can {REFUSED[what]}."
            ), what  # the action refused, named (issue 56)
            assert store_rows(engine) == before, what
    with access.acting_as(access.NOBODY), pytest.raises(NotAllowed, match="^Sign in to add annotators.$"):
        annotators.create_annotators(engine, fixture[0], ["bob"])
    assert store_rows(engine) == before
    # the annotator's own writes need no account: the personal link works with accounts in force
    aid = fixture[3]
    with access.acting_as(access.NOBODY):
        annotators.set_annotator_profile(engine, aid, "Ann", "good")
        item = serving.serve_next(engine, aid)
        serving.record_label(engine, aid, item.position, 2, 1.0)
    assert serving.progress(engine, aid).training_done == 1
    # an organiser may make every one of them
    with access.acting_as(ORGANISER):
        for what, call in organiser_writes(engine, *fixture):
            call()
    engine.dispose()


def test_a_viewer_cannot_decide_and_a_reviewer_decides_under_their_own_name(store_url):
    engine = init_db(store_url)
    _, pairs = make_dataset(engine, "demo", numbered_pairs(3))
    before = store_rows(engine)
    with access.acting_as(VIEWER), pytest.raises(NotAllowed) as refused:
        review.adjudicate(engine, pairs[0], 2, "vic")
    assert str(refused.value) == "vic is a viewer: only a reviewer or above can decide final levels."
    assert store_rows(engine) == before
    with access.acting_as(REVIEWER):  # the name typed (or forged) is not the one kept
        assert review.adjudicate(engine, pairs[0], 2, "Somebody Else") == 1
        assert review.adjudicate(engine, pairs[1], 1, "") == 1  # no name to give when signed in
    with read_session(engine) as session:
        assert set(session.scalars(sa.select(Adjudication.reviewer))) == {"rita"}
    # a store without accounts: the name given, as before
    assert access.current_actor() == OPEN
    review.adjudicate(engine, pairs[2], 3, "Lena")
    with pytest.raises(review.ReviewError, match="Give your name"):
        review.adjudicate(engine, pairs[2], 1, "  ", seen_revision=1)
    with read_session(engine) as session:
        assert session.scalar(sa.select(Adjudication.reviewer).where(Adjudication.pair_id == pairs[2])) == "Lena"
    engine.dispose()


def test_campaigns_and_their_settings_say_who_made_them(store_url):
    engine = init_db(store_url)
    ds, _ = make_dataset(engine, "demo", numbered_pairs(20))
    with access.acting_as(ORGANISER):
        cid = camp.create_campaign(engine, "Pilot", [ds], quota=5, n_training=2)
        qual.set_quality_settings(
            engine, cid, gold_rate=0.2, gold_min_accuracy=0.7, fast_fraction=1 / 3, streak_length=10
        )
        camp.update_campaign(engine, cid, guidelines="# Be careful")
        ((aid, _, _),) = annotators.create_annotators(engine, cid, ["ann"])
        annotators.revoke_annotator(engine, aid)
    open_cid = camp.create_campaign(engine, "Open", [ds], quota=5, n_training=2)  # no account: nobody named
    assert camp.get_campaign(engine, cid).created_by == "olga"
    assert camp.get_campaign(engine, open_cid).created_by == ""
    activity = camp.campaign_activity(engine, cid)
    assert list(activity.columns) == ["at", "who", "what"]
    assert set(activity["who"]) == {"olga"}
    what = activity["what"].tolist()  # newest first
    assert what[0] == "Revoked the link of ann." and what[1] == "Created a personal link for ann."
    assert what[2].startswith("Saved the guidelines")
    assert what[3] == "Quality settings: share of gold checks 0% → 20%."
    assert camp.campaign_activity(engine, cid, limit=2)["what"].tolist() == what[:2]
    with read_session(engine) as session:  # the activity of one campaign only
        assert (
            session.scalar(
                sa.select(sa.func.count())
                .select_from(Activity)
                .where(Activity.subject == "campaign", Activity.subject_id == open_cid)
            )
            == 1
        )
    engine.dispose()


def test_the_review_page_decides_as_the_signed_in_reviewer(sign_in, engine):
    from tests.test_review import build

    ids = build(engine)
    sign_in(lambda: Actor("sam", "reviewer", 1))
    at = AppTest.from_file(str(REPO / "pages" / "review.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert not [t for t in at.sidebar.text_input if t.key == "reviewer"]  # no name to type
    assert any("Deciding as" in str(m.value) and "sam" in str(m.value) for m in at.sidebar.markdown)
    assert not any("Give your name" in str(w.value) for w in at.warning)
    at.button(key=f"final-3-{ids['cross-3']}").click()
    at.run()
    assert not at.exception, at.exception
    assert "final level “Same meaning”" in at.success[0].value
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT reviewer, level FROM adjudications").all() == [("sam", 3)]


def test_the_review_page_refuses_a_viewer_with_the_sentence(sign_in, engine):
    """A role lowered while the page is open: the click is refused with the sentence, not a traceback."""
    from tests.test_review import build

    ids = build(engine)
    role = {"now": "reviewer"}
    sign_in(lambda: Actor("sam", role["now"], 1))
    at = AppTest.from_file(str(REPO / "pages" / "review.py"), default_timeout=60)
    at.run()
    role["now"] = "viewer"
    at.button(key=f"final-3-{ids['cross-3']}").click()
    at.run()
    assert not at.exception, at.exception
    assert "sam is a viewer: only a reviewer or above can decide final levels." in at.error[0].value
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM adjudications").scalar() == 0


def test_the_campaigns_page_says_who_made_the_campaign_and_refuses_a_viewer_in_a_callback(sign_in, engine):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(20))
    with access.acting_as(ORGANISER):
        cid = camp.create_campaign(engine, "Pilot", [ds], quota=5, n_training=2)
        qual.set_quality_settings(
            engine, cid, gold_rate=0.2, gold_min_accuracy=0.7, fast_fraction=1 / 3, streak_length=10
        )
    role = {"now": "organiser"}
    sign_in(lambda: Actor("olga", role["now"], 13))
    at = AppTest.from_file(str(REPO / "pages" / "campaigns.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    assert any(str(c.value).startswith("Created by olga on ") for c in at.caption)
    (activity,) = [e for e in at.expander if e.label == "Recent activity (2)"]
    lines = [str(m.value) for m in activity.markdown]
    assert "olga" in lines[0] and "Quality settings: share of gold checks 0% → 20%." in lines[0]
    assert "Created the campaign: 18 pairs in the queue, 2 training pairs." in lines[1]
    role["now"] = "viewer"  # the role lowered while the page is open: the write refused with the sentence
    at.text_area(key=f"new-annotators-{cid}-0").set_value("ann")
    at.button(key=f"links-create-{cid}-0").click()
    at.run()
    assert not at.exception, at.exception
    assert any("olga is a viewer: only an organiser or above can add annotators." in str(e.value) for e in at.error)
    assert annotators.annotator_rows(engine, cid) == []
