"""The Review page's pair under review (pages/review.py), as the reviewer reads it: the word diff, the pair's facts
(its dataset, gold label, place in the queue, the majority rule), the scope's gold key, the final level in force,
the annotators' flags and comments (as text), every label and every score. The reads are db.review's."""

import streamlit as st

from db import review
from pluie_core.aggregation import METHOD_NAMES
from pluie_core.diff import diff_html
from pluie_core.labels import LEVELS
from pluie_core.visible import visible_text
from ui.base.page import user_text

BOX = (
    "border:1px solid light-dark(#d0d7de,#3d3b38);border-radius:8px;padding:12px 16px;"
    "background:light-dark(#fafbfc,#1f1e1c);"  # light-dark(): the theme Streamlit chose
    "line-height:1.7;font-size:1.15rem;white-space:pre-wrap;overflow-wrap:anywhere"
)
CAPTION = "font-size:0.8rem;color:light-dark(#57606a,#9aa3ad);margin-bottom:2px"


def review_pair(engine, item: dict, pair_id: int, row, order, campaign_id) -> None:
    """The pair of db.review.review_item: ``row`` is its line in the queue (None for a pair shown on its own),
    ``order`` the aggregation method the queue is ordered by (None: review order), ``campaign_id`` the scope's
    campaign, whose gold key is shown (None: datasets)."""
    pair = item["pair"]
    source, hypothesis = diff_html(pair["source"], pair["hypothesis"])
    st.html(
        f"<div style='{BOX}' data-testid='review-pair'><div style='{CAPTION}'>Source</div><div>{source}</div>"
        f"<div style='{CAPTION};margin-top:10px'>Hypothesis</div><div>{hypothesis}</div></div>"
    )
    gold = pair["gold_label"]
    majority = item["majority_level"]
    st.caption(
        f"Pair {pair_id} · {user_text(pair['dataset'])} · id {user_text(pair['external_id'] or '—')} · gold label "
        f"{'—' if gold is None else f'{gold:g}'} · "
        + (
            ""
            if row is None
            else f"{'across the paraphrase boundary · ' if row['crosses_boundary'] else ''}"
            f"spread {int(row['spread'])} · "
            + (
                ""
                if order is None or "uncertainty" not in row or row["uncertainty"] != row["uncertainty"]
                else f"{METHOD_NAMES[order]}: posterior {row['posterior']:.2f}, uncertainty {row['uncertainty']:.2f} · "
            )
        )
        + f"majority rule: {LEVELS[majority] if majority is not None else 'no label (tie)' if len(item['labels']) else 'no label yet'}"
    )
    keys = review.campaign_keys(engine, campaign_id)  # the scope's campaign's gold keys (None: datasets)
    key = keys.loc[pair_id] if keys is not None and pair_id in keys.index else None
    if key is not None:
        said = (
            LEVELS[int(key["level"])]
            if key["level"] == key["level"]
            else ("the paraphrase side" if key["binary_label"] else "the non-paraphrase side")
        )
        st.caption(
            f"Gold key of this campaign: {said}"
            + (" (the adjacent level accepted)" if key["accept_adjacent"] else "")
            + f" · {user_text(key['derivation'])}"
        )
        if row is not None and bool(row.get("key_disagrees", False)):
            st.warning(
                f"The gold key ({said}) disagrees with the annotators, who agree with each other: without a "
                "decision, the export publishes the key (final_source gold). Decide the final level here."
            )
    decision = item["adjudication"]
    if decision is None:
        st.markdown(
            "**Final level:** not decided — the export uses "
            + ("the gold key." if key is not None and key["level"] == key["level"] else "the majority rule.")
        )
    else:
        st.markdown(
            f"**Final level: {LEVELS[int(decision['level'])]}** — decided by {user_text(decision['reviewer'])} on "
            f"{decision['created_at']:%Y-%m-%d %H:%M} UTC"
            + (f": “{user_text(decision['note'])}”" if decision["note"] else ".")
        )

    voiced = item["labels"][(item["labels"]["comment"] != "") | item["labels"]["flagged"]]
    if len(voiced):  # the annotators' own words, as text
        with st.container(border=True, key="review-voice"):
            st.markdown(f"**From the annotators** · flagged by {item['n_flags']} of {len(item['labels'])}")
            for who, comment, flagged in zip(voiced["annotator"], voiced["comment"], voiced["flagged"]):
                st.text(visible_text(f"{'⚑ flagged · ' if flagged else ''}{who}: {comment or '(no comment)'}"))

    LABEL_COLUMNS = {
        "level": st.column_config.NumberColumn(
            "level", format="%d", help="0–3 from Very different to Same meaning; 4: Don't know"
        ),
        "level_name": st.column_config.TextColumn("answer"),
        "english_level": st.column_config.TextColumn("English", help="The level of English the annotator gave"),
        "seconds_spent": st.column_config.NumberColumn("seconds", format="%.1f"),
        "comment": st.column_config.TextColumn("comment", width="large"),
    }
    SCORE_COLUMNS = {
        "run": st.column_config.TextColumn("run", width="large"),
        "value": st.column_config.NumberColumn("score", format="%.4g"),
    }
    # one above the other, each the page's width: run names and comments are read whole, not cut in a narrow column
    st.markdown("**Labels**")
    st.dataframe(
        item["labels"].drop(columns="value"),
        hide_index=True,
        width="stretch",
        column_config=LABEL_COLUMNS,
        placeholder="—",
    )
    st.markdown("**Scores**")
    if item["scores"].empty:
        st.caption("No score yet for this pair.")
    else:
        st.dataframe(item["scores"], hide_index=True, width="stretch", column_config=SCORE_COLUMNS, placeholder="—")
