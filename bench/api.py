"""Pairs in and labels out through the HTTP API, against the same work through the library directly, side by side
in one run (issue 55).

    python bench/api.py [--pairs 100000] [--dir data/bench_api]

N pairs (MRPC's test sentences, each pair made distinct by a number) with a gold label and three annotators'
five-level labels. Two fresh SQLite stores, each with the baseline runs a first start creates (so an import also
queues their scoring, as in the app); no worker runs. On one, the library as a script on the server would call it:
db.datasets.import_pairs on the frame, then the Export page's table (db.export.export_chunks, every chunk) written
as CSV. On the other, the README's server (server.py) on a free port, and the Python client over HTTP with a
personal token: `Lab.import_pairs` (the rows as JSON, `POST /api/v1/datasets`) and the same export streamed as CSV
(`GET /api/v1/export`), then as Parquet into pandas (`Lab.export`). Each line: seconds, pairs/s, and the API's
time over the library's (1.00: the API costs nothing over a script on the server). The two stores are checked to
hold the same pairs and labels, and the two CSVs the same rows.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from pathlib import Path

import pandas as pd

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.paths import DATASETS  # noqa: E402


def pairs_frame(n: int) -> pd.DataFrame:
    path = DATASETS / "mrpc" / "msr_paraphrase_test.txt"
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    take = [rows[i % len(rows)] for i in range(n)]
    return pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(n)],
            "source": [f"{r[3]} ({i})" for i, r in enumerate(take)],
            "hypothesis": [r[4] for r in take],
            "label": [int(r[0]) for r in take],
            "annotator:ann": [i % 4 for i in range(n)],
            "annotator:bob": [(i // 3) % 4 for i in range(n)],
            "annotator:cy": [(i * 7) % 5 if (i * 7) % 5 != 4 else 3 for i in range(n)],
        }
    )


def fresh_store(path: Path):
    from db import init_db
    from db.runs import ensure_default_runs

    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    engine = init_db(f"sqlite:///{path}")
    ensure_default_runs(engine)
    return engine


def export_csv(engine) -> bytes:
    """The Export page's table, every chunk, as CSV (what the API streams)."""
    from db.publish import export_chunks

    out = io.StringIO()
    for i, chunk in enumerate(export_chunks(engine, None)):
        chunk.to_csv(out, index=False, header=i == 0)
    return out.getvalue().encode("utf-8")


def store_counts(engine) -> tuple[int, int]:
    from sqlalchemy import func, select

    from db.engine import read_session
    from db.models import Label, Pair

    with read_session(engine) as session:
        return session.scalar(select(func.count(Pair.id))), session.scalar(select(func.count(Label.id)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--dir", default="data/bench_api")
    args = parser.parse_args(argv)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    frame = pairs_frame(args.pairs)
    n = len(frame)

    from bench.api_export import token_for
    from db import access
    from db.datasets import import_pair_chunks, import_pairs
    from lab.roles import OPEN
    from pluie_core.client import Lab
    from pluie_core.io import read_pair_chunks
    from tests.browser import start_app, stop_app

    # the library, as a script on the server calls it: import_pairs on the frame; and the API's own path, the rows
    # as JSONL bytes read in chunks (read_pair_chunks, import_pair_chunks), on a store of its own
    library = fresh_store(directory / "library.db")
    t = time.perf_counter()
    with access.acting_as(OPEN):
        import_pairs(library, "bench", frame.rename(columns={"id": "external_id"}), annotator_scale="levels")
    lib_in = time.perf_counter() - t
    chunked = fresh_store(directory / "chunked.db")
    jsonl = "".join(
        json.dumps(row, ensure_ascii=False) + "\n"
        for row in frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    ).encode("utf-8")
    t = time.perf_counter()
    buffer = io.BytesIO(jsonl)
    buffer.name = "rows.jsonl"
    chunks = read_pair_chunks(buffer, format="jsonl")
    with access.acting_as(OPEN):
        import_pair_chunks(
            chunked, "bench", chunks, annotator_scale="levels", total=chunks.n_rows, file_name="rows.jsonl"
        )
    chunked_in = time.perf_counter() - t
    chunked.dispose()
    lib_out = []
    for _ in range(2):  # twice: the first read warms the page cache and the imports; the faster counts
        t = time.perf_counter()
        lib_csv = export_csv(library)
        lib_out.append(time.perf_counter() - t)
    lib_out = min(lib_out)

    # the API, through the client, against the README's server on the other store
    api_db = directory / "api.db"
    fresh_store(api_db).dispose()
    token = token_for(str(api_db))
    server = start_app(f"sqlite:///{api_db}", directory / "api.server.log", timeout=180)
    try:
        lab = Lab(server.url, token, timeout=600)
        t = time.perf_counter()
        lab._json(
            "POST",
            "/datasets",
            json={
                "name": "bench",
                "annotator_scale": "levels",
                "rows": frame.astype(object).where(frame.notna(), None).to_dict(orient="records"),
            },
        )
        api_in = time.perf_counter() - t
        api_out = []
        for _ in range(2):
            t = time.perf_counter()
            answer = lab._http.get("/export", params={"format": "csv"})
            answer.raise_for_status()
            api_csv = answer.content
            api_out.append(time.perf_counter() - t)
        api_out = min(api_out)
        t = time.perf_counter()
        pulled = lab.export()
        api_parquet = time.perf_counter() - t
    finally:
        stop_app(server)

    from db import init_db

    api_engine = init_db(f"sqlite:///{api_db}")
    assert store_counts(api_engine) == store_counts(library) == (n, 3 * n), (
        store_counts(api_engine),
        store_counts(library),
    )
    lib_rows = pd.read_csv(io.BytesIO(lib_csv)).drop(columns=["pair_id"])
    api_rows = pd.read_csv(io.BytesIO(api_csv)).drop(columns=["pair_id"])
    assert lib_rows.equals(api_rows), "the two exports differ"
    assert len(pulled) == n

    print(f"{n:,} pairs with a gold label and 3 annotators' labels; SQLite; no worker running; 1 process each")
    print(f"{'':52} {'seconds':>8} {'pairs/s':>9} {'API / library':>14}")
    print(f"{'pairs in:  library import_pairs':52} {lib_in:8.1f} {n / lib_in:9,.0f}")
    print(f"{'pairs in:  library, the API path (chunks)':52} {chunked_in:8.1f} {n / chunked_in:9,.0f}")
    print(
        f"{'pairs in:  API POST /datasets (Lab, JSON)':52} {api_in:8.1f} {n / api_in:9,.0f} {api_in / lib_in:14.2f}"
        f"   ({api_in / chunked_in:.2f} against the same path)"
    )
    print(f"{'labels out: library export_chunks -> CSV (best of 2)':52} {lib_out:8.1f} {n / lib_out:9,.0f}")
    print(
        f"{'labels out: API GET /export CSV (best of 2)':52} {api_out:8.1f} {n / api_out:9,.0f} {api_out / lib_out:14.2f}"
    )
    print(
        f"{'labels out: API Parquet -> pandas (Lab.export)':52} {api_parquet:8.1f} {n / api_parquet:9,.0f} "
        f"{api_parquet / lib_out:14.2f}"
    )
    print(
        f"the two stores hold the same {n:,} pairs and {3 * n:,} labels; the two CSVs have the same rows "
        f"({len(lib_csv) / 2**20:.0f} MiB)"
    )
    return 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
