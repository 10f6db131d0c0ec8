"""The Campaigns page's New campaign form (pages/campaigns.py): its fields, which pairs the campaign takes, and
"Create campaign". The fields are kept for the person until the campaign exists (ui.access.keep), and a double
click creates the campaign once; the rules are db.campaigns' (create_campaign)."""

import contextlib
import time

import streamlit as st

from db import campaigns as camp
from db.access import NotAllowed
from db.engine import StoreUnavailable
from db.limits import INT_MAX, NAME_LENGTH, clean_name
from pluie_core.guidelines import DISTRIBUTIONS, PAIR_ORDERS, default_guidelines
from ui.access import keep
from ui.base.page import user_text

# The New campaign form's widgets: kept for this person (their account, else this browser) across page changes
# and reloads until the campaign exists (ui.access.keep); plain widgets, not an st.form, whose values would reach the server only
# when submitted. A double click on "Create campaign" creates the campaign once: the browser lets one
# click through per run (ui.base.page.one_click), and "Create campaign" belongs to one filling of the
# form (done()["new-batch"]). Should a second click reach a loaded server after the first click's run has
# drawn the button again (its batch is then the new one) with the browser's values of before the form was
# emptied, a click on the name just created is that second click, not a new campaign ("already exists"
# would tell the person they did something wrong): with exactly the values that created it, at any time
# (the campaign asked for exists as asked), with other values within DOUBLE_CLICK_SECONDS.
DOUBLE_CLICK_SECONDS = 10.0  # a run of the first click took over 3 s on a loaded machine (CI)
NEW = "new-campaign-"
NEW_FIELDS = [
    "name",
    "datasets",
    "quota",
    "overlap",
    "training",
    "seed",
    "order",
    "run",
    "distribution",
    "adaptive",
    "overlap-max",
    "confidence",
    "from",
    "to",
    "sample",
    "gold-min",
    "gold-max",
    "score-run",
    "score-min",
    "score-max",
    "guidelines",
]


def new(field: str) -> str:
    return NEW + field


# What the page's callbacks record once their write is made goes in this plain dict, never through
# st.session_state: each st.session_state access in a callback is a point where a newer click (the
# second of a double click) ends the callback, after the write, losing the links (shown only once) and
# letting the second click write again. Read before the write, filled after it with no Streamlit call.
DONE = "campaigns-done"


def done() -> dict:
    return st.session_state.setdefault(DONE, {"new-batch": 0, "links-batch": {}})


def by_id(options: list):
    """A kept choice (a tuple whose first item is an id) as the same item of today's options, if still offered."""
    ids = {option[0]: option for option in options}
    return lambda kept: ids.get(kept[0]) if kept else None


def pair_selection_inputs(engine) -> None:
    """Which pairs of the datasets the campaign takes (part of the form); empty = every pair."""
    scored = camp.score_run_choices(engine, kind=None)
    for field, default in (
        ("from", 1),
        ("to", 0),
        ("sample", 0),
        ("gold-min", None),
        ("gold-max", None),
        ("score-min", None),
        ("score-max", None),
    ):
        keep.kept(new(field), default)
    keep.kept(new("score-run"), None, adapt=by_id(scored))
    with st.expander("Which pairs (default: every pair of the chosen datasets)"):
        st.caption(
            "Applied in this order: a range (positions in import order, dataset by dataset), the gold-label "
            "and score filters, then a random sample drawn with the seed. A campaign that takes part of its "
            "datasets does not take the pairs imported into them later."
        )
        c1, c2, c3 = st.columns(3)
        c1.number_input("From pair", min_value=1, max_value=INT_MAX, step=1, key=new("from"))
        c2.number_input("To pair (0 = the last)", min_value=0, max_value=INT_MAX, step=1, key=new("to"))
        c3.number_input(
            "Random sample of (0 = every pair kept)", min_value=0, max_value=INT_MAX, step=1, key=new("sample")
        )
        g1, g2 = st.columns(2)
        g1.number_input("Gold label at least", value=None, placeholder="any", key=new("gold-min"))
        g2.number_input("Gold label at most", value=None, placeholder="any", key=new("gold-max"))
        s1, s2, s3 = st.columns(3)
        s1.selectbox(
            "Score filter: run",
            scored,
            index=None,
            format_func=lambda r: r[1],
            key=new("score-run"),
            placeholder="No score filter" if scored else "No run has scores yet",
        )
        s2.number_input("Score at least", value=None, placeholder="any", key=new("score-min"))
        s3.number_input("Score at most", value=None, placeholder="any", key=new("score-max"))


def pairs_kept(counts: dict) -> str:
    """What became of the pairs the campaign took: a sample of 40 with 5 training pairs queues 35."""
    kept = counts["pairs in queue"] + counts["training pairs"]
    return (
        f"{kept:,} pairs taken: {counts['training pairs']:,} make the training trial (the same for everyone, "
        f"not counted) and {counts['pairs in queue']:,} are in the queue"
    )


