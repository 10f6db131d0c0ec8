"""Load test of the labelling store: N annotator processes label at once, as fast as key presses allow.

Each process has its own engine (its own connections) and does what the labelling page does: serve the
next pair (db.serving.serve_next), wait a short "think time", store the answer (record_label); now and
then it goes back to an earlier pair and changes its answer (served_at, then record_label with
``replacing=`` the answer shown, as the page's Back does). Every answer the store acknowledged is
remembered; at the end the store is read back and compared with them:

- labels stored vs answers sent (first answers acknowledged; changes are counted apart);
- lost: an acknowledged answer missing from the store, or holding another level than the last
  acknowledged one;
- duplicated: a label no process was acknowledged for, a pair served twice to one person, or a queue
  pair given to more annotators than the campaign's overlap;
- adaptive overlap (--overlap-max): a pair served to more annotators than it wants now or than the
  most, or left unconfident below the most with every answer in ("stuck"), counts against the bar;
- "database is locked" errors, and any other error (first message shown);
- p50 / p95 of serving (a page run's serve_next) and of storing (record_label);
- the store going away (a server restarted, a network cut): every store call is bounded (PostgreSQL:
  connect, TCP and statement timeouts; SQLite: its busy timeout) and inside the error handling, so an
  outage is counted ("store unreachable", and how long the errors lasted) and everyone goes on until the
  store is back or the time is up; a process that dies anyway is reported, never waited for. An outage
  alone does not fail the bar (an answer that was refused is not lost), but an answer whose commit it cut
  may be stored unacknowledged, which counts as duplicated. A store that cannot be read back at the end
  is said in one line, with what was measured, and the run fails.

The campaign is a real one: 5 training pairs, quota 1,000, overlap 2, share of the work, gold checks
(a share of 10%, from 200 gold pairs), so checks are served too.

    python bench/annotators.py [--annotators 20] [--seconds 180] [--think 0.25] [--back 0.1] [--db URL]

Without --db a temporary SQLite file is used; with --db (e.g. a PostgreSQL URL from
scripts/start_test_postgres.sh PORT DIR) the campaign is added to that store. Exit status 1 when the
bar (0 lost, 0 duplicated, 0 locked, 0 other errors) is not met.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import queue
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select

from db import annotators, init_db, serving
from db import campaigns as camp
from db import quality as qual
from db.datasets import import_pairs
from db.engine import StoreUnavailable, make_engine, read_session
from db.models import Assignment, Campaign, CampaignPair, Label
from pluie_core.aggregation import pair_posterior, wants_another

GOLD_PAIRS = 200
READY_TIMEOUT = 300.0  # seconds every annotator process has to start and connect before the others go on alone
REPORT_GRACE = 120.0  # seconds past the labelling time a process has to report before it counts as hung (--grace)
CHECK_TIMEOUT = 600.0  # seconds the store has to be read back at the end (a server that stopped answering)
OUTAGE_PAUSE = 0.2  # seconds an annotator waits after finding the store gone, before trying again
# PostgreSQL: no store call waits for ever on a server that went away (libpq's own defaults wait as long as TCP does)
POSTGRES_BOUNDS = {
    "connect_timeout": "5",
    "keepalives": "1",
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "3",
    "tcp_user_timeout": "10000",
    "options": "-c statement_timeout=60000",
}


def bounded(url: str) -> str:
    """The store URL with POSTGRES_BOUNDS added (those the URL does not set itself); SQLite as it is (its busy
    timeout, PLUIE_DB_BUSY_TIMEOUT, bounds its waits already)."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return url
    extra = {key: value for key, value in POSTGRES_BOUNDS.items() if key not in parsed.query}
    return parsed.update_query_dict(extra).render_as_string(hide_password=False)


def store_gone(exc: Exception) -> bool:
    """The store's server could not be reached (db.engine.StoreUnavailable for a lost server)."""
    return isinstance(exc, StoreUnavailable) and exc.transient and not exc.busy


