"""Quality checks that judge people right on a graded reference (issue 53), through the store's serving
path on a real SQLite file with SICK's own scores (../shared/datasets, used by path):

- gold keys from a graded score come from its clear ends only, balanced across the two sides, so an
  always-"Same meaning" answerer cannot pass them; the page's plan says what it takes;
- the flags: a careful annotator carries none, the spammer is flagged with the streak rule switched off
  (an always-"Same meaning" one, and one who varies one answer in ten), across seeds, by a consensus that
  discounts unreliable people rather than the raw pool;
- a key that decides a pair's final label says so (`final_source` gold), and a model's posterior of a gold
  pair is its labels', never the key at 1.0.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.datasets import import_file
from db.export import export_frame, final_source_counts, pair_aggregation
from pluie_core import quality
from tests.paths import DATASETS

SICK = DATASETS / "sick" / "SICK_trial.txt"
pytestmark = pytest.mark.skipif(not SICK.exists(), reason="the shared SICK file is not beside the repository")


def sick_level(score: float) -> int:
    """SICK's 1-5 relatedness in four equal bands: what a careful reader's level tracks."""
    return int(np.clip(np.floor((score - 1.0) / 4.0 * 4), 0, 3))


def run_campaign(engine, seed: int, spammer_varies: bool = False, method: str = "dawid_skene"):
    """A SICK campaign, 20 gold keys taken with the defaults, and four people labelling through db.serving:
    careful (SICK's band, now and then the neighbouring level), spammer (always "Same meaning"; with
    ``spammer_varies`` another level one answer in ten), noisy (Don't know 40% of the time, else at random)
    and short (careful, stops after ten). The streak rule is switched off (a streak longer than any quota)."""
    dataset = import_file(engine, str(SICK), "SICK").dataset_id
    cid = camp.create_campaign(
        engine, "SICK week", [dataset], quota=40, overlap=3, n_training=0, seed=seed, selection={"sample": 100}
    )
    camp.update_campaign(engine, cid, aggregation=method)
    qual.set_quality_settings(
        engine,
        cid,
        gold_rate=0.2,
        gold_min_accuracy=0.7,
        fast_fraction=0.01,
        streak_length=qual.MAX_STREAK_LENGTH,
        min_gold_checks=5,
    )
    plan = qual.plan_gold_from_dataset(engine, cid, dataset, 20, seed=seed)
    added = qual.add_gold_plan(engine, plan)
    scores = pd.Series(export_frame(engine, [dataset]).set_index("pair_id")["label"])
    rng = random.Random(seed)

    def careful(pair_id):
        level = sick_level(scores[pair_id] + rng.gauss(0, 0.35))
        return level

    def spammer(pair_id):
        return rng.choice([0, 1, 2]) if spammer_varies and rng.random() < 0.1 else 3

    def noisy(pair_id):
        return 4 if rng.random() < 0.4 else rng.randrange(4)

    people = {
        name: annotators.create_annotator(engine, cid, name)[0] for name in ("careful", "spammer", "noisy", "short")
    }
    answer = {"careful": careful, "spammer": spammer, "noisy": noisy, "short": careful}
    # they label in turns, as a week goes: each answers one pair, then the next person
    done = {name: 0 for name in people}
    active = set(people)
    while active:
        for name in sorted(active):
            item = serving.serve_next(engine, people[name])
            if item is None or (name == "short" and done[name] >= 10):
                active.discard(name)
                continue
            serving.record_label(engine, people[name], item.position, answer[name](item.pair_id), 6.0 + rng.random())
            done[name] += 1
    return cid, dataset, people, plan, added, scores


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_careful_carries_no_flag_and_the_spammer_is_flagged_without_the_streak_rule(engine, seed):
    cid, dataset, people, plan, added, scores = run_campaign(engine, seed, spammer_varies=seed == 3)
    # the keys: clear ends only, 10 on each side: always "Same meaning" scores 50% on them
    keys = qual.gold_pairs(engine, cid)
    assert len(keys) == 20 and set(keys["known answer"]) == {"Very different", "Same meaning"}
    assert (keys["binary_label"] == 1).sum() == 10
    assert (
        keys["reference_score"].between(1.0, 1.75).sum() == 10 and keys["reference_score"].between(4.25, 5).sum() == 10
    )
    assert quality.constant_answer_ceiling(keys) == (0, 0.5)
    assert "the best a constant answer scores is 50%" in plan.balance
    table = qual.campaign_live(engine, cid).annotators.set_index("annotator")
    assert table.loc["careful", "flags"] == "", table.loc["careful", ["flags", "not judged yet"]].tolist()
    assert table.loc["careful", "gold accuracy"] >= 0.7
    spam = table.loc["spammer", "flags"]
    assert "answers barely depend on the pair" in spam and "in a row" not in spam
    assert table.loc["spammer", "gold accuracy"] < 0.7 and "gold accuracy" in spam
    # ranked by the evidence: the spammer before the careful one
    order = list(table.index)
    assert order.index("spammer") < order.index("careful")


def test_a_gold_key_that_decides_says_so_and_is_never_a_models_posterior(engine):
    cid, dataset, people, plan, added, scores = run_campaign(engine, 5)
    keys = qual.gold_pairs(engine, cid).set_index("pair_id")
    answered = keys[keys["served"] > 0]
    assert len(answered)
    fitted = pair_aggregation(engine, campaign_id=cid, method="dawid_skene")
    assert fitted.anchored
    # a gold pair's posterior is what its labels say under the anchored fit, not the key at 1.0: the noisy
    # answers to a "Very different" key leave doubt
    posterior = fitted.pairs["posterior"].reindex(answered.index).dropna()
    assert len(posterior) and (posterior < 1.0).any()
    frame = export_frame(engine, campaign_id=cid, aggregation="dawid_skene", fitted=fitted).set_index("pair_id")
    gold_rows = frame.loc[keys.index]
    assert (gold_rows["final_source"] == "gold").all()
    assert (gold_rows["final_level"].astype(int) == keys["level"].astype(int)).all()
    others = frame.drop(index=keys.index)
    assert "gold" not in set(others["final_source"])
    counts = final_source_counts(engine, campaign_id=cid, aggregation="dawid_skene", fitted=fitted)
    assert counts["gold"] == 20
