"""load_pairs on every shared dataset file, checked against counts computed here straight from
the files (csv / json / xml.etree, not pluie_core), and on generic tables with column mapping."""

from __future__ import annotations

import csv
import io
import json
import math
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest

from pluie_core.io import guess_columns, load_pairs, read_table
from tests.paths import DATASETS

MISSING = "missing"


# -- independent readers: (source, hypothesis, label) per pair, in file order ---------------


def _lines(path: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8-sig")
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def mrpc(path):
    return [(f[3], f[4], float(f[0])) for f in (line.split("\t") for line in _lines(path)[1:])]


def paws(path):
    return [(f[1], f[2], float(f[3])) for f in (line.split("\t") for line in _lines(path)[1:])]


def stsb(path):
    return [(f[5], f[6], float(f[4])) for f in (line.split("\t") for line in _lines(path))]


def sick(path):
    return [(f[1], f[2], float(f[3])) for f in (line.split("\t") for line in _lines(path))]


def twitter(path):
    pairs = []
    for f in (line.split("\t") for line in _lines(path)):
        yes = int(f[2].strip("()").split(",")[0])
        pairs.append((f[0], f[1], 1.0 if yes >= 4 else 0.0 if yes <= 2 else None))
    return pairs


def biosses(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["sentence1"], r["sentence2"], sum(float(r[f"annotator_{a}"]) for a in "ABCDE") / 5) for r in rows]


def paraphrasus_json(path):
    document = json.loads(path.read_text(encoding="utf-8"))
    has_label = any("label" in r for r in document.values())
    all_nli = all(r.get("score") in (-1, 0) for r in document.values())
    pairs = []
    for record in document.values():
        if has_label:
            label = None if record.get("label") is None else float(record["label"])
        elif "score" in record:
            label = 0.0 if all_nli else float(record["score"])
        else:
            label = 1.0 if "true_paraphrases" in path.name else None
        pairs.append((record["sentence1"], record["sentence2"], label))
    return pairs


def paraphrasus_tsv(path):
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    column = "Human Annotation - Consensus"
    if column in rows[0]:
        return [(r["sentence1"], r["sentence2"], None if float(r[column]) == -100 else float(r[column])) for r in rows]
    return [(r["sentence1"], r["sentence2"], float(r["score"])) for r in rows]


def turku(path):
    return [
        (r["txt1"], r["txt2"], 1.0 if r["label"][0] in "34" else 0.0)
        for r in json.loads(path.read_text(encoding="utf-8"))
    ]


def paraphraser(path):
    pairs = []
    # the file declares encoding="UTF8", a name expat does not know: parse the decoded text
    for element in ElementTree.fromstring(path.read_text(encoding="utf-8")).iter("paraphrase"):
        values = {v.get("name"): v.text or "" for v in element}
        pairs.append((values["text_1"], values["text_2"], 1.0 if int(values["class"]) >= 0 else 0.0))
    return pairs


def parareval(path):
    pairs = []
    for line in _lines(path):
        record = json.loads(line)
        for side in "AB":
            correct = record["eval_annotation"][f"correctness_{side}"]
            pairs.append((record["original_paragraph"], record[f"model_{side}_paragraph"], float(correct)))
    return pairs


