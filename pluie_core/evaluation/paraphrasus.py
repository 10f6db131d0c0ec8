"""The PARAPHRASUS scorecard (Michail, Clematide & Opitz, COLING 2025, sections 3-4, Table 2).

A metric becomes a paraphrase detector through a decision rule (a threshold), and the detector is
judged on ten datasets grouped in three challenges. The error of a dataset is
  - Classify!  the share of wrong predictions (binary gold labels),
  - Minimize!  the share of pairs predicted paraphrase (the dataset holds non-paraphrases only),
  - Maximize!  the share of pairs predicted non-paraphrase (the dataset holds paraphrases only);
each challenge's error is the unweighted mean of its datasets' errors, and Err̄ the unweighted mean of
the three challenge errors (paper §3.2). Everything here is a fraction (0.153); the paper prints
percentages rounded to one decimal, and its authors' script (extract_results.py) averages those
rounded percentages, so its averages can differ from ours in the last digit.

Decision rule: a pair is predicted paraphrase when its score is >= the threshold, or <= the threshold
for a metric where lower means more similar (a distance such as Levenshtein): the same convention as
the Thresholds page (pluie_core.stats). The threshold is PLUIE's natural 0, one the user gives, or one
calibrated on chosen datasets (``calibrate``: the threshold minimising Err̄ computed on those datasets
alone; with Classify! datasets only, their unweighted mean error).

The ten datasets and how they are selected from the benchmark's files (the paper's §3.1 and its
authors' extract_results.py, impresso/paraphrasus at 80aba4d; the files are those of its
datasets_no_results/ folder):

  =======  ==========  ===========================================  =================================
  dataset  challenge   file(s)                                      pairs kept
  =======  ==========  ===========================================  =================================
  pawsx    Classify!   paws-x-test.json                             all (gold ``label``)
  sts-h    Classify!   stsbenchmark-test-sts.json                   the 338 with a ``label`` field: the
                                                                    STS-B test pairs scored 4-5 that the
                                                                    authors annotated (109 paraphrases)
  mrpc     Classify!   ms-mrpc.json                                 all (gold ``label``)
  snli     Minimize!   stannlp-snli-pre-hyp.json + -hyp-pre.json    all of both files (neutral and
                                                                    contradiction only): one dataset
  anli     Minimize!   fb-anli-pre-hyp.json + fb-anli-hyp-pre.json  all of both files: one dataset
  xnli     Minimize!   fb-xnli-pre-hyp.json + fb-xnli-hyp-pre.json  all of both files: one dataset
  sts      Minimize!   stsbenchmark-test-sts.json                   0 <= ``score`` < 3 (of 0-5): 706
  sick     Minimize!   sickr-sts.json                               1 <= ``score`` < 3 (of 1-5): 2,305
  true     Maximize!   amr_true_paraphrases.json                    all (167)
  simp     Maximize!   onestop_parallel_all_pairs.json              all, exact repeats included (600)
  =======  ==========  ===========================================  =================================

The two NLI files hold the same pairs, premise-hypothesis and flipped ("we control this bias by
adding the flipped pairs"); the authors' script pools both files' predictions into one error, so n
is twice a file's pairs (snli 13,264) while the paper's Table 1 counts a file's pairs once (6,632).
Every row of a file is kept (simp has 18 exact repeats, paws-x-test 6: Table 1 counts them).
Known differences of the files shared with PLUIE Lab: paws-x-test.json and fb-xnli-*.json are the
Chinese parts only (2,000 and 3,340 pairs; Table 1's 14,000 and 16,700 are seven and five languages),
so those rows compare with the zh columns of the paper's Tables 6 and 7; ms-mrpc.json has 1,725 pairs
(Table 1: 1,730).

Per language: when the pairs carry a language field (``lang`` or ``language``), each dataset's error
is also given per language (the paper's Tables 6-7).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

__all__ = [
    "CHALLENGES",
    "PARTS",
    "Part",
    "ScorecardError",
    "DecisionRule",
    "Scorecard",
    "BenchmarkFiles",
    "recognise",
    "read_benchmark",
    "benchmark_frame",
    "check_dataset",
    "calibrate",
    "scorecard",
    "LANGUAGE_FIELDS",
    "MIN_PAIRS",
]

CHALLENGES = ("Classify!", "Minimize!", "Maximize!")
SHORT = {"Classify!": "Clfy!", "Minimize!": "Min!", "Maximize!": "Max!"}
MIN_PAIRS = 3
LANGUAGE_FIELDS = ("lang", "language")


class ScorecardError(ValueError):
    """Input the scorecard cannot use; the message is one sentence for the user."""


@dataclass(frozen=True)
class Part:
    """One of the benchmark's ten datasets."""

    name: str
    challenge: str
    files: tuple[str, ...]  # file stems (without .json)
    selection: str  # what is kept, in words


PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        Part("pawsx", "Classify!", ("paws-x-test",), "every pair of paws-x-test.json, gold label as given"),
        Part(
            "sts-h",
            "Classify!",
            ("stsbenchmark-test-sts",),
            "the pairs of stsbenchmark-test-sts.json that carry a label (the STS-B test pairs scored 4-5, "
            "annotated by the paper's authors)",
        ),
        Part("mrpc", "Classify!", ("ms-mrpc",), "every pair of ms-mrpc.json, gold label as given"),
        Part(
            "snli",
            "Minimize!",
            ("stannlp-snli-pre-hyp", "stannlp-snli-hyp-pre"),
            "every pair of both files (premise-hypothesis and flipped), neutral or contradiction: label 0",
        ),
        Part(
            "anli",
            "Minimize!",
            ("fb-anli-pre-hyp", "fb-anli-hyp-pre"),
            "every pair of both files (premise-hypothesis and flipped), neutral or contradiction: label 0",
        ),
        Part(
            "xnli",
            "Minimize!",
            ("fb-xnli-pre-hyp", "fb-xnli-hyp-pre"),
            "every pair of both files (premise-hypothesis and flipped), neutral or contradiction: label 0",
        ),
        Part(
            "sts",
            "Minimize!",
            ("stsbenchmark-test-sts",),
            "the pairs of stsbenchmark-test-sts.json with 0 <= score < 3 (of 0-5): label 0",
        ),
        Part("sick", "Minimize!", ("sickr-sts",), "the pairs of sickr-sts.json with 1 <= score < 3 (of 1-5): label 0"),
        Part("true", "Maximize!", ("amr_true_paraphrases",), "every pair of amr_true_paraphrases.json: label 1"),
        Part(
            "simp",
            "Maximize!",
            ("onestop_parallel_all_pairs",),
            "every pair of onestop_parallel_all_pairs.json, exact repeats included: label 1",
        ),
    )
}
# score ranges of the similarity-repurposed Minimize! sets (extract_results.py: low <= score < 3)
SCORE_SELECTION = {"sts": (0.0, 3.0), "sick": (1.0, 3.0)}
# file stem -> (parts, direction of an NLI file)
FILES: dict[str, tuple[tuple[str, ...], Optional[str]]] = {}
for _part in PARTS.values():
    for _stem in _part.files:
        direction = "pre-hyp" if _stem.endswith("pre-hyp") else "hyp-pre" if _stem.endswith("hyp-pre") else None
        parts, _ = FILES.get(_stem, ((), None))
        FILES[_stem] = (parts + (_part.name,), direction)


# --------------------------------------------------------------------------- reading the benchmark


def _name_of(source) -> str:
    return os.path.basename(str(getattr(source, "name", source)))


def recognise(name: str) -> tuple[tuple[str, ...], Optional[str]]:
    """Which benchmark datasets a file feeds, from its name (e.g. "fb-anli-hyp-pre.json" ->
    (("anli",), "hyp-pre"); "stsbenchmark-test-sts.json" -> (("sts-h", "sts"), None)); ((), None)
    for a file that is not part of the benchmark."""
    base = _name_of(name)
    stem = base[:-5] if base.lower().endswith(".json") else None
    if stem is None:
        return (), None
    return FILES.get(stem.lower(), ((), None))


@dataclass
class BenchmarkFiles:
    """The files given, sorted: which dataset each feeds, and what is not part of the benchmark."""

    parts: dict[str, list]  # part name -> its sources (paths or uploaded buffers)
    skipped: list[str]  # names of files that are not benchmark files
    missing: list[str]  # parts none of whose files were given

    def table(self) -> pd.DataFrame:
        rows = []
        for name, sources in self.parts.items():
            for source in sources:
                rows.append({"file": _name_of(source), "dataset": name, "challenge": PARTS[name].challenge})
        rows += [
            {"file": name, "dataset": "", "challenge": "not part of the benchmark: skipped"} for name in self.skipped
        ]
        return pd.DataFrame(rows, columns=["file", "dataset", "challenge"])


