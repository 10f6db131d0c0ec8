"""Publish what a campaign made (issue 19, item 4): the export and the dataset folder restricted to a
campaign's pairs and labels, to labelled or to adjudicated pairs; pair_id in the wide export and the
dataset; the card names the campaign, its selection, the share of gold checks and the answers to
checks. Real SQLite files; labels given through the annotators' own write path."""

from __future__ import annotations

import pandas as pd
import pytest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.analysis import add_labels
from db.export import export_frame, export_labels
from db.publish import DATA_FILE, PublishError, publish_dataset
from db.review import adjudicate
from tests.annotation_fixtures import make_dataset, numbered_pairs


def sql(engine, query: str) -> list:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.exec_driver_sql(query)]


@pytest.fixture
def campaign_store(store_url):
    """Two datasets; a campaign on a seeded sample of 20 pairs of "demo" (2 training pairs, overlap 2),
    gold checks (20%, marked by the file's own ids), two annotators who answer everything; labels
    imported on other pairs of demo, outside the campaign; two decisions, one withdrawn."""
    from db import init_db

    engine = init_db(store_url)  # a SQLite file, then PostgreSQL
    demo, demo_ids = make_dataset(
        engine, "demo", numbered_pairs(60), label_kind="binary", gold=[i % 2 for i in range(60)]
    )
    other, other_ids = make_dataset(engine, "other", numbered_pairs(8, "Other "))
    cid = camp.create_campaign(
        engine, "Pilot 40", [demo], quota=6, overlap=2, n_training=2, seed=4, selection={"sample": 20}
    )
    qual.set_quality_settings(engine, cid, gold_rate=0.25, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=9)
    outside = sorted(
        set(demo_ids)
        - {r[0] for r in sql(engine, "SELECT pair_id FROM campaign_pairs UNION SELECT pair_id FROM training_pairs")}
    )
    externals = dict(sql(engine, f"SELECT id, external_id FROM pairs WHERE dataset_id = {demo}"))
    qual.add_gold_pairs(
        engine,
        cid,
        pd.DataFrame({"pair": [f"id:{externals[outside[0]]}", f"id:{externals[outside[1]]}"], "level": [3, 0]}),
    )
    people = [annotators.create_annotator(engine, cid, name)[0] for name in ("ann", "bob")]
    for aid in people:
        annotators.set_annotator_profile(engine, aid, f"P{aid}", "good")
        while (item := serving.serve_next(engine, aid)) is not None:
            serving.record_label(engine, aid, item.position, (item.number + aid) % 4, 4.0)
    imported = outside[2:6]
    add_labels(
        engine,
        pd.DataFrame({"pair_id": imported * 2, "annotator": ["X"] * 4 + ["Y"] * 4, "level": [0, 1, 2, 3, 0, 1, 2, 3]}),
    )
    labelled_in_campaign = sorted(
        {r[0] for r in sql(engine, f"SELECT pair_id FROM labels WHERE campaign_id = {cid} AND is_training = false")}
    )
    adjudicate(engine, labelled_in_campaign[0], 2, "Lena", "settled")
    adjudicate(engine, labelled_in_campaign[1], 1, "Lena")
    adjudicate(engine, labelled_in_campaign[1], None, "Lena", seen_revision=1)  # withdrawn: not adjudicated
    adjudicate(engine, imported[0], 0, "Marc")  # adjudicated, outside the campaign
    yield {
        "engine": engine,
        "campaign": cid,
        "demo": demo,
        "other": other,
        "outside": outside,
        "imported": imported,
        "labelled": labelled_in_campaign,
        "gold": outside[:2],
    }
    engine.dispose()