def build_campaign(
    url: str,
    n_annotators: int,
    n_pairs: int,
    overlap: int,
    gold_rate: float,
    quota: int = 1000,
    overlap_max: int | None = None,
    confidence: float = camp.ADAPTIVE_CONFIDENCE,
) -> tuple[int, list[int]]:
    engine = init_db(url)
    tag = uuid.uuid4().hex[:8]
    rng = np.random.default_rng(0)
    words = np.array("the a cat dog water milk house river small big red drinks sees runs near old new".split())
    texts = [
        (" ".join(rng.choice(words, 8)) + f" {i}.", " ".join(rng.choice(words, 8)) + f" {i}!") for i in range(n_pairs)
    ]
    import_pairs(engine, f"load {tag}", pd.DataFrame(texts, columns=["source", "hypothesis"]))
    checks = pd.DataFrame(
        [(f"Check {i}: the cat drinks water.", f"Check {i}: the cat drinks milk.") for i in range(GOLD_PAIRS)],
        columns=["source", "hypothesis"],
    )
    checks["label"] = [i % 2 for i in range(GOLD_PAIRS)]
    import_pairs(engine, f"load checks {tag}", checks, label_kind="binary")
    datasets = {name: i for i, name, _ in camp.dataset_choices(engine)}
    # the checks are pairs of the campaign's own datasets (a campaign's gold checks come from them); marked
    # gold, they leave its queue
    campaign_id = camp.create_campaign(
        engine,
        f"load {tag}",
        [datasets[f"load {tag}"], datasets[f"load checks {tag}"]],
        quota=quota,
        overlap=overlap,
        n_training=5,
        seed=1,
        overlap_max=overlap_max,
        confidence=confidence,
    )
    qual.set_quality_settings(
        engine, campaign_id, gold_rate=gold_rate, gold_min_accuracy=0.7, fast_fraction=1 / 3, streak_length=10
    )
    qual.gold_from_dataset(engine, campaign_id, datasets[f"load checks {tag}"])
    people = [
        a for a, _, _ in annotators.create_annotators(engine, campaign_id, [f"load{i}" for i in range(n_annotators)])
    ]
    for a in people:
        annotators.set_annotator_profile(engine, a, f"Load {a}", "good")
    engine.dispose()
    return campaign_id, people


def annotator(url: str, annotator_id: int, seconds: float, think: float, back: float, seed: int, out, ready) -> None:
    """One person: serve, think, answer; sometimes back to an earlier pair to change the answer. Every store
    call is inside the error handling, and the result is reported whatever happens."""
    rng = random.Random(seed)
    expected: dict[int, int] = {}  # pair -> last acknowledged level
    result = {
        "annotator": annotator_id,
        "sent": 0,
        "changes": 0,
        "locked": 0,
        "stale": 0,
        "errors": 0,
        "unreachable": 0,
        "outage": [],
        "first_error": "",
        "serve": [],
        "store": [],
        "expected": expected,
        "began": time.time(),
    }

    def failed(exc: Exception) -> None:
        if store_gone(exc):  # an outage: counted apart, and a short pause before the next try
            result["unreachable"] += 1
            result["outage"] = [result["outage"][0] if result["outage"] else time.time(), time.time()]
            time.sleep(OUTAGE_PAUSE)
        elif "database is locked" in str(exc) or getattr(exc, "busy", False):  # db.engine.StoreUnavailable
            result["locked"] += 1
        elif isinstance(exc, serving.StaleAnswerError):
            result["stale"] += 1
        else:
            result["errors"] += 1
            result["first_error"] = result["first_error"] or f"{type(exc).__name__}: {str(exc)[:300]}"

    engine = None
    try:
        engine = make_engine(url)
        with read_session(engine) as session:  # connected, and through the store's error handling
            session.execute(select(1))
    except Exception as exc:  # noqa: BLE001 - counted and reported; the labelling below tries again
        failed(exc)
    try:
        try:
            ready.wait(READY_TIMEOUT)  # everyone starts together, once every process has imported and connected
        except threading.BrokenBarrierError:  # another process never came: go on without it
            pass
        result["began"] = time.time()
        out.put({"labelling": annotator_id})  # the labelling time runs from here (collect's deadline)
        if engine is not None:
            label(engine, annotator_id, seconds, think, back, rng, result, expected, failed)
    except Exception as exc:  # noqa: BLE001 - whatever it was, it is reported with the rest
        failed(exc)
    finally:
        result["ended"] = time.time()
        if engine is not None:
            engine.dispose()
        out.put(result)


