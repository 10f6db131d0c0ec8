"""A large import beside an annotator's answers (issue 38, item 9): a generated CSV of N rows is imported
into a fresh SQLite store while a thread writes an answer every 0.2 s and records how long each waited.

    python bench/import_large.py [--rows 1000000]            # both ways, side by side
    python bench/import_large.py --rows 200000 --only staged  # one way

"one transaction": the file read whole (load_pairs) and written in one transaction, as every import
was before (import_pairs on the whole frame, the staged path switched off). "staged": the file read a
chunk at a time (read_pair_chunks) and written in short transactions out of sight
(import_pair_chunks). Each way runs in a process of its own, so that its peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def write_csv(path: Path, rows: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write("id,source,hypothesis,label\n")
        for i in range(rows):
            out.write(f"p{i},A man reads {i}.,He reads {i}.,{i % 2}\n")  # 1M rows: 41 MB (the limit is 50)


def run_one(way: str, path: Path, store: Path) -> dict:
    import pandas as pd
    from sqlalchemy import update

    import db.datasets as datasets
    from db import init_db, write_session
    from db.models import Label
    from pluie_core.io import load_pairs, read_pair_chunks

    engine = init_db(f"sqlite:///{store}")
    # the annotator: one label of a small dataset, written again every 0.2 s (an answer's transaction)
    datasets.import_pairs(engine, "warm", pd.DataFrame({"source": ["a"], "hypothesis": ["b"], "annotator:ann": [1]}))
    waits, errors, stop = [], [], threading.Event()

    def answer() -> None:
        n = 0
        while not stop.is_set():
            started = time.perf_counter()
            try:
                with write_session(engine) as session:
                    session.execute(update(Label).values(value=float(n % 4)))
            except Exception as exc:  # the store busy past its timeout: the answer is lost
                errors.append(type(exc).__name__)
            waits.append(time.perf_counter() - started)
            n += 1
            stop.wait(0.2)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    started = time.perf_counter()
    if way == "one transaction":
        datasets.STAGED_FROM = float("inf")
        result = datasets.import_pairs(engine, "big", load_pairs(path))
    else:
        chunks = read_pair_chunks(path)
        result = datasets.import_pair_chunks(engine, "big", chunks, total=chunks.n_rows)
    took = time.perf_counter() - started
    stop.set()
    thread.join()
    engine.dispose()
    return {
        "way": way,
        "pairs": result.n_pairs,
        "seconds": round(took, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "answers": len(waits),
        "worst_wait_s": round(max(waits), 2) if waits else None,
        "failed_answers": len(errors),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--only", choices=["one", "staged"])
    parser.add_argument("--child", nargs=3, metavar=("WAY", "CSV", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child[0], Path(args.child[1]), Path(args.child[2]))))
        return
    ways = (
        ["one transaction", "staged"]
        if args.only is None
        else ["one transaction" if args.only.startswith("one") else "staged"]
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.csv"
        write_csv(path, args.rows)
        print(f"{args.rows:,} rows, {path.stat().st_size / 2**20:.1f} MB of CSV")
        for i, way in enumerate(ways):
            out = subprocess.run(
                [sys.executable, __file__, "--child", way, str(path), str(Path(tmp) / f"s{i}.db")],
                capture_output=True,
                text=True,
            )
            if out.returncode:
                print(out.stderr[-2000:])
                continue
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"{way:>16}: {figures['seconds']:7.1f} s, peak {figures['peak_rss_mb']:,} MB; answers every 0.2 s: "
                f"{figures['answers']} written, worst wait {figures['worst_wait_s']} s, "
                f"{figures['failed_answers']} lost (store busy)"
            )


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    main()
