"""Aggregation methods against a known truth: accuracy and labels spent, fixed overlap against adaptive overlap.

A simulated campaign: ``--pairs`` pairs (default 300) with a true level drawn uniformly from the four
levels of the scale, and a pool of 8 annotators:

- 4 good ones: the true level with probability 0.8, else a neighbouring level;
- 2 average ones: the true level with probability 0.55, else a level at random;
- 1 careless one: a level at random on every pair;
- 1 who always answers "Mostly similar".

Fixed overlap 3: every pair gets 3 annotators drawn at random. Adaptive overlap: every pair gets 2, then,
round after round, one more annotator (drawn from those who have not labelled it) while the method's
posterior of its binary label is below ``--threshold`` (0.9) and it has fewer than 5 labels. Each method
is run through pluie_core.aggregation (crowd-kit's Dawid–Skene, GLAD, MACE; majority is today's rule, a
tie counts as a miss) on the binarised labels; "accuracy" is the share of pairs whose aggregated binary
label is the true one. Then the same methods on BIOSSES' five annotators (0-4 scores, mapped to levels
as round(score * 3 / 4)), with agreement against the BIOSSES gold standard (the mean score, >= 2 as
paraphrase) and each annotator's estimated reliability.

    python bench/aggregation.py [--pairs 300] [--seeds 1] [--threshold 0.9] [--methods majority,dawid_skene,glad,mace]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pluie_core.aggregation import METHODS, aggregate  # noqa: E402

BIOSSES = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "biosses" / "biosses_pairs_with_annotator_scores.tsv"
POOL = [("good", 0.8)] * 4 + [("average", 0.55)] * 2 + [("careless", 0.0), ("always Mostly similar", None)]


def answer(rng: np.random.Generator, kind: str, p: float, truth: int) -> int:
    if kind == "always Mostly similar":
        return 2
    if rng.random() < p:
        return truth
    if kind == "good":
        return int(np.clip(truth + rng.choice([-1, 1]), 0, 3))
    return int(rng.integers(4))


class Campaign:
    def __init__(self, n_pairs: int, seed: int):
        self.rng = np.random.default_rng(seed)
        self.truth = pd.Series(self.rng.integers(4, size=n_pairs), index=pd.RangeIndex(n_pairs, name="pair_id"))
        self.rows: list[tuple[int, str, int]] = []
        self.done: dict[int, set[int]] = {p: set() for p in range(n_pairs)}

    def serve(self, pair: int) -> None:
        free = [a for a in range(len(POOL)) if a not in self.done[pair]]
        a = int(self.rng.choice(free))
        kind, p = POOL[a]
        self.done[pair].add(a)
        self.rows.append((pair, f"{a}:{kind}", answer(self.rng, kind, p or 0.0, int(self.truth[pair]))))

    def labels(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["pair_id", "annotator", "level"])


def accuracy(result, truth: pd.Series) -> float:
    label = result.pairs["label"].reindex(truth.index)
    return float((label.fillna(-1).astype(int) == (truth >= 2).astype(int)).mean())


def fixed(method: str, n_pairs: int, seed: int, overlap: int = 3):
    campaign = Campaign(n_pairs, seed)
    for pair in range(n_pairs):
        for _ in range(overlap):
            campaign.serve(pair)
    result = aggregate(campaign.labels(), method, "binary")
    return accuracy(result, campaign.truth), len(campaign.rows), result


def adaptive(method: str, n_pairs: int, seed: int, threshold: float, low: int = 2, high: int = 5):
    campaign = Campaign(n_pairs, seed)
    for pair in range(n_pairs):
        for _ in range(low):
            campaign.serve(pair)
    while True:
        result = aggregate(campaign.labels(), method, "binary")
        posterior = result.pairs["posterior"].reindex(campaign.truth.index).fillna(0.0)
        unsure = [p for p in campaign.truth.index if posterior[p] < threshold and len(campaign.done[p]) < high]
        if not unsure:
            return accuracy(result, campaign.truth), len(campaign.rows), result
        for pair in unsure:
            campaign.serve(pair)


def simulate(methods: list[str], n_pairs: int, seeds: int, threshold: float) -> None:
    print(f"Simulated campaign: {n_pairs} pairs, {len(POOL)} annotators, {seeds} seed(s); binary accuracy against the truth")
    print(f"{'method':<12} {'fixed 3: acc':>13} {'labels':>7} {'adaptive: acc':>14} {'labels':>7} {'saved':>6} {'s':>5}")
    for method in methods:
        start = time.perf_counter()
        f = [fixed(method, n_pairs, seed) for seed in range(seeds)]
        a = [adaptive(method, n_pairs, seed, threshold) for seed in range(seeds)]
        f_acc, f_n = np.mean([x[0] for x in f]), np.mean([x[1] for x in f])
        a_acc, a_n = np.mean([x[0] for x in a]), np.mean([x[1] for x in a])
        print(f"{method:<12} {f_acc:>13.3f} {f_n:>7.0f} {a_acc:>14.3f} {a_n:>7.0f} {1 - a_n / f_n:>6.0%} "
              f"{time.perf_counter() - start:>5.0f}", flush=True)
        rel = f[0][2].annotators["reliability"].sort_index()
        print("    reliability (fixed 3, seed 0): " + ", ".join(f"{k} {v:.2f}" for k, v in rel.items()), flush=True)


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
    print(f"\nBIOSSES: {len(table)} pairs x {len(columns)} annotators; binary labels against the gold mean score (>= 2)")
    for method in methods:
        result = aggregate(long, method, "binary")
        label = result.pairs["label"].reindex(gold.index)
        agree = float((label.fillna(-1).astype(int) == gold).mean())
        unsure = float(result.pairs["uncertainty"].mean())
        rel = result.annotators["reliability"].sort_index()
        print(f"{method:<12} agreement {agree:.3f}  mean uncertainty {unsure:.3f}  reliability "
              + ", ".join(f"{k} {v:.2f}" for k, v in rel.items()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    simulate(methods, args.pairs, args.seeds, args.threshold)
    biosses(methods)


if __name__ == "__main__":
    main()