def label(
    engine,
    annotator_id: int,
    seconds: float,
    think: float,
    back: float,
    rng: random.Random,
    result: dict,
    expected: dict,
    failed,
) -> None:
    """The labelling loop of one person, until the time is up or their queue is done."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            started = time.perf_counter()
            item = serving.serve_next(engine, annotator_id)
            result["serve"].append(time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            failed(exc)
            continue
        if item is None:
            break
        time.sleep(think * rng.uniform(0.5, 1.5))
        if item.position > 0 and rng.random() < back:
            try:
                earlier = serving.served_at(engine, annotator_id, rng.randrange(item.position))
            except Exception as exc:  # noqa: BLE001
                failed(exc)
                continue
            if earlier is None or earlier.level is None:
                continue
            level = rng.randrange(5)
            try:
                started = time.perf_counter()
                serving.record_label(engine, annotator_id, earlier.position, level, 1.0, replacing=earlier.level)
                result["store"].append(time.perf_counter() - started)
                expected[earlier.pair_id] = level
                result["changes"] += 1
            except Exception as exc:  # noqa: BLE001
                failed(exc)
            continue
        level = rng.randrange(5)
        try:
            started = time.perf_counter()
            serving.record_label(engine, annotator_id, item.position, level, think, replacing=item.level)
            result["store"].append(time.perf_counter() - started)
            expected[item.pair_id] = level
            result["sent"] += item.level is None
            result["changes"] += item.level is not None
        except Exception as exc:  # noqa: BLE001
            failed(exc)


def check_store(url: str, campaign_id: int, results: list[dict]) -> dict:
    engine = make_engine(url)
    with read_session(engine) as session:
        stored = {
            (a, p): level
            for a, p, level in session.execute(
                select(Label.annotator_id, Label.pair_id, Label.level).where(Label.campaign_id == campaign_id)
            )
        }
        served_twice = session.scalar(
            select(func.count()).select_from(
                select(Assignment.annotator_id, Assignment.pair_id)
                .where(Assignment.campaign_id == campaign_id)
                .group_by(Assignment.annotator_id, Assignment.pair_id)
                .having(func.count() > 1)
                .subquery()
            )
        )
        campaign = camp.get_campaign(engine, campaign_id)
        # a fixed overlap is the campaign's; an adaptive one each pair's own (n_wanted), never over the most
        wanted = func.coalesce(CampaignPair.n_wanted, campaign.overlap)
        over_filled = session.scalar(
            select(func.count()).select_from(
                select(Assignment.pair_id)
                .join(
                    CampaignPair,
                    (CampaignPair.campaign_id == Assignment.campaign_id) & (CampaignPair.pair_id == Assignment.pair_id),
                )
                .where(Assignment.campaign_id == campaign_id)
                .group_by(Assignment.pair_id, wanted)
                .having((func.count() > wanted) | (func.count() > (campaign.overlap_max or campaign.overlap)))
                .subquery()
            )
        )
        stuck, raised = 0, 0
        if campaign.overlap_max is not None:  # no pair left unconfident below the most with all its answers in
            levels: dict[int, list] = {}
            who: dict[int, list] = {}
            for pair_id, aid, level in session.execute(
                select(Label.pair_id, Label.annotator_id, Label.level).where(
                    Label.campaign_id == campaign_id, Label.is_training.is_(False)
                )
            ):
                levels.setdefault(pair_id, []).append(level)
                who.setdefault(pair_id, []).append(aid)
            # the posterior the answers were decided by: the campaign's model once fitted (db.adaptive), else the vote share
            fit = session.scalar(select(Campaign.adaptive_fit).where(Campaign.id == campaign_id))
            for pair_id, n_wanted in session.execute(
                select(CampaignPair.pair_id, CampaignPair.n_wanted).where(CampaignPair.campaign_id == campaign_id)
            ):
                answers = levels.get(pair_id, [])
                stuck += wants_another(
                    answers,
                    n_wanted,
                    campaign.overlap_max,
                    campaign.confidence,
                    least=campaign.overlap,
                    posterior=pair_posterior(who.get(pair_id, []), answers, fit),
                )
                raised += n_wanted > campaign.overlap
        checks = session.scalar(
            select(func.count())
            .select_from(Assignment)
            .where(Assignment.campaign_id == campaign_id, Assignment.is_gold.is_(True))
        )
    engine.dispose()
    expected = {(r["annotator"], p): level for r in results for p, level in r["expected"].items()}
    lost = sum(1 for key, level in expected.items() if stored.get(key) != level)
    unacknowledged = sum(1 for key in stored if key not in expected)
    return {
        "stored": len(stored),
        "lost": lost,
        "duplicated": unacknowledged + served_twice + over_filled,
        "unacknowledged": unacknowledged,
        "served twice": served_twice,
        "over overlap": over_filled,
        "gold checks": checks,
        "stuck": stuck,
        "given more annotators": raised,
    }


def percentiles(values: list[float]) -> str:
    if not values:
        return "—"
    ms = np.array(values) * 1000
    return f"p50 {np.percentile(ms, 50):6.1f} ms   p95 {np.percentile(ms, 95):6.1f} ms   max {ms.max():7.1f} ms"


def refitter(url: str, stop, interval: float, out) -> None:
    """Adaptive overlap's model refitted while everyone labels, as the app's worker does (db.adaptive)."""
    import os

    from db import adaptive
    from db.engine import make_engine

    os.nice(10)  # as the app's worker runs (scripts/serve.py: --nice 10), below the annotators' server
    engine = make_engine(url)
    refits, failures = 0, 0
    try:
        while not stop.wait(interval):
            try:
                refits += len(adaptive.refit_due(engine))
            except Exception:  # noqa: BLE001 - the store busy past its timeout, or gone: the next tick tries again
                failures += 1
    finally:
        out.put({"refits": refits, "failures": failures})
        engine.dispose()


def collect(out, processes: dict, seconds: float, grace: float) -> tuple[list[dict], int, int]:
    """The annotators' results (``processes``: annotator id -> process): (results, processes that ended
    without one, processes still running without one ``grace`` seconds after the labelling time, stopped
    then: a store call that never returns). Never waits for a process that cannot report any more."""
    results: list[dict] = []
    deadline = time.monotonic() + READY_TIMEOUT + seconds + grace
    labelling = False
    while len(results) < len(processes):
        try:
            message = out.get(timeout=1.0)
            if "labelling" not in message:
                results.append(message)
            elif not labelling:  # the labelling time runs from the first to begin
                labelling, deadline = True, time.monotonic() + seconds + grace
            continue
        except queue.Empty:
            pass
        if all(not process.is_alive() for process in processes.values()):
            try:  # what was put just before the process ended
                while len(results) < len(processes):
                    message = out.get(timeout=1.0)
                    if "labelling" not in message:
                        results.append(message)
            except queue.Empty:
                break
        if time.monotonic() > deadline:
            break
    for process in processes.values():
        process.join(max(1.0, min(10.0, deadline - time.monotonic())))
    reported = {r["annotator"] for r in results}
    hung = [a for a, process in processes.items() if process.is_alive() and a not in reported]
    for process in processes.values():
        if process.is_alive():
            process.terminate()
            process.join(10)
    return results, len(processes) - len(reported) - len(hung), len(hung)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=180.0, help="how long everyone labels (default 180)")
    parser.add_argument("--think", type=float, default=0.25, help="mean seconds between pair shown and answer")
    parser.add_argument("--back", type=float, default=0.1, help="chance, per answer, of going back to change one")
    parser.add_argument("--pairs", type=int, default=20_000)
    parser.add_argument("--overlap", type=int, default=2)
    parser.add_argument("--quota", type=int, default=1000, help="pairs per annotator (more than a run reaches)")
    parser.add_argument("--gold-rate", type=float, default=0.1)
    parser.add_argument(
        "--overlap-max",
        type=int,
        default=None,
        help="adaptive overlap: --overlap annotators per pair, then more up to this many",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=camp.ADAPTIVE_CONFIDENCE,
        help="adaptive overlap: the posterior a pair's binarised label needs to stop",
    )
    parser.add_argument(
        "--refit-seconds",
        type=float,
        default=2.0,
        help="adaptive overlap: how often its model is refitted while they label (0: never)",
    )
    parser.add_argument("--db", help="store URL (default: a temporary SQLite file)")
    parser.add_argument(
        "--grace",
        type=float,
        default=REPORT_GRACE,
        help="seconds past the labelling time an annotator process has to report (default 120)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        url = bounded(args.db or f"sqlite:///{Path(tmp) / 'load.db'}")
        try:
            campaign_id, people = build_campaign(
                url,
                args.annotators,
                args.pairs,
                args.overlap,
                args.gold_rate,
                args.quota,
                args.overlap_max,
                args.confidence,
            )
        except Exception as exc:  # noqa: BLE001 - one line, not a traceback: nothing was measured yet
            print(f"The campaign could not be set up in the store, so nothing was measured: {first_line(exc)}")
            return 1
        context = mp.get_context("spawn")
        out = context.Queue()
        ready = context.Barrier(len(people))
        processes = {
            a: context.Process(target=annotator, args=(url, a, args.seconds, args.think, args.back, i, out, ready))
            for i, a in enumerate(people)
        }
        refits = {"refits": 0, "failures": 0}
        stop, refit_out = context.Event(), context.Queue()
        background = (
            context.Process(target=refitter, args=(url, stop, args.refit_seconds, refit_out))
            if args.overlap_max is not None and args.refit_seconds > 0
            else None
        )
        started = time.monotonic()
        if background is not None:
            background.start()
        for process in processes.values():
            process.start()
        results, died, hung = collect(out, processes, args.seconds, args.grace)
        problems = []  # what keeps the store's figures from being checked, in words
        if background is not None:
            stop.set()
            try:
                refits = refit_out.get(timeout=args.grace)
            except queue.Empty:
                problems.append("the background refits did not report")
            background.join(10)
            if background.is_alive():
                background.terminate()
            # the fit of the last answers, as the worker makes it within seconds: a pair its answers left
            # unconfident asks for one more annotator then (else it would count as stuck)
            from db import adaptive

            last = make_engine(url)
            try:
                within(CHECK_TIMEOUT, adaptive.refit_campaign, last, campaign_id)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"the last refit failed ({first_line(exc)})")
            finally:
                last.dispose()
        elapsed = time.monotonic() - started
        labelling = (max(r["ended"] for r in results) - min(r["began"] for r in results)) if results else 0.0
        try:
            figures = within(CHECK_TIMEOUT, check_store, url, campaign_id, results)
        except Exception as exc:  # noqa: BLE001 - the store gone at the end: said, with what was measured
            figures = None
            problems.append(
                f"the store could not be read back ({first_line(exc)}), so lost and duplicated answers were not checked"
            )
    sent = sum(r["sent"] for r in results)
    locked = sum(r["locked"] for r in results)
    errors = sum(r["errors"] for r in results)
    stale = sum(r["stale"] for r in results)
    unreachable = sum(r["unreachable"] for r in results)
    store = "SQLite" if url.startswith("sqlite") else url.split(":", 1)[0]
    print(
        f"{store}: {len(people)} annotators for {args.seconds:g} s (think {args.think:g} s, back {args.back:.0%}), "
        f"{elapsed:.1f} s wall, {labelling:.1f} s labelling"
    )
    if died or hung:
        print(
            f"{died} annotator processes ended without reporting, {hung} still running at the deadline "
            "(stopped): their answers count as unacknowledged"
        )
    if figures is not None:
        print(
            f"labels stored {figures['stored']:,} · answers sent {sent:,} (+{sum(r['changes'] for r in results):,} "
            f"changes through Back; {figures['gold checks']:,} gold checks served) · "
            + (f"{figures['stored'] / labelling:.1f} labels/s" if labelling > 0 else "no labelling time")
        )
        print(
            f"lost {figures['lost']} · duplicated {figures['duplicated']} (unacknowledged {figures['unacknowledged']}, "
            f"served twice {figures['served twice']}, over overlap {figures['over overlap']}) · "
            f"database is locked {locked} · stale refusals {stale} · other errors {errors}"
        )
    else:
        print(
            f"answers sent {sent:,} (+{sum(r['changes'] for r in results):,} changes through Back) · "
            f"database is locked {locked} · stale refusals {stale} · other errors {errors}"
        )
    windows = [r["outage"] for r in results if r["outage"]]
    if unreachable:
        print(
            f"store unreachable {unreachable:,} times, from the first such error to the last "
            f"{max(w[1] for w in windows) - min(w[0] for w in windows):.1f} s (answers refused meanwhile, "
            "not lost)"
        )
    if args.overlap_max is not None and figures is not None:
        print(
            f"adaptive overlap {args.overlap}-{args.overlap_max} at {args.confidence:.0%}: "
            f"{figures['given more annotators']:,} pairs given more annotators · left unconfident with "
            f"every answer in (stuck) {figures['stuck']} · model refitted {refits['refits']} times in the background "
            f"({refits['failures']} refits failed)"
        )
    for problem in problems:
        print(f"not checked: {problem}")
    first = next((r["first_error"] for r in results if r["first_error"]), "")
    if first:
        print(f"first other error: {first}")
    print(f"serving  {percentiles([t for r in results for t in r['serve']])}")
    print(f"storing  {percentiles([t for r in results for t in r['store']])}")
    ok = (
        figures is not None
        and not problems
        and died == hung == 0
        and figures["lost"] == figures["duplicated"] == locked == errors == stale == figures["stuck"] == 0
        and figures["stored"] == sent
    )
    print("bar met: 0 lost, 0 duplicated, 0 locked" if ok else "BAR NOT MET")
    return 0 if ok else 1


def within(seconds: float, fn, *args):
    """fn(*args) on a thread of its own, given up (TimeoutError) after ``seconds``: a call to a server that
    stopped answering (no timeout of the driver's fires while its machine still acknowledges) never
    holds the summary back."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - raised on the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise TimeoutError(f"no answer from the store in {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def first_line(exc: Exception) -> str:
    """An error in one line: a StoreUnavailable's sentence, else its type and first line."""
    if isinstance(exc, StoreUnavailable):
        return str(exc)
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
