"""The HTTP API's large reads in bounded memory: the server's memory while a client pulls every pair of a large
store, against the memory of building the same table whole, side by side in one run.

    python bench/api_export.py [--pairs 100000,1000000] [--dir data/bench_publish]

Each store is bench/publish.py's (N pairs in 2 datasets, 3 labels per pair from 20 annotators, one score run, 1%
adjudicated; built once and reused). For each, the README's server (server.py) is started on it, and through the
API with a personal token the client reads: the wide export as CSV and as Parquet (`/export`, streamed a chunk at a
time) and every pair of the first dataset through the cursor pages (`/datasets/{id}/pairs`, 10,000 a page). The
server's resident anonymous memory (RssAnon of its process, sampled every 20 ms) is reported before and at its peak
during each read. Beside it, in a fresh process, the same table built whole (db.export.export_frame, what a
download without chunks would hold) and its peak. All memory in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from bench.publish import AnonymousPeak, anonymous_mib, build  # noqa: E402


def rss_anon(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class ProcessPeak:
    """The highest RssAnon of another process, sampled every 20 ms in a thread."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, rss_anon(pid), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_anon(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def whole(db: str) -> None:
    """In a fresh process: the wide table built whole, its rows and peak anonymous memory."""
    from db import init_db
    from db.export import export_frame

    engine = init_db(f"sqlite:///{db}")
    before = anonymous_mib()
    sampler = AnonymousPeak()
    t = time.perf_counter()
    frame = export_frame(engine)
    seconds = time.perf_counter() - t
    print(
        json.dumps(
            {
                "rows": len(frame),
                "seconds": round(seconds, 1),
                "anon_before_mib": round(before),
                "anon_peak_mib": round(sampler.stop()),
            }
        )
    )


def token_for(db: str) -> str:
    from db import access, init_db
    from db.accounts import account_by_name, add_account
    from db.api_tokens import create_token
    from lab.roles import OPEN

    engine = init_db(f"sqlite:///{db}")
    with access.acting_as(OPEN):
        owner = account_by_name(engine, "bench") or add_account(engine, "bench", "owner", password="bench password")
        _, token = create_token(engine, owner.id, "bench")
    engine.dispose()
    return token


def through_api(db: str) -> list[dict]:
    from tests.browser import start_app, stop_app

    token = token_for(db)
    server = start_app(f"sqlite:///{db}", Path(db).with_suffix(".server.log"), timeout=180)
    results = []
    try:
        client = httpx.Client(
            base_url=server.url + "/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=None
        )
        client.get("/me").raise_for_status()
        for name, path, params in (
            ("export CSV", "/export", {"format": "csv"}),
            ("export Parquet", "/export", {"format": "parquet"}),
        ):
            before = rss_anon(server.process.pid)
            sampler = ProcessPeak(server.process.pid)
            t, size = time.perf_counter(), 0
            with client.stream("GET", path, params=params) as answer:
                answer.raise_for_status()
                for piece in answer.iter_bytes():
                    size += len(piece)
            results.append(
                {
                    "read": name,
                    "seconds": round(time.perf_counter() - t, 1),
                    "mib": round(size / 2**20),
                    "anon_before_mib": round(before),
                    "anon_peak_mib": round(sampler.stop()),
                }
            )
        dataset_id = client.get("/datasets").json()[0]["id"]
        before = rss_anon(server.process.pid)
        sampler = ProcessPeak(server.process.pid)
        t, n, after = time.perf_counter(), 0, 0
        while True:
            page = client.get(f"/datasets/{dataset_id}/pairs", params={"after": after, "limit": 10_000}).json()
            n += len(page["items"])
            if page["next_after"] is None:
                break
            after = page["next_after"]
        results.append(
            {
                "read": f"pairs pages ({n:,})",
                "seconds": round(time.perf_counter() - t, 1),
                "mib": "",
                "anon_before_mib": round(before),
                "anon_peak_mib": round(sampler.stop()),
            }
        )
    finally:
        stop_app(server)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="100000,1000000", help="store sizes, comma-separated")
    parser.add_argument("--dir", default="data/bench_publish")
    parser.add_argument("--whole", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.whole:
        whole(args.whole)
        return 0
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    print(f"{'pairs':>10} {'read':>24} {'s':>7} {'MiB out':>8} {'server anon before':>19} {'peak':>6} {'ratio':>6}")
    for n in (int(x) for x in args.pairs.split(",")):
        db = directory / f"store_{n}.db"
        build(db, n)
        out = subprocess.run(
            [sys.executable, __file__, "--whole", str(db)],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env={**os.environ, "PLUIE_DEMO_RUN": "0"},
        )
        if out.returncode != 0:
            print(out.stderr[-2000:], file=sys.stderr)
            return 1
        built = json.loads(out.stdout.strip().splitlines()[-1])
        grown = built["anon_peak_mib"] - built["anon_before_mib"]
        print(
            f"{n:>10,} {'whole table (export_frame)':>24} {built['seconds']:>7} {'':>8} {built['anon_before_mib']:>19} "
            f"{built['anon_peak_mib']:>6} {'1.00':>6}",
            flush=True,
        )
        for r in through_api(str(db)):
            ratio = (r["anon_peak_mib"] - r["anon_before_mib"]) / grown if grown > 0 else float("nan")
            print(
                f"{n:>10,} {r['read']:>24} {r['seconds']:>7} {r['mib']:>8} {r['anon_before_mib']:>19} "
                f"{r['anon_peak_mib']:>6} {ratio:>6.2f}",
                flush=True,
            )
    print("ratio: the memory the read added to the server, over the memory the whole table added to its process")
    return 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
