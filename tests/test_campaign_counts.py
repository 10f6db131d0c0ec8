"""One count and one α everywhere (issue 19, item 5): a campaign with gold checks drawn from its own
dataset, read by the Campaigns, Live campaign, Datasets and Agreement pages and the dataset card. Every
page counts the same labels (answers to gold checks included, training left out) and shows the same
Krippendorff's α; "pairs fully labelled" counts answered pairs, not served ones."""

from __future__ import annotations

import random
import re
from collections import Counter

import pandas as pd
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.datasets import datasets_overview, store_totals
from db.engine import read_session
from db.models import Label
from db.publish import publish_dataset
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.paths import REPO
from tests.test_annotation_pages import APP, store, texts  # noqa: F401 (store: the pages' store fixture)


def labelled_campaign(engine):
    """20 of 30 pairs sampled (2 for training), three annotators who label the same pairs (overlap
    first), gold checks taken from pairs of the dataset the sample left out; the last pair served to
    the third annotator is left unanswered."""
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(30))
    cid = camp.create_campaign(
        engine,
        "Pilot",
        [ds],
        quota=6,
        overlap=3,
        n_training=2,
        seed=3,
        selection={"sample": 20},
        distribution="overlap",
    )
    queue = ann_pairs(engine, cid)
    outside = [p for p in pairs if p not in queue][:4]
    qual.set_quality_settings(engine, cid, gold_rate=0.25, gold_min_accuracy=0.5, fast_fraction=0.3, streak_length=9)
    qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair_id": outside, "level": [0, 1, 2, 3]}))
    rng = random.Random(7)
    people = [annotators.create_annotator(engine, cid, name)[0] for name in ("ann", "bob", "cy")]
    for k, aid in enumerate(people):
        answered = 0
        while (item := serving.serve_next(engine, aid)) is not None:
            if k == 2 and not item.is_training and item.pair_id in queue and (answered := answered + 1) == 4:
                break  # served to all three, answered by two
            level = item.pair_id % 4 if rng.random() < 0.7 else rng.randrange(5)
            serving.record_label(engine, aid, item.position, level, 4.0)
    return ds, cid


def ann_pairs(engine, cid):
    from db.models import CampaignPair, TrainingPair

    with read_session(engine) as s:
        return set(s.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == cid))) | set(
            s.scalars(select(TrainingPair.pair_id).where(TrainingPair.campaign_id == cid))
        )


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_every_page_and_the_card_count_the_same_labels_and_show_the_same_alpha(store, tmp_path):
    ds, cid = labelled_campaign(store)
    with read_session(store) as s:
        rows = s.execute(select(Label.pair_id, Label.is_training)).all()
    counted = [p for p, training in rows if not training]
    live = qual.campaign_live(store, cid)
    assert live.figures["gold checks answered"] > 0  # answers to checks are among the labels
    overview = camp.campaign_overview(store, cid)
    assert overview["labels"] == live.figures["labels"] == len(counted) == store_totals(store)["labels"]
    assert datasets_overview(store).set_index("dataset").loc["demo", "labels"] == len(counted)
    assert live.figures["labels in the last hour"] == len(counted)  # never more than the total

    # answered, not served: the third annotator's last pair has its three slots taken, two answers
    queue = ann_pairs(store, cid) - {p for p, training in rows if training}
    per_pair = Counter(p for p in counted if p in queue)
    assert overview["pairs fully labelled"] == sum(1 for n in per_pair.values() if n >= 3) > 0
    assert live.figures["pairs short of their overlap"] == overview["pairs in queue"] - overview["pairs fully labelled"]

    agreement = live.figures["agreement"]
    ordinal, binary = agreement["ordinal"], agreement["binary"]
    assert ordinal["alpha"] is not None and binary["alpha"] is not None

    # the pages
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/campaigns.py").run()
    assert not at.exception and metrics(at)["Labels"] == f"{len(counted):,}"
    assert metrics(at)["Pairs fully labelled"] == f"{overview['pairs fully labelled']:,}"
    assert "20 pairs taken: 2 make the training trial" in texts(at) and "18 are in the queue" in texts(at)
    at.switch_page("pages/live_campaign.py").run()
    assert not at.exception
    shown = metrics(at)
    assert shown["Labels"] == f"{len(counted):,}" and shown["In the last hour"] == f"{len(counted):,}"
    assert (
        shown["α ordinal so far"] == f"{ordinal['alpha']:.3f}"
        and shown["α binarised so far"] == f"{binary['alpha']:.3f}"
    )
    at.switch_page("pages/home.py").run()
    assert not at.exception and metrics(at)["Labels"] == f"{len(counted):,}"
    agreement_page = AppTest.from_file(str(REPO / "pages" / "agreement.py"), default_timeout=60).run()
    assert not agreement_page.exception
    assert f"{len(counted):,} labels" in texts(agreement_page)
    page = metrics(agreement_page)
    assert page["Krippendorff's α ordinal"] == f"{ordinal['alpha']:.3f}"
    assert f"95% CI [{ordinal['ci_low']:.3f}, {ordinal['ci_high']:.3f}]" in texts(agreement_page)
    agreement_page.radio(key="agreement_view").set_value("Binarised").run()
    assert metrics(agreement_page)["Krippendorff's α binarised"] == f"{binary['alpha']:.3f}"
    assert "Five-level scale" not in texts(agreement_page) and "Binarised: 0–1 non-paraphrase" in texts(agreement_page)

    # the card, with or without the training trial's labels in its rows
    for include_training in (False, True):
        card = publish_dataset(
            store,
            tmp_path / f"out-{include_training}",
            [ds],
            licence="mit",
            include_training=include_training,
            n_boot=1000,
        ).card
        for figure in (ordinal, binary):
            assert f"{figure['alpha']:.3f} (95% CI {figure['ci_low']:.3f} – {figure['ci_high']:.3f}" in card
        assert re.search(r"answers to gold checks included", card)
