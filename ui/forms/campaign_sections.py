"""The Campaigns page's sections of one campaign (pages/campaigns.py): its counts, annotators and personal links,
training feedback, settings and guidelines, and recent activity. The rules are db.campaigns' and db.annotators'."""

import contextlib

import pandas as pd
import streamlit as st

from db import annotators
from db import campaigns as camp
from db.access import NotAllowed
from db.analysis import LABELS_COUNTED
from db.engine import StoreUnavailable
from pluie_core.aggregation import METHOD_NAMES, METHODS
from pluie_core.guidelines import DISTRIBUTIONS, PAIR_ORDERS, guidelines_markdown
from pluie_core.labels import LEVELS
from pluie_core.pair_selection import describe_selection
from pluie_core.visible import visible_text
from ui.base.page import user_text
from ui.forms.campaign_form import done, pairs_kept


def personal_link(token: str) -> str:
    # st.context.url is this page's address; the link opens the app's root with the token
    here = (st.context.url or "").split("?")[0].rstrip("/")
    return f"{here.removesuffix('/campaigns')}/?token={token}"


def create_links(engine, campaign_id: int, batch: int) -> None:
    """ "Create personal links" (a callback): once per batch of names, which then leave the box (they
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


def annotators_section(engine, campaign) -> None:
    rows = annotators.annotator_rows(engine, campaign.id)
    if rows:
        st.dataframe(
            rows,
            hide_index=True,
            width="stretch",
            column_config={"last answer": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")},
            placeholder="—",
        )
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
        st.text_area(
            "New annotators, one name per line (for you; they choose their display name)",
            key=f"new-annotators-{campaign.id}-{batch}",
        )
        st.form_submit_button(
            "Create personal links",
            on_click=create_links,
            args=(engine, campaign.id, batch),
            key=f"links-create-{campaign.id}-{batch}",
        )
    if done().get("links-error"):
        st.error(user_text(done().pop("links-error")))

    active = {r["id"]: r["name"] for r in rows if r["status"] == "active"}
    if active:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        who = c1.selectbox(
            "Revoke a link",
            list(active),
            index=None,
            format_func=lambda i: f"{active[i]} (#{i})",
            placeholder="Choose an annotator",
        )
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
        who = c1.selectbox(
            "Replace a lost link",
            list(everyone),
            index=None,
            placeholder="Choose an annotator",
            format_func=lambda i: f"{everyone[i]} (#{i})",
            help="The annotator keeps their labels and their place; their old link stops working.",
        )
        if c2.button("New link", disabled=who is None):
            with refused():
                done()["new-links"] = [(everyone[who], personal_link(annotators.new_link(engine, who)))]
                st.session_state["relinked"] = everyone[who]
                st.rerun()
    if st.session_state.get("relinked"):
        st.success(
            f"{user_text(st.session_state.pop('relinked'))}'s old link no longer works; the new one above "
            "continues with the same labels."
        )


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
    return (
        f"{campaign.overlap}–{campaign.overlap_max} annotators per pair (adaptive: more while under "
        f"{campaign.confidence:.0%} agreement)"
    )


def settings_section(engine, campaign, counts: dict) -> None:
    st.write(
        f"Order: {PAIR_ORDERS[campaign.pair_order]} · seed {campaign.seed} · "
        f"{campaign.quota} pairs per annotator · {overlap_text(campaign)}"
    )
    runs = dict(camp.score_run_choices(engine, kind=None))
    chosen = describe_selection(campaign.selection, runs.get((campaign.selection or {}).get("score_run")))
    st.write(f"Pairs: {user_text(chosen)} · {DISTRIBUTIONS[campaign.distribution]}.")
    st.caption(pairs_kept(counts) + ".")
    active = st.toggle("Open to annotators", value=campaign.active, key=f"active-{campaign.id}")
    if active != campaign.active:
        with refused():
            camp.update_campaign(engine, campaign.id, active=active)
    method = st.selectbox(
        "Final labels by",
        METHODS,
        index=METHODS.index(camp.campaign_aggregation(campaign)),
        format_func=METHOD_NAMES.get,
        key=f"aggregation-{campaign.id}",
        help="How this campaign's labels become a pair's final label where no reviewer decided: the default of "
        "Export, publishing (and `python -m db publish --campaign`) and Live campaign's reliabilities. Majority "
        "until you choose; Dawid–Skene, GLAD and MACE weigh each annotator by their estimated reliability, and "
        "decide a pair only where they are sure enough (Export: confidence and labels per annotator); the "
        "majority rule decides the others.",
    )
    if method != camp.campaign_aggregation(campaign):
        with refused():
            camp.update_campaign(engine, campaign.id, aggregation=method)
            st.rerun()
    if campaign.pair_order == "informative" and st.button("Recompute the order from the latest scores"):
        with refused():
            camp.reorder_campaign(engine, campaign.id)
            st.success("Pairs not yet served now follow the latest scores.")
    guidelines_editor(engine, campaign)


# The guidelines editor is drawn from the store at a revision, kept per campaign in st.session_state with the text
# it was drawn with; a save names that revision, so an editor opened before another organiser's save is refused
# (db.campaigns.update_campaign says what changed) instead of silently undoing it.
def draw_guidelines(drawn) -> None:
    """The editor, and the revision it saves over, set from the campaign as stored."""
    st.session_state[f"guide-{drawn.id}"] = drawn.guidelines
    st.session_state[f"guide-drawn-{drawn.id}"] = {"revision": drawn.guidelines_revision, "text": drawn.guidelines}


def save_guidelines(engine, campaign_id: int) -> None:
    """ "Save the guidelines" (a callback: it runs before the editor is drawn, so it may redraw it)."""
    drawn, text = st.session_state[f"guide-drawn-{campaign_id}"], st.session_state[f"guide-{campaign_id}"]
    try:
        camp.update_campaign(
            engine, campaign_id, guidelines=text, guidelines_revision=drawn["revision"], seen_guidelines=drawn["text"]
        )
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


def guidelines_editor(engine, campaign) -> None:
    if f"guide-drawn-{campaign.id}" not in st.session_state or f"guide-{campaign.id}" not in st.session_state:
        draw_guidelines(campaign)  # first drawn (or the page left and opened again): from the store
    drawn = st.session_state[f"guide-drawn-{campaign.id}"]
    edit, preview = st.columns(2)
    text = edit.text_area("Guidelines (Markdown)", height=400, key=f"guide-{campaign.id}")
    with preview.container(border=True, height=430):
        st.markdown(guidelines_markdown(text), unsafe_allow_html=True)
    if text != drawn["text"]:
        edit.button("Save the guidelines", type="primary", on_click=save_guidelines, args=(engine, campaign.id))
    outcome = st.session_state.pop(f"guide-outcome-{campaign.id}", {})
    if "success" in outcome:
        edit.success(outcome["success"])
    if "error" in outcome:
        edit.error(user_text(outcome["error"]))
    if f"guide-unsaved-{campaign.id}" in st.session_state:  # until a save goes through
        with edit.expander("Your text that was not saved, to copy", expanded=True):
            st.code(st.session_state[f"guide-unsaved-{campaign.id}"], language=None, wrap_lines=True)


def training_section(engine, campaign) -> None:
    """Each training pair's expected level and explanation: what an annotator sees once they answered it."""
    pairs = camp.training_pairs(engine, campaign.id)
    if pairs.empty:
        st.caption("This campaign has no training trial.")
        return
    with st.expander(f"Feedback on the {len(pairs)} training pairs"), st.form(f"training-{campaign.id}"):
        st.caption(
            "Annotators see the expected level and the explanation once they have answered a training "
            "pair, then continue. Training answers are never counted in the results."
        )
        wanted = []
        for row in pairs.itertuples():
            st.text(
                visible_text(f"{row.position + 1}. Source: {row.source}\nHypothesis: {row.hypothesis}")
            )  # as text, marked
            level, why = st.columns([1, 3])
            expected = level.selectbox(
                "Expected level",
                [None, 0, 1, 2, 3],
                format_func=lambda v: "— none —" if v is None else LEVELS[v],
                index=0 if pd.isna(row.expected_level) else int(row.expected_level) + 1,
                key=f"expected-{campaign.id}-{row.position}",
            )
            explanation = why.text_input(
                "Explanation",
                value=row.explanation,
                max_chars=camp.MAX_EXPLANATION,
                key=f"explain-{campaign.id}-{row.position}",
            )
            wanted.append({"position": row.position, "expected_level": expected, "explanation": explanation})
        if st.form_submit_button("Save the training feedback"):
            try:
                camp.set_training_feedback(engine, campaign.id, wanted)
                st.success("Saved: annotators see this feedback after their next training answer.")
            except (camp.CampaignError, NotAllowed) as exc:
                st.error(user_text(exc))


