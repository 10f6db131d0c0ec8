"""Memory and time of writing a dataset folder (db.publish) as the store grows: the rows are streamed
in chunks, so the peak memory should stay nearly flat from 100,000 to 1,000,000 pairs; also the
review queue's read time (db.review.review_queue) on the same stores.

    python bench/publish.py [--pairs 100000,1000000] [--chunk 20000] [--dir data/bench_publish]

Each store (N pairs in 2 datasets, 3 labels per pair from 20 annotators, one score run, 1% of the
pairs adjudicated) is built once with bulk inserts and reused. Each measurement runs in a fresh
process, which prints its peak resident memory (ru_maxrss, which counts the pages of the files
`datasets` maps into memory) and its peak anonymous resident memory (RssAnon sampled every 20 ms:
the heap, what the export really holds), before and during the export; all in MiB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

BATCH = 50_000


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def anonymous_mib() -> float:
    """Resident anonymous memory (the heap: Python objects, pandas and Arrow buffers), without the
    pages of files mapped into memory, which the kernel drops when it needs them."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class AnonymousPeak:
    """The highest anonymous resident memory seen, sampled every 20 ms in a thread."""

    def __init__(self):
        self.peak, self._stop = anonymous_mib(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, anonymous_mib())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return max(self.peak, anonymous_mib())


def build(path: Path, n_pairs: int, seed: int = 0) -> None:
    from sqlalchemy import insert

    from db import init_db
    from db.engine import write_session
    from db.models import Adjudication, Annotator, Dataset, Label, Pair, Score, ScoreRun

    if path.exists():
        return
    t = time.perf_counter()
    engine = init_db(f"sqlite:///{path}")
    rng = np.random.default_rng(seed)
    with write_session(engine) as session:
        datasets = [Dataset(name=f"bench {k}", label_kind="binary") for k in "AB"]
        people = [
            Annotator(name=f"bench{a:02d}", english_level=("poor", "good", "advanced", "native")[a % 4])
            for a in range(20)
        ]
        run = ScoreRun(name="bench levenshtein", kind="baseline", model="levenshtein", status="paused")
        session.add_all([*datasets, *people, run])
        session.flush()
        dataset_ids, people_ids, run_id = [d.id for d in datasets], [p.id for p in people], run.id
    pair_id = 0
    for start in range(0, n_pairs, BATCH):
        n = min(BATCH, n_pairs - start)
        ids = np.arange(pair_id + 1, pair_id + n + 1)
        gold = rng.integers(0, 2, n)
        pairs = [
            {
                "id": int(i),
                "dataset_id": dataset_ids[int(i > n_pairs // 2)],
                "external_id": str(i),
                "source": f"{i} the cat sat on the mat near the old house",
                "hypothesis": f"{i} a cat sat on a mat",
                "text_hash": hashlib.sha1(str(i).encode()).hexdigest(),
                "gold_label": float(g),
            }
            for i, g in zip(ids, gold)
        ]
        who = np.stack([rng.choice(20, 3, replace=False) for _ in range(n)])
        side = np.where(rng.random((n, 3)) < 0.2, 1 - gold[:, None], gold[:, None])
        level = np.where(rng.random((n, 3)) < 0.05, 4, 2 * side + rng.integers(0, 2, (n, 3)))
        labels = [
            {
                "pair_id": int(ids[r]),
                "annotator_id": people_ids[int(who[r, c])],
                "level": int(level[r, c]),
                "is_training": False,
                "seconds_spent": 7.5,
            }
            for r in range(n)
            for c in range(3)
        ]
        scores = [{"run_id": run_id, "pair_id": int(i), "value": float(v)} for i, v in zip(ids, rng.random(n))]
        decided = [
            {"pair_id": int(i), "revision": 1, "level": int(rng.integers(0, 4)), "reviewer": "bench", "note": ""}
            for i in ids[rng.random(n) < 0.01]
        ]
        with write_session(engine) as session:
            for model, rows in ((Pair, pairs), (Label, labels), (Score, scores), (Adjudication, decided)):
                if rows:
                    session.execute(insert(model), rows)
        pair_id += n
    engine.dispose()
    print(
        f"built {path.name}: {n_pairs:,} pairs, {3 * n_pairs:,} labels in {time.perf_counter() - t:.0f} s", flush=True
    )


def measure(db: str, chunk: int) -> None:
    """In a fresh process: the export's wall time and peak memory, and the review queue's read time."""
    import datasets  # noqa: F401  (imported here, so its import is not counted in the export)

    from db import init_db
    from db.publish import publish_dataset
    from db.review import review_queue

    engine = init_db(f"sqlite:///{db}")
    before, anonymous_before = peak_mib(), anonymous_mib()
    sampler = AnonymousPeak()
    folder = Path(db).with_suffix(".published")
    shutil.rmtree(folder, ignore_errors=True)
    t = time.perf_counter()
    result = publish_dataset(engine, folder, licence="cc-by-4.0", chunk_size=chunk)
    seconds = time.perf_counter() - t
    after, anonymous_peak = peak_mib(), sampler.stop()
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20
    t = time.perf_counter()
    queue = review_queue(engine, show="all")
    queue_seconds = time.perf_counter() - t
    shutil.rmtree(folder, ignore_errors=True)
    print(
        json.dumps(
            {
                "pairs": result.n_pairs,
                "chunks": result.n_chunks,
                "seconds": round(seconds, 1),
                "peak_before_mib": round(before),
                "peak_after_mib": round(after),
                "folder_mib": round(size),
                "anon_before_mib": round(anonymous_before),
                "anon_peak_mib": round(anonymous_peak),
                "review_queue_pairs": len(queue),
                "review_queue_seconds": round(queue_seconds, 2),
            }
        )
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="100000,1000000", help="store sizes, comma-separated")
    parser.add_argument("--chunk", type=int, default=20_000)
    parser.add_argument("--dir", default="data/bench_publish")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        measure(args.measure, args.chunk)
        return 0
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    print(
        "peak RSS: ru_maxrss (file pages mapped by the Arrow copy included); anon: resident anonymous memory\n"
        f"{'pairs':>10} {'chunks':>7} {'export s':>9} {'RSS before':>11} {'RSS peak':>9} {'anon before':>12} "
        f"{'anon peak':>10} {'folder MiB':>11} {'queue pairs':>12} {'queue s':>8}"
    )
    for n in (int(x) for x in args.pairs.split(",")):
        db = directory / f"store_{n}.db"
        build(db, n)
        out = subprocess.run(
            [sys.executable, __file__, "--measure", str(db), "--chunk", str(args.chunk)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
        )
        if out.returncode != 0:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{r['pairs']:>10,} {r['chunks']:>7} {r['seconds']:>9} {r['peak_before_mib']:>11} {r['peak_after_mib']:>9} "
            f"{r['anon_before_mib']:>12} {r['anon_peak_mib']:>10} {r['folder_mib']:>11} {r['review_queue_pairs']:>12,} "
            f"{r['review_queue_seconds']:>8}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