def test_the_export_takes_a_campaigns_pairs_and_labels_only(campaign_store):
    s = campaign_store
    engine, cid = s["engine"], s["campaign"]
    whole = export_frame(engine)
    assert len(whole) == 68 and whole["pair_id"].tolist() == sorted(r[0] for r in sql(engine, "SELECT id FROM pairs"))
    frame = export_frame(engine, campaign_id=cid)
    expected = {
        r[0]
        for r in sql(
            engine,
            f"SELECT pair_id FROM campaign_pairs WHERE campaign_id = {cid} UNION "
            f"SELECT pair_id FROM gold_pairs WHERE campaign_id = {cid}",
        )
    }
    assert set(frame["pair_id"]) == expected and len(frame) == 18 + 2  # the queue (20 - 2 training) and 2 gold pairs
    assert not set(frame["pair_id"]) & set(s["imported"])
    # only the campaign's annotators, and every label they gave outside training
    assert sorted(c for c in frame.columns if c.startswith("annotator:")) == ["annotator:P1", "annotator:P2"]
    n_labels = sql(engine, f"SELECT COUNT(*) FROM labels WHERE campaign_id = {cid} AND is_training = false")[0][0]
    assert frame["n_labels"].sum() == n_labels
    assert set(frame.loc[frame["n_labels"] > 0, "pair_id"]) == set(s["labelled"])

    labelled = export_frame(engine, campaign_id=cid, pairs="labelled")
    assert labelled["pair_id"].tolist() == s["labelled"] and (labelled["n_labels"] > 0).all()
    assert set(export_frame(engine, pairs="labelled")["pair_id"]) == set(s["labelled"]) | set(s["imported"])
    adjudicated = export_frame(engine, campaign_id=cid, pairs="adjudicated")
    assert adjudicated["pair_id"].tolist() == [s["labelled"][0]] and adjudicated["final_source"].tolist() == [
        "adjudicated"
    ]
    assert export_frame(engine, pairs="adjudicated")["pair_id"].tolist() == sorted([s["labelled"][0], s["imported"][0]])
    assert export_frame(engine, [s["other"]], campaign_id=cid).empty  # the datasets chosen still hold
    training = export_frame(engine, campaign_id=cid, include_training=True)
    assert len(training) == 22 and training["n_training_labels"].sum() == 4  # 2 training pairs x 2 annotators

    long = export_labels(engine, campaign_id=cid)
    assert len(long) == n_labels and set(long["campaign"]) == {"Pilot 40"} and not long["is_training"].any()
    answers = sql(
        engine,
        f"SELECT COUNT(*) FROM assignments a JOIN labels l ON l.annotator_id = a.annotator_id AND "
        f"l.pair_id = a.pair_id WHERE a.is_gold = true AND a.campaign_id = {cid}",
    )[0][0]
    assert answers > 0 and long["is_gold_check"].sum() == answers
    assert set(long.loc[long["is_gold_check"], "pair_id"]) <= set(s["gold"])
    assert len(export_labels(engine, pairs="adjudicated")) == 2 * 1 + 2  # the settled campaign pair, the imported one
    with pytest.raises(ValueError, match="labelled pairs"):
        export_frame(engine, pairs="some")


def test_the_published_campaign_has_pair_ids_and_a_card_that_names_it(campaign_store, tmp_path):
    s = campaign_store
    engine, cid = s["engine"], s["campaign"]
    result = publish_dataset(
        engine, tmp_path / "pilot", campaign_id=cid, pairs="labelled", licence="cc-by-4.0", chunk_size=4, n_boot=50
    )
    rows = pd.read_parquet(tmp_path / "pilot" / DATA_FILE)
    expected = export_frame(engine, campaign_id=cid, pairs="labelled")
    assert result.n_pairs == len(rows) == len(s["labelled"]) and result.n_chunks == -(-len(s["labelled"]) // 4)
    assert rows["pair_id"].tolist() == expected["pair_id"].tolist() == s["labelled"]
    assert list(rows.columns) == list(expected.columns) and str(rows["pair_id"].dtype) == "Int64"
    card = result.card
    answers = int(export_labels(engine, campaign_id=cid)["is_gold_check"].sum())
    for line in [
        "pretty_name: Pilot 40",
        "## Campaign",
        "- **Pilot 40**, on demo.",
        "Pairs taken: a random sample of 20 (seed 4); of those, 2 training pairs",
        "and 18 pairs in the queue",
        "2 annotator(s) per pair, 6 pairs per annotator, seed 4",
        "Gold checks: 2 gold pairs; share of gold checks 25% (2 planned per annotator besides their quota",
        "; served: 2 to each of the 2 annotators).",
        f"Answers to gold checks: {answers:,} of these labels",
        "only the pairs with at least one label",
        "- `pair_id`: ",
    ]:
        assert line in card, line
    assert f"**{len(s['labelled']):,} pairs** from 1 dataset:" in card and "other:" not in card

    whole = publish_dataset(engine, tmp_path / "whole", licence="mit", n_boot=50)
    assert whole.n_pairs == 68 and "## Campaign" not in whole.card and "Rows:" not in whole.card
    assert (
        pd.read_parquet(tmp_path / "whole" / DATA_FILE)["pair_id"].tolist() == export_frame(engine)["pair_id"].tolist()
    )

    with pytest.raises(PublishError, match="No pair of these datasets is among the adjudicated pairs of the campaign"):
        publish_dataset(engine, tmp_path / "none", [s["other"]], campaign_id=cid, pairs="adjudicated", licence="mit")
    with pytest.raises(PublishError, match="This campaign does not exist"):
        publish_dataset(engine, tmp_path / "none", campaign_id=999, licence="mit")
    assert not (tmp_path / "none").exists()