# file -> (detected format, independent reader, label kind)
FILES = {
    "mrpc/msr_paraphrase_train.txt": ("mrpc", mrpc, "binary"),
    "mrpc/msr_paraphrase_test.txt": ("mrpc", mrpc, "binary"),
    "paws_wiki_final/dev.tsv": ("paws", paws, "binary"),
    "paws_wiki_final/test.tsv": ("paws", paws, "binary"),
    "pawsx_de/dev.tsv": ("paws", paws, "binary"),
    "pawsx_de/test.tsv": ("paws", paws, "binary"),
    "stsbenchmark/sts-train.csv": ("stsb", stsb, "score"),
    "stsbenchmark/sts-dev.csv": ("stsb", stsb, "score"),
    "stsbenchmark/sts-test.csv": ("stsb", stsb, "score"),
    "sick/SICK_train.txt": ("sick", sick, "score"),
    "sick/SICK_trial.txt": ("sick", sick, "score"),
    "sick/SICK_test_annotated.txt": ("sick", sick, "score"),
    "twitter_url_corpus/Twitter_URL_Corpus_test.txt": ("twitter_url", twitter, "binary"),
    "biosses/biosses_pairs_with_annotator_scores.tsv": ("biosses", biosses, "score"),
    "turku_paraphrase_fi/test.json": ("turku", turku, "binary"),
    "paraphraser_ru/paraphrases_gold.xml": ("paraphraser_xml", paraphraser, "binary"),
    "parareval/parareval_second_annotation.jsonl": ("parareval", parareval, "binary"),
    "paraphrasus/stsbenchmark-test-sts_with_STS-H_human_annotation.tsv": ("paraphrasus", paraphrasus_tsv, "binary"),
    "paraphrasus/relabeled_stsbenchmark_train.tsv": ("paraphrasus", paraphrasus_tsv, "score"),
    **{
        f"paraphrasus/{name}.json": ("paraphrasus", paraphrasus_json, kind)
        for name, kind in [
            ("amr_true_paraphrases", "binary"),
            ("fb-anli-hyp-pre", "binary"),
            ("fb-anli-pre-hyp", "binary"),
            ("fb-xnli-hyp-pre", "binary"),
            ("fb-xnli-pre-hyp", "binary"),
            ("ms-mrpc", "binary"),
            ("onestop_parallel_all_pairs", "binary"),
            ("paws-x-test", "binary"),
            ("sickr-sts", "score"),
            ("stannlp-snli-hyp-pre", "binary"),
            ("stannlp-snli-pre-hyp", "binary"),
            ("stsbenchmark-test-sts", "binary"),
        ]
    },
}
NOT_PAIR_FILES = {"MANIFEST.md", "msr_paraphrase_README.htm", "LICENSE", "LICENSE.txt", "readme.txt"}


def _label_key(value):
    return MISSING if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 6)


def expected_counts(pairs):
    """Rows, label counts and duplicates once exact repeats (after stripping) keep their first."""
    seen = set()
    labels = Counter()
    for source, hypothesis, label in pairs:
        key = (source.strip(), hypothesis.strip())
        if key in seen:
            continue
        seen.add(key)
        labels[_label_key(label)] += 1
    return len(seen), labels, len(pairs) - len(seen)


def test_every_data_file_is_covered():
    on_disk = {
        str(p.relative_to(DATASETS)) for p in DATASETS.rglob("*") if p.is_file() and p.name not in NOT_PAIR_FILES
    }
    assert on_disk == set(FILES)


@pytest.mark.parametrize("relative", sorted(FILES))
def test_dataset_file_loads_with_the_counts_of_the_file(relative):
    path = DATASETS / relative
    format_name, independent, label_kind = FILES[relative]
    pairs = independent(path)
    n_rows, label_counts, n_duplicates = expected_counts(pairs)

    df = load_pairs(path, "auto")

    assert df.attrs["format"] == format_name
    assert df.attrs["label_kind"] == label_kind
    assert df.attrs["n_rows_read"] == len(pairs)
    assert len(df) == n_rows
    assert len(df.attrs["duplicates"]) == n_duplicates
    assert Counter(_label_key(v) for v in df["label"]) == label_counts
    assert df["label"].dtype == np.float64
    assert (df["source"].str.len() > 0).all() and (df["hypothesis"].str.len() > 0).all()
    assert (df["source"] == df["source"].str.strip()).all()
    assert not df.duplicated(["source", "hypothesis"]).any()
    assert {"source", "hypothesis", "label", "external_id"} <= set(df.columns)
    if label_kind == "score":
        low, high = df.attrs["label_range"]
        assert low <= df["label"].min() and df["label"].max() <= high


