"""Adaptive overlap's model, refitted in the background: the worker (worker.py) calls refit_due every few
seconds, and each adaptive campaign whose labels changed since its last fit is refitted
(pluie_core.aggregation.fit_adaptive_model: Dawid–Skene over the binarised labels) and stored on the
campaign, where an answer's transaction reads it (db.serving._adapt_overlap) to compute the pair's
posterior. The refit also settles the pairs whose decision the new fit changes:

- a pair with every answer it asked for in, whose posterior under the new fit is below the campaign's
  confidence (or which holds fewer usable answers than the least), gets one more annotator (up to the most);
- a pair that asked for an annotator not served yet, whose answers are all in and whose posterior now
  reaches the confidence, stops asking: its unserved slot is taken back.

Every change is a conditional UPDATE on the values read (n_wanted, n_assigned), so an answer or a
reservation that lands between the read and the write is never overridden: that pair waits for the next
refit. Until the fit decides (pluie_core.aggregation.fit_decides: enough labels per annotator), the
vote share decides, as it did before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd
from sqlalchemy import Engine, bindparam, func, select, update

from db.analysis import counted_label
from db.engine import read_session, write_session
from db.models import Campaign, CampaignPair, Label, utcnow
from db.queries import raw_rows
from pluie_core.aggregation import fit_adaptive_model, fit_decides, pair_posteriors

POSTERIOR_CHANGE = 1e-9  # a pair's stored posterior is rewritten only when it moved by more


@dataclass(frozen=True)
class Refit:
    campaign_id: int
    n_labels: int
    decides: bool  # the fit has enough labels per annotator to decide
    raised: int  # pairs given one more annotator
    lowered: int  # pairs whose unserved slot was taken back
    posteriors_written: int


def _signature(n_labels: int, last_update) -> list:
    return [int(n_labels), None if last_update is None else str(last_update)]


def _signatures(session, campaign_ids: list[int]) -> dict[int, list]:
    rows = session.execute(
        select(Label.campaign_id, func.count(), func.max(Label.updated_at))
        .where(Label.campaign_id.in_(campaign_ids), counted_label())
        .group_by(Label.campaign_id)
    ).all()
    found = {cid: _signature(n, last) for cid, n, last in rows}
    return {cid: found.get(cid, _signature(0, None)) for cid in campaign_ids}


def campaigns_due(engine: Engine) -> list[int]:
    """Open adaptive campaigns whose labels changed (count or latest change) since their last fit."""
    with read_session(engine) as session:
        campaigns = session.execute(
            select(Campaign.id, Campaign.adaptive_fit).where(
                Campaign.overlap_max.is_not(None), Campaign.active.is_(True)
            )
        ).all()
        if not campaigns:
            return []
        signatures = _signatures(session, [cid for cid, _ in campaigns])
    return [
        cid
        for cid, fit in campaigns
        if signatures[cid][0] > 0 and (fit is None or fit.get("signature") != signatures[cid])
    ]


def refit_campaign(engine: Engine, campaign_id: int) -> Optional[Refit]:
    """Fit the campaign's adaptive model on its labels now, store it, and settle the pairs whose decision
    it changes (see the module text). None when the campaign is gone or not adaptive."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None or campaign.overlap_max is None:
            return None
        least, most, confidence = campaign.overlap, campaign.overlap_max, campaign.confidence
        signature = _signatures(session, [campaign_id])[campaign_id]
        labels = pd.DataFrame(
            raw_rows(
                session,
                select(Label.pair_id, Label.annotator_id, Label.level).where(
                    Label.campaign_id == campaign_id, counted_label()
                ),
            ),
            columns=["pair_id", "annotator", "level"],
        )
        queue = pd.DataFrame(
            raw_rows(
                session,
                select(
                    CampaignPair.pair_id, CampaignPair.n_assigned, CampaignPair.n_wanted, CampaignPair.posterior
                ).where(CampaignPair.campaign_id == campaign_id),
            ),
            columns=["pair_id", "n_assigned", "n_wanted", "stored"],
        )
    fit = fit_adaptive_model(labels) if len(labels) else None
    decides = fit_decides(fit)
    per_pair = (
        pair_posteriors(labels, fit if decides else None)
        if len(labels)
        else pd.DataFrame(columns=["n_answers", "n_usable", "posterior"])
    )
    queue = queue.set_index("pair_id").join(per_pair, how="inner")  # queue pairs with an answer
    queue = queue[queue["n_wanted"].notna()]
    n_wanted = queue["n_wanted"].to_numpy(dtype=int)
    n_assigned = queue["n_assigned"].to_numpy(dtype=int)
    n_answers = queue["n_answers"].to_numpy(dtype=int)
    usable = queue["n_usable"].to_numpy(dtype=int)
    posterior = queue["posterior"].to_numpy(dtype=float)
    unsure = (usable < least) | (posterior < confidence)
    raise_ = (n_answers >= n_wanted) & (n_wanted < most) & unsure
    lower = (n_assigned < n_wanted) & (n_answers >= n_assigned) & (n_assigned >= least) & ~unsure
    stored = queue["stored"].to_numpy(dtype=float)
    moved = ~(np.abs(stored - posterior) <= POSTERIOR_CHANGE)  # NaN (never stored) counts as moved
    ids = queue.index.to_numpy(dtype=np.int64)
    if fit is not None:
        fit = {**fit, "signature": signature, "fitted_at": utcnow().isoformat(timespec="seconds")}
    table = CampaignPair.__table__
    with write_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            return None
        campaign.adaptive_fit = fit
        raised = lowered = 0
        if raise_.any():
            raised = session.execute(
                update(table)
                .where(
                    table.c.campaign_id == campaign_id,
                    table.c.pair_id == bindparam("b_pair"),
                    table.c.n_wanted == bindparam("b_wanted"),
                )
                .values(n_wanted=bindparam("b_new")),
                [
                    {"b_pair": int(p), "b_wanted": int(w), "b_new": int(w) + 1}
                    for p, w in zip(ids[raise_], n_wanted[raise_])
                ],
            ).rowcount
        if lower.any():
            lowered = session.execute(
                update(table)
                .where(
                    table.c.campaign_id == campaign_id,
                    table.c.pair_id == bindparam("b_pair"),
                    table.c.n_wanted == bindparam("b_wanted"),
                    table.c.n_assigned == bindparam("b_new"),
                )
                .values(n_wanted=bindparam("b_new")),
                [
                    {"b_pair": int(p), "b_wanted": int(w), "b_new": int(a)}
                    for p, w, a in zip(ids[lower], n_wanted[lower], n_assigned[lower])
                ],
            ).rowcount
        if moved.any():
            session.execute(
                update(table)
                .where(table.c.campaign_id == campaign_id, table.c.pair_id == bindparam("b_pair"))
                .values(posterior=bindparam("b_posterior")),
                [{"b_pair": int(p), "b_posterior": float(v)} for p, v in zip(ids[moved], posterior[moved])],
            )
    return Refit(campaign_id, int(signature[0]), decides, int(max(raised, 0)), int(max(lowered, 0)), int(moved.sum()))


def refit_due(engine: Engine) -> list[Refit]:
    """Refit every campaign that campaigns_due names; the worker's background step."""
    return [r for r in (refit_campaign(engine, cid) for cid in campaigns_due(engine)) if r is not None]


def adaptive_state(engine: Engine, campaign_id: int) -> dict:
    """What the Live campaign page says of the model: whether it is fitted and decides, on how many labels,
    the median labels per annotator and when."""
    with read_session(engine) as session:
        fit = session.scalar(select(Campaign.adaptive_fit).where(Campaign.id == campaign_id))
    if fit is None:
        return {"fitted": False, "decides": False}
    return {
        "fitted": True,
        "decides": fit_decides(fit),
        "n_labels": fit.get("n_labels", 0),
        "median_labels": fit.get("median_labels", 0.0),
        "fitted_at": fit.get("fitted_at"),
    }
