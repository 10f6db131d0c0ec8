"""Issue 57, item 3, through the pages (Streamlit's AppTest) on real SQLite stores: a signed-in person's
half-typed Review note, the scope of their pages and their half-filled New campaign form are kept for their
account in the store (ui.access.keep, db.kept), so they survive a restart of the server, and another account
never sees them. A store without accounts keeps them per browser, as before (tests/test_remembered.py)."""

from __future__ import annotations

import pytest

from db import accounts, kept
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_remembered import labelled
from tests.test_review import build
from tests.test_signin import app_env, sign_in, start  # noqa: F401 (app_env: the app on this test's store)


def ids_of(store) -> dict[str, int]:
    from db.datasets import list_datasets

    return {d.name: d.id for d in list_datasets(store)}


def checked(at):
    assert not at.exception, at.exception
    return at


def signed_in(page: str, name: str):
    """A new browser session (a new AppTest) signed in as ``name`` on ``page``."""
    at = sign_in(start(f"pages/{page}.py"), name, f"{name}'s password")
    assert f"Signed in as {name}" in " ".join(c.value for c in at.sidebar.caption)
    return checked(at)


def go(at, page: str):
    return checked(at.switch_page(f"pages/{page}.py").run())


def restart_the_server():
    """What a restart takes away: everything the server held in its memory (st.cache_resource holds the
    per-browser memory, ui.access.keep.memory; st.cache_data the pages' reads)."""
    import streamlit as st

    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def team(app_env):
    """Two people who review and organise, a dataset to review (tests.test_review.build) and one to start a
    campaign on ("demo", 20 pairs)."""
    ids = build(app_env)
    make_dataset(app_env, "demo", numbered_pairs(20))
    people = {
        name: accounts.add_account(app_env, name, "owner", password=f"{name}'s password") for name in ("olga", "ida")
    }
    return app_env, ids, people


def note_box(at):
    """The Review page's note box of the pair shown."""
    return next(t for t in at.text_input if t.key.startswith("note-"))


def demo_option(at):
    return next(o for o in labelled(at.multiselect, "Datasets").options if "demo" in str(o))


def test_a_signed_in_persons_note_and_new_campaign_form_survive_a_restart_and_stay_theirs(team):
    store, ids, people = team
    at = signed_in("review", "olga")
    at.sidebar.multiselect(key="analysis_datasets").set_value(["toy"])  # the scope (ui.views.scope)
    checked(at.run())
    note = note_box(at).key
    at.text_input(key=note).set_value("two of three say same")
    checked(at.run())
    go(at, "campaigns")
    labelled(at.text_input, "Name").input("Half-filled")
    labelled(at.multiselect, "Datasets").select(demo_option(at))
    labelled(at.number_input, "Pairs per annotator").set_value(7)
    labelled(at.radio, "Serve pairs").set_value("least_labelled")
    labelled(at.text_area, "Guidelines (Markdown)").input("Be kind.")
    checked(at.run())
    assert any("kept for your account" in c.value for c in at.caption)
    held = kept.kept_values(store, people["olga"].id)
    assert (held[note], held["new-campaign-name"], held["new-campaign-quota"]) == (
        "two of three say same",
        "Half-filled",
        7,
    )
    assert held["pluie_scope"] == {"campaign": None, "datasets": [ids_of(store)["toy"]]}
    assert kept.kept_values(store, people["ida"].id) == {}

    restart_the_server()
    at = signed_in("review", "olga")  # a new session, on a server that remembers nothing
    assert at.sidebar.multiselect(key="analysis_datasets").value == ["toy"]
    assert at.text_input(key=note).value == "two of three say same"
    go(at, "campaigns")
    assert labelled(at.text_input, "Name").value == "Half-filled"
    assert [d[1] for d in labelled(at.multiselect, "Datasets").value] == ["demo"]
    assert labelled(at.number_input, "Pairs per annotator").value == 7
    assert labelled(at.radio, "Serve pairs").value == "least_labelled"
    assert labelled(at.text_area, "Guidelines (Markdown)").value == "Be kind."

    other = signed_in("review", "ida")  # another account, on the same server: none of it
    assert other.sidebar.multiselect(key="analysis_datasets").value == ["demo", "toy"]
    other.sidebar.multiselect(key="analysis_datasets").set_value(["toy"])  # olga's pair is shown again
    checked(other.run())
    assert other.text_input(key=note).value == ""
    go(other, "campaigns")
    assert labelled(other.text_input, "Name").value == ""
    assert labelled(other.number_input, "Pairs per annotator").value == 50
    assert set(kept.kept_values(store, people["ida"].id)) == {
        "pluie_scope"
    }  # her choice; the form's defaults are not written

    # olga, again, logs out and ida signs in, in the same tab: the memory is ida's from that run on
    at = signed_in("campaigns", "olga")
    assert labelled(at.text_input, "Name").value == "Half-filled"
    at.sidebar.button(key="log-out").click().run()
    checked(sign_in(at, "ida", "ida's password"))
    assert "Signed in as ida" in " ".join(c.value for c in at.sidebar.caption)
    assert labelled(at.text_input, "Name").value == ""
    assert labelled(at.number_input, "Pairs per annotator").value == 50
    assert "new-campaign-name" not in kept.kept_values(store, people["ida"].id)  # olga's form did not become ida's
    assert kept.kept_values(store, people["olga"].id)["new-campaign-name"] == "Half-filled"


