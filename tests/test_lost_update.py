"""No lost update between two organisers (issue 38, item 6): a campaign's quality settings and its guidelines
carry a revision; a save from a form drawn at an older revision is refused with a sentence that says what
changed, and the store keeps the first save. On both stores, and on the pages (two AppTest sessions drawn
at the same time). Also the bounds of the quality settings and the size of the guidelines."""

from __future__ import annotations

import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from db import campaigns as camp
from db import init_db
from db import quality as qual
from db.engine import write_session
from db.models import Campaign
from pluie_core.guidelines import MAX_GUIDELINES
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_pages import APP, store, texts  # noqa: F401 (store: the pages' store fixture)

SETTINGS = dict(
    gold_rate=0.0,
    gold_min_accuracy=0.7,
    fast_fraction=1 / 3,
    streak_length=10,
    kappa_min=0.2,
    reliability_min=0.5,
    min_gold_checks=5,
)


def campaign(engine, **kwargs) -> int:
    ds, _ = make_dataset(engine, "demo", numbered_pairs(12))
    return camp.create_campaign(engine, "Pilot", [ds], quota=4, n_training=1, **kwargs)


def stored(engine, cid) -> dict:
    c = camp.get_campaign(engine, cid)
    return {name: getattr(c, name) for name in (*SETTINGS, "settings_revision")}


# --- the store ---------------------------------------------------------------------------------------


def test_a_settings_save_from_a_stale_revision_is_refused_and_names_what_changed(store_url):
    engine = init_db(store_url)
    cid = campaign(engine)
    drawn = camp.get_campaign(engine, cid)
    assert drawn.settings_revision == 0
    seen = {name: getattr(drawn, name) for name in SETTINGS}
    # the first organiser: two changes
    assert (
        qual.set_quality_settings(
            engine, cid, **{**seen, "gold_rate": 0.2, "gold_min_accuracy": 0.8}, revision=0, seen=seen
        )
        == 1
    )
    # the second, from the same form: one other change, every field re-sent
    with pytest.raises(camp.StaleFormError) as refused:
        qual.set_quality_settings(engine, cid, **{**seen, "streak_length": 12}, revision=0, seen=seen)
    message = str(refused.value)
    assert message.startswith("Another organiser saved these settings since you opened them: ")
    assert "share of gold checks 0% → 20%" in message and "minimum gold accuracy 0.7 → 0.8" in message
    assert "streak" not in message and "Your changes were not saved" in message
    assert stored(engine, cid) == {**SETTINGS, "gold_rate": 0.2, "gold_min_accuracy": 0.8, "settings_revision": 1}
    # drawn again at the new revision, the second organiser's change goes in over the first's
    assert (
        qual.set_quality_settings(
            engine, cid, **{**SETTINGS, "gold_rate": 0.2, "gold_min_accuracy": 0.8, "streak_length": 12}, revision=1
        )
        == 2
    )
    assert stored(engine, cid)["streak_length"] == 12 and stored(engine, cid)["gold_rate"] == 0.2
    # callers that name no revision (the CLI, scripts) are not checked, and still raise the revision
    assert qual.set_quality_settings(engine, cid, **SETTINGS) == 3
    engine.dispose()


@pytest.mark.parametrize("what", ["settings", "guidelines"])
def test_a_stale_save_waiting_on_a_concurrent_one_is_refused(store_url, what):
    """The first save holds the campaign (uncommitted) while the second starts from the same revision: the
    second waits for it, then reads its revision and is refused, on both stores (SQLite: the write lock at
    BEGIN; PostgreSQL: the row lock)."""
    engine = init_db(store_url)
    cid = campaign(engine, guidelines="Theirs.")
    outcome = {}

    def second():
        try:
            outcome["revision"] = (
                qual.set_quality_settings(engine, cid, **{**SETTINGS, "streak_length": 12}, revision=0)
                if what == "settings"
                else camp.update_campaign(engine, cid, guidelines="Mine.", guidelines_revision=0)
            )
        except camp.CampaignError as exc:
            outcome["error"] = exc

    with write_session(engine) as session:  # the first organiser's save, in flight
        first = session.get(Campaign, cid, with_for_update=True)
        first.gold_rate, first.settings_revision = 0.25, 1
        first.guidelines, first.guidelines_revision = "Theirs, changed.", 1
        session.flush()
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)
    thread.join(30)
    assert isinstance(outcome.get("error"), camp.StaleFormError), outcome
    assert stored(engine, cid) == {**SETTINGS, "gold_rate": 0.25, "settings_revision": 1}
    assert camp.get_campaign(engine, cid).guidelines == "Theirs, changed."
    engine.dispose()