def test_mrpc_test_has_the_published_counts():
    df = load_pairs(DATASETS / "mrpc/msr_paraphrase_test.txt")
    assert len(df) == 1725
    assert int((df["label"] == 1).sum()) == 1147
    first = df.iloc[0]
    assert first["external_id"] == "1089874-1089925"
    assert first["source"].startswith("PCCW's chief operating officer")


def test_stsb_keeps_scores_and_licence_fields_of_ragged_rows():
    df = load_pairs(DATASETS / "stsbenchmark/sts-test.csv")
    assert df.attrs["label_range"] == (0.0, 5.0)
    ragged = df[df["license_info"].notna()]
    assert len(ragged) > 200 and ragged["license_info"].str.contains("StackExchange").any()
    # a sentence with a literal double quote survives (quoting must be off)
    raw_lines = _lines(DATASETS / "stsbenchmark/sts-test.csv")
    quoted = next(line.split("\t") for line in raw_lines if '"' in line.split("\t")[5])
    assert quoted[5].strip() in set(df["source"])


def test_sick_keeps_entailment_judgment_beside_relatedness():
    df = load_pairs(DATASETS / "sick/SICK_trial.txt")
    assert set(df["entailment_judgment"]) == {"ENTAILMENT", "NEUTRAL", "CONTRADICTION"}
    assert df.attrs["label_range"] == (1.0, 5.0)
    assert df.loc[df["external_id"] == "4", "label"].item() == 3.6


def test_twitter_votes_kept_and_undecided_pairs_unlabelled():
    df = load_pairs(DATASETS / "twitter_url_corpus/Twitter_URL_Corpus_test.txt")
    assert set(df["n_votes"]) == {6}
    assert df.loc[df["paraphrase_votes"] == 3, "label"].isna().all()
    assert (df.loc[df["paraphrase_votes"] >= 4, "label"] == 1).all()
    assert (df.loc[df["paraphrase_votes"] <= 2, "label"] == 0).all()
    # rows with an empty fifth field keep the url from the last field
    raw = read_table(DATASETS / "twitter_url_corpus/Twitter_URL_Corpus_test.txt")
    assert len(raw) == df.attrs["n_rows_read"] and raw["url"].ne("").all()
    assert raw["url"].eq("https://t.co/GVnrShaVvx").sum() == 10
    assert any("3 of 6" in w for w in df.attrs["warnings"])


def test_biosses_annotators_and_mean_label():
    df = load_pairs(DATASETS / "biosses/biosses_pairs_with_annotator_scores.tsv")
    annotators = [f"annotator:{a}" for a in "ABCDE"]
    assert annotators == [c for c in df.columns if c.startswith("annotator:")]
    assert np.allclose(df["label"], df[annotators].mean(axis=1))
    assert df[annotators].isin([0, 1, 2, 3, 4]).all().all()


def test_sts_h_annotators_and_consensus():
    df = load_pairs(DATASETS / "paraphrasus/stsbenchmark-test-sts_with_STS-H_human_annotation.tsv")
    assert {"annotator:P1", "annotator:P2"} <= set(df.columns)
    assert df["annotator:P2"].notna().sum() == 338  # the paper's STS-H size; the duplicate is unannotated
    assert df["score"].notna().all()
    assert df["annotator:P1"].dropna().isin([0, 1]).all()


def test_turku_level_and_flags():
    df = load_pairs(DATASETS / "turku_paraphrase_fi/test.json")
    assert set(df["turku_level"]) == {2, 3, 4}
    row = df[df["turku_label"] == "4<i"].iloc[0]
    assert (row["turku_flags"], row["label"]) == ("<i", 1.0)
    assert (df.loc[df["turku_level"] == 2, "label"] == 0).all()


