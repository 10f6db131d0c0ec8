"""Readers for the published paraphrase / similarity corpora, in their original formats.

Each reader returns a RawTable whose columns are already ours (source, hypothesis, label,
external_id, annotator:<name>) plus the corpus's other fields, kept as metadata. The label
conventions chosen per corpus are written next to each reader and in the module docstring
of pluie_core.io.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pandas as pd

from pluie_core.formats.common import PairFileError, RawTable
from pluie_core.formats.tables import delimited_rows, header_names, parse_jsonl
from pluie_core.wording import counted


def _check_widths(rows: list[list[str]], lines: np.ndarray, widths: tuple[int, ...], what: str) -> None:
    for fields, line in zip(rows, lines):
        if len(fields) not in widths:
            expected = " or ".join(str(w) for w in widths)
            raise PairFileError(
                f"Line {line}: {what} rows have {expected} tab-separated fields; this one has {len(fields)}."
            )


def _as_numbers(values: pd.Series, lines: np.ndarray, what: str, row_word: str = "Line") -> pd.Series:
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna().to_numpy() & values.notna().to_numpy() & (values.astype(str).str.strip() != "").to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise PairFileError(f"{row_word} {lines[i]}: the {what} {values.iloc[i]!r} is not a number.")
    return numbers.astype(float)


# -- MRPC ---------------------------------------------------------------------------------
# Microsoft Research Paraphrase Corpus: header "Quality #1 ID #2 ID #1 String #2 String",
# tab-separated, quotes are literal text. Quality is the binary label (1 = paraphrase).

MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]


def read_mrpc(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=False)
    body, lines = rows[1:], lines[1:]
    if not body:
        raise PairFileError("The MRPC file has a header but no rows.")
    _check_widths(body, lines, (5,), "MRPC")
    raw = pd.DataFrame(body, columns=MRPC_HEADER, dtype=object)
    table = pd.DataFrame(
        {
            "source": raw["#1 String"],
            "hypothesis": raw["#2 String"],
            "label": _as_numbers(raw["Quality"], lines, "quality label"),
            "external_id": raw["#1 ID"].str.strip() + "-" + raw["#2 ID"].str.strip(),
            "#1 ID": raw["#1 ID"],
            "#2 ID": raw["#2 ID"],
        }
    )
    return RawTable(table, "mrpc", lines, label_kind="binary", label_range=(0, 1))


# -- PAWS / PAWS-X ------------------------------------------------------------------------
# Header id, sentence1, sentence2, label; lines may end in CRLF; label 1 = paraphrase.

PAWS_HEADER = ["id", "sentence1", "sentence2", "label"]


def read_paws(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=False)
    body, lines = rows[1:], lines[1:]
    if not body:
        raise PairFileError("The PAWS file has a header but no rows.")
    _check_widths(body, lines, (4,), "PAWS")
    raw = pd.DataFrame(body, columns=PAWS_HEADER, dtype=object)
    table = pd.DataFrame(
        {
            "source": raw["sentence1"],
            "hypothesis": raw["sentence2"],
            "label": _as_numbers(raw["label"], lines, "label"),
            "external_id": raw["id"],
        }
    )
    return RawTable(table, "paws", lines, label_kind="binary", label_range=(0, 1))


# -- STS Benchmark ------------------------------------------------------------------------
# No header; genre, file, year, id, score, sentence1, sentence2 and, on some rows, two
# licence/attribution fields. Quotes are literal (the files must be read with quoting off).
# The 0-5 similarity score is the label.


def read_stsb(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=False)
    for fields, line in zip(rows, lines):
        if len(fields) < 7:
            raise PairFileError(
                f"Line {line}: STS Benchmark rows have at least 7 tab-separated fields; this one has {len(fields)}."
            )
    raw = pd.DataFrame(
        [fields[:7] for fields in rows], columns=["genre", "file", "year", "sid", "score", "s1", "s2"], dtype=object
    )
    licence = ["\t".join(fields[7:]) if len(fields) > 7 else None for fields in rows]
    table = pd.DataFrame(
        {
            "source": raw["s1"],
            "hypothesis": raw["s2"],
            "label": _as_numbers(raw["score"], lines, "similarity score"),
            "external_id": raw["file"] + "-" + raw["year"] + "-" + raw["sid"],
            "genre": raw["genre"],
            "file": raw["file"],
            "year": raw["year"],
            "sid": raw["sid"],
            "license_info": licence,
        }
    )
    return RawTable(table, "stsb", lines, label_kind="score", label_range=(0, 5))


# -- SICK ---------------------------------------------------------------------------------
# pair_ID, sentence_A, sentence_B, relatedness_score (1-5), entailment_judgment; the shared
# copies have no header. Relatedness is the label (it measures how close the meanings are);
# the entailment judgment is kept as a column.

SICK_HEADER = ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"]
SICK_JUDGMENTS = {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"}


def read_sick(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=False)
    if rows and [f.strip() for f in rows[0]] == SICK_HEADER:
        rows, lines = rows[1:], lines[1:]
    if not rows:
        raise PairFileError("The SICK file has no rows.")
    _check_widths(rows, lines, (5,), "SICK")
    raw = pd.DataFrame(rows, columns=SICK_HEADER, dtype=object)
    table = pd.DataFrame(
        {
            "source": raw["sentence_A"],
            "hypothesis": raw["sentence_B"],
            "label": _as_numbers(raw["relatedness_score"], lines, "relatedness score"),
            "external_id": raw["pair_ID"],
            "entailment_judgment": raw["entailment_judgment"].str.strip(),
        }
    )
    return RawTable(table, "sick", lines, label_kind="score", label_range=(1, 5))


# -- Twitter URL corpus -------------------------------------------------------------------
# sentence1, sentence2, "(n,6)", url (some rows have an empty field before the url). n of
# the 6 Mechanical Turk workers said "paraphrase". The corpus authors' convention: n >= 4 is a
# paraphrase (1), n <= 2 is not (0), n = 3 is debatable and discarded: here the pair is kept
# with no label, and the votes stay in `paraphrase_votes` / `n_votes`.

VOTES = re.compile(r"^\((\d+),(\d+)\)$")


def read_twitter_url(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=False)
    _check_widths(rows, lines, (4, 5), "Twitter URL corpus")
    votes = pd.Series([fields[2].strip() for fields in rows], dtype=object)
    parts = votes.str.extract(VOTES)
    bad = parts[0].isna().to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise PairFileError(f"Line {lines[i]}: the vote field {votes.iloc[i]!r} is not of the form (n,6).")
    yes, total = parts[0].astype(int), parts[1].astype(int)
    over = (yes > total).to_numpy()
    if over.any():
        i = int(np.argmax(over))
        raise PairFileError(f"Line {lines[i]}: the votes {votes.iloc[i]} count more yes than annotators.")
    share = yes / total
    label = pd.Series(np.nan, index=votes.index)
    label[share >= 4 / 6] = 1.0
    label[share <= 2 / 6] = 0.0
    table = pd.DataFrame(
        {
            "source": [fields[0] for fields in rows],
            "hypothesis": [fields[1] for fields in rows],
            "label": label,
            "external_id": None,
            "paraphrase_votes": yes,
            "n_votes": total,
            "url": [fields[-1] for fields in rows],
        }
    )
    undecided = int(label.isna().sum())
    warnings = (
        [
            f"{counted(undecided, 'pair')} with 3 of 6 paraphrase votes {'has' if undecided == 1 else 'have'} "
            "no label (the corpus authors discard them)."
        ]
        if undecided
        else []
    )
    return RawTable(table, "twitter_url", lines, label_kind="binary", label_range=(0, 1), warnings=warnings)


# -- BIOSSES ------------------------------------------------------------------------------
# pair_id, sentence1, sentence2, annotator_A ... annotator_E: five 0-4 similarity scores.
# The label is their mean (the BIOSSES gold standard), each score kept as annotator:<X>.


def read_biosses(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=False)
    names = header_names(rows[0])
    body, lines = rows[1:], lines[1:]
    if not body:
        raise PairFileError("The BIOSSES file has a header but no rows.")
    _check_widths(body, lines, (len(names),), "BIOSSES")
    raw = pd.DataFrame(body, columns=names, dtype=object)
    annotator_columns = [name for name in names if name.startswith("annotator_")]
    table = pd.DataFrame(
        {"source": raw["sentence1"], "hypothesis": raw["sentence2"], "external_id": raw.get("pair_id")}
    )
    for name in annotator_columns:
        table["annotator:" + name[len("annotator_") :]] = _as_numbers(raw[name], lines, f"score of {name}")
    table["label"] = table[[c for c in table.columns if c.startswith("annotator:")]].mean(axis=1)
    return RawTable(table, "biosses", lines, label_kind="score", label_range=(0, 4), annotator_range=(0, 4))


# -- paraphrasus --------------------------------------------------------------------------
# JSON objects keyed by pair id: {"id": {"sentence1", "sentence2", "label"? , "score"?}}.
# Label: the "label" field where the file has one (true/false -> 1/0; in
# stsbenchmark-test-sts.json it is the STS-H consensus, present on 338 pairs, missing
# elsewhere) and "score" is kept as a column. Files with only a score whose values are all
# -1/0 are the NLI sets (snli, anli, xnli) repurposed as certified non-paraphrases
# (-1 contradiction, 0 neutral): label 0, relation kept in `nli_relation`. Other score-only
# files (sickr-sts: SICK relatedness) use the score as the label. A file with neither
# (amr_true_paraphrases.json) is labelled 1 when its name says "true_paraphrases", as the
# paraphrasus paper describes it (certified paraphrases), and has no label otherwise.


def read_paraphrasus_json(document: dict, file_name: str) -> RawTable:
    ids = list(document.keys())
    records = list(document.values())
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise PairFileError(
                f"Record {number} ({ids[number - 1]!r}): expected an object with sentence1 and sentence2."
            )
    raw = pd.DataFrame.from_records(records).astype(object)
    raw.index = range(len(raw))
    table = pd.DataFrame({"source": raw.get("sentence1"), "hypothesis": raw.get("sentence2"), "external_id": ids})
    rows = np.arange(1, len(raw) + 1, dtype=np.int64)
    label_kind = "binary"
    if "label" in raw.columns:
        table["label"] = raw["label"]
        if "score" in raw.columns:
            table["score"] = raw["score"]
    elif "score" in raw.columns:
        scores = _as_numbers(raw["score"], rows, "score", "Record")
        if scores.dropna().isin([-1.0, 0.0]).all():
            table["label"] = 0.0
            table["nli_relation"] = scores.map({-1.0: "contradiction", 0.0: "neutral"})
        else:
            table["label"] = scores
            label_kind = "score"
    else:
        table["label"] = 1.0 if "true_paraphrases" in file_name.lower() else np.nan
    extra = [c for c in raw.columns if c not in {"sentence1", "sentence2", "label", "score"}]
    for column in extra:
        table[column] = raw[column]
    return RawTable(
        table,
        "paraphrasus",
        rows,
        "Record",
        label_kind=label_kind,
        label_range=(0, 1) if label_kind == "binary" else None,
    )


# paraphrasus TSVs were written by pandas (first column = its unnamed index, quoted fields).
# With the STS-H human annotation (columns "Human Annotation - P1/P2/Consensus", 1/0,
# -100 = not annotated): the consensus is the label, P1 and P2 are annotator:P1 / P2,
# the STS 0-5 score stays in `score`. Without it (relabeled_stsbenchmark_train.tsv: STS-B
# train plus LLM labels), the STS score is the label and the LLM labels stay as columns.

STS_H_PREFIX = "Human Annotation - "
NOT_ANNOTATED = -100


def read_paraphrasus_tsv(text: str) -> RawTable:
    rows, lines = delimited_rows(text, "\t", quoted=True)
    names = [name.strip() for name in rows[0]]
    names[0] = names[0] or "index"
    names = header_names(names)
    body, lines = rows[1:], lines[1:]
    if not body:
        raise PairFileError("The file has a header but no rows.")
    _check_widths(body, lines, (len(names),), "paraphrasus TSV")
    raw = pd.DataFrame(body, columns=names, dtype=object)
    id_column = "id" if "id" in names else names[0]
    table = pd.DataFrame({"source": raw["sentence1"], "hypothesis": raw["sentence2"], "external_id": raw[id_column]})
    consensus = STS_H_PREFIX + "Consensus"
    human = [name for name in names if name.startswith(STS_H_PREFIX)]
    if consensus in names:
        for name in human:
            values = _as_numbers(raw[name], lines, name).replace(NOT_ANNOTATED, np.nan)
            if name == consensus:
                table["label"] = values
            else:
                table["annotator:" + name[len(STS_H_PREFIX) :]] = values
        label_kind, label_range = "binary", (0, 1)
    else:
        table["label"] = _as_numbers(raw["score"], lines, "score")
        label_kind, label_range = "score", (0, 5)
    used = {"sentence1", "sentence2", id_column, *human} | ({"score"} if consensus not in names else set())
    for column in names:
        if column not in used:
            table[column] = raw[column]
    warnings = []
    if consensus in names:
        missing = int(table["label"].isna().sum())
        warnings.append(
            f"{counted(missing, 'pair')} {'has' if missing == 1 else 'have'} no STS-H annotation (-100 in "
            "the file): no label."
        )
    return RawTable(table, "paraphrasus", lines, label_kind=label_kind, label_range=label_range, warnings=warnings)


# -- Turku Paraphrase Corpus (Finnish) ------------------------------------------------------
# A JSON list of {"txt1", "txt2", "label", "goeswith", "fold", "rewrites"}. Labels are a base
# level and optional flags: 4 = paraphrase in all contexts, 3 = paraphrase in this context,
# 2 = related but not a paraphrase, 1 = unrelated; ">"/"<" = one side is more specific
# (subsumption), "i" = minor traceable difference, "s" = style/register difference.
# Binarised like the five-level scale (3 ~ Mostly similar, 4 ~ Same meaning): label 1 for
# base levels 3 and 4 (any flags), 0 for 1 and 2. Raw label, level and flags kept as columns.

TURKU_LABEL = re.compile(r"^([1-4])([<>]?)([is]*)$")


def read_turku(records: list) -> RawTable:
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise PairFileError(f"Record {number}: expected an object with txt1, txt2 and label.")
    raw = pd.DataFrame.from_records(records).astype(object)
    rows = np.arange(1, len(raw) + 1, dtype=np.int64)
    labels = raw["label"].astype(str).str.strip()
    parts = labels.str.extract(TURKU_LABEL)
    bad = parts[0].isna().to_numpy()
    if bad.any():
        i = int(np.argmax(bad))
        raise PairFileError(
            f"Record {rows[i]}: the label {labels.iloc[i]!r} is not a Turku label (1-4 with optional flags <, >, i, s)."
        )
    level = parts[0].astype(int)
    table = pd.DataFrame(
        {
            "source": raw["txt1"],
            "hypothesis": raw["txt2"],
            "label": (level >= 3).astype(float),
            "external_id": None,
            "turku_label": labels,
            "turku_level": level,
            "turku_flags": parts[1] + parts[2],
        }
    )
    for column in raw.columns:
        if column not in {"txt1", "txt2", "label"}:
            values = raw[column]
            if column == "rewrites":  # lists of rewritten pairs: kept as JSON text
                values = values.map(lambda v: json.dumps(v, ensure_ascii=False) if v else None)
            table[column] = values
    return RawTable(table, "turku", rows, "Record", label_kind="binary", label_range=(0, 1))


# -- ParaPhraser (Russian) ----------------------------------------------------------------
# XML <data><corpus><paraphrase><value name="id|id_1|id_2|text_1|text_2|class">. class:
# 1 = precise paraphrase, 0 = near paraphrase, -1 = non-paraphrase. Binarised as in the
# ParaPhraser shared task's binary track (precise and near vs non-paraphrase): label 1 for
# class 0 and 1, 0 for -1; the raw class stays in `class`.


def read_paraphraser_xml(text: str) -> RawTable:
    root = parse_xml(text)
    records = []
    for element in root.iter("paraphrase"):
        records.append({value.get("name"): (value.text or "") for value in element.iter("value")})
    if not records:
        raise PairFileError("The XML file has no <paraphrase> elements.")
    raw = pd.DataFrame.from_records(records).astype(object)
    rows = np.arange(1, len(raw) + 1, dtype=np.int64)
    for column in ("text_1", "text_2", "class"):
        if column not in raw.columns:
            raise PairFileError(f'The ParaPhraser XML has no <value name="{column}"> fields.')
    classes = _as_numbers(raw["class"], rows, "class", "Record")
    outside = ~classes.isin([-1.0, 0.0, 1.0]).to_numpy() & classes.notna().to_numpy()
    if outside.any():
        i = int(np.argmax(outside))
        raise PairFileError(f"Record {rows[i]}: the class {raw['class'].iloc[i]!r} is not -1, 0 or 1.")
    table = pd.DataFrame(
        {
            "source": raw["text_1"],
            "hypothesis": raw["text_2"],
            "label": (classes >= 0).astype(float).where(classes.notna()),
            "external_id": raw.get("id"),
            "class": classes,
        }
    )
    for column in raw.columns:
        if column not in {"text_1", "text_2", "class", "id"}:
            table[column] = raw[column]
    return RawTable(table, "paraphraser_xml", rows, "Record", label_kind="binary", label_range=(0, 1))


def parse_xml(text: str) -> ElementTree.Element:
    # Entity declarations are how XML bombs work; a pair file never needs them.
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise PairFileError("XML files with a DOCTYPE or entity declarations are not accepted.")
    try:
        return ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        line, column = error.position
        raise PairFileError(f"Line {line}: the XML is not well-formed (column {column}).") from None


# -- ParaReval ----------------------------------------------------------------------------
# JSONL, one record per (paragraph, instruction) with two model revisions A and B evaluated
# by a person. Each record gives two pairs: (original_paragraph, model_A_paragraph) and
# (original_paragraph, model_B_paragraph). Label: 1 when the annotator judged that revision
# correct (eval_annotation.correctness_X: better than the original, which is also what makes
# it "acceptable"), 0 otherwise. Relatedness, preference, instruction and model are columns.


def read_parareval(text: str) -> RawTable:
    records, lines = parse_jsonl(text)
    pairs, pair_lines = [], []
    for record, line in zip(records, lines):
        evaluation = record.get("eval_annotation") or {}
        if not isinstance(evaluation, dict):
            raise PairFileError(f"Line {line}: eval_annotation is not an object.")
        for side in ("A", "B"):
            correct = evaluation.get(f"correctness_{side}")
            pairs.append(
                {
                    "source": record.get("original_paragraph"),
                    "hypothesis": record.get(f"model_{side}_paragraph"),
                    "label": None if correct is None else float(bool(correct)),
                    "external_id": f"{record.get('id_pairing')}-{side}",
                    "revision": side,
                    "model": record.get(f"model_{side}"),
                    "relatedness": evaluation.get(f"relatedness_{side}"),
                    "preference": evaluation.get("preference"),
                    "extended_choice": evaluation.get("extended_choice"),
                    "instruction": record.get("instruction"),
                    "revision_labels": ", ".join(record.get("labels") or []),
                    "id_paragraph": record.get("id_paragraph"),
                    "id_pairing": record.get("id_pairing"),
                    "reference_paragraph": record.get("reference_paragraph"),
                    "annotator_eval": record.get("annotator_eval"),
                }
            )
            pair_lines.append(line)
    table = pd.DataFrame.from_records(pairs)
    table["label"] = table["label"].astype(float)
    return RawTable(
        table,
        "parareval",
        np.asarray(pair_lines, dtype=np.int64),
        label_kind="binary",
        label_range=(0, 1),
        warnings=[f"{len(records)} records, two revisions (A and B) each."],
    )
