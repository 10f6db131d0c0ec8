"""The PARAPHRASUS scorecard on the ten shared benchmark sets: the library, the CLI, the store and the
page, each checked against counts computed here, independently, from the raw JSON files (the
paper's selection rules written out again with json and rapidfuzz)."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from rapidfuzz.distance import Levenshtein
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import init_db
from db.analysis import add_score_run
from db.datasets import import_pairs
from db.engine import read_session
from db.evaluation import assign_challenge, benchmark_datasets, import_benchmark, scorecard_frame
from db.models import Dataset, Pair
from pluie_core.cli import main as cli_main
from pluie_core.evaluation.paraphrasus import (
    DecisionRule,
    ScorecardError,
    benchmark_frame,
    calibrate,
    check_dataset,
    read_benchmark,
    scorecard,
    sort_files,
)
from tests.paths import DATASETS, REPO

BENCHMARK = DATASETS / "paraphrasus"
THRESHOLD = 0.4  # Levenshtein distance: paraphrase when <= 0.4
CHALLENGE = {
    "pawsx": "Classify!",
    "sts-h": "Classify!",
    "mrpc": "Classify!",
    "snli": "Minimize!",
    "anli": "Minimize!",
    "xnli": "Minimize!",
    "sts": "Minimize!",
    "sick": "Minimize!",
    "true": "Maximize!",
    "simp": "Maximize!",
}


def _records(name):
    with open(BENCHMARK / name, encoding="utf-8") as handle:
        return list(json.load(handle).values())


def _pair(record, label):
    # the importer strips surrounding whitespace from sentences; so does this reference
    return record["sentence1"].strip(), record["sentence2"].strip(), label


def raw_benchmark():
    """{dataset: [(sentence1, sentence2, gold 0/1)]} straight from the files, by the paper's rules."""
    sts = _records("stsbenchmark-test-sts.json")
    parts = {
        "pawsx": [_pair(r, int(r["label"])) for r in _records("paws-x-test.json")],
        "sts-h": [_pair(r, int(r["label"])) for r in sts if "label" in r],
        "mrpc": [_pair(r, int(r["label"])) for r in _records("ms-mrpc.json")],
    }
    for name, stem in (("snli", "stannlp-snli"), ("anli", "fb-anli"), ("xnli", "fb-xnli")):
        parts[name] = [_pair(r, 0) for d in ("pre-hyp", "hyp-pre") for r in _records(f"{stem}-{d}.json")]
    parts["sts"] = [_pair(r, 0) for r in sts if 0 <= r["score"] < 3]
    parts["sick"] = [_pair(r, 0) for r in _records("sickr-sts.json") if 1 <= r["score"] < 3]
    parts["true"] = [_pair(r, 1) for r in _records("amr_true_paraphrases.json")]
    parts["simp"] = [_pair(r, 1) for r in _records("onestop_parallel_all_pairs.json")]
    return parts


@pytest.fixture(scope="module")
def raw():
    return raw_benchmark()


def expected(raw, threshold=THRESHOLD):
    """Per dataset (n, errors) of the Levenshtein distance at ``threshold``, and the averages."""
    rows = {}
    for name, pairs in raw.items():
        predicted = np.array([Levenshtein.normalized_distance(s, h) <= threshold for s, h, _ in pairs])
        gold = np.array([label for _, _, label in pairs]) == 1
        wrong = {"Classify!": predicted != gold, "Minimize!": predicted, "Maximize!": ~predicted}[CHALLENGE[name]]
        rows[name] = (len(pairs), int(wrong.sum()))
    challenges = {
        c: np.mean([e / n for d, (n, e) in rows.items() if CHALLENGE[d] == c])
        for c in ("Classify!", "Minimize!", "Maximize!")
        if c in {CHALLENGE[d] for d in rows}
    }
    return rows, challenges, float(np.mean(list(challenges.values())))


