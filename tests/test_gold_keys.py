"""Gold keys that can judge and final labels that say where they came from (issue 53), piece by piece:
keys from a graded score's clear ends, balanced draws, the adjacent level accepted, the consensus the
flags measure people against, a key's own final_source, the Review queue's key that disagrees with
agreeing annotators, and the dataset card counting and explaining the keys — on pure functions, a real
SQLite store, the Review page (AppTest) and a published folder."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.export import export_frame, final_source_counts
from db.publish import publish_dataset
from db.review import adjudicate, review_queue
from pluie_core import quality
from pluie_core.review import FINAL_SOURCES, final_labels
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_pages import APP, store  # noqa: F401 (store: the pages' store fixture)


# ---------------------------------------------------------------- keys from a graded score
def test_graded_keys_come_from_the_clear_ends_away_from_the_cuts():
    scores = pd.Series([1.0, 1.7, 1.8, 2.5, 3.0, 3.9, 4.2, 4.3, 5.0], index=range(10, 19))
    keys = quality.gold_keys(scores, 1.0, 5.0)
    assert keys["level"].tolist() == [0, 0, 0, 1, 2, 2, 3, 3, 3]
    # ends only, a quarter of a band (0.25) kept from each cut at 2, 3 and 4
    assert keys.index[keys["is_key"]].tolist() == [10, 11, 17, 18]
    assert keys.loc[12, "why"] == "near a cut (within 0.25 of a band's width)"
    assert keys.loc[13, "why"] == "at Slightly similar, a level keys are not taken from"
    assert quality.key_rule_text(1.0, 5.0).startswith("score ≤ 1.75 → Very different; score ≥ 4.25 → Same meaning")
    # the organiser's mapping: other cut points and every level, no margin
    mapped = quality.gold_keys(scores, 1.0, 5.0, levels=(0, 1, 2, 3), margin=0, cuts=(2.0, 3.5, 4.5))
    assert mapped["is_key"].all() and mapped["level"].tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3]
    for bad, message in (
        ({"cuts": (3, 2, 4)}, "must increase"),
        ({"margin": 0.5}, "between 0 and 0.5"),
        ({"levels": ()}, "at least one level"),
    ):
        with pytest.raises(quality.QualityError, match=message):
            quality.gold_keys(scores, 1.0, 5.0, **bad)


def test_keys_are_drawn_balanced_and_a_constant_answer_scores_half():
    candidates = pd.DataFrame({"binary_label": [1] * 30 + [0] * 6, "level": [3] * 30 + [0] * 6})
    taken = quality.balanced_keys(candidates, 10, seed=4)
    assert taken["binary_label"].value_counts().to_dict() == {0: 5, 1: 5}
    # counting the keys a campaign has: 4 paraphrase-side already, so 7 of 10 go to the other side (6 exist)
    more = quality.balanced_keys(candidates, 10, seed=4, have=(0, 4))
    assert (more["binary_label"] == 0).sum() == 6
    assert quality.balanced_keys(candidates, 0).equals(candidates)  # 0: every candidate
    assert quality.constant_answer_ceiling(taken) == (0, 0.5)
    lopsided = candidates.iloc[:20]
    assert quality.constant_answer_ceiling(lopsided) == (2, 1.0)
    assert "reaches the minimum gold accuracy (70%)" in quality.balance_text(lopsided, 0.7)
    assert quality.balance_text(taken, 0.7) == (
        "5 on the paraphrase side, 5 not; the best a constant answer scores is 50% (whichever answer)."
    )
    assert "100% (always “Mostly similar” or always “Same meaning”)" in quality.balance_text(lopsided)


def test_a_key_can_accept_the_adjacent_level():
    answers = pd.DataFrame(
        {
            "annotator": ["a"] * 4,
            "level": [2, 1, 3, 4],
            "gold_level": [3, 2, 3, 3],
            "gold_binary": [1, 1, 1, 1],
            "gold_adjacent": [True, True, False, True],
        }
    )
    accuracy = quality.gold_accuracy(answers).loc["a"]
    # 2 for a Same meaning key that accepts its neighbour: right; 1 for a Mostly similar key that accepts
    # Slightly similar: right though across the boundary; 3 on 3: right; Don't know: a miss
    assert accuracy["gold accuracy"] == 0.75 and accuracy["gold exact accuracy"] == 0.75
    strict = quality.gold_accuracy(answers.assign(gold_adjacent=False)).loc["a"]
    assert strict["gold accuracy"] == 0.5 and strict["gold exact accuracy"] == 0.25


# ---------------------------------------------------------------- the consensus
def crowd(seed: int, careful: int = 3):
    """60 pairs with a true side; careful people answer it (a slip one in ten), the spammer always 3."""
    rng = random.Random(seed)
    truth = {p: rng.random() < 0.5 for p in range(60)}
    rows = []
    for person in [f"careful{i}" for i in range(careful)] + ["spammer"]:
        for p in range(60):
            right = truth[p] ^ (rng.random() < 0.1)
            level = 3 if person == "spammer" else (rng.choice([2, 3]) if right else rng.choice([0, 1]))
            rows.append((person, p, level))
    return pd.DataFrame(rows, columns=["annotator", "pair_id", "level"]), truth


def test_agreement_is_measured_against_a_consensus_that_discounts_the_unreliable():
    labels, truth = crowd(1)
    checks = quality.consensus_checks(labels)
    assert checks.loc["careful0", "κ vs consensus"] > 0.6 and checks.loc["careful0", "consensus labels"] >= 30
    assert abs(checks.loc["spammer", "κ vs consensus"]) < 0.2 or np.isnan(checks.loc["spammer", "κ vs consensus"])
    assert checks.loc["spammer", "answer entropy"] == 0.0 and checks.loc["spammer", "top answer"] == 3
    table = checks.assign(**{"median s per pair": 5.0, "longest streak": 2})
    flags = quality.annotator_checks(table, 5.0, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=1000)["flags"]
    assert flags["careful0"] == "" and "answers barely depend on the pair" in flags["spammer"]
    assert "κ vs consensus" in flags["spammer"] or "entropy 0.00 < 0.30" in flags["spammer"]
    # one careful person among noise: the others' consensus is never sure, so no verdict on them (the raw
    # pool's κ would flag them)
    rng = random.Random(2)
    noisy = pd.DataFrame(
        [(who, p, rng.randrange(4)) for who in ("r1", "r2") for p in range(60)],
        columns=["annotator", "pair_id", "level"],
    )
    alone = pd.concat([labels[labels["annotator"] == "careful0"], noisy])
    checks = quality.consensus_checks(alone)
    assert checks.loc["careful0", "consensus labels"] < quality.MIN_KAPPA_LABELS
    assert quality.kappa_against_others(alone)["careful0"] < 0.2


# ---------------------------------------------------------------- where a final label came from
def test_a_key_decides_with_its_own_source_and_a_reviewer_wins():
    majority = pd.Series([1.0, 2.0, np.nan], index=[1, 2, 3])
    final = final_labels(majority, pd.Series({3: 0.0}), keys=pd.Series({1: 3.0, 3: 3.0}))
    assert final["final_source"].tolist() == ["gold", "majority", "adjudicated"]
    assert final["final_level"].tolist() == [3, 2, 0]
    assert "gold" in FINAL_SOURCES


def key_campaign(engine):
    """12 pairs; pair 0 a gold key "Mostly similar" that two annotators both call "Slightly similar"."""
    ds, pairs = make_dataset(engine, "demo", numbered_pairs(12))
    cid = camp.create_campaign(engine, "Keys", [ds], quota=12, overlap=2, n_training=0, seed=1)
    qual.set_quality_settings(engine, cid, gold_rate=0.2, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=50)
    qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair_id": [pairs[0], pairs[1]], "level": [2, 0]}))
    people = [annotators.create_annotator(engine, cid, name)[0] for name in ("ann", "bob")]
    for aid in people:
        while (item := serving.serve_next(engine, aid)) is not None:
            level = 1 if item.pair_id in (pairs[0], pairs[1]) else item.pair_id % 4
            serving.record_label(engine, aid, item.position, level, 5.0)
    return cid, pairs


def test_a_key_against_agreeing_annotators_is_a_pair_to_decide(engine):
    cid, pairs = key_campaign(engine)
    queue = review_queue(engine, campaign_id=cid)
    # pair 0: key Mostly similar, both say Slightly similar: to decide, first; pair 1: key Very different, both
    # say Slightly similar: the key's side, accepted, and the labels agree: not in the queue
    assert bool(queue.loc[pairs[0], "key_disagrees"]) and queue.index[0] == pairs[0]
    assert pairs[1] not in queue.index
    frame = export_frame(engine, campaign_id=cid).set_index("pair_id")
    assert frame.loc[pairs[0], "final_source"] == "gold" and frame.loc[pairs[0], "final_level"] == 2
    adjudicate(engine, pairs[0], 1, "rev", "both annotators agree")
    frame = export_frame(engine, campaign_id=cid).set_index("pair_id")
    assert frame.loc[pairs[0], "final_source"] == "adjudicated" and frame.loc[pairs[0], "final_level"] == 1
    assert pairs[0] not in review_queue(engine, campaign_id=cid).index  # decided: off the pending queue


def test_the_review_page_shows_the_key_that_disagrees(store):
    cid, pairs = key_campaign(store)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/review.py").run()
    assert not at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "The gold key (Mostly similar) disagrees with the annotators" in warning
    assert any("Gold key of this campaign: Mostly similar" in c.value for c in at.caption)


def test_the_card_counts_the_keys_and_says_how_they_were_made(engine, tmp_path):
    cid, pairs = key_campaign(engine)
    counts = final_source_counts(engine, campaign_id=cid)
    assert counts["gold"] == 2
    result = publish_dataset(engine, tmp_path / "out", campaign_id=cid, licence="cc-by-4.0", n_boot=50)
    card = (result.folder / "README.md").read_text()
    assert "2 pairs took a campaign's gold key as final level (`final_source` gold)" in card
    assert "How the gold keys were made: 2 by set by id" in card
    assert "| gold | 2 |" in card
