"""The read-ahead: what the pages draw first, read into the shared caches on a thread of its own while
the person looks at the first page. Each page says what it opens on (first_view in its ui/views/*_cache.py
module, listed in FIRST_VIEWS); this module only runs their steps, in order, once per store."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from dataclasses import dataclass
from typing import Callable, Optional

from db import analysis
from db.engine import database_url
from ui.base import private_api
from ui.views import scope as scopes
from ui.views.selection import Selection, dataset_names, first_scale
from ui.views.store_reads import choices, store_key

# The pages whose first view is read ahead: each module's first_view(start) gives that page's steps.
FIRST_VIEWS = (
    "home_cache",
    "agreement_cache",
    "review_cache",
    "thresholds_cache",
    "correlation_cache",
    "distributions_cache",
    "preferences_cache",
    "scorecard_cache",
)
READ_AHEAD_THREAD = "pluie-read-ahead"


@dataclass(frozen=True)
class Start:
    """What the analysis pages open on (the sidebars' defaults): the scope (ui.views.scope: the campaign in
    progress, or every dataset), its datasets, and those of the first gold scale (the reference pages'
    first view: gold labels, of the first gold scale when the datasets have several)."""

    url: str  # the store's key (ui.views.store_reads.store_key)
    choices: analysis.AnalysisChoices
    dataset_ids: tuple[int, ...]
    campaign_id: Optional[int]
    gold_ids: tuple[int, ...]

    @property
    def first_run(self):
        """The first score run (a row of choices.runs: the sidebars' default), None without one."""
        return self.choices.runs.iloc[0] if len(self.choices.runs) else None


@dataclass(frozen=True)
class Step:
    """One read of a page's first view. ``order``: when it runs among every page's steps, lowest first
    (a page's steps of the same order keep theirs). Today: 10 the Datasets page's counts, 20 the labels and
    their views, 30 Agreement's figures, 40 Review's queue, 50 Thresholds' pairs, reference, first run and
    figures, 60 every run's scores (Correlation), 70 the edit distances (Distributions), 75 the scatters'
    hover labels, 80 Preferences' table, 90 Scorecard's pairs, 100 Correlation's figures, 110 Agreement's
    annotator tables (last: a second or two at 1,000,000 labels, which would otherwise delay every step
    above)."""

    order: int
    read: Callable[[], object]


def start_view() -> Optional[Start]:
    """What the pages open on in the store now; None when there is nothing to read (no dataset)."""
    url = store_key()
    ds = choices(url)
    if ds.datasets.empty:
        return None
    # the scope the pages open on (ui.views.scope): the campaign in progress, or every dataset
    scope = scopes.resolve(scopes.campaigns(url), scopes.default(scopes.campaigns(url)), dataset_names(ds))
    if not scope.dataset_ids:
        return None
    gold_ids = first_scale(Selection(url, ds, scope.dataset_ids, None, None, scope.campaign_id), "gold")
    return Start(url, ds, scope.dataset_ids, scope.campaign_id, gold_ids)


def steps(start: Start) -> list[Step]:
    """Every page's first-view steps (FIRST_VIEWS), in their order."""
    found = []
    for name in FIRST_VIEWS:
        found += importlib.import_module(f"ui.views.{name}").first_view(start)
    return sorted(found, key=lambda step: step.order)


def read_ahead() -> threading.Thread:
    """Read what the pages draw first (their first_view: the scope they open on, the first score run and
    every run, gold labels of the first scale: the sidebars' defaults) into the shared caches on a thread
    of its own, in the steps' order (Step). app.py starts it once, when the server's first admin page has
    run; the first visit to Agreement, Thresholds... then finds them (about 20 s of reading and computing at
    1,000,000 pairs and 3,000,000 labels, bench/pages.py). Each step stands alone: one that fails (no
    labels yet, a reference with one class) leaves the others to run, and the page that needs it says what
    is wrong, in its words. The thread runs at a lower priority than the pages where the system allows it
    (Linux: per thread); a store that changes meanwhile gives new keys, so nothing stale is ever shown; it
    stops when the app is pointed at another store; and the entries leave the cache as every entry does
    (ui.views.store_reads.CACHE_SECONDS, CACHE_ENTRIES)."""

    def read() -> None:
        try:
            if hasattr(os, "setpriority"):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except OSError:
            pass
        try:
            read_from = database_url()
            start = start_view()
        except Exception:  # noqa: BLE001
            logging.getLogger(__name__).debug("reading ahead failed", exc_info=True)
            return
        if start is None:
            return
        for step in steps(start):
            if database_url() != read_from:  # the app now uses another store: nothing more to read of this one
                return
            try:
                step.read()
            except Exception:  # noqa: BLE001 - the page that reads it reports what is wrong, in its words
                logging.getLogger(__name__).debug("reading ahead failed", exc_info=True)

    thread = threading.Thread(target=read, name=READ_AHEAD_THREAD, daemon=True)
    thread.start()
    return thread


class _NotFromReadAhead(logging.Filter):
    """Streamlit warns of a "missing ScriptRunContext" for every cached read made off a page's run: the
    read-ahead thread's are made so on purpose (for no session), so that warning is left out of the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != READ_AHEAD_THREAD


_missing_context_log = private_api.missing_context_logger()  # None: a Streamlit that logs it elsewhere
if _missing_context_log is not None:
    _missing_context_log.addFilter(_NotFromReadAhead())
_read_ahead_started: dict[str, threading.Thread] = {}
_read_ahead_lock = threading.Lock()


def read_ahead_once() -> threading.Thread:
    """:func:`read_ahead`, once per store in this server process, whoever asks first: scripts/serve.py as
    the server starts (`make run`: the first visits find their figures), or app.py after the first admin
    page has run (a server started with `streamlit run app.py`). The thread, running or done."""
    with _read_ahead_lock:
        url = database_url()
        if url not in _read_ahead_started:
            _read_ahead_started[url] = read_ahead()
        return _read_ahead_started[url]
