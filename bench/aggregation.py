"""Aggregation methods against a known truth, through the store's real queue: binary accuracy and labels
spent, fixed overlap 3 against adaptive overlap.

A simulated campaign on a real SQLite store: ``--pairs`` pairs (default 240) with a true level drawn
uniformly from the four levels of the scale, and seven annotators (class-dependent confusions):

- 4 careful ones: on a pair whose true level is at an end of the scale (Very different, Same meaning) the true
  level with probability 0.85, in the middle (Slightly / Mostly similar) 0.65; else a neighbouring level;
- 1 biased one: careful, then pushed one level up half the time (towards "paraphrase");
- 1 careless one: a level at random on every pair;
- 1 unsure one: "Don't know" on 40% of the pairs, careful on the rest.

Each campaign is served by db.serving's path (``serve_next`` / ``record_label``): at each step an
annotator who still has work is drawn at random and answers the pair served. Fixed overlap 3: every pair gets
3 annotators. Adaptive overlap: ``--least`` (2), then one more annotator while the pair holds fewer usable
answers than the least ("Don't know" does not count) or its binary label's posterior is below
``--confidence`` (0.8), up to ``--most`` (5); the posterior is the campaign's model (db.adaptive: Dawid–Skene
over the binarised labels), refitted every ``--refit-every`` answers as the worker does every few seconds, and
the vote share until its first fit decides. Then each method of pluie_core.aggregation (majority: today's
rule, a tie counts as a miss; crowd-kit's Dawid–Skene, GLAD, MACE) aggregates each campaign's binarised labels
(db.export.pair_aggregation, as the Export page does); "accuracy" is the share of pairs whose aggregated binary
label is the true one. Goal (issue 36): adaptive overlap reaches fixed overlap 3's accuracy with at most 80%
of its labels.

Then the same methods on BIOSSES' five annotators (0-4 scores, mapped to levels as round(score * 3 / 4)), with
agreement against the BIOSSES gold standard (the mean score, >= 2 as paraphrase) and each annotator's
estimated reliability.

    python bench/aggregation.py [--pairs 240] [--seeds 3] [--confidence 0.8] [--methods majority,dawid_skene,glad,mace]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from db import adaptive, annotators, init_db, serving
from db import campaigns as camp
from db.datasets import import_pairs
from db.engine import read_session
from db.export import pair_aggregation
from db.models import Pair
from pluie_core.aggregation import METHODS, aggregate

BIOSSES = (
    Path(__file__).resolve().parents[2] / "shared" / "datasets" / "biosses" / "biosses_pairs_with_annotator_scores.tsv"
)
POOL = ["careful"] * 4 + ["biased", "careless", "unsure"]


def answer(rng: np.random.Generator, kind: str, truth: int) -> int:
    if kind == "careless":
        return int(rng.integers(4))
    if kind == "unsure" and rng.random() < 0.4:
        return 4  # Don't know
    right = 0.85 if truth in (0, 3) else 0.65
    level = truth if rng.random() < right else int(np.clip(truth + rng.choice([-1, 1]), 0, 3))
    if kind == "biased" and rng.random() < 0.5:
        level = min(level + 1, 3)
    return level


def run_campaign(folder: Path, n_pairs: int, seed: int, adaptive_overlap: bool, args) -> dict:
    """One campaign through the serving path; returns its store, campaign id, truth and what it spent."""
    rng = np.random.default_rng(seed)
    truth_levels = rng.integers(4, size=n_pairs)
    url = f"sqlite:///{folder / ('adaptive' if adaptive_overlap else 'fixed')}-{seed}.db"
    engine = init_db(url)
    frame = pd.DataFrame(
        {
            "source": [f"Source sentence number {i}." for i in range(n_pairs)],
            "hypothesis": [f"Hypothesis sentence {i} here." for i in range(n_pairs)],
            "external_id": [str(i) for i in range(n_pairs)],
        }
    )
    import_pairs(engine, "simulated", frame)
    dataset_id = camp.dataset_choices(engine)[0][0]
    options = (
        dict(overlap=args.least, overlap_max=args.most, confidence=args.confidence)
        if adaptive_overlap
        else dict(overlap=3)
    )
    cid = camp.create_campaign(
        engine, "campaign", [dataset_id], quota=n_pairs, n_training=0, seed=seed, distribution="share", **options
    )
    people = {annotators.create_annotator(engine, cid, f"{i}-{kind}")[0]: kind for i, kind in enumerate(POOL)}
    with read_session(engine) as session:
        pair_ids = sorted(session.scalars(select(Pair.id).where(Pair.dataset_id == dataset_id)))
    pair_truth = {pid: int(level) for pid, level in zip(pair_ids, truth_levels)}
    busy = list(people)
    answers = refits = 0
    start = time.perf_counter()
    while busy:
        aid = busy[int(rng.integers(len(busy)))]
        item = serving.serve_next(engine, aid)
        if item is None:
            busy.remove(aid)
            continue
        serving.record_label(engine, aid, item.position, answer(rng, people[aid], pair_truth[item.pair_id]), 5.0)
        answers += 1
        if adaptive_overlap and args.refit_every and answers % args.refit_every == 0:
            refits += len(adaptive.refit_due(engine))
    seconds = time.perf_counter() - start
    overview = camp.campaign_overview(engine, cid)
    return {
        "engine": engine,
        "campaign_id": cid,
        "truth": pair_truth,
        "labels": answers,
        "refits": refits,
        "seconds": seconds,
        "overview": overview,
    }


def accuracy(engine, campaign_id: int, truth: dict, method: str) -> float:
    result = pair_aggregation(engine, campaign_id=campaign_id, method=method, scale="binary")
    label = result.pairs["label"].reindex(list(truth))
    wanted = (pd.Series(truth) >= 2).astype(int)
    return float((label.fillna(-1).astype(int).to_numpy() == wanted.to_numpy()).mean())


def simulate(methods: list[str], n_pairs: int, seeds: int, args) -> None:
    print(
        f"Through the serving path: {n_pairs} pairs, {len(POOL)} annotators ({', '.join(POOL)}), {seeds} seed(s); "
        f"adaptive {args.least}-{args.most} at confidence {args.confidence:g}, refit every {args.refit_every} answers"
    )
    results = {"fixed": [], "adaptive": []}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(seeds):
            for kind in results:
                run = run_campaign(Path(tmp), n_pairs, seed, kind == "adaptive", args)
                run["accuracy"] = {m: accuracy(run["engine"], run["campaign_id"], run["truth"], m) for m in methods}
                run["engine"].dispose()
                results[kind].append(run)
                print(
                    f"  seed {seed} {kind:<8}: {run['labels']} labels in {run['seconds']:.1f} s"
                    + (f", {run['refits']} refits" if kind == "adaptive" else "")
                    + "; accuracy "
                    + ", ".join(f"{m} {a:.3f}" for m, a in run["accuracy"].items()),
                    flush=True,
                )
    f_n = np.mean([r["labels"] for r in results["fixed"]])
    a_n = np.mean([r["labels"] for r in results["adaptive"]])
    print(
        f"\n{'method':<12} {'fixed 3: acc':>13} {'labels':>7} {'adaptive: acc':>14} {'labels':>7} "
        f"{'share':>6}  goal (acc >= fixed, labels <= 80%)"
    )
    for method in methods:
        f_acc = np.mean([r["accuracy"][method] for r in results["fixed"]])
        a_acc = np.mean([r["accuracy"][method] for r in results["adaptive"]])
        met = a_acc >= f_acc and a_n <= 0.8 * f_n
        print(
            f"{method:<12} {f_acc:>13.3f} {f_n:>7.0f} {a_acc:>14.3f} {a_n:>7.0f} {a_n / f_n:>6.0%}  "
            f"{'met' if met else 'not met'}",
            flush=True,
        )


def biosses(methods: list[str]) -> None:
    if not BIOSSES.exists():
        print(f"BIOSSES not found at {BIOSSES}; skipped.")
        return
    from pluie_core.formats.corpora import read_biosses

    table = read_biosses(BIOSSES.read_text()).table
    columns = [c for c in table.columns if c.startswith("annotator:")]
    scores = table[columns].set_axis(range(len(table)), axis=0)
    long = scores.rename_axis("pair_id").reset_index().melt(id_vars="pair_id", var_name="annotator", value_name="score")
    long["level"] = np.round(long["score"].astype(float) * 3 / 4).astype(int)
    long["annotator"] = long["annotator"].str.replace("annotator:", "", regex=False)
    gold = (table["label"].astype(float).set_axis(range(len(table))) >= 2).astype(int)
    print(
        f"\nBIOSSES: {len(table)} pairs x {len(columns)} annotators; binary labels against the gold mean score (>= 2)"
    )
    for method in methods:
        result = aggregate(long, method, "binary")
        label = result.pairs["label"].reindex(gold.index)
        agree = float((label.fillna(-1).astype(int) == gold).mean())
        unsure = float(result.pairs["uncertainty"].mean())
        rel = result.annotators["reliability"].sort_index()
        print(
            f"{method:<12} agreement {agree:.3f}  mean uncertainty {unsure:.3f}  reliability "
            + ", ".join(f"{k} {v:.2f}" for k, v in rel.items()),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=240)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--least", type=int, default=2)
    parser.add_argument("--most", type=int, default=5)
    parser.add_argument("--confidence", type=float, default=0.8)
    parser.add_argument(
        "--refit-every",
        type=int,
        default=5,
        help="answers between two refits of the model (0: never, the vote share decides throughout)",
    )
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--no-biosses", action="store_true")
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    simulate(methods, args.pairs, args.seeds, args)
    if not args.no_biosses:
        biosses(methods)


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    main()