def test_a_run_where_nothing_changed_writes_nothing_and_a_change_writes_its_key_only(team, monkeypatch):
    from ui.access import keep

    store, ids, people = team
    writes = []
    real = keep.keep_values

    def counted(engine, account_id, values):
        writes.append((account_id, dict(values)))
        return real(engine, account_id, values)

    monkeypatch.setattr(keep, "keep_values", counted)
    at = signed_in("campaigns", "olga")
    checked(at.run())
    go(at, "review")
    go(at, "campaigns")
    assert writes == []  # defaults only: nothing to keep
    labelled(at.number_input, "Pairs per annotator").set_value(9)
    checked(at.run())
    assert writes == [(people["olga"].id, {"new-campaign-quota": 9})]
    checked(at.run())
    go(at, "review")
    assert len(writes) == 1
    # a decision uses up its note, in the store too
    note = note_box(at).key
    at.text_input(key=note).set_value("same meaning")
    checked(at.run())
    assert kept.kept_values(store, people["olga"].id)[note] == "same meaning"
    at.button(key=f"final-3-{note.removeprefix('note-')}").click()
    checked(at.run())
    assert "final level “Same meaning”" in at.success[0].value
    assert set(kept.kept_values(store, people["olga"].id)) == {"new-campaign-quota"}


def test_a_store_out_of_reach_for_the_read_writes_no_default_over_the_persons_values(team, monkeypatch):
    from db.engine import StoreUnavailable
    from ui.access import keep

    store, _, people = team
    kept.keep_values(store, people["olga"].id, {"new-campaign-name": "Half-filled", "new-campaign-quota": 7})
    real = keep.kept_values

    def out_of_reach(engine, account_id):
        raise StoreUnavailable("The store cannot be reached.", "its server is gone", transient=True)

    monkeypatch.setattr(keep, "kept_values", out_of_reach)
    at = signed_in("campaigns", "olga")
    assert labelled(at.text_input, "Name").value == ""  # nothing could be read: the defaults, for this run
    labelled(at.number_input, "Pairs per annotator").set_value(9)
    checked(at.run())
    assert kept.kept_values(store, people["olga"].id) == {"new-campaign-name": "Half-filled", "new-campaign-quota": 7}
    monkeypatch.setattr(keep, "kept_values", real)
    checked(at.run())  # the store is back: the person's values, read again
    assert labelled(at.text_input, "Name").value == "Half-filled"
    assert labelled(at.number_input, "Pairs per annotator").value == 7


def test_the_typing_cookie_says_whose_memory_it_belongs_to():
    from ui.access.keep import owner_tag, typed_cookie, typing_cookie

    assert typing_cookie("%5B%22note-3%22%2C%22caf%C3%A9%22%2C%22a7%22%5D") == ("note-3", "café", "a7")
    assert typing_cookie("%5B%22note-3%22%2C%22caf%C3%A9%22%5D") == ("note-3", "café", "")  # a browser's
    assert typed_cookie("%5B%22note-3%22%2C%22caf%C3%A9%22%2C%22a7%22%5D") == ("note-3", "café")
    assert typing_cookie("%5B%22a%22%2C%22b%22%2C3%5D") is None and typing_cookie(None) is None
    assert (owner_tag(None), owner_tag(7)) == ("", "a7")