@pytest.fixture(scope="module")
def bench():
    frames, files = read_benchmark(BENCHMARK)
    frame = benchmark_frame(frames)
    frame["levenshtein"] = [Levenshtein.normalized_distance(s, h) for s, h in zip(frame["source"], frame["hypothesis"])]
    return frames, files, frame


# --------------------------------------------------------------------------- the library


def test_the_ten_datasets_are_selected_as_the_paper_counts_them(bench, raw):
    frames, files, _ = bench
    assert list(frames) == list(CHALLENGE)
    # Table 1, with the shared copies' known differences: pawsx and xnli are their Chinese parts, mrpc has
    # 1,725 pairs; the NLI sets hold both directions (Table 1 counts each pair once)
    sizes = {
        "pawsx": 2000,
        "sts-h": 338,
        "mrpc": 1725,
        "snli": 2 * 6632,
        "anli": 2 * 798,
        "xnli": 2 * 3340,
        "sts": 706,
        "sick": 2305,
        "true": 167,
        "simp": 600,
    }
    assert {name: len(f) for name, f in frames.items()} == sizes
    assert {name: len(pairs) for name, pairs in raw.items()} == sizes
    assert frames["sts-h"]["label"].value_counts().to_dict() == {0.0: 229, 1.0: 109}  # Table 1: 109 / 229
    for name, frame in frames.items():
        assert list(zip(frame["source"], frame["hypothesis"], frame["label"].astype(int))) == raw[name], name
    assert set(frames["snli"]["direction"]) == {"pre-hyp", "hyp-pre"}
    assert "relabeled_stsbenchmark_train.tsv" in files.skipped and "LICENSE" in files.skipped and not files.missing


def test_library_errors_equal_the_counts_from_the_raw_files(bench, raw):
    _, _, frame = bench
    card = scorecard(frame, "levenshtein", DecisionRule(THRESHOLD, higher_is_similar=False))
    rows, challenges, err = expected(raw)
    got = card.datasets.set_index("dataset")
    for name, (n, errors) in rows.items():
        assert (got.loc[name, "n"], got.loc[name, "errors"]) == (n, errors), name
        assert got.loc[name, "error"] == pytest.approx(errors / n)
    assert card.challenges.set_index("challenge")["error"].to_dict() == pytest.approx(challenges)
    assert card.err == pytest.approx(err)
    wide = card.table2("levenshtein")
    assert wide[("Averages", "Err̄")].iloc[0] == pytest.approx(100 * err)


def test_the_rule_is_inclusive_and_follows_the_direction():
    assert DecisionRule(0.5, True).predict([0.4, 0.5, 0.6]).tolist() == [False, True, True]
    assert DecisionRule(0.5, False).predict([0.4, 0.5, 0.6]).tolist() == [True, True, False]


def test_calibration_finds_the_lowest_error_on_the_chosen_datasets(bench, raw):
    _, _, frame = bench
    classify = ["pawsx", "sts-h", "mrpc"]
    rule = calibrate(frame, "levenshtein", classify, higher_is_similar=False)
    assert rule.how == "calibrated" and rule.calibrated_on == tuple(classify)

    def classify_error(threshold):
        _, challenges, _ = expected({d: raw[d] for d in classify}, threshold)
        return challenges["Classify!"]

    best = classify_error(rule.threshold)
    # every distinct distance of those datasets is a candidate: none does better
    data = frame[frame["dataset"].isin(classify)]
    grid = np.unique(data["levenshtein"])[::25]
    mean_errors = []
    for t in grid:
        card = scorecard(data, "levenshtein", DecisionRule(float(t), False))
        mean_errors.append(card.err)
    assert best <= min(mean_errors) + 1e-12
    assert scorecard(data, "levenshtein", rule).err == pytest.approx(best)