def _expand(sources) -> list:
    if isinstance(sources, (str, os.PathLike)) or hasattr(sources, "read"):
        sources = [sources]
    out = []
    for source in sources:
        if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
            out += sorted(p for p in Path(source).iterdir() if p.is_file())
        elif isinstance(source, (str, os.PathLike)) and not Path(source).exists():
            raise ScorecardError(f"There is no file or folder at {str(source)!r}.")
        else:
            out.append(source)
    return out


def sort_files(sources) -> BenchmarkFiles:
    """Sort files (paths, folders, or uploaded file objects with a .name) into the benchmark's
    datasets by their names. Raises ScorecardError when no file belongs to the benchmark, when a
    file is given twice, or when an NLI dataset has only one of its two files."""
    found: dict[str, list] = {name: [] for name in PARTS}
    skipped, seen = [], {}
    for source in _expand(sources):
        name = _name_of(source)
        parts, _ = recognise(name)
        if not parts:
            skipped.append(name)
            continue
        if name.lower() in seen:
            raise ScorecardError(f"{name} is given twice; give each benchmark file once.")
        seen[name.lower()] = source
        for part in parts:
            found[part].append(source)
    given = {name: sources for name, sources in found.items() if sources}
    if not given:
        raise ScorecardError(
            "None of these files is a PARAPHRASUS file (expected names such as ms-mrpc.json, paws-x-test.json, "
            "stannlp-snli-pre-hyp.json)." + (f" Given: {', '.join(skipped[:6])}." if skipped else "")
        )
    for name, sources in given.items():
        expected = PARTS[name].files
        if len(expected) == 2 and len(sources) != 2:
            have = _name_of(sources[0])
            other = next(stem for stem in expected if stem != have.lower()[:-5]) + ".json"
            raise ScorecardError(
                f"{name} is one dataset made of two files, premise-hypothesis and flipped: {have} is here but "
                f"{other} is missing."
            )
    return BenchmarkFiles(given, skipped, [name for name in PARTS if name not in given])


def _select(part: str, frame: pd.DataFrame, file_name: str) -> pd.DataFrame:
    """The rows of one file that belong to ``part``, with the label the challenge implies."""
    challenge = PARTS[part].challenge
    frame = frame.copy()
    if part in SCORE_SELECTION:
        score = frame["score"] if "score" in frame.columns else frame["label"]
        score = pd.to_numeric(score, errors="coerce")
        low, high = SCORE_SELECTION[part]
        frame["score"] = score
        frame = frame[(score >= low) & (score < high)]
        frame["label"] = 0.0
    elif part == "sts-h":
        frame = frame[frame["label"].notna()]
    if frame.empty:
        raise ScorecardError(f"{file_name} has no pair for {part} ({PARTS[part].selection}).")
    labels = frame["label"]
    if challenge == "Classify!":
        if labels.isna().any() or not labels.isin([0.0, 1.0]).all():
            raise ScorecardError(
                f"{file_name} is not the PARAPHRASUS {part} file: {part} needs a 0/1 label on every pair."
            )
    elif challenge == "Minimize!":
        if labels.eq(1.0).any() or not (labels.isna() | labels.isin([0.0, 1.0])).all():
            raise ScorecardError(
                f"{file_name} is not the PARAPHRASUS {part} file: its pairs should all be "
                "non-paraphrases (NLI neutral / contradiction, score -1 or 0)."
            )
        frame["label"] = 0.0
    else:
        if labels.eq(0.0).any():
            raise ScorecardError(
                f"{file_name} is not the PARAPHRASUS {part} file: its pairs should all be paraphrases."
            )
        frame["label"] = 1.0
    frame["file"] = file_name
    return frame


