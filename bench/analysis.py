"""Times what each analysis page computes (store reads + statistics, without Streamlit's cache) on a
store of 100,000 scored pairs and 300,000 labels.

    python bench/analysis.py [--pairs 100000] [--labels 300000] [--annotators 20] [--db path.db]

The store is built once with bulk inserts (the app's import for pairs, db.analysis.add_labels and
add_score_run for labels and scores); an existing --db file is reused. Each page is computed
--repeat times (3); prints the median, first and best wall time and the median CPU time per page,
and fails (exit 1) when a median wall time is over --limit seconds (2 by default).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from db import analysis, evaluation, evaluation_reads, init_db
from db.datasets import import_pairs
from db.preferences import add_preferences
from pluie_core import analysis as core
from pluie_core import stats
from pluie_core.evaluation import paraphrasus
from pluie_core.evaluation.correlation import compare_correlations, correlate, system_level, system_means
from pluie_core.evaluation.preference import agreement_table
from pluie_core.labels import ENGLISH_LEVELS

WORDS = (
    "the a cat dog sat on mat ran quickly slowly house river city old new big small red blue green "
    "man woman child bought sold saw found lost near far under over with without today yesterday"
).split()


def synthetic_pairs(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Sentences of 8-20 random words; hypotheses keep most words of their source (paraphrase-like,
    label 1) or replace many (label 0). A running number keeps every pair distinct."""
    lengths = rng.integers(8, 21, n)
    vocabulary = np.array(WORDS)
    words = vocabulary[rng.integers(0, len(vocabulary), (n, 20))]
    replacements = vocabulary[rng.integers(0, len(vocabulary), (n, 20))]
    label = rng.random(n) < 0.5
    changed = rng.random((n, 20)) < np.where(label, 0.15, 0.5)[:, None]
    hypotheses = np.where(changed, replacements, words)
    source = [f"{i} " + " ".join(row[:k]) for i, (row, k) in enumerate(zip(words, lengths))]
    hypothesis = [f"{i} " + " ".join(row[:k]) for i, (row, k) in enumerate(zip(hypotheses, lengths))]
    # a system column (kept as pair metadata) for the system-level correlation
    system = [f"system{i % 10}" for i in range(n)]
    return pd.DataFrame({"source": source, "hypothesis": hypothesis, "label": label.astype(float), "system": system})


