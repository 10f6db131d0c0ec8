"""Admin: labelling campaigns and their annotators (personal links, revocation, progress)."""
import pandas as pd
import streamlit as st

from db import annotation as ann
from db.analysis import LABELS_COUNTED
from pages.shared import admin_page, user_text
from pluie_core.aggregation import METHOD_NAMES, METHODS
from pluie_core.auth import admin_password_configured
from pluie_core.guidelines import DISTRIBUTIONS, PAIR_ORDERS, default_guidelines, guidelines_markdown
from pluie_core.labels import LEVELS
from pluie_core.pair_selection import describe_selection

engine = admin_page("table")
st.title("Labelling campaigns")
if not admin_password_configured():
    st.caption("No admin password is configured, so this page is open to anyone who can reach the app.")


def personal_link(token: str) -> str:
    # st.context.url is this page's address; the link opens the app's root with the token
    here = (st.context.url or "").split("?")[0].rstrip("/")
    return f"{here.removesuffix('/campaigns')}/?token={token}"


def pair_selection_inputs() -> dict:
    """Which pairs of the datasets the campaign takes (inside the form); empty = every pair."""
    scored = ann.score_run_choices(engine, kind=None)
    with st.expander("Which pairs (default: every pair of the chosen datasets)"):
        st.caption("Applied in this order: a range (positions in import order, dataset by dataset), the gold-label "
                   "and score filters, then a random sample drawn with the seed. A campaign that takes part of its "
                   "datasets does not take the pairs imported into them later.")
        c1, c2, c3 = st.columns(3)
        start = c1.number_input("From pair", min_value=1, value=1, step=1)
        end = c2.number_input("To pair (0 = the last)", min_value=0, value=0, step=1)
        sample = c3.number_input("Random sample of (0 = every pair kept)", min_value=0, value=0, step=1)
        g1, g2 = st.columns(2)
        gold_min = g1.number_input("Gold label at least", value=None, placeholder="any")
        gold_max = g2.number_input("Gold label at most", value=None, placeholder="any")
        s1, s2, s3 = st.columns(3)
        score_run = s1.selectbox("Score filter: run", scored, index=None, format_func=lambda r: r[1],
                                 placeholder="No score filter" if scored else "No run has scores yet")
        score_min = s2.number_input("Score at least", value=None, placeholder="any")
        score_max = s3.number_input("Score at most", value=None, placeholder="any")
    return {"start": int(start), "end": int(end), "sample": int(sample), "gold_min": gold_min, "gold_max": gold_max,
            "score_run": score_run[0] if score_run else None, "score_min": score_min, "score_max": score_max}


def new_campaign_form() -> None:
    datasets = ann.dataset_choices(engine)
    if not datasets:
        st.info("Import a dataset first: a campaign serves the pairs of one or more datasets.")
        return
    runs = ann.score_run_choices(engine)
    with st.form("new-campaign"):
        name = st.text_input("Name")
        chosen = st.multiselect("Datasets", datasets, format_func=lambda d: f"{d[1]} ({d[2]:,} pairs)")
        c1, c2, c3, c4 = st.columns(4)
        quota = c1.number_input("Pairs per annotator", min_value=1, value=50, step=1)
        overlap = c2.number_input("Annotators per pair", min_value=1, value=1, step=1,
                                  help="With adaptive overlap below: the least each pair gets.")
        n_training = c3.number_input("Training pairs", min_value=0, value=5, step=1,
                                     help="The same for everyone, shown first, not counted in results.")
        seed = c4.number_input("Seed", min_value=0, value=0, step=1)
        order = st.radio("Serve pairs", list(PAIR_ORDERS), format_func=PAIR_ORDERS.get,
                         help="The order of the queue: the pairs served first.")
        run = st.selectbox("PLUIE run for the “most informative” order", runs, index=None,
                           format_func=lambda r: r[1], placeholder="No score run" if not runs else "Choose a run")
        distribution = st.radio("Share the pairs among annotators", list(DISTRIBUTIONS), format_func=DISTRIBUTIONS.get,
                                help="With several annotators per pair: share the work (different pairs for "
                                     "each while there are enough), or have them label the same pairs first.")
        a1, a2, a3 = st.columns([2, 1, 1])
        adaptive = a1.checkbox(
            "Adaptive overlap: enough annotators per pair", value=False,
            help="Each pair gets the annotators per pair above (answers other than Don't know), then one more at "
                 "a time while the probability of its binarised label (Same meaning / Mostly similar against the "
                 "two others) is below the confidence, up to the most below. That probability is the campaign's "
                 "model (Dawid–Skene, refitted by the worker as answers arrive, weighing each annotator by their "
                 "estimated reliability), and the share of agreeing answers until the model has enough labels. "
                 "Confident pairs stop early and the labels go where people disagree.")
        overlap_max = a2.number_input("Most annotators per pair", min_value=1, value=5, step=1,
                                      help="Adaptive overlap only: no pair gets more.")
        confidence = a3.number_input("Confidence", min_value=0.51, max_value=1.0, value=ann.ADAPTIVE_CONFIDENCE,
                                     step=0.05, format="%.2f",
                                     help="Adaptive overlap only: the probability a pair's binarised label needs before it stops.")
        selection = pair_selection_inputs()
        guidelines = st.text_area("Guidelines (Markdown)", value=default_guidelines(), height=300)
        if st.form_submit_button("Create campaign", type="primary"):
            try:
                created = ann.create_campaign(engine, name, [d[0] for d in chosen], quota=int(quota), overlap=int(overlap),
                                    n_training=int(n_training), guidelines=guidelines, pair_order=order,
                                    seed=int(seed), informative_run_id=run[0] if run else None,
                                    selection=selection, distribution=distribution,
                                    overlap_max=int(overlap_max) if adaptive else None, confidence=float(confidence))
                st.session_state["campaign-created"] = (name.strip(), created)
                st.rerun()
            except ann.CampaignError as exc:
                st.error(user_text(exc))


