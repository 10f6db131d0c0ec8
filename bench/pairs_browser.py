"""Read time of the Pairs page's query (db.pairs.browse_pairs: the count and one page of 50) on a
large dataset, for each search and filter, first and last page; and the time of a dataset folder
restricted to a campaign, to labelled or to adjudicated pairs (db.publish).

    python bench/pairs_browser.py [--pairs 100000] [--dir data/bench_publish]

The store is bench/publish.py's (N pairs in 2 datasets, 3 labels per pair, one score run, 1% of the
pairs adjudicated), built once and reused; a campaign on a seeded sample of 40 pairs is added.
Times are the median of 3 runs, in seconds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.publish import build


def timed(call, repeat: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--dir", default="data/bench_publish")
    args = parser.parse_args(argv)
    from db import campaigns as camp
    from db import init_db
    from db.pairs import PairSearch, browse_pairs
    from db.publish import publish_dataset

    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / f"store_{args.pairs}.db"
    build(db, args.pairs)
    engine = init_db(f"sqlite:///{db}")
    dataset = 1  # "bench A": half the pairs
    campaign = next((c.id for c in camp.list_campaigns(engine) if c.name == "bench sample"), None)
    if campaign is None:
        campaign = camp.create_campaign(
            engine, "bench sample", [dataset], quota=10, n_training=5, seed=3, selection={"sample": 40}
        )
    searches = {
        "every pair": PairSearch(),
        "text 'cat sat on the mat near'": PairSearch(text="cat sat on the mat near"),
        "text, one pair ('12345 the cat')": PairSearch(text="12345 the cat"),
        "id (pair or file's)": PairSearch(pair_ref="4321"),
        "gold label 1": PairSearch(gold="with", gold_min=1),
        "unlabelled": PairSearch(state="unlabelled"),
        "labelled": PairSearch(state="labelled"),
        "labels disagree": PairSearch(state="disagreement"),
        "adjudicated": PairSearch(state="adjudicated"),
        "score in [0.2, 0.3]": PairSearch(run_id=1, score_min=0.2, score_max=0.3),
        "disagree + score >= 0.9": PairSearch(state="disagreement", run_id=1, score_min=0.9),
    }
    print(
        f"{'search (dataset of ' + format(args.pairs // 2, ',') + ' pairs)':<44} {'matches':>9} {'first page s':>13} "
        f"{'last page s':>12}"
    )
    for name, search in searches.items():
        first, result = timed(lambda: browse_pairs(engine, dataset, search, page=0))
        last, _ = timed(lambda: browse_pairs(engine, dataset, search, page=result.n_pages - 1))
        print(f"{name:<44} {result.total:>9,} {first:>13.3f} {last:>12.3f}", flush=True)

    print(f"\n{'publish (store of ' + format(args.pairs, ',') + ' pairs)':<44} {'pairs':>9} {'seconds':>13}")
    for name, scope in (
        ("a campaign's 40 pairs", {"campaign_id": campaign}),
        ("labelled pairs", {"pairs": "labelled"}),
        ("adjudicated pairs", {"pairs": "adjudicated"}),
    ):
        folder = directory / "restricted.published"
        shutil.rmtree(folder, ignore_errors=True)
        t = time.perf_counter()
        result = publish_dataset(engine, folder, licence="cc-by-4.0", n_boot=200, **scope)
        print(f"{name:<44} {result.n_pairs:>9,} {time.perf_counter() - t:>13.1f}", flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