def test_a_guidelines_save_from_a_stale_revision_is_refused_and_says_what_changed(store_url):
    engine = init_db(store_url)
    cid = campaign(engine, guidelines="Line one.\nLine two.")
    assert camp.get_campaign(engine, cid).guidelines_revision == 0
    assert (
        camp.update_campaign(
            engine,
            cid,
            guidelines="Line one.\nLine two, changed.\nLine three.",
            guidelines_revision=0,
            seen_guidelines="Line one.\nLine two.",
        )
        == 1
    )
    with pytest.raises(camp.StaleFormError) as refused:
        camp.update_campaign(
            engine, cid, guidelines="Mine.", guidelines_revision=0, seen_guidelines="Line one.\nLine two."
        )
    message = str(refused.value)
    assert message.startswith("Another organiser saved these guidelines since you opened them")
    assert "now 40 characters, was 19" in message and "1 line changed, 1 added" in message
    assert "Your changes were not saved" in message
    kept = camp.get_campaign(engine, cid)
    assert (kept.guidelines, kept.guidelines_revision) == ("Line one.\nLine two, changed.\nLine three.", 1)
    # other changes to the campaign are not guarded by the guidelines' revision, nor raise it
    camp.update_campaign(engine, cid, active=False)
    assert camp.get_campaign(engine, cid).guidelines_revision == 1
    assert camp.update_campaign(engine, cid, guidelines="Mine.", guidelines_revision=1) == 2
    assert camp.get_campaign(engine, cid).guidelines == "Mine."
    engine.dispose()


def test_guidelines_have_a_size_limit_and_no_nul(store_url):
    engine = init_db(store_url)
    cid = campaign(engine)
    before = camp.get_campaign(engine, cid)
    with pytest.raises(
        camp.CampaignError,
        match=f"The guidelines have {MAX_GUIDELINES + 1:,} characters; the limit is {MAX_GUIDELINES:,}.",
    ):
        camp.update_campaign(engine, cid, guidelines="x" * (MAX_GUIDELINES + 1))
    with pytest.raises(camp.CampaignError, match="The guidelines contain a NUL character"):
        camp.update_campaign(engine, cid, guidelines="Be kind\x00 to the cat.")
    after = camp.get_campaign(engine, cid)
    assert (after.guidelines, after.guidelines_revision) == (before.guidelines, 0)
    camp.update_campaign(engine, cid, guidelines="x" * MAX_GUIDELINES)  # the limit itself is kept
    assert len(camp.get_campaign(engine, cid).guidelines) == MAX_GUIDELINES
    # at creation too, and no campaign is made
    for text in ("x" * (MAX_GUIDELINES + 1), "a\x00b"):
        with pytest.raises(camp.CampaignError, match="The guidelines"):
            camp.create_campaign(engine, "Second", [1], quota=4, n_training=1, guidelines=text)
    assert [c.name for c in camp.list_campaigns(engine)] == ["Pilot"]
    engine.dispose()


@pytest.mark.parametrize(
    "field, value, sentence",
    [
        ("gold_rate", "abc", "The share of gold checks must be a number; got 'abc'."),
        ("kappa_min", "high", "The minimum κ against the others must be a number; got 'high'."),
        ("gold_min_accuracy", None, "The minimum gold accuracy must be a number; got None."),
        ("streak_length", 2.5, "The streak length must be a whole number; got '2.5'."),
        ("streak_length", 10**12, "The streak length must be between 2 and 1,000; got 1000000000000."),
        (
            "min_gold_checks",
            "many",
            "The number of gold checks needed to judge gold accuracy must be a whole number; got 'many'.",
        ),
    ],
)
def test_quality_settings_out_of_bounds_are_refused_with_a_sentence(engine, field, value, sentence):
    cid = campaign(engine)
    with pytest.raises(camp.CampaignError) as refused:
        qual.set_quality_settings(engine, cid, **{**SETTINGS, field: value})
    assert str(refused.value) == sentence
    assert stored(engine, cid) == {**SETTINGS, "settings_revision": 0}


# --- the pages: two organisers with the same form open ------------------------------------------------


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception
    return at