def read_benchmark(sources, *, loader=None) -> tuple[dict[str, pd.DataFrame], BenchmarkFiles]:
    """Read the benchmark from a folder, or from several files at once (paths or uploaded buffers),
    recognising each file by its name. Returns ({dataset: pairs frame}, the sorted files) with the
    datasets in the paper's order. A pairs frame has load_pairs's columns (source, hypothesis,
    label, external_id, ...) plus ``file``, ``direction`` (NLI: pre-hyp / hyp-pre) and ``score``
    (the STS / SICK similarity) where they apply; every row of a file is kept.
    Raises ScorecardError (or pluie_core.io.PairFileError for a broken file)."""
    files = sort_files(sources)
    if loader is None:
        from pluie_core.io import load_pairs

        def loader(source):
            return load_pairs(source, format="paraphrasus", keep_duplicates=True)

    read: dict[str, pd.DataFrame] = {}
    frames: dict[str, pd.DataFrame] = {}
    for part, sources_of_part in files.parts.items():
        pieces = []
        for source in sources_of_part:
            name = _name_of(source)
            if name not in read:
                read[name] = loader(source)
            piece = _select(part, read[name], name)
            _, direction = recognise(name)
            if direction:
                piece["direction"] = direction
            pieces.append(piece)
        if len(pieces) == 2:  # the NLI pair: premise-hypothesis first, as the authors list them
            pieces.sort(key=lambda p: p["direction"].iloc[0] != "pre-hyp")
        frames[part] = pd.concat(pieces, ignore_index=True)
    return frames, files