def test_paraphraser_class_kept_and_binarised():
    df = load_pairs(DATASETS / "paraphraser_ru/paraphrases_gold.xml")
    assert set(df["class"]) == {-1.0, 0.0, 1.0}
    assert (df["label"] == (df["class"] >= 0)).all()
    assert df["source"].str.contains("[а-яА-Я]").all()


def test_parareval_two_revisions_per_record():
    df = load_pairs(DATASETS / "parareval/parareval_second_annotation.jsonl")
    assert set(df["revision"]) == {"A", "B"}
    assert df["external_id"].str.fullmatch(r"\d+-[AB]").all()
    assert not [c for c in df.columns if c.startswith("annotator:")]


def test_duplicates_point_at_identical_lines():
    path = DATASETS / "paws_wiki_final/dev.tsv"
    lines = path.read_bytes().decode("utf-8").split("\r\n")
    df = load_pairs(path)
    assert df.attrs["duplicates"]
    for entry in df.attrs["duplicates"]:
        again = lines[entry["row"] - 1].split("\t")
        first = lines[entry["duplicate_of"] - 1].split("\t")
        assert entry["row"] > entry["duplicate_of"]
        assert again[1:3] == first[1:3]


def test_streamlit_like_upload_is_read_like_the_path():
    path = DATASETS / "mrpc/msr_paraphrase_test.txt"

    class Upload(io.BytesIO):
        name = "msr_paraphrase_test.txt"

    upload = Upload(path.read_bytes())
    upload.read(100)  # a preview may have read part of it already
    from_upload = load_pairs(upload)
    pd.testing.assert_frame_equal(from_upload, load_pairs(path))


# -- generic tables -----------------------------------------------------------------------


