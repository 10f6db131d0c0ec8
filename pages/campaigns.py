"""Admin: labelling campaigns and their annotators (personal links, revocation, progress)."""
import contextlib
import time

import pandas as pd
import streamlit as st

from db import annotators, campaigns as camp
from db import access
from db.access import OPEN, NotAllowed
from db.analysis import LABELS_COUNTED
from db.engine import StoreUnavailable
from db.limits import INT_MAX, NAME_LENGTH, clean_name
from ui.access import keep
from ui.frame import admin_page
from ui.base.page import one_click, user_text
from pluie_core.aggregation import METHOD_NAMES, METHODS
from pluie_core.guidelines import DISTRIBUTIONS, PAIR_ORDERS, default_guidelines, guidelines_markdown
from pluie_core.labels import LEVELS
from pluie_core.pair_selection import describe_selection
from pluie_core.visible import visible_text

engine = admin_page("table")
st.title("Labelling campaigns")
if access.current_actor() == OPEN:
    st.caption("No account and no admin password exist, so this page is open to anyone who can reach the app.")


def personal_link(token: str) -> str:
    # st.context.url is this page's address; the link opens the app's root with the token
    here = (st.context.url or "").split("?")[0].rstrip("/")
    return f"{here.removesuffix('/campaigns')}/?token={token}"


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
NEW_FIELDS = ["name", "datasets", "quota", "overlap", "training", "seed", "order", "run", "distribution", "adaptive",
              "overlap-max", "confidence", "from", "to", "sample", "gold-min", "gold-max", "score-run", "score-min",
              "score-max", "guidelines"]


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


def pair_selection_inputs() -> None:
    """Which pairs of the datasets the campaign takes (part of the form); empty = every pair."""
    scored = camp.score_run_choices(engine, kind=None)
    for field, default in (("from", 1), ("to", 0), ("sample", 0), ("gold-min", None), ("gold-max", None),
                           ("score-min", None), ("score-max", None)):
        keep.kept(new(field), default)
    keep.kept(new("score-run"), None, adapt=by_id(scored))
    with st.expander("Which pairs (default: every pair of the chosen datasets)"):
        st.caption("Applied in this order: a range (positions in import order, dataset by dataset), the gold-label "
                   "and score filters, then a random sample drawn with the seed. A campaign that takes part of its "
                   "datasets does not take the pairs imported into them later.")
        c1, c2, c3 = st.columns(3)
        c1.number_input("From pair", min_value=1, max_value=INT_MAX, step=1, key=new("from"))
        c2.number_input("To pair (0 = the last)", min_value=0, max_value=INT_MAX, step=1, key=new("to"))
        c3.number_input("Random sample of (0 = every pair kept)", min_value=0, max_value=INT_MAX, step=1,
                        key=new("sample"))
        g1, g2 = st.columns(2)
        g1.number_input("Gold label at least", value=None, placeholder="any", key=new("gold-min"))
        g2.number_input("Gold label at most", value=None, placeholder="any", key=new("gold-max"))
        s1, s2, s3 = st.columns(3)
        s1.selectbox("Score filter: run", scored, index=None, format_func=lambda r: r[1], key=new("score-run"),
                     placeholder="No score filter" if scored else "No run has scores yet")
        s2.number_input("Score at least", value=None, placeholder="any", key=new("score-min"))
        s3.number_input("Score at most", value=None, placeholder="any", key=new("score-max"))


def create_campaign(batch: int) -> None:
    """"Create campaign" (a callback): from the form's values; the form is emptied once the campaign exists."""
    record = done()
    if record["new-batch"] != batch:  # the second click of a double click: created already
        return
    value = {field: st.session_state.get(new(field)) for field in NEW_FIELDS}  # every read before the write
    run, score_run = value["run"], value["score-run"]
    selection = {"start": int(value["from"]), "end": int(value["to"]), "sample": int(value["sample"]),
                 "gold_min": value["gold-min"], "gold_max": value["gold-max"],
                 "score_run": score_run[0] if score_run else None,
                 "score_min": value["score-min"], "score_max": value["score-max"]}
    name = value["name"] or ""
    last_name, last_id, last_at, last_value = record.get("last-created", ("", None, float("-inf"), None))
    if last_name and (value == last_value or time.monotonic() - last_at < DOUBLE_CLICK_SECONDS):
        with contextlib.suppress(ValueError):
            if clean_name("", name, ValueError) == last_name:  # the same campaign: say so again, empty the form
                record.update({"created": (last_name, last_id), "reset": True})
                return
    try:
        created = camp.create_campaign(engine, name, [d[0] for d in value["datasets"] or []],
                                      quota=int(value["quota"]), overlap=int(value["overlap"]),
                                      n_training=int(value["training"]), guidelines=value["guidelines"] or "",
                                      pair_order=value["order"], seed=int(value["seed"]),
                                      informative_run_id=run[0] if run else None, selection=selection,
                                      distribution=value["distribution"],
                                      overlap_max=int(value["overlap-max"]) if value["adaptive"] else None,
                                      confidence=float(value["confidence"]))
    except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:  # the form keeps what was typed
        record["new-error"] = str(exc)
        return
    # the name as the store keeps it (NFC, invisible characters removed), not as typed
    kept_name = clean_name("", name, ValueError)
    record.update({"new-batch": batch + 1, "created": (kept_name, created), "reset": True,
                   "last-created": (kept_name, created, time.monotonic(), value)})


