"""Steady-state throughput of a real worker process against PluieScorer.score, same pairs, same model.

    python bench/worker.py                    # CPU: random 6 layers, hidden 512, 32k vocab; 600 MRPC pairs; FS-DIRECT
    python bench/worker.py --size mistral-7b --device cuda --pairs 6000
    python bench/worker.py --model demo --pairs 300   # real weights: the demo judge (SmolLM2-135M GGUF)
    python bench/worker.py --model demo --pairs 2000 --mixed   # a fast baseline and the PLUIE run together

The model is random (no download possible here) with the sizes of bench/scorer.py's presets, and
is saved to a temporary directory so that the scorer and the worker load it the way a user's local
model is loaded; the tokenizer is trained on the template wording and the MRPC sentences, so prompt
lengths are realistic.

1. PluieScorer.score: the model loaded, a warm-up on a few pairs (kernels, the FS-DIRECT prefix
   cache), then every pair in one call, timed: pairs / s.
2. The worker: the pairs imported into a fresh store (SQLite; PostgreSQL too when
   PLUIE_TEST_POSTGRES_URL is set) through the app's import, one PLUIE run created as the Scoring
   page does, and `worker.py --exit-when-idle` started as a process. Its steady-state rate is read
   from the store: the pairs of every write after the first (the worker writes each piece of a claim
   as soon as it is scored), over the time between the first write landing and the last one (the
   start-up, the model load and the first piece, which builds the prefix cache, are outside it; the
   whole run's time is printed too).
3. `--mixed`: instead of 2, the pairs imported into a fresh store with two runs on them, Levenshtein
   (thousands of pairs a second) and the PLUIE run, and one `worker.py --exit-when-idle` serving both, as
   a fresh `make run` serves the baselines and the demo run. Printed: the seconds from the worker's start
   to the first score of each run (the runs are served in turn: neither waits for the other), and the
   PLUIE run's steady-state rate as in 2, against the scorer alone.

The ratio worker / scorer is what the worker's own work (claims, writes, leases, heartbeats, and
scoring claims rather than all pairs at once) costs. The scorer is timed before and after each
round of worker runs and each ratio taken to the mean of both (`--repeat N`: N rounds, the median
ratio printed); the machine's load average is printed at the
start and the end: other processes on the same cores change both rates. Pairs per CPU-second (the
worker process's CPU time over the same steady-state span, all its threads; on CUDA mostly the
host's work) are printed too, as they move less than wall-clock rates on shared cores.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.scorer import SIZES, build_model, read_mrpc
from pluie_core.scorer import PluieScorer
from tests.tiny_models import build_tiny_tokenizer


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def save_model(args, sources, hypotheses, directory: Path) -> str:
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    tokenizer = build_tiny_tokenizer("bpe", vocab_size=SIZES[args.size][5], extra_text=sources + hypotheses)
    model = build_model(args.size, device, dtype, tokenizer, args.seed)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    del model
    release_memory()
    return f"random {args.size} ({params / 1e6:.0f}M parameters, {dtype})"


def release_memory() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def scorer_rate(args, model_dir: Path, sources, hypotheses) -> tuple[float, float]:
    scorer = PluieScorer(
        str(model_dir), template=args.template, device=args.device, dtype=args.dtype, batch_size=args.batch_size
    )
    scorer.score(sources[:8], hypotheses[:8])  # warm-up; the prefix cache is built and kept, as in the worker
    synchronise(scorer.device)
    started, cpu = time.perf_counter(), time.process_time()
    scorer.score(sources, hypotheses)
    synchronise(scorer.device)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    rate = len(sources) / seconds
    print(
        f"PluieScorer.score: {len(sources)} pairs in {seconds:7.2f}s = {rate:8.2f} pairs/s; "
        f"{len(sources) / cpu:.2f} pairs per CPU-second "
        f"({scorer.last_run['batches']} batches, at most {scorer.batch_size or scorer._auto_batch} pairs and "
        f"{scorer._token_budget()} tokens each)",
        flush=True,
    )
    del scorer
    release_memory()
    return rate, len(sources) / cpu


def stores(directory: Path) -> list[tuple[str, str, object]]:
    """(label, URL, clean-up) of each store to run the worker against."""
    found = [("SQLite", f"sqlite:///{directory / 'store.db'}", None)]
    server = os.environ.get("PLUIE_TEST_POSTGRES_URL")
    if server:
        from tests.store_fixtures import drop_postgres_database, fresh_postgres_database

        url = fresh_postgres_database(server)
        found.append(("PostgreSQL", url, lambda: drop_postgres_database(server, url)))
    return found


def worker_rate(args, label: str, url: str, model_dir: Path, sources, hypotheses, overlap: bool, repetition: int = 0):
    import pandas as pd
    from sqlalchemy import func, select

    from db import init_db
    from db.datasets import import_pairs
    from db.engine import read_session
    from db.models import Score
    from db.runs import create_run

    engine = init_db(url)
    name = f"mrpc-{'overlap' if overlap else 'sequential'}-{repetition + 1}"
    import_pairs(engine, name, pd.DataFrame({"source": sources, "hypothesis": hypotheses}))
    from db.models import Dataset

    with read_session(engine) as session:
        dataset_id = session.scalar(select(Dataset.id).where(Dataset.name == name))
    run = create_run(
        engine,
        name=f"bench {name}",
        model=str(model_dir),
        template=args.template,
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch_size,
        dataset_ids=[dataset_id],
    )
    command = [
        sys.executable,
        str(REPO / "worker.py"),
        "--db",
        url,
        "--no-default-runs",
        "--exit-when-idle",
        "--runs",
        str(run),
        "--device",
        args.device,
        "--poll-seconds",
        "0.2",
    ]
    if args.claim_size:
        command += ["--claim-size", str(args.claim_size)]
    if not overlap:
        command.append("--no-overlap")
    log_path = Path(args.log_dir) / f"worker-{label}-{name}.log"
    started = time.perf_counter()
    cpu_samples = []  # (UTC time as the store writes it, CPU seconds the worker has used)
    with open(log_path, "wb") as log_file:
        process = subprocess.Popen(command, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT)
        while process.poll() is None:
            cpu = process_cpu_seconds(process.pid)
            if cpu is not None:
                cpu_samples.append((utcnow(), cpu))
            time.sleep(0.2)
        code = process.returncode
    total = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"the worker failed (exit {code}); its log:\n{log_path.read_text()[-3000:]}")
    with read_session(engine) as session:
        claims = session.execute(
            select(Score.created_at, func.count())
            .where(Score.run_id == run)
            .group_by(Score.created_at)
            .order_by(Score.created_at)
        ).all()
    engine.dispose()
    written = sum(n for _, n in claims)
    if written != len(sources) or len(claims) < 3:
        raise SystemExit(f"{written} of {len(sources)} pairs written in {len(claims)} writes: use more pairs")
    span = (claims[-1][0] - claims[0][0]).total_seconds()
    steady = sum(n for _, n in claims[1:]) / span
    sizes = [n for _, n in claims]
    cpu_span = cpu_at(cpu_samples, claims[-1][0]) - cpu_at(cpu_samples, claims[0][0]) if cpu_samples else None
    per_cpu = f"; {sum(sizes[1:]) / cpu_span:.2f} pairs per CPU-second" if cpu_span else ""
    print(
        f"worker.py, {label}, {'overlap' if overlap else 'no overlap'}: {len(sources)} pairs in {total:7.2f}s "
        f"from start to exit ({len(sources) / total:.2f} pairs/s); steady state {steady:8.2f} pairs/s over "
        f"{sum(sizes[1:])} pairs in {span:.2f}s{per_cpu} ({len(claims)} writes of {min(sizes)}-{max(sizes)} pairs, "
        f"first {sizes[0]})",
        flush=True,
    )
    return steady, (sum(sizes[1:]) / cpu_span if cpu_span else None)


def mixed_rate(args, label: str, url: str, model_dir: Path, sources, hypotheses, repetition: int = 0):
    """A fast baseline (Levenshtein) and the PLUIE run on the same pairs, one worker process serving
    both: the seconds from its start to each run's first score, and the PLUIE run's steady state (its
    pairs after its first write, over the time from its first write to its last)."""
    import pandas as pd
    from sqlalchemy import func, select

    from db import init_db
    from db.datasets import import_pairs
    from db.engine import read_session
    from db.models import Dataset, Score
    from db.runs import create_run

    engine = init_db(url)
    name = f"mrpc-mixed-{repetition + 1}"
    import_pairs(engine, name, pd.DataFrame({"source": sources, "hypothesis": hypotheses}))
    with read_session(engine) as session:
        dataset_id = session.scalar(select(Dataset.id).where(Dataset.name == name))
    fast = create_run(
        engine, name=f"bench levenshtein {name}", kind="baseline", model="levenshtein", dataset_ids=[dataset_id]
    )
    run = create_run(
        engine,
        name=f"bench {name}",
        model=str(model_dir),
        template=args.template,
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch_size,
        dataset_ids=[dataset_id],
    )
    command = [
        sys.executable,
        str(REPO / "worker.py"),
        "--db",
        url,
        "--no-default-runs",
        "--exit-when-idle",
        "--runs",
        f"{fast},{run}",
        "--device",
        args.device,
        "--poll-seconds",
        "0.2",
    ]
    if args.claim_size:
        command += ["--claim-size", str(args.claim_size)]
    log_path = Path(args.log_dir) / f"worker-{label}-{name}.log"
    started_at, started, started_clock = utcnow(), time.perf_counter(), time.time()
    with open(log_path, "wb") as log_file:
        code = subprocess.run(command, cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT).returncode
    total = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"the worker failed (exit {code}); its log:\n{log_path.read_text()[-3000:]}")
    with read_session(engine) as session:
        first = dict(
            session.execute(
                select(Score.run_id, func.min(Score.created_at))
                .where(Score.run_id.in_([fast, run]))
                .group_by(Score.run_id)
            ).all()
        )
        writes = session.execute(
            select(Score.created_at, func.count())
            .where(Score.run_id == run)
            .group_by(Score.created_at)
            .order_by(Score.created_at)
        ).all()
    engine.dispose()
    written = sum(n for _, n in writes)
    if written != len(sources) or len(writes) < 3:
        raise SystemExit(f"{written} of {len(sources)} pairs written in {len(writes)} writes: use more pairs")
    span = (writes[-1][0] - writes[0][0]).total_seconds()
    steady = sum(n for _, n in writes[1:]) / span
    to_first = {r: (first[r] - started_at).total_seconds() for r in (fast, run)}
    loaded = ready_after(log_path, run, started_clock)  # the worker's log: "run N: ready to score after X s of loading"
    load = (
        f" (its model ready {loaded[0]:.1f}s after the start, {loaded[1]:.1f}s of loading: first score "
        f"{to_first[run] - loaded[0]:.1f}s after it)"
        if loaded
        else " (its model load included)"
    )
    print(
        f"worker.py, {label}, mixed (Levenshtein + PLUIE, {len(sources)} pairs each): first score of "
        f"Levenshtein after {to_first[fast]:.1f}s, of PLUIE after {to_first[run]:.1f}s from the worker's start"
        f"{load}; PLUIE's steady state {steady:8.2f} pairs/s over {sum(n for _, n in writes[1:])} "
        f"pairs in {span:.2f}s ({len(writes)} writes of {min(n for _, n in writes)}-{max(n for _, n in writes)} "
        f"pairs, first {writes[0][1]}); both runs done {total:.1f}s after the start",
        flush=True,
    )
    return steady, None


def ready_after(log_path: Path, run_id: int, started_clock: float):
    """(seconds from the start, seconds of loading) of the worker's "run N: ready to score after X s of
    loading" line for the run, read from its log (local time stamps), or None."""
    import datetime as dt
    import re

    for line in log_path.read_text(errors="replace").splitlines():
        found = re.match(rf"(\S+ \S+) \S+ INFO run {run_id}: ready to score after ([0-9.]+) s", line)
        if found:
            at = dt.datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            return at - started_clock, float(found[2])
    return None


