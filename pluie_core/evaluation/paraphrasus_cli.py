"""``python -m pluie_core paraphrasus DIR --metric NAME [--threshold T] [--lower-is-similar] -o OUT.csv``

Reads the PARAPHRASUS files of DIR (or the files named), scores every pair with the baseline NAME of
``pluie_core.baselines.BASELINES`` or takes column NAME of ``--scores FILE`` (a table with the pairs'
two sentences, e.g. what ``python -m pluie_core score`` writes), and writes the scorecard: one row
per dataset (dataset, challenge, n, errors, error as a fraction), then rows Classify!, Minimize!,
Maximize! and Err holding the unweighted averages.

Decision rule: paraphrase when score >= T, or score <= T with --lower-is-similar (the baseline's own
direction from the registry when the flag is not given). Without --threshold: PLUIE's natural 0 for a
column named pluie..., otherwise the threshold with the lowest Err̄ on --calibrate-on (by default the
Classify! datasets); stderr says which.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd


def add_parser(commands) -> None:
    from pluie_core.baselines import BASELINES

    parser = commands.add_parser(
        "paraphrasus", help="the PARAPHRASUS scorecard of a metric (errors per dataset, per challenge, Err)"
    )
    parser.add_argument(
        "paths", nargs="+", metavar="DIR", help="the folder of the benchmark's files (or the files themselves)"
    )
    parser.add_argument(
        "--metric", required=True, help=f"a baseline ({', '.join(BASELINES)}) or a column of --scores FILE"
    )
    parser.add_argument(
        "--scores",
        metavar="FILE",
        nargs="+",
        help="table(s) of scored pairs: two sentence columns and the metric's column (e.g. the "
        "outputs of `python -m pluie_core score` on the benchmark's files)",
    )
    parser.add_argument("--threshold", type=float, help="paraphrase when score >= T (<= T with --lower-is-similar)")
    parser.add_argument(
        "--lower-is-similar",
        action="store_true",
        help="lower scores mean more similar (a distance); default: the baseline's own direction",
    )
    parser.add_argument(
        "--calibrate-on",
        metavar="DATASETS",
        help="without --threshold: datasets to calibrate on, comma-separated (default: the Classify! ones)",
    )
    parser.add_argument("--by-language", metavar="FILE", help="also write the errors per dataset and language (CSV)")
    parser.add_argument("--output", "-o", required=True, help="the scorecard, CSV")


def _scored_pairs(path: Path, metric: str) -> pd.Series:
    """The metric's scores of one file, indexed by (source, hypothesis)."""
    from pluie_core.io import guess_columns, read_table

    if not path.is_file():
        raise FileNotFoundError(f"Scores file {path} does not exist.")
    table = read_table(path)
    if metric not in table.columns:
        raise ValueError(
            f"{path.name} has no column {metric!r}; its columns are: {', '.join(map(str, table.columns))}."
        )
    mapping = guess_columns(table)
    if "source" not in mapping or "hypothesis" not in mapping:
        raise ValueError(
            f"{path.name} has no pair of sentence columns (such as source and hypothesis, or sentence1 and "
            "sentence2) to find the benchmark's pairs by."
        )
    values = pd.to_numeric(table[metric], errors="coerce")
    bad = values.isna() & table[metric].notna()
    if bad.any():
        raise ValueError(
            f"{path.name}, row {int(np.argmax(bad.to_numpy())) + 1}: the {metric} score "
            f"{table[metric][bad].iloc[0]!r} is not a number."
        )
    keys = pd.MultiIndex.from_arrays(
        [table[mapping["source"]].astype(str).str.strip(), table[mapping["hypothesis"]].astype(str).str.strip()]
    )
    return pd.Series(values.to_numpy(dtype=float), index=keys)


def _scores_from_files(paths: list[Path], metric: str, frame: pd.DataFrame) -> np.ndarray:
    scored = pd.concat([_scored_pairs(path, metric) for path in paths])
    where = paths[0].name if len(paths) == 1 else "the scores files"
    conflicting = scored.groupby(level=[0, 1]).nunique() > 1
    if conflicting.any():
        raise ValueError(f"{where} gives the pair {conflicting[conflicting].index[0]!r} two different {metric} scores.")
    scored = scored[~scored.index.duplicated()]
    wanted = pd.MultiIndex.from_arrays([frame["source"], frame["hypothesis"]])
    found = scored.reindex(wanted).to_numpy()
    missing = np.isnan(found)
    if missing.any():
        first = frame.loc[missing, "dataset"].iloc[0]
        raise ValueError(
            f"{int(missing.sum()):,} pairs of the benchmark have no {metric} score in {where} "
            f"(the first is in {first})."
        )
    return found


def run(args) -> Path:
    from pluie_core.baselines import BASELINES
    from pluie_core.evaluation.paraphrasus import DecisionRule, benchmark_frame, calibrate, read_benchmark, scorecard

    output = Path(args.output)
    if output.suffix.lower() != ".csv":
        raise ValueError(f"Cannot write {output.name}: give the scorecard a .csv name.")
    metric = args.metric
    if args.scores is None and metric not in BASELINES:
        raise ValueError(
            f"Unknown metric {metric!r}: name a baseline ({', '.join(BASELINES)}) or give --scores FILE "
            "with a column of that name."
        )
    frames, files = read_benchmark(args.paths)
    frame = benchmark_frame(frames)
    if args.scores is not None:
        frame["score"] = _scores_from_files([Path(p) for p in args.scores], metric, frame)
    else:
        unique = frame[["source", "hypothesis"]].drop_duplicates()
        values = BASELINES[metric](unique["source"].tolist(), unique["hypothesis"].tolist())
        keyed = pd.Series(values, index=pd.MultiIndex.from_frame(unique))
        frame["score"] = keyed.reindex(pd.MultiIndex.from_frame(frame[["source", "hypothesis"]])).to_numpy()
    higher = not args.lower_is_similar
    if not args.lower_is_similar and metric in BASELINES:
        higher = BASELINES[metric].higher_is_similar
    if args.threshold is not None:
        rule = DecisionRule(args.threshold, higher, "given")
    elif metric.lower().startswith("pluie"):
        rule = DecisionRule(0.0, higher, "natural")
    else:
        on = (
            [d.strip() for d in args.calibrate_on.split(",") if d.strip()]
            if args.calibrate_on
            else [name for name in frames if frame.loc[frame["dataset"] == name, "challenge"].iloc[0] == "Classify!"]
        )
        rule = calibrate(frame, "score", on, higher_is_similar=higher)
    card = scorecard(frame, "score", rule, language_col=None)
    output.parent.mkdir(parents=True, exist_ok=True)
    card.table().to_csv(output, index=False)
    if args.by_language:
        card.languages.to_csv(args.by_language, index=False)
    print(f"{metric}: {rule.describe()}", file=sys.stderr)
    if files.missing:
        print(
            f"note: no file for {', '.join(files.missing)}; the scorecard covers the other datasets.", file=sys.stderr
        )
    for note in card.notes:
        print(f"note: {note}", file=sys.stderr)
    print(
        f"Err = {card.err:.4f} (Classify! {card.challenges.set_index('challenge')['error'].get('Classify!', float('nan')):.4f}, "
        f"Minimize! {card.challenges.set_index('challenge')['error'].get('Minimize!', float('nan')):.4f}, "
        f"Maximize! {card.challenges.set_index('challenge')['error'].get('Maximize!', float('nan')):.4f})",
        file=sys.stderr,
    )
    return output