def new_campaign_form() -> None:
    datasets = camp.dataset_choices(engine)
    if not datasets:
        st.info("Import a dataset first: a campaign serves the pairs of one or more datasets.")
        return
    runs = camp.score_run_choices(engine)
    if done().pop("reset", False):  # the campaign exists: its form starts afresh
        keep.forget(*map(new, NEW_FIELDS))
    for field, default in (("name", ""), ("quota", 50), ("overlap", 1), ("training", 5), ("seed", 0),
                           ("order", next(iter(PAIR_ORDERS))), ("distribution", next(iter(DISTRIBUTIONS))),
                           ("adaptive", False), ("overlap-max", 5), ("confidence", camp.ADAPTIVE_CONFIDENCE),
                           ("guidelines", default_guidelines())):
        keep.kept(new(field), default, typed=field in ("name", "guidelines"))
    keep.kept(new("datasets"), [], adapt=lambda kept: [d for d in datasets if d[0] in {k[0] for k in kept}])
    keep.kept(new("run"), None, adapt=by_id(runs))
    st.text_input("Name", key=new("name"), max_chars=NAME_LENGTH)
    st.multiselect("Datasets", datasets, format_func=lambda d: f"{d[1]} ({d[2]:,} pairs)", key=new("datasets"))
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Pairs per annotator", min_value=1, max_value=camp.MAX_QUOTA, step=1, key=new("quota"))
    c2.number_input("Annotators per pair", min_value=1, max_value=camp.MAX_OVERLAP, step=1, key=new("overlap"),
                    help="With adaptive overlap below: the least each pair gets.")
    c3.number_input("Training pairs", min_value=0, max_value=camp.MAX_TRAINING, step=1, key=new("training"),
                    help="The same for everyone, shown first, not counted in results.")
    c4.number_input("Seed", min_value=0, max_value=INT_MAX, step=1, key=new("seed"))
    st.radio("Serve pairs", list(PAIR_ORDERS), format_func=PAIR_ORDERS.get, key=new("order"),
             help="The order of the queue: the pairs served first.")
    st.selectbox("PLUIE run for the “most informative” order", runs, index=None, key=new("run"),
                 format_func=lambda r: r[1], placeholder="No score run" if not runs else "Choose a run")
    st.radio("Share the pairs among annotators", list(DISTRIBUTIONS), format_func=DISTRIBUTIONS.get,
             key=new("distribution"), help="With several annotators per pair: share the work (different pairs for "
                                           "each while there are enough), or have them label the same pairs first.")
    a1, a2, a3 = st.columns([2, 1, 1])
    a1.checkbox(
        "Adaptive overlap: enough annotators per pair", key=new("adaptive"),
        help="Each pair gets the annotators per pair above (answers other than Don't know), then one more at "
             "a time while the probability of its binarised label (Same meaning / Mostly similar against the "
             "two others) is below the confidence, up to the most below. That probability is the campaign's "
             "model (Dawid–Skene, refitted by the worker as answers arrive, weighing each annotator by their "
             "estimated reliability), and the share of agreeing answers until the model has enough labels. "
             "Confident pairs stop early and the labels go where people disagree.")
    a2.number_input("Most annotators per pair", min_value=1, max_value=camp.MAX_OVERLAP, step=1, key=new("overlap-max"),
                    help="Adaptive overlap only: no pair gets more.")
    a3.number_input("Confidence", min_value=0.51, max_value=1.0, step=0.05, format="%.2f", key=new("confidence"),
                    help="Adaptive overlap only: the probability a pair's binarised label needs before it stops.")
    pair_selection_inputs()
    st.text_area("Guidelines (Markdown)", height=300, key=new("guidelines"))
    batch = done()["new-batch"]
    st.button("Create campaign", type="primary", key=f"{NEW}create-{batch}", on_click=create_campaign, args=(batch,))
    if done().get("new-error"):
        st.error(user_text(done().pop("new-error")))
    st.caption("What you fill in here is kept " + ("for your account (page changes, reloads, restarts)" if keep.owner() is not None
               else "on this browser (page changes and reloads)") + " until the campaign is created.")
    keep.save()