def build(db_url: str, n_pairs: int, n_labels: int, n_annotators: int, seed: int = 0):
    engine = init_db(db_url)
    if not analysis.analysis_choices(engine).datasets.empty:
        return engine
    rng = np.random.default_rng(seed)
    pairs = synthetic_pairs(n_pairs, rng)
    t = time.perf_counter()
    half = n_pairs // 2
    import_pairs(engine, "bench A", pairs.iloc[:half], label_kind="binary")
    import_pairs(engine, "bench B", pairs.iloc[half:], label_kind="binary")
    frame = analysis.pairs_frame(engine, texts=True)

    # n_labels labels from n_annotators people, each a level that follows the gold with noise
    cells = rng.choice(len(frame) * n_annotators, n_labels, replace=False)  # distinct (pair, annotator)
    pair_ids, annotators = frame.index.to_numpy()[cells // n_annotators], cells % n_annotators
    labels = pd.DataFrame({"pair_id": pair_ids, "annotator": [f"bench{a:02d}" for a in annotators]})
    gold = frame.loc[labels["pair_id"], "gold_label"].to_numpy()
    side = np.where(rng.random(len(labels)) < 0.2, 1 - gold, gold)
    labels["level"] = np.where(rng.random(len(labels)) < 0.05, 4, 2 * side + rng.integers(0, 2, len(labels)))
    labels["seconds_spent"] = rng.gamma(2.0, 6.0, len(labels)).round(1)
    english = {f"bench{a:02d}": ENGLISH_LEVELS[a % 4] for a in range(n_annotators)}
    n_written = analysis.add_labels(engine, labels, english)

    similarity = 1 - core.edit_distances(frame)
    clipped = similarity.clip(0.01, 0.99)
    analysis.add_score_run(engine, "bench levenshtein", 1 - similarity, higher_is_similar=False)
    analysis.add_score_run(engine, "bench PLUIE stand-in", np.log(clipped / (1 - clipped)), kind="pluie")
    print(
        f"built the store in {time.perf_counter() - t:.1f} s "
        f"({len(frame):,} pairs, {n_written:,} labels by {n_annotators} annotators, 2 score runs)"
    )
    return engine


def ensure_preferences(engine, seed: int = 1) -> None:
    """Preferences between neighbouring pairs of each dataset (pair 2k against pair 2k+1, 15% ties),
    added once: 50,000 on the 100,000-pair store."""
    if not evaluation_reads.preference_datasets(engine).empty:
        return
    rng = np.random.default_rng(seed)
    pairs = analysis.pairs_frame(engine)
    for dataset_id, group in pairs.groupby("dataset_id"):
        ids = group.index.to_numpy()[: len(group) // 2 * 2]
        preferred = rng.choice(["A", "B", "tie"], len(ids) // 2, p=[0.425, 0.425, 0.15])
        add_preferences(
            engine, dataset_id, pd.DataFrame({"pair_a_id": ids[0::2], "pair_b_id": ids[1::2], "preferred": preferred})
        )


def correlation(engine, choices, dataset_ids, runs, reference="gold", level="segment"):
    """The Correlation page: every run against the graded reference (three coefficients, 1,000
    bootstrap resamples) and the paired difference test of the first two runs."""
    pairs = analysis.pairs_frame(engine, dataset_ids)
    data = pairs.join(analysis.scores_wide(engine, runs["id"], dataset_ids))
    if reference == "gold":
        data["reference"] = pairs["gold_label"]
    else:
        data["reference"] = evaluation_reads.label_means(engine, dataset_ids, "levels").reindex(data.index)
    names = list(runs["name"])
    oriented = pd.DataFrame({n: data[n] * (1 if h else -1) for n, h in zip(names, runs["higher_is_similar"])})
    if level == "segment":
        correlate(data[names], data["reference"], n_boot=1000)
        compare_correlations(oriented[names[0]], oriented[names[1]], data["reference"], "pearson", n_boot=1000)
    else:
        systems = evaluation_reads.meta_column(engine, "system", dataset_ids)
        system_level(data[names], data["reference"], systems, n_boot=1000)
        means = system_means(oriented, data["reference"], systems)
        compare_correlations(
            means[names[0]], means[names[1]], means["reference"], "pearson", n_boot=1000, max_resample=len(means)
        )


def preferences(engine, choices, dataset_ids, runs):
    """The Preferences page: tie-calibrated pairwise accuracy, Cramér's V and κ of every run."""
    available = evaluation_reads.preference_datasets(engine)
    ids = tuple(available["id"])
    items = evaluation_reads.preferences_frame(engine, ids)
    scores = analysis.scores_wide(engine, runs["id"], ids)
    side_a = scores.reindex(items["pair_a_id"]).reset_index(drop=True)
    side_b = scores.reindex(items["pair_b_id"]).reset_index(drop=True)
    agreement_table(items["preferred"].tolist(), side_a, side_b, dict(zip(runs["name"], runs["higher_is_similar"])))


def agreement(engine, choices, dataset_ids, runs, view="levels"):
    """As the page computes them: the labels as rows (values, binarised), pairwise κ on the annotators'
    matrix (20 here; the page takes the 50 with the most labels), Fleiss' κ on each pair's labels."""
    labels = analysis.labels_long(engine, dataset_ids, annotators=choices.annotators)
    rows = core.labels_on_scale(labels, "levels")
    binary = core.agreement_values(rows, "levels", binarised=True)
    views = {"levels": (core.agreement_values(rows, "levels"), "quadratic"), "binarised": (binary, None)}
    for view, weights in [views[view]]:  # the page draws one view at a time
        matrix = stats.levels_to_matrix(view, level_col="value")
        stats.pairwise_kappa(matrix, weights)
        stats.fleiss_kappa(stats.category_counts(stats.item_slots(view, level_col="value")))
        for level in ("nominal", "ordinal", "interval"):
            stats.krippendorff_alpha_ci(matrix.T, level, n_boot=200)
    scores = analysis.scores_wide(engine, runs["id"][:1], dataset_ids).iloc[:, 0]
    versus = stats.human_vs_model_by_annotator(binary, scores, 0.0)
    core.annotator_summary(labels, "levels", versus, binary)


def thresholds(engine, choices, dataset_ids, runs, reference="gold"):
    pairs = analysis.pairs_frame(engine, dataset_ids)
    labels = analysis.labels_long(engine, dataset_ids, annotators=choices.annotators) if reference != "gold" else None
    data = pairs.join(analysis.scores_wide(engine, runs["id"], dataset_ids))
    data["reference"] = core.reference_labels(pairs, labels, core.Reference(reference))
    score = runs["name"].iloc[0]
    kept = data.dropna(subset=[score, "reference"])
    stats.threshold_curve(kept[score], kept["reference"])
    stats.best_threshold(kept[score], kept["reference"])
    stats.metrics_at(kept[score], kept["reference"], 0.0)
    stats.roc_auc(kept[score], kept["reference"])
    for _, group in kept.groupby("dataset"):
        stats.best_threshold(group[score], group["reference"])
    draw = data.dropna(subset=[*runs["name"], "reference"])
    stats.mixed_balanced_draw(
        draw,
        list(runs["name"]),
        label_col="reference",
        n_draws=100,
        per_class=45,
        thresholds={runs["name"].iloc[0]: 0.0},
    )


def distributions(engine, choices, dataset_ids, runs):
    pairs = analysis.pairs_frame(engine, dataset_ids, texts=True)
    data = pairs.join(analysis.scores_wide(engine, runs["id"], dataset_ids))
    data["distance"] = core.edit_distances(pairs)
    data["reference"] = core.reference_labels(pairs, None, core.Reference("gold"))
    stats.edit_distance_correlation(data, [runs["name"].iloc[0]], "distance", "reference", "dataset")
    stats.class_summary(data, [*runs["name"], "distance"], "reference", "dataset")


def disagreements(engine, choices, dataset_ids, runs):
    pairs = analysis.pairs_frame(engine, dataset_ids, texts=True)
    labels = analysis.labels_long(engine, dataset_ids, annotators=choices.annotators)
    data = pairs.join(analysis.scores_wide(engine, runs["id"][:1], dataset_ids))
    data["reference"] = core.reference_labels(pairs, labels, core.Reference("majority"))
    found = stats.disagreements(data, runs["name"].iloc[0], "reference", 0.0)
    stats.human_disagreements(stats.item_slots(core.labels_on_scale(labels, "levels")))
    analysis.pair_detail(engine, int(found.index[0]), choices.annotators)


def scorecard(engine, choices, dataset_ids, runs):
    """The Scorecard page: the benchmark's pairs and every run's scores, then each run's scorecard
    (PLUIE at its natural 0, the baseline calibrated on the Classify! datasets), as its Table 2 draws."""
    members = evaluation.benchmark_datasets(engine)
    members = members[members["benchmark"] == "bench"]
    frame = evaluation.scorecard_frame(engine, members["id"], runs["id"])
    classify = members.loc[members["challenge"] == "Classify!", "name"].tolist()
    for _, run in runs.iterrows():
        higher = bool(run["higher_is_similar"])
        rule = (
            paraphrasus.DecisionRule(0.0, higher, "natural")
            if run["kind"] == "pluie"
            else paraphrasus.calibrate(frame, run["name"], classify, higher_is_similar=higher)
        )
        paraphrasus.scorecard(frame, run["name"], rule, language_col="language").table2(run["name"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=300_000)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--db", default="data/bench_analysis.db")
    parser.add_argument("--limit", type=float, default=2.0, help="seconds allowed per page (median of the repeats)")
    parser.add_argument("--repeat", type=int, default=3, help="times each page is computed")
    parser.add_argument("--only", default="", help="comma-separated page names to time (default: every page)")
    args = parser.parse_args(argv)
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    engine = build(f"sqlite:///{args.db}", args.pairs, args.labels, args.annotators)
    if evaluation.benchmark_datasets(engine)["benchmark"].isna().all():  # a store built before the scorecard
        for dataset_id in analysis.analysis_choices(engine).datasets["id"]:
            evaluation.assign_challenge(engine, int(dataset_id), "Classify!", "bench")
    ensure_preferences(engine)
    choices = analysis.analysis_choices(engine)
    dataset_ids = choices.datasets["id"].tolist()
    runs = choices.runs.sort_values("kind", ascending=False)  # the PLUIE run first
    slow = []
    has_systems = "system" in evaluation_reads.meta_keys(engine, dataset_ids[:1], sample=5)
    if not has_systems:
        print(f"{args.db} was built before pairs carried a system column: delete it to time the system level too")
    for name, page, extra in (
        ("agreement (five levels)", agreement, {}),
        ("agreement (binarised)", agreement, {"view": "binarised"}),
        ("thresholds (gold)", thresholds, {}),
        ("thresholds (majority)", thresholds, {"reference": "majority"}),
        ("distributions", distributions, {}),
        ("disagreements", disagreements, {}),
        ("scorecard", scorecard, {}),
        ("correlation (gold)", correlation, {}),
        ("correlation (mean level)", correlation, {"reference": "levels"}),
        ("correlation (system)", correlation, {"level": "system"}),
        ("preferences", preferences, {}),
    ):
        if args.only and not any(word.strip() and word.strip() in name for word in args.only.split(",")):
            continue
        if extra.get("level") == "system" and not has_systems:
            continue
        times, cpu = [], []
        for _ in range(args.repeat):
            t, c = time.perf_counter(), time.process_time()
            page(engine, analysis.analysis_choices(engine), dataset_ids, runs, **extra)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        median = float(np.median(times))
        slow += [name] if median > args.limit else []
        print(
            f"{name:24s} wall: median {median:5.2f} s, first {times[0]:5.2f} s, best {min(times):5.2f} s"
            f"   cpu: median {float(np.median(cpu)):5.2f} s"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f} on {os.cpu_count()} cores: wall times stretch when other work shares them")
    if slow:
        print(f"over {args.limit:g} s: {', '.join(slow)}")
    return 1 if slow else 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