def activity_section(engine, campaign) -> None:
    """The campaign's latest changes: when, who, what (names as typed, so as text)."""
    activity = camp.campaign_activity(engine, campaign.id, limit=20)
    if activity.empty:
        return
    with st.expander(f"Recent activity ({len(activity)})"):
        for at, who, what in activity.itertuples(index=False):
            st.markdown(f"{at:%Y-%m-%d %H:%M} UTC · **{user_text(who) if who else 'no account'}** · {user_text(what)}")


def counts_section(campaign, counts: dict) -> None:
    """The campaign's counts, each with what it counts."""
    count_help = {
        "pairs in queue": "The pairs served as ordinary pairs: the campaign's pairs less its training pairs (and gold checks).",
        "pairs fully labelled": (
            f"Queue pairs answered by {campaign.overlap} annotator(s), the campaign's annotators per pair"
            if campaign.overlap_max is None
            else "Queue pairs answered by as many annotators as they "
            "want now (adaptive overlap: confident pairs stop at the least)"
        )
        + "; a pair served but not yet answered does not count.",
        "labels": f"Labels given in this campaign: {LABELS_COUNTED}. The same count on every page.",
        "training pairs": "Shown first to everyone, the same for all, not counted in results.",
    }
    for column, (label, value) in zip(st.columns(len(counts)), counts.items()):
        column.metric(label.capitalize(), f"{value:,}", help=count_help.get(label))