def create_links(campaign_id: int, batch: int) -> None:
    """"Create personal links" (a callback): once per batch of names, which then leave the box (they
    are in the list of links); a refusal (no name, a name taken) leaves them there."""
    record = done()
    if record["links-batch"].get(campaign_id, 0) != batch:  # the second click of a double click
        return
    names = st.session_state.get(f"new-annotators-{campaign_id}-{batch}") or ""
    wanted = [n.strip() for n in names.splitlines() if n.strip()]
    if not wanted:
        record["links-error"] = "Write at least one name."
        return
    link = personal_link("")  # the page's address, read before the write too
    try:
        made = annotators.create_annotators(engine, campaign_id, wanted)
    except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:
        record["links-error"] = str(exc)
        return
    record["new-links"] = [(n, link + token) for _, n, token in made]
    record["links-batch"][campaign_id] = batch + 1


def annotators_section(campaign) -> None:
    rows = annotators.annotator_rows(engine, campaign.id)
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch",
                     column_config={"last answer": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")}, placeholder="—")
    else:
        st.caption("No annotator yet.")

    links = done().get("new-links")
    if links:
        st.warning("Copy these personal links now: they are shown only once (the store keeps only a hash).")
        st.code("\n".join(f"{name}: {link}" for name, link in links), language=None)
        if st.button("I have copied them", key="links-copied"):
            done().pop("new-links")
            st.rerun()

    # one form per batch of links: a double click submits the same batch twice, and only its first
    # submission creates anyone; a refusal keeps the names in the box
    batch = done()["links-batch"].get(campaign.id, 0)
    with st.form(f"add-annotators-{campaign.id}-{batch}"):
        st.text_area("New annotators, one name per line (for you; they choose their display name)",
                     key=f"new-annotators-{campaign.id}-{batch}")
        st.form_submit_button("Create personal links", on_click=create_links, args=(campaign.id, batch),
                              key=f"links-create-{campaign.id}-{batch}")
    if done().get("links-error"):
        st.error(user_text(done().pop("links-error")))

    active = {r["id"]: r["name"] for r in rows if r["status"] == "active"}
    if active:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        who = c1.selectbox("Revoke a link", list(active), index=None, format_func=lambda i: f"{active[i]} (#{i})",
                           placeholder="Choose an annotator")
        if c2.button("Revoke", disabled=who is None):
            with refused():
                annotators.revoke_annotator(engine, who)
                st.session_state["revoked"] = active[who]
                st.rerun()
    if st.session_state.get("revoked"):
        st.success(f"{user_text(st.session_state.pop('revoked'))}'s link no longer works; their labels are kept.")

    everyone = {r["id"]: r["name"] for r in rows}
    if everyone:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        who = c1.selectbox("Replace a lost link", list(everyone), index=None, placeholder="Choose an annotator",
                           format_func=lambda i: f"{everyone[i]} (#{i})",
                           help="The annotator keeps their labels and their place; their old link stops working.")
        if c2.button("New link", disabled=who is None):
            with refused():
                done()["new-links"] = [(everyone[who], personal_link(annotators.new_link(engine, who)))]
                st.session_state["relinked"] = everyone[who]
                st.rerun()
    if st.session_state.get("relinked"):
        st.success(f"{user_text(st.session_state.pop('relinked'))}'s old link no longer works; the new one above "
                   "continues with the same labels.")


@contextlib.contextmanager
def refused():
    """Around a write made in the page's script: a refusal (the role, the campaign gone, the store away)
    is shown as its sentence where the write was asked for."""
    try:
        yield
    except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:
        st.error(user_text(exc))


def overlap_text(campaign) -> str:
    if campaign.overlap_max is None:
        return f"{campaign.overlap} annotator(s) per pair"
    return (f"{campaign.overlap}–{campaign.overlap_max} annotators per pair (adaptive: more while under "
            f"{campaign.confidence:.0%} agreement)")


def settings_section(campaign, counts: dict) -> None:
    st.write(f"Order: {PAIR_ORDERS[campaign.pair_order]} · seed {campaign.seed} · "
             f"{campaign.quota} pairs per annotator · {overlap_text(campaign)}")
    runs = dict(camp.score_run_choices(engine, kind=None))
    chosen = describe_selection(campaign.selection, runs.get((campaign.selection or {}).get('score_run')))
    st.write(f"Pairs: {user_text(chosen)} · "
             f"{DISTRIBUTIONS[campaign.distribution]}.")
    st.caption(pairs_kept(counts) + ".")
    active = st.toggle("Open to annotators", value=campaign.active, key=f"active-{campaign.id}")
    if active != campaign.active:
        with refused():
            camp.update_campaign(engine, campaign.id, active=active)
    method = st.selectbox(
        "Final labels by", METHODS, index=METHODS.index(camp.campaign_aggregation(campaign)),
        format_func=METHOD_NAMES.get, key=f"aggregation-{campaign.id}",
        help="How this campaign's labels become a pair's final label where no reviewer decided: the default of "
             "Export, publishing (and `python -m db publish --campaign`) and Live campaign's reliabilities. Majority "
             "until you choose; Dawid–Skene, GLAD and MACE weigh each annotator by their estimated reliability, and "
             "decide a pair only where they are sure enough (Export: confidence and labels per annotator); the "
             "majority rule decides the others.")
    if method != camp.campaign_aggregation(campaign):
        with refused():
            camp.update_campaign(engine, campaign.id, aggregation=method)
            st.rerun()
    if campaign.pair_order == "informative" and st.button("Recompute the order from the latest scores"):
        with refused():
            camp.reorder_campaign(engine, campaign.id)
            st.success("Pairs not yet served now follow the latest scores.")
    guidelines_editor(campaign)


# The guidelines editor is drawn from the store at a revision, kept per campaign in st.session_state with the text
# it was drawn with; a save names that revision, so an editor opened before another organiser's save is refused
# (db.campaigns.update_campaign says what changed) instead of silently undoing it.
def draw_guidelines(drawn) -> None:
    """The editor, and the revision it saves over, set from the campaign as stored."""
    st.session_state[f"guide-{drawn.id}"] = drawn.guidelines
    st.session_state[f"guide-drawn-{drawn.id}"] = {"revision": drawn.guidelines_revision, "text": drawn.guidelines}


def save_guidelines(campaign_id: int) -> None:
    """"Save the guidelines" (a callback: it runs before the editor is drawn, so it may redraw it)."""
    drawn, text = st.session_state[f"guide-drawn-{campaign_id}"], st.session_state[f"guide-{campaign_id}"]
    try:
        camp.update_campaign(engine, campaign_id, guidelines=text, guidelines_revision=drawn["revision"],
                            seen_guidelines=drawn["text"])
        outcome = {"success": "Saved: annotators see the new guidelines from their next pair."}
        st.session_state.pop(f"guide-unsaved-{campaign_id}", None)
    except camp.StaleFormError as exc:  # the editor shows theirs; the refused text stays on the page to copy
        outcome = {"error": str(exc)}
        st.session_state[f"guide-unsaved-{campaign_id}"] = text
    except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:  # the editor keeps what was typed
        st.session_state[f"guide-outcome-{campaign_id}"] = {"error": str(exc)}
        return
    draw_guidelines(camp.get_campaign(engine, campaign_id))
    st.session_state[f"guide-outcome-{campaign_id}"] = outcome


def guidelines_editor(campaign) -> None:
    if f"guide-drawn-{campaign.id}" not in st.session_state or f"guide-{campaign.id}" not in st.session_state:
        draw_guidelines(campaign)  # first drawn (or the page left and opened again): from the store
    drawn = st.session_state[f"guide-drawn-{campaign.id}"]
    edit, preview = st.columns(2)
    text = edit.text_area("Guidelines (Markdown)", height=400, key=f"guide-{campaign.id}")
    with preview.container(border=True, height=430):
        st.markdown(guidelines_markdown(text), unsafe_allow_html=True)
    if text != drawn["text"]:
        edit.button("Save the guidelines", type="primary", on_click=save_guidelines, args=(campaign.id,))
    outcome = st.session_state.pop(f"guide-outcome-{campaign.id}", {})
    if "success" in outcome:
        edit.success(outcome["success"])
    if "error" in outcome:
        edit.error(user_text(outcome["error"]))
    if f"guide-unsaved-{campaign.id}" in st.session_state:  # until a save goes through
        with edit.expander("Your text that was not saved, to copy", expanded=True):
            st.code(st.session_state[f"guide-unsaved-{campaign.id}"], language=None, wrap_lines=True)


def training_section(campaign) -> None:
    """Each training pair's expected level and explanation: what an annotator sees once they answered it."""
    pairs = camp.training_pairs(engine, campaign.id)
    if pairs.empty:
        st.caption("This campaign has no training trial.")
        return
    with st.expander(f"Feedback on the {len(pairs)} training pairs"), st.form(f"training-{campaign.id}"):
        st.caption("Annotators see the expected level and the explanation once they have answered a training "
                   "pair, then continue. Training answers are never counted in the results.")
        wanted = []
        for row in pairs.itertuples():
            st.text(visible_text(f"{row.position + 1}. Source: {row.source}\nHypothesis: {row.hypothesis}"))  # as text, marked
            level, why = st.columns([1, 3])
            expected = level.selectbox("Expected level", [None, 0, 1, 2, 3],
                                       format_func=lambda v: "— none —" if v is None else LEVELS[v],
                                       index=0 if pd.isna(row.expected_level) else int(row.expected_level) + 1,
                                       key=f"expected-{campaign.id}-{row.position}")
            explanation = why.text_input("Explanation", value=row.explanation, max_chars=camp.MAX_EXPLANATION,
                                         key=f"explain-{campaign.id}-{row.position}")
            wanted.append({"position": row.position, "expected_level": expected, "explanation": explanation})
        if st.form_submit_button("Save the training feedback"):
            try:
                camp.set_training_feedback(engine, campaign.id, wanted)
                st.success("Saved: annotators see this feedback after their next training answer.")
            except (camp.CampaignError, NotAllowed) as exc:
                st.error(user_text(exc))


def activity_section(campaign) -> None:
    """The campaign's latest changes: when, who, what (names as typed, so as text)."""
    activity = camp.campaign_activity(engine, campaign.id, limit=20)
    if activity.empty:
        return
    with st.expander(f"Recent activity ({len(activity)})"):
        for at, who, what in activity.itertuples(index=False):
            st.markdown(f"{at:%Y-%m-%d %H:%M} UTC · **{user_text(who) if who else 'no account'}** · {user_text(what)}")


def pairs_kept(counts: dict) -> str:
    """What became of the pairs the campaign took: a sample of 40 with 5 training pairs queues 35."""
    kept = counts["pairs in queue"] + counts["training pairs"]
    return (f"{kept:,} pairs taken: {counts['training pairs']:,} make the training trial (the same for everyone, "
            f"not counted) and {counts['pairs in queue']:,} are in the queue")


campaigns = camp.list_campaigns(engine)
one_click(f"{NEW}create-", "links-create-")  # a double click creates once
if done().get("created"):
    created_name, created_id = done().pop("created")
    st.success(f"Campaign “{user_text(created_name)}” created: {pairs_kept(camp.campaign_overview(engine, created_id))}. "
               "Add its annotators below.")
with st.expander("New campaign", expanded=not campaigns):
    new_campaign_form()
if not campaigns:
    st.stop()

campaign_by_id = {c.id: c for c in campaigns}
chosen_id = st.selectbox("Campaign", list(campaign_by_id),
                         format_func=lambda i: campaign_by_id[i].name + ("" if campaign_by_id[i].active else " (closed)"))
campaign = campaign_by_id[chosen_id]
if campaign.created_by:
    st.caption(f"Created by {user_text(campaign.created_by)} on {campaign.created_at:%Y-%m-%d %H:%M} UTC.")
counts = camp.campaign_overview(engine, campaign.id)
COUNT_HELP = {
    "pairs in queue": "The pairs served as ordinary pairs: the campaign's pairs less its training pairs (and gold checks).",
    "pairs fully labelled": (f"Queue pairs answered by {campaign.overlap} annotator(s), the campaign's annotators per pair"
                             if campaign.overlap_max is None else "Queue pairs answered by as many annotators as they "
                             "want now (adaptive overlap: confident pairs stop at the least)")
                            + "; a pair served but not yet answered does not count.",
    "labels": f"Labels given in this campaign: {LABELS_COUNTED}. The same count on every page.",
    "training pairs": "Shown first to everyone, the same for all, not counted in results.",
}
for column, (label, value) in zip(st.columns(len(counts)), counts.items()):
    column.metric(label.capitalize(), f"{value:,}", help=COUNT_HELP.get(label))
st.subheader("Annotators")
annotators_section(campaign)
st.subheader("Training pairs")
training_section(campaign)
st.subheader("Settings and guidelines")
settings_section(campaign, counts)
activity_section(campaign)
