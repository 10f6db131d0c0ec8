"""Adaptive overlap decided by a fitted model (issue 36, item 4): Dawid–Skene over the binarised labels,
refitted in the background (db.adaptive, the worker's refitter), lets a pair stop at 3 or 4 annotators where
the vote share could only stop it at the least or the most; "Don't know" never counts towards the least."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from db import adaptive, annotators, serving
from db import campaigns as camp
from db.engine import read_session
from db.models import CampaignPair
from pluie_core.aggregation import (
    ADAPTIVE_MIN_LABELS,
    binary_vote_share,
    fit_adaptive_model,
    fit_decides,
    model_posterior,
    pair_posterior,
    pair_posteriors,
    wants_another,
)
from tests.annotation_fixtures import make_dataset, numbered_pairs


def simulated_labels(n_pairs=120, seed=0) -> tuple[pd.DataFrame, np.ndarray]:
    """Three careful annotators (90% on the binary side), one random, one who often says Don't know."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n_pairs)
    rows = []
    for pair in range(n_pairs):
        for name, p in (("careful1", 0.9), ("careful2", 0.9), ("careful3", 0.9), ("random", 0.5), ("unsure", 0.9)):
            if name == "unsure" and rng.random() < 0.4:
                rows.append((pair, name, 4))
                continue
            side = truth[pair] if rng.random() < p else 1 - truth[pair]
            rows.append((pair, name, int(rng.choice([2, 3]) if side else rng.choice([0, 1]))))
    return pd.DataFrame(rows, columns=["pair_id", "annotator", "level"]), truth


def test_dont_know_never_counts_towards_the_least():
    # one level and a Don't know: one usable answer, under a least of 2 it asks for another
    assert wants_another([3, 4], 2, 5, 0.8, least=2)
    assert not wants_another([3, 2], 2, 5, 0.8, least=2)
    assert wants_another([4, 4, 3], 3, 5, 0.8, least=2)
    assert not wants_another([4, 4, 3], 3, 3, 0.8, least=2)  # at the most: stops whatever it holds
    assert not wants_another([3, 4], 3, 5, 0.8, least=2)  # not all its answers in yet


def test_the_fitted_model_can_stop_a_pair_at_three_or_four():
    labels, _ = simulated_labels()
    fit = fit_adaptive_model(labels)
    assert fit_decides(fit) and fit["median_labels"] >= ADAPTIVE_MIN_LABELS
    # 2 against 1: the vote share is 0.67 and can never reach 0.8 there; the model's posterior can
    two_one = ([3, 2, 0], ["careful1", "careful2", "random"])
    assert binary_vote_share(two_one[0]) == pytest.approx(2 / 3)
    assert model_posterior(fit, two_one[1], two_one[0]) >= 0.8
    assert not wants_another(two_one[0], 3, 5, 0.8, least=2, posterior=pair_posterior(two_one[1], two_one[0], fit))
    assert wants_another(two_one[0], 3, 5, 0.8, least=2)  # the vote share asks for a fourth
    # 3 against 1 (0.75 < 0.8): the same
    three_one = ([3, 3, 2, 0], ["careful1", "careful2", "unsure", "random"])
    assert not wants_another(
        three_one[0], 4, 5, 0.8, least=2, posterior=pair_posterior(three_one[1], three_one[0], fit)
    )
    assert wants_another(three_one[0], 4, 5, 0.8, least=2)
    # the random annotator's word alone against a careful one's: not confident either way
    assert model_posterior(fit, ["careful1", "random"], [3, 0]) > 0.5
    assert model_posterior(fit, ["careful1", "careful2"], [3, 0]) < 0.8
    # the random annotator is estimated near chance, the careful ones near 90% (smoothed, never 0 or 1)
    random_diag = np.diag(np.asarray(fit["confusion"]["random"])).mean()
    careful_diag = np.diag(np.asarray(fit["confusion"]["careful1"])).mean()
    assert 0.35 < random_diag < 0.65 and 0.8 < careful_diag < 0.99
    # someone the fit has not seen reads the pooled matrix
    assert model_posterior(fit, ["newcomer"], [3]) == pytest.approx(
        model_posterior({**fit, "confusion": {"x": fit["pooled"]}}, ["x"], [3])
    )


def test_the_vectorised_posteriors_equal_the_per_pair_rule():
    labels, _ = simulated_labels(n_pairs=40, seed=3)
    labels = labels.sample(frac=0.8, random_state=1)  # uneven pairs, some with Don't know only
    fit = fit_adaptive_model(labels)
    for model in (fit, None):
        table = pair_posteriors(labels, model)
        for pair_id, rows in labels.groupby("pair_id"):
            assert table.at[pair_id, "posterior"] == pytest.approx(
                pair_posterior(rows["annotator"].tolist(), rows["level"].tolist(), model), abs=1e-12
            )
            assert table.at[pair_id, "n_usable"] == int((rows["level"] != 4).sum())
            assert table.at[pair_id, "n_answers"] == len(rows)


def test_too_few_labels_per_annotator_leave_the_vote_share_in_charge():
    labels, _ = simulated_labels(n_pairs=ADAPTIVE_MIN_LABELS - 2)
    fit = fit_adaptive_model(labels)
    assert not fit_decides(fit)
    assert pair_posterior(["careful1", "careful2", "random"], [3, 2, 0], fit) == pytest.approx(2 / 3)
    assert fit_adaptive_model(pd.DataFrame({"pair_id": [1], "annotator": ["a"], "level": [4]})) is None


