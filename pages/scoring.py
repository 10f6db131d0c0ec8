"""Scoring: the runs applied to every pair, their live progress, the workers, and new runs."""

import streamlit as st

from db.engine import database_url
from db.queue import workers_overview
from db.runs import (
    RunError,
    cancel_run,
    compute_times,
    latest_scores,
    pause_run,
    resume_run,
    retry_run,
    runs_progress,
)
from lab.roles import NotAllowed
from lab.time_left import is_range
from pluie_core.baselines import BASELINES
from pluie_core.run_kinds import RUN_KINDS
from ui.base.page import user_text
from ui.forms.run_forms import baseline_run_form, judge_run_form, pluie_run_form
from ui.frame import admin_page
from worker_launch import ensure_worker_running

engine = admin_page("table")
REFRESH_SECONDS = 2

st.title("Scoring")
st.caption(
    "Every run scores every pair in its scope, including pairs imported later. A background worker "
    "does the work; start more with `python worker.py` (other GPUs or machines sharing the store)."
)


def duration(seconds) -> str:
    if seconds is None:
        return "—"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else (f"{minutes} min {secs:02d} s" if minutes else f"{secs} s")


def time_left(run) -> str:
    """The run's time left as db.runs.runs_progress estimates it (lab.time_left): one figure, or a
    range while the workers share their turns with runs whose rate is not known yet; rough on few pairs."""
    if run.seconds_left is None:
        return "time left —"
    low, high = run.seconds_left, run.seconds_left_high or run.seconds_left
    text = (
        f"time left {duration(low)} to {duration(high)}" if is_range(low, high) else f"time left about {duration(high)}"
    )
    return text + (" (rough: few pairs timed yet)" if run.rough else "")


@st.fragment(run_every=REFRESH_SECONDS)
def live_progress():
    """Redrawn every few seconds without reloading the page."""
    runs = runs_progress(engine)
    if not runs:
        st.info("No score run yet: create one below.")
    for run in runs:
        fraction = run.done / run.total if run.total else 0.0
        rate = f"{run.pairs_per_second:.1f} pairs/s when scored" if run.pairs_per_second else "—"
        if run.starting:  # a worker has taken the run and loads its model: not "0 scored" for minutes
            label = f"**{user_text(run.name)}** · {run.starting} · {run.done:,} / {run.total:,} scored"
        elif run.up_to_date:
            label = (
                f"**{user_text(run.name)}** · up to date · {run.done:,} / {run.total:,} scored · waiting for new pairs"
            )
        else:
            label = (
                f"**{user_text(run.name)}** · {run.status} · {run.done:,} / {run.total:,} scored · {rate} · "
                f"{time_left(run)}"
            )
        if run.created_by:  # the account that created it (a store without accounts names nobody)
            label += f" · created by {user_text(run.created_by)}"
        if run.failed:
            label += f" · {run.failed:,} failed"
        if run.unparsed:  # an LLM judge's answers that could not be read: kept, counted, never dropped
            label += f" · {run.unparsed:,} unparsed answers"
        if run.seconds_per_pair is not None:
            label += f" · {run.seconds_per_pair:.3g} s/pair compute"
        if run.kind in RUN_KINDS and RUN_KINDS[run.kind].baseline and run.model in BASELINES:  # which BLEU is which
            label += f" · {BASELINES[run.model].description}"
        if run.options:  # the model a baseline uses, a PLUIE model's placement
            label += " · " + user_text(", ".join(f"{k} {v}" for k, v in run.options.items()))
        st.progress(min(fraction, 1.0), text=label)
        if run.status == "failed":
            st.error(f"Run “{user_text(run.name)}” failed: {user_text(run.error)}")
        elif run.waiting:  # its pairs were handed back (the judge's server away): the sentence, not a silence
            st.warning(f"Run “{user_text(run.name)}” is waiting: {user_text(run.waiting)}")
        elif run.failed and run.item_error:
            st.warning(
                f"Run “{user_text(run.name)}”: {run.failed:,} pairs could not be scored: {user_text(run.item_error)}"
            )

    timed = compute_times(runs)
    if not timed.empty:
        st.subheader("Compute time")
        st.caption(
            "Seconds spent in the metric per pair (model loading and the store excluded), as in the "
            "*-PLUIE paper's table 3; × PLUIE: against the fastest PLUIE run of the same model."
        )
        st.dataframe(
            timed,
            hide_index=True,
            width="stretch",
            column_config={
                "s / pair": st.column_config.NumberColumn(format="%.4f"),
                "pairs / s": st.column_config.NumberColumn(format="%.1f"),
                "× PLUIE": st.column_config.NumberColumn(format="%.2f"),
            },
            placeholder="—",
        )

    st.subheader("Workers")
    workers = workers_overview(engine)
    if workers.empty:
        st.warning("No worker is running: scores will not progress. Start one here, or with `python worker.py`.")
        if st.button("Start a worker"):
            if ensure_worker_running(database_url()) is None:
                st.info("No worker started: PLUIE_NO_WORKER is set, or a worker has just come alive.")
            else:
                st.success("Worker started: it appears here within a few seconds.")
    else:
        st.dataframe(
            workers,
            hide_index=True,
            width="stretch",
            placeholder="—",
            column_config={
                "state": st.column_config.TextColumn(
                    help="What the worker reports: loading the model of a run it has just taken, scoring, or idle."
                ),
                "pairs / s": st.column_config.NumberColumn(
                    help="The rate of its current run's latest pieces (— while it "
                    "loads the model, or before its first piece)."
                ),
            },
        )


@st.fragment(run_every=REFRESH_SECONDS)
def latest_scores_table(run_id: int):
    """Scores appear here as the worker writes them."""
    latest = latest_scores(engine, run_id, limit=15)
    if latest.empty:
        st.caption("No pair of this run is scored yet.")
    else:
        st.dataframe(latest, hide_index=True, width="stretch", placeholder="—")


if "scoring_flash" in st.session_state:
    st.success(st.session_state.pop("scoring_flash"))
live_progress()

st.subheader("Manage a run")
runs = {run.id: run for run in runs_progress(engine)}
if "scoring_select" in st.session_state:  # a run just created: select it
    st.session_state["scoring_run"] = st.session_state.pop("scoring_select")
if runs:
    run_id = st.selectbox(
        "Run", list(runs), format_func=lambda i: f"{runs[i].name} ({runs[i].status})", key="scoring_run"
    )
    status = runs[run_id].status
    actions = [
        ("Pause", pause_run, status == "active"),
        ("Resume", resume_run, status == "paused"),
        ("Cancel", cancel_run, status in ("active", "paused")),
        ("Retry", retry_run, status in ("failed", "cancelled") or runs[run_id].failed > 0),
    ]
    for column, (label, action, enabled) in zip(st.columns(len(actions)), actions):
        if column.button(label, disabled=not enabled, key=f"run_{label.lower()}"):
            try:
                action(engine, run_id)
                st.rerun()
            except (RunError, NotAllowed) as exc:  # NotAllowed: the role of whoever asked (db.access)
                st.error(user_text(exc))
    st.markdown("**Latest scored pairs**")
    latest_scores_table(run_id)


pluie_run_form(engine, expanded=not runs)
baseline_run_form(engine)
judge_run_form(engine)
