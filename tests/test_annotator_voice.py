"""The annotator's voice and training that trains (issue 19, items 7 and 8): a comment and a flag with an
answer, shown in Review and exported; an expected level and an explanation per training pair, shown once the
annotator has answered it. Real SQLite files and Streamlit's AppTest."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db.engine import read_session
from db.export import VOICE_COLUMNS, export_frame, export_labels
from db.models import Assignment, Label, TrainingPair
from db.review import adjudicate, review_item, review_queue
from pluie_core.labels import LEVELS
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.paths import REPO

APP = str(REPO / "app.py")


def campaign(engine, n_annotators=2, **settings):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(12))
    cid = camp.create_campaign(
        engine, "Pilot", [ds], **{"quota": 3, "n_training": 2, "overlap": 2, "distribution": "overlap", **settings}
    )
    return cid, [annotators.create_annotator(engine, cid, f"person{i}") for i in range(n_annotators)]


def answer(engine, annotator_id, level, **voice):
    item = serving.serve_next(engine, annotator_id)
    serving.record_label(engine, annotator_id, item.position, level, 1.0, **voice)
    return item


def label_rows(engine):
    with read_session(engine) as s:
        return s.execute(
            sa.select(Label.annotator_id, Label.pair_id, Label.level, Label.comment, Label.flagged).order_by(Label.id)
        ).all()


# ------------------------------------------------------------------ item 7: the annotator's voice


def test_a_comment_and_a_flag_are_part_of_the_answer(engine):
    cid, [(aid, _), _] = campaign(engine, n_training=0)
    item = answer(engine, aid, 2, comment="  typo in B \x00 ", flagged=True)
    (row,) = label_rows(engine)
    assert (row.comment, row.flagged) == ("typo in B", True)  # trimmed, the NUL removed
    shown = serving.served_at(engine, aid, item.position)  # back: the page shows them again
    assert (shown.level, shown.comment, shown.flagged) == (2, "typo in B", True)

    # a change through "back" replaces the whole answer: level, comment and flag
    serving.record_label(engine, aid, item.position, 3, 1.0, replacing=2, comment="", flagged=False)
    (row,) = label_rows(engine)
    assert (row.level, row.comment, row.flagged) == (3, None, False)

    # a comment too long is one sentence, and nothing is stored (the pair is still open)
    nxt = serving.serve_next(engine, aid)
    with pytest.raises(camp.CampaignError, match="at most 500 characters"):
        serving.record_label(engine, aid, nxt.position, 1, 1.0, comment="x" * 501)
    assert len(label_rows(engine)) == 1
    assert serving.serve_next(engine, aid).position == nxt.position
    answer(engine, aid, 1)  # no comment, no flag: the default
    assert label_rows(engine)[-1][3:] == (None, False)


def test_a_flagged_pair_joins_reviews_queue_first_with_its_comments(engine):
    cid, [(alice, _), (bob, _)] = campaign(engine, n_training=0)
    # pair 1: both agree (not a disagreement), Alice flags it; pair 2: they disagree; pair 3: they agree
    first = answer(engine, alice, 3, comment="ungrammatical: “a <b>bold</b> **claim**”", flagged=True)
    answer(engine, bob, 3, comment="fine by me")
    second = answer(engine, alice, 0)
    answer(engine, bob, 3)
    answer(engine, alice, 1)
    answer(engine, bob, 1)

    queue = review_queue(engine)
    assert queue.index.tolist() == [first.pair_id, second.pair_id]  # flagged first, though its labels agree
    assert queue.loc[first.pair_id, "n_flags"] == 1 and queue.loc[second.pair_id, "n_flags"] == 0
    assert review_queue(engine, show="flagged").index.tolist() == [first.pair_id]
    item = review_item(engine, first.pair_id)
    assert item["n_flags"] == 1
    labels = item["labels"].set_index("annotator")
    assert labels.loc["person0", "comment"] == "ungrammatical: “a <b>bold</b> **claim**”"
    assert (bool(labels.loc["person0", "flagged"]), bool(labels.loc["person1", "flagged"])) == (True, False)
    assert labels.loc["person1", "comment"] == "fine by me"

    # once a reviewer has decided, it leaves the pending queue but stays among the flagged pairs
    adjudicate(engine, first.pair_id, 3, "Lena", "typo only")
    assert first.pair_id not in review_queue(engine).index
    assert review_queue(engine, show="flagged").index.tolist() == [first.pair_id]


def test_a_flagged_pair_whose_only_answer_is_dont_know_is_reviewable(engine):
    cid, [(alice, _)] = campaign(engine, n_annotators=1, n_training=0, overlap=1)
    item = answer(engine, alice, 4, comment="I cannot read sentence B", flagged=True)
    row = review_queue(engine).loc[item.pair_id]
    assert (row["n_flags"], row["n_dont_know"], row["spread"]) == (1, 1, 0)
    assert pd.isna(row["min_level"]) and pd.isna(row["majority_level"])


def test_both_exports_carry_the_comments_and_flags(engine, tmp_path):
    cid, [(alice, _), (bob, _)] = campaign(engine, n_training=1)
    training = answer(engine, alice, 1, comment="a training remark", flagged=True)  # left out by default
    answer(engine, bob, 1)
    first = answer(engine, alice, 2, comment="typo in B", flagged=True)
    answer(engine, bob, 2, comment="=cmd|' /C calc'!A0\nsecond line", flagged=True)
    answer(engine, alice, 0)
    answer(engine, bob, 0)

    wide = export_frame(engine).set_index("external_id")
    flagged_row = wide.loc[str(first.pair_id - 1)]  # make_dataset numbers external ids from 0 in pair order
    assert flagged_row["n_flags"] == 2 and flagged_row["flagged_by"] == "person0; person1"
    assert flagged_row["comments"] == "person0: typo in B\nperson1: =cmd|' /C calc'!A0\nsecond line"
    others = wide.drop(index=str(first.pair_id - 1))
    assert (others["n_flags"] == 0).all() and others["flagged_by"].isna().all() and others["comments"].isna().all()
    assert list(wide.columns).index("comments") == list(wide.columns).index("adjudication_note") + 3

    assert review_queue(engine, show="flagged").index.tolist() == [first.pair_id]  # not the training pair
    assert training.pair_id != first.pair_id and training.is_training

    long = export_labels(engine)
    assert "comment" in long.columns and "flagged" in long.columns
    mine = long[long["pair_id"] == first.pair_id].set_index("annotator")
    assert mine.loc["person0", "comment"] == "typo in B" and bool(mine.loc["person0", "flagged"])
    assert long["comment"].tolist().count("a training remark") == 0
    with_training = export_labels(engine, include_training=True)
    remark = with_training[with_training["comment"] == "a training remark"]
    assert len(remark) == 1 and bool(remark["is_training"].iloc[0]) and bool(remark["flagged"].iloc[0])

    import pyarrow.parquet as pq

    from db.publish import publish_dataset

    result = publish_dataset(engine, tmp_path / "out", licence="cc-by-4.0", n_boot=20)
    table = pq.read_table(next((tmp_path / "out").rglob("*.parquet"))).to_pandas()
    assert set(VOICE_COLUMNS) <= set(table.columns) and table["n_flags"].sum() == 2
    assert "typo in B" in "".join(table["comments"].dropna())
    assert "`comments`" in (tmp_path / "out" / "README.md").read_text() and result is not None


# ------------------------------------------------------------------ item 8: training that trains


def test_training_feedback_is_set_all_or_nothing_and_shown_after_the_answer(engine):
    cid, [(aid, _), _] = campaign(engine, n_training=3)
    pairs = camp.training_pairs(engine, cid)
    assert pairs["position"].tolist() == [0, 1, 2] and pairs["expected_level"].isna().all()

    def stored():
        with read_session(engine) as s:
            return s.execute(
                sa.select(TrainingPair.position, TrainingPair.expected_level, TrainingPair.explanation)
                .where(TrainingPair.campaign_id == cid)
                .order_by(TrainingPair.position)
            ).all()

    before = stored()
    for bad, message in (
        ([{"position": 0, "expected_level": 2}, {"position": 1, "expected_level": 4}], "must be one of"),
        ([{"position": 0, "expected_level": 2}, {"position": 7, "expected_level": 1}], "no training pair 8"),
        ([{"position": 1, "explanation": "y" * 1001}], "at most 1,000 characters"),
    ):
        with pytest.raises(camp.CampaignError, match=message):
            camp.set_training_feedback(engine, cid, bad)
        assert stored() == before  # all or nothing
    assert (
        camp.set_training_feedback(
            engine,
            cid,
            [
                {"position": 0, "expected_level": 3, "explanation": "  Same event, **other words**.  "},
                {"position": 1, "expected_level": None, "explanation": "Only the explanation here."},
                {"position": 2, "expected_level": float("nan"), "explanation": float("nan")},  # as a table gives it
            ],
        )
        == 3
    )
    assert stored() == [
        (0, 3, "Same event, **other words**."),
        (1, None, "Only the explanation here."),
        (2, None, None),
    ]

    assert serving.training_feedback(engine, aid, 0) is None  # nothing before the answer
    first = answer(engine, aid, 2)
    feedback = serving.training_feedback(engine, aid, first.position)
    assert (feedback.answer, feedback.expected_level, feedback.explanation) == (2, 3, "Same event, **other words**.")
    assert (feedback.number, feedback.out_of, feedback.top, feedback.bottom) == (1, 3, first.top, first.bottom)
    second = answer(engine, aid, 0)
    assert serving.training_feedback(engine, aid, second.position).expected_level is None
    third = answer(engine, aid, 1)
    assert serving.training_feedback(engine, aid, third.position) is None  # no feedback given for this one
    queued = answer(engine, aid, 1)
    assert not queued.is_training and serving.training_feedback(engine, aid, queued.position) is None
    # training answers stay out of the results, as before
    assert review_queue(engine, show="all").empty
    assert export_frame(engine)["n_labels"].sum() == 1


def test_the_0009_store_upgrades_with_no_comment_flag_or_feedback(db_url):
    from db import init_db
    from db.engine import make_engine, migrate

    old = make_engine(db_url)
    migrate(old, "0009")
    with old.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO datasets (id, name, description, source_format, created_at) "
            "VALUES (1, 'kept', '', 'csv', '2026-01-01')"
        )
        conn.exec_driver_sql(
            "INSERT INTO pairs (id, dataset_id, source, hypothesis, text_hash) VALUES (1, 1, 's', 'h', 'x')"
        )
        conn.exec_driver_sql(
            "INSERT INTO campaigns (id, name, quota, overlap, n_training, guidelines, pair_order, "
            "seed, active, distribution, created_at) VALUES (1, 'old', 2, 1, 1, '', 'random', 0, 1, "
            "'share', '2026-01-01')"
        )
        conn.exec_driver_sql("INSERT INTO training_pairs (campaign_id, position, pair_id) VALUES (1, 0, 1)")
        conn.exec_driver_sql(
            "INSERT INTO annotators (id, name, is_external, created_at) VALUES (1, 'p', 1, '2026-01-01')"
        )
        conn.exec_driver_sql(
            "INSERT INTO labels (pair_id, annotator_id, level, is_training, created_at, updated_at) "
            "VALUES (1, 1, 2, 0, '2026-01-01', '2026-01-01')"
        )
    old.dispose()
    engine = init_db(db_url)
    assert [tuple(r[2:]) for r in label_rows(engine)] == [(2, None, False)]
    pairs = camp.training_pairs(engine, 1)
    assert pd.isna(pairs.loc[0, "expected_level"]) and pairs.loc[0, "explanation"] == ""
    engine.dispose()


# ------------------------------------------------------------------ the pages (AppTest)


@pytest.fixture
def store(db_url, engine, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    monkeypatch.chdir(REPO)
    return engine


def run_app(token=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    if token is not None:
        at.query_params["token"] = token
    return at.run()


def test_the_organiser_sets_training_feedback_on_campaigns(store):
    cid, _ = campaign(store, n_training=2)
    at = run_app()
    at.switch_page("pages/campaigns.py").run()
    assert not at.exception
    shown = [t.value for t in at.text]
    pairs = camp.training_pairs(store, cid)
    assert any(pairs.loc[0, "source"] in t and pairs.loc[0, "hypothesis"] in t for t in shown)  # the pair, as text
    at.selectbox(key=f"expected-{cid}-0").set_value(1)
    at.text_input(key=f"explain-{cid}-0").input("Only *part* of the meaning is shared.")
    at.text_input(key=f"explain-{cid}-1").input("x" * 10)
    next(b for b in at.button if b.label == "Save the training feedback").click().run()
    assert not at.exception and any("Saved: annotators see this feedback" in s.value for s in at.success)
    saved = camp.training_pairs(store, cid)
    assert saved["expected_level"].tolist()[0] == 1 and pd.isna(saved["expected_level"].tolist()[1])
    assert saved["explanation"].tolist() == ["Only *part* of the meaning is shared.", "x" * 10]


def test_the_annotator_sees_the_feedback_then_comments_and_flags_a_pair(store):
    cid, [(aid, token), _] = campaign(store, n_training=2)
    camp.set_training_feedback(
        store, cid, [{"position": 0, "expected_level": 3, "explanation": "Same **event**, <i>other</i> words."}]
    )
    annotators.set_annotator_profile(store, aid, "Ann", "good")
    at = run_app(token)
    assert "Training 1 / 2" in at.get("progress")[0].proto.text
    assert not [t for t in at.text_input if t.key and t.key.startswith("comment-")]  # none on training pairs
    at.button(key="answer-1-0").click().run()
    assert not at.exception
    assert not [b for b in at.button if b.key and b.key.startswith("answer-")]  # feedback, then on
    assert any("Your answer: **Slightly similar** · expected: **Same meaning**" in w.value for w in at.warning)
    assert [t.value for t in at.text] == ["Same **event**, <i>other</i> words."]  # as text, never Markdown
    at.button(key="continue-0").click().run()
    assert "Training 2 / 2" in at.get("progress")[0].proto.text
    at.button(key="answer-3-1").click().run()  # no feedback on this one: straight on
    assert not at.warning and not at.text
    assert "0 / 3" in at.get("progress")[0].proto.text

    at.text_input(key="comment-2").input("typo in B")
    at.checkbox(key="flag-2").check()
    at.button(key="answer-2-2").click().run()
    assert not at.exception
    with read_session(store) as s:
        label = s.scalar(
            sa.select(Label)
            .join(Assignment, (Assignment.pair_id == Label.pair_id) & (Assignment.annotator_id == Label.annotator_id))
            .where(Assignment.position == 2, Label.annotator_id == aid)
        )
    assert (label.level, label.comment, label.flagged, label.is_training) == (2, "typo in B", True, False)
    assert at.text_input(key="comment-3").value == "" and at.checkbox(key="flag-3").value is False
    at.button(key="back").click().run()  # back: the comment and flag are shown with the answer
    assert at.text_input(key="comment-2").value == "typo in B" and at.checkbox(key="flag-2").value is True
    assert LEVELS[2] in "\n".join(c.value for c in at.caption)


def test_review_shows_the_flag_and_the_comment_as_text(store):
    cid, [(alice, _), (bob, _)] = campaign(store, n_training=0)
    first = answer(store, alice, 3, comment="**not bold** <b>nor this</b>", flagged=True)
    answer(store, bob, 3)
    at = run_app()
    at.switch_page("pages/review.py").run()
    assert not at.exception
    assert "Pair 1 of 1" in at.get("progress")[0].proto.text
    # only the voiced labels (Bob said nothing), the comment as typed: no Markdown, no HTML
    assert [t.value for t in at.text] == ["⚑ flagged · person0: **not bold** <b>nor this</b>"]
    assert any("flagged by 1 of 2" in m.value for m in at.markdown)
    at.radio(key="review-show").set_value("flagged").run()
    assert "Pair 1 of 1 · flagged by an annotator" in at.get("progress")[0].proto.text
    at.radio(key="review-show").set_value("pending").run()
    at.text_input(key="reviewer").input("Lena").run()
    at.button(key=f"final-3-{first.pair_id}").click().run()
    assert review_queue(store).empty and review_queue(store, show="flagged").index.tolist() == [first.pair_id]