def annotators_section(campaign) -> None:
    rows = ann.annotator_rows(engine, campaign.id)
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch",
                     column_config={"last answer": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")}, placeholder="—")
    else:
        st.caption("No annotator yet.")

    links = st.session_state.get("new-links")
    if links:
        st.warning("Copy these personal links now: they are shown only once (the store keeps only a hash).")
        st.code("\n".join(f"{name}: {link}" for name, link in links), language=None)
        if st.button("I have copied them", key="links-copied"):
            st.session_state.pop("new-links")
            st.rerun()

    with st.form("add-annotators", clear_on_submit=True):
        names = st.text_area("New annotators, one name per line (for you; they choose their display name)")
        if st.form_submit_button("Create personal links"):
            try:
                wanted = [n.strip() for n in names.splitlines() if n.strip()]
                if not wanted:
                    raise ann.CampaignError("Write at least one name.")
                st.session_state["new-links"] = [
                    (n, personal_link(token)) for _, n, token in ann.create_annotators(engine, campaign.id, wanted)]
                st.rerun()
            except ann.CampaignError as exc:
                st.error(user_text(exc))

    active = {r["id"]: r["name"] for r in rows if r["status"] == "active"}
    if active:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        who = c1.selectbox("Revoke a link", list(active), index=None, format_func=lambda i: f"{active[i]} (#{i})",
                           placeholder="Choose an annotator")
        if c2.button("Revoke", disabled=who is None):
            ann.revoke_annotator(engine, who)
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
            st.session_state["new-links"] = [(everyone[who], personal_link(ann.new_link(engine, who)))]
            st.session_state["relinked"] = everyone[who]
            st.rerun()
    if st.session_state.get("relinked"):
        st.success(f"{user_text(st.session_state.pop('relinked'))}'s old link no longer works; the new one above "
                   "continues with the same labels.")


def overlap_text(campaign) -> str:
    if campaign.overlap_max is None:
        return f"{campaign.overlap} annotator(s) per pair"
    return (f"{campaign.overlap}–{campaign.overlap_max} annotators per pair (adaptive: more while under "
            f"{campaign.confidence:.0%} agreement)")


def settings_section(campaign, counts: dict) -> None:
    st.write(f"Order: {PAIR_ORDERS[campaign.pair_order]} · seed {campaign.seed} · "
             f"{campaign.quota} pairs per annotator · {overlap_text(campaign)}")
    runs = dict(ann.score_run_choices(engine, kind=None))
    chosen = describe_selection(campaign.selection, runs.get((campaign.selection or {}).get('score_run')))
    st.write(f"Pairs: {user_text(chosen)} · "
             f"{DISTRIBUTIONS[campaign.distribution]}.")
    st.caption(pairs_kept(counts) + ".")
    active = st.toggle("Open to annotators", value=campaign.active, key=f"active-{campaign.id}")
    if active != campaign.active:
        ann.update_campaign(engine, campaign.id, active=active)
    method = st.selectbox(
        "Final labels by", METHODS, index=METHODS.index(ann.campaign_aggregation(campaign)),
        format_func=METHOD_NAMES.get, key=f"aggregation-{campaign.id}",
        help="How this campaign's labels become a pair's final label where no reviewer decided: the default of "
             "Export, publishing (and `python -m db publish --campaign`) and Live campaign's reliabilities. Majority "
             "until you choose; Dawid–Skene, GLAD and MACE weigh each annotator by their estimated reliability, and "
             "decide a pair only where they are sure enough (Export: confidence and labels per annotator); the "
             "majority rule decides the others.")
    if method != ann.campaign_aggregation(campaign):
        ann.update_campaign(engine, campaign.id, aggregation=method)
        st.rerun()
    if campaign.pair_order == "informative" and st.button("Recompute the order from the latest scores"):
        ann.reorder_campaign(engine, campaign.id)
        st.success("Pairs not yet served now follow the latest scores.")
    edit, preview = st.columns(2)
    text = edit.text_area("Guidelines (Markdown)", value=campaign.guidelines, height=400, key=f"guide-{campaign.id}")
    with preview.container(border=True, height=430):
        st.markdown(guidelines_markdown(text), unsafe_allow_html=True)
    if text != campaign.guidelines and edit.button("Save the guidelines", type="primary"):
        ann.update_campaign(engine, campaign.id, guidelines=text)
        st.success("Saved: annotators see the new guidelines from their next pair.")


def training_section(campaign) -> None:
    """Each training pair's expected level and explanation: what an annotator sees once they answered it."""
    pairs = ann.training_pairs(engine, campaign.id)
    if pairs.empty:
        st.caption("This campaign has no training trial.")
        return
    with st.expander(f"Feedback on the {len(pairs)} training pairs"), st.form(f"training-{campaign.id}"):
        st.caption("Annotators see the expected level and the explanation once they have answered a training "
                   "pair, then continue. Training answers are never counted in the results.")
        wanted = []
        for row in pairs.itertuples():
            st.text(f"{row.position + 1}. Source: {row.source}\nHypothesis: {row.hypothesis}")  # as text
            level, why = st.columns([1, 3])
            expected = level.selectbox("Expected level", [None, 0, 1, 2, 3],
                                       format_func=lambda v: "— none —" if v is None else LEVELS[v],
                                       index=0 if pd.isna(row.expected_level) else int(row.expected_level) + 1,
                                       key=f"expected-{campaign.id}-{row.position}")
            explanation = why.text_input("Explanation", value=row.explanation, max_chars=ann.MAX_EXPLANATION,
                                         key=f"explain-{campaign.id}-{row.position}")
            wanted.append({"position": row.position, "expected_level": expected, "explanation": explanation})
        if st.form_submit_button("Save the training feedback"):
            try:
                ann.set_training_feedback(engine, campaign.id, wanted)
                st.success("Saved: annotators see this feedback after their next training answer.")
            except ann.CampaignError as exc:
                st.error(user_text(exc))


def pairs_kept(counts: dict) -> str:
    """What became of the pairs the campaign took: a sample of 40 with 5 training pairs queues 35."""
    kept = counts["pairs in queue"] + counts["training pairs"]
    return (f"{kept:,} pairs taken: {counts['training pairs']:,} make the training trial (the same for everyone, "
            f"not counted) and {counts['pairs in queue']:,} are in the queue")


campaigns = ann.list_campaigns(engine)
if st.session_state.get("campaign-created"):
    created_name, created_id = st.session_state.pop("campaign-created")
    st.success(f"Campaign “{user_text(created_name)}” created: {pairs_kept(ann.campaign_overview(engine, created_id))}. "
               "Add its annotators below.")
with st.expander("New campaign", expanded=not campaigns):
    new_campaign_form()
if not campaigns:
    st.stop()

by_id = {c.id: c for c in campaigns}
chosen_id = st.selectbox("Campaign", list(by_id), format_func=lambda i: by_id[i].name + ("" if by_id[i].active else " (closed)"))
campaign = by_id[chosen_id]
counts = ann.campaign_overview(engine, campaign.id)
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