def create_campaign(engine, batch: int) -> None:
    """ "Create campaign" (a callback): from the form's values; the form is emptied once the campaign exists."""
    record = done()
    if record["new-batch"] != batch:  # the second click of a double click: created already
        return
    value = {field: st.session_state.get(new(field)) for field in NEW_FIELDS}  # every read before the write
    run, score_run = value["run"], value["score-run"]
    selection = {
        "start": int(value["from"]),
        "end": int(value["to"]),
        "sample": int(value["sample"]),
        "gold_min": value["gold-min"],
        "gold_max": value["gold-max"],
        "score_run": score_run[0] if score_run else None,
        "score_min": value["score-min"],
        "score_max": value["score-max"],
    }
    name = value["name"] or ""
    last_name, last_id, last_at, last_value = record.get("last-created", ("", None, float("-inf"), None))
    if last_name and (value == last_value or time.monotonic() - last_at < DOUBLE_CLICK_SECONDS):
        with contextlib.suppress(ValueError):
            if clean_name("", name, ValueError) == last_name:  # the same campaign: say so again, empty the form
                record.update({"created": (last_name, last_id), "reset": True})
                return
    try:
        created = camp.create_campaign(
            engine,
            name,
            [d[0] for d in value["datasets"] or []],
            quota=int(value["quota"]),
            overlap=int(value["overlap"]),
            n_training=int(value["training"]),
            guidelines=value["guidelines"] or "",
            pair_order=value["order"],
            seed=int(value["seed"]),
            informative_run_id=run[0] if run else None,
            selection=selection,
            distribution=value["distribution"],
            overlap_max=int(value["overlap-max"]) if value["adaptive"] else None,
            confidence=float(value["confidence"]),
        )
    except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:  # the form keeps what was typed
        record["new-error"] = str(exc)
        return
    # the name as the store keeps it (NFC, invisible characters removed), not as typed
    kept_name = clean_name("", name, ValueError)
    record.update(
        {
            "new-batch": batch + 1,
            "created": (kept_name, created),
            "reset": True,
            "last-created": (kept_name, created, time.monotonic(), value),
        }
    )


def new_campaign_form(engine) -> None:
    datasets = camp.dataset_choices(engine)
    if not datasets:
        st.info("Import a dataset first: a campaign serves the pairs of one or more datasets.")
        return
    runs = camp.score_run_choices(engine)
    if done().pop("reset", False):  # the campaign exists: its form starts afresh
        keep.forget(*map(new, NEW_FIELDS))
    for field, default in (
        ("name", ""),
        ("quota", 50),
        ("overlap", 1),
        ("training", 5),
        ("seed", 0),
        ("order", next(iter(PAIR_ORDERS))),
        ("distribution", next(iter(DISTRIBUTIONS))),
        ("adaptive", False),
        ("overlap-max", 5),
        ("confidence", camp.ADAPTIVE_CONFIDENCE),
        ("guidelines", default_guidelines()),
    ):
        keep.kept(new(field), default, typed=field in ("name", "guidelines"))
    keep.kept(new("datasets"), [], adapt=lambda kept: [d for d in datasets if d[0] in {k[0] for k in kept}])
    keep.kept(new("run"), None, adapt=by_id(runs))
    st.text_input("Name", key=new("name"), max_chars=NAME_LENGTH)
    st.multiselect("Datasets", datasets, format_func=lambda d: f"{d[1]} ({d[2]:,} pairs)", key=new("datasets"))
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Pairs per annotator", min_value=1, max_value=camp.MAX_QUOTA, step=1, key=new("quota"))
    c2.number_input(
        "Annotators per pair",
        min_value=1,
        max_value=camp.MAX_OVERLAP,
        step=1,
        key=new("overlap"),
        help="With adaptive overlap below: the least each pair gets.",
    )
    c3.number_input(
        "Training pairs",
        min_value=0,
        max_value=camp.MAX_TRAINING,
        step=1,
        key=new("training"),
        help="The same for everyone, shown first, not counted in results.",
    )
    c4.number_input("Seed", min_value=0, max_value=INT_MAX, step=1, key=new("seed"))
    st.radio(
        "Serve pairs",
        list(PAIR_ORDERS),
        format_func=PAIR_ORDERS.get,
        key=new("order"),
        help="The order of the queue: the pairs served first.",
    )
    st.selectbox(
        "PLUIE run for the “most informative” order",
        runs,
        index=None,
        key=new("run"),
        format_func=lambda r: r[1],
        placeholder="No score run" if not runs else "Choose a run",
    )
    st.radio(
        "Share the pairs among annotators",
        list(DISTRIBUTIONS),
        format_func=DISTRIBUTIONS.get,
        key=new("distribution"),
        help="With several annotators per pair: share the work (different pairs for "
        "each while there are enough), or have them label the same pairs first.",
    )
    a1, a2, a3 = st.columns([2, 1, 1])
    a1.checkbox(
        "Adaptive overlap: enough annotators per pair",
        key=new("adaptive"),
        help="Each pair gets the annotators per pair above (answers other than Don't know), then one more at "
        "a time while the probability of its binarised label (Same meaning / Mostly similar against the "
        "two others) is below the confidence, up to the most below. That probability is the campaign's "
        "model (Dawid–Skene, refitted by the worker as answers arrive, weighing each annotator by their "
        "estimated reliability), and the share of agreeing answers until the model has enough labels. "
        "Confident pairs stop early and the labels go where people disagree.",
    )
    a2.number_input(
        "Most annotators per pair",
        min_value=1,
        max_value=camp.MAX_OVERLAP,
        step=1,
        key=new("overlap-max"),
        help="Adaptive overlap only: no pair gets more.",
    )
    a3.number_input(
        "Confidence",
        min_value=0.51,
        max_value=1.0,
        step=0.05,
        format="%.2f",
        key=new("confidence"),
        help="Adaptive overlap only: the probability a pair's binarised label needs before it stops.",
    )
    pair_selection_inputs(engine)
    st.text_area("Guidelines (Markdown)", height=300, key=new("guidelines"))
    batch = done()["new-batch"]
    st.button(
        "Create campaign", type="primary", key=f"{NEW}create-{batch}", on_click=create_campaign, args=(engine, batch)
    )
    if done().get("new-error"):
        st.error(user_text(done().pop("new-error")))
    st.caption(
        "What you fill in here is kept "
        + (
            "for your account (page changes, reloads, restarts)"
            if keep.owner() is not None
            else "on this browser (page changes and reloads)"
        )
        + " until the campaign is created."
    )
    keep.save()
