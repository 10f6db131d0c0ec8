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

PAIRS = pd.DataFrame({
    "source": ["The cat drinks water.", "Have you ever seen a tsunami ?", "A river."],
    "hypothesis": ["The cat drinks milk.", "Have you ever seen a tiramisu ?", "A long river in Romania."],
    "label": [0, 0, 1],
})


@pytest.fixture
def pair_file(tmp_path):
    path = tmp_path / "pairs.csv"
    PAIRS.to_csv(path, index=False)
    return path


def run_cli(*args):
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "pluie_core", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_score_command_writes_input_columns_and_scores(tiny_model_builder, pair_file, tmp_path):
    model = tiny_model_builder()
    output = tmp_path / "scored.csv"
    done = run_cli("score", pair_file, "--model", model, "--template", "direct", "--answers", "Yes", "No",
                   "--symmetric", "--baselines", "-o", output)
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
    assert main(["score", str(pair_file), "--model", str(tiny_model_builder()), "--template", "fs-direct",
                 "--no-progress", "-o", str(output)]) == 0
    scored = pd.read_json(output, lines=True)
    assert len(scored) == 3 and scored["pluie"].notna().all()
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize("case,expected", [
    ("missing_file", "Input file .*missing.csv does not exist"),
    ("missing_model", "No model found at .*nowhere"),
    ("multi_token", "'Perhaps' is not a single token"),
    ("bad_output", "give the output a .csv, .tsv, .jsonl or .json extension"),
])
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