def test_csv_with_common_names_and_quoted_newlines(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text(
        "id,sentence1,sentence2,gold,annotator_alice,note\n"
        'a1,"He said ""hi"", then left.",He greeted and left.,1,3,x\n'
        'a2,"Two\nlines",  One line  ,0,,\n',
        encoding="utf-8",
    )
    df = load_pairs(path)
    assert df.attrs["format"] == "csv" and df.attrs["label_kind"] == "binary"
    assert list(df["source"]) == ['He said "hi", then left.', "Two\nlines"]
    assert list(df["hypothesis"]) == ["He greeted and left.", "One line"]
    assert list(df["external_id"]) == ["a1", "a2"]
    assert df["annotator:alice"].tolist()[0] == 3.0 and math.isnan(df["annotator:alice"].tolist()[1])
    assert list(df["note"]) == ["x", ""]


def test_column_mapping_and_guess(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("q1\tq2\tlab_alice\tlab_bob\tgrade\tkey\nA cat.\tA dog.\t0\t1\t2.5\tk1\n", encoding="utf-8")
    table = read_table(path)
    assert list(table.columns) == ["q1", "q2", "lab_alice", "lab_bob", "grade", "key"]
    assert table.attrs["format"] == "tsv"
    assert "source" not in guess_columns(table)
    df = load_pairs(
        path,
        columns={
            "source": "q1",
            "hypothesis": "q2",
            "label": "grade",
            "external_id": "key",
            "annotators": {"alice": "lab_alice", "bob": "lab_bob"},
        },
    )
    assert df.iloc[0][
        ["source", "hypothesis", "label", "external_id", "annotator:alice", "annotator:bob"]
    ].tolist() == ["A cat.", "A dog.", 2.5, "k1", 0.0, 1.0]
    assert df.attrs["label_kind"] == "score" and df.attrs["label_range"] == (2.5, 2.5)


@pytest.mark.parametrize(
    "columns, expected",
    [
        (["premise", "hypothesis", "label"], {"source": "premise", "hypothesis": "hypothesis", "label": "label"}),
        (
            ["Text_A", "Text_B", "Score", "ID"],
            {"source": "Text_A", "hypothesis": "Text_B", "label": "Score", "external_id": "ID"},
        ),
        (["s1", "s2", "quality"], {"source": "s1", "hypothesis": "s2", "label": "quality"}),
    ],
)
def test_guess_columns_recognises_common_names(columns, expected):
    assert guess_columns(pd.DataFrame(columns=columns)) == {**expected, "annotators": {}}


def test_json_records_and_jsonl(tmp_path):
    records = [
        {"source": "Un chat.", "hypothesis": "Un chien.", "label": False},
        {"source": "Le ciel.", "hypothesis": "Le firmament.", "label": True, "extra": [1, 2]},
    ]
    (tmp_path / "p.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n\n", encoding="utf-8")
    from_json = load_pairs(tmp_path / "p.json")
    from_jsonl = load_pairs(tmp_path / "p.jsonl")
    assert from_json.attrs["format"] == "json" and from_jsonl.attrs["format"] == "jsonl"
    for df in (from_json, from_jsonl):
        assert df["label"].tolist() == [0.0, 1.0]
        assert df["hypothesis"].tolist() == ["Un chien.", "Le firmament."]


def test_excel_first_sheet(tmp_path):
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["sentence1", "sentence2", "label"])
    sheet.append(["A man runs.", "A person is running.", 1])
    sheet.append([None, None, None])
    sheet.append(["42", "forty-two", 0])
    path = tmp_path / "pairs.xlsx"
    workbook.save(path)
    df = load_pairs(path)
    assert df.attrs["format"] == "excel"
    assert df["source"].tolist() == ["A man runs.", "42"]
    assert df["label"].tolist() == [1.0, 0.0]


def test_duplicates_in_a_generic_file_are_reported(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("source,hypothesis,label\na,b,1\nc,d,0\n a ,b,0\n", encoding="utf-8")
    df = load_pairs(path)
    assert len(df) == 2 and df.attrs["n_rows_read"] == 3
    assert df.attrs["duplicates"] == [{"row": 4, "duplicate_of": 2}]
    assert any("different label" in w for w in df.attrs["warnings"])


def test_quoted_tsv_and_semicolon_csv(tmp_path):
    frame = pd.DataFrame({"sentence1": ['He said "hi".', "A\tB"], "sentence2": ["Hello.", "C"], "label": [1, 0]})
    frame.to_csv(tmp_path / "quoted.tsv", sep="\t", index=False)
    quoted = load_pairs(tmp_path / "quoted.tsv")
    assert quoted["source"].tolist() == ['He said "hi".', "A\tB"]
    (tmp_path / "semi.csv").write_text("source;hypothesis;label\nUn, deux;Trois;0,5\n", encoding="utf-8")
    semi = read_table(tmp_path / "semi.csv")
    assert semi.columns.tolist() == ["source", "hypothesis", "label"] and semi.iloc[0, 0] == "Un, deux"


def test_unquoted_tsv_keeps_literal_quotes(tmp_path):
    (tmp_path / "lit.tsv").write_text('source\thypothesis\n"Yes," he said\tHe agreed.\n', encoding="utf-8")
    assert load_pairs(tmp_path / "lit.tsv")["source"].tolist() == ['"Yes," he said']


def test_json_objects_keyed_by_id_and_pandas_index_column(tmp_path):
    keyed = {"k1": {"premise": "A cat sleeps.", "hypothesis": "A cat rests.", "label": 1}}
    (tmp_path / "keyed.json").write_text(json.dumps(keyed, indent=2), encoding="utf-8")
    df = load_pairs(tmp_path / "keyed.json")
    assert (df.attrs["format"], df["external_id"].tolist(), df["source"].tolist()) == (
        "json",
        ["k1"],
        ["A cat sleeps."],
    )
    frame = pd.DataFrame({"sentence1": ["x y"], "sentence2": ["y x"], "gold": [0]})
    frame.to_csv(tmp_path / "indexed.tsv", sep="\t")  # pandas' unnamed index column first
    df = load_pairs(tmp_path / "indexed.tsv")
    assert df.attrs["format"] == "tsv" and df["label"].tolist() == [0.0]