def test_calibration_on_a_hand_made_case():
    frame = pd.DataFrame(
        {
            "dataset": ["c"] * 4 + ["m"] * 3 + ["x"] * 3,
            "challenge": ["Classify!"] * 4 + ["Minimize!"] * 3 + ["Maximize!"] * 3,
            "label": [1, 1, 0, 0, 0, 0, 0, 1, 1, 1],
            "s": [0.9, 0.6, 0.5, 0.1, 0.2, 0.3, 0.7, 0.8, 0.65, 0.4],
        }
    )
    # on c alone any threshold in (0.5, 0.6] classifies perfectly; the lowest candidate is 0.6
    rule = calibrate(frame, "s", ["c"])
    assert rule.threshold == 0.6 and rule.n_tied == 1
    # on m alone: nothing predicted paraphrase is best; the candidate above every score
    assert calibrate(frame, "s", ["m"]).threshold == np.inf
    # over the three: at 0.6 -> c 0, m 1/3, x 1/3 -> Err 2/9; at 0.4 -> c 1/4, m 1/3, x 0 -> 7/36 (better)
    rule = calibrate(frame, "s", ["c", "m", "x"])
    card = scorecard(frame, "s", rule)
    assert rule.threshold == 0.4 and card.err == pytest.approx((1 / 4 + 1 / 3 + 0) / 3)


def test_per_language_errors_when_the_pairs_have_a_language():
    frame = pd.DataFrame(
        {
            "dataset": ["p"] * 6,
            "challenge": ["Classify!"] * 6,
            "label": [1, 0, 1, 0, 1, 1],
            "lang": ["en", "en", "en", "de", "de", "de"],
            "s": [0.9, 0.8, 0.2, 0.1, 0.7, 0.6],
        }
    )
    card = scorecard(frame, "s", DecisionRule(0.5))
    by_language = card.languages.set_index("language")
    # en: 0.9 right, 0.8 wrong (label 0), 0.2 wrong (label 1) -> 2/3; de: all right -> 0
    assert by_language.loc["en", "errors"] == 2 and by_language.loc["en", "error"] == pytest.approx(2 / 3)
    assert by_language.loc["de", "errors"] == 0 and card.datasets["errors"].iloc[0] == 2


@pytest.mark.parametrize(
    "challenge, labels, message",
    [
        ("Minimize!", [0, 1, 0, 0], "has 1 positive gold labels"),
        ("Maximize!", [1, 0, 1], "has 1 negative gold labels"),
        ("Classify!", [1, 0], "needs at least 3"),
        ("Classify!", [1, 0, None], "have no gold label"),
        ("Classify!", [4.5, 1.0, 3.2], "similarity scores"),
        ("Hard!", [0, 0, 0], "Unknown challenge"),
    ],
)
def test_a_dataset_that_breaks_its_challenge_gets_one_sentence(challenge, labels, message):
    with pytest.raises(ScorecardError, match=message):
        check_dataset("mine", challenge, labels)


def test_an_nli_set_needs_both_of_its_files():
    with pytest.raises(ScorecardError, match="fb-anli-hyp-pre.json is missing"):
        sort_files([BENCHMARK / "fb-anli-pre-hyp.json", BENCHMARK / "ms-mrpc.json"])
    with pytest.raises(ScorecardError, match="None of these files is a PARAPHRASUS file"):
        sort_files([DATASETS / "mrpc" / "msr_paraphrase_test.txt"])


# --------------------------------------------------------------------------- the command line


def _check_cli_table(table, raw, threshold=THRESHOLD):
    rows, challenges, err = expected(raw, threshold)
    assert list(table.columns) == ["dataset", "challenge", "n", "errors", "error"]
    assert table["dataset"].tolist() == [*CHALLENGE, "Classify!", "Minimize!", "Maximize!", "Err"]
    by_name = table.set_index("dataset")
    for name, (n, errors) in rows.items():
        assert by_name.loc[name, "challenge"] == CHALLENGE[name]
        assert (by_name.loc[name, "n"], by_name.loc[name, "errors"]) == (n, errors), name
        assert by_name.loc[name, "error"] == pytest.approx(errors / n)
    for challenge, error in challenges.items():
        assert by_name.loc[challenge, "error"] == pytest.approx(error)
    assert by_name.loc["Err", "error"] == pytest.approx(err)