def benchmark_frame(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The datasets of ``read_benchmark`` in one frame, with ``dataset`` and ``challenge`` columns."""
    pieces = [
        frame.assign(dataset=name, challenge=PARTS[name].challenge if name in PARTS else None)
        for name, frame in frames.items()
    ]
    return pd.concat(pieces, ignore_index=True)


# --------------------------------------------------------------------------- checks


def check_dataset(name: str, challenge: str, labels: Iterable, label_kind: Optional[str] = None) -> None:
    """Whether a dataset can stand in a challenge; raises ScorecardError with one sentence if not.
    ``labels``: its gold labels, one per pair (NaN where none). Classify! needs a 0/1 label on every
    pair; Minimize! holds non-paraphrases only (no label 1) and Maximize! paraphrases only (no label
    0); a dataset needs at least MIN_PAIRS pairs."""
    if challenge not in CHALLENGES:
        raise ScorecardError(f"Unknown challenge {challenge!r}: choose {', '.join(CHALLENGES)}.")
    labels = pd.to_numeric(
        pd.Series(labels if isinstance(labels, pd.Series) else list(labels)), errors="coerce"
    ).astype(float)
    if len(labels) < MIN_PAIRS:
        raise ScorecardError(
            f"{name} has {len(labels)} pair{'s' if len(labels) != 1 else ''}; "
            f"a dataset of the scorecard needs at least {MIN_PAIRS}."
        )
    known = labels.dropna()
    scored = label_kind == "score" or not known.isin([0.0, 1.0]).all()
    if challenge == "Classify!":
        if known.empty:
            raise ScorecardError(
                f"{name} has no gold labels: a Classify! dataset needs a 0/1 gold label on every pair."
            )
        if scored:
            raise ScorecardError(
                f"{name}'s gold labels are similarity scores, not 0/1: a Classify! dataset needs binary gold labels."
            )
        if len(known) < len(labels):
            raise ScorecardError(
                f"{len(labels) - len(known)} pairs of {name} have no gold label: a Classify! dataset "
                "needs a 0/1 gold label on every pair."
            )
        return
    if scored and not known.empty:
        raise ScorecardError(
            f"{name}'s gold labels are similarity scores, not 0/1: keep only its "
            f"{'non-paraphrases' if challenge == 'Minimize!' else 'paraphrases'} in a dataset of "
            "their own (the benchmark import does this for sts and sick)."
        )
    wrong = 1.0 if challenge == "Minimize!" else 0.0
    n_wrong = int(known.eq(wrong).sum())
    if n_wrong:
        if challenge == "Minimize!":
            raise ScorecardError(
                f"{name} has {n_wrong} positive gold labels (paraphrases): a Minimize! dataset holds "
                "non-paraphrases only; assign it to Classify! or leave those pairs out."
            )
        raise ScorecardError(
            f"{name} has {n_wrong} negative gold labels (non-paraphrases): a Maximize! dataset holds "
            "paraphrases only; assign it to Classify! or leave those pairs out."
        )


# --------------------------------------------------------------------------- the decision rule


@dataclass(frozen=True)
class DecisionRule:
    """Paraphrase when score >= threshold (``higher_is_similar``) or score <= threshold (a distance).
    ``how``: "natural" (PLUIE's 0), "given" (the user's) or "calibrated" (on ``calibrated_on``)."""

    threshold: float
    higher_is_similar: bool = True
    how: str = "given"
    calibrated_on: tuple[str, ...] = ()
    tie_low: Optional[float] = None
    tie_high: Optional[float] = None
    n_tied: int = 1

    def predict(self, scores) -> np.ndarray:
        scores = np.asarray(scores, dtype=float)
        return scores >= self.threshold if self.higher_is_similar else scores <= self.threshold

    def describe(self) -> str:
        sign = "≥" if self.higher_is_similar else "≤"
        text = f"paraphrase when the score is {sign} {self.threshold:.6g}"
        if self.how == "natural":
            return text + " (PLUIE's natural threshold)"
        if self.how == "calibrated":
            text += f" (calibrated on {', '.join(self.calibrated_on)}: the threshold with the lowest Err̄ there"
            if self.n_tied > 1:
                text += (
                    f"; {self.n_tied} thresholds from {self.tie_low:.6g} to {self.tie_high:.6g} tie, the one "
                    "calling the most pairs paraphrases is kept"
                )
            return text + ")"
        return text + " (given)"


def _challenge_of(frame: pd.DataFrame, challenges: Optional[Mapping[str, str]], dataset_col: str) -> pd.Series:
    if challenges is None:
        if "challenge" not in frame.columns:
            raise ScorecardError("Say which challenge each dataset belongs to.")
        return frame["challenge"]
    return frame[dataset_col].map(challenges)


def _prepared(frame: pd.DataFrame, score: str, challenges, dataset_col: str, label_col: str) -> pd.DataFrame:
    if score not in frame.columns:
        raise ScorecardError(f"There is no score column {score!r}.")
    data = pd.DataFrame(
        {  # categories: a few distinct names over many pairs
            "dataset": pd.Categorical(frame[dataset_col].astype(str)),
            "challenge": pd.Categorical(_challenge_of(frame, challenges, dataset_col)),
            "label": pd.to_numeric(frame[label_col], errors="coerce").to_numpy(dtype=float)
            if label_col in frame.columns
            else np.nan,
            "score": pd.to_numeric(frame[score], errors="coerce").to_numpy(dtype=float),
        },
        index=frame.index,
    )
    unknown = data.loc[~data["challenge"].isin(CHALLENGES), "dataset"].unique()
    if len(unknown):
        raise ScorecardError(f"{unknown[0]} is in no challenge: assign it to Classify!, Minimize! or Maximize!.")
    return data


def paper_order(name: str, challenge) -> tuple:
    """Sort key of a dataset in the paper's order: by challenge (those in none last), then the paper's
    datasets in Table 2's order (a name such as "paraphrasus/mrpc" counts as mrpc), then the others by
    name."""
    short = name.rsplit("/", 1)[-1]
    return (
        CHALLENGES.index(challenge) if challenge in CHALLENGES else len(CHALLENGES),
        list(PARTS).index(short) if short in PARTS else len(PARTS),
        name,
    )


def in_paper_order(datasets: pd.DataFrame, name_col: str = "name", challenge_col: str = "challenge") -> pd.DataFrame:
    """The rows of a table of datasets (one per dataset) in the paper's order (``paper_order``)."""
    return datasets.loc[
        sorted(datasets.index, key=lambda i: paper_order(datasets.at[i, name_col], datasets.at[i, challenge_col]))
    ]


def _ordered_datasets(data: pd.DataFrame) -> list[tuple[str, str]]:
    """(dataset, challenge) in the paper's order (``paper_order``)."""
    pairs = data[["dataset", "challenge"]].drop_duplicates()
    clash = pairs["dataset"].duplicated()
    if clash.any():
        raise ScorecardError(f"{pairs.loc[clash, 'dataset'].iloc[0]} is assigned to two challenges; give it one.")
    return sorted(map(tuple, pairs.to_numpy()), key=lambda item: paper_order(*item))


def _errors(challenge: str, labels: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    if challenge == "Classify!":
        return predicted != (labels == 1)
    if challenge == "Minimize!":
        return predicted
    return ~predicted


def calibrate(
    frame: pd.DataFrame,
    score: str,
    on: Sequence[str],
    *,
    higher_is_similar: bool = True,
    challenges: Optional[Mapping[str, str]] = None,
    dataset_col: str = "dataset",
    label_col: str = "label",
) -> DecisionRule:
    """The threshold with the lowest Err̄ computed on the datasets ``on`` alone (their challenges'
    unweighted means, then the mean of those; with Classify! datasets only, their mean error).
    Every distinct score is a candidate, and one above them all (no pair a paraphrase); among tied
    candidates the one predicting the most paraphrases is kept, and the tie is reported."""
    on = list(dict.fromkeys(on))
    if not on:
        raise ScorecardError("Choose at least one dataset to calibrate the threshold on.")
    data = _prepared(frame, score, challenges, dataset_col, label_col)
    present = set(data["dataset"].unique())
    missing = [name for name in on if name not in present]
    if missing:
        raise ScorecardError(f"There is no dataset {missing[0]!r} to calibrate on.")
    data = data[data["dataset"].isin(on) & data["score"].notna()]
    oriented = data["score"].to_numpy() if higher_is_similar else -data["score"].to_numpy()
    if oriented.size == 0:
        raise ScorecardError("The datasets chosen for calibration have no scored pair.")
    # predicted paraphrase at candidate t: oriented >= t
    candidates = np.append(np.unique(oriented), np.inf)
    per_challenge: dict[str, list[np.ndarray]] = {}
    for (name, challenge), group in data.groupby(["dataset", "challenge"], sort=False):
        values = group["score"].to_numpy() if higher_is_similar else -group["score"].to_numpy()
        labels = group["label"].to_numpy()
        if challenge == "Classify!":
            positives, negatives = np.sort(values[labels == 1]), np.sort(values[labels != 1])
            errors = np.searchsorted(positives, candidates, "left") + (
                negatives.size - np.searchsorted(negatives, candidates, "left")
            )
        else:
            ordered = np.sort(values)
            below = np.searchsorted(ordered, candidates, "left")  # predicted non-paraphrase
            errors = ordered.size - below if challenge == "Minimize!" else below
        per_challenge.setdefault(challenge, []).append(errors / values.size)
    err = np.mean([np.mean(rates, axis=0) for rates in per_challenge.values()], axis=0)
    best = int(np.argmin(err))  # the first minimum: the lowest threshold, the most paraphrases
    tied = candidates[np.isclose(err, err[best], rtol=0, atol=1e-12)]
    threshold = candidates[best] if higher_is_similar else -candidates[best]
    low, high = (tied.min(), tied.max()) if higher_is_similar else (-tied.max(), -tied.min())
    return DecisionRule(
        float(threshold), higher_is_similar, "calibrated", tuple(on), float(low), float(high), int(tied.size)
    )


# --------------------------------------------------------------------------- the scorecard


@dataclass
class Scorecard:
    """Errors of one score under one decision rule: per dataset (with counts), per challenge, Err̄,
    and per language where the pairs have one. Errors are fractions."""

    rule: DecisionRule
    datasets: pd.DataFrame  # dataset, challenge, n, errors, error, predicted_paraphrases, unscored
    challenges: pd.DataFrame  # challenge, datasets, n, errors, error (unweighted mean of its datasets)
    err: float  # mean of the challenge errors
    languages: pd.DataFrame = field(default_factory=pd.DataFrame)  # dataset, challenge, language, n, errors, error
    notes: list[str] = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        """The CLI's table: one row per dataset (dataset, challenge, n, errors, error), then rows
        Classify!, Minimize!, Maximize! and Err whose ``error`` is the unweighted average (n and
        errors there are totals, so error is not errors / n)."""
        rows = self.datasets[["dataset", "challenge", "n", "errors", "error"]].copy()
        averages = self.challenges.assign(dataset=self.challenges["challenge"])[
            ["dataset", "challenge", "n", "errors", "error"]
        ]
        total = pd.DataFrame(
            [
                {
                    "dataset": "Err",
                    "challenge": "",
                    "n": int(self.datasets["n"].sum()),
                    "errors": int(self.datasets["errors"].sum()),
                    "error": self.err,
                }
            ]
        )
        table = pd.concat([rows, averages, total], ignore_index=True)
        table["n"] = table["n"].astype(int)
        table["errors"] = table["errors"].astype(int)
        return table

    def table2(self, name: str = "") -> pd.DataFrame:
        """One row laid out like the paper's Table 2: each dataset's error, then Clfy! Min! Max! and
        Err̄, in percent."""
        row = {(c, d): e * 100 for d, c, e in self.datasets[["dataset", "challenge", "error"]].itertuples(index=False)}
        for challenge, error in self.challenges[["challenge", "error"]].itertuples(index=False):
            row[("Averages", SHORT[challenge])] = error * 100
        row[("Averages", "Err̄")] = self.err * 100
        table = pd.DataFrame([row], index=[name or "score"])
        table.columns = pd.MultiIndex.from_tuples(table.columns)
        return table


def scorecard(
    frame: pd.DataFrame,
    score: str,
    rule: DecisionRule,
    *,
    challenges: Optional[Mapping[str, str]] = None,
    dataset_col: str = "dataset",
    label_col: str = "label",
    language_col: Optional[str] = None,
) -> Scorecard:
    """The PARAPHRASUS errors of the score column ``score`` of ``frame`` (one row per pair, with
    ``dataset_col``, ``label_col`` (0/1 gold) and, unless ``challenges`` maps each dataset to its
    challenge, a ``challenge`` column) under ``rule``. Pairs without a score (not scored yet) are left
    out and counted in ``unscored``. Raises ScorecardError when a dataset breaks its challenge's rule
    (``check_dataset``) or has fewer than MIN_PAIRS scored pairs."""
    data = _prepared(frame, score, challenges, dataset_col, label_col)
    if language_col is None:
        language_col = next((c for c in LANGUAGE_FIELDS if c in frame.columns), None)
    if language_col is not None and language_col in frame.columns:
        data["language"] = frame[language_col].where(frame[language_col].notna(), None).to_numpy()
    if data.empty:
        raise ScorecardError("There are no pairs to score.")
    rows, language_rows, notes = [], [], []
    for name, challenge in _ordered_datasets(data):
        group = data[data["dataset"] == name]
        check_dataset(name, challenge, group["label"])
        scored = group[group["score"].notna()]
        if len(scored) < MIN_PAIRS:
            raise ScorecardError(
                f"{name} has {len(scored)} scored pair{'s' if len(scored) != 1 else ''}; the "
                f"scorecard needs at least {MIN_PAIRS} per dataset (wait for the scores, or leave it out)."
            )
        predicted = rule.predict(scored["score"].to_numpy())
        wrong = _errors(challenge, scored["label"].to_numpy(), predicted)
        rows.append(
            {
                "dataset": name,
                "challenge": challenge,
                "n": len(scored),
                "errors": int(wrong.sum()),
                "error": float(wrong.mean()),
                "predicted_paraphrases": int(predicted.sum()),
                "unscored": len(group) - len(scored),
            }
        )
        if "language" in scored.columns and scored["language"].notna().any():
            languages = scored["language"].fillna("?").astype(str).to_numpy()
            for language in pd.unique(languages):
                mask = languages == language
                language_rows.append(
                    {
                        "dataset": name,
                        "challenge": challenge,
                        "language": language,
                        "n": int(mask.sum()),
                        "errors": int(wrong[mask].sum()),
                        "error": float(wrong[mask].mean()),
                    }
                )
    datasets = pd.DataFrame(rows)
    unscored = int(datasets["unscored"].sum())
    if unscored:
        notes.append(f"{unscored:,} pairs have no score yet and are left out; the figures cover the scored pairs.")
    grouped = datasets.groupby("challenge", sort=False)
    challenge_rows = [
        {
            "challenge": c,
            "datasets": int(len(g)),
            "n": int(g["n"].sum()),
            "errors": int(g["errors"].sum()),
            "error": float(g["error"].mean()),
        }
        for c, g in grouped
    ]
    challenge_table = pd.DataFrame(challenge_rows)
    absent = [c for c in CHALLENGES if c not in set(challenge_table["challenge"])]
    if absent:
        notes.append(
            f"No dataset in {', '.join(absent)}: Err̄ is the mean over the other challenge"
            f"{'s' if len(CHALLENGES) - len(absent) > 1 else ''} only, not comparable with the paper's."
        )
    err = float(challenge_table["error"].mean())
    return Scorecard(
        rule,
        datasets,
        challenge_table,
        err,
        pd.DataFrame(language_rows, columns=["dataset", "challenge", "language", "n", "errors", "error"]),
        notes,
    )