def utcnow():
    from db.models import utcnow as store_now

    return store_now()


def process_cpu_seconds(pid: int):
    """User + system CPU seconds of a process, all its threads (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cpu_at(samples, moment) -> float:
    """The worker's CPU seconds at `moment`, interpolated between the samples around it."""
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if t0 <= moment <= t1:
            width = (t1 - t0).total_seconds()
            return c0 + (c1 - c0) * ((moment - t0).total_seconds() / width if width else 0.0)
    return samples[-1][1] if moment > samples[-1][0] else samples[0][1]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size",
        choices=sorted(SIZES),
        default="cpu-small",
        help="cpu-small: 6 layers, hidden 512, 32k vocab; mistral-7b: Mistral-7B's sizes (a GPU)",
    )
    parser.add_argument(
        "--model",
        help="real weights instead of a random model: a hub id, a directory, a .gguf "
        "file, or 'demo' (the demo judge installed by make run)",
    )
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1 (default cpu)")
    parser.add_argument(
        "--dtype", choices=["float32", "bfloat16", "float16"], help="default: bfloat16 on cuda, float32 on cpu"
    )
    parser.add_argument("--pairs", type=int, default=600, help="MRPC pairs (test, then train)")
    parser.add_argument("--template", default="fs-direct")
    parser.add_argument("--batch-size", type=int, help="the scorer's pairs per forward pass (default: automatic)")
    parser.add_argument("--claim-size", type=int, help="the worker's pairs per claim (default: automatic)")
    parser.add_argument("--no-overlap", action="store_true", help="also run the worker without the overlap")
    parser.add_argument(
        "--mixed",
        action="store_true",
        help="the mixed case instead: a Levenshtein run and the PLUIE run served by one worker "
        "(seconds to each run's first score, PLUIE's steady rate against the scorer)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="worker runs per store and mode, each between two scorer timings (median reported)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        help="torch CPU threads of the scorer and the worker (default: torch's own choice); 1 keeps "
        "CPU-seconds per pair steady on shared cores",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the worker processes inherit it
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no GPU is visible to torch here.")

    print(
        f"load average at start: {load_average()} ({os.cpu_count()} cores; torch threads {torch.get_num_threads()})",
        flush=True,
    )
    sources, hypotheses = read_mrpc(args.pairs)
    with tempfile.TemporaryDirectory(prefix="pluie-bench-") as directory:
        model_dir = Path(directory) / "model"
        args.log_dir = directory
        started = time.perf_counter()
        if args.model:  # loaded by the scorer and the worker from where it lies, as a user's model is
            from pluie_core.gguf_files import demo_model_path

            model_dir = Path(str(demo_model_path() or "demo") if args.model == "demo" else args.model)
            described = f"{model_dir.name} (real weights)"
        else:
            described = save_model(args, sources, hypotheses, model_dir)
        print(
            f"model: {described} on {args.device}, saved in {time.perf_counter() - started:.1f}s; "
            f"{len(sources)} MRPC pairs, template {args.template}",
            flush=True,
        )
        scorer_runs = [scorer_rate(args, model_dir, sources, hypotheses)]
        results = []  # (mode, repetition, (pairs/s, pairs per CPU-second), scorer's (pairs/s, per CPU-second))
        found = stores(Path(directory))
        try:
            for repetition in range(args.repeat):
                measured = []
                for label, url, _clean_up in found:
                    if args.mixed:
                        measured.append(
                            (
                                f"{label}, mixed",
                                mixed_rate(args, label, url, model_dir, sources, hypotheses, repetition),
                            )
                        )
                        continue
                    for overlap in (True, False) if args.no_overlap else (True,):
                        mode = f"{label}, {'overlap' if overlap else 'no overlap'}"
                        measured.append(
                            (mode, worker_rate(args, label, url, model_dir, sources, hypotheses, overlap, repetition))
                        )
                # the scorer again: each worker figure is compared with the scorer's just before and after
                scorer_runs.append(scorer_rate(args, model_dir, sources, hypotheses))
                reference = tuple((a + b) / 2 for a, b in zip(*scorer_runs[-2:]))
                results += [(mode, repetition, rates, reference) for mode, rates in measured]
        finally:
            for _label, _url, clean_up in found:
                if clean_up:
                    clean_up()
    print("scorer: " + ", ".join(f"{rate:.2f}" for rate, _ in scorer_runs) + " pairs/s in turn")
    for mode in dict.fromkeys(m for m, *_ in results):
        ratios = []
        for _m, repetition, (rate, per_cpu), (reference, reference_cpu) in (r for r in results if r[0] == mode):
            ratios.append(rate / reference)
            print(
                f"worker / scorer ({mode}, #{repetition + 1}): {rate:.2f} / {reference:.2f} pairs/s = "
                f"{rate / reference:.1%}"
                + (
                    f"; per CPU-second {per_cpu:.2f} / {reference_cpu:.2f} = {per_cpu / reference_cpu:.1%}"
                    if per_cpu
                    else ""
                )
            )
        if len(ratios) > 1:
            print(f"worker / scorer ({mode}): median {statistics.median(ratios):.1%} over {len(ratios)} runs")
    print(f"load average at end: {load_average()}")


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    main()