def test_cli_contract_with_a_baseline(raw, tmp_path):
    out = tmp_path / "card.csv"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pluie_core",
            "paraphrasus",
            str(BENCHMARK),
            "--metric",
            "levenshtein",
            "--threshold",
            str(THRESHOLD),
            "-o",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "≤ 0.4" in done.stderr  # the registry's direction: a distance
    _check_cli_table(pd.read_csv(out, keep_default_na=False), raw)


def test_cli_reads_columns_of_scores_files(bench, raw, tmp_path, capsys):
    _, _, frame = bench
    unique = frame[["source", "hypothesis", "levenshtein"]].drop_duplicates(["source", "hypothesis"])
    table = unique.rename(columns={"source": "sentence1", "hypothesis": "sentence2", "levenshtein": "my_distance"})
    table["pluie"] = 0.6 - table["my_distance"]  # a PLUIE-like column: >= 0 exactly where the distance is <= 0.6
    first, second = tmp_path / "scored_1.csv", tmp_path / "scored_2.tsv"  # e.g. `score` run on two halves
    table.iloc[::2].to_csv(first, index=False)
    table.iloc[1::2].to_csv(second, index=False, sep="\t")
    out = tmp_path / "card.csv"
    args = [
        "paraphrasus",
        str(BENCHMARK),
        "--metric",
        "my_distance",
        "--scores",
        str(first),
        str(second),
        "--threshold",
        str(THRESHOLD),
        "--lower-is-similar",
        "-o",
        str(out),
    ]
    assert cli_main(args) == 0
    _check_cli_table(pd.read_csv(out, keep_default_na=False), raw)
    # a pluie column without a threshold: its natural 0
    assert (
        cli_main(
            ["paraphrasus", str(BENCHMARK), "--metric", "pluie", "--scores", str(first), str(second), "-o", str(out)]
        )
        == 0
    )
    assert "≥ 0 (PLUIE's natural threshold)" in capsys.readouterr().err
    _check_cli_table(pd.read_csv(out, keep_default_na=False), raw, threshold=0.6)
    # another column without a threshold: calibrated on the Classify! datasets, and said so
    assert cli_main(args[:7] + ["--lower-is-similar", "-o", str(out)]) == 0
    assert "calibrated on pawsx, sts-h, mrpc" in capsys.readouterr().err
    assert cli_main(args[:6] + args[7:]) == 1  # the first half only
    assert "pairs of the benchmark have no my_distance score in scored_1.csv" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "nonsense"], "Unknown metric 'nonsense'"),
        (["--metric", "levenshtein", "--calibrate-on", "mrpc,nowhere"], "no dataset 'nowhere'"),
    ],
)
def test_cli_bad_input_gets_one_line(args, message, tmp_path, capsys):
    files = [str(BENCHMARK / n) for n in ("ms-mrpc.json", "amr_true_paraphrases.json")]
    assert cli_main(["paraphrasus", *files, *args, "-o", str(tmp_path / "x.csv")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_cli_refuses_a_dataset_of_fewer_than_three_pairs(tmp_path, capsys):
    (tmp_path / "ms-mrpc.json").write_text(
        json.dumps(
            {
                "a": {"sentence1": "A cat.", "sentence2": "A cat sat.", "label": True},
                "b": {"sentence1": "A dog.", "sentence2": "A bird.", "label": False},
            }
        )
    )
    assert (
        cli_main(
            [
                "paraphrasus",
                str(tmp_path),
                "--metric",
                "levenshtein",
                "--threshold",
                "0.5",
                "-o",
                str(tmp_path / "x.csv"),
            ]
        )
        == 1
    )
    assert "mrpc has 2 pairs; a dataset of the scorecard needs at least 3" in capsys.readouterr().err


# --------------------------------------------------------------------------- the store and the page


@pytest.fixture(scope="module")
def benchmark_store(bench, tmp_path_factory):
    """The benchmark imported into a real SQLite file, with the Levenshtein distance as a finished run."""
    frames, _, frame = bench
    url = f"sqlite:///{tmp_path_factory.mktemp('scorecard') / 'store.db'}"
    engine = init_db(url)
    results = import_benchmark(engine, frames)
    # the run's scores, keyed by pair: the pairs were stored in the frames' order, dataset by dataset
    with read_session(engine) as session:
        ids = session.scalars(select(Pair.id).order_by(Pair.dataset_id, Pair.id)).all()
    add_score_run(engine, "Levenshtein", pd.Series(frame["levenshtein"].to_numpy(), index=ids), higher_is_similar=False)
    yield url, engine, results
    engine.dispose()


def test_the_benchmark_lands_whole_with_its_challenges(benchmark_store, raw):
    _, engine, results = benchmark_store
    table = benchmark_datasets(engine).set_index("name")
    for name, pairs in raw.items():
        row = table.loc[f"paraphrasus/{name}"]
        assert (row["n_pairs"], row["challenge"], row["benchmark"]) == (len(pairs), CHALLENGE[name], "PARAPHRASUS")
    frame = scorecard_frame(engine, table["id"], [])
    card = scorecard(frame.assign(s=0.0), "s", DecisionRule(1.0))  # nothing predicted paraphrase
    assert card.datasets.set_index("dataset")["errors"].to_dict() == {
        f"paraphrasus/{d}": sum(label for _, _, label in pairs) if CHALLENGE[d] != "Minimize!" else 0
        for d, pairs in raw.items()
    }


def test_a_benchmark_import_that_fails_part_way_leaves_nothing(benchmark_store, bench):
    url, engine, _ = benchmark_store
    frames, _, _ = bench
    import_pairs(engine, "again/mrpc", frames["mrpc"].head(3))  # the third dataset's name is taken
    with read_session(engine) as session:
        before = session.scalar(select(func.count(Pair.id)))
    with pytest.raises(ValueError, match="'again/mrpc' already exists"):
        import_benchmark(
            engine,
            {"true": frames["true"], "simp": frames["simp"], "mrpc": frames["mrpc"]},
            benchmark="again",
            prefix="again",
        )
    with read_session(engine) as session:
        assert session.scalar(select(func.count(Pair.id))) == before
        assert session.scalars(select(Dataset.name).where(Dataset.name.like("again/%"))).all() == ["again/mrpc"]


def test_assigning_a_dataset_by_hand_checks_it(engine):
    mixed = pd.DataFrame(
        {
            "source": ["a b", "c d", "e f", "g h"],
            "hypothesis": ["a c", "c e", "e g", "g i"],
            "label": [0.0, 1.0, 0.0, 0.0],
        }
    )
    dataset_id = import_pairs(engine, "mine", mixed).dataset_id
    with pytest.raises(ScorecardError, match="mine has 1 positive gold labels"):
        assign_challenge(engine, dataset_id, "Minimize!", "custom")
    assert benchmark_datasets(engine).set_index("name").loc["mine", "challenge"] is None
    assign_challenge(engine, dataset_id, "Classify!", "custom")
    assert benchmark_datasets(engine).set_index("name").loc["mine", ["challenge", "benchmark"]].tolist() == [
        "Classify!",
        "custom",
    ]
    assign_challenge(engine, dataset_id, None)
    assert benchmark_datasets(engine).set_index("name").loc["mine", "benchmark"] is None


@pytest.fixture
def page(monkeypatch):
    def open_(url):
        monkeypatch.setenv("PLUIE_DB_URL", url)
        monkeypatch.setenv("PLUIE_NO_WORKER", "1")
        at = AppTest.from_file(str(REPO / "pages" / "scorecard.py"), default_timeout=60)
        at.run()
        assert not at.exception, at.exception
        return at

    return open_


def test_page_shows_every_dataset_the_averages_and_err(benchmark_store, raw, page):
    url, _, _ = benchmark_store
    at = page(url)
    assert at.sidebar.radio[0].value == "calibrated"  # a baseline has no natural threshold
    at.sidebar.radio[0].set_value("given").run()
    at.sidebar.number_input[0].set_value(THRESHOLD).run()
    assert not at.exception and not at.error
    rows, challenges, err = expected(raw)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Err̄"] == f"{err:.1%}"
    for challenge, error in challenges.items():
        assert metrics[challenge] == f"{error:.1%}"
    per_dataset = next(d.value for d in at.dataframe if "errors" in d.value.columns).set_index("dataset")
    for name, (n, errors) in rows.items():
        assert (per_dataset.loc[f"paraphrasus/{name}", "n"], per_dataset.loc[f"paraphrasus/{name}", "errors"]) == (
            n,
            errors,
        )
    assert "paraphrase when the score is ≤ 0.4 (given)" in " ".join(c.value for c in at.caption)


def test_the_scorecards_pairs_are_read_ahead_and_the_page_reads_them_no_more(benchmark_store, page, monkeypatch):
    """The read-ahead reads the Scorecard page's first view (the first benchmark in the paper's order,
    every run): the page then draws its scorecard without reading the benchmark's pairs again."""
    from db import evaluation
    from ui.views import scorecard_cache, store_reads
    from ui.views.read_ahead import read_ahead

    url, _, _ = benchmark_store
    monkeypatch.setenv("PLUIE_DB_URL", url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    scorecard_cache.scorecard_pairs.clear()
    store_reads.choices.clear()
    read = []
    scorecard_frame_ = evaluation.scorecard_frame
    monkeypatch.setattr(evaluation, "scorecard_frame", lambda *args: read.append(args[1]) or scorecard_frame_(*args))
    read_ahead().join(120)
    assert len(read) == 1 and len(read[0]) == 10  # the ten datasets of PARAPHRASUS
    at = page(url)
    assert len(read) == 1 and "Err̄" in [m.label for m in at.metric]


def test_page_says_why_a_dataset_cannot_join_a_challenge(engine, db_url, page):
    import_pairs(
        engine,
        "mixed",
        pd.DataFrame({"source": ["a", "b", "c"], "hypothesis": ["a b", "b c", "c d"], "label": [1.0, 0.0, 0.0]}),
    )
    at = page(db_url)
    assert "No benchmark yet" in at.info[0].value
    at.selectbox(key="assign_dataset").set_value("mixed")
    at.selectbox(key="assign_challenge").set_value("Minimize!")
    at.button[0].click().run()
    assert [e.value for e in at.error] == [
        "mixed has 1 positive gold labels (paraphrases): a Minimize! dataset holds non-paraphrases only; assign it "
        "to Classify! or leave those pairs out."
    ]
    assert benchmark_datasets(engine)["challenge"].isna().all()


def test_page_per_language_and_pluie_natural_threshold(engine, db_url, page, tmp_path):
    """A dataset with a language field (as the full PAWS-X and XNLI files have), put in Classify! by
    hand, with a PLUIE-like run: natural threshold 0 by default, and the paper's Tables 6-7 view."""
    records = {
        str(i): {
            "sentence1": f"sentence {i}",
            "sentence2": f"sentence {i} again",
            "label": i % 2,
            "lang": ["en", "de", "zh"][i % 3],
        }
        for i in range(12)
    }
    path = tmp_path / "paws-x-all.json"
    path.write_text(json.dumps(records))
    from db.datasets import import_file

    dataset_id = import_file(engine, path, name="pawsx all").dataset_id
    assign_challenge(engine, dataset_id, "Classify!", "multilingual")
    frame = scorecard_frame(engine, [dataset_id], [])
    scores = pd.Series(np.where(np.arange(12) % 4 == 0, -1.0, 1.0), index=frame.index)  # pairs 0, 4, 8 negative
    add_score_run(engine, "PLUIE stand-in", scores, kind="pluie")
    at = page(db_url)
    assert at.sidebar.radio[0].value == "natural"
    assert not at.error
    # predicted paraphrase unless i % 4 == 0; gold = i % 2: wrong where i is even and not a multiple of 4
    wrong = {i for i in range(12) if (i % 4 != 0) != (i % 2 == 1)}
    by_language = next(d.value for d in at.dataframe if "en" in d.value.columns)
    for k, language in enumerate(["en", "de", "zh"]):
        mine = [i for i in range(12) if i % 3 == k]
        assert by_language.loc["pawsx all", language] == pytest.approx(
            round(100 * len(wrong & set(mine)) / len(mine), 1)
        )
    assert {m.label: m.value for m in at.metric}["Classify!"] == f"{len(wrong) / 12:.1%}"


def test_cli_errors_per_language(tmp_path):
    """A PAWS-X file with a language field (as the full benchmark's is): --by-language gives Table 6's cells."""
    records = {
        str(i): {
            "sentence1": "A man eats an apple.",
            "sentence2": ["A man eats an apple.", "Dogs run."][i % 2],
            "label": [1, 1, 0, 0][i % 4],
            "lang": ["en", "de"][i // 4],
        }
        for i in range(8)
    }
    (tmp_path / "paws-x-test.json").write_text(json.dumps(records))
    out, languages = tmp_path / "card.csv", tmp_path / "languages.csv"
    assert (
        cli_main(
            [
                "paraphrasus",
                str(tmp_path),
                "--metric",
                "levenshtein",
                "--threshold",
                "0.5",
                "-o",
                str(out),
                "--by-language",
                str(languages),
            ]
        )
        == 0
    )
    # identical sentences (i even) are predicted paraphrase: right for i % 4 == 0, wrong for i % 4 == 2;
    # "Dogs run." (i odd) is not: wrong for i % 4 == 1, right for i % 4 == 3 -> 2 wrong of 4 per language
    table = pd.read_csv(languages).set_index("language")
    assert table.loc["en", ["n", "errors"]].tolist() == [4, 2] and table.loc["de", ["n", "errors"]].tolist() == [4, 2]
    assert pd.read_csv(out).set_index("dataset").loc["pawsx", "errors"] == 4


def test_benchmark_store_on_every_store(store_url, tmp_path):
    """Import of a benchmark piece, its challenge, and the language read from the pairs' metadata by
    the database's JSON functions, on SQLite and PostgreSQL alike."""
    records = {
        str(i): {
            "sentence1": f"a sentence {i}",
            "sentence2": f"a sentence {i} again",
            "label": i % 2,
            "lang": ["en", "fr"][i % 2],
        }
        for i in range(6)
    }
    (tmp_path / "paws-x-test.json").write_text(json.dumps(records))
    frames, _ = read_benchmark([tmp_path / "paws-x-test.json", BENCHMARK / "amr_true_paraphrases.json"])
    engine = init_db(store_url)
    try:
        import_benchmark(engine, frames)
        table = benchmark_datasets(engine).set_index("name")
        assert table.loc["paraphrasus/pawsx", ["challenge", "n_pairs"]].tolist() == ["Classify!", 6]
        assert table.loc["paraphrasus/true", ["challenge", "n_pairs"]].tolist() == ["Maximize!", 167]
        frame = scorecard_frame(engine, table["id"], [])
        assert frame.loc[frame["dataset"] == "paraphrasus/pawsx", "language"].tolist() == ["en", "fr"] * 3
        assert frame.loc[frame["dataset"] == "paraphrasus/true", "language"].isna().all()
    finally:
        engine.dispose()
