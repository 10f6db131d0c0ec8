"""``python -m pluie_core score`` end to end on a tiny model directory."""

import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from pluie_core.cli import main
from pluie_core.scorer import PluieScorer
from tests.paths import REPO

PAIRS = pd.DataFrame(
    {
        "source": ["The cat drinks water.", "Have you ever seen a tsunami ?", "A river."],
        "hypothesis": ["The cat drinks milk.", "Have you ever seen a tiramisu ?", "A long river in Romania."],
        "label": [0, 0, 1],
    }
)


@pytest.fixture
def pair_file(tmp_path):
    path = tmp_path / "pairs.csv"
    PAIRS.to_csv(path, index=False)
    return path


def run_cli(*args):
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "pluie_core", *map(str, args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_score_command_writes_input_columns_and_scores(tiny_model_builder, pair_file, tmp_path):
    model = tiny_model_builder()
    output = tmp_path / "scored.csv"
    done = run_cli(
        "score",
        pair_file,
        "--model",
        model,
        "--template",
        "direct",
        "--answers",
        "Yes",
        "No",
        "--symmetric",
        "--baselines",
        "-o",
        output,
    )
    assert done.returncode == 0, done.stderr
    assert "PLUIE" in done.stderr  # the progress bar
    scored = pd.read_csv(output)
    assert list(scored.columns[:3]) == ["source", "hypothesis", "label"]
    assert {"pluie", "pluie_forward", "pluie_backward", "levenshtein", "bleu", "chrf", "sbert"} <= set(scored.columns)
    pd.testing.assert_frame_equal(scored[["source", "hypothesis", "label"]], PAIRS, check_dtype=False)
    scorer = PluieScorer(str(model), template="direct")
    expected = scorer.score(PAIRS.source, PAIRS.hypothesis, symmetric=True)
    assert scored["pluie"].to_numpy() == pytest.approx(expected, abs=1e-4)
    assert scored["pluie_forward"].to_numpy() == pytest.approx(scorer.score(PAIRS.source, PAIRS.hypothesis), abs=1e-4)


def test_jsonl_output_in_process(tiny_model_builder, pair_file, tmp_path, capsys):
    output = tmp_path / "scored.jsonl"
    assert (
        main(
            [
                "score",
                str(pair_file),
                "--model",
                str(tiny_model_builder()),
                "--template",
                "fs-direct",
                "--no-progress",
                "-o",
                str(output),
            ]
        )
        == 0
    )
    scored = pd.read_json(output, lines=True)
    assert len(scored) == 3 and scored["pluie"].notna().all()
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize(
    "case,expected",
    [
        ("missing_file", "Input file .*missing.csv does not exist"),
        ("missing_model", "No model found at .*nowhere"),
        ("multi_token", "'Perhaps' is not a single token"),
        ("bad_output", "give the output a .csv, .tsv, .jsonl or .json extension"),
    ],
)
def test_user_errors_print_one_line_and_fail(tiny_model_builder, pair_file, tmp_path, capsys, case, expected):
    model, inputs, answers, output = str(tiny_model_builder()), str(pair_file), ["Yes", "No"], str(tmp_path / "o.csv")
    if case == "missing_file":
        inputs = str(tmp_path / "missing.csv")
    elif case == "missing_model":
        model = str(tmp_path / "nowhere")
    elif case == "multi_token":
        answers = ["Yes", "Perhaps"]
    else:
        output = str(tmp_path / "o.parquet")
    code = main(["score", inputs, "--model", model, "--answers", *answers, "--no-progress", "-o", output])
    err = capsys.readouterr().err
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert re.search(expected, lines[0])
    assert not os.path.exists(output)


def test_error_exit_from_the_real_entry_point(tmp_path, pair_file):
    done = run_cli("score", pair_file, "--model", tmp_path / "nowhere", "-o", tmp_path / "out.csv")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: No model found at")


# --------------------------------------------------------------------------- publish and preferences
def test_publish_command_writes_the_export_pages_folder_for_the_named_datasets(tmp_path, capsys):
    from db import annotators, init_db, serving
    from db import campaigns as camp
    from db.cli import main as db_main
    from db.datasets import import_pairs

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    for name, n in (("alpha", 5), ("beta", 3)):
        import_pairs(
            engine,
            name,
            pd.DataFrame(
                {"source": [f"{name} s{i}" for i in range(n)], "hypothesis": [f"{name} h{i}" for i in range(n)]}
            ),
        )
    datasets = {d.name: d.id for d in __import__("db.datasets", fromlist=["x"]).list_datasets(engine)}
    cid = camp.create_campaign(engine, "Pilot", [datasets["beta"]], quota=2, overlap=1, n_training=0)
    aid, _ = annotators.create_annotator(engine, cid, "Ann")
    for position in range(2):
        serving.serve_next(engine, aid)
        serving.record_label(engine, aid, position, 3, 1.0)
    engine.dispose()
    folder = tmp_path / "out" / "alpha-card"
    assert db_main(["publish", str(folder), "--licence", "cc-by-4.0", "--dataset", "alpha", "--db", url]) == 0
    err = capsys.readouterr().err
    assert "5 pairs in" in err and f"wrote {folder}" in err
    rows = pd.read_parquet(folder / "data" / "train-00000-of-00001.parquet")
    assert sorted(rows["source"]) == [f"alpha s{i}" for i in range(5)]
    card = (folder / "README.md").read_text()
    assert "license: cc-by-4.0" in card and "alpha" in card and (folder / "dataset_dict.json").is_file()
    # every dataset by default
    assert db_main(["publish", str(tmp_path / "all"), "--licence", "mit", "--db", url]) == 0
    assert len(pd.read_parquet(tmp_path / "all" / "data" / "train-00000-of-00001.parquet")) == 8

    # one campaign's labelled pairs, from the real entry point (python -m db)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "db",
            "publish",
            str(tmp_path / "pilot"),
            "--licence",
            "mit",
            "--campaign",
            "Pilot",
            "--pairs",
            "labelled",
            "--db",
            url,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    pilot = pd.read_parquet(tmp_path / "pilot" / "data" / "train-00000-of-00001.parquet")
    assert len(pilot) == 2 and set(pilot["source"]) <= {f"beta s{i}" for i in range(3)}
    assert "Pilot" in (tmp_path / "pilot" / "README.md").read_text()

    # mistakes: one line, exit status 1, nothing written
    for args, message in (
        (["--dataset", "gamma"], "error: No dataset 'gamma' in the store (its datasets: alpha, beta)."),
        (["--licence", "x y"], "error: "),
        (["--campaign", "Main"], "error: No campaign 'Main' in the store (its campaigns: Pilot)."),
        (["--db", f"sqlite:///{tmp_path / 'nowhere.db'}"], "error: There is no store at "),
    ):
        target = tmp_path / "refused"
        argv = ["publish", str(target), "--licence", "cc-by-4.0", "--db", url] + args
        capsys.readouterr()
        assert db_main(argv) == 1
        err = capsys.readouterr().err
        assert err.startswith(message) and err.count("\n") == 1, err
        assert not target.exists() and not (tmp_path / "nowhere.db").exists()
    assert db_main(["publish", str(folder), "--licence", "cc-by-4.0", "--db", url]) == 1  # not an empty folder
    assert "already exists and is not an empty folder" in capsys.readouterr().err


def test_correlate_on_a_preference_file_writes_agreement_with_the_peoples_choices(tmp_path):
    from pluie_core.baselines import BASELINES
    from pluie_core.evaluation.preference import AGREEMENT_COLUMNS, preference_agreement

    items = pd.DataFrame(
        {
            "source": ["The cat drinks water.", "A man plays guitar.", "It rains.", "The sun is hot.", "Birds fly."],
            "candidate_a": [
                "The cat drinks water.",
                "Someone plays the guitar.",
                "Rain falls.",
                "Cold sun.",
                "Birds swim.",
            ],
            "candidate_b": [
                "A dog sleeps.",
                "A man plays guitar loudly.",
                "It rains a lot today.",
                "The sun is hot!",
                "Birds are flying.",
            ],
            "preferred": ["A", "B", "tie", "B", "B"],
            "pluie_a": [3.0, -1.0, 0.5, -2.0, -3.0],
            "pluie_b": [-4.0, 2.0, 0.4, 3.0, 1.0],
        }
    )
    path, output = tmp_path / "prefs.csv", tmp_path / "agreement.csv"
    items.to_csv(path, index=False)
    done = run_cli("correlate", path, "--metric", "pluie", "--metric", "levenshtein", "-o", output)
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(output)
    assert list(table.columns) == AGREEMENT_COLUMNS and list(table["metric"]) == ["pluie", "levenshtein"]
    expected = preference_agreement(items["preferred"], items["pluie_a"], items["pluie_b"])
    assert table.loc[0, "accuracy"] == pytest.approx(expected["accuracy"])
    assert table.loc[0, "accuracy_calibrated"] == pytest.approx(expected["accuracy_calibrated"])
    lev = BASELINES["levenshtein"]
    expected = preference_agreement(
        items["preferred"],
        lev(items.source, items.candidate_a),
        lev(items.source, items.candidate_b),
        higher_is_similar=False,
    )  # a distance
    assert table.loc[1, "accuracy_calibrated"] == pytest.approx(expected["accuracy_calibrated"])
    assert table.loc[1, "kappa"] == pytest.approx(expected["kappa"], nan_ok=True)

    refused = run_cli("correlate", path, "--metric", "bleurt", "-o", output)
    assert refused.returncode == 1 and refused.stderr.startswith("error: Unknown metric 'bleurt': give a metric whose")
    refused = run_cli("correlate", path, "--metric", "pluie", "--system", "source", "-o", output)
    assert refused.returncode == 1 and "--system is for pair files" in refused.stderr