def numbers(at: AppTest) -> dict:
    return {n.label: n for n in at.number_input}


def test_two_organisers_save_the_quality_settings_from_forms_drawn_at_once(store):
    cid = campaign(store)
    first, second = open_page("live_campaign"), open_page("live_campaign")  # both drawn before either saves
    numbers(first)["Share of gold checks"].set_value(0.2)
    numbers(first)["Minimum gold accuracy"].set_value(0.8)
    next(b for b in first.button if b.label == "Save the quality settings").click().run()
    assert not first.exception and "Saved" in texts(first)

    numbers(second)["Streak length"].set_value(12)
    next(b for b in second.button if b.label == "Save the quality settings").click().run()
    assert not second.exception
    errors = " ".join(e.value for e in second.error)
    assert "Another organiser saved these settings since you opened them" in errors
    assert "share of gold checks 0% → 20%" in errors and "minimum gold accuracy 0.7 → 0.8" in errors
    assert "Saved" not in texts(second)
    assert stored(store, cid) == {**SETTINGS, "gold_rate": 0.2, "gold_min_accuracy": 0.8, "settings_revision": 1}
    # the form now shows the store's values; the change made again is saved over them
    shown = numbers(second)
    assert (
        shown["Share of gold checks"].value,
        shown["Minimum gold accuracy"].value,
        shown["Streak length"].value,
    ) == (0.2, 0.8, 10)
    shown["Streak length"].set_value(12)
    next(b for b in second.button if b.label == "Save the quality settings").click().run()
    assert not second.exception and "Saved" in texts(second) and not second.error
    assert stored(store, cid) == {
        **SETTINGS,
        "gold_rate": 0.2,
        "gold_min_accuracy": 0.8,
        "streak_length": 12,
        "settings_revision": 2,
    }
    # the first organiser's form was drawn at revision 1: their next save is refused in turn
    numbers(first)["Minimum reliability"].set_value(0.6)
    next(b for b in first.button if b.label == "Save the quality settings").click().run()
    assert "streak length 10 → 12" in " ".join(e.value for e in first.error)
    assert stored(store, cid)["reliability_min"] == 0.5


def test_two_organisers_save_the_guidelines_from_editors_drawn_at_once(store):
    cid = campaign(store, guidelines="Be kind to the cat.")
    first, second = open_page("campaigns"), open_page("campaigns")
    first.text_area(key=f"guide-{cid}").input("Be kind to the cat.\nAnd to the *dog*.").run()
    next(b for b in first.button if b.label == "Save the guidelines").click().run()
    assert not first.exception and "Saved" in texts(first)

    second.text_area(key=f"guide-{cid}").input("Be nice to the cat.").run()
    next(b for b in second.button if b.label == "Save the guidelines").click().run()
    assert not second.exception
    errors = " ".join(e.value for e in second.error)
    assert "Another organiser saved these guidelines since you opened them" in errors
    assert "now 37 characters, was 19" in errors
    campaign_now = camp.get_campaign(store, cid)
    assert (campaign_now.guidelines, campaign_now.guidelines_revision) == ("Be kind to the cat.\nAnd to the *dog*.", 1)
    # the editor shows theirs; the refused text is still there to copy
    assert second.text_area(key=f"guide-{cid}").value == "Be kind to the cat.\nAnd to the *dog*."
    assert any(c.value == "Be nice to the cat." for c in second.code)
    second.text_area(key=f"guide-{cid}").input("Be nice to the cat.\nAnd to the *dog*.").run()
    next(b for b in second.button if b.label == "Save the guidelines").click().run()
    assert not second.error and camp.get_campaign(store, cid).guidelines == "Be nice to the cat.\nAnd to the *dog*."
    assert not any(c.value == "Be nice to the cat." for c in second.code)  # saved: nothing left to copy


def test_the_guidelines_editor_refuses_oversized_guidelines_with_a_sentence(store):
    cid = campaign(store, guidelines="Short.")
    at = open_page("campaigns")
    at.text_area(key=f"guide-{cid}").input("x" * (MAX_GUIDELINES + 1)).run()
    next(b for b in at.button if b.label == "Save the guidelines").click().run()
    assert not at.exception
    assert f"the limit is {MAX_GUIDELINES:,}" in " ".join(e.value for e in at.error)
    assert camp.get_campaign(store, cid).guidelines == "Short."