# ---------------------------------------------------------------- through the store


def wanted(engine, campaign_id) -> dict[int, int]:
    with read_session(engine) as s:
        return dict(
            s.execute(
                select(CampaignPair.pair_id, CampaignPair.n_wanted).where(CampaignPair.campaign_id == campaign_id)
            ).all()
        )


def answer(engine, annotator_id, level_of, limit=None) -> list[int]:
    done = []
    while (limit is None or len(done) < limit) and (item := serving.serve_next(engine, annotator_id)) is not None:
        serving.record_label(engine, annotator_id, item.position, level_of(item.pair_id), 1.0)
        done.append(item.pair_id)
    return done


def test_a_refit_stops_disputed_pairs_at_three_and_takes_back_unserved_slots(engine):
    """a is right everywhere, b wrong on 12 pairs; c sides with a. Before any fit the vote share asks a fourth
    annotator for every 2-to-1 pair; once the model is fitted (a and c agree, b stands alone) it settles them
    at 3 and takes back the fourth slots not yet served; the 1-to-1 pairs c has not reached are settled on a's
    word (the model trusts a over b), and an answer changed later is decided by the fit in its own transaction."""
    dataset_id, _ = make_dataset(engine, "d", numbered_pairs(40))
    cid = camp.create_campaign(
        engine,
        "adaptive",
        [dataset_id],
        quota=40,
        overlap=2,
        overlap_max=5,
        confidence=0.8,
        n_training=0,
        distribution="overlap",
    )
    pairs = sorted(wanted(engine, cid))
    truth = {p: 3 if i % 2 else 0 for i, p in enumerate(pairs)}
    disputed = pairs[:12]
    a, b, c, d = (annotators.create_annotator(engine, cid, name)[0] for name in "abcd")
    answer(engine, a, lambda p: truth[p])
    answer(engine, b, lambda p: 3 - truth[p] if p in disputed else truth[p])
    assert wanted(engine, cid) == {p: 3 if p in disputed else 2 for p in pairs}
    # c answers half the disputed pairs before any fit: 2 to 1 is 0.67 < 0.8, each asks for a fourth
    first = answer(engine, c, lambda p: truth[p], limit=6)
    assert all(wanted(engine, cid)[p] == 4 for p in first)
    assert adaptive.campaigns_due(engine) == [cid]
    refit = adaptive.refit_campaign(engine, cid)
    assert refit.decides and refit.raised == 0 and refit.lowered == 12
    assert adaptive.campaigns_due(engine) == []  # nothing changed since
    # the unserved slots are taken back: 3 where c answered, 2 where a and b alone disagree (a is trusted)
    assert wanted(engine, cid) == {p: 3 if p in first else 2 for p in pairs}
    assert answer(engine, c, lambda p: truth[p]) == [] and answer(engine, d, lambda p: truth[p]) == []
    with read_session(engine) as s:
        posteriors = dict(
            s.execute(select(CampaignPair.pair_id, CampaignPair.posterior).where(CampaignPair.campaign_id == cid)).all()
        )
    assert all(posteriors[p] >= 0.8 for p in pairs)
    # b goes back on an agreed pair and contradicts a: 1 to 1, which the vote share would send to a third
    # annotator; under the fit a's word holds and the pair stays at 2
    agreed = pairs[20]
    position = next(i.position for i in (serving.served_at(engine, b, k) for k in range(40)) if i.pair_id == agreed)
    serving.record_label(engine, b, position, 3 - truth[agreed], 1.0, replacing=truth[agreed])
    assert wanted(engine, cid)[agreed] == 2
    with read_session(engine) as s:
        assert s.scalar(select(CampaignPair.posterior).where(CampaignPair.pair_id == agreed)) >= 0.8
    state = adaptive.adaptive_state(engine, cid)
    assert state["fitted"] and state["decides"] and state["n_labels"] == 40 * 2 + 6
    assert adaptive.campaigns_due(engine) == [cid]  # the changed answer calls for the next refit


def test_the_worker_refits_in_the_background(engine):
    """A worker (no scoring work for it) refits an adaptive campaign whose labels changed within seconds."""
    import worker as worker_module

    dataset_id, _ = make_dataset(engine, "d", numbered_pairs(24))
    cid = camp.create_campaign(
        engine,
        "adaptive",
        [dataset_id],
        quota=24,
        overlap=2,
        overlap_max=4,
        confidence=0.8,
        n_training=0,
        distribution="overlap",
    )
    a, b = (annotators.create_annotator(engine, cid, name)[0] for name in "ab")
    answer(engine, a, lambda p: 3)
    answer(engine, b, lambda p: 3 if p % 3 else 0)
    assert adaptive.adaptive_state(engine, cid) == {"fitted": False, "decides": False}
    w = worker_module.ScoringWorker(engine, device="cpu", poll_seconds=0.1, refit_seconds=0.2, run_ids=[10**6])
    thread = threading.Thread(target=w.run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not adaptive.adaptive_state(engine, cid)["fitted"] and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        w.request_stop()
        thread.join(timeout=60)
    state = adaptive.adaptive_state(engine, cid)
    assert state["fitted"] and state["n_labels"] == 48 and state["decides"]
