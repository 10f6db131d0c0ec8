"""The campaign admin page and the labelling view, run by Streamlit's AppTest against a real SQLite file."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db.engine import read_session
from db.models import Annotator, Campaign, Label
from tests.annotation_fixtures import make_dataset, numbered_pairs, queue_of
from tests.paths import REPO
from tests.store_fixtures import add_pairs, open_page, rerun, sentence_pairs, widget

APP = str(REPO / "app.py")


@pytest.fixture
def store(db_url, engine, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    monkeypatch.chdir(REPO)
    return engine


def app(token: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    if token is not None:
        at.query_params["token"] = token
    return at.run()


def texts(at: AppTest) -> str:
    parts = [
        e.value
        for kind in ("markdown", "caption", "error", "success", "info", "warning", "title", "subheader", "code")
        for e in at.get(kind)
        if isinstance(getattr(e, "value", None), str)
    ]
    return "\n".join(parts + [h.proto.body for h in at.html])


def pair_html(at: AppTest) -> str:
    shown = [h.proto.body for h in at.html if "pluie-pair" in h.proto.body and "<style>" not in h.proto.body]
    return shown[0] if shown else ""


def campaign_with_annotators(engine, n_annotators=2, **settings):
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(20))
    cid = camp.create_campaign(engine, "Pilot", [ds], **{"quota": 3, "n_training": 2, **settings})
    return cid, [annotators.create_annotator(engine, cid, f"person{i}") for i in range(n_annotators)]


def test_admin_sets_up_a_campaign_and_its_links(store):
    make_dataset(store, "demo", numbered_pairs(20))
    at = app()
    at.switch_page("pages/campaigns.py").run()
    assert not at.exception
    assert "No account and no admin password exist" in texts(at)
    # a user error is a sentence, not a traceback
    at.text_input[0].input("Pilot")
    at.button[0].click().run()  # the form's submit button
    assert "Choose at least one dataset." in texts(at) and not at.exception

    at.multiselect[0].select(at.multiselect[0].options[0])
    number = {n.label: n for n in at.number_input}
    number["Pairs per annotator"].set_value(4)
    number["Annotators per pair"].set_value(2)
    number["Training pairs"].set_value(3)
    at.radio[0].set_value("least_labelled")
    next(b for b in at.button if b.label == "Create campaign").click().run()
    assert not at.exception
    with read_session(store) as s:
        campaign = s.scalar(select(Campaign))
    assert (campaign.name, campaign.quota, campaign.overlap, campaign.n_training, campaign.pair_order) == (
        "Pilot",
        4,
        2,
        3,
        "least_labelled",
    )
    assert "tomato soup" in campaign.guidelines and "kibble" in campaign.guidelines

    next(t for t in at.text_area if t.label.startswith("New annotators")).input("Alice\nBob")
    next(b for b in at.button if b.label == "Create personal links").click().run()
    code = at.code[0].value
    tokens = re.findall(r"\?token=([\w-]+)", code)
    assert len(tokens) == 2 and "Alice" in code and "only once" in texts(at)
    assert [annotators.annotator_for_token(store, t).name for t in tokens] == ["Alice", "Bob"]

    guide = at.text_area(key=f"guide-{campaign.id}")
    guide.input("Be **kind** to the cat.").run()
    next(b for b in at.button if b.label == "Save the guidelines").click().run()
    assert camp.get_campaign(store, campaign.id).guidelines == "Be **kind** to the cat."
    assert (
        annotators.annotator_view(store, annotators.annotator_for_token(store, tokens[1]).id).guidelines
        == "Be **kind** to the cat."
    )

    revoke = next(s for s in at.selectbox if s.label == "Revoke a link")
    revoke.select(revoke.options[0])
    at.run()
    next(b for b in at.button if b.label == "Revoke").click().run()
    assert not at.exception
    assert annotators.annotator_for_token(store, tokens[0]) is None and annotators.annotator_for_token(store, tokens[1])


def test_annotator_flow_profile_training_labels_back_and_thanks(store):
    cid, [(aid, token), _] = campaign_with_annotators(store)
    at = app(token)
    assert not at.exception
    assert not at.button or all(not b.key or not b.key.startswith("answer-") for b in at.button)
    at.text_input[0].input("Ann")
    at.radio[0].set_value("advanced")
    at.button[0].click().run()
    assert not at.exception
    with read_session(store) as s:
        assert s.get(Annotator, aid).english_level == "advanced"

    answers = [b for b in at.button if b.key and b.key.startswith("answer-")]
    assert [b.label for b in answers] == [
        "Very different",
        "Slightly similar",
        "Mostly similar",
        "Same meaning",
        "Don't know",
    ]
    assert "Training 1 / 2" in at.get("progress")[0].proto.text
    body = pair_html(at)
    assert "pluie-diff" in body and body.count("pluie-sentence") == 2

    for level in (0, 4, 1):  # two training pairs, then the first counted one
        at.button(key=f"answer-{level}-{[0, 4, 1].index(level)}").click().run()
    assert "1 / 3" in at.get("progress")[0].proto.text
    at.button(key="back").click().run()
    assert "Your answer was **Slightly similar**" in texts(at)
    at.button(key="answer-3-2").click().run()
    with read_session(store) as s:
        labels = {
            (label.level, label.is_training) for label in s.scalars(select(Label).where(Label.annotator_id == aid))
        }
    assert labels == {(0, True), (4, True), (3, False)}

    at = app(token)  # a new browser session resumes at the same place
    assert "1 / 3" in at.get("progress")[0].proto.text
    at.button(key="answer-2-3").click().run()
    at.button(key="answer-2-4").click().run()
    assert "Thank you!" in texts(at) and "your 3 pairs" in texts(at)


def test_a_token_opens_only_its_own_queue_and_never_admin_pages(store):
    cid, [(a, token_a), (b, token_b)] = campaign_with_annotators(store, overlap=1, n_training=0)
    annotators.set_annotator_profile(store, a, "A", "good")
    annotators.set_annotator_profile(store, b, "B", "native")
    first_a = serving.serve_next(store, a)
    serving.record_label(store, a, first_a.position, 3, 1)

    at = app(token_b)
    assert "0 / 3" in at.get("progress")[0].proto.text  # B's own progress, not A's
    assert first_a.top not in texts(at) and first_a.bottom not in texts(at)  # overlap 1: A's pair is not B's
    assert "Campaigns" not in texts(at) and "score" not in texts(at).lower()
    with pytest.raises(ValueError, match=r"Known pages: .*annotate.py'\]"):
        at.switch_page("pages/campaigns.py")  # not even registered in an annotator's navigation
    direct = AppTest.from_file(str(REPO / "pages" / "campaigns.py"), default_timeout=30)
    direct.query_params["token"] = token_b
    direct.run()  # and the page itself refuses a token holder
    assert "This link opens the labelling view only" in texts(direct) and not direct.text_area

    for bad in ("not-a-token", ""):
        at = app(bad)
        assert "not valid, or it has been revoked" in texts(at)
        assert not at.button and not pair_html(at)
    annotators.revoke_annotator(store, a)
    assert "revoked" in texts(app(token_a))


def test_admin_password_guards_every_page_without_a_token(store, monkeypatch, tmp_path):
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "correct horse")
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))  # where the session secret is made
    at = app()
    assert [t.label for t in at.text_input] == ["Account", "Password"]  # an empty account: the admin password
    at.switch_page("pages/campaigns.py").run()  # the page asked for shows the login form instead
    assert [t.label for t in at.text_input] == ["Account", "Password"] and "Labelling campaigns" not in texts(at)
    at.text_input[1].input("wrong")
    at.button[0].click().run()
    assert "Wrong account or password." in texts(at)
    at.text_input[1].input("correct horse")
    at.button[0].click().run()
    assert "Labelling campaigns" in texts(at) and not at.exception


def test_markup_in_a_pair_is_shown_as_text(store):
    ds, _ = make_dataset(
        store,
        "evil",
        [
            ("<img src=x onerror=alert(1)>", "<script>alert('x')</script> hello"),
            ("A plain sentence.", "Another plain sentence."),
        ],
    )
    cid = camp.create_campaign(store, "xss", [ds], n_training=0, quota=2, pair_order="random", seed=0)
    aid, token = annotators.create_annotator(store, cid, "x")
    annotators.set_annotator_profile(store, aid, "X", "good")
    at = app(token)
    while "onerror" not in pair_html(at):
        at.button(key=f"answer-0-{serving.progress(store, aid).done}").click().run()
    body = pair_html(at)
    assert "<img" not in body and "<script" not in body
    unmarked = html.unescape(re.sub(r"</?mark[^>]*>", "", body))  # the highlight aside, the text is the pair's
    assert "<img src=x onerror=alert(1)>" in unmarked and "<script>alert('x')</script> hello" in unmarked


# -- the guidelines' marks and a sampled campaign from the form (issue 14, points 9 and 10)


def test_the_guidelines_mark_differences_as_the_labelling_view_does(store):
    from pluie_core.diff import MARK_STYLE, diff_html

    engine = store
    add_pairs(engine, "d", sentence_pairs(6))
    cid = camp.create_campaign(engine, "Pilot", [1], quota=2, n_training=1)
    _, token = annotators.create_annotator(engine, cid, "someone")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["token"] = token
    rerun(at)
    shown = next(m for m in at.markdown if "drinks water" in m.value)
    assert shown.proto.allow_html
    live = diff_html("The cat drinks water.", "The cat eats kibble.")[0]
    assert f'style="{MARK_STYLE}">drinks water</mark>.' in live  # the labelling view's highlight...
    assert f'style="{MARK_STYLE}">drinks water</mark>.' in shown.value  # ...is the guidelines' one
    assert ":yellow-background[" not in shown.value and "drinks water</mark> ." not in shown.value

    # text an organiser writes is Markdown: HTML in it is shown, never run
    at = open_page("campaigns")
    guide = at.text_area(key=f"guide-{cid}")
    guide.input("Mind the :yellow-background[marks]. <img src=x onerror=alert(1)>")
    rerun(at)
    preview = next(m for m in at.markdown if "Mind the" in m.value)
    assert f'<mark class="pluie-diff" style="{MARK_STYLE}">marks</mark>.' in preview.value
    assert "<img" not in preview.value and "&lt;img" in preview.value


def test_the_campaign_form_takes_a_sample(store):
    engine = store
    add_pairs(engine, "d", sentence_pairs(40))
    at = open_page("campaigns")
    widget(at.text_input, "Name").input("Sampled")
    widget(at.multiselect, "Datasets").set_value([(1, "d", 40)])
    widget(at.number_input, "Random sample of (0 = every pair kept)").set_value(10)
    widget(at.number_input, "Seed").set_value(3)
    widget(at.button, "Create campaign").click()
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    campaign = camp.list_campaigns(engine)[0]
    assert campaign.selection == {"sample": 10, "seed": 3} and campaign.distribution == "share"
    assert len(queue_of(engine, campaign.id)) == 10
    assert "a random sample of 10 (seed 3)" in texts(at) and "Share the work" in texts(at)
